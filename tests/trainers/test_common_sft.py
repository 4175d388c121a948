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


def test_a_finished_sft_stage_is_not_trained_again_on_the_same_inputs(tmp_path, monkeypatch, capsys):
    """A run killed after SFT saved its model (in the agreement, a DAgger round, an evaluation) resumes
    without training again; other inputs train again."""
    pytest.importorskip("trl")
    import trl

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import SFT_FINISHED, sft_lm

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    sessions = [conversation_rows(chat), conversation_rows(chat[:2] + [{"role": "assistant", "content": "good day"}])]
    model = build_tiny_chat_model(tmp_path / "m", seed=0, corpus=["s", "hello", "hi there", "good day"])
    out = tmp_path / "sft"
    first = sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2)
    assert (out / SFT_FINISHED).exists() and not list(out.glob("checkpoint-*"))
    assert first["sft/steps"] == 2.0 and len(first["sft/curve"]) == 2

    def must_not_train(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(trl.SFTTrainer, "train", must_not_train)
    (out / "checkpoint-1").mkdir()  # as a kill between the marker and the checkpoints' removal leaves it
    assert sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2) == first
    assert "already holds this stage's model" in capsys.readouterr().err and not (out / "checkpoint-1").exists()
    for other in ({"learning_rate": 2e-3}, {"max_steps": 3}, {"seed": 1}):
        arguments = {"epochs": 1, "learning_rate": 1e-3, "seed": 0, "max_steps": 2, **other}
        with pytest.raises(AssertionError, match="trained again"):
            sft_lm(str(model), sessions, out, **arguments)
    for other_dialogues in (sessions[:1], sessions[::-1]):  # fewer, or as many in another order
        with pytest.raises(AssertionError, match="trained again"):
            sft_lm(str(model), other_dialogues, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2)
    (out / SFT_FINISHED).write_text("{not json")  # a torn marker: trains again, no traceback of its own
    with pytest.raises(AssertionError, match="trained again"):
        sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2)
