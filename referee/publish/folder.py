"""Where a site is written: a fresh private folder renamed into place, or a league's in place.

:class:`SiteFolder` (a tournament's site, written whole each time) and :class:`LiveFolder`
(a league's, updated a few files at a time) are the only ways a site touches the disk. They
share how a file is put in a folder (:class:`_Descriptors`), and are built so that a
publication can never write anywhere but its own files:

* **A fresh folder.** The site is written into a new folder made by ``mkdtemp`` (mode 0700,
  a name nobody else can have chosen) next to ``--out``, and renamed to ``--out`` only when
  every page is written (:meth:`SiteFolder.commit`). A site published before is replaced
  in the same step: on Linux the two folders are swapped atomically (``renameat2`` with
  ``RENAME_EXCHANGE``), elsewhere the old one is renamed aside first and put back if the
  new one cannot take its place. A publication that fails half-way (an error, Ctrl-C)
  removes its folder and leaves the old site as it was.
* **No write through a link.** Every file is created with ``O_CREAT | O_EXCL |
  O_NOFOLLOW`` relative to a descriptor of its folder (itself opened with ``O_NOFOLLOW``):
  it is a new inode or the write fails, whatever a symbolic or hard link, or a renamed
  parent, says. Names are checked (:func:`referee.publish.paths.file_name`): one path
  component each, from the site's own slugs.
* **In place, one whole file at a time** (:class:`LiveFolder`). A league's site would grow
  without end if written whole: each file is written under a new name (``O_EXCL``, as
  above) and renamed over the old one, so a reader sees the old page or the new, never half
  of one.
* **Never into the results.** ``--out`` may not be the results folder, lie under it or
  hold it (:func:`check_target`): replacing the site deletes the old one.

Replay logs are copied, not hard-linked (:meth:`SiteFolder.write`), though the site never
writes to a file twice: a link would make every published log the very inode of the
stored evidence, so whatever anyone later does to the published copy (an editor saving in
place, a deploy script that rewrites or truncates files, a ``chmod`` to serve it) would
happen to the results and fail ``referee verify``. The copy costs a small share of a
publication and some disk (docs/performance.md, "Publishing").
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from referee.errors import UsageError
from referee.publish.paths import file_name

__all__ = [
    "LIVE_MARKER_TEXT",
    "MARKER_TEXT",
    "SITE_MARKER",
    "LiveFolder",
    "SiteFolder",
    "check_target",
]

SITE_MARKER = ".referee-site"
"""A file in every published folder: ``publish`` replaces such a folder, no other."""
MARKER_TEXT = b"written by referee publish; publishing again replaces it\n"
LIVE_MARKER_TEXT = b"written by referee publish; publishing again updates it\n"
_SUBFOLDERS = ("bots", "matches", "static", "verification")
_LIVE_SUBFOLDERS = ("bots", "matches", "static")
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_target(out: Path, results_dir: Path) -> Path:
    """``out`` resolved, if a site may be written there; else a ``UsageError`` saying why.

    It must be new, an empty folder or a site published before (a folder holding
    :data:`SITE_MARKER`), and neither the results folder, nor under it, nor above it.
    """
    target = out.resolve()
    results = results_dir.resolve()
    if _inside(target, results):
        raise UsageError(
            f"--out {out} is inside the results folder {results_dir}; the site must not "
            "write among the results it shows: name a folder outside it"
        )
    if _inside(results, target):
        raise UsageError(
            f"--out {out} holds the results folder {results_dir}; publishing replaces the "
            "whole folder: name a folder of its own for the site"
        )
    if target.exists() and not target.is_dir():
        raise UsageError(f"--out {out} is a file; name a folder for the site")
    _check_replaceable(target, out)
    return target


def _check_replaceable(target: Path, out: Path) -> None:
    """Refuse to replace a folder that holds anything but a published site."""
    if target.is_dir() and any(target.iterdir()) and not _is_marker(target / SITE_MARKER):
        raise UsageError(
            f"--out {out} is not empty and holds no site published by the referee; "
            "name a new or empty folder (publishing again into a published site replaces it)"
        )


def _is_marker(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


class _Descriptors:
    """A site folder and its subfolders, each held open by a descriptor (``O_NOFOLLOW``), and
    files created in them relative to those descriptors, never through a link."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def _open(self, root: Path, subfolders: tuple[str, ...], *, fresh: bool) -> None:
        """Hold ``root`` and its ``subfolders`` open, making the subfolders (``fresh``: they
        must be new)."""
        self._fds[""] = os.open(root, _DIR_FLAGS)
        for sub in subfolders:
            try:
                os.mkdir(sub, 0o755, dir_fd=self._fds[""])
            except FileExistsError:
                if fresh:
                    raise
            self._fds[sub] = os.open(sub, _DIR_FLAGS, dir_fd=self._fds[""])

    def _fd(self, folder: str) -> int:
        if folder not in self._fds:
            raise ValueError(f"not a folder of the site: {folder!r}")
        return self._fds[folder]

    def _create(self, fd_dir: int, name: str, data: bytes) -> None:
        """A new file ``name`` in the folder ``fd_dir`` holding ``data`` (``O_EXCL``)."""
        fd = os.open(name, _FILE_FLAGS, 0o644, dir_fd=fd_dir)
        with open(fd, "wb", closefd=True) as out:
            out.write(data)

    def _close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


