import json

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
    assert trajectories[0].seed == 3 and trajectories[0].turns[0].role == "agent"


def test_eval_errors_are_one_line(capsys):
    assert main(["eval", "Nope-v0", "--quiet"]) == 2
    assert "Unknown environment id 'Nope-v0'" in capsys.readouterr().err
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "genius", "--episodes", "2", "--quiet"]) == 2
    assert "agent='genius' is not a known agent policy" in capsys.readouterr().err


def test_load_trajectories_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"scenario": "x", "profile": {}}\n{oops\n')
    import pytest

    from dialogue_gym.errors import ConfigError

    with pytest.raises(ConfigError, match="bad.jsonl: line 2: not a trajectory record"):
        load_trajectories(path)


def test_eval_tracer_prints_the_simulator_metrics(capsys):
    assert main(["eval", "TRACER-UserSim-v0", "--agent", "scripted,eager", "--episodes", "40", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| scripted " in printed and "| eager " in printed
    for label in ("PCR", "ACC", "F1", "Group-dPCR", "W1-Turns", "OT-DTW", "intent DTW"):
        assert f" {label} " in printed
    assert "References: 40 sessions in 4 groups (SYNTHETIC sample)" in printed


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
