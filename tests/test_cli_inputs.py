"""The CLI's own flags and hostile inputs to ``export`` and ``compare``: exit 2 with one line that
names the file, the field and the fix; never a traceback."""

from __future__ import annotations

import pytest

import dialogue_gym
from dialogue_gym.cli import main


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"dialogue-gym {dialogue_gym.__version__}\n"


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("dialogue-gym: error: "), captured.err
    return captured.err


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "run.jsonl"
    assert main(["eval", "SEAD-Outbound-v0", "--episodes", "2", "--quiet", "--out", str(path)]) == 0
    return path


EXPORT_INPUTS = [
    ("missing.jsonl", None, r"missing\.jsonl: no such file; pass the JSONL file of trajectories that `dialogue-gym eval --out RUN\.jsonl` wrote\."),
    ("empty.jsonl", b"", r"empty\.jsonl: the run file holds no trajectory \(it is empty\); pass the JSONL"),
    ("blank.jsonl", b"\n \n\t\n", r"blank\.jsonl: the run file holds no trajectory"),
    ("latin1.jsonl", b'{"scenario": "caf\xe9"}\n', r"latin1\.jsonl: line 1: not UTF-8 text \(byte b'\\xe9' at column 18\); pass the JSONL"),
    ("deep.jsonl", b"[" * 100_000 + b"\n", r"deep\.jsonl: line 1: nested deeper than any trajectory record"),
    ("second.jsonl", b'{"scenario": "x", "profile": {}}\n{"seed": 1}\n', r"second\.jsonl: line 2: not a trajectory record \(field 'scenario' is missing\)"),
]


@pytest.mark.parametrize("name, content, message", EXPORT_INPUTS, ids=[case[0] for case in EXPORT_INPUTS])
def test_export_refuses_a_bad_run_file_with_one_line(tmp_path, capsys, name, content, message):
    import re

    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    err = _one_line_error(capsys, ["export", str(path), "--format", "sft", "-o", str(tmp_path / "out")])
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()


def test_export_refuses_a_folder_as_run_file_and_unwritable_outputs(tmp_path, capsys, run_file, monkeypatch):
    err = _one_line_error(capsys, ["export", str(tmp_path), "--format", "sft", "-o", str(tmp_path / "out")])
    assert f"{tmp_path}: a folder; pass the JSONL file" in err
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(run_file / "out")])
    assert f"-o '{run_file / 'out'}': '{run_file}' is a file, so the dataset folder cannot be made there; pass a new folder path." in err
    import os

    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(tmp_path) else real_access(path, mode))
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(tmp_path / "a" / "b")])
    assert f"the folder '{tmp_path}' is not writable; pass a folder you can write." in err


def test_export_turns_a_failed_write_into_one_line(tmp_path, capsys, run_file, monkeypatch):
    import dialogue_gym.integrations.datasets as datasets

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(datasets, "export", full_disk)
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(tmp_path / "out")])
    assert "cannot write the dataset (No space left on device); pass a new folder on a writable disk." in err


@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("results") / "r.json"
    assert main(["eval", "RLADA-Banking-v0", "--agent", "keyword,random", "--episodes", "6", "--bootstrap", "10", "--quiet", "--save", str(path)]) == 0
    return path


def _edited(results_file, tmp_path, pair):
    import json

    data = json.loads(results_file.read_text())
    data["episodes"]["keyword"][2]["scores"]["strict_pass"] = pair
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


PAIR = r"field episodes\['keyword'\]\[2\]\.scores\['strict_pass'\] must be a \[numerator, denominator\] pair of finite numbers"


@pytest.mark.parametrize("pair", [
    float("nan"), [float("nan"), 1], [1, float("inf")], [float("-inf"), 1], [1e308, 1], [1, 1e308], [1, 0], [1, 1, 1], [1], [],
    ["1", 1], [True, 1], [1, -1], {"n": 1, "d": 1}, None,
], ids=repr)
def test_compare_refuses_non_finite_and_malformed_score_pairs(results_file, tmp_path, capsys, pair):
    import re

    edited = _edited(results_file, tmp_path, pair)
    err = _one_line_error(capsys, ["compare", str(results_file), str(edited), "--agent-a", "keyword", "--agent-b", "keyword"])
    assert str(edited) in err and re.search(PAIR, err) and "re-save the run with `dialogue-gym eval ... --save`" in err, err


def test_compare_still_reads_a_left_out_episode_and_a_saved_non_finite_score(results_file, tmp_path, capsys):
    for pair in ([0, 0], [None, 1], [-2.5, 3]):
        edited = _edited(results_file, tmp_path, pair)
        assert main(["compare", str(results_file), str(edited), "--agent-a", "keyword", "--agent-b", "keyword", "--bootstrap", "20"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("content, message", [
    (b"", "the file is empty, so not a results JSON"),
    (b"[" * 100_000, "nested deeper than any results JSON"),
    (b'{"format": ' + b"[" * 100_000, "nested deeper than any results JSON"),
    (b"\xff{}", r"not UTF-8 text \(byte b'\\xff' at offset 0\)"),
    (b"{oops", "not a results JSON"),
], ids=["empty", "deep-list", "deep-in-object", "not-utf8", "not-json"])
def test_compare_refuses_unreadable_files_with_one_line(results_file, tmp_path, capsys, content, message):
    import re

    path = tmp_path / "b.json"
    path.write_bytes(content)
    err = _one_line_error(capsys, ["compare", str(results_file), str(path)])
    assert str(path) in err and re.search(message, err) and "dialogue-gym eval ... --save" in err, err


@pytest.mark.parametrize("resamples", ["1000000000000", "100001", "0"])
def test_compare_caps_bootstrap_resamples(results_file, capsys, resamples):
    err = _one_line_error(capsys, ["compare", str(results_file), str(results_file), "--agent-a", "keyword", "--agent-b", "random", "--bootstrap", resamples])
    assert "--bootstrap must be" in err


def test_the_resample_cap_follows_the_starts():
    from dialogue_gym.errors import ConfigError
    from dialogue_gym.results import MAX_BOOTSTRAP_CELLS, MAX_RESAMPLES, check_resamples

    assert check_resamples(MAX_RESAMPLES, 6) == MAX_RESAMPLES
    starts = 10_000
    assert check_resamples(MAX_BOOTSTRAP_CELLS // starts, starts) == 5_000
    with pytest.raises(ConfigError, match=r"--bootstrap must be an int in \[1, 5,000\] for 10,000 starts"):
        check_resamples(5_001, starts)
    for bad in (True, 1.5, "10"):
        with pytest.raises(ConfigError, match="--bootstrap must be an int"):
            check_resamples(bad, 6)
