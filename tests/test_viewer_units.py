"""The viewer's Python helpers pinned by hand (issue 43, item 6: viewer.py's mutants): big integers kept
as text, non-finite numbers absent, the depth pre-check, previews cut with an ellipsis, failed turns,
numeric states and bidi marks."""

from __future__ import annotations

import json
import math

import pytest

from dialogue_gym import viewer


def test_integers_of_sixteen_digits_or_more_stay_text_so_the_page_shows_them_exactly():
    assert viewer._parse_int("9" * 15) == 999_999_999_999_999
    assert viewer._parse_int("-" + "9" * 15) == -999_999_999_999_999  # the sign is no digit
    assert viewer._parse_int("1" + "0" * 15) == "1" + "0" * 15
    assert viewer._parse_int("-1" + "0" * 15) == "-1" + "0" * 15


def test_non_finite_numbers_read_as_absent():
    assert viewer._parse_float("1.5") == 1.5 and viewer._parse_float("-0.25") == -0.25
    assert viewer._parse_float("1e999") is None and viewer._parse_float("-1e999") is None
    assert viewer._no_constant("NaN") is None


def test_the_depth_check_counts_brackets_before_scanning():
    assert not viewer._deeper_than_a_record("[" * 100 + "]" * 100)  # exactly the limit
    assert viewer._deeper_than_a_record("[" * 101 + "]" * 101)
    assert viewer._deeper_than_a_record("{\"a\":" * 101 + "1" + "}" * 101)
    assert not viewer._deeper_than_a_record(json.dumps(["[" * 200]))  # brackets inside a string are text
    assert not viewer._deeper_than_a_record("[" * 60 + "{}," * 60 + "1" + "]" * 60)  # many brackets, shallow


def test_values_are_shown_compact_and_cut_with_an_ellipsis():
    assert viewer._compact({"a": [1, 2]}, 20) == '{"a": [1, 2]}'
    assert viewer._compact("abcdef", 8) == '"abcdef"'  # 8 characters: whole
    assert viewer._compact("abcdefg", 8) == '"abcdef\u2026'  # 9: cut to 8
    assert viewer._text(None) == "" and viewer._text("é") == "é" and viewer._text({"é": 1}) == '{"é": 1}'


def test_the_profile_preview_skips_nested_and_absent_values_and_is_cut_at_ninety_characters():
    assert viewer._profile_preview({"a": "x", "b": None, "c": {"d": 1}, "e": [1, 2], "f": 1.5}) == "a=x e=[1,2] f=1.5"
    whole = {"k": "y" * 88}  # "k=" + 88 = 90 characters
    assert viewer._profile_preview(whole) == "k=" + "y" * 88
    assert viewer._profile_preview({"k": "y" * 89}) == "k=" + "y" * 87 + "\u2026"


@pytest.mark.parametrize(
    ("health", "failed"),
    [
        ({}, False),
        ({"format_ok": True}, False),
        ({"format_ok": False}, True),
        ({"role_reversal": ["user spoke as agent"]}, True),
        ({"rule_violations": ["r1"]}, True),
        ({"repaired": ["closed a tag"]}, False),  # repaired is shown, not a failure
        ({"format_ok": True, "role_reversal": [], "rule_violations": []}, False),
    ],
)
def test_a_turn_failed_when_out_of_format_reversed_or_breaking_a_rule(health, failed):
    assert viewer._failed({"health": health}) is failed
    assert viewer._failed({"health": "not a record"}) is False and viewer._failed({}) is False


def test_a_numeric_state_is_a_non_empty_list_of_numbers_not_bools():
    assert viewer._numeric_vector([1, 2.5]) and viewer._numeric_vector([0])
    assert not viewer._numeric_vector([]) and not viewer._numeric_vector([1, True]) and not viewer._numeric_vector([1, "2"])
    assert not viewer._numeric_vector((1, 2)) and not viewer._numeric_vector(3)
    assert viewer._number(True) is None and viewer._number(2) == 2 and viewer._number(math.inf) == math.inf
    assert viewer._index(True) is None and viewer._index(2.0) is None and viewer._index(3) == 3


def test_the_sead_state_is_named_only_for_a_sead_scenario_of_three_values():
    sead = viewer.state_series("SEAD-Outbound-v0", [[1, 2, 3], [0, 0, 9]])
    assert [s["name"] for s in sead] == list(viewer.STATE_NAMES)
    assert [s["max"] for s in sead] == [max(n - 1, seen) for n, seen in zip(viewer.STATE_DIMS, (1, 2, 9))]
    other = viewer.state_series("Other-v0", [[1, -2, 3]])
    assert other == [
        {"name": "state[0]", "min": 0, "max": 1, "values": [1]},
        {"name": "state[1]", "min": -2, "max": 0, "values": [-2]},
        {"name": "state[2]", "min": 0, "max": 3, "values": [3]},
    ]


