"""``dialogue-gym verify RUN.jsonl RESULTS.json`` (issue 42, item 6), tested as attacks on a saved run:
an edited score, an edited counterpart line, a dropped episode, two swapped episodes; each is caught
and named, and the untouched run verifies, sealed (replayed from its revealed secret) and open."""

from __future__ import annotations

import json
import shutil

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.cli import main
from dialogue_gym.evaluation import evaluate
from dialogue_gym.verify import verify


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("verify")
    command = ["eval", "SEAD-Outbound-v0", "--agent", "sop,adaptive", "--episodes", "24", "--repeats", "2", "--sealed",
               "--quiet", "--bootstrap", "100", "--out", str(folder / "run.jsonl"), "--save", str(folder / "results.json")]
    assert main(command) == 0
    return folder


@pytest.fixture
def run(sealed_run, tmp_path):
    for name in ("run.jsonl", "results.json"):
        shutil.copy(sealed_run / name, tmp_path / name)
    return tmp_path


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_lines(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def test_an_untouched_sealed_run_verifies_with_exit_0_and_one_line(run, capsys):
    assert main(["verify", str(run / "run.jsonl"), str(run / "results.json")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["verified: 96 episodes of 2 agent(s) re-scored and match the results, 96 replayed turn by turn"]


def test_an_open_run_saved_from_python_verifies_from_its_public_seed(tmp_path):
    evaluate("RLADA-Banking-v0", "keyword", 10, seed=7, out=tmp_path / "run.jsonl", save=tmp_path / "results.json", bootstrap=50)
    verdict = verify(tmp_path / "run.jsonl", tmp_path / "results.json")
    assert verdict.ok and verdict.replayed == 10, verdict.mismatches


def test_a_hand_edited_score_is_caught(run, capsys):
    results = json.loads((run / "results.json").read_text())
    results["rows"][0]["cr"] += 0.05  # the table
    success, counted = results["episodes"]["sop"][3]["scores"]["cr"]
    results["episodes"]["sop"][3]["scores"]["cr"] = [1.0 - success, counted]  # and an episode: its outcome flipped (the run is sealed, so either)
    (run / "results.json").write_text(json.dumps(results))
    assert main(["verify", str(run / "run.jsonl"), str(run / "results.json")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT verified:")
    assert "'sop' table cr: results say" in out
    assert "'sop' start " in out and " scores: results say " in out


def test_an_edited_headline_alone_is_caught(run):
    results = json.loads((run / "results.json").read_text())
    results["headline"]["adaptive"]["cr"]["low"] = 0.99
    (run / "results.json").write_text(json.dumps(results))
    verdict = verify(run / "run.jsonl", run / "results.json")
    assert verdict.mismatches == [verdict.mismatches[0]] and verdict.mismatches[0].startswith("'adaptive' headline cr:")


def test_a_hand_edited_counterpart_line_is_caught_by_the_replay(run, capsys):
    records = _lines(run / "run.jsonl")
    turn = next(t for t in records[5]["turns"] if t["role"] == "user")
    turn["raw"] = turn["text"] = "Yes, sign me up right now."
    _write_lines(run / "run.jsonl", records)
    assert main(["verify", str(run / "run.jsonl"), str(run / "results.json")]) == 1
    out = capsys.readouterr().out
    assert "transcript differs from its replay: turn" in out and "(user) raw: recorded 'Yes, sign me up right now.'" in out


def test_an_edited_outcome_that_the_scores_were_made_to_agree_with_is_caught_by_the_replay(run):
    """Scores re-computed from the edited run match it; only the replay shows that the game never went so."""
    records = _lines(run / "run.jsonl")
    victim = next(r for r in records if r["outcome"] != "success" and r["meta"]["agent"] == "sop")
    victim["outcome"] = "success"
    _write_lines(run / "run.jsonl", records)
    verdict = verify(run / "run.jsonl", run / "results.json", replay=False)
    assert not verdict.ok  # the results file no longer agrees with the edited run
    start = victim["meta"]["start"]
    verdict = verify(run / "run.jsonl", run / "results.json")
    assert any(f"'sop' start {start} repeat {victim['meta']['repeat']}: transcript differs" in m and "outcome" in m for m in verdict.mismatches)


def test_a_dropped_episode_is_caught(run, capsys):
    records = _lines(run / "run.jsonl")
    dropped = records.pop(10)
    _write_lines(run / "run.jsonl", records)
    assert main(["verify", str(run / "run.jsonl"), str(run / "results.json")]) == 1
    out = capsys.readouterr().out
    assert f"'sop': 1 episode(s) missing from the run file: start {dropped['meta']['start']} repeat {dropped['meta']['repeat']}" in out


def test_an_episode_dropped_from_both_files_is_caught(run):
    records = _lines(run / "run.jsonl")
    dropped = records.pop(10)
    _write_lines(run / "run.jsonl", records)
    results = json.loads((run / "results.json").read_text())
    results["episodes"]["sop"] = [e for e in results["episodes"]["sop"] if (e["start"], e["repeat"]) != (dropped["meta"]["start"], dropped["meta"]["repeat"])]
    (run / "results.json").write_text(json.dumps(results))
    verdict = verify(run / "run.jsonl", run / "results.json")
    assert any("missing from the run file" in m for m in verdict.mismatches)


def test_two_swapped_lines_are_caught_as_out_of_order(run):
    records = _lines(run / "run.jsonl")
    records[2], records[7] = records[7], records[2]
    _write_lines(run / "run.jsonl", records)
    verdict = verify(run / "run.jsonl", run / "results.json")
    assert [m for m in verdict.mismatches if "out of the run's order" in m], verdict.mismatches


def test_two_episodes_swapped_under_each_others_labels_are_caught(run):
    """The dialogues of two starts exchanged, each keeping its place and label: seeds and replays disagree."""
    records = _lines(run / "run.jsonl")
    a, b = records[2], records[8]
    for key in ("turns", "outcome", "rewards", "reward_terms", "profile"):
        a[key], b[key] = b[key], a[key]
    _write_lines(run / "run.jsonl", records)
    verdict = verify(run / "run.jsonl", run / "results.json")
    replays = [m for m in verdict.mismatches if "transcript differs from its replay" in m]
    assert {f"start {r['meta']['start']} repeat {r['meta']['repeat']}:" for r in (a, b)} <= {m.split("'sop' ")[1].split(" transcript")[0] for m in replays}


def test_a_wrong_secret_is_caught(run):
    results = json.loads((run / "results.json").read_text())
    results["provenance"]["secret"] = "0" * 32
    (run / "results.json").write_text(json.dumps(results))
    verdict = verify(run / "run.jsonl", run / "results.json")
    assert not verdict.ok and "not a play of this run" in " ".join(verdict.mismatches)
