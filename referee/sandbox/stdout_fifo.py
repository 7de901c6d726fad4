"""A bot's stdout through a FIFO that only the bot holds, so that a closed stdout is seen.

A sandbox's own processes keep a copy of every descriptor they were started with:
bubblewrap's monitor and its pid-1 helper, and Docker's init (``docker-init``). A bot that
closed its stdout showed no end of file then, only silence, and was faulted as a timeout
after its whole time bank. (Docker's attach stream cannot say it either: stdout and stderr
share one socket, which ends only when the container does.)

So under bubblewrap and in Docker the bot's stdout is not inherited at all. The referee
makes a FIFO in a private folder of its own (``mkdtemp``) and opens the FIFO's read end;
the sandbox mounts the FIFO at :data:`INSIDE_PATH`; a shell inside opens it for writing and
``exec``s the bot (:meth:`StdoutFifo.shim`). Only the bot's processes ever hold the write
end, so when the last of them closes it the referee reads end of file at once, and the bot
is faulted as a ``crash`` ("closed its stdout"), as without a sandbox.

Measured (kernel 6.x): epoll reports no hang-up on a FIFO whose writer never came, so the
read end can be opened, and handed to asyncio, before the bot starts; a FIFO on a
read-only mount can still be opened for writing (FIFOs are exempt from a mount's read-only
flag), so the mount is read-only like everything else the bot sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["INSIDE_PATH", "StdoutFifo"]

INSIDE_PATH = "/run/referee/stdout"
"""Where the FIFO appears inside the sandbox (the bot never needs to know)."""

# Opens the FIFO as stdout, then becomes the bot; the environment passes unchanged (the
# shell adds nothing the sandbox had not set: bubblewrap and Docker set PWD themselves).
_SHIM = 'exec >"$1" || exit 125; shift; exec "$@"'
_SHELL = "/bin/sh"


class StdoutFifo:
    """One bot's stdout FIFO: its folder, its read end, and the transport reading it."""

    def __init__(self, folder: Path, read_fd: int) -> None:
        self.folder = folder
        self.path = folder / "stdout"
        self._read_fd: int | None = read_fd
        self._transport: asyncio.ReadTransport | None = None

    @classmethod
    def create(cls, *, owner: tuple[int, int] | None = None, anyone: bool = False) -> StdoutFifo:
        """Make the FIFO and open its read end (no writer needed yet).

        ``owner`` (uid, gid) gets the folder and the FIFO (the bot's own uid, whose
        bubblewrap must reach the folder to mount it); ``anyone`` lets every user write to
        the FIFO, for a container user the referee cannot ``chown`` to: the folder stays
        private, so the FIFO is reachable only through the sandbox's mount.
        """
        folder = Path(tempfile.mkdtemp(prefix="referee-stdout-"))
        try:
            fifo = folder / "stdout"
            os.mkfifo(fifo, 0o600)
            if owner is not None:
                os.chown(folder, *owner)
                os.chown(fifo, *owner)
            if anyone:
                os.chmod(fifo, 0o666)
            read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(folder, read_fd)

    def shim(self) -> list[str]:
        """The argv prefix, run inside the sandbox, that makes the FIFO stdout and runs the
        argv that follows it."""
        return [_SHELL, "-c", _SHIM, "referee-stdout", INSIDE_PATH]

    async def open_reader(self, limit: int) -> asyncio.StreamReader:
        """The read end as a stream reader (flow control and end of file are asyncio's)."""
        assert self._read_fd is not None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        pipe = os.fdopen(self._read_fd, "rb", buffering=0)
        self._read_fd = None  # the transport owns it now
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
        return reader

    def close(self) -> None:
        """Close the read end and remove the folder. Idempotent, never raises."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if self._read_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._read_fd)
            self._read_fd = None
        shutil.rmtree(self.folder, ignore_errors=True)
