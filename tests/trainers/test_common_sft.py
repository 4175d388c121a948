"""The shared sft phase: expert dialogues through the export writer, chats cut into per-turn rows."""

import pytest

from trainers.common.sft import conversation_rows, expert_dataset

pytest.importorskip("datasets")


def test_conversation_rows_cut_a_chat_at_every_assistant_turn():
    chat = [
        {"role": "system", "content": "s"}, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "u3"},
    ]
    rows = conversation_rows(chat)
    assert [row["completion"] for row in rows] == [[chat[2]], [chat[4]]]
    assert rows[0]["prompt"] == chat[:2] and rows[1]["prompt"] == chat[:4]  # the trailing user turn trains nothing
    assert conversation_rows([{"role": "user", "content": "hi"}]) == []


def test_expert_dataset_is_the_export_writers_sft_rows_and_is_reused_once_complete(tmp_path):
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.integrations.datasets import build_rows

    rows = expert_dataset("SEAD-Outbound-v0", "adaptive", 5, seed=3, folder=tmp_path)
    expected = build_rows(evaluate("SEAD-Outbound-v0", "adaptive", 5, seed=3), "sft")
    assert rows["messages"] == [row["messages"] for row in expected]
    assert (tmp_path / "expert.jsonl").exists() and not (tmp_path / "sft.partial").exists()
    stamp = (tmp_path / "expert.jsonl").stat().st_mtime_ns
    again = expert_dataset("SEAD-Outbound-v0", "adaptive", 5, seed=3, folder=tmp_path)
    assert again["messages"] == rows["messages"] and (tmp_path / "expert.jsonl").stat().st_mtime_ns == stamp


def test_sft_batches_group_sessions_of_similar_length(tmp_path, monkeypatch):
    """A random batch of SEAD sessions (105-538 tokens) was 42% padding; sft_lm's batches are drawn by
    length, so a batch pads only to its own longest session."""
    pytest.importorskip("trl")
    import trl

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import sft_lm

    model = build_tiny_chat_model(tmp_path / "m", seed=0)
    # 256 sessions of 1..16 turns, in an order that mixes short and long ones in every batch of 4
    # (the sampler sorts within megabatches of 16 batches, a random draw from the whole set).
    lengths = [1 + (7 * index) % 16 for index in range(256)]
    sessions = [
        conversation_rows([{"role": "system", "content": "s"}, *[m for t in range(turns) for m in ({"role": "user", "content": f"u{t}"}, {"role": "assistant", "content": f"a{t}"})]])
        for turns in lengths
    ]
    built = []

    class Stop(Exception):
        pass

    def capture(trainer, **_):
        built.append(trainer)
        raise Stop

    monkeypatch.setattr(trl.SFTTrainer, "train", capture)
    with pytest.raises(Stop):
        sft_lm(str(model), sessions, tmp_path / "out", epochs=1, learning_rate=1e-3, seed=0, batch_size=4, accumulation=1)
    batches = list(built[0].get_train_dataloader())
    assert sum(len(batch["attention_mask"]) for batch in batches) == 256
    padding = sum(int((batch["attention_mask"] == 0).sum()) for batch in batches) / sum(batch["attention_mask"].numel() for batch in batches)
    tokens = [len(example["input_ids"]) for example in built[0].train_dataset]
    given_order = 1 - sum(tokens) / sum(4 * max(tokens[start : start + 4]) for start in range(0, len(tokens), 4))
    print(f"padding {padding:.3f}, in the given order {given_order:.3f}")
    assert given_order > 0.3 and padding < 0.1
