import json

import pytest

import dialogue_gym
from dialogue_gym.cli import main
from dialogue_gym.evaluation import load_trajectories


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "SEAD-Outbound-v0" in out and "agent, user" in out


def test_eval_prints_table_and_writes_jsonl(tmp_path, capsys):
    out_file = tmp_path / "run.jsonl"
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop,oracle", "--episodes", "24", "--seed", "3", "--out", str(out_file), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| sop " in printed and "| oracle " in printed and "CR lo95" in printed and "median" in printed
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(records) == 48 and {r["meta"]["agent"] for r in records} == {"sop", "oracle"}
    trajectories = load_trajectories(out_file)
    assert trajectories[0].seed == 3 + trajectories[0].meta["start"] and trajectories[0].turns[0].role == "agent"


def test_eval_errors_are_one_line(capsys):
    assert main(["eval", "Nope-v0", "--quiet"]) == 2
    assert "Unknown environment id 'Nope-v0'" in capsys.readouterr().err
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "genius", "--episodes", "2", "--quiet"]) == 2
    assert "agent='genius' is not a known agent policy" in capsys.readouterr().err


def test_load_trajectories_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"scenario": "x", "profile": {}}\n{oops\n')
    from dialogue_gym.errors import ConfigError

    with pytest.raises(ConfigError, match="bad.jsonl: line 2: not a trajectory record"):
        load_trajectories(path)


def test_eval_tracer_prints_the_simulator_metrics(capsys):
    assert main(["eval", "TRACER-UserSim-v0", "--agent", "scripted,eager", "--episodes", "40", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| scripted " in printed and "| eager " in printed
    for label in ("PCR", "ACC", "F1", "Group-dPCR", "W1-Turns", "OT-DTW", "intent DTW"):
        assert f" {label} " in printed
    assert "References: 40 sessions in 40 groups (SYNTHETIC sample)" in printed  # the stratified order spreads a short run over the groups


def test_eval_dmbench_prints_cr_rq_and_their_spearman_correlation(capsys):
    argv = ["eval", "DMBench-Assistant-v0", "--agent", "sop,pushy,empathetic", "--episodes", "30", "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| pushy " in printed and " CR " in printed and " CT " in printed and " RQ " in printed
    assert "Spearman rho(CR, RQ) across 3 agents:" in printed


def test_eval_defaults_to_the_first_baseline_and_checks_json_flags(capsys):
    assert main(["eval", "TRACER-UserSim-v0", "--episodes", "4", "--quiet", "--metric-kwargs", '{"embedder": "hashing"}']) == 0
    assert "| scripted " in capsys.readouterr().out
    assert main(["eval", "TRACER-UserSim-v0", "--episodes", "4", "--quiet", "--env-kwargs", "[1]"]) == 2
    assert "--env-kwargs must be a JSON object" in capsys.readouterr().err
    assert main(["eval", "TRACER-UserSim-v0", "--episodes", "4", "--quiet", "--metric-kwargs", '{"nope": 1}']) == 2
    assert "--metric-kwargs ['nope'] do not fit dialogue_gym.metrics.tracer:summary" in capsys.readouterr().err


def _audits_with(policies):
    from dialogue_gym.audit import ScenarioAudit

    return lambda: [ScenarioAudit("SEAD-Outbound-v0", "agent", "cr", "rate", "sop", ("random", "sop"), policies)]


def test_audit_exits_1_when_a_policy_beats_its_bound_and_0_when_none_does(monkeypatch, capsys):
    import envs_registry
    from dialogue_gym.audit import AuditPolicy, TextPolicy
    from dialogue_gym.scenarios.sead.agents import OracleAgent
    from dialogue_gym.scenarios.sead.data import load_behaviors

    cheat = AuditPolicy("cheat", "degenerate", "reads the hidden state", lambda: OracleAgent(load_behaviors()))
    silent = AuditPolicy("silent", "degenerate", "says nothing", lambda: TextPolicy(lambda o, t, r: "", str))
    for policies, code, verdict in (((cheat,), 1, "1 bound(s) broken"), ((silent,), 0, "every bound holds")):
        monkeypatch.setattr("dialogue_gym.cli.resolve", lambda target, policies=policies: _audits_with(policies) if target.endswith(":audits") else envs_registry.resolve(target))
        assert main(["audit", "SEAD-Outbound-v0", "--episodes", "120", "--quiet"]) == code
        captured = capsys.readouterr()
        assert verdict in captured.out and "bounds are stated for >= 600 episodes" in captured.err


def test_audit_of_an_unaudited_id_is_a_one_line_error(capsys, monkeypatch):
    import dataclasses

    import dialogue_gym.cli as cli
    from envs_registry import get

    unaudited = dataclasses.replace(get("RLADA-Customer-v0"), audits=None)
    monkeypatch.setattr(cli, "get", lambda env_id: unaudited)
    assert main(["audit", "RLADA-Customer-v0", "--quiet"]) == 2
    assert "RLADA-Customer-v0 declares no exploit audit yet" in capsys.readouterr().err


# -- results a researcher can cite --------------------------------------------------------------


def _no_episode(monkeypatch):
    from dialogue_gym.evaluation import Evaluator

    monkeypatch.setattr(Evaluator, "run", lambda *args, **kwargs: pytest.fail("an episode ran before the arguments were checked"))


def test_eval_save_json_holds_the_table_the_intervals_pass_k_and_the_provenance(tmp_path, capsys):
    path = tmp_path / "results.json"
    argv = ["eval", "SEAD-Outbound-v0", "--agent", "sop,adaptive", "--episodes", "12", "--repeats", "2", "--bootstrap", "200", "--seed", "4", "--save", str(path), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "12 episodes per agent x 2 repeats, seed 4" in printed and "pass^2 (CR)" in printed and f"results saved to {path}" in printed
    data = json.loads(path.read_text())
    provenance = data["provenance"]
    assert {k: provenance[k] for k in ("env_id", "env_kwargs", "learner", "agents", "episodes", "repeats", "seed", "strata")} == {
        "env_id": "SEAD-Outbound-v0", "env_kwargs": {}, "learner": "agent", "agents": ["sop", "adaptive"],
        "episodes": 12, "repeats": 2, "seed": 4, "strata": 120,
    }
    assert provenance["dialogue_gym"] == dialogue_gym.__version__ and provenance["python"] and {"gymnasium", "numpy"} <= set(provenance["libraries"])
    assert provenance["git_revision"] is None or len(provenance["git_revision"]) == 40
    assert provenance["started"] <= provenance["finished"] and provenance["command"].startswith("dialogue-gym eval SEAD-Outbound-v0")
    assert provenance["bootstrap"] == {"resamples": 200, "seed": 0, "confidence": 0.95, "unit": "start"}
    assert [row["agent"] for row in data["rows"]] == ["sop", "adaptive"] and len(data["episodes"]["sop"]) == 24
    cr = data["headline"]["adaptive"]["cr"]
    assert cr["value"] == pytest.approx(data["rows"][1]["cr"]) and cr["low"] <= cr["value"] <= cr["high"]
    assert data["headline"]["adaptive"]["pass^2"]["value"] <= data["headline"]["adaptive"]["pass^1"]["value"]


def test_eval_save_csv_writes_provenance_comments(tmp_path, capsys):
    path = tmp_path / "results.csv"
    assert main(["eval", "RLADA-Banking-v0", "--agent", "keyword", "--episodes", "6", "--save", str(path), "--quiet"]) == 0
    lines = path.read_text().splitlines()
    assert '# env_id: "RLADA-Banking-v0"' in lines and "# episodes: 6" in lines
    header = next(line for line in lines if not line.startswith("#"))
    assert header.startswith("agent,privileged,") and "strict_pass_ci_low" in header


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--save", "results.txt"], "the file must end in .json or .csv"),
        (["--out", "missing/run.jsonl"], "the folder 'missing' does not exist; create it first"),
        (["--save", "missing/r.json"], "--save='missing/r.json': the folder 'missing' does not exist"),
        (["--episodes", "0"], "--episodes must be >= 1, got 0"),
        (["--repeats", "0"], "--repeats must be >= 1, got 0"),
        (["--agent", "sop,"], "--agent 'sop,' has an empty name; separate names by single commas"),
        (["--agent", "sop,sop"], "names ['sop'] more than once"),
        (["--agent", "sop,adaptive,random,oracel"], "agent='oracel' is not a known agent policy (did you mean 'oracle'?)"),
        (["--env-kwargs", '{"usr": "llm"}'], "Did you mean 'user' for 'usr'?"),
        (["--agent", "llm"], "--agent llm needs --agent-backend, the JSON spec of its model, e.g. --agent-backend '{\"name\""),
        (["--agent-backend", '{"name": "canned", "replies": ["Hi."]}'], "--agent-backend is the model of the agent named 'llm'; add llm to --agent"),
        (["--agent", "llm", "--agent-backend", '["canned"]'], "--agent-backend must be a JSON object"),
        (["--agent", "sop,llm", "--agent-backend", '{"name": "canned", "replies": [3]}'], "CannedBackend: every reply must be a str, got 3"),
    ],
)
def test_every_argument_is_checked_before_the_first_episode_and_the_first_bar(tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.chdir(tmp_path)
    _no_episode(monkeypatch)
    assert main(["eval", "SEAD-Outbound-v0", "--episodes", "3", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "it/s" not in err and "%|" not in err  # an error, and no progress bar before it


def test_eval_plays_a_language_model_named_llm_through_agent_backend(tmp_path, capsys):
    line = "Hello, this is Alex from FoodMap. Am I speaking with the owner?"
    backend = json.dumps({"name": "canned", "replies": [line]})
    save = tmp_path / "results.json"
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "llm,sop", "--agent-backend", backend, "--episodes", "6",
                 "--out", str(tmp_path / "run.jsonl"), "--save", str(save), "--quiet"]) == 0
    assert "| llm " in capsys.readouterr().out
    played = load_trajectories(tmp_path / "run.jsonl")
    llm_turns = [turn.raw for t in played if t.meta["agent"] == "llm" for turn in t.turns_of("agent")]
    assert llm_turns and set(llm_turns) == {line}  # every llm turn came from the backend, the sop agent's did not
    assert {turn.raw for t in played if t.meta["agent"] == "sop" for turn in t.turns_of("agent")} != {line}
    assert json.loads(save.read_text())["provenance"]["agent_backend"] == json.loads(backend)


def test_role_keywords_are_in_the_accepted_list(capsys):
    assert main(["eval", "SEAD-Outbound-v0", "--episodes", "1", "--env-kwargs", '{"usr": "llm"}']) == 2
    accepted = capsys.readouterr().err.split("Accepted keywords: ", 1)[1]
    for keyword in ("'learner'", "'user'", "'user_backend'", "'user_sampling'", "'agent_backend'", "'max_agent_turns'"):
        assert keyword in accepted


def test_out_is_refused_when_it_exists_unless_append(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    out.write_text("{}\n")
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "2", "--out", str(out), "--quiet"]) == 2
    assert "already exists (3 bytes); choose a new path, delete it, or append to it on purpose" in capsys.readouterr().err
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "2", "--out", str(out), "--append", "--quiet"]) == 0
    assert f"trajectories appended to {out}" in capsys.readouterr().out and len(out.read_text().splitlines()) == 3


def test_a_short_run_says_it_does_not_fill_the_strata(capsys):
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "10", "--quiet", "--bootstrap", "0"]) == 0
    printed = capsys.readouterr().out
    assert "note: 10 episodes is not a multiple of the 120 evaluation strata of SEAD-Outbound-v0" in printed
    assert "10 played 1x, 110 played 0x" in printed and "cooperation (played/proportional): 0 2/2.0, 1 2/2.0" in printed
    assert "Headline metrics" not in printed  # --bootstrap 0 and no repeats: no interval to show
    assert main(["eval", "RLADA-Banking-v0", "--agent", "keyword", "--episodes", "234", "--quiet", "--bootstrap", "0"]) == 0
    assert "note:" not in capsys.readouterr().out


