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
