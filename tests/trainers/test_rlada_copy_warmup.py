"""trainers/rlada/id_copy.py: the copy warm-up of RL-ADA's scratch agent (issue 41), its synthetic lines,
their rows for the shared SFT phase, and the held-out scoring of the warmed model."""

import json
import random
import re

import pytest

from trainers.rlada import id_copy

SENTENCES = [f"Sentence number {word} of the router." for word in ("one", "two", "three", "four", "five", "six", "seven", "eight")]


def test_the_warm_ups_sizes_are_the_measured_ones():
    # 2,000 steps of 32 lines at 1e-3 formed the copying head in benchmarks/rlada_id_copy.py's runs.
    assert (id_copy.COPY_BATCH, id_copy.COPY_LEARNING_RATE, id_copy.HELD_OUT_LINES) == (32, 1e-3, 200)


def test_a_copy_line_repeats_the_value_of_its_first_sentence_past_the_distractors():
    rng, kinds, fillers, distractors = random.Random(0), set(), set(), set()
    for _ in range(300):
        prompt, reply = id_copy.copy_line(rng, SENTENCES, ["Ravi Ruiz"])
        value = re.search(r"ACC-\d{6}|CARD-\d{4}|\d+\.\d\d", reply).group(0)
        first, rest = re.match(r"(.*?[.?!]) (.*)", prompt, re.S).groups()
        assert value in first and value not in rest
        # Every value in the router's formats: 6-digit account ids, 4-digit card ids, amounts 1.00-998.99.
        assert re.fullmatch(r'\{"account_id": "ACC-\d{6}"\}|\{"card_id": "CARD-\d{4}"\}|\{"amount": [1-9]\d{0,2}\.\d\d\}', reply), reply
        for amount in re.findall(r"\$([\d.]+)", prompt) + re.findall(r'"amount": ([\d.]+)', reply):
            assert re.fullmatch(r"[1-9]\d{0,2}\.\d\d", amount) and float(amount) < 999, amount
        assert all(len(d) == 6 for d in re.findall(r"ACC-(\d+)", prompt)) and all(len(d) == 4 for d in re.findall(r"CARD-(\d+)", prompt))
        fillers.add(sum(sentence in rest for sentence in SENTENCES))
        distractors.add(len(re.findall(r"e\.g\. ACC-|Card CARD-|A payment of \$", rest)))
        assert json.loads(reply)  # a JSON object, as the router's replies
        kinds.add(next(iter(json.loads(reply))))
    assert kinds == {"account_id", "card_id", "amount"}
    assert fillers == {2, 3, 4, 5, 6, 7} and distractors == {0, 1, 2}  # 2-7 of the router's sentences, up to two distractors
    assert id_copy.copy_line(random.Random(5), SENTENCES, ["A B"]) == id_copy.copy_line(random.Random(5), SENTENCES, ["A B"])


def test_copy_material_keeps_sentences_without_an_account_id_and_the_callers_names():
    texts = [
        "The caller is Aisha Berg; caller ID matched account ACC-802348. Tools are listed below.",
        "Short. I want to move money between my own accounts! Why?",
        "The caller is Li Wu; caller ID matched account ACC-111111.",
    ]
    sentences, names = id_copy.copy_material(texts)
    assert sentences == ["I want to move money between my own accounts!", "Tools are listed below."]  # sorted; short ones and ids dropped
    assert names == ["Aisha Berg", "Li Wu"]
    # Kept: 11 to 159 characters.
    lengths = [10, 11, 159, 160]
    sentences, _ = id_copy.copy_material([" ".join("x" * (length - 1) + "." for length in lengths)])
    assert sorted(map(len, sentences)) == [11, 159]


def test_copy_sessions_are_one_row_each_the_line_as_system_message_the_reply_as_the_agents():
    sessions = id_copy.copy_sessions(3, SENTENCES, ["Ravi Ruiz"], random.Random(1))
    expected = random.Random(1)
    assert len(sessions) == 3
    for rows in sessions:
        prompt, reply = id_copy.copy_line(expected, SENTENCES, ["Ravi Ruiz"])
        assert rows == [{"prompt": [{"role": "system", "content": prompt}], "completion": [{"role": "assistant", "content": reply}]}]


def test_copy_accuracy_scores_the_next_token_of_the_reply_only():
    torch = pytest.importorskip("torch")
    targets = torch.tensor([[-100, -100, 5, 6], [-100, 7, 8, 9]])
    logits = torch.zeros(2, 4, 10)
    for row, following in enumerate([[0, 5, 6, 0], [7, 8, 1, 0]]):  # position i predicts token i + 1
        for i, token in enumerate(following):
            logits[row, i, token] = 1.0
    # Row 0: both reply tokens right; row 1: 7 and 8 right, 9 wrong (predicted 1). 4 of 5, 1 of 2 whole.
    assert id_copy.copy_accuracy(logits, targets) == (4 / 5, 0.5)


def _tiny(folder):
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    corpus = [f"{s} The caller is Ravi Ruiz; caller ID matched account ACC-123456." for s in SENTENCES] + ['{"account_id": "ACC-1"}']
    return str(build_tiny_chat_model(folder, vocab_size=400, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, corpus=corpus, digits=True))


