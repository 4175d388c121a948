"""Results files (dialogue_gym.results): provenance, strict JSON and CSV, headline intervals and pass^k,
and the paired comparison, including the ways a comparison could be gamed."""

import copy
import json
import math

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.metrics.episodes import sead as sead_scores
from dialogue_gym.results import COMPARED, FORMAT, AgentResult, Results, compare, software


def _results(agents, episodes=40, seed=0, repeats=1, resamples=300):
    rows = []
    for name in agents:
        trajectories = evaluate("SEAD-Outbound-v0", name, episodes, seed=seed, repeats=repeats)
        agent = AgentResult.from_trajectories(name, trajectories, sead_metrics.summary(trajectories), sead_scores)
        agent.compute_headline("cr", repeats, resamples)
        rows.append(agent)
    provenance = {"env_id": "SEAD-Outbound-v0", "learner": "agent", "episodes": episodes, "repeats": repeats, "seed": seed, "env_kwargs": {}}
    return Results(provenance, rows)


@pytest.fixture(scope="module")
def sop_and_adaptive():
    return _results(["sop", "adaptive"], episodes=120)


def test_headline_values_equal_the_summary_and_sit_inside_their_intervals(sop_and_adaptive):
    for agent in sop_and_adaptive.agents:
        for key in ("cr", "att_all", "upa", "ti"):
            estimate = agent.headline[key]
            assert estimate["value"] == pytest.approx(agent.summary[key])
            assert estimate["low"] <= estimate["value"] <= estimate["high"] and estimate["low"] < estimate["high"]
        assert "pass^1" not in agent.headline  # pass^k needs repeats


def test_pass_k_with_repeats_equals_the_hand_count_of_the_episodes():
    (agent,) = _results(["adaptive"], episodes=12, repeats=3).agents
    outcomes = {}
    for episode in agent.episodes:
        outcomes.setdefault(episode["start"], []).append(episode["scores"]["cr"][0])
    assert all(len(trials) == 3 for trials in outcomes.values())
    all_three = sum(all(trials) for trials in outcomes.values()) / len(outcomes)
    assert agent.headline["pass^3"]["value"] == pytest.approx(all_three)
    assert agent.headline["pass^1"]["value"] == pytest.approx(agent.summary["cr"])
    assert agent.headline["pass^3"]["value"] <= agent.headline["pass^2"]["value"] <= agent.headline["pass^1"]["value"]


def test_json_is_strict_and_round_trips(tmp_path, sop_and_adaptive):
    results = copy.deepcopy(sop_and_adaptive)
    results.provenance.update(software())
    path = results.save(tmp_path / "results.json")
    data = json.loads(path.read_text(), parse_constant=lambda name: pytest.fail(f"bare {name} in the JSON"))
    assert data["format"] == FORMAT and [row["agent"] for row in data["rows"]] == ["sop", "adaptive"]
    assert data["rows"][0]["cr"] == pytest.approx(results.agents[0].summary["cr"])
    assert len(data["episodes"]["sop"]) == 120 and set(data["episodes"]["sop"][0]) == {"start", "repeat", "seed", "scores"}
    assert data["provenance"]["python"] and "numpy" in data["provenance"]["libraries"]
    loaded = Results.load(path)
    assert [a.name for a in loaded.agents] == ["sop", "adaptive"]
    assert loaded.agents[1].episodes == results.agents[1].episodes
    assert compare(loaded, results, "sop", "sop")[0]["difference"] == 0.0


def test_nan_is_written_as_null(tmp_path):
    results = _results(["random"], episodes=6, resamples=50)
    assert math.isnan(results.agents[0].summary["att_success"])  # random never succeeds in 6 calls
    data = json.loads(results.save(tmp_path / "r.json").read_text())
    assert data["rows"][0]["att_success"] is None
    assert math.isnan(Results.load(tmp_path / "r.json").agents[0].summary["att_success"])


def test_csv_has_provenance_comments_and_one_row_per_agent(tmp_path, sop_and_adaptive):
    text = sop_and_adaptive.save(tmp_path / "results.csv").read_text()
    comments = [line for line in text.splitlines() if line.startswith("# ")]
    assert "# env_id: \"SEAD-Outbound-v0\"" in comments and "# episodes: 120" in comments
    header, *rows = [line for line in text.splitlines() if not line.startswith("#")]
    assert header.startswith("agent,privileged,episodes,") and "cr_ci_low" in header and len(rows) == 2
    assert rows[0].startswith("sop,False,120,")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("r.csv", "agent\n", r"a results CSV holds the table only; compare the JSON"),
        ("none.json", None, r"none.json' does not exist; write one with `dialogue-gym eval"),
        ("bad.json", "{oops", r"bad.json: not a results JSON"),
        ("other.json", '{"format": "x"}', r"field 'format' must be 'dialogue_gym.results/1', got 'x'"),
        ("bare.json", json.dumps({"format": FORMAT, "provenance": {}}), r"field 'provenance' lacks \['env_id', 'learner', 'episodes', 'repeats', 'seed'\]"),
        ("torn.json", json.dumps({"format": FORMAT, "provenance": dict.fromkeys(COMPARED, 1), "rows": [], "episodes": {"sop": []}, "headline": {}}), r"malformed results file \(KeyError"),
    ],
)
def test_load_errors_name_the_file_and_the_fix(tmp_path, name, content, message):
    if content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(ConfigError, match=message):
        Results.load(tmp_path / name)


