"""The bytecode check at its edges (issue 43, item 6): optimised and checked hash-based caches, a cache
that is only a header, names Python never loads, symlinks in the digest, and the check that every
loaded module of the package comes from one of its sources."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
import types
from pathlib import Path

import pytest

import dialogue_gym
from dialogue_gym.integrity import HEADER, bytecode_problems, code_digest

SOURCE = '"""A docstring that optimize=2 drops."""\nassert True, "optimize=1 drops this"\nX = 1\n'


@pytest.fixture
def package(tmp_path):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "mod.py").write_text(SOURCE)
    return root


def _bytecode(tmp_path: Path, code: str, **compile_args) -> bytes:
    """The bytes of a cache of ``code`` (compiled from a scratch file outside the package)."""
    scratch = tmp_path / "scratch.py"
    scratch.write_text(code)
    compiled = py_compile.compile(str(scratch), cfile=str(tmp_path / "scratch.pyc"), doraise=True, **compile_args)
    return Path(compiled).read_bytes()


@pytest.mark.parametrize("level", [1, 2])
def test_optimised_caches_are_checked_against_the_source_compiled_at_their_level(tmp_path, package, level):
    source = package / "mod.py"
    cache = Path(importlib.util.cache_from_source(str(source), optimization=level))
    assert cache.name == f"mod.{sys.implementation.cache_tag}.opt-{level}.pyc"
    py_compile.compile(str(source), cfile=str(cache), doraise=True, optimize=level)
    assert bytecode_problems([package]) == []  # genuine: equal to the source compiled at that level, not at level 0
    cache.write_bytes(cache.read_bytes()[:HEADER] + _bytecode(tmp_path, "X = 2\n", optimize=level)[HEADER:])
    assert bytecode_problems([package]) == [f"pkg/__pycache__/{cache.name}: bytecode Python loads in place of mod.py is not compiled from it"]


def test_a_checked_hash_based_cache_is_loaded_only_while_the_hash_matches_the_source(tmp_path, package):
    source = package / "mod.py"
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cache), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert bytecode_problems([package]) == []
    genuine = cache.read_bytes()
    assert int.from_bytes(genuine[4:8], "little") == 0b11 and genuine[8:16] == importlib.util.source_hash(source.read_bytes())
    cache.write_bytes(genuine[:HEADER] + _bytecode(tmp_path, "X = 2\n")[HEADER:])  # foreign code under the source's hash: loaded
    assert bytecode_problems([package]) == [f"pkg/__pycache__/{cache.name}: bytecode Python loads in place of mod.py is not compiled from it"]
    source.write_text(SOURCE + "Y = 3\n")  # the hash no longer matches: Python recompiles the source, the cache never runs
    assert bytecode_problems([package]) == []


def test_a_cache_that_is_only_the_genuine_header_is_unreadable_bytecode_and_one_byte_less_is_never_loaded(package):
    source = package / "mod.py"
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cache), doraise=True)
    header = cache.read_bytes()[:HEADER]
    cache.write_bytes(header)  # exactly a header: Python loads it and fails to read its code
    assert bytecode_problems([package]) == [f"pkg/__pycache__/{cache.name}: unreadable bytecode Python would load for mod.py (EOFError)"]
    cache.write_bytes(header[:-1])  # shorter than a header: recompiled from the source
    assert bytecode_problems([package]) == []


@pytest.mark.parametrize("name", ["mod.{tag}.opt-1.extra.pyc", "mod.{tag}.extra.pyc", "mod.{tag}.opt-x.pyc", "mod.{tag}.pyc.bak", "mod.pyc"])
def test_cache_names_python_never_loads_are_no_problem(tmp_path, package, name):
    folder = package / "__pycache__"
    folder.mkdir()
    genuine = Path(importlib.util.cache_from_source(str(package / "mod.py")))
    py_compile.compile(str(package / "mod.py"), cfile=str(genuine), doraise=True)
    (folder / name.format(tag=sys.implementation.cache_tag)).write_bytes(genuine.read_bytes()[:HEADER] + _bytecode(tmp_path, "X = 2\n")[HEADER:])
    genuine.unlink()
    assert bytecode_problems([package]) == []


def test_a_symlink_is_digested_as_a_link_not_as_its_target(tmp_path):
    regular, linked = tmp_path / "regular" / "pkg", tmp_path / "linked" / "pkg"
    for root in (regular, linked):
        root.mkdir(parents=True)
    (regular / "a.py").write_text("X = 1\n")
    (tmp_path / "target.py").write_text("X = 1\n")
    (linked / "a.py").symlink_to(tmp_path / "target.py")
    before = code_digest([linked])
    assert before != code_digest([regular])  # the same bytes, but one is a link
    (tmp_path / "target.py").write_text("X = 2\n")
    assert code_digest([linked]) == before  # a link's target is not read


def _module(name: str, file: str | None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = file
    return module


def test_every_loaded_module_of_the_package_must_come_from_one_of_its_sources(tmp_path, monkeypatch):
    package = Path(dialogue_gym.__file__).resolve().parent
    planted = {
        "dialogue_gym._outside": str(tmp_path / "outside.py"),  # a source, but not the package's
        "dialogue_gym._compiled": str(package / "compiled.pyc"),  # inside the package, but not a source
        "envs_registry._outside": str(tmp_path / "registry.py"),
        "dialogue_gym._namespace": None,  # no file: nothing to check
        "dialogue_gym_other": str(tmp_path / "other.pyc"),  # another package's module
        "other.dialogue_gym": str(tmp_path / "other.pyc"),
    }
    for name, file in planted.items():
        monkeypatch.setitem(sys.modules, name, _module(name, file))
    found = [problem for problem in bytecode_problems() if problem.startswith("module ")]
    assert sorted(found) == sorted(
        f"module {name} was loaded from {planted[name]}, not from a source of the package"
        for name in ("dialogue_gym._outside", "dialogue_gym._compiled", "envs_registry._outside")
    )
    # given roots, only the files under them are checked, not what this interpreter loaded
    assert bytecode_problems([tmp_path]) == []


def test_a_pyc_beside_the_sources_is_a_problem(package):
    (package / "evil.pyc").write_bytes(b"\0" * 32)
    assert bytecode_problems([package]) == ["pkg/evil.pyc: bytecode beside the sources (importable with no source)"]


def test_a_cache_whose_header_no_longer_matches_the_source_is_never_loaded(tmp_path, package):
    source = package / "mod.py"
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cache), doraise=True)
    cache.write_bytes(cache.read_bytes()[:HEADER] + _bytecode(tmp_path, "X = 2\n")[HEADER:])
    assert len(bytecode_problems([package])) == 1  # the header matches: loaded, foreign
    status = source.stat()
    for mtime, text in ((status.st_mtime + 10, SOURCE), (status.st_mtime, SOURCE + "#")):  # a newer source; one byte longer
        source.write_text(text)
        os.utime(source, (mtime, mtime))
        assert bytecode_problems([package]) == []
        source.write_text(SOURCE)
        os.utime(source, (status.st_mtime, status.st_mtime))
    assert len(bytecode_problems([package])) == 1


def test_a_cache_of_a_deleted_source_is_never_loaded(tmp_path, package):
    source = package / "mod.py"
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cache), doraise=True)
    cache.write_bytes(cache.read_bytes()[:HEADER] + _bytecode(tmp_path, "X = 2\n")[HEADER:])
    source.unlink()
    assert bytecode_problems([package]) == []


def test_the_digest_reads_every_file_by_content_but_not_the_caches(package):
    (package / "data.json").write_text('{"a": 1}')
    before = code_digest([package])
    (package / "data.json").write_text('{"a": 2}')
    assert code_digest([package]) != before
    (package / "data.json").write_text('{"a": 1}')
    py_compile.compile(str(package / "mod.py"), cfile=importlib.util.cache_from_source(str(package / "mod.py")), doraise=True)
    assert code_digest([package]) == before


def test_an_unchecked_hash_based_cache_is_loaded_whatever_the_source_says(tmp_path, package):
    """Flags 0b01 (hash-based, unchecked): Python never compares the hash, so foreign code in it runs even
    after the source changed; its flags word is read from bytes 4-7 alone."""
    source = package / "mod.py"
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir()
    cache.write_bytes(_bytecode(tmp_path, "X = 2\n", invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH))
    assert int.from_bytes(cache.read_bytes()[4:8], "little") == 0b01
    source.write_text(SOURCE + "Y = 3\n")  # the cache's hash is of scratch.py, not of either version of mod.py
    assert bytecode_problems([package]) == [f"pkg/__pycache__/{cache.name}: bytecode Python loads in place of mod.py is not compiled from it"]
