"""Your own agent on the command line and from Python (issue 42, items 3 and 6): ``eval --agent
module:Class --agent-kwargs``, imported only in the agent's process when isolated; ``evaluate(...,
save=PATH)`` writes what ``eval --save`` writes; ``compare`` warns when two runs differ in setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dialogue_gym
from dialogue_gym.cli import main
from dialogue_gym.evaluation import evaluate, load_trajectories


@pytest.mark.parametrize("isolate", ["process", "none"])
def test_eval_plays_your_own_class_with_its_kwargs_importing_it_only_in_the_agents_process(example, isolate, capsys):
    command = ["eval", "SEAD-Outbound-v0", "--agent", "greeter:Greeter", "--agent-kwargs", '{"greeting": "Good morning"}',
               "--episodes", "2", "--quiet", "--bootstrap", "0", "--isolate", isolate, "--out", "run.jsonl", "--save", "run.json"]
    assert main(command) == 0
    assert ("greeter" in sys.modules) == (isolate == "none")  # isolated, the evaluator never imports it
    first = load_trajectories(example / "run.jsonl")[0].to_dict()["turns"][0]
    assert first["raw"] == "<response>Good morning! When are your busiest hours?</response>"
    provenance = json.loads((example / "run.json").read_text())["provenance"]
    assert provenance["agents"] == ["greeter:Greeter"] and provenance["agent_kwargs"] == {"greeting": "Good morning"}


def test_compare_sets_two_settings_of_your_class_side_by_side_and_names_the_kwargs_that_differ(example, capsys):
    for greeting, path in (("Hi", "hi.json"), ("Good morning", "morning.json")):
        command = ["eval", "SEAD-Outbound-v0", "--agent", "greeter:Greeter", "--agent-kwargs", json.dumps({"greeting": greeting}),
                   "--episodes", "2", "--quiet", "--bootstrap", "0", "--isolate", "process", "--save", path]
        assert main(command) == 0
    capsys.readouterr()
    assert main(["compare", "hi.json", "morning.json", "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "B = greeter:Greeter (morning.json) minus A = greeter:Greeter (hi.json)" in out
    assert "note: the runs differ in agent_kwargs: {'greeting': 'Hi'} vs {'greeting': 'Good morning'}" in out
    assert "differ in setting" not in out


def test_agent_kwargs_without_a_class_and_a_missing_class_are_refused_with_the_fix(example, capsys):
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--agent-kwargs", "{}", "--quiet"]) == 2
    assert "--agent-kwargs are the keyword arguments of an agent given as module:Class" in capsys.readouterr().err
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "greeter:Nobody", "--episodes", "1", "--quiet", "--isolate", "process"]) == 2
    assert (
        "the agent 'greeter:Nobody' could not be built in its process: ConfigError: cannot load the agent class 'greeter:Nobody': "
        "module 'greeter' has no attribute 'Nobody'"
    ) in capsys.readouterr().err


def test_evaluate_save_writes_the_eval_save_record_and_compare_warns_of_a_different_setting(tmp_path, capsys):
    cli, python = tmp_path / "cli.json", tmp_path / "python.json"
    assert main(["eval", "RLADA-Banking-v0", "--agent", "keyword", "--episodes", "4", "--quiet", "--bootstrap", "50", "--save", str(cli)]) == 0
    evaluate("RLADA-Banking-v0", "keyword", 4, save=python, bootstrap=50, isolate="process")
    saved = [json.loads(path.read_text()) for path in (cli, python)]
    timing = {"command", "started", "finished", "seconds", "isolation", "isolated", "agent_limits", "agent_kwargs"}
    assert {key: value for key, value in saved[0]["provenance"].items() if key not in timing} == {
        key: value for key, value in saved[1]["provenance"].items() if key not in timing
    }
    for part in ("rows", "headline", "episodes"):
        assert saved[0][part] == saved[1][part]
    capsys.readouterr()
    assert main(["compare", str(cli), str(python), "--bootstrap", "50"]) == 0
    assert "WARNING: the runs differ in setting, isolation: A none vs B process" in capsys.readouterr().out


SCRIPT = """
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.simulators.base import ScriptedPolicy


class Mine(ScriptedPolicy):
    def act(self, observation, info, memory):
        return "<response>Hello</response>"


runs = evaluate("SEAD-Outbound-v0", "sop", 2, isolate="process")
print("played", len(runs), runs[0].meta["isolation"])
try:
    evaluate("SEAD-Outbound-v0", Mine(), 1, isolate="process")
except ConfigError as exc:
    print("refused:", exc)
"""


def test_a_script_without_a_main_guard_evaluates_isolated_and_a_class_of_the_script_is_refused_up_front_with_the_fix(tmp_path):
    """The agent's process is a fresh interpreter that runs the runner, never the user's script (no
    ``multiprocessing`` spawn re-importing ``__main__``), so no ``if __name__ == "__main__":`` guard is
    needed; what a script cannot send is an object of a class it defines itself."""
    (tmp_path / "script.py").write_text(SCRIPT)
    root = str(Path(dialogue_gym.__file__).parent.parent)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    refusal = (
        "refused: Mine is defined in the script being run (__main__), which the agent's process cannot import. Move the class "
        "into a module (say myagent.py) and pass agent='myagent:Mine' (--agent myagent:Mine) with agent kwargs, or an instance "
        "of the imported class."
    )
    assert done.stdout.splitlines() == ["played 2 process", refusal]


@pytest.mark.parametrize(("mode", "log_kept"), [("non_strings", False), ("raises", True)])
def test_eval_names_the_agents_log_when_it_printed_and_says_it_printed_nothing_otherwise(mode, log_kept, tmp_path, monkeypatch, capsys):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(Path(__file__).parent)  # the agent's module is found in the working folder
    command = ["eval", "RLADA-Banking-v0", "--agent", "attackers:Saboteur", "--agent-kwargs", json.dumps({"mode": mode}),
               "--episodes", "2", "--quiet", "--bootstrap", "0", "--isolate", "process"]
    assert main(command) == 0
    warning = capsys.readouterr().err
    logs = list(tmp_path.glob("dialogue-gym-agent-*.log"))
    assert "moves refused at the agent boundary" in warning
    if log_kept:
        (log,) = logs
        assert f"its log: {log}" in warning and "ValueError: the agent gave up" in log.read_text()
    else:
        assert logs == [] and warning.rstrip().endswith("it printed nothing")