def test_a_better_agent_is_significantly_better_and_an_agent_against_itself_is_not(sop_and_adaptive):
    rows = {row["key"]: row for row in compare(sop_and_adaptive, sop_and_adaptive, "sop", "adaptive")}
    cr = rows["cr"]
    assert cr["difference"] == pytest.approx(cr["b"] - cr["a"]) and cr["difference"] > 0.2
    assert cr["significant"] and 0 < cr["low"] < cr["difference"] < cr["high"]
    itself = compare(sop_and_adaptive, sop_and_adaptive, "sop", "sop")
    assert all(row["difference"] == 0 and not row["significant"] for row in itself)


def test_comparing_runs_of_other_episodes_seeds_or_ids_is_refused(sop_and_adaptive):
    """The cheap way to 'win' a comparison: evaluate B on a luckier seed or a shorter, easier run."""
    for key, value in (("seed", 1), ("episodes", 60), ("env_id", "RLADA-Banking-v0"), ("repeats", 2)):
        other = copy.deepcopy(sop_and_adaptive)
        other.provenance[key] = value
        with pytest.raises(ConfigError, match=rf"Cannot compare runs that played different episodes \({key}: .* vs .*\)"):
            compare(sop_and_adaptive, other, "sop", "adaptive")


def test_dropping_rerolling_or_duplicating_episodes_is_refused(sop_and_adaptive):
    """Deleting B's failed episodes, replaying them on other seeds until they pass, or counting its
    successes twice would each raise its value (and narrow its interval)."""
    tampered = {}
    for how in ("dropped", "rerolled", "doubled"):
        results = copy.deepcopy(sop_and_adaptive)
        adaptive = results.agent("adaptive")
        failed = [e for e in adaptive.episodes if e["scores"]["cr"][0] == 0.0]
        if how == "dropped":
            adaptive.episodes = [e for e in adaptive.episodes if e not in failed]
        elif how == "rerolled":
            for episode in failed:
                episode["seed"] += 1_000_000
                episode["scores"]["cr"] = [1.0, 1.0]
        else:
            adaptive.episodes += [e for e in adaptive.episodes if e not in failed]
        tampered[how] = results
    with pytest.raises(ConfigError, match=r"'adaptive' holds \d+ episodes \(\d+ distinct\) for 120 starts x 1 repeats; a results file has one per"):
        compare(sop_and_adaptive, tampered["dropped"], "sop", "adaptive")
    with pytest.raises(ConfigError, match=r"Cannot pair the episodes of 'sop' and 'adaptive': \d+ \(start, repeat, seed\) keys are in one run only"):
        compare(sop_and_adaptive, tampered["rerolled"], "sop", "adaptive")
    with pytest.raises(ConfigError, match=r"'adaptive' holds \d+ episodes \(120 distinct\) for 120 starts"):
        compare(sop_and_adaptive, tampered["doubled"], "sop", "adaptive")


def test_agent_selection_errors(sop_and_adaptive):
    with pytest.raises(ConfigError, match=r"A holds 2 agents \['sop', 'adaptive'\]; name the one to compare \(--agent-a / --agent-b\)"):
        compare(sop_and_adaptive, sop_and_adaptive)
    with pytest.raises(ConfigError, match=r"B holds no agent 'oracle'; its agents are \['sop', 'adaptive'\]"):
        compare(sop_and_adaptive, sop_and_adaptive, "sop", "oracle")


def test_results_of_builds_the_eval_save_record_of_runs_played_elsewhere(tmp_path):
    from dialogue_gym.results import results_of

    runs = {name: evaluate("SEAD-Outbound-v0", name, 30, seed=4) for name in ("sop", "adaptive")}
    provenance = {"env_kwargs": {}, "learner": "agent", "episodes": 30, "repeats": 1, "seed": 4, "trainer": "test"}
    built = results_of("SEAD-Outbound-v0", runs, provenance, resamples=200)
    assert built.provenance["env_id"] == "SEAD-Outbound-v0" and built.provenance["agents"] == ["sop", "adaptive"]
    assert built.provenance["trainer"] == "test" and built.provenance["bootstrap"]["resamples"] == 200
    adaptive = built.agent("adaptive")
    assert adaptive.summary["cr"] == sead_metrics.cr(runs["adaptive"]) and "counterpart_health" not in adaptive.summary
    assert adaptive.headline["cr"]["value"] == pytest.approx(sead_metrics.cr(runs["adaptive"]))
    assert adaptive.headline["cr"]["low"] <= adaptive.headline["cr"]["value"] <= adaptive.headline["cr"]["high"]
    saved = Results.load(built.save(tmp_path / "both.json"))
    [row] = [r for r in compare(saved, saved, "sop", "adaptive", resamples=200) if r["key"] == "cr"]
    assert row["difference"] == pytest.approx(sead_metrics.cr(runs["adaptive"]) - sead_metrics.cr(runs["sop"]))
    with pytest.raises(ConfigError, match=r"results_of: provenance lacks \['repeats', 'seed'\]"):
        results_of("SEAD-Outbound-v0", runs, {"env_kwargs": {}, "learner": "agent", "episodes": 30})
