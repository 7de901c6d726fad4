"""Framing: a started bot's byte streams as timed lines, its stderr kept, its exit noticed.

A :class:`LineChannel` knows nothing of the protocol (that is :mod:`referee.protocol.session`). It
reads the bot's stdout into lines of at most :data:`LINE_CAP` bytes (a ``\\r`` before the
``\\n`` is not counted), never buffering more than one line's worth; stamps each line with
the moment it arrived, so a moment the referee spends elsewhere is never charged to the bot;
keeps the last :data:`STDERR_CAP` bytes of stderr, each piece with the match position it was
read at and what was cut counted, counting the marker lines a bot kit writes there when its
safety net replaced a decision (:mod:`referee.protocol.kit`); and notices when the process
exits even if a grandchild still holds the pipe.

Lines go to whoever awaits one (:meth:`LineChannel.read`). A line that comes while nobody
awaits it is *unasked*: it is counted, only the first few are kept as evidence (cut), and past
:data:`UNASKED_CAP` the reader stops framing and only counts, so a flooding bot cannot grow
the referee's memory. Writes are batched: :meth:`queue` keeps lines until :meth:`flush` (or
the next :meth:`send`) writes them in one go.

Arrival times and the wait for a line written just before an exit come from the channel's
:class:`~referee.clock.Clock` (the real one unless a test gives a fake).

Stderr is kept as pieces, each stamped with :attr:`LineChannel.stderr_at` as it was when the
piece was read: the match sets it to the log line of the decision it is about to ask for, so
what a bot writes while it thinks is filed under the move it led to. What a bot writes
before its reply is read before the match sees the reply: it is in the pipe (with Docker, in
the attach stream's earlier frames) when the reply line is, so both are taken in the same
turn of the event loop and the match wakes a turn later. (The backends' readers are
:class:`~referee.sandbox.base.DirectReader` ones, which hand their bytes to the channel in
the transport's callback, so the match wakes in the turn after the bytes came; another
reader is read by a task, a turn later for both streams alike.) Only a flood larger than
the stream's buffer may still be being read then; its tail keeps the position unless that
seat is asked again first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass

from referee.clock import Clock, MonotonicClock
from referee.protocol.kit import KIT_MARKER, KIT_NOTES, NOTE_BYTES
from referee.protocol.messages import MAX_LINE_BYTES
from referee.sandbox.base import BotProcess, DirectReader, ExitInfo

__all__ = [
    "EOF",
    "EXITED",
    "LINE_CAP",
    "OVERLONG",
    "STDERR_CAP",
    "UNASKED_CAP",
    "KeptStderr",
    "LineChannel",
]

LINE_CAP = MAX_LINE_BYTES
STDERR_CAP = 64 * 1024
"""Bytes of stderr kept per match (the last ones); what came before is cut and counted."""
UNASKED_CAP = 8
"""Lines nobody asked for after which a bot's output is discarded unread (it is faulted)."""
UNASKED_KEPT = 256
"""Bytes kept of each unasked line (the first one is kept whole, as a fault's evidence)."""
_EXIT_SETTLE_S = 0.1
_READ_SIZE = 65536


@dataclass(frozen=True)
class Marker:
    """Something other than a line came from the bot."""

    what: str


OVERLONG = Marker("a line longer than the cap")
EOF = Marker("end of stdout")
EXITED = Marker("the process exited")

Item = tuple[bytes, float] | Marker
"""A line and the moment it arrived (the channel's ``clock.monotonic()``), or a marker."""


@dataclass(frozen=True)
class KeptStderr:
    """A bot's stderr since the match began, as kept: ``pieces`` of ``(position, bytes)`` in
    the order they came (``position`` is :attr:`LineChannel.stderr_at` when they were read;
    consecutive reads at one position are one piece), and ``cut``, the bytes dropped before
    them to keep the last :data:`STDERR_CAP`. The first piece may start inside a character."""

    pieces: tuple[tuple[int, bytes], ...]
    cut: int


