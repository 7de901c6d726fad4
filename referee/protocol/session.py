"""The dialect: greeting a bot, asking it one thing at a time, saying goodbye.

A :class:`BotSession` speaks protocol v1 over a :class:`~referee.protocol.channel.LineChannel`
(framing is the channel's job, meaning is :mod:`referee.protocol.messages`'s): ``hello``/``ready``,
one request at a time timed against a budget, and ``bye``. Every way a bot can fail a
request becomes a :class:`~referee.errors.BotFault` with a detail written for its author.
Requests are timed on the channel's :class:`~referee.clock.Clock`.

Seating the bots of a match (starting and greeting them, borrowing them from a pool, and
cleaning up) is :mod:`referee.protocol.seats`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from referee.clock import Clock
from referee.errors import BotFault, InfrastructureError
from referee.protocol import messages as m
from referee.protocol.channel import (
    EOF,
    LINE_CAP,
    OVERLONG,
    UNASKED_CAP,
    KeptStderr,
    LineChannel,
)
from referee.protocol.kit import marker_id, read_marker
from referee.results import KitReplacement
from referee.sandbox.base import BotSpec, ExitInfo, Limits, Sandbox
from referee.specs import TimeControl
from referee.stderrlog import stderr_report

__all__ = [
    "BotSession",
    "SeatSession",
    "distinct_names",
]

_BYE_GRACE_S = 1.0


class SeatSession(Protocol):
    """Whoever sits at a seat, as a match sees it: a bot's :class:`BotSession`, or a person
    at the terminal (:class:`referee.match.human.PersonSession`) who is asked the same requests.

    This is all a :class:`~referee.match.runner.Match` touches of a seat: it queues events in
    the seat's ``outbox`` (the list written with the seat's next request, appended to
    directly on the match's hot path), asks requests, files the seat's stderr under the log
    line it names, and forfeits the seat through :meth:`forfeit`. How a seat frames lines or
    keeps its stderr (a bot's :class:`~referee.protocol.channel.LineChannel`) is its own.
    """

    @property
    def name(self) -> str: ...
    @property
    def alive(self) -> bool:
        """Still playing: no fault, not killed or closed."""
        ...

    @property
    def fault(self) -> BotFault | None:
        """Why the seat is out: its greeting's fault (a bot that failed ``hello``), or the
        fault it was forfeited for."""
        ...

    @property
    def outbox(self) -> list[bytes]:
        """The lines queued for the seat, written with its next request or :meth:`flush`."""
        ...

    @property
    def unasked(self) -> int:
        """How many lines the seat wrote when no request was waiting."""
        ...

    def queue(self, data: bytes) -> None: ...
    async def flush(self, timeout_s: float) -> None: ...
    async def request(
        self, data: bytes, request_id: int, kind: str, budget_ms: int
    ) -> tuple[m.Reply, bytes, int]: ...
    def unasked_fault(self, request_id: int | None = None) -> BotFault: ...
    async def forfeit(self, fault: BotFault) -> None:
        """Out for ``fault``: recorded as the seat's, then stopped (:meth:`kill`)."""
        ...

    async def kill(self) -> None: ...
    def start_stderr_section(self) -> None:
        """What the seat writes on stderr from now on is this match's, apart from start-up's."""
        ...

    def file_stderr_at(self, position: int) -> None:
        """File the seat's stderr read from now on under match log line ``position``."""
        ...

    def stderr_kept(self) -> KeptStderr: ...
    def stderr_report(self, limit: int = 4096) -> str: ...
    def last_request_data(self) -> dict[str, Any] | None: ...
    def kit_report(self) -> tuple[int, list[KitReplacement]]: ...


class BotSession:
    """A started bot that speaks the protocol: its channel, its name and its fault, if any."""

    def __init__(self, spec: BotSpec, channel: LineChannel, name: str) -> None:
        self.spec = spec
        self.channel = channel
        self.name = name
        self.fault: BotFault | None = None
        self.ready_name: str | None = None
        self.ready_ms: int | None = None
        """Milliseconds from the start of the process to its ``ready`` (the handshake)."""
        self.last_request: tuple[int, bytes] | None = None
        """The id and line of the last request written: a fault's context."""
        self.record: list[tuple[str, float]] | None = None
        """When a list, every answered request's kind and reply time (ms) is appended."""
        self.clock: Clock = channel.clock
        self._alarm = self.clock.alarm()  # the timeout of every request (see Alarm: speed)
        self._closed = False
        self._events_last = False  # the last write was events alone (a match's end)
        self._kit_requests: dict[int, bytes] = {}  # requests the kit's markers name

    @classmethod
    async def start(
        cls,
        sandbox: Sandbox,
        spec: BotSpec,
        limits: Limits,
        name: str | None = None,
        *,
        clock: Clock | None = None,
    ) -> BotSession:
        """Start ``spec`` in ``sandbox`` and begin reading its output, timed on ``clock``."""
        proc = await sandbox.start(spec, limits)
        return cls(spec, LineChannel(proc, clock), name or spec.name)

    @property
    def alive(self) -> bool:
        return self.fault is None and not self._closed

    @property
    def exit_info(self) -> ExitInfo | None:
        return self.channel.exit_info

    @property
    def outbox(self) -> list[bytes]:
        """The channel's queued lines (see :class:`SeatSession`)."""
        return self.channel.outbox

    @property
    def unasked(self) -> int:
        return self.channel.unasked

    def start_stderr_section(self) -> None:
        self.channel.new_section()

    def file_stderr_at(self, position: int) -> None:
        self.channel.stderr_at = position

    def stderr_kept(self) -> KeptStderr:
        return self.channel.stderr_kept()

    # -- events --------------------------------------------------------------------------

    def queue(self, data: bytes) -> None:
        """Queue an event; it is written with the next request or at the match end."""
        if self.alive:
            self.channel.queue(data)

    async def flush(self, timeout_s: float) -> None:
        """Write queued events; a bot that is gone or does not read gets a fault."""
        self._events_last = self._events_last or bool(self.channel.outbox)
        try:
            async with self.clock.timeout(timeout_s):
                await self.channel.flush()
        except (ConnectionError, OSError):
            raise self._crash("the bot closed its stdin or exited") from None
        except TimeoutError:
            raise BotFault(
                "timeout", f"the bot did not read its input for {timeout_s:.1f} s"
            ) from None

    # -- requests ------------------------------------------------------------------------

    async def request(
        self, data: bytes, request_id: int, kind: str, budget_ms: int
    ) -> tuple[m.Reply, bytes, int]:
        """Send a request (after queued events) and read its reply within ``budget_ms``.

        Returns the parsed reply, the raw line and the milliseconds from writing the
        request to the reply's arrival; raises :class:`BotFault` for a timeout, a crash, an
        unasked line or a protocol fault.
        """
        if self.channel.unasked:
            raise self.unasked_fault(request_id)
        channel = self.channel
        if channel.kit_notes:
            self._pair_markers()
        channel.expect()  # set before writing: a quick reply may come during the write
        self.last_request = (request_id, data)
        self._events_last = False
        events = len(channel.outbox)  # written with this request, before it
        start = self.clock.monotonic()
        try:
            with self._alarm.at(start + budget_ms / 1000):
                # A failed write means the bot is gone; the reason shows up as a marker.
                with contextlib.suppress(ConnectionError, OSError):
                    await channel.send(data)
                item = await channel.read()
        except TimeoutError:
            raise BotFault(
                "timeout",
                f"no reply within {budget_ms} ms (move_ms + bank left)",
                request_id=request_id,
                elapsed_ms=self._ms(start),
            ) from None
        if not isinstance(item, tuple):
            elapsed = self._ms(start)
            if item is OVERLONG:
                raise BotFault(
                    "protocol",
                    f"reply line longer than {LINE_CAP} bytes",
                    request_id=request_id,
                    elapsed_ms=elapsed,
                )
            channel.push_back(item)
            info = await channel.settle_exit() if item is EOF else channel.exit_info
            what = "closed its stdout" if info is None else "exited"
            raise self._crash(
                f"the bot {what} while a request was outstanding",
                request_id=request_id,
                elapsed_ms=elapsed,
            )
        line, arrived = item
        # Charged up to the line's arrival: the runner may get to it later (another bot's
        # reply, the log), and that time is the referee's, not the bot's.
        elapsed = int((arrived - start) * 1000)
        if elapsed > budget_ms:
            raise BotFault(
                "timeout",
                f"reply after {elapsed} ms; {budget_ms} ms were left (move_ms + bank)",
                request_id=request_id,
                reply=m.reply_excerpt(line),
                elapsed_ms=elapsed,
            )
        try:
            reply = m.parse_reply(line, request_id, kind)
        except BotFault as fault:
            fault.elapsed_ms = elapsed
            if events and _not_its_id(line, request_id):
                await self._name_event_reply(fault, request_id, events, budget_ms - elapsed)
            raise
        if self.record is not None:
            self.record.append((kind, (arrived - start) * 1000))
        return reply, line, elapsed

    def last_request_data(self) -> dict[str, Any] | None:
        """The last request written to the bot, decoded (it is the referee's own line)."""
        if self.last_request is None:
            return None
        data = json.loads(self.last_request[1])
        return data if isinstance(data, dict) else None

    async def _name_event_reply(
        self, fault: BotFault, request_id: int, events: int, left_ms: int
    ) -> None:
        """Name a wrong first line a reply to an event when the reply to ``request_id``
        follows it: the bot answered some of the ``events`` written before the request.

        Waits for the bot's next lines at most what was left of its budget (and 2 s): this
        only runs when the bot has failed anyway, and only to say why.
        """
        channel = self.channel
        with contextlib.suppress(TimeoutError):
            async with self.clock.timeout(min(max(left_ms, 0), _EVENT_REPLY_WAIT_MS) / 1000):
                while not any(_has_id(line, request_id) for line in channel.unasked_lines):
                    if channel.unasked >= min(events, UNASKED_CAP):
                        return  # none of the lines it could have meant as the reply
                    await channel.more_unasked()
                n = f"{events} event{'s' if events > 1 else ''}"
                fault.detail = (
                    f"replied to an event; events need no answer (this line came after the "
                    f"{n} sent before request {request_id}; its reply to the request came later)"
                )

    def unasked_fault(self, request_id: int | None = None) -> BotFault:
        """The protocol fault for the lines this bot wrote when no request was waiting.

        Lines that came after the referee wrote events alone (the end of a match), the
        first a JSON object, are replies to those events, and named so.
        """
        n = self.channel.unasked
        first = self.channel.unasked_line
        what = "a line" if n == 1 else f"{n} lines"
        detail = f"sent {what} nobody asked for (no request was outstanding)"
        if self._events_last and first is not None and _json_object(first) is not None:
            detail = (
                f"replied to an event; events need no answer ({what} after the last events, "
                "when no request was outstanding)"
            )
        return BotFault(
            "protocol",
            detail,
            request_id=request_id,
            reply=m.reply_excerpt(first) if first is not None else None,
        )

    def _crash(
        self, what: str, *, request_id: int | None = None, elapsed_ms: int | None = None
    ) -> BotFault:
        """The crash fault of a bot that is gone; ``InfrastructureError`` when the kernel
        killed it for memory it was allowed (memory ran out above its own limit): that is
        the referee's failure, its match is played again, the bot is not blamed."""
        info = self.channel.exit_info
        if info is not None and info.outside_oom:
            raise InfrastructureError(
                f"bot {self.name!r} was killed by the kernel's out-of-memory killer within "
                "its own memory limit: the machine or the referee's cgroup ran out of memory "
                "(fewer workers or a lower memory_mb leave room); not the bot's fault"
            )
        how = f" ({info.detail or info.describe()})" if info is not None else ""
        if info is not None and info.oom_killed:
            how = " (killed at the memory limit)"
        return BotFault("crash", f"{what}{how}", request_id=request_id, elapsed_ms=elapsed_ms)

    async def hello(self, request_id: int, time_control: TimeControl, started: float) -> None:
        """Send ``hello`` and wait for ``ready`` within ``hello_ms`` counted from ``started``
        (the session clock's reading when the process was being started)."""
        msg = m.encode(m.Hello(id=request_id, protocol=1, time=time_control))
        left = time_control.hello_ms - self._ms(started)
        try:
            reply, _, _ = await self.request(msg, request_id, "hello", max(left, 1))
        except BotFault as fault:
            if fault.kind == "timeout":
                fault.detail = f"timed out answering hello after {time_control.hello_ms} ms"
            raise
        assert isinstance(reply, m.Ready)
        self.ready_name = reply.name
        self.ready_ms = self._ms(started)

    # -- the kit's safety net ------------------------------------------------------------

    def _pair_markers(self) -> None:
        """Keep the request the newest marker lines of the bot's kit answered.

        A kit writes its marker before its reply, so by the next request the marker of the
        last one has arrived: that request is the one it names. Only requests named by the
        marker lines kept for this match are kept.
        """
        ids = {marker_id(note) for note in self.channel.kit_notes}
        kept = {rid: line for rid, line in self._kit_requests.items() if rid in ids}
        if self.last_request is not None and self.last_request[0] in ids:
            kept.setdefault(*self.last_request)
        self._kit_requests = kept

    def kit_report(self) -> tuple[int, list[KitReplacement]]:
        """How many decisions the bot's kit replaced in this match, and the first few of
        them with the request each answered (when it is still at hand)."""
        channel = self.channel
        if not channel.kit_notes:
            return channel.kit_replaced, []
        self._pair_markers()
        notes = []
        for note in channel.kit_notes:
            rid = marker_id(note)
            line = self._kit_requests.get(rid) if rid is not None else None
            notes.append(read_marker(note, _json_object(line) if line is not None else None))
        return channel.kit_replaced, notes

    # -- stderr --------------------------------------------------------------------------

    def stderr_report(self, limit: int = 4096) -> str:
        """The bot's stderr for a fault report: its start-up output, then this match's.

        :func:`~referee.stderrlog.split_stderr_report` takes the two apart again, so that a
        report can show each with its own bound (a long match must not push the start-up
        output out).
        """
        current = self.channel.stderr_tail(limit)
        return stderr_report(self.channel.startup_stderr().strip(), current)

    # -- the end -------------------------------------------------------------------------

    async def close(self, *, bye: bool = True) -> ExitInfo:
        """Say ``bye`` (if alive), give the bot a second to exit, then kill and reap it."""
        self._alarm.cancel()
        if not self._closed:
            self._closed = True
            if bye and self.fault is None:
                # Gone either way (a kill for memory above its limit is an InfrastructureError):
                # what matters now is that it is reaped.
                with contextlib.suppress(BotFault, InfrastructureError):
                    self.channel.queue(m.encode(m.Bye()))
                    await self.flush(_BYE_GRACE_S)
                await self.channel.proc.close_stdin()
                await self.channel.proc.wait(_BYE_GRACE_S)
        return await self.channel.close()

    async def freeze(self) -> None:
        """Stop the bot's processes while it waits in a pool (see ``BotProcess.freeze``)."""
        self._alarm.cancel()  # no timer waits with it
        await self.channel.proc.freeze()

    async def thaw(self) -> None:
        """Let a frozen bot run again; returns once it runs."""
        await self.channel.proc.thaw()

    async def forfeit(self, fault: BotFault) -> None:
        """Out for ``fault`` (kept as :attr:`fault`, so the bot is never lent again), killed."""
        self.fault = fault
        await self.kill()

    async def kill(self) -> None:
        """Kill now (after a fault): no bye, nothing more is sent."""
        self._alarm.cancel()
        self._closed = True
        self.channel.outbox.clear()
        await self.channel.proc.kill()

    def _ms(self, start: float) -> int:
        """Whole milliseconds from ``start`` to now on the session's clock."""
        return int((self.clock.monotonic() - start) * 1000)


_EVENT_REPLY_WAIT_MS = 2000


def _json_object(line: bytes) -> dict[str, Any] | None:
    """``line`` as a JSON object, or ``None`` when it is not one."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _not_its_id(line: bytes, request_id: int) -> bool:
    """Whether ``line`` is a JSON object without the request's id: what a reply to an
    event looks like (a request's reply that forgot its id does too, until the bot's
    next line tells them apart)."""
    data = _json_object(line)
    if data is None:
        return False
    rid = data.get("id")
    return not (type(rid) is int and rid == request_id)


def _has_id(line: bytes, request_id: int) -> bool:
    """Whether ``line`` (maybe cut) carries ``"id": request_id``."""
    data = _json_object(line)
    if data is not None:
        return type(data.get("id")) is int and data["id"] == request_id
    return re.search(rb'"id"\s*:\s*%d(?![0-9.eE])' % request_id, line) is not None


def distinct_names(names: Sequence[str]) -> list[str]:
    """Seat names made distinct: a bot taking several seats becomes ``name#2``, ``name#3``."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if counts[name] == 1:
            out.append(name)
            continue
        seen[name] = seen.get(name, 0) + 1
        out.append(f"{name}#{seen[name]}")
    return out
