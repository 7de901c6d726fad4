"""A bot's stdout (and in Docker its stdin and stderr) through FIFOs only the bot holds.

**Stdout**, so that a closed stdout is seen. A sandbox's own processes keep a copy of every
descriptor they were started with: bubblewrap's monitor and its pid-1 helper, and Docker's
init (``docker-init``). A bot that closed its stdout showed no end of file then, only
silence, and was faulted as a timeout after its whole time bank. (Docker's attach stream
cannot say it either: stdout and stderr share one socket, which ends only when the
container does.)

So under bubblewrap and in Docker the bot's stdout is not inherited at all. The referee
makes a FIFO in a private folder of its own (``mkdtemp``) and opens the FIFO's read end;
the sandbox mounts the FIFO at :data:`INSIDE_PATH`; a shell inside opens it for writing and
``exec``s the bot (:meth:`StdoutFifo.shim`). Only the bot's processes ever hold the write
end, so when the last of them closes it the referee reads end of file at once, and the bot
is faulted as a ``crash`` ("closed its stdout"), as without a sandbox.

**Stdin and stderr**, in Docker (``stdio=True``), for speed and order. Through the attach
socket every request crossed dockerd and containerd-shim on its way in (a round trip cost 2
to 7 times the process backend's); a FIFO mounted at :data:`STDIN_INSIDE_PATH` carries it
kernel to kernel like a pipe. The shell opens it for reading last; that open waits for a
writer, and the referee's open of the write end fails (``ENXIO``) until a reader is there,
so the referee polls for it (:meth:`StdoutFifo.open_writer`; the first write waits for it,
within the request's time). Only the bot's processes hold the read end, so a write after
they have all gone fails (``BrokenPipeError``), and closing the write end is the bot's end
of file. Stderr gets a FIFO too (:data:`STDERR_INSIDE_PATH`): through the daemon it came
later than a reply written after it on the stdout FIFO, so a short match could end before
the bot's last words on stderr arrived; two FIFOs are read in the same turn of the event
loop, as two pipes are.

Measured (kernel 6.x): epoll reports no hang-up on a FIFO whose writer never came, so the
read end can be opened, and handed to asyncio, before the bot starts; a FIFO on a
read-only mount can still be opened for writing (FIFOs are exempt from a mount's read-only
flag), so the mount is read-only like everything else the bot sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

from referee.sandbox.base import DirectReader

__all__ = ["INSIDE_PATH", "STDERR_INSIDE_PATH", "STDIN_INSIDE_PATH", "FifoWriter", "StdoutFifo"]

INSIDE_PATH = "/run/referee/stdout"
"""Where the stdout FIFO appears inside the sandbox (the bot never needs to know)."""
STDIN_INSIDE_PATH = "/run/referee/stdin"
"""Where the stdin FIFO appears inside the sandbox, when there is one."""
STDERR_INSIDE_PATH = "/run/referee/stderr"
"""Where the stderr FIFO appears inside the sandbox, when there is one."""

# Opens the FIFO as stdout (and the others as stderr and stdin, stdin last: its open waits
# for the referee), then becomes the bot; the environment passes unchanged (the shell adds
# nothing the sandbox had not set: bubblewrap and Docker set PWD themselves).
_SHIM = 'exec >"$1" || exit 125; shift; exec "$@"'
_SHIM_STDIO = 'exec >"$1" 2>"$2" <"$3" || exit 125; shift 3; exec "$@"'
_SHELL = "/bin/sh"
_POLL_FIRST_S = 0.001
_POLL_MAX_S = 0.01


class FifoWriter(asyncio.BaseProtocol):
    """The write end of a stdin FIFO, driven by an asyncio pipe transport.

    :meth:`send` writes with the transport's flow control, as a ``StreamWriter`` would; once
    every reader is gone (the transport notices the hang-up at once) it raises
    ``BrokenPipeError``.
    """

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._writable.set()  # a writer waiting for the bot to read learns it never will

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def send(self, data: bytes) -> None:
        """Write ``data``; wait while the transport's buffer is above its high-water mark.

        A bot that does not read keeps this waiting: the caller's time control bounds it.
        """
        transport = self._transport
        if self.lost or transport is None or transport.is_closing():
            raise BrokenPipeError("the bot's stdin is closed")
        transport.write(data)
        if transport.is_closing():
            await asyncio.sleep(0)  # the write failed: connection_lost runs next
        while not self._writable.is_set():
            await self._writable.wait()
        if self.lost:
            raise BrokenPipeError("the bot's stdin is closed")

    def close(self) -> None:
        """Close once what was written has gone into the pipe: the bot reads end of file."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def abort(self) -> None:
        """Close now, dropping what was not written yet (a closed transport stays closed)."""
        if self._transport is not None and not self.lost:
            self._transport.abort()


