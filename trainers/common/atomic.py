"""Files a trainer writes whole or not at all, checks that a saved file is whole, and disk-full as a typed error.

Every file of a run folder is written under a temporary name, flushed to disk (fsync) and renamed into
place (:func:`write_bytes`, :func:`write_text`, :func:`saved_folder` for a checkpoint folder), so a
crash, ``kill -9`` or a full disk leaves the old file or the new one, never a torn one. What other
libraries write in place (TRL's ``checkpoint-N`` folders) is checked before it is used
(:func:`folder_problem`, :func:`latest_complete_checkpoint`). A write that fails because the disk is
full raises :class:`DiskFullError` (exit 2 from the trainer CLIs), with nothing partial kept.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator

from dialogue_gym.errors import DialogueGymError

logger = logging.getLogger(__name__)

FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
FULL_FREE_BYTES = 1 << 20
"""A write that fails (with an error that does not say why: torch's ``unexpected pos``) while less than
this is free on the disk failed because the disk is full."""


class DiskFullError(DialogueGymError):
    """A run-folder write failed because the disk (or the user's quota) is full; nothing partial was kept."""


def _says_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
        return True
    return "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc)


def _nearly_full(folder: Path) -> bool:
    for candidate in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            return shutil.disk_usage(candidate).free < FULL_FREE_BYTES
    return False


def disk_full_error(path: Path, exc: BaseException) -> DiskFullError | None:
    """The :class:`DiskFullError` ``exc`` (raised while writing ``path``) stands for, or None when the disk is not full."""
    if isinstance(exc, DiskFullError):
        return exc
    if not isinstance(exc, Exception) or not (_says_full(exc) or _nearly_full(Path(path).parent)):
        return None
    return DiskFullError(
        f"The disk is full: writing {path} failed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]}); nothing partial was kept. "
        f"Free space on that disk (df -h {Path(path).parent}), then resume the run with --resume."
    )


@contextlib.contextmanager
def disk_full_guard(path: str | os.PathLike[str]) -> Iterator[None]:
    """Re-raise a failure inside the block as :class:`DiskFullError` when the disk holding ``path`` is full."""
    try:
        yield
    except Exception as exc:
        full = disk_full_error(Path(path), exc)
        if full is None or full is exc:
            raise
        raise full from exc


def fsync_folder(folder: Path) -> None:
    """Make a rename inside ``folder`` durable."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _temporary(path: Path) -> Path:
    return path.with_name(f"{path.name}.tmp")


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """``data`` as the whole content of ``path``: temporary file, fsync, rename. The temporary file is
    removed when the write fails; a full disk raises :class:`DiskFullError`."""
    path = Path(path)
    temporary = _temporary(path)
    try:
        with disk_full_guard(path):
            with open(temporary, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`write_bytes` of ``text`` in UTF-8."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], data: Any, **dumps: Any) -> None:
    """:func:`write_bytes` of ``data`` as JSON."""
    write_text(path, json.dumps(data, **dumps))


def fsync_tree(folder: Path) -> None:
    """fsync every file and folder under ``folder``."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        fsync_folder(sub)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def saved_folder(folder: str | os.PathLike[str], save: Callable[[Path], Any]) -> None:
    """``save(partial)`` writes a folder that then replaces ``folder`` whole: written under
    ``<folder>.partial``, fsynced, renamed into place (an older ``folder`` is moved aside first and
    removed after). A kill leaves the old folder or the new one (and perhaps a ``.partial`` or ``.old``
    folder, which the next save removes); a full disk raises :class:`DiskFullError` with the partial
    folder removed."""
    folder = Path(folder)
    partial, old = folder.with_name(folder.name + ".partial"), folder.with_name(folder.name + ".old")
    _remove(partial)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with disk_full_guard(folder):
            partial.mkdir()
            save(partial)
            fsync_tree(partial)
    except BaseException:
        _remove(partial)
        raise
    if folder.exists():
        _remove(old)
        os.replace(folder, old)
    os.replace(partial, folder)
    fsync_folder(folder.parent)
    _remove(old)


# -- checks that a saved file is whole ---------------------------------------------------------------------

TORCH_FILES = re.compile(r".*\.(pt|pth|bin)$")
"""Files ``torch.save`` writes (a zip archive whose directory is at its end: a truncated one has none)."""
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors", "pytorch_model.bin", "adapter_model.bin")


def safetensors_problem(path: Path) -> str | None:
    """Why the safetensors file ``path`` is not whole (its header says how long its data is), or None."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                return f"{path} is truncated ({size} bytes, shorter than a safetensors header)"
            length = int.from_bytes(head, "little")
            if length > size - 8:
                return f"{path} is truncated ({size} bytes; its header alone says {length + 8})"
            header = json.loads(handle.read(length))
        end = max((entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0)
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        return f"{path} is not a readable safetensors file ({type(exc).__name__}: {str(exc)[:80]})"
    if 8 + length + end != size:
        return f"{path} is truncated or damaged ({size} bytes; its header says {8 + length + end})"
    return None


def torch_file_problem(path: Path) -> str | None:
    """Why the ``torch.save`` file ``path`` is not whole (a zip archive without its directory), or None."""
    try:
        with zipfile.ZipFile(path) as archive:
            archive.namelist()
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        return f"{path} is truncated or damaged (not a whole torch archive: {str(exc)[:80]})"
    return None


def json_file_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return f"{path} is truncated or damaged (not valid JSON: {str(exc)[:80]})"
    return None


def chat_template_problem(path: Path) -> str | None:
    """Why the Jinja chat template ``path`` (``chat_template.jinja``, saved beside a tokenizer) does not
    parse, or None: a cut-short template mostly ends inside a tag or before its ``endfor``, and would
    otherwise fail as a Jinja traceback at the first prompt the model is given."""
    try:
        import jinja2
    except ImportError:  # no tokenizer can use it then either
        return None
    try:
        jinja2.Environment().parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, jinja2.TemplateSyntaxError, RecursionError) as exc:
        return f"{path} is truncated or damaged (not a whole Jinja template: {' '.join(str(exc).split())[:80]})"
    return None


def file_problem(path: Path) -> str | None:
    """Why ``path`` (a safetensors, torch, JSON or Jinja template file) is not whole, or None (other kinds are not checked)."""
    if path.name.endswith(".safetensors"):
        return safetensors_problem(path)
    if TORCH_FILES.match(path.name):
        return torch_file_problem(path)
    if path.name.endswith(".json"):
        return json_file_problem(path)
    if path.name.endswith(".jinja"):
        return chat_template_problem(path)
    return None


def folder_problem(folder: str | os.PathLike[str], required: tuple[str, ...] = ()) -> str | None:
    """Why the checkpoint or model folder ``folder`` is not whole, or None: a file of ``required`` is
    missing, a model folder (one with ``config.json`` or an adapter) has no weights, or a safetensors,
    torch or JSON file in it is truncated or damaged."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for name in required:
        if not (folder / name).exists():
            return f"{folder} has no {name} (it was not written whole)"
    names = {path.name for path in folder.iterdir()}
    if names & {"config.json", "adapter_config.json"} and not names & set(WEIGHTS):
        return f"{folder} has no weights file ({' or '.join(WEIGHTS[:3])}; it was not written whole)"
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            problem = file_problem(path)
            if problem is not None:
                return problem
    return None


CHECKPOINT_STEP = re.compile(r"checkpoint-(\d+)$")


def latest_complete_checkpoint(output_dir: str | os.PathLike[str], required: tuple[str, ...] = ("trainer_state.json",)) -> Path | None:
    """The newest whole ``checkpoint-N`` folder of a Hugging Face trainer in ``output_dir``; newer ones
    that are not whole (a kill or full disk while they were written) are removed with a warning naming
    them, so training resumes from the one before."""
    folders = [path for path in Path(output_dir).glob("checkpoint-*") if path.is_dir() and CHECKPOINT_STEP.search(path.name)]
    removed: list[tuple[Path, str]] = []
    complete = None
    for folder in sorted(folders, key=lambda path: int(CHECKPOINT_STEP.search(path.name).group(1)), reverse=True):
        problem = folder_problem(folder, required)
        if problem is None:
            complete = folder
            break
        shutil.rmtree(folder, ignore_errors=True)
        removed.append((folder, problem))
    for folder, problem in removed:
        logger.warning(
            "%s: removed %s (a kill or a full disk cut it short); %s", problem, folder,
            f"resuming from {complete.name}" if complete else "no complete checkpoint is left, training starts from its first step",
        )
    return complete
