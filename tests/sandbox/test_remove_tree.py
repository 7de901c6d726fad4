"""Removing a bot's scratch folder: permissions opened up by descriptor, never through a link.

A bot may leave folders without write or search permission in its scratch folder, and a
process it left behind may swap a folder for a symlink while the referee removes the tree.
Opening the folders up by path would then change the mode of whatever the link points to.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from referee.sandbox.process import _open_up, _remove_tree

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _hostile_tree(root: Path, outside: Path) -> None:
    """A scratch tree as a bot may leave it: read-only and closed folders, and links out."""
    (root / "ro" / "deep").mkdir(parents=True)
    (root / "ro" / "deep" / "f").write_text("x")
    (root / "ro" / "f").write_text("x")
    (root / "closed").mkdir()
    (root / "closed" / "f").write_text("x")
    (root / "ro" / "out").symlink_to(outside)
    (root / "out").symlink_to(outside)
    os.chmod(root / "ro" / "deep", 0o500)
    os.chmod(root / "ro", 0o500)
    os.chmod(root / "closed", 0o000)


def test_opening_up_never_follows_a_planted_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "inner").mkdir()
    for folder in (outside, outside / "inner"):
        os.chmod(folder, 0o555)
    root = tmp_path / "scratch"
    root.mkdir()
    _hostile_tree(root, outside)
    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _open_up(parent, "scratch")
        with pytest.raises(OSError):  # the link itself is never opened as a folder
            _open_up(os.open(root, os.O_RDONLY | os.O_DIRECTORY), "out")
    finally:
        os.close(parent)
    for folder in (root, root / "ro", root / "ro" / "deep", root / "closed"):
        assert _mode(folder) == 0o700, folder
    assert _mode(outside) == 0o555 and _mode(outside / "inner") == 0o555
    assert (root / "out").is_symlink()


def _remove_as(uid: int, root: Path) -> int:
    """Remove ``root`` in a forked child running as ``uid``; its exit status."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            _remove_tree(root)
            code = 0
        except BaseException as exc:  # said where the test shows it
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_tree_the_bot_closed_is_removed_and_nothing_outside_changes() -> None:
    """Run as an unprivileged owner (root ignores the folders' modes, so the retry would
    never run): everything inside goes, the folder a link points to keeps its mode."""
    base = Path(tempfile.mkdtemp(prefix="referee-remove-tree-"))
    try:
        outside = base / "outside"
        outside.mkdir()
        os.chmod(outside, 0o755)  # the (unprivileged) referee's own, as the bot's link is
        root = base / "scratch"
        root.mkdir()
        _hostile_tree(root, outside)
        if os.geteuid() == 0:
            for path in [base, *base.rglob("*")]:
                os.lchown(path, NOBODY, NOBODY)
            assert _remove_as(NOBODY, root) == 0
        else:
            _remove_tree(root)
        assert not root.exists()
        assert _mode(outside) == 0o755 and outside.is_dir()
    finally:
        shutil.rmtree(base, ignore_errors=True)
