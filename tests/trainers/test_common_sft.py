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
