"""What code an evaluation ran: a digest of the package's files, and bytecode that is not its source's.

A results file names a git revision, but the interpreter runs what it loads: a source edited after the
commit, a data file swapped, or a bytecode file in ``__pycache__`` that the next interpreter loads
instead of the unchanged source (its header copied from the genuine one, so Python trusts it). So
every results file's provenance (:func:`dialogue_gym.results.software`) records:

- ``code_digest``: SHA-256 over every file of the package (``dialogue_gym`` and ``envs_registry``):
  sources and data, by path and content, ``__pycache__`` left out (:func:`code_digest`). Two runs with
  the same digest ran the same sources and data.
- ``bytecode_problems``: each bytecode file Python would load in place of a source (its header matches
  the source's timestamp and size, or it is an unchecked hash-based file) whose code is not what that
  source compiles to; each ``.pyc`` beside the sources (importable with no source at all); each loaded
  module of the package whose file is not a source inside it (:func:`bytecode_problems`). Empty when
  the bytecode Python loads is the sources' own, which is what makes the digest of the sources the
  digest of what ran.

Bytecode Python writes from unchanged sources is not a problem (its code equals the source's), so it
does not make a tree dirty; a foreign one does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
from pathlib import Path
from typing import Iterable

ROOTS = ("dialogue_gym", "envs_registry")
"""The packages whose files are digested and checked."""
HEADER = 16
"""Bytes of a ``.pyc`` header: magic, flags, then the source's mtime and size or its hash."""


def package_roots() -> list[Path]:
    """The folders of :data:`ROOTS` as this interpreter imports them."""
    import dialogue_gym
    import envs_registry

    return [Path(module.__file__).resolve().parent for module in (dialogue_gym, envs_registry)]


def _files(root: Path) -> Iterable[Path]:
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if name != "__pycache__")
        for name in sorted(files):
            yield Path(folder) / name


def code_digest(roots: Iterable[Path] | None = None) -> str:
    """SHA-256 (hex) over each file under ``roots`` (default: :func:`package_roots`) but ``__pycache__``:
    its path relative to its root's parent, then its content's SHA-256."""
    total = hashlib.sha256()
    for root in roots if roots is not None else package_roots():
        for path in _files(root):
            if path.is_symlink() or not path.is_file():
                total.update(f"{path.relative_to(root.parent).as_posix()}\0not a regular file\n".encode())
                continue
            content = hashlib.sha256(path.read_bytes()).hexdigest()
            total.update(f"{path.relative_to(root.parent).as_posix()}\0{content}\n".encode())
    return total.hexdigest()


def _source_of(pyc: Path) -> tuple[Path, int] | None:
    """The source a ``__pycache__/NAME.TAG[.opt-N].pyc`` of this interpreter caches, and its
    optimization level; None for another interpreter's file (never loaded by this one)."""
    parts = pyc.name.split(".")
    if len(parts) < 3 or parts[1] != sys.implementation.cache_tag or parts[-1] != "pyc":
        return None
    optimize = 0
    if len(parts) == 4 and parts[2].startswith("opt-") and parts[2][4:].isdigit():
        optimize = int(parts[2][4:])
    elif len(parts) != 3:
        return None
    return pyc.parent.parent / f"{parts[0]}.py", optimize


def _loaded_in_place_of(pyc: bytes, source: Path) -> bool:
    """Whether this interpreter would load ``pyc`` (the bytes of a cache file) in place of ``source``."""
    if len(pyc) < HEADER or pyc[:4] != importlib.util.MAGIC_NUMBER:
        return False  # another Python's or a broken file: recompiled from the source
    flags = int.from_bytes(pyc[4:8], "little")
    if flags & 0b1:  # hash-based
        if not flags & 0b10:
            return True  # unchecked: loaded whatever the source says
        return pyc[8:16] == importlib.util.source_hash(source.read_bytes())
    status = source.stat()
    return int.from_bytes(pyc[8:12], "little") == (int(status.st_mtime) & 0xFFFFFFFF) and int.from_bytes(pyc[12:16], "little") == (
        status.st_size & 0xFFFFFFFF
    )


def bytecode_problems(roots: Iterable[Path] | None = None) -> list[str]:
    """Bytecode under ``roots`` that is not its source's (see the module docstring), one line each,
    paths relative to the roots' parent; empty when there is none. Without ``roots``: the package's,
    and each loaded module of it is checked to come from one of its sources."""
    loaded = roots is None
    roots = list(roots if roots is not None else package_roots())
    problems = []
    for root in roots:
        for folder, _, files in os.walk(root):
            here = Path(folder)
            for name in sorted(files):
                path = here / name
                shown = path.relative_to(root.parent).as_posix()
                if not name.endswith(".pyc"):
                    continue
                if here.name != "__pycache__":
                    problems.append(f"{shown}: bytecode beside the sources (importable with no source)")
                    continue
                found = _source_of(path)
                if found is None:
                    continue
                source, optimize = found
                if not source.is_file():
                    continue  # a cache of a deleted source is never loaded
                try:
                    pyc = path.read_bytes()
                    if not _loaded_in_place_of(pyc, source):
                        continue
                    cached = marshal.loads(pyc[HEADER:])
                    compiled = compile(source.read_bytes(), str(source), "exec", dont_inherit=True, optimize=optimize)
                except (OSError, ValueError, EOFError, TypeError, SyntaxError) as exc:
                    problems.append(f"{shown}: unreadable bytecode Python would load for {source.name} ({type(exc).__name__})")
                    continue
                if cached != compiled:
                    problems.append(f"{shown}: bytecode Python loads in place of {source.name} is not compiled from it")
    for name, module in list(sys.modules.items()) if loaded else ():
        if name.split(".")[0] not in ROOTS:
            continue
        file = getattr(module, "__file__", None)
        if file is None:
            continue
        path = Path(file).resolve()
        if path.suffix != ".py" or not any(path.is_relative_to(root) for root in roots):
            problems.append(f"module {name} was loaded from {file}, not from a source of the package")
    return problems
