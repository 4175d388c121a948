"""Run-folder writes at their edges (issue 43, item 6): the free-space line under which an unexplained
write failure is a full disk, and the checks that a saved file is whole, byte for byte at their limits."""

from __future__ import annotations

import errno
import shutil

import pytest

from trainers.common import DiskFullError, atomic

UNEXPLAINED = RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")


@pytest.mark.parametrize(("free", "full"), [(0, True), (1024 * 1024 - 1, True), (1024 * 1024, False)])
def test_an_unexplained_failure_is_a_full_disk_below_one_mebibyte_free(tmp_path, monkeypatch, free, full):
    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(1 << 30, (1 << 30) - free, free))
    error = atomic.disk_full_error(tmp_path / "optimizer.pt", UNEXPLAINED)
    assert isinstance(error, DiskFullError) if full else error is None


@pytest.mark.parametrize("words", ["No space left on device", "Disk quota exceeded"])
def test_an_error_that_only_says_the_disk_or_quota_is_full_is_disk_full_with_space_free(tmp_path, monkeypatch, words):
    """A library that re-raises ENOSPC or EDQUOT as text (no errno) still names a full disk, even where
    the disk has room again by the time it is checked."""
    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(1 << 30, 0, 1 << 30))
    error = atomic.disk_full_error(tmp_path / "model.safetensors", RuntimeError(f"write failed: {words}"))
    assert isinstance(error, DiskFullError) and words in str(error)
    assert atomic.disk_full_error(tmp_path / "model.safetensors", RuntimeError("write failed")) is None


def test_the_cause_is_quoted_on_one_line_and_cut_at_160_characters(tmp_path):
    cause = OSError(errno.ENOSPC, "no room\n   left " + "x" * 200)
    error = atomic.disk_full_error(tmp_path / "state.json", cause)
    quoted = "[Errno 28] no room left " + "x" * 200
    assert f"(OSError: {quoted[:160]}); nothing partial was kept" in str(error) and "\n" not in str(error)


def test_a_disk_whose_free_space_cannot_be_read_is_not_called_full(tmp_path, monkeypatch):
    def unreadable(path):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(atomic.shutil, "disk_usage", unreadable)
    assert atomic.disk_full_error(tmp_path / "optimizer.pt", UNEXPLAINED) is None


def test_a_full_disk_before_the_temporary_file_exists_is_disk_full_not_a_cleanup_error(tmp_path, monkeypatch):
    def no_room(path, mode):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "open", no_room, raising=False)
    with pytest.raises(DiskFullError, match="The disk is full"):
        atomic.write_text(tmp_path / "state.json", "{}")
    assert list(tmp_path.iterdir()) == []


def _safetensors(header: bytes, data: bytes = b"") -> bytes:
    return len(header).to_bytes(8, "little") + header + data


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (_safetensors(b"{}"), None),  # no tensors: the header is the whole file
        (_safetensors(b'{"__metadata__": {"format": "pt"}}'), None),  # metadata holds no data offsets
        (_safetensors(b'{"__metadata__": {"format": "pt"}, "w": {"data_offsets": [0, 4]}}', b"\0" * 4), None),
        # 8 length bytes + a 31-byte header + 3 of the 4 data bytes
        (_safetensors(b'{"w": {"data_offsets": [0, 4]}}', b"\0" * 3), "is truncated or damaged (42 bytes; its header says 43)"),
        (b"\0" * 8, "is not a readable safetensors file (JSONDecodeError: Expecting value: line 1 column 1 (char 0))"),
        (b"\0" * 7, "is truncated (7 bytes, shorter than a safetensors header)"),
        (_safetensors(b"{}")[:9], "is truncated (9 bytes; its header alone says 10)"),
    ],
)
def test_safetensors_files_at_their_edges(tmp_path, content, problem):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    assert atomic.safetensors_problem(path) == (None if problem is None else f"{path} {problem}")


def test_only_checkpoint_folders_with_a_step_are_candidates(tmp_path):
    """A file named like a checkpoint (a log, an archive) and a folder without a step number are neither
    resumed from nor removed."""
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-9").write_text("a file, not a checkpoint")
    (tmp_path / "checkpoint-best").mkdir()
    assert atomic.latest_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-9", "checkpoint-best"]


def test_a_cut_short_checkpoint_removed_by_another_process_meanwhile_is_no_error(tmp_path, monkeypatch):
    """Two processes on a shared disk: the cut-short folder is gone by the time this one removes it."""
    for step in (2, 4):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-4" / "trainer_state.json").unlink()
    real_problem = atomic.folder_problem

    def problem_then_gone(folder, required=()):
        problem = real_problem(folder, required)
        if problem is not None:
            shutil.rmtree(folder)  # the other process
        return problem

    monkeypatch.setattr(atomic, "folder_problem", problem_then_gone)
    assert atomic.latest_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-2"