def test_compare_prints_the_paired_difference_and_refuses_runs_of_other_episodes(tmp_path, capsys):
    sop, adaptive, short = tmp_path / "sop.json", tmp_path / "adaptive.json", tmp_path / "short.json"
    for agent, path, episodes in (("sop", sop, "120"), ("adaptive", adaptive, "120"), ("adaptive", short, "60")):
        assert main(["eval", "SEAD-Outbound-v0", "--agent", agent, "--episodes", episodes, "--bootstrap", "100", "--save", str(path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["compare", str(sop), str(adaptive), "--bootstrap", "500"]) == 0
    printed = capsys.readouterr().out
    assert "B = adaptive" in printed and "A = sop" in printed and "paired over the same 120 starts" in printed
    cr_line = next(line for line in printed.splitlines() if line.startswith("| CR "))
    assert cr_line.rstrip(" |").endswith("yes") and "| +0." in cr_line
    assert "too few for a bootstrap interval" not in printed
    assert main(["compare", str(sop), str(short)]) == 2
    assert "Cannot compare runs that played different episodes (episodes: 120 vs 60)" in capsys.readouterr().err
    assert main(["compare", str(sop), str(tmp_path / "nope.json")]) == 2
    assert "nope.json' does not exist" in capsys.readouterr().err


def test_a_comparison_of_a_few_starts_says_its_interval_cannot_be_trusted(tmp_path, capsys):
    """The cheapest 'significant' result: compare on two starts where B happened to win both."""
    paths = [tmp_path / "sop.json", tmp_path / "oracle.json"]
    for agent, path in zip(("sop", "oracle"), paths):
        assert main(["eval", "SEAD-Outbound-v0", "--agent", agent, "--episodes", "4", "--save", str(path), "--quiet"]) == 0
    assert "note: 4 starts are too few for a bootstrap interval to be trusted (use at least 30)" in capsys.readouterr().out
    assert main(["compare", *map(str, paths)]) == 0
    assert "note: 4 starts are too few for a bootstrap interval to be trusted" in capsys.readouterr().out


def test_eval_reports_counterpart_health_and_leaves_unhealthy_episodes_out(tmp_path, capsys):
    """An LLM owner that answers as the agent's side ("I'm Alex, how can I help you?") in no tag
    format fails every turn: eval warns, prints its health block, and with --invalid-on-unhealthy
    leaves those episodes out of the metrics and marks them in the written trajectories."""
    from dialogue_gym.evaluation import load_trajectories

    env_kwargs = json.dumps({"user": "llm", "user_backend": {"name": "canned", "replies": ["I'm Alex, how can I help you?"]}})
    out = tmp_path / "run.jsonl"
    argv = ["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "4", "--bootstrap", "0", "--quiet", "--env-kwargs", env_kwargs]
    assert main([*argv, "--out", str(out), "--invalid-on-unhealthy"]) == 0
    printed = capsys.readouterr()
    assert "counterpart health, sop" in printed.out and "| user |" in printed.out
    assert "WARNING: sop:" in printed.err
    assert "sop: 4 of 4 episodes left out (a counterpart failed its health checks)" in printed.out
    assert all("unhealthy" in trajectory.meta for trajectory in load_trajectories(out))
    assert main(argv) == 0
    assert "episodes left out" not in capsys.readouterr().out


def test_audit_save_writes_the_printed_tables_rows_and_provenance_and_refuses_a_non_json_path(monkeypatch, capsys, tmp_path):
    import json

    import envs_registry
    from dialogue_gym.audit import AuditPolicy, TextPolicy, load_audit

    from dialogue_gym.audit import ScenarioAudit

    silent = AuditPolicy("silent", "degenerate", "says nothing", lambda: TextPolicy(lambda o, t, r: "", str))
    one_baseline = [ScenarioAudit("SEAD-Outbound-v0", "agent", "cr", "rate", "sop", ("sop",), (silent,))]  # no order to hold: 12 episodes do
    monkeypatch.setattr("dialogue_gym.cli.resolve", lambda target: (lambda: one_baseline) if target.endswith(":audits") else envs_registry.resolve(target))
    assert main(["audit", "SEAD-Outbound-v0", "--episodes", "12", "--seed", "3", "--quiet", "--save", str(tmp_path / "audit.json")]) == 0
    printed = capsys.readouterr().out
    saved = load_audit(tmp_path / "audit.json")
    (record,) = saved["audits"]
    assert record["table"] in printed and record["failed"] == 0 and record["score"] == "cr" and record["learner"] == "agent"
    assert record["baseline"] == "sop" and record["fair_order"] == ["sop"] and record["scores"]["silent"] == 0.0 and 0 <= record["scores"]["sop"] <= 1
    assert [row["name"] for row in record["rows"]][0] == "silent" and record["rows"][0]["kind"] == "degenerate"
    assert record["rows"][0]["score"] == 0.0 and record["rows"][0]["passed"] is True
    provenance = saved["provenance"]
    assert provenance["episodes"] == 12 and provenance["seed"] == 3 and provenance["sealed"] is False and provenance["isolation"] == "none"
    assert provenance["command"].startswith("dialogue-gym audit SEAD-Outbound-v0 --episodes 12 --seed 3") and "code_digest" in provenance
    assert main(["audit", "SEAD-Outbound-v0", "--quiet", "--save", str(tmp_path / "audit.csv")]) == 2
    assert "an audit is saved as JSON; pass a path ending in .json" in capsys.readouterr().err
    (tmp_path / "list.json").write_text(json.dumps([1]))
    with pytest.raises(dialogue_gym.errors.ConfigError, match=r"list.json: not a saved audit \(no provenance and audits\); write one with `dialogue-gym audit"):
        load_audit(tmp_path / "list.json")


def test_a_saved_audit_counts_only_the_broken_bounds_that_fail_it():
    from dialogue_gym.audit import AuditPolicy, AuditRow, ScenarioAudit, audit_record

    audit = ScenarioAudit("SEAD-Outbound-v0", "agent", "cr", "rate", "sop", ("random", "sop"), (AuditPolicy("salad", "degenerate", "", lambda: None),))
    rows = [
        AuditRow("random < sop", "fair order", 0.2, 0.0, True),
        AuditRow("salad", "degenerate", 0.5, 0.1, False),
        AuditRow("seed_replay", "open-book", 0.9, 0.3, False, counted=False),  # information in an open-book audit, not a failure
    ]
    record = audit_record(audit, {"random": 0.0, "sop": 0.2, "salad": 0.5, "seed_replay": 0.9}, rows, 600)
    assert record["failed"] == 1 and [row["counted"] for row in record["rows"]] == [True, True, False]
    assert record["baseline"] == "sop" and record["fair_order"] == ["random", "sop"] and "| salad" in record["table"]
