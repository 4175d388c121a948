"""The agent process's settings pinned by hand (issue 43, item 6: agents/process.py's mutants): the
limits' defaults and checks, the rlimit flags handed to the launcher, isolation levels and the log's
file name."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from dialogue_gym.agents.process import LEVELS, Limits, check_level, safe_file_part, temporary_log
from dialogue_gym.errors import ConfigError


def test_the_default_limits():
    assert Limits() == Limits(call_seconds=60.0, start_seconds=120.0, cpu_seconds=3600, memory_mb=8192, file_mb=64, processes=64, scratch_mb=256)


def test_the_rlimit_flags_in_bytes_and_seconds():
    assert Limits().rlimit_flags(sandbox=False) == ["--cpu", "3600", "--memory", str(8192 << 20), "--file-size", str(64 << 20)]
    assert Limits().rlimit_flags(sandbox=True) == [
        "--cpu", "3600", "--memory", "8589934592", "--file-size", "67108864", "--processes", "64",
    ]
    unlimited = Limits(cpu_seconds=None, memory_mb=None, file_mb=None, processes=None)
    assert unlimited.rlimit_flags(sandbox=True) == []
    assert Limits(cpu_seconds=1, memory_mb=1, file_mb=2, processes=3).rlimit_flags(sandbox=True) == [
        "--cpu", "1", "--memory", "1048576", "--file-size", "2097152", "--processes", "3",
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [("call_seconds", 0), ("call_seconds", None), ("start_seconds", -1.0), ("cpu_seconds", 0), ("memory_mb", True), ("scratch_mb", None),
     ("file_mb", "64")],
)
def test_a_limit_must_be_positive_and_only_the_optional_ones_may_be_none(field, value):
    with pytest.raises(ConfigError, match=rf"agent limit {field} must be a positive number"):
        Limits(**{field: value})


def test_the_optional_limits_say_so_in_their_error():
    with pytest.raises(ConfigError, match=r"must be a positive number or None \(no limit\), got 0; e\.g\. --agent-limits '\{\"file_mb\": 64\}'"):
        Limits(file_mb=0)
    with pytest.raises(ConfigError, match=r"must be a positive number, got 0; e\.g\. --agent-limits '\{\"scratch_mb\": 256\}'"):
        Limits(scratch_mb=0)
    assert Limits(cpu_seconds=None, call_seconds=0.5).call_seconds == 0.5


def test_limits_of_a_dict_none_or_limits():
    assert Limits.of(None) == Limits()
    given = Limits(call_seconds=5.0)
    assert Limits.of(given) is given
    assert Limits.of({"memory_mb": 100}) == Limits(memory_mb=100)
    with pytest.raises(ConfigError, match=r"agent_limits must be a dict of limits or Limits, got list"):
        Limits.of([1])


@pytest.mark.parametrize(("isolate", "level"), [(True, "sandbox"), (False, "none"), ("none", "none"), ("process", "process"), ("sandbox", "sandbox")])
def test_isolation_levels(isolate, level):
    assert check_level(isolate) == level


@pytest.mark.parametrize("isolate", ["Sandbox", 1, 0, None, "processes"])
def test_an_unknown_isolation_level_is_refused(isolate):
    assert LEVELS == ("none", "process", "sandbox")
    with pytest.raises(ConfigError, match=r"isolate must be one of 'none', 'process', 'sandbox'"):
        check_level(isolate)


def test_the_log_name_keeps_only_safe_characters_and_80_of_them():
    assert safe_file_part("SEAD-Outbound-v0.agent.my/../agent x") == "SEAD-Outbound-v0.agent.my_.._agent_x"
    assert safe_file_part("a" * 100) == "a" * 80
    path = temporary_log("E-v0", "agent", {"name": "n/../x"})
    try:
        assert path.name.startswith("dialogue-gym-agent-E-v0.agent.n_.._x.") and path.suffix == ".log"
        assert path.stat().st_size == 0 and path.parent == Path(tempfile.gettempdir())
    finally:
        path.unlink()
    path = temporary_log("E-v0", "agent", {"class": "pkg.Cls", "name": "n"})
    try:
        assert path.name.startswith("dialogue-gym-agent-E-v0.agent.pkg.Cls.")
    finally:
        path.unlink()


def test_building_an_agent_in_process_puts_its_search_path_first_and_keeps_the_rest(monkeypatch, tmp_path):
    import sys

    from collections import OrderedDict

    from dialogue_gym.agents.process import in_process

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setattr(sys, "path", ["first", "second"])
    agent = in_process({"class": "collections:OrderedDict", "kwargs": {"a": 1}})  # any importable class is built
    assert agent == OrderedDict(a=1)
    assert sys.path == [str(tmp_path), "first", "second"]
    in_process("collections:OrderedDict")  # already on the path: nothing added or lost
    assert sys.path == [str(tmp_path), "first", "second"]
    assert in_process("keyword") == "keyword"  # a registered name is passed on as given


def test_the_files_of_a_loaded_single_file_module_are_its_own_file():
    import csv
    from pathlib import Path as P

    from dialogue_gym.agents.process import module_files

    assert module_files("csv:DictReader") == [P(csv.__file__)]
    with pytest.raises(ConfigError, match=r"an agent class is given as 'module:Class'"):
        module_files("csv:not-a-name")


def test_the_files_of_a_module_found_in_the_working_folder_or_nowhere(monkeypatch, tmp_path):
    from dialogue_gym.agents.process import module_files

    (tmp_path / "h43_agent_module.py").write_text("class Agent:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert module_files("h43_agent_module:Agent") == [tmp_path / "h43_agent_module.py"]  # found, not imported
    assert module_files("h43_no_such_module:Agent") == []  # nowhere: nothing to show the agent's process


def test_episodes_are_numbered_from_zero_one_apart_and_forgotten_at_their_end():
    from dialogue_gym.agents.process import AgentProcess

    agent = AgentProcess("RLADA-Banking-v0", "agent", {}, "keyword", level="process")
    try:
        assert [agent.start({}, seed) for seed in (7, 8, 9)] == [0, 1, 2]
        assert agent.problems(1) == [] and agent._turns == {0: 0, 1: 0, 2: 0}
        agent.end(1)
        assert sorted(agent._turns) == [0, 2]
    finally:
        agent.close()
