"""benchmarks/rlada_id_copy.py: its scoring of a clone's account-id copying, and a run end to end (the copy
warm-up itself is tests/trainers/test_rlada_id_copy.py's)."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rlada_id_copy.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_rlada_id_copy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_benchmark_runs_end_to_end(tmp_path, capsys):
    pytest.importorskip("trl")
    load().main(["--calls", "4", "--sft-steps", "1", "--copy-steps", "1", "--held-out", "3", "--out", str(tmp_path)])
    scores = json.loads(next(line for line in capsys.readouterr().out.splitlines() if line.startswith('{"calls"')))
    assert scores["lookups"] >= 1 and set(scores) >= {"greedy id", "forced digits", "forced ids"}


class _Oracle:
    """A stand-in LM whose top token after each position is the next token of the teacher's text, with the
    first ``wrong`` digits of each id off by one; ``generate`` says the reply it was given."""

    def __init__(self, tokenizer, reply, wrong):
        self.tokenizer, self.reply, self.wrong = tokenizer, reply, wrong

    def generate(self, asked, **_):
        import torch

        return torch.cat([asked, self.tokenizer(self.reply, add_special_tokens=False, return_tensors="pt")["input_ids"]], 1)

    def __call__(self, ids):
        import torch

        tokens = ids[0].tolist()
        logits = torch.zeros(1, len(tokens), len(self.tokenizer))
        digit_ids = [i for i, t in enumerate(tokens) if self.tokenizer.decode([t]).isdigit()]
        reply_digits = digit_ids[-6:]  # the reply's id: the last six digits of the teacher's text
        for i in range(len(tokens) - 1):
            following = tokens[i + 1]
            if i + 1 in reply_digits[: self.wrong]:
                following = self.tokenizer.convert_tokens_to_ids(str((int(self.tokenizer.decode([following])) + 1) % 10))
            logits[0, i, following] = 1.0
        return type("Out", (), {"logits": logits})()


def test_scores_count_ids_and_digits_over_the_lookups_only(tmp_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    said = '{"action_type": "tool_call", "content": "lookup_account", "tool_args": {"account_id": "ACC-914547"}}'
    corpus = ["caller ID matched account ACC-914547.", said] * 10
    folder = build_tiny_chat_model(tmp_path / "m", vocab_size=400, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   corpus=corpus, whole_sentences=True, digits=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    messages = [{"role": "system", "content": "The caller is Ravi Ruiz; caller ID matched account ACC-914547."}, {"role": "user", "content": "Hi."}]
    speak = '{"action_type": "speak", "content": "How can I help?", "tool_args": {}}'
    calls = [[[messages, speak], [messages, said]], [[messages, said]]]  # 2 lookups: a spoken turn is not one
    score = load().score_model
    assert score(tokenizer, _Oracle(tokenizer, said, 0), calls) == {"lookups": 2, "greedy id": 1.0, "forced digits": 1.0, "forced ids": 1.0}
    other = said.replace("914547", "914548")
    assert score(tokenizer, _Oracle(tokenizer, other, 2), calls) == {"lookups": 2, "greedy id": 0.0, "forced digits": 4 / 6, "forced ids": 0.0}
    # A tokenizer that merges the id's digits leaves fewer than six digit tokens: no whole id counts as copied.
    merged = transformers.AutoTokenizer.from_pretrained(build_tiny_chat_model(
        tmp_path / "merged", vocab_size=400, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, corpus=corpus, whole_sentences=True))
    assert score(merged, _Oracle(merged, said, 0), calls)["forced ids"] == 0.0