class StdoutFifo:
    """One bot's stdout FIFO (and stdin and stderr FIFOs): their folder, ends and transports."""

    def __init__(self, folder: Path, read_fd: int, stderr_fd: int | None = None) -> None:
        self.folder = folder
        self.path = folder / "stdout"
        stdio = stderr_fd is not None
        self.stdin_path: Path | None = folder / "stdin" if stdio else None
        self.stderr_path: Path | None = folder / "stderr" if stdio else None
        self._read_fds: dict[str, int] = {"stdout": read_fd}
        if stderr_fd is not None:
            self._read_fds["stderr"] = stderr_fd
        self._transports: list[asyncio.ReadTransport] = []
        self._writer: FifoWriter | None = None

    @classmethod
    def create(
        cls, *, owner: tuple[int, int] | None = None, anyone: bool = False, stdio: bool = False
    ) -> StdoutFifo:
        """Make the FIFO and open its read end (no writer needed yet); ``stdio``: the stderr
        FIFO too (read end opened likewise) and the stdin FIFO (its write end is opened once
        the bot is there, :meth:`open_writer`).

        ``owner`` (uid, gid) gets the folder and the FIFO (the bot's own uid, whose
        bubblewrap must reach the folder to mount it); ``anyone`` lets every user write to
        the stdout and stderr FIFOs and read the stdin FIFO, for a container user the
        referee cannot ``chown`` to: the folder stays private, so the FIFOs are reachable
        only through the sandbox's mounts.
        """
        folder = Path(tempfile.mkdtemp(prefix="referee-stdout-"))
        opened: list[int] = []
        try:
            names = ("stdout", "stderr") if stdio else ("stdout",)
            for name in names:
                os.mkfifo(folder / name, 0o600)
                if owner is not None:
                    os.chown(folder / name, *owner)
                if anyone:
                    os.chmod(folder / name, 0o666)
            if stdio:
                os.mkfifo(folder / "stdin", 0o600)
                if anyone:
                    os.chmod(folder / "stdin", 0o644)
            if owner is not None:
                os.chown(folder, *owner)
            for name in names:
                opened.append(os.open(folder / name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        except BaseException:
            for fd in opened:
                os.close(fd)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(folder, opened[0], opened[1] if stdio else None)

    def shim(self) -> list[str]:
        """The argv prefix, run inside the sandbox, that makes the FIFO stdout (and the
        others stderr and stdin) and runs the argv that follows it."""
        if self.stdin_path is not None:
            paths = [INSIDE_PATH, STDERR_INSIDE_PATH, STDIN_INSIDE_PATH]
            return [_SHELL, "-c", _SHIM_STDIO, "referee-stdio", *paths]
        return [_SHELL, "-c", _SHIM, "referee-stdout", INSIDE_PATH]

    async def open_reader(self, limit: int, stream: str = "stdout") -> asyncio.StreamReader:
        """The read end of ``stream`` (``stdout``, or ``stderr`` with ``stdio``) as a stream
        reader (flow control and end of file are asyncio's)."""
        fd = self._read_fds.pop(stream)  # the transport owns it now
        loop = asyncio.get_running_loop()
        reader = DirectReader(limit=limit, loop=loop)
        pipe = os.fdopen(fd, "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
        self._transports.append(transport)
        return reader

    async def open_writer(self, gone: asyncio.Event) -> FifoWriter | None:
        """The stdin FIFO's write end, once the bot's side has opened the read end;
        ``None`` when ``gone`` (the sandbox has ended) is set first.

        Polled, every millisecond at first and every 10 at most: a blocking open would hold
        a thread until the bot comes, or forever if it never does.
        """
        assert self.stdin_path is not None
        delay = _POLL_FIRST_S
        while True:
            try:
                fd = os.open(self.stdin_path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: nobody reads it yet
                    raise
            if gone.is_set():
                return None
            await asyncio.sleep(delay)
            delay = min(2 * delay, _POLL_MAX_S)
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(fd, "wb", buffering=0)
        _, self._writer = await loop.connect_write_pipe(FifoWriter, pipe)
        return self._writer

    def close(self) -> None:
        """Close both ends and remove the folder. Idempotent, never raises."""
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        for transport in self._transports:
            transport.close()
        self._transports.clear()
        for fd in self._read_fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._read_fds.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
