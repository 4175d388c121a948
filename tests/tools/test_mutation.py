"""tools/mutation.py finds the mutants it documents, at the right spans, and never touches docstrings,
strings or annotations; equivalent mutants are listed with a reason."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("tools_mutation", Path(__file__).resolve().parents[2] / "tools" / "mutation.py")
mutation = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = mutation  # dataclasses resolve their module by name
SPEC.loader.exec_module(mutation)

SOURCE = '''"""Module docstring with 1 < 2 and a - b."""


def f(x: int = 3, y: float = 0.5) -> bool:
    """Docstring: x + 1."""
    label = "a - b < c"
    if x <= 15 and not y:
        return -x * 2 >= y
    return x - 1 != 0  # pragma: no mutate
'''


def mutated(mutant, text):
    return text[: mutant.start] + mutant.replacement + text[mutant.end :]


def test_the_documented_mutants_and_nothing_else(tmp_path):
    path = tmp_path / "toy.py"
    path.write_text(SOURCE)
    found = {(m.line, m.description) for m in mutation.mutants_of(path, "toy.py")}
    assert found == {
        (4, "3 -> 4"), (4, "0.5 -> 1.0"),
        (7, "<= -> <"), (7, "15 -> 16"), (7, "and -> or"), (7, "drop unary not"),
        (8, ">= -> >"), (8, "* -> /"), (8, "drop unary -"), (8, "2 -> 3"),
    }


def test_each_mutant_is_one_small_edit_that_still_parses(tmp_path):
    path = tmp_path / "toy.py"
    path.write_text(SOURCE)
    by_description = {m.description: m for m in mutation.mutants_of(path, "toy.py")}
    assert "if x < 15 and not y:" in mutated(by_description["<= -> <"], SOURCE)
    assert "return x * 2 >= y" in mutated(by_description["drop unary -"], SOURCE)
    assert "return -x / 2 >= y" in mutated(by_description["* -> /"], SOURCE)
    assert "if x <= 15 and y:" in mutated(by_description["drop unary not"], SOURCE)
    for mutant in by_description.values():
        compile(mutated(mutant, SOURCE), "toy.py", "exec")
        assert mutant.code == SOURCE.splitlines()[mutant.line - 1].strip()


def test_twins_on_a_line_are_numbered_so_one_can_be_listed_alone(tmp_path, monkeypatch, capsys):
    """The two ``0`` of ``0 if c < 0 else c`` are one mutation twice: the second is ``(#2 on the line)``,
    and an equivalent entry for it hides it and not its killable twin."""
    source = "def clamp(c):\n    return 0 if c < 0 else c\n"
    path = tmp_path / "twins.py"
    path.write_text(source)
    mutants = mutation.mutants_of(path, "twins.py")
    assert [m.description for m in mutants] == ["0 -> 1", "< -> <=", "0 -> 1 (#2 on the line)"]
    assert "return 1 if c < 0 else c" in mutated(mutants[0], source)
    assert "return 0 if c < 1 else c" in mutated(mutants[2], source)
    listed = tmp_path / "equivalent.json"
    entry = {"file": "twins.py", "code": "return 0 if c < 0 else c", "mutation": "0 -> 1 (#2 on the line)", "reason": "ints"}
    listed.write_text(json.dumps([entry]))
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    assert mutation.main(["--files", "twins.py", "--tests", "t", "--list", "--equivalent", str(listed)]) == 0
    assert capsys.readouterr().out.splitlines() == ["twins.py:2: 0 -> 1", "twins.py:2: < -> <=", "2 mutants (1 more judged equivalent)"]


def test_the_changed_lines_of_a_diff_are_its_new_side_hunks():
    diff = """diff --git a/x.py b/x.py
--- a/x.py
+++ b/x.py
@@ -3 +3 @@ def f():
-    a = 1
+    a = 2
@@ -10,0 +11,3 @@ def g():
+    b = 1
+    c = 2
+    d = 3
@@ -20,2 +22,0 @@ def h():
-    gone = 1
-    too = 2
@@ -40 +40,2 @@
+@@ -1 +99 @@ inside a line's text is no hunk
"""
    assert mutation.hunk_lines(diff) == {3, 11, 12, 13, 40, 41}
    assert mutation.hunk_lines("") == set()


def test_since_keeps_only_the_mutants_of_changed_lines(tmp_path, monkeypatch, capsys):
    """In a repository where only line 8 of the toy module changed since HEAD, --since HEAD lists that
    line's mutants (4 of the 10) and no other; a revision git does not know is refused with the fix."""
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "toy.py").write_text(SOURCE)
    git("add", "toy.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy")
    (tmp_path / "toy.py").write_text(SOURCE.replace("return -x * 2 >= y", "return -x * 3 >= y"))
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    assert mutation.main(["--files", "toy.py", "--tests", "t", "--list", "--since", "HEAD", "--equivalent", str(tmp_path / "none.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines[:-1]) == ["toy.py:8: * -> /", "toy.py:8: 3 -> 4", "toy.py:8: >= -> >", "toy.py:8: drop unary -"]
    assert lines[-1] == "4 mutants (0 more judged equivalent)"
    with pytest.raises(SystemExit, match="give --since a revision git knows"):
        mutation.main(["--files", "toy.py", "--tests", "t", "--list", "--since", "no-such-revision"])


def test_equivalent_entries_need_a_reason(tmp_path):
    listed = tmp_path / "equivalent.json"
    listed.write_text(json.dumps([{"file": "a.py", "code": "x = 1", "mutation": "1 -> 2", "reason": "cosmetic"}]))
    assert mutation.load_equivalent(listed) == {("a.py", "x = 1", "1 -> 2")}
    listed.write_text(json.dumps([{"file": "a.py", "code": "x = 1", "mutation": "1 -> 2"}]))
    with pytest.raises(SystemExit, match=r"lacks \['reason'\]"):
        mutation.load_equivalent(listed)
    assert mutation.load_equivalent(tmp_path / "missing.json") == set()


def test_the_packaged_equivalent_list_matches_real_mutants():
    """Every entry still names a mutant that exists (a stale entry would hide nothing and mislead)."""
    root = Path(mutation.ROOT)
    for file, code, description in mutation.load_equivalent(mutation.EQUIVALENT_FILE):
        mutants = [*mutation.mutants_of(root / file, file), *mutation.plausible_mutants(mutation.PLAUSIBLE_FILE, root, (file,))]
        assert any((m.code, m.description) == (code, description) for m in mutants), (file, code, description)


def test_every_named_target_exists():
    root = Path(mutation.ROOT)
    for name, (files, tests) in mutation.TARGETS.items():
        assert all((root / f).is_file() for f in files), name
        assert all((root / t).exists() for t in tests), name


def test_every_module_is_in_a_target():
    """A module in no target is never mutated: every module of the package and the trainers (not the
    ``__init__`` files) belongs to some named target."""
    root = Path(mutation.ROOT)
    modules = {str(path.relative_to(root)) for folder in ("dialogue_gym", "trainers") for path in (root / folder).rglob("*.py")
               if path.name != "__init__.py"}
    targeted = {file for files, _ in mutation.TARGETS.values() for file in files}
    assert modules, "no module found: the test looks in the wrong place"
    assert sorted(modules - targeted) == []


def test_a_plausible_mutant_replaces_its_snippet_once_and_is_described_as_a_bug(tmp_path):
    (tmp_path / "toy.py").write_text(SOURCE)
    listed = tmp_path / "plausible.json"
    listed.write_text(json.dumps([{"file": "toy.py", "old": "return -x * 2 >= y", "new": "return -x * 2 > y", "bug": "shifted bound"}]))
    (mutant,) = mutation.plausible_mutants(listed, tmp_path)
    assert (mutant.line, mutant.code, mutant.description) == (8, "return -x * 2 >= y", "plausible: shifted bound")
    assert "        return -x * 2 > y\n" in mutated(mutant, SOURCE)
    assert mutation.plausible_mutants(listed, tmp_path, ("other.py",)) == []
    assert mutation.plausible_mutants(tmp_path / "missing.json", tmp_path) == []


@pytest.mark.parametrize(
    "old, new, message",
    [("x - 1", "x + 1", r"old text occurs 2 times in the file \(it must occur once\)"),
     ("no such text", "x", "occurs 0 times"),
     ("return -x * 2 >= y", "return -x * 2 >= y", "is the same as its new text"),
     ("return -x * 2 >= y", "return -x * (2 >= y", "does not parse once applied")],
)
def test_a_stale_or_broken_plausible_mutant_is_an_error_naming_it(tmp_path, old, new, message):
    (tmp_path / "toy.py").write_text(SOURCE.replace("label = ", "label = x - 1 or "))
    listed = tmp_path / "plausible.json"
    listed.write_text(json.dumps([{"file": "toy.py", "old": old, "new": new, "bug": "the bug"}]))
    with pytest.raises(SystemExit, match=rf"entry 0 \('the bug'\).*{message}"):
        mutation.plausible_mutants(listed, tmp_path)
    listed.write_text(json.dumps([{"file": "toy.py", "old": old, "new": new}]))
    with pytest.raises(SystemExit, match=r"lacks \['bug'\]"):
        mutation.plausible_mutants(listed, tmp_path)


def test_kind_picks_the_mutants_and_limit_samples_only_the_operator_swaps(tmp_path, monkeypatch, capsys):
    (tmp_path / "toy.py").write_text(SOURCE)
    listed = tmp_path / "plausible.json"
    listed.write_text(json.dumps([{"file": "toy.py", "old": "x <= 15", "new": "x <= 16", "bug": "bound"}]))
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    common = ["--files", "toy.py", "--tests", "t", "--list", "--plausible", str(listed), "--equivalent", str(tmp_path / "none.json")]
    assert mutation.main([*common, "--kind", "plausible"]) == 0
    assert capsys.readouterr().out.splitlines() == ["toy.py:7: plausible: bound", "1 mutants (0 more judged equivalent)"]
    assert mutation.main([*common, "--kind", "operator"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "10 mutants (0 more judged equivalent)"
    assert mutation.main([*common, "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "sampled 2 of 10 operator mutants (seed 0)" and "toy.py:7: plausible: bound" in lines
    assert lines[-1] == "3 mutants (0 more judged equivalent)"


def test_kill_rates_are_given_per_file_and_kind():
    results = [
        {"file": "a.py", "description": "< -> <=", "result": "killed"},
        {"file": "a.py", "description": "1 -> 2", "result": "survived"},
        {"file": "a.py", "description": "plausible: wrong key", "result": "killed"},
        {"file": "b.py", "description": "plausible: missing copy", "result": "survived"},
    ]
    assert mutation.kill_rates(results) == [
        "  a.py: operator 1 of 2 killed (50.0%)", "  a.py: plausible 1 of 1 killed (100.0%)", "  b.py: plausible 0 of 1 killed (0.0%)",
    ]


def test_the_packaged_plausible_mutants_apply_and_name_their_bug():
    """Every hand-written mutant still applies to its module (plausible_mutants raises on a stale one)."""
    mutants = mutation.plausible_mutants(mutation.PLAUSIBLE_FILE, Path(mutation.ROOT))
    assert mutants and all(m.description.startswith(mutation.PLAUSIBLE) and len(m.description) > len(mutation.PLAUSIBLE) + 5 for m in mutants)
    assert len({(m.file, m.start, m.replacement) for m in mutants}) == len(mutants)


def test_the_scratch_copy_is_a_clean_git_checkout_of_the_working_tree(tmp_path, monkeypatch):
    """Code that reads its git checkout (the results' revision and dirty flag) must run in the copy as in
    the repository, or every mutant of it survives; and the copy's git is its own, not the real one's."""
    source = tmp_path / "source"
    source.mkdir()
    git = ("git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false")
    subprocess.run([*git, "init", "-q"], cwd=source, check=True)
    (source / ".gitignore").write_text("ignored.txt\n")
    (source / "tracked.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "-A"], cwd=source, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], cwd=source, check=True)
    (source / "untracked.py").write_text("y = 2\n")
    (source / "ignored.txt").write_text("no\n")
    monkeypatch.setattr(mutation, "ROOT", source)
    copy = tmp_path / "copy"
    copy.mkdir()
    mutation.scratch_copy(copy)
    assert sorted(p.name for p in copy.iterdir() if p.name != ".git") == [".gitignore", "tracked.py", "untracked.py"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=copy, capture_output=True, text=True, check=True)
    assert status.stdout == ""
    listed = subprocess.run(["git", "ls-files"], cwd=copy, capture_output=True, text=True, check=True).stdout.split()
    assert listed == [".gitignore", "tracked.py", "untracked.py"]
    assert subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=source, capture_output=True, text=True).stdout.strip() == "1"
    assert subprocess.run(["git", "status", "--porcelain"], cwd=source, capture_output=True, text=True).stdout.split("\n")[0] == "?? untracked.py"
