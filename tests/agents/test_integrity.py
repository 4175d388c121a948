"""Code and data integrity in provenance (issue 42, item 4), tested as attacks on a temporary copy of
the package: a foreign bytecode file with the genuine header (which Python really loads in place of
the unchanged source), an unchecked hash-based one, a ``.pyc`` beside the sources, an edited data
file; and ``git_dirty`` for untracked and ignored files under the package but not for bytecode Python
wrote from unchanged sources."""

from __future__ import annotations

import compileall
import importlib.util
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dialogue_gym
from dialogue_gym import integrity, results
from dialogue_gym.integrity import bytecode_problems, code_digest

PACKAGE = Path(dialogue_gym.__file__).resolve().parent
REGISTRY = PACKAGE.parent / "envs_registry"


@pytest.fixture
def copy(tmp_path):
    for source in (PACKAGE, REGISTRY):
        shutil.copytree(source, tmp_path / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    roots = [tmp_path / "dialogue_gym", tmp_path / "envs_registry"]
    assert compileall.compile_dir(str(tmp_path / "dialogue_gym"), maxlevels=0, quiet=1)
    return tmp_path, roots


def _plant(target: Path, code: str) -> Path:
    """Bytecode of ``code`` written as ``target``'s cache, with the header Python checks copied from
    the genuine cache (same magic, flags, mtime and size): Python loads it in place of the source."""
    cache = Path(importlib.util.cache_from_source(str(target)))
    genuine = cache.read_bytes()
    forged = target.with_name("forged.py")
    forged.write_text(code)
    py_compile.compile(str(forged), cfile=str(forged) + "c", doraise=True)
    cache.write_bytes(genuine[:16] + Path(str(forged) + "c").read_bytes()[16:])
    forged.unlink()
    Path(str(forged) + "c").unlink()
    return cache


def test_bytecode_python_wrote_from_the_sources_is_no_problem(copy):
    _, roots = copy
    assert bytecode_problems(roots) == []


def test_a_planted_foreign_pyc_with_the_genuine_header_is_detected_and_is_what_python_loads(copy):
    folder, roots = copy
    sealing = folder / "dialogue_gym" / "sealing.py"
    cache = _plant(sealing, "import secrets\nclass Seal:\n    draw = staticmethod(lambda: 'predictable')\n")
    environment = {**os.environ, "PYTHONPATH": str(folder)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    loaded = subprocess.run(
        [sys.executable, "-c", "import importlib.util, sys; sys.modules['dialogue_gym'] = type(sys)('dialogue_gym'); "
         f"sys.modules['dialogue_gym'].__path__ = [{str(folder / 'dialogue_gym')!r}]; import dialogue_gym.sealing as s; print(s.Seal.draw())"],
        capture_output=True, text=True, env=environment, timeout=60, check=True,
    )
    assert loaded.stdout.strip() == "predictable"  # the attack is real: the source is unchanged
    problems = bytecode_problems(roots)
    assert problems == [f"dialogue_gym/{cache.relative_to(folder / 'dialogue_gym').as_posix()}: bytecode Python loads in place of sealing.py is not compiled from it"]
    assert code_digest(roots) == code_digest(roots)  # the sources' digest cannot see it; the check is what does


def test_an_unchecked_hash_based_pyc_is_checked_whatever_its_hash(copy):
    folder, roots = copy
    sealing = folder / "dialogue_gym" / "sealing.py"
    cache = Path(importlib.util.cache_from_source(str(sealing)))
    other = folder / "other.py"
    other.write_text("SECRET = 'known'\n")
    py_compile.compile(str(other), cfile=str(cache), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH, doraise=True)
    assert [p for p in bytecode_problems(roots) if "sealing.py is not compiled from it" in p]


def test_stale_bytecode_python_would_recompile_is_no_problem(copy):
    folder, roots = copy
    sealing = folder / "dialogue_gym" / "sealing.py"
    _plant(sealing, "X = 1\n")
    os.utime(sealing, (1, 1))  # the header no longer matches: Python ignores the file and compiles the source
    assert bytecode_problems(roots) == []


def test_a_pyc_beside_the_sources_is_detected(copy):
    folder, roots = copy
    (folder / "dialogue_gym" / "evil.pyc").write_bytes(b"\0" * 32)
    assert bytecode_problems(roots) == ["dialogue_gym/evil.pyc: bytecode beside the sources (importable with no source)"]


def test_the_digest_covers_sources_and_data(copy):
    folder, roots = copy
    before = code_digest(roots)
    data = next((folder / "dialogue_gym").rglob("*.json"))
    data.write_bytes(data.read_bytes() + b" ")
    assert code_digest(roots) != before
    data.write_bytes(data.read_bytes()[:-1])
    assert code_digest(roots) == before
    (folder / "dialogue_gym" / "__pycache__" / "anything.pyc").write_bytes(b"x")  # caches are checked, not digested
    assert code_digest(roots) == before


def test_every_results_file_records_the_digest_and_the_bytecode_check(tmp_path):
    from dialogue_gym.evaluation import evaluate

    evaluate("SEAD-Outbound-v0", "sop", 2, save=tmp_path / "r.json", bootstrap=0)
    provenance = results.Results.load(tmp_path / "r.json").provenance
    assert provenance["code_digest"] == code_digest() and provenance["bytecode_problems"] == []


def test_git_dirty_counts_untracked_and_ignored_files_under_the_package_but_not_pycache(monkeypatch):
    class Done:
        def __init__(self, code=0, out=""):
            self.returncode, self.stdout = code, out

    listing = {"value": ""}

    def git(*arguments):
        if arguments[0] == "rev-parse":
            return Done(0, "ab" * 20)
        if arguments[0] == "diff":
            return Done(0)
        return Done(0, listing["value"])

    monkeypatch.setattr(results, "_git", git)
    monkeypatch.setattr(integrity, "bytecode_problems", lambda roots=None: [])
    listing["value"] = "!! dialogue_gym/__pycache__/sealing.cpython-311.pyc\0!! dialogue_gym/metrics/__pycache__/dtw._item-1.py311.nbi\0"
    assert results.software()["git_dirty"] is False
    listing["value"] = "?? dialogue_gym/planted.py\0"
    assert results.software()["git_dirty"] is True
    listing["value"] = "!! dialogue_gym/scenarios/rlada/data/intents.json.orig\0"
    assert results.software()["git_dirty"] is True
    listing["value"] = ""
    monkeypatch.setattr(integrity, "bytecode_problems", lambda roots=None: ["dialogue_gym/__pycache__/x: foreign"])
    assert results.software()["git_dirty"] is True
