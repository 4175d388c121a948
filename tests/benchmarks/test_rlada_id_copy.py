"""benchmarks/rlada_id_copy.py: its synthetic copy lines and its scoring of a clone's account-id copying."""

import importlib.util
import json
import random
import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rlada_id_copy.py"
SENTENCES = [f"Sentence number {word} of the router." for word in ("one", "two", "three", "four", "five", "six", "seven", "eight")]


def load():
    spec = importlib.util.spec_from_file_location("benchmark_rlada_id_copy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_copy_line_repeats_the_value_of_its_first_sentence_past_the_distractors():
    copy_line = load().copy_line
    rng, kinds = random.Random(0), set()
    for _ in range(200):
        prompt, reply = copy_line(rng, SENTENCES, ["Ravi Ruiz"])
        value = re.search(r"ACC-\d{6}|CARD-\d{4}|\d+\.\d\d", reply).group(0)
        first, rest = re.match(r"(.*?[.?!]) (.*)", prompt, re.S).groups()
        assert value in first and value not in rest and prompt.endswith("\n")
        assert json.loads(reply)  # a JSON object, as the router's replies
        kinds.add(next(iter(json.loads(reply))))
    assert kinds == {"account_id", "card_id", "amount"}
    assert copy_line(random.Random(5), SENTENCES, ["A B"]) == copy_line(random.Random(5), SENTENCES, ["A B"])


def test_a_copy_batch_trains_the_reply_tokens_only_left_padded(tmp_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    folder = build_tiny_chat_model(tmp_path / "m", vocab_size=300, hidden_size=8, num_hidden_layers=1, num_attention_heads=2)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    lines = [("Short one.\n", '{"a": 1}'), ("A much longer first sentence here.\n", '{"amount": 12.50}')]
    inputs, labels, mask = load()._copy_batch(tokenizer, lines)
    for row, (prompt, reply) in enumerate(lines):
        asked, said = (tokenizer(text, add_special_tokens=False)["input_ids"] for text in (prompt, reply))
        kept = [int(i) for i, m in zip(inputs[row], mask[row]) if m]
        assert kept == asked + said and tokenizer.decode(kept) == prompt + reply
        assert [int(t) for t in labels[row] if t != -100] == said  # the reply's own tokens, nothing of the prompt
        assert int(mask[row][-1]) == 1 and list(labels[row][-len(said):]) == said  # padding on the left
    assert int(mask[0][0]) == 0  # the shorter line is padded


@pytest.mark.slow
def test_the_benchmark_runs_end_to_end(tmp_path, capsys):
    pytest.importorskip("trl")
    load().main(["--calls", "4", "--sft-steps", "1", "--copy-steps", "1", "--held-out", "3", "--out", str(tmp_path)])
    scores = json.loads(next(line for line in capsys.readouterr().out.splitlines() if line.startswith('{"calls"')))
    assert scores["lookups"] >= 1 and set(scores) >= {"greedy id", "forced digits", "forced ids"}
