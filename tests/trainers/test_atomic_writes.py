"""trainers.common.atomic and the run folder's field checks, case by case (issue 43, item 6): what a
kill between the two renames of a folder save leaves, which safetensors files are whole, adapters
without weights, a full quota, and field kinds that refuse a bool for an int and NaN for a float."""

from __future__ import annotations

import errno
import json
import math

import pytest

from trainers.common import DiskFullError, RunDir, RunFolderError, atomic
from trainers.common.atomic import folder_problem, safetensors_problem, saved_folder
from trainers.common.rundir import has_kind


def test_a_kill_after_the_old_folder_is_moved_aside_leaves_it_whole_beside_the_new_partial(tmp_path, monkeypatch):
    """The old folder is renamed to ``.old`` before the new one takes its place, never deleted first:
    a kill between the two renames leaves it whole, and the next save cleans up and succeeds."""
    folder = tmp_path / "iter_0001"
    saved_folder(folder, lambda out: (out / "strategy.json").write_text('{"old": 1}'))
    real_replace = atomic.os.replace

    def killed_at_the_second_rename(source, target):
        if str(source).endswith(".partial"):
            raise KeyboardInterrupt  # the process dies here
        real_replace(source, target)

    monkeypatch.setattr(atomic.os, "replace", killed_at_the_second_rename)
    with pytest.raises(KeyboardInterrupt):
        saved_folder(folder, lambda out: (out / "strategy.json").write_text('{"new": 2}'))
    assert (tmp_path / "iter_0001.old" / "strategy.json").read_text() == '{"old": 1}'
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    saved_folder(folder, lambda out: (out / "strategy.json").write_text('{"new": 3}'))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iter_0001"] and (folder / "strategy.json").read_text() == '{"new": 3}'


def safetensors_bytes(header: dict, data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


HEADER = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}


def test_a_safetensors_file_is_whole_only_at_exactly_the_length_its_header_gives(tmp_path):
    path = tmp_path / "model.safetensors"
    whole = safetensors_bytes(HEADER, b"\0" * 8)
    path.write_bytes(whole)
    assert safetensors_problem(path) is None
    path.write_bytes(whole + b"junk")
    assert safetensors_problem(path) == f"{path} is truncated or damaged ({len(whole) + 4} bytes; its header says {len(whole)})"
    path.write_bytes(whole[:20])  # cut inside the header
    assert safetensors_problem(path) == f"{path} is truncated (20 bytes; its header alone says {len(whole) - 8})"
    header_end = len(whole) - 8  # 8 length bytes + the header; a cut 4 bytes short of it still holds more than the header's length
    path.write_bytes(whole[: header_end - 4])
    assert safetensors_problem(path) == f"{path} is truncated ({header_end - 4} bytes; its header alone says {header_end})"
    path.write_bytes(whole[:5])
    assert safetensors_problem(path) == f"{path} is truncated (5 bytes, shorter than a safetensors header)"


def test_an_adapter_folder_without_weights_is_not_whole(tmp_path):
    (tmp_path / "adapter_config.json").write_text("{}")
    assert folder_problem(tmp_path) == f"{tmp_path} has no weights file (model.safetensors or model.safetensors.index.json or adapter_model.safetensors; it was not written whole)"
    (tmp_path / "adapter_model.safetensors").write_bytes(safetensors_bytes(HEADER, b"\0" * 8))
    assert folder_problem(tmp_path) is None


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_or_a_full_quota_is_disk_full(tmp_path, code):
    full = atomic.disk_full_error(tmp_path / "state.json", OSError(code, "no room"))
    assert isinstance(full, DiskFullError) and f"writing {tmp_path / 'state.json'} failed" in str(full)
    assert atomic.disk_full_error(tmp_path / "state.json", OSError(errno.EACCES, "Permission denied")) is None


def test_field_kinds_refuse_a_bool_for_an_int_and_a_non_finite_float():
    assert has_kind(3, int) and has_kind(True, bool) and has_kind(True, (bool, int))
    assert not has_kind(True, int) and not has_kind(False, (int, float))
    assert has_kind(0.5, float) and has_kind(None, (float, type(None)))
    assert not any(has_kind(value, float) for value in (math.nan, math.inf, -math.inf))


def test_a_folder_holding_only_state_files_already_holds_a_run(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "progress.json").write_text("{}")
    with pytest.raises(RunFolderError, match=f"{tmp_path} already holds a run; pass --resume {tmp_path}"):
        RunDir.create(tmp_path, {"iterations": 1})
