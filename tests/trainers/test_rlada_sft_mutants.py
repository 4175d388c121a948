"""RL-ADA's supervised bootstrap checked against its definition (issue 43 item 6, trainers/rlada/sft.py):
the recorder keeps every (prompt, action) pair the teacher produced, and a call's pairs become rows of
the SFT phase every LM trainer shares, trained on the teacher's actions only."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainers.rlada.sft import DemoRecorder, demonstration_rows  # noqa: E402

PROMPT = [{"role": "system", "content": "You route bank calls."}, {"role": "user", "content": "My card was stolen."}]
LONGER = [*PROMPT, {"role": "assistant", "content": "Which card?"}, {"role": "user", "content": "The debit card, yesterday evening."}]


class Teacher:
    """Says ``reply <seed>:<turn>`` to each observation: every pair is told apart by its text."""

    def start(self, profile, seed):
        return {"seed": seed, "turn": 0}

    def act_batch(self, observations, infos, memories):
        texts = []
        for memory in memories:
            memory["turn"] += 1
            texts.append(f"reply {memory['seed']}:{memory['turn']}")
        return texts


def test_the_recorder_keeps_each_observation_whole_with_the_teachers_action():
    recorder = DemoRecorder(Teacher())
    memories = [recorder.start({}, 7), recorder.start({}, 8)]
    first = [{"messages": PROMPT}, {"messages": LONGER}]
    assert recorder.act_batch(first, [{}, {}], memories) == ["reply 7:1", "reply 8:1"]
    assert recorder.act_batch([{"messages": LONGER}], [{}], memories[:1]) == ["reply 7:2"]
    assert recorder.record(memories[0]) == {"pairs": [[PROMPT, "reply 7:1"], [LONGER, "reply 7:2"]]}
    assert recorder.record(memories[1]) == {"pairs": [[LONGER, "reply 8:1"]]}


def test_a_calls_pairs_become_rows_of_the_shared_sft_phase_packed_into_one_sequence(tiny_model_dir):
    from trainers.common.sft import pack_session
    from transformers import AutoTokenizer

    rows = demonstration_rows([[PROMPT, "route to card_block"], [LONGER, "ask which card"]])
    assert rows == [
        {"prompt": PROMPT, "completion": [{"role": "assistant", "content": "route to card_block"}]},
        {"prompt": LONGER, "completion": [{"role": "assistant", "content": "ask which card"}]},
    ]
    assert all(type(m) is dict for row in rows for m in row["prompt"])  # plain messages, whatever the view handed out
    # LONGER does not extend PROMPT + the first action (its assistant turn says "Which card?"), so two sequences;
    # a call whose prompts grow by the teacher's own actions is one, the mask on both actions.
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    assert len(pack_session(rows, tokenizer)) == 2
    grown = [*PROMPT, {"role": "assistant", "content": "route to card_block"}, {"role": "user", "content": "Thanks."}]
    (packed,) = pack_session(demonstration_rows([[PROMPT, "route to card_block"], [grown, "ask which card"]]), tokenizer)
    masked = tokenizer.decode([i for i, m in zip(packed["input_ids"], packed["completion_mask"]) if m])
    assert "route to card_block" in masked and "ask which card" in masked and "Thanks." not in masked
