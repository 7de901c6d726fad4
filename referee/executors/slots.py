"""Worker slots lent by a local pool to work of another process: a server's checks.

A competition server checks uploads and plays comparisons on the machine where the
league's local pool plays its matches. Run beside the pool's ``N`` workers, each of them
would be one process more than the cores the organiser gave the league, and an honest bot
in a match could miss its time limit while a check runs. So the server **borrows** a slot
of the pool for each check and each comparison, for as long as it runs, and the league's
coordinator plays that many matches fewer at once (:class:`~referee.executors.local.
LocalExecutor`, ``lender``): the checks are a share of the league's worker slots while the
queue is not empty, and the league has every slot back when it is.

The mechanism is a folder of lock files (``slots/`` in the league's results folder): a
borrower holds an exclusive ``flock`` on a file ``slot-<name>`` of its own while its work
runs (:meth:`WorkerSlots.borrow`); the coordinator counts the files locked now
(:meth:`WorkerSlots.borrowed`: a non-blocking lock tried on each, released at once)
before it hands out a match. A ``flock`` belongs to the open file, so a borrower that dies,
even by SIGKILL, gives its slot back with it: no stale count survives a crash. The count
is read between matches, never during one: a check that starts waits for no match, and
the pool plays at most ``N - borrowed`` matches (never fewer than one: the league never
stops for the server's work) from its next hand-out on.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["SLOTS", "WorkerSlots"]

SLOTS = "slots"
"""The folder of the slot files, in a league's results folder."""

_PREFIX = "slot-"
_NAME = re.compile(r"[a-z0-9-]{1,64}")


class WorkerSlots:
    """The slot files in ``folder`` (which need not exist until a slot is borrowed)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @contextlib.contextmanager
    def borrow(self, name: str) -> Iterator[None]:
        """Hold the slot ``name`` (lower-case letters, digits and ``-``) for the block; one
        holder per name (a second waits for the first)."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"a slot's name is [a-z0-9-]{{1,64}}, not {name!r}")
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.folder / f"{_PREFIX}{name}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # the lock goes with the file description

    def borrowed(self) -> int:
        """How many slots are held now, by any process (0 when the folder is missing)."""
        try:
            names = [n for n in os.listdir(self.folder) if n.startswith(_PREFIX)]
        except OSError:
            return 0
        held = 0
        for name in names:
            try:
                fd = os.open(self.folder / name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    held += 1
            finally:
                os.close(fd)
        return held