class SiteFolder(_Descriptors):
    """A site being written: a fresh folder next to ``target`` with ``bots/``, ``matches/``
    and ``static/``. Use it as a context manager: leaving the block by an exception
    removes the folder; :meth:`commit` puts it in ``target``'s place.

    ``exchange`` swaps two folders in one step, or says it cannot (:func:`_exchange`, the
    kernel's ``renameat2``; a test's stand-in for a system without it).
    """

    def __init__(
        self, target: Path, *, exchange: Callable[[Path, Path], bool] | None = None
    ) -> None:
        super().__init__()
        self.target = target
        self._exchange = exchange if exchange is not None else _exchange
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(
            tempfile.mkdtemp(prefix=f".{_short(target)}.publishing-", dir=target.parent)
        )
        try:
            self._open(self.path, _SUBFOLDERS, fresh=True)
            self._create(self._fds[""], SITE_MARKER, MARKER_TEXT)
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> SiteFolder:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.abort()

    def write(self, folder: str, stem: str, suffix: str, data: bytes) -> int:
        """Create ``folder/stem+suffix`` (``folder`` ``""`` for the top) holding ``data``:
        always a new file (see the module); returns its size."""
        self._create(self._fd(folder), file_name(stem, suffix), data)
        return len(data)

    def commit(self) -> None:
        """Put the finished site in ``target``'s place, replacing a site published there."""
        root = self._fds[""]
        # The folder was private while written; it takes the old site's mode, or the one a
        # new folder gets here (the umask applied to the subfolders' 0755).
        try:
            mode = stat.S_IMODE(self.target.stat().st_mode)
        except FileNotFoundError:
            mode = stat.S_IMODE(os.stat("bots", dir_fd=root).st_mode)
        os.chmod(root, mode)
        self._close()
        _check_replaceable(self.target, self.target)  # again: files may have come meanwhile
        if not self.target.exists():
            os.rename(self.path, self.target)
            return
        if self._exchange(self.path, self.target):
            old = self.path  # the swap left the old site where the new one was written
        else:
            old = self.target.with_name(f".{_short(self.target)}.old-{secrets.token_hex(6)}")
            os.rename(self.target, old)
            try:
                os.rename(self.path, self.target)
            except BaseException:
                os.rename(old, self.target)
                raise
        # The new site is in place: an old page that cannot be removed is only litter.
        shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        """Remove the folder being written (the target is not touched)."""
        self._close()
        shutil.rmtree(self.path, ignore_errors=True)


class LiveFolder(_Descriptors):
    """A league's site, written in place: each file a new one renamed over the old (see the
    module), the folder and ``bots/``, ``matches/``, ``static/`` made when missing. Use it as
    a context manager: it closes its descriptors; what it wrote stays."""

    def __init__(self, target: Path) -> None:
        super().__init__()
        target.mkdir(parents=True, exist_ok=True)
        self.target = target
        try:
            self._open(target, _LIVE_SUBFOLDERS, fresh=False)
        except BaseException:
            self._close()
            raise

    def __enter__(self) -> LiveFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def write(self, folder: str, stem: str, suffix: str, data: bytes) -> int:
        """Put ``folder/stem+suffix`` in place holding ``data``; returns its size."""
        self._replace(folder, file_name(stem, suffix), data)
        return len(data)

    def marker(self) -> None:
        """The file that makes the folder a site :func:`check_target` lets be updated."""
        self._replace("", SITE_MARKER, LIVE_MARKER_TEXT)

    def remove(self, folder: str, suffix: str) -> None:
        """Remove every file of ``folder`` whose name ends in ``suffix`` (never through a
        link: names in the folder's own descriptor)."""
        fd_dir = self._fd(folder)
        for name in os.listdir(fd_dir):
            if name.endswith(suffix):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd_dir)

    def read(self, name: str) -> bytes | None:
        """The file ``name`` at the top of the site (never through a link); ``None`` when
        there is none."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._fd(""))
        except FileNotFoundError:
            return None
        with open(fd, "rb", closefd=True) as handle:
            return handle.read()

    def _replace(self, folder: str, name: str, data: bytes) -> None:
        fd_dir = self._fd(folder)
        temporary = f".{name}.{secrets.token_hex(6)}.new"
        try:
            self._create(fd_dir, temporary, data)
            os.rename(temporary, name, src_dir_fd=fd_dir, dst_dir_fd=fd_dir)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=fd_dir)
            raise


def _short(target: Path) -> str:
    """The start of ``target``'s name, for the names of the folders beside it (a name of 255
    bytes plus a suffix would be too long)."""
    return target.name[:40]


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux ``renameat2``); ``False`` where that is not
    available (another system, an old kernel or C library, a file system without it)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError, TypeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, f"cannot swap {b} for the new site: {os.strerror(code)}")