def test_held_out_copying_of_a_padded_batch_equals_each_line_scored_alone(tmp_path):
    """Lines of different lengths in one batch score as each does alone: the padding shifts no position
    and no reply token is scored against a pad (a left-padded batch, or a mask off by one, fails)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from trainers.common.sft import pack_session

    folder = _tiny(tmp_path / "m")
    sessions = id_copy.copy_sessions(6, SENTENCES, ["Ravi Ruiz"], random.Random(3))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    right = scored = whole = 0
    lengths = set()
    for rows in sessions:
        packed = pack_session(rows, tokenizer)[0]
        lengths.add(len(packed["input_ids"]))
        ids = torch.tensor([packed["input_ids"]])
        targets = torch.tensor([[t if m else -100 for t, m in zip(packed["input_ids"], packed["completion_mask"])]])
        with torch.no_grad():
            tokens, replies = id_copy.copy_accuracy(model(input_ids=ids).logits, targets)
        count = sum(packed["completion_mask"]) - (packed["completion_mask"][0] == 1)
        right, scored, whole = right + tokens * count, scored + count, whole + replies
    assert len(lengths) > 1  # the batch is padded
    tokens, replies = id_copy.held_out_copying(folder, sessions)
    assert tokens == pytest.approx(right / scored, abs=1e-6) and replies == pytest.approx(whole / len(sessions))


def test_the_warm_up_trains_saves_and_is_not_trained_again(tmp_path, monkeypatch):
    trl = pytest.importorskip("trl")
    from trainers.common.sft import SFT_FINISHED

    folder = _tiny(tmp_path / "m")
    texts = [f"The caller is Ravi Ruiz; caller ID matched account ACC-12345{i}. {s}" for i, s in enumerate(SENTENCES)]
    update = id_copy.warm_up_copying(folder, tmp_path / "copied", 2, texts, seed=0)
    assert update["copy/steps"] == 2.0 and [step for step, _ in update["copy/curve"]] == [1, 2]
    assert 0.0 <= update["copy/heldout_replies"] <= update["copy/heldout_tokens"] <= 1.0
    inputs = json.loads((tmp_path / "copied" / SFT_FINISHED).read_text())["inputs"]
    assert inputs["schedule"] == "constant_with_warmup" and inputs["learning_rate"] == id_copy.COPY_LEARNING_RATE
    assert inputs["batch_size"] == id_copy.COPY_BATCH and inputs["max_steps"] == 2
    # Finished: the same call reads the saved record and the same held-out lines, without training.
    monkeypatch.setattr(trl, "SFTTrainer", None)
    assert id_copy.warm_up_copying(folder, tmp_path / "copied", 2, texts, seed=0) == update


def test_the_warm_up_trains_on_fresh_lines_each_step_and_scores_lines_it_never_saw(tmp_path, monkeypatch):
    from trainers.common import sft

    seen = {}

    def fake_sft(model, sessions, output_dir, **kwargs):
        seen["train"], seen["kwargs"] = sessions, kwargs
        return {"sft/loss": 1.0, "sft/steps": float(kwargs["max_steps"]), "sft/curve": []}

    monkeypatch.setattr(sft, "sft_lm", fake_sft)
    monkeypatch.setattr(id_copy, "held_out_copying", lambda folder, sessions: seen.__setitem__("held_out", sessions) or (0.5, 0.25))
    texts = [f"The caller is Ravi Ruiz; caller ID matched account ACC-12345{i}. {s}" for i, s in enumerate(SENTENCES)]
    update = id_copy.warm_up_copying("model", tmp_path, 3, texts, seed=4)
    assert len(seen["train"]) == 3 * id_copy.COPY_BATCH and seen["kwargs"]["batch_size"] == id_copy.COPY_BATCH  # a line is seen once
    assert (seen["kwargs"]["accumulation"], seen["kwargs"]["max_steps"], seen["kwargs"]["epochs"]) == (1, 3, 1)
    assert len(seen["held_out"]) == id_copy.HELD_OUT_LINES
    lines = {rows[0]["prompt"][0]["content"] for rows in seen["train"]}
    assert not lines & {rows[0]["prompt"][0]["content"] for rows in seen["held_out"]}  # scored on other lines
    assert (update["copy/heldout_tokens"], update["copy/heldout_replies"]) == (0.5, 0.25)
    id_copy.warm_up_copying("model", tmp_path, 3, texts, seed=5)
    assert not lines & {rows[0]["prompt"][0]["content"] for rows in seen["train"]}  # another seed, other lines


class _EvenOracle:
    """A stand-in LM whose top token at an even position is its input's next token, and token 0 elsewhere."""

    def __init__(self, vocab):
        self.vocab = vocab

    def eval(self):
        return self

    def __call__(self, input_ids):
        import torch

        logits = torch.zeros(*input_ids.shape, self.vocab)
        logits[:, :, 0] = 0.5
        for i in range(0, input_ids.shape[1] - 1, 2):
            logits[torch.arange(input_ids.shape[0]), i, input_ids[:, i + 1]] = 1.0
        return type("Out", (), {"logits": logits})()


def test_held_out_copying_scores_each_reply_token_at_its_own_position(tmp_path, monkeypatch):
    """By hand: a reply token at position j counts as right when the oracle is right at j - 1, i.e. j is odd;
    left padding, a mask off by one or the prompt's tokens scored give other counts."""
    transformers = pytest.importorskip("transformers")
    from trainers.common.sft import pack_session

    folder = _tiny(tmp_path / "m")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    sessions = id_copy.copy_sessions(5, SENTENCES, ["Ravi Ruiz"], random.Random(8))
    right = scored = whole = 0
    for rows in sessions:
        mask = pack_session(rows, tokenizer)[0]["completion_mask"]
        positions = [j for j in range(1, len(mask)) if mask[j]]
        right, scored, whole = right + sum(j % 2 for j in positions), scored + len(positions), whole + all(j % 2 for j in positions)
    assert 0 < right < scored  # both kinds of positions occur
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda folder: _EvenOracle(len(tokenizer)))
    assert id_copy.held_out_copying(folder, sessions) == (pytest.approx(right / scored), pytest.approx(whole / len(sessions)))
