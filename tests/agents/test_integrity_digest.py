"""The code digest names files by path as well as content (issue 43, item 6): a file renamed or moved,
with the same bytes, is other code (an import resolves by name), so the digest changes."""

from __future__ import annotations

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
