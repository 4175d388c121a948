import copy
import dataclasses
import json

import pytest

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.tracer import synthetic
from dialogue_gym.scenarios.tracer.data import (
    DEFAULT_SESSIONS_FILE,
    load_levels,
    load_phrases,
    load_replies,
    load_sessions,
    load_weights,
    load_world,
    parse_session,
)
from dialogue_gym.scenarios.tracer.dynamics import FeatureMap

GOOD = {
    "session_id": "s1",
    "group_id": "g1",
    "synthetic": True,
    "merchant": {"name": "Shop", "industry": "automotive", "facts": ["test drives any day"]},
    "profile": {"personality": "skeptical", "initial_intent": "wants a car"},
    "turns": [
        {"role": "assistant", "text": "Hello!"},
        {"role": "user", "text": "SUV.", "intent_level": 2, "rationale": "brief"},
        {"role": "assistant", "text": "Budget?"},
        {"role": "user", "text": "Where is the store?", "intent_level": 4, "rationale": "concrete"},
        {"role": "assistant", "text": "Leave your number."},
        {"role": "user", "text": "138xxxx1234", "intent_level": 5, "rationale": "ready"},
    ],
    "outcome": "conversion",
}


def write(tmp_path, records, name="refs.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_the_packaged_sample_is_synthetic_and_large_enough():
    references = load_sessions()
    assert len(references) >= 300 and len(references.groups()) >= 30
    assert references.synthetic and all(s.synthetic for s in references.sessions)
    session = references["syn-g00-s00"]
    assert session.opening == session.merchant["greeting"] and session.turns[0].role == "assistant"
    assert 3 <= len(session.intents) <= 15 and session.converted == (session.intents[-1] == 5)
    assert 0.3 < sum(s.converted for s in references.sessions) / len(references) < 0.7


def test_the_packaged_sample_is_what_the_documented_generator_writes(tmp_path):
    out = tmp_path / "regenerated.jsonl"
    synthetic.write(synthetic.generate(groups=40, per_group=10, seed=0), out)
    assert out.read_text(encoding="utf-8") == DEFAULT_SESSIONS_FILE.read_text(encoding="utf-8")


def test_a_good_record_loads(tmp_path):
    references = load_sessions(write(tmp_path, [GOOD, "", {**GOOD, "session_id": "s2", "group_id": "g2"}]))
    assert references.ids == ("s1", "s2") and list(references.groups()) == ["g1", "g2"]
    assert references["s1"].intents == (2, 4, 5) and references["s1"].to_dict()["turns"] == GOOD["turns"]
    assert references.subset(["s2"]).ids == ("s2",)
    with pytest.raises(ScenarioError, match=r"Unknown session id 'nope' in .*refs.jsonl; use one of its 2 ids"):
        references["nope"]
    # dataclasses.replace builds the new set's own index: it neither finds the sessions it dropped nor
    # adds its sessions to the original's
    only_first = dataclasses.replace(references, sessions=references.sessions[:1], path="first.jsonl")
    with pytest.raises(ScenarioError, match=r"Unknown session id 's2' in first.jsonl; use one of its 1 ids"):
        only_first["s2"]
    renamed = dataclasses.replace(references, sessions=(dataclasses.replace(references["s1"], session_id="s9"),))
    assert renamed["s9"].session_id == "s9"
    with pytest.raises(ScenarioError, match="Unknown session id 's9'"):
        references["s9"]


def broken(change):
    record = copy.deepcopy(GOOD)
    change(record)
    return record


def test_a_reference_obeys_the_opening_rule_even_with_one_user_turn():
    record = broken(lambda r: r.update(turns=[r["turns"][0], {**r["turns"][-1]}]))
    with pytest.raises(ScenarioError, match="user turn 0 has intent_level 5, but a user cannot convert or leave on its first move"):
        parse_session(record, "refs.jsonl: line 1", min_user_turns=1)


@pytest.mark.parametrize(
    "record, message",
    [
        (broken(lambda r: r.pop("group_id")), r"line 1: missing field 'group_id'"),
        (broken(lambda r: r["merchant"].pop("industry")), r"line 1: missing field 'merchant.industry'"),
        (broken(lambda r: r["profile"].pop("initial_intent")), r"line 1: missing field 'profile.initial_intent'"),
        (broken(lambda r: r.update(synthetic="yes")), r"line 1: field 'synthetic' must be a bool, got 'yes'"),
        (broken(lambda r: r["turns"][3].update(intent_level=7)), r"line 1: turns\[3\].intent_level must be an int 0-5, got 7"),
        (broken(lambda r: r["turns"][3].update(intent_level=True)), r"turns\[3\].intent_level must be an int 0-5, got True"),
        (broken(lambda r: r["turns"][1].pop("rationale")), r"missing field 'turns\[1\].rationale'"),
        (broken(lambda r: r["turns"][2].update(role="user")), r"turns\[2\].role must be 'assistant' \(turns alternate"),
        (broken(lambda r: r["turns"][1].update(text="")), r"turns\[1\].text is empty with intent_level 2"),
        (broken(lambda r: r["turns"].pop()), "the last turn must be a user turn"),
        (broken(lambda r: r["turns"][1].update(intent_level=0)), "user turn 0 has intent_level 0, which ends a session"),
        (broken(lambda r: r.update(outcome="dropout")), "outcome 'dropout' disagrees with the last intent_level 5"),
        (broken(lambda r: r.update(outcome="sold")), r"field 'outcome' must be one of \['conversion', 'dropout'\]"),
        (broken(lambda r: r.update(turns=r["turns"][:2])), "1 user turns; reference sessions have 3-15"),
        ("{not json", r"line 1: invalid JSON \(.*\)\. Fix the syntax on that line"),
        ([1, 2], r"line 1: field '<record>' must be a dict"),
    ],
)
def test_errors_name_file_line_and_field(tmp_path, record, message):
    path = write(tmp_path, [record])
    with pytest.raises(ScenarioError, match=rf"refs\.jsonl: {message}" if message.startswith("line") else message):
        load_sessions(path)


def test_duplicate_ids_and_empty_or_missing_files(tmp_path):
    with pytest.raises(ScenarioError, match=r"refs\.jsonl: line 2: duplicate session_id 's1' \(first on line 1\)"):
        load_sessions(write(tmp_path, [GOOD, GOOD]))
    with pytest.raises(ScenarioError, match="no sessions"):
        load_sessions(write(tmp_path, [""], "empty.jsonl"))
    with pytest.raises(ScenarioError, match=r"missing\.jsonl' does not exist; pass sessions_file= a UTF-8 JSONL file"):
        load_sessions(tmp_path / "missing.jsonl")


def test_scenario_files_load_and_validate(tmp_path):
    world = load_world()
    assert len(world.merchants) == 8 and set(world.industries) == {m["industry"] for m in world.merchants}
    assert [entry["level"] for entry in load_levels()] == list(range(6))
    assert "contact" in load_phrases()["phrases"] and set(load_replies()["replies"]) == {str(i) for i in range(6)}
    names = FeatureMap.from_world(world).names
    bad = tmp_path / "weights.json"
    bad.write_text(json.dumps({"weights": {"prev:9": [0] * 6}}))
    with pytest.raises(ScenarioError, match=r"weights has unknown feature 'prev:9'; known features"):
        load_weights(bad, names)
    bad.write_text(json.dumps({"weights": {"bias": [0] * 5}}))
    with pytest.raises(ScenarioError, match=r"weights\['bias'\] must be 6 finite numbers"):
        load_weights(bad, names)


def test_a_sessions_file_with_invalid_utf8_or_deep_nesting_is_one_error_naming_the_file(tmp_path):
    path = write(tmp_path, [GOOD])
    path.write_bytes(path.read_bytes() + b'{"session_id": "caf\xe9"}\n')
    with pytest.raises(ScenarioError, match=r"refs\.jsonl: line 2: not UTF-8 text \(byte b'\\xe9' at column 20\); pass sessions_file="):
        load_sessions(path)
    path.write_text(json.dumps(GOOD) + "\n" + "[" * 100_000 + "\n")
    with pytest.raises(ScenarioError, match=r"refs\.jsonl: line 2: unreadable JSON \(RecursionError\)"):
        load_sessions(path)


def test_the_cli_names_a_sessions_file_with_invalid_utf8_in_one_line(tmp_path, capsys):
    from dialogue_gym.cli import main

    path = tmp_path / "private.jsonl"
    path.write_bytes(b"\xff\xfe" + json.dumps(GOOD).encode() + b"\n")
    assert main(["eval", "TRACER-UserSim-v0", "--episodes", "1", "--quiet", "--env-kwargs", json.dumps({"sessions_file": str(path)})]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: line 1: not UTF-8 text (byte b'\\xff' at column 1)" in err, err
