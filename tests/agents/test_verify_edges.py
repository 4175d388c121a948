"""``verify`` at its edges (issue 43, item 6): a table number edited by one part in a million is caught
(the check is 1e-9 relative, not loose enough to hide a hand edit), and an edited field of the game's own
meta, which no score reads, is caught by the replay."""

from __future__ import annotations

import json

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.evaluation import evaluate
from dialogue_gym.verify import verify


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("verify-edges")
    evaluate("RLADA-Banking-v0", "keyword", 6, seed=7, out=folder / "run.jsonl", save=folder / "results.json", bootstrap=20)
    return folder


def test_a_table_number_edited_by_one_part_in_a_million_is_caught(saved, tmp_path):
    results = json.loads((saved / "results.json").read_text())
    row = results["rows"][0]
    key = next(k for k, v in row.items() if isinstance(v, float) and v > 0 and not isinstance(v, bool))
    row[key] *= 1 + 1e-6
    (tmp_path / "results.json").write_text(json.dumps(results))
    verdict = verify(saved / "run.jsonl", tmp_path / "results.json")
    assert not verdict.ok and verdict.mismatches[0].startswith(f"'keyword' table {key}: results say ")
    assert verify(saved / "run.jsonl", saved / "results.json").ok


def test_an_edited_field_of_the_games_meta_is_caught_by_the_replay(saved, tmp_path):
    lines = [json.loads(line) for line in (saved / "run.jsonl").read_text().splitlines()]
    lines[2]["meta"]["verdict"]["note"] = "hand-edited"
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict = verify(tmp_path / "run.jsonl", saved / "results.json")
    (mismatch,) = verdict.mismatches
    assert f"start {lines[2]['meta']['start']} repeat 0: transcript differs from its replay: meta: recorded " in mismatch


def test_a_record_cut_short_is_named_even_when_its_meta_claims_a_failure(saved, tmp_path):
    """Only a record whose outcome is a backend failure may end before the game does; a 'failure' note in
    the meta of any other record does not excuse missing moves."""
    lines = [json.loads(line) for line in (saved / "run.jsonl").read_text().splitlines()]
    record = lines[1]
    learner = record["learner"]
    moves = [index for index, turn in enumerate(record["turns"]) if turn["role"] == learner]
    assert record["outcome"] != "backend_failure" and len(moves) >= 2
    record["turns"] = record["turns"][: moves[-1]]  # the learner's last move and what followed it gone
    record["meta"]["failure"] = "claimed, though the outcome is no backend failure"
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict = verify(tmp_path / "run.jsonl", saved / "results.json")
    expected = f"transcript differs from its replay: the record holds {len(moves) - 1} moves of {learner!r}, the game asks for more"
    assert any(mismatch.endswith(expected) for mismatch in verdict.mismatches), verdict.mismatches


def test_records_of_another_id_or_agent_in_the_run_file_are_left_aside_with_a_note(saved, tmp_path):
    lines = [json.loads(line) for line in (saved / "run.jsonl").read_text().splitlines()]
    other_id = json.loads(json.dumps(lines[0]))
    other_id["meta"]["env_id"] = "RLADA-Other-v0"
    other_agent = json.loads(json.dumps(lines[0]))
    other_agent["meta"]["agent"] = "someone-else"
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [other_id, *lines, other_agent]))
    verdict = verify(path, saved / "results.json")
    assert verdict.ok, verdict.mismatches
    assert f"2 trajectories of other agents or ids in {path} left aside" in verdict.notes


def test_a_results_file_without_a_bootstrap_count_is_checked_with_no_intervals(tmp_path):
    """A file saved without intervals (no resamples recorded) is re-scored without them: its null bounds match."""
    evaluate("RLADA-Banking-v0", "keyword", 4, seed=3, out=tmp_path / "run.jsonl", save=tmp_path / "results.json", bootstrap=0)
    results = json.loads((tmp_path / "results.json").read_text())
    results["provenance"]["bootstrap"].pop("resamples")
    (tmp_path / "results.json").write_text(json.dumps(results))
    verdict = verify(tmp_path / "run.jsonl", tmp_path / "results.json")
    assert verdict.ok, verdict.mismatches


def test_two_swapped_episodes_are_named_by_the_first_line_out_of_order(saved, tmp_path):
    lines = (saved / "run.jsonl").read_text().splitlines()
    starts = [json.loads(line)["meta"]["start"] for line in lines]
    lines[2], lines[3] = lines[3], lines[2]
    (tmp_path / "run.jsonl").write_text("".join(line + "\n" for line in lines))
    verdict = verify(tmp_path / "run.jsonl", saved / "results.json", replay=False)
    assert verdict.mismatches == [
        f"'keyword': episodes out of the run's order from line 3 of its episodes (start {starts[3]} where start {starts[2]} was played)"
    ]


def test_a_provenance_naming_other_agents_is_a_mismatch(saved, tmp_path):
    results = json.loads((saved / "results.json").read_text())
    results["provenance"]["agents"] = ["keyword", "extra"]
    (tmp_path / "results.json").write_text(json.dumps(results))
    verdict = verify(saved / "run.jsonl", tmp_path / "results.json", replay=False)
    assert verdict.mismatches == ["provenance names agents ['keyword', 'extra'], the results hold ['keyword']"]


def test_a_run_that_counts_unhealthy_episodes_as_invalid_is_rescored_the_same_way(tmp_path):
    evaluate("RLADA-Banking-v0", "keyword", 4, seed=5, out=tmp_path / "run.jsonl", save=tmp_path / "results.json", bootstrap=20,
             invalid_on_unhealthy=True)
    assert json.loads((tmp_path / "results.json").read_text())["provenance"]["invalid_on_unhealthy"] is True
    verdict = verify(tmp_path / "run.jsonl", tmp_path / "results.json")
    assert verdict.ok and verdict.episodes == 4, verdict.mismatches


def test_a_results_file_without_a_bootstrap_seed_is_rechecked_with_seed_zero(saved, tmp_path):
    """A file whose bootstrap records no seed is re-checked with seed 0, the seed every run draws its intervals with."""
    results = json.loads((saved / "results.json").read_text())
    assert results["provenance"]["bootstrap"].pop("seed") == 0
    (tmp_path / "results.json").write_text(json.dumps(results))
    verdict = verify(saved / "run.jsonl", tmp_path / "results.json", replay=False)
    assert verdict.ok, verdict.mismatches


def test_intervals_are_rechecked_with_the_bootstrap_seed_the_file_records(saved, tmp_path):
    from envs_registry import get

    from dialogue_gym.results import Results

    results = Results.load(saved / "results.json")
    provenance = results.provenance
    provenance["bootstrap"]["seed"] = 5
    for agent in results.agents:
        agent.compute_headline(get(provenance["env_id"]).pass_metric, provenance["repeats"], provenance["bootstrap"]["resamples"], 5)
    results.save(tmp_path / "results.json")
    seed_zero = Results.load(saved / "results.json")
    assert [a.headline for a in results.agents] != [a.headline for a in seed_zero.agents], "the example must tell the seeds apart"
    assert verify(saved / "run.jsonl", tmp_path / "results.json", replay=False).ok