def test_bidi_controls_show_as_visible_code_points():
    assert viewer._BIDI.sub(viewer._bidi_mark, "a\u202eb\u2066c") == "a\u27e6U+202E\u27e7b\u27e6U+2066\u27e7c"


def test_a_dialogue_row_counts_the_learners_turns_and_takes_its_reward():
    record = {
        "scenario": "SEAD-Outbound-v0", "learner": "agent", "seed": 5, "outcome": "success",
        "turns": [{"role": "user", "text": "a"}, {"role": "agent", "text": "b"}, {"role": "agent", "text": "c", "invalid": "no tag"}],
        "rewards": {"agent": 1.5, "user": -1.0}, "meta": {"agent": "sop", "start": 3, "repeat": 0},
    }
    row, detail = viewer.dialogue_entry(record)
    assert (row["turns"], row["learner_turns"], row["invalid"], row["reward"]) == (3, 2, 1, 1.5)
    assert (row["agent"], row["start"], row["repeat"], row["seed"], row["env"]) == ("sop", 3, 0, 5, "SEAD-Outbound-v0")
    assert detail["rewards"] == {"agent": 1.5, "user": -1.0} and detail["meta"] == {}
    no_learner, _ = viewer.dialogue_entry({**record, "learner": None, "rewards": {"user": 2.0}})
    assert no_learner["learner_turns"] == 0 and no_learner["reward"] == 2.0  # one reward: that one
    two, _ = viewer.dialogue_entry({**record, "learner": None})
    assert two["reward"] is None  # two rewards and no learner: none is the dialogue's


def test_states_are_charted_by_the_scenario_and_non_numeric_ones_shown_on_their_turn():
    turns = [{"role": "user", "text": "a", "state": [1, 2, 3]}, {"role": "agent", "text": "b", "state": {"phase": "close"}},
             {"role": "user", "text": "c", "state": [2, 2, 3]}]
    _, detail = viewer.dialogue_entry({"scenario": "SEAD-Outbound-v0", "turns": turns, "meta": {"env_id": "Custom-v0"}})
    assert [s["name"] for s in detail["series"]] == list(viewer.STATE_NAMES)  # the scenario names the state, not the id
    assert [turn.get("state") for turn in detail["turns"]] == [None, {"phase": "close"}, None]  # numeric ones are in the chart
    _, by_id = viewer.dialogue_entry({"scenario": "", "turns": turns, "meta": {"env_id": "SEAD-Outbound-v0"}})
    assert [s["name"] for s in by_id["series"]] == list(viewer.STATE_NAMES)  # no scenario: the env id


def test_a_training_run_is_shown_by_iteration_then_episode_with_records_of_no_iteration_last(tmp_path):
    records = [
        {"iteration": 1, "episode": 0, "learner": "agent", "seed": 10},
        {"episode": 0, "learner": "agent", "seed": 99},  # no iteration
        {"iteration": 0, "episode": 1, "learner": "agent", "seed": 1},
        {"iteration": 0, "episode": 0, "learner": "agent", "seed": 0, "meta": {"learner_record": {"x": 1}, "note": "n"}},
        {"iteration": 1, "episode": 0, "learner": "agent", "seed": 11},  # played again after a resume: replaces seed 10
    ]
    (tmp_path / "config.json").write_text(json.dumps({"preset": "cpu-strategy", "policy": "lm", "model": "scratch"}))
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    shown, training = viewer.sample_training_run(tmp_path)
    assert [r["seed"] for r in shown] == [0, 1, 11, 99]
    assert shown[0]["meta"] == {"note": "n", "agent": "trained agent: lm (scratch)"}
    assert training == {"folder": tmp_path.name, "per_iteration": 20, "sample_seed": 0, "iterations": 2, "dialogues": 4, "shown": 4, "preset": "cpu-strategy"}


def test_a_training_run_shows_at_least_one_dialogue_per_iteration_and_refuses_fewer(tmp_path):
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps({"iteration": 0, "episode": e}) + "\n" for e in range(3)))
    shown, training = viewer.sample_training_run(tmp_path, per_iteration=1)
    assert len(shown) == 1 and training["shown"] == 1 and training["dialogues"] == 3
    for bad in (0, True, 1.0):
        with pytest.raises(viewer.ConfigError, match=r"--per-iteration must be an integer >= 1"):
            viewer.sample_training_run(tmp_path, per_iteration=bad)


def test_an_invalid_turn_counts_whatever_its_reason_says_even_nothing():
    """A turn is invalid when its record has an ``invalid`` entry; an empty reason is still one."""
    record = {
        "scenario": "SEAD-Outbound-v0", "learner": "agent", "seed": 5,
        "turns": [{"role": "agent", "text": "a", "invalid": ""}, {"role": "agent", "text": "b", "invalid": None},
                  {"role": "agent", "text": "c", "invalid": "no tag"}],
    }
    row, detail = viewer.dialogue_entry(record)
    assert row["invalid"] == 2
    assert [turn.get("invalid") for turn in detail["turns"]] == ["", None, "no tag"]
