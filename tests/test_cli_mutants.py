"""Command-line behaviours the other CLI tests leave open: a replay's saved provenance, the headline
table's pass^k rows, and compare's note on runs with different agent kwargs."""

import json
import re
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
    done, total = re.findall(r"(\d+)/(\d+) \[", err)[-1]
    assert done == total
