"""Command-line behaviours the other CLI tests leave open: sealed and replayed runs' saved provenance,
the headline table's pass^k rows, compare's note on agent kwargs, --agent-kwargs without a class, the
audit's progress bar and duration, serve's flags and exit status, and view's size in megabytes."""

import json
import re
import sys
import types
from datetime import datetime

from dialogue_gym.cli import main

SECRET = "ab" * 16


def test_a_replay_is_saved_as_a_replay_not_as_a_sealed_run(tmp_path, capsys):
    path = tmp_path / "replay.json"
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "2", "--unseal", SECRET, "--bootstrap", "0",
                 "--save", str(path), "--quiet"]) == 0
    provenance = json.loads(path.read_text())["provenance"]
    assert (provenance["sealed"], provenance["replay"], provenance["secret"], provenance["seed"]) == (False, True, SECRET, None)
    assert "a replay of a sealed run" in capsys.readouterr().out


def test_the_headline_table_has_pass_k_rows_from_k_2_only(capsys):
    # pass^1 is the pass metric's own row (CR): the table shows it once, as CR
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "3", "--repeats", "2", "--bootstrap", "20", "--quiet"]) == 0
    headline = capsys.readouterr().out.split("Headline metrics", 1)[1]
    assert "| pass^2 (CR) " in headline and "pass^1" not in headline


def test_compare_notes_runs_that_differ_in_agent_kwargs(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "2", "--save", str(path), "--quiet"]) == 0
    data = json.loads(b.read_text())
    data["provenance"]["agent_kwargs"] = {"temperature": 0.5}  # two settings of one module:Class share a name
    b.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 0
    assert "note: the runs differ in agent_kwargs: None vs {'temperature': 0.5}" in capsys.readouterr().out


def test_agent_kwargs_without_a_module_class_agent_is_a_one_line_error(capsys):
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--agent-kwargs", "{}", "--episodes", "1", "--quiet"]) == 2
    assert "--agent-kwargs are the keyword arguments of an agent given as module:Class; --agent 'sop' names none" in capsys.readouterr().err


def test_a_sealed_audit_saves_itself_as_sealed_and_its_progress_bar_ends_full(tmp_path, capsys):
    path = tmp_path / "audit.json"
    main(["audit", "SEAD-Outbound-v0", "--episodes", "1", "--sealed", "--save", str(path)])  # 1 episode: bounds not meant to hold
    err = capsys.readouterr().err
    provenance = json.loads(path.read_text())["provenance"]
    assert (provenance["sealed"], provenance["replay"], provenance["seed"]) == (True, False, None)
    assert len(provenance["secret"]) == 32
    wall = (datetime.fromisoformat(provenance["finished"]) - datetime.fromisoformat(provenance["started"])).total_seconds()
    assert 0 <= provenance["seconds"] <= wall + 1  # the run's own duration (the stamps have whole seconds)
    # the bar counts every player: fair baselines, ceiling, degenerate policies and sealed probes
    last = err.rstrip().split("\r")[-1]  # the bar's final state (past its total, tqdm shows "25it [" instead)
    assert re.search(r"\| (\d+)/\1 \[", last), last


def test_serve_hands_its_flags_to_the_server_and_exits_0_when_it_stops(monkeypatch):
    calls = []
    # a stand-in for the server module (importing the real one costs seconds): serve() returns when the server stops
    server = types.SimpleNamespace(serve=lambda *args, **kwargs: calls.append((args, kwargs)))
    monkeypatch.setitem(sys.modules, "dialogue_gym.integrations.openenv_server", server)
    assert main(["serve", "SEAD-Outbound-v0", "--max-sessions", "3", "--env-kwargs", '{"max_agent_turns": 4}']) == 0
    [(args, kwargs)] = calls
    assert args == ("SEAD-Outbound-v0",) and kwargs["max_sessions"] == 3 and kwargs["env_kwargs"] == {"max_agent_turns": 4}


def test_view_reports_the_pages_size_in_megabytes(tmp_path, capsys):
    run, page = tmp_path / "run.jsonl", tmp_path / "run.html"
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "24", "--out", str(run), "--quiet", "--bootstrap", "0"]) == 0
    capsys.readouterr()
    assert main(["view", str(run)]) == 0
    size = page.stat().st_size
    assert size > 200_000  # big enough that a wrong unit shows in the first decimal
    assert f"24 dialogues written to {page} ({size / 1_000_000:.1f} MB); open it in a browser" in capsys.readouterr().out


def test_eval_draws_1000_bootstrap_resamples_by_default(tmp_path):
    path = tmp_path / "results.json"
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "2", "--save", str(path), "--quiet"]) == 0
    assert json.loads(path.read_text())["provenance"]["bootstrap"]["resamples"] == 1000


def test_an_audit_with_agents_counts_them_in_its_bar_and_saves_its_duration_in_milliseconds(tmp_path, capsys, monkeypatch):
    path = tmp_path / "audit.json"
    # the command's clock read twice (start, end) 1.23456 s apart: saved rounded to the millisecond
    ticks = iter((50.0, 51.23456))
    monkeypatch.setattr("dialogue_gym.cli.time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    agent = "dialogue_gym.scenarios.sead.agents:SopAgent"  # an agent of your own, beside the audit's players
    main(["audit", "SEAD-Outbound-v0", "--episodes", "1", "--agent", agent, "--save", str(path)])  # 1 episode: bounds not meant to hold
    last = capsys.readouterr().err.rstrip().split("\r")[-1]
    assert re.search(r"\| (\d+)/\1 \[", last), last  # the agent given is one more player of the bar's total
    provenance = json.loads(path.read_text())["provenance"]
    assert len(provenance["agents"]) == 1 and provenance["seconds"] == 1.235
