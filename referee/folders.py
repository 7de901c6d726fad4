"""Private folders made safely in places other users may write (the temp folder, above all).

The referee often runs as root and writes what must stay private (match logs hold every
hand; lock files decide which uid a bot gets) into folders with fixed names in shared places
(``$TMPDIR/referee-logs-<euid>``, ``$TMPDIR/referee-sandbox-uids``, a results folder beside a
tournament file). Anyone who may write the place can plant that name before the referee
comes: a **symlink** to a folder of their choice (``mkdir(exist_ok=True)`` then ``chmod`` by
path then changes the mode of the target, as root: measured on the old ``referee play``, a
planted link got ``/etc`` made 0700) or a **folder of their own** (they then read every log
written into it). So a fixed-name folder is made here, and only here, like this:

1. the parent is opened, and refused if others may write it without its sticky bit (they
   could then rename our folder away and put their own in its place after the check);
2. ``mkdir`` relative to the parent's descriptor (it never follows a symlink; an existing
   entry is left as it is);
3. the entry is opened with ``O_NOFOLLOW | O_DIRECTORY`` and checked through that
   descriptor: a folder, not a symlink; owned by the referee's effective uid; writable by
   nobody else (a folder others could write may hold what they planted);
4. its mode is set with ``fchmod`` on that descriptor, never ``chmod`` on the path.

Anything else is refused with one line (:class:`~referee.errors.UsageError`) naming the
path, what is wrong with it and what to do; nothing is changed. A folder with a random name
comes from ``tempfile.mkdtemp`` instead (0700 and new by construction).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from referee.errors import UsageError

__all__ = ["private_folder"]

_O_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def private_folder(path: Path, *, mode: int = 0o700, parents: bool = False) -> Path:
    """Make ``path`` (or accept it as it is) as the referee's own folder of ``mode``.

    ``mode`` may let others enter (0711, a staging root) but never write. With ``parents``
    the folders above ``path`` are made first as plain folders: they are the place the user
    chose (a tournament's folder), not a shared one. Returns ``path``; raises ``UsageError``
    when ``path`` is a symlink, not a folder, another uid's, writable by others, or in a
    parent others may write without its sticky bit.
    """
    assert not mode & _OTHERS_WRITE, "a private folder is never writable by others"
    path = Path(path)
    parent, name = path.parent, path.name
    if parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot make the folder {parent}: {exc.strerror or exc}") from None
    try:
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot open the folder {parent}: {exc.strerror or exc}") from None
    try:
        _check_parent(parent_fd, parent, name)
        try:
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UsageError(f"cannot make the folder {path}: {exc.strerror or exc}") from None
        fd = _open_folder(parent_fd, name, path)
        try:
            info = os.fstat(fd)
            _check_own(info, path)
            if stat.S_IMODE(info.st_mode) != mode:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
    finally:
        os.close(parent_fd)
    return path


def _check_parent(parent_fd: int, parent: Path, name: str) -> None:
    info = os.fstat(parent_fd)
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        raise UsageError(
            f"{parent} is writable by every user and not sticky: anyone could replace "
            f"{name} in it; choose another place (for the temp folder: set TMPDIR)"
        )


def _open_folder(parent_fd: int, name: str, path: Path) -> int:
    """``name`` in the parent, opened as a folder without following a symlink."""
    try:
        return os.open(name, _O_FOLDER, dir_fd=parent_fd)
    except OSError as exc:
        try:
            kind = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
        except OSError:
            kind = 0
        if stat.S_ISLNK(kind) or exc.errno == errno.ELOOP:
            target = _link_target(parent_fd, name)
            raise UsageError(
                f"{path} is a symlink (to {target}), planted by someone who may write "
                f"{path.parent}; the referee does not follow it: remove it and run again"
            ) from None
        if kind and not stat.S_ISDIR(kind):
            raise UsageError(
                f"{path} exists and is not a folder; remove it and run again"
            ) from None
        raise UsageError(f"cannot open the folder {path}: {exc.strerror or exc}") from None


def _check_own(info: os.stat_result, path: Path) -> None:
    uid = os.geteuid()
    if info.st_uid != uid:
        raise UsageError(
            f"{path} belongs to uid {info.st_uid}, not to uid {uid} that runs the referee: "
            "its owner could read what the referee keeps there; remove it (or, if it is "
            f"yours, chown it to uid {uid}) and run again"
        )
    if info.st_mode & _OTHERS_WRITE:
        raise UsageError(
            f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}): "
            "what it holds may have been planted; remove it and run again"
        )


def _link_target(parent_fd: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=parent_fd)
    except OSError:
        return "?"
