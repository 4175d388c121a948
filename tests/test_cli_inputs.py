"""The CLI's own flags and hostile inputs to ``export`` and ``compare``: exit 2 with one line that
names the file, the field and the fix; never a traceback."""

from __future__ import annotations

import os

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
    ("missing.jsonl", None, r"missing\.jsonl' does not exist; pass the JSONL file of trajectories that `dialogue-gym eval --out RUN\.jsonl` wrote\."),
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
    assert f"'{tmp_path}' is a folder, not a regular file; pass the JSONL file" in err
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(run_file / "out")])
    assert f"-o '{run_file / 'out'}': '{run_file}' is a file, so the dataset folder cannot be made there; pass a new folder path." in err
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # the export's writer: named, never opened (opening a FIFO waits for a reader)
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(fifo / "out")])
    assert f"-o '{fifo / 'out'}': '{fifo}' is a FIFO (named pipe), so the dataset folder cannot be made there; pass a new folder path." in err
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(fifo)])
    assert f"'{fifo}' is a FIFO (named pipe), so the dataset folder cannot be made there" in err
    err = _one_line_error(capsys, ["export", str(fifo), "--format", "sft", "-o", str(tmp_path / "out")])
    assert f"'{fifo}' is a FIFO (named pipe), not a regular file; pass the JSONL file" in err
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


DEEP_OPTION = "[" * 20_000 + "]" * 20_000
DEEP_OBJECT = '{"a": ' * 20_000 + "1" + "}" * 20_000


@pytest.mark.parametrize("deep", [DEEP_OPTION, DEEP_OBJECT], ids=["list", "object"])
@pytest.mark.parametrize("argv", [
    ["eval", "SEAD-Outbound-v0", "--episodes", "1", "--quiet", "--env-kwargs"],
    ["eval", "SEAD-Outbound-v0", "--episodes", "1", "--quiet", "--metric-kwargs"],
    ["eval", "SEAD-Outbound-v0", "--episodes", "1", "--quiet", "--agent", "llm", "--agent-backend"],
    ["audit", "SEAD-Outbound-v0", "--quiet", "--env-kwargs"],
    ["fidelity", "SEAD-Outbound-v0", "--role", "user", "--backend"],
], ids=["env-kwargs", "metric-kwargs", "agent-backend", "audit-env-kwargs", "fidelity-backend"])
def test_a_json_option_nested_20000_deep_is_one_line(capsys, argv, deep):
    err = _one_line_error(capsys, [*argv, deep])
    assert f"{argv[-1]} nests arrays/objects deeper than 64 levels" in err and f"({len(deep):,} characters)" in err and len(err) < 400, err


def test_export_and_serve_env_kwargs_nested_deep_are_one_line(capsys, run_file, tmp_path):
    err = _one_line_error(capsys, ["export", str(run_file), "--format", "sft", "-o", str(tmp_path / "o"), "--env-kwargs", DEEP_OPTION])
    assert "--env-kwargs nests arrays/objects deeper than 64 levels" in err
    err = _one_line_error(capsys, ["serve", "SEAD-Outbound-v0", "--env-kwargs", DEEP_OBJECT])
    assert "--env-kwargs nests arrays/objects deeper than 64 levels" in err


def test_a_json_option_with_a_5000_digit_integer_is_one_line(capsys):
    err = _one_line_error(capsys, ["eval", "SEAD-Outbound-v0", "--env-kwargs", '{"max_agent_turns": ' + "9" * 5000 + "}"])
    assert "--env-kwargs must be JSON" in err and "Exceeds the limit (4300 digits)" in err


def _refused_without_blocking(argv, capsys, fifo):
    """``main(argv)`` in a thread: it must return within seconds; a reader still blocked on the FIFO is
    let go (a writer opens and closes it) and the test fails."""
    import os
    import threading

    done = {}
    worker = threading.Thread(target=lambda: done.setdefault("code", main(argv)), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked open returns; the read sees end of file
        worker.join(20)
        pytest.fail(f"{argv[0]} waited on the FIFO {fifo} instead of refusing it")
    assert done["code"] == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{fifo}' is a FIFO (named pipe), not a regular file" in err, err
    return err


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs on this system")
def test_view_and_compare_refuse_a_fifo_at_once(tmp_path, capsys, results_file):
    import os

    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    _refused_without_blocking(["view", str(fifo), "-o", str(tmp_path / "page.html")], capsys, fifo)
    _refused_without_blocking(["compare", str(results_file), str(fifo)], capsys, fifo)
    _refused_without_blocking(["compare", str(fifo), str(results_file)], capsys, fifo)
    assert not (tmp_path / "page.html").exists()


def test_view_and_compare_refuse_a_device(tmp_path, capsys, results_file):
    import os

    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null")
    # /dev/null, not /dev/zero: a reader that did not check would read the latter until memory ran out
    assert "'/dev/null' is a device, not a regular file" in _one_line_error(capsys, ["view", "/dev/null", "-o", str(tmp_path / "p.html")])
    assert "'/dev/null' is a device, not a regular file" in _one_line_error(capsys, ["compare", str(results_file), "/dev/null"])


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_view_refuses_a_run_file_nested_deep_with_one_line(tmp_path, capsys, depth):
    run = tmp_path / "deep.jsonl"
    run.write_text('{"scenario": "SEAD", "turns": []}\n{"scenario": "x", "profile": ' + "[" * depth + "]" * depth + "}\n")
    err = _one_line_error(capsys, ["view", str(run)])
    assert f"{run}': line 2 nests arrays/objects deeper than 100 levels" in err
    assert not run.with_suffix(".html").exists()


def test_view_reads_brackets_inside_strings_as_text(tmp_path, capsys):
    run = tmp_path / "brackets.jsonl"
    run.write_text('{"scenario": "x", "turns": [{"role": "agent", "text": "' + "[{" * 5_000 + '"}]}\n')
    assert main(["view", str(run)]) == 0
    capsys.readouterr()


ESCAPES = "\x1b[2J\x1b]0;owned\x07\u202egnp.exe\rX"


def test_compare_escapes_names_and_fields_from_the_files(results_file, tmp_path, capsys):
    import json

    data, same = json.loads(results_file.read_text()), json.loads(results_file.read_text())
    hostile = "keyword" + ESCAPES
    data["rows"] = [{**row, "agent": hostile if row["agent"] == "keyword" else row["agent"]} for row in data["rows"]]
    data["episodes"] = {(hostile if name == "keyword" else name): episodes for name, episodes in data["episodes"].items()}
    data["headline"] = {(hostile if name == "keyword" else name): value for name, value in data["headline"].items()}
    data["provenance"]["env_kwargs"] = ESCAPES
    for provenance in (data["provenance"], same["provenance"]):
        provenance["seed"] = "0" + ESCAPES
    path, first = tmp_path / "hostile.json", tmp_path / "a.json"
    path.write_text(json.dumps(data))
    first.write_text(json.dumps(same))
    assert main(["compare", str(first), str(path), "--agent-a", "keyword", "--agent-b", hostile, "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    for char in "\x1b\x07\u202e\r":
        assert char not in out
    assert "keyword\\x1b[2J\\x1b]0;owned\\x07\\u202egnp.exe\\rX" in out  # shown, as escapes
    err = _one_line_error(capsys, ["compare", str(results_file), str(path), "--agent-a", "keyword", "--agent-b", "nobody"])
    assert "\x1b" not in err and "\\x1b[2J" in err
