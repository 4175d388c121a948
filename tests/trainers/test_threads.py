"""Torch's thread count: the one asked for, or the faster on a probe, and the line that says which."""

import pytest

torch = pytest.importorskip("torch")


def test_requested_threads_are_set_and_named(monkeypatch):
    from trainers.common import threads

    monkeypatch.setattr(threads, "probe_seconds", lambda n: pytest.fail("a requested count is not measured"))
    previous = torch.get_num_threads()
    try:
        assert threads.choose_threads(1) == (1, "torch threads: 1 (--threads)") and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("faster", [1, 8])
def test_the_faster_count_on_the_probe_is_chosen_and_its_timings_logged(monkeypatch, faster):
    from trainers.common import threads

    monkeypatch.setattr(threads.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(threads, "probe_seconds", lambda n: 0.01 if n == faster else 0.03)
    previous = torch.get_num_threads()
    try:
        chosen, line = threads.choose_threads(0)
        assert chosen == faster == torch.get_num_threads()
        assert line.startswith(f"torch threads: {faster} (measured") and "1 thread " in line and "8 threads " in line
    finally:
        torch.set_num_threads(previous)


def test_the_probe_times_a_real_workload_and_leaves_the_count_as_it_was():
    from trainers.common.threads import probe_seconds

    previous = torch.get_num_threads()
    assert 0 < probe_seconds(1) < 5 and torch.get_num_threads() == previous


def test_a_resumed_run_keeps_the_thread_count_it_started_with(tmp_path, monkeypatch):
    """The probe may pick 1 thread when a run starts on a loaded machine and 2 when it resumes on an idle
    one; a product summed over another split differs in the 7th digit, so the resume would too."""
    from trainers.common import threads
    from trainers.common.rundir import RunDir

    previous = torch.get_num_threads()
    try:
        with RunDir.create(tmp_path / "run", {}) as run:
            monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
            monkeypatch.setattr(threads, "probe_seconds", lambda n: 0.01 if n == 1 else 0.03)
            assert threads.run_threads(run, 0)[0] == 1
            started = (run.path / "state" / "threads.json").read_text()
        monkeypatch.setattr(threads, "probe_seconds", lambda n: pytest.fail("a resumed run is not probed again"))
        with RunDir.resume(tmp_path / "run") as run:
            chosen, line = threads.run_threads(run, 0)
            assert (chosen, torch.get_num_threads()) == (1, 1) and "kept on resume" in line
            assert (run.path / "state" / "threads.json").read_text() == started  # the probe's measurements stay on record
            assert threads.run_threads(run, 2)[0] == 2 == torch.get_num_threads()  # --threads wins
    finally:
        torch.set_num_threads(previous)


def test_a_damaged_thread_record_is_one_line_naming_it(tmp_path):
    from trainers.common import threads
    from trainers.common.rundir import RunDir, RunFolderError

    with RunDir.create(tmp_path / "run", {}) as run:
        (run.path / "state" / "threads.json").write_text('{"threads": "2"}')
        with pytest.raises(RunFolderError, match=r"threads.json: field 'threads' must be int, got '2'"):
            threads.run_threads(run, 0)
