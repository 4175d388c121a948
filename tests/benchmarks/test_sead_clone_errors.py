"""benchmarks/sead_clone_errors.py puts each clone turn in one class against the teacher's."""

import importlib.util
from pathlib import Path

from dialogue_gym.scenarios.sead.agents import PHRASES
from dialogue_gym.scenarios.sead.parsing import render_agent_output

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sead_clone_errors.py"
VALUE, EVIDENCE, COST = PHRASES["value"], PHRASES["evidence"], PHRASES["cost"]


def load():
    spec = importlib.util.spec_from_file_location("benchmark_sead_clone_errors", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_class_from_a_hand_made_turn():
    classify = load().classify
    teacher = render_agent_output(VALUE[1], (2, 2, 2))
    earlier = [VALUE[0], EVIDENCE[0]]
    assert classify(teacher, teacher, earlier) == "agree"
    assert classify(teacher, render_agent_output(VALUE[1], (3, 2, 2)), earlier) == "estimate"
    assert classify(teacher, render_agent_output(VALUE[2], (2, 2, 2)), earlier) == "phrasing (new)"
    assert classify(teacher, render_agent_output(VALUE[0], (2, 2, 2)), earlier) == "phrasing (repeat)"
    assert classify(teacher, render_agent_output(COST[0], (2, 2, 2)), earlier) == "acts (new)"
    assert classify(teacher, render_agent_output(EVIDENCE[0], (2, 2, 2)), earlier) == "acts (repeat)"
    # Two acts where the teacher said one: other acts, even when the first is the teacher's.
    assert classify(teacher, render_agent_output(f"{VALUE[1]} {COST[1]}", (2, 2, 2)), earlier) == "acts (new)"


def test_words_that_are_not_the_phrases_and_broken_turns_are_text():
    classify = load().classify
    teacher = render_agent_output(VALUE[1], (2, 2, 2))
    assert classify(teacher, render_agent_output("The weather is nice today.", (2, 2, 2)), []) == "text"
    assert classify(teacher, render_agent_output(f"{VALUE[1]} and more", (2, 2, 2)), []) == "text"
    assert classify(teacher, f"<response>{VALUE[2]}", []) == "text"  # no turn end: out of format


def test_teacher_repeats_counts_turns_that_say_an_earlier_phrase_again():
    chat = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": render_agent_output(VALUE[0], (2, 2, 2))},
        {"role": "user", "content": "hm"},
        {"role": "assistant", "content": render_agent_output(f"{EVIDENCE[0]} {VALUE[0]}", (2, 2, 2))},
        {"role": "user", "content": "hm"},
        {"role": "assistant", "content": render_agent_output(COST[0], (2, 2, 2))},
    ]
    assert load().teacher_repeats(chat) == (3, 1)


def test_greedy_turns_decodes_only_what_follows_each_turns_prompt(monkeypatch):
    import torch

    import trainers.common.sft as sft

    module = load()
    monkeypatch.setattr(sft, "turn_spans", lambda tokenizer, chat: ([10, 11, 12, 13, 14, 15], [(2, 3), (5, 6)]))

    class Model:
        def generate(self, input_ids, **kwargs):
            assert kwargs["do_sample"] is False and kwargs["max_new_tokens"] == 4
            return torch.cat([input_ids, torch.tensor([[len(input_ids[0]) * 100]])], dim=1)

    class Tokenizer:
        eos_token_id, pad_token_id = 1, 0

        def decode(self, ids, skip_special_tokens):
            return ",".join(str(int(i)) for i in ids)

    # The prompt of turn 0 is the first 2 ids, of turn 1 the first 5: only the generated id is decoded.
    assert module.greedy_turns(Model(), Tokenizer(), [], 4) == ["200", "500"]


def test_errors_of_counts_by_turn_with_turns_8_on_pooled_and_the_teachers_history(monkeypatch):
    module = load()
    teacher = [render_agent_output(VALUE[i % 3], (2, 2, 2)) for i in range(10)]
    chat = [message for turn in teacher for message in ({"role": "assistant", "content": turn}, {"role": "user", "content": "hm"})]
    # The model says value 0 every turn: turn 0 agrees; turns 1, 2 are other phrasings of one act, repeats
    # of turn 0's phrase (the history is the teacher's); turn 3 (value 0 again) agrees.
    monkeypatch.setattr(module, "greedy_turns", lambda model, tokenizer, chat, limit: [teacher[0]] * 10)
    result = module.errors_of(None, None, [chat], 24)
    assert result["counts"]["agree"] == 4 and result["counts"]["phrasing (repeat)"] == 6
    assert sorted(result["by_turn"]) == list(range(9))
    assert result["by_turn"][8] == {**dict.fromkeys(module.CLASSES, 0), "phrasing (repeat)": 1, "agree": 1}
    assert result["by_turn"][3]["agree"] == 1
    assert module.table([("m", result)]).splitlines()[2] == "| m | 10 | 0.400 | 0.000 | 0.000 | 0.600 | 0.000 | 0.000 | 0.000 |"
