"""The README-commands benchmark times exactly the README's two commands, on the clone's code."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "readme_commands.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_readme_commands", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_it_times_the_readme_commands_without_their_installs():
    commands = load().readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands == ["dialogue-gym eval SEAD-Outbound-v0 --agent random,sop,adaptive,oracle --episodes 1200 --seed 0", "python -m pytest"]


def test_the_console_script_becomes_the_module_of_the_clone():
    module = load()
    assert module.as_module_call("dialogue-gym eval X --seed 0") == [sys.executable, "-m", "dialogue_gym.cli", "eval", "X", "--seed", "0"]
    assert module.as_module_call("python -m pytest") == [sys.executable, "-m", "pytest"]
    with pytest.raises(SystemExit, match="cannot time 'make test'"):
        module.as_module_call("make test")


def test_a_readme_without_the_two_commands_is_refused():
    module = load()
    with pytest.raises(SystemExit, match="no '## The two commands' section"):
        module.readme_commands("# a project\n")
    with pytest.raises(SystemExit, match="expected two"):
        module.readme_commands("## The two commands\n\n```bash\npip install -e . && dialogue-gym list\n```\n")


def test_pytest_summary_is_the_last_rule_line():
    output = "tests/a.py ....\n==== 3 failed in 1.00s ====\nrerun\n============ 2757 passed, 1 skipped in 731.90s (0:12:11) ============\n"
    assert load().pytest_summary(output) == "2757 passed, 1 skipped in 731.90s (0:12:11)"
    assert load().pytest_summary("no summary") == "no pytest summary line"


def test_cpu_time_counts_the_command_process(tmp_path):
    wall, cpu, code, output = load().timed([sys.executable, "-c", "print(sum(range(3_000_000)))"], tmp_path, {})
    assert code == 0 and output.strip() == str(sum(range(3_000_000)))
    assert 0 < cpu and 0 < wall