class LineChannel:
    """The framed streams of one bot process (see the module docstring)."""

    def __init__(self, proc: BotProcess, clock: Clock | None = None) -> None:
        self.proc = proc
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.exit_info: ExitInfo | None = None
        self.unasked = 0
        self.unasked_line: bytes | None = None
        self.unasked_lines: list[bytes] = []
        """The first unasked lines (at most :data:`UNASKED_CAP`, each cut to
        :data:`UNASKED_KEPT` bytes): what a bot wrote after a line it should not have."""
        self._unasked_came = asyncio.Event()
        self._items: deque[Item] = deque()
        self._waiter: asyncio.Future[None] | None = None  # the reader's, while none is held
        self._awaiting = False
        self._line = bytearray()  # the start of the stdout line not ended yet
        self._discard = False  # past a fault: stdout is only drained (and maybe counted)
        self._flooded = False  # past UNASKED_CAP unasked lines: counted as they come
        self.outbox: list[bytes] = []
        """Lines to write with the next :meth:`flush` or :meth:`send`, in order."""
        self.stderr_at = 0
        """The match position stderr read from now on is filed under (see the module)."""
        self._stderr: deque[tuple[int, bytearray]] = deque()
        self._stderr_kept = 0
        self._stderr_dropped = 0
        self.kit_replaced = 0
        """Marker lines of the bot's kit on stderr since the last :meth:`new_section`."""
        self.kit_notes: list[bytes] = []
        """The first :data:`~referee.protocol.kit.KIT_NOTES` of them (cut)."""
        self._stderr_line = b""  # the start of the stderr line not ended yet
        self._startup_stderr: bytes | None = None
        self._closed: ExitInfo | None = None
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
            asyncio.create_task(self._watch_exit()),
        ]

    # -- reading ---------------------------------------------------------------------

    def expect(self) -> None:
        """The next line answers a request about to be written: it is not unasked."""
        self._awaiting = True

    async def read(self) -> Item:
        """The next line (or marker) after :meth:`expect` (one reader at a time).

        A deque and one future rather than an ``asyncio.Queue``: this is on every request's
        path, and the queue's bookkeeping (getters, putters, unfinished tasks) is a
        measurable share of the referee's CPU per request (docs/performance.md).
        """
        items = self._items
        while not items:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return items.popleft()

    def _put(self, item: Item) -> None:
        self._items.append(item)
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def held_lines(self) -> int:
        """How many lines wait to be read (an unasked line is counted, never held)."""
        return sum(isinstance(item, tuple) for item in self._items)

    async def more_unasked(self) -> None:
        """Return once another unasked line came (the caller bounds the wait)."""
        seen = self.unasked
        while self.unasked == seen:
            self._unasked_came.clear()
            await self._unasked_came.wait()

    def push_back(self, item: Marker) -> None:
        """Keep a marker for the next :meth:`read` (the bot stays gone)."""
        self._put(item)

    async def _read_stdout(self) -> None:
        """Read the bot's stdout to its end, each chunk framed by :meth:`_take`.

        A :class:`~referee.sandbox.base.DirectReader` hands its chunks to :meth:`_take`
        itself, as they come (one turn of the loop fewer per reply): then this only waits
        for the end of the stream.
        """
        reader = self.proc.stdout
        if isinstance(reader, DirectReader):
            reader.divert(self._take)
        try:
            while chunk := await reader.read(_READ_SIZE):
                self._take(chunk)
        except (ConnectionError, OSError):
            pass
        self._put(EOF)

    def _take(self, chunk: bytes) -> None:
        """Frame ``chunk`` into lines: to the awaiting reader, or counted as unasked."""
        arrived = self.clock.monotonic()
        if self._discard:
            # Keep the stream flowing (and dropped) until the bot is gone; a flood is
            # still counted, at C speed, for the fault detail.
            if self._flooded:
                self.unasked += chunk.count(b"\n")
            return
        buf = self._line
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            end = nl - 1 if nl > start and buf[nl - 1] == 0x0D else nl
            if end - start > LINE_CAP:  # a \r before the \n is not counted
                self._put(OVERLONG)
                self._discard = True
                break
            if self._awaiting:
                self._awaiting = False
                self._put((bytes(buf[start:nl]), arrived))
            else:
                self.unasked += 1
                if self.unasked_line is None:
                    self.unasked_line = bytes(buf[start:nl])
                self.unasked_lines.append(bytes(buf[start : min(nl, start + UNASKED_KEPT)]))
                self._unasked_came.set()
                if self.unasked >= UNASKED_CAP:
                    self.unasked += buf.count(b"\n", nl + 1)
                    self._discard = self._flooded = True
                    break
            start = nl + 1
        if self._discard:
            buf.clear()
            return
        del buf[:start]
        if len(buf) > LINE_CAP + 1:
            # Never buffer more than one line's worth (and its \r): a fault.
            buf.clear()
            self._discard = True
            self._put(OVERLONG)

    async def _read_stderr(self) -> None:
        """Keep the bot's stderr to its end (diverted as stdout is: a reply's stderr is
        kept before the match sees the reply, as the module docstring says)."""
        reader = self.proc.stderr
        if isinstance(reader, DirectReader):
            reader.divert(self._take_stderr)
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await reader.read(_READ_SIZE):
                self._take_stderr(chunk)
            if self._stderr_line.startswith(KIT_MARKER):  # its last, unended line
                self._kit_marker(self._stderr_line)

    def _take_stderr(self, chunk: bytes) -> None:
        self._count_markers(chunk)
        self._keep_stderr(chunk)

    def _keep_stderr(self, chunk: bytes) -> None:
        """Add ``chunk`` at the current position, then cut the oldest bytes over the cap."""
        pieces = self._stderr
        if pieces and pieces[-1][0] == self.stderr_at:
            pieces[-1][1].extend(chunk)
        else:
            pieces.append((self.stderr_at, bytearray(chunk)))
        self._stderr_kept += len(chunk)
        excess = self._stderr_kept - STDERR_CAP
        while excess > 0:
            first = pieces[0][1]
            if len(first) <= excess:
                pieces.popleft()
                cut = len(first)
            else:
                del first[:excess]  # a bytearray drops its head without copying the rest
                cut = excess
            self._stderr_kept -= cut
            self._stderr_dropped += cut
            excess -= cut

    def _count_markers(self, chunk: bytes) -> None:
        """Count the kit's marker lines that ``chunk`` ends (a marker starts a line).

        Only the start of an unended line is carried to the next chunk (it holds no
        newline, so gluing it to the next chunk can start no line that was not there).
        """
        data = self._stderr_line + chunk
        end = data.rfind(b"\n")
        if end < 0:
            self._stderr_line = data[:NOTE_BYTES]
            return
        if data.startswith(KIT_MARKER):
            self._kit_marker(data[: data.find(b"\n")])
        if len(self.kit_notes) >= KIT_NOTES:  # only counted now, at C speed (a flood)
            self.kit_replaced += data.count(b"\n" + KIT_MARKER, 0, end)
            self._stderr_line = data[end + 1 : end + 1 + NOTE_BYTES]
            return
        found = data.find(b"\n" + KIT_MARKER, 0, end)
        while found >= 0:
            line_end = data.find(b"\n", found + 1)
            self._kit_marker(data[found + 1 : line_end])
            found = data.find(b"\n" + KIT_MARKER, line_end, end)
        self._stderr_line = data[end + 1 : end + 1 + NOTE_BYTES]

    def _kit_marker(self, line: bytes) -> None:
        self.kit_replaced += 1
        if len(self.kit_notes) < KIT_NOTES:
            self.kit_notes.append(line[:NOTE_BYTES])

    async def _watch_exit(self) -> None:
        info = await self.proc.wait()
        if info is None:
            return
        self.exit_info = info
        # Let a line written just before the exit reach the queue first.
        with contextlib.suppress(TimeoutError):
            async with self.clock.timeout(_EXIT_SETTLE_S):
                await asyncio.shield(self._tasks[0])
        self._put(EXITED)

    async def settle_exit(self) -> ExitInfo | None:
        """How the process ended, waiting a moment when its stdout just closed."""
        if self.exit_info is None:
            self.exit_info = await self.proc.wait(_EXIT_SETTLE_S * 2)
        return self.exit_info

    # -- stderr --------------------------------------------------------------------------

    def new_section(self) -> None:
        """A match starts: :meth:`stderr_tail` keeps what the bot writes from now on.

        What it wrote before its first match (its start-up output) is kept apart
        (:meth:`startup_stderr`): that is where a bot explains a failed start.
        """
        if self._startup_stderr is None:
            self._startup_stderr = self._stderr_bytes()[-4096:]
        self._stderr.clear()
        self._stderr_kept = 0
        self._stderr_dropped = 0
        self.kit_replaced = 0
        self.kit_notes = []

    def _stderr_bytes(self) -> bytes:
        return b"".join(data for _, data in self._stderr)

    def stderr_tail(self, limit: int = STDERR_CAP) -> str:
        """The stderr kept since the last :meth:`new_section` (its last ``limit`` bytes)."""
        kept = self._stderr_bytes()
        text = kept[-limit:].decode("utf-8", errors="replace")
        if self._stderr_dropped and limit >= len(kept):
            text = f"[… {self._stderr_dropped} earlier bytes dropped]\n" + text
        return text

    def stderr_kept(self) -> KeptStderr:
        """The stderr kept since the last :meth:`new_section`, piece by piece."""
        return KeptStderr(
            tuple((at, bytes(data)) for at, data in self._stderr), self._stderr_dropped
        )

    def startup_stderr(self) -> str:
        """What the bot wrote to stderr before its first match (its last 4 KiB)."""
        return (self._startup_stderr or b"").decode("utf-8", errors="replace")

    # -- writing -------------------------------------------------------------------------

    def queue(self, data: bytes) -> None:
        """Keep ``data`` to write with the next :meth:`flush` or :meth:`send`."""
        self.outbox.append(data)

    async def flush(self) -> None:
        """Write what is queued; ``ConnectionError``/``OSError`` when the bot is gone.

        Blocks while the bot does not read: the caller bounds it with its time control.
        """
        if self.outbox:
            data = b"".join(self.outbox)
            self.outbox.clear()
            await self.proc.write(data)

    def send(self, data: bytes) -> Awaitable[None]:
        """Write the queued lines and ``data`` in one go (an awaitable, as :meth:`flush`)."""
        self.outbox.append(data)
        payload = b"".join(self.outbox)
        self.outbox.clear()
        return self.proc.write(payload)

    # -- the end -------------------------------------------------------------------------

    async def close(self) -> ExitInfo:
        """Kill and reap the process, stop the readers; returns how the process ended.

        Closing again returns the same: whoever owns the channel may close it once more.
        """
        if self._closed is not None:
            return self._closed
        info = await self.proc.cleanup()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.exit_info is None:
            self.exit_info = info
        self._closed = info
        return info
