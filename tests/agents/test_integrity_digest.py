"""The code digest names files by path as well as content (issue 43, item 6): a file renamed or moved,
with the same bytes, is other code (an import resolves by name), so the digest changes; and only the
bytecode this interpreter would load is checked."""

from __future__ import annotations

from pathlib import Path

from dialogue_gym.integrity import code_digest


def test_renaming_or_moving_a_file_changes_the_digest_and_moving_it_back_restores_it(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("X = 1\n")
    (root / "sub" / "b.py").write_text("Y = 2\n")
    before = code_digest([root])
    (root / "a.py").rename(root / "c.py")
    renamed = code_digest([root])
    (root / "c.py").rename(root / "sub" / "a.py")
    moved = code_digest([root])
    (root / "sub" / "a.py").rename(root / "a.py")
    assert len({before, renamed, moved}) == 3 and code_digest([root]) == before


def test_a_cache_file_of_another_interpreter_is_never_loaded_so_it_is_no_problem(tmp_path):
    """Only this interpreter's cache tag is loaded: a forged cache under another tag, even with this
    interpreter's genuine header, is not what runs, so it must not make every run look tampered."""
    import importlib.util
    import py_compile
    import sys

    from dialogue_gym.integrity import bytecode_problems

    root = tmp_path / "pkg"
    root.mkdir()
    source = root / "mod.py"
    source.write_text("X = 1\n")
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cache), doraise=True)
    forged = root / "forged.py"
    forged.write_text("X = 2\n")
    py_compile.compile(str(forged), cfile=str(tmp_path / "forged.pyc"), doraise=True)
    other = cache.with_name(cache.name.replace(sys.implementation.cache_tag, "cpython-20"))
    other.write_bytes(cache.read_bytes()[:16] + (tmp_path / "forged.pyc").read_bytes()[16:])
    forged.unlink()
    assert bytecode_problems([root]) == []
    cache.write_bytes(other.read_bytes())  # the same bytes under this interpreter's tag: loaded, so a problem
    assert bytecode_problems([root]) == [f"pkg/__pycache__/{cache.name}: bytecode Python loads in place of mod.py is not compiled from it"]
