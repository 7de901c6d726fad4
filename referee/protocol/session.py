"""The dialect: greeting a bot, asking it one thing at a time, saying goodbye; and keeping
bots between matches.

A :class:`BotSession` speaks protocol v1 over a :class:`~referee.protocol.channel.LineChannel`
(framing is the channel's job, meaning is :mod:`referee.protocol.messages`'s): ``hello``/``ready``,
one request at a time timed against a budget, and ``bye``. Every way a bot can fail a
request becomes a :class:`~referee.errors.BotFault` with a detail written for its author.

:func:`start_sessions` starts and greets the bots of a match; :class:`SessionPool` keeps
them for later matches of one worker, like cutechess, within the rules of duplicate play.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from referee.errors import BotFault, InfrastructureError
from referee.protocol import messages as m
from referee.protocol.channel import EOF, LINE_CAP, OVERLONG, LineChannel
from referee.sandbox.base import BotSpec, ExitInfo, Limits, Sandbox
from referee.specs import TimeControl

__all__ = [
    "BotSession",
    "SeatChannel",
    "SeatSession",
    "SessionPool",
    "distinct_names",
    "split_stderr_report",
    "start_sessions",
]

_BYE_GRACE_S = 1.0
_T = TypeVar("_T")


class SeatChannel(Protocol):
    """What a match touches of a seat's channel: the events queued for it, stray lines."""

    outbox: list[bytes]
    unasked: int

    def new_section(self) -> None: ...


class SeatSession(Protocol):
    """Whoever sits at a seat, as a match sees it: a bot's :class:`BotSession`, or a person
    at the terminal (:class:`referee.match.human.PersonSession`) who is asked the same requests."""

    fault: BotFault | None

    @property
    def name(self) -> str: ...
    @property
    def alive(self) -> bool: ...
    @property
    def channel(self) -> SeatChannel: ...
    def queue(self, data: bytes) -> None: ...
    async def flush(self, timeout_s: float) -> None: ...
    async def request(
        self, data: bytes, request_id: int, kind: str, budget_ms: int
    ) -> tuple[m.Reply, bytes, int]: ...
    def unasked_fault(self, request_id: int | None = None) -> BotFault: ...
    async def kill(self) -> None: ...
    def stderr_report(self, limit: int = 4096) -> str: ...
    def last_request_data(self) -> dict[str, Any] | None: ...


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
        self._closed = False

    @classmethod
    async def start(
        cls, sandbox: Sandbox, spec: BotSpec, limits: Limits, name: str | None = None
    ) -> BotSession:
        """Start ``spec`` in ``sandbox`` and begin reading its output."""
        proc = await sandbox.start(spec, limits)
        return cls(spec, LineChannel(proc), name or spec.name)

    @property
    def alive(self) -> bool:
        return self.fault is None and not self._closed

    @property
    def exit_info(self) -> ExitInfo | None:
        return self.channel.exit_info

    # -- events --------------------------------------------------------------------------

    def queue(self, data: bytes) -> None:
        """Queue an event; it is written with the next request or at the match end."""
        if self.alive:
            self.channel.queue(data)

    async def flush(self, timeout_s: float) -> None:
        """Write queued events; a bot that is gone or does not read gets a fault."""
        try:
            async with asyncio.timeout(timeout_s):
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
        channel.expect()  # set before writing: a quick reply may come during the write
        self.last_request = (request_id, data)
        start = time.monotonic()
        try:
            async with asyncio.timeout(budget_ms / 1000):
                # A failed write means the bot is gone; the reason shows up as a marker.
                with contextlib.suppress(ConnectionError, OSError):
                    await channel.send(data)
                item = await channel.read()
        except TimeoutError:
            raise BotFault(
                "timeout",
                f"no reply within {budget_ms} ms (move_ms + bank left)",
                request_id=request_id,
                elapsed_ms=_ms(start),
            ) from None
        if not isinstance(item, tuple):
            elapsed = _ms(start)
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

    def unasked_fault(self, request_id: int | None = None) -> BotFault:
        """The protocol fault for the lines this bot wrote when no request was waiting."""
        n = self.channel.unasked
        first = self.channel.unasked_line
        what = "a line" if n == 1 else f"{n} lines"
        return BotFault(
            "protocol",
            f"sent {what} nobody asked for (no request was outstanding)",
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
        """Send ``hello`` and wait for ``ready`` within ``hello_ms`` counted from ``started``."""
        msg = m.encode(m.Hello(id=request_id, protocol=1, time=time_control))
        left = time_control.hello_ms - _ms(started)
        try:
            reply, _, _ = await self.request(msg, request_id, "hello", max(left, 1))
        except BotFault as fault:
            if fault.kind == "timeout":
                fault.detail = f"timed out answering hello after {time_control.hello_ms} ms"
            raise
        assert isinstance(reply, m.Ready)
        self.ready_name = reply.name
        self.ready_ms = _ms(started)

    # -- stderr --------------------------------------------------------------------------

    def stderr_report(self, limit: int = 4096) -> str:
        """The bot's stderr for a fault report: its start-up output, then this match's.

        :func:`split_stderr_report` takes the two apart again, so that a report can show
        each with its own bound (a long match must not push the start-up output out).
        """
        current = self.channel.stderr_tail(limit)
        startup = self.channel.startup_stderr().strip()
        if not startup:
            return current
        return f"{_BEFORE}\n{startup}\n{_DURING}\n{current}"

    # -- the end -------------------------------------------------------------------------

    async def close(self, *, bye: bool = True) -> ExitInfo:
        """Say ``bye`` (if alive), give the bot a second to exit, then kill and reap it."""
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
        await self.channel.proc.freeze()

    async def thaw(self) -> None:
        """Let a frozen bot run again; returns once it runs."""
        await self.channel.proc.thaw()

    async def kill(self) -> None:
        """Kill now (after a fault): no bye, nothing more is sent."""
        self._closed = True
        self.channel.outbox.clear()
        await self.channel.proc.kill()


def _ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


_BEFORE = "[before the match]"
_DURING = "[during the match]"


def split_stderr_report(report: str) -> tuple[str, str]:
    """A :meth:`BotSession.stderr_report` as (start-up output, this match's output).

    A report without the two headers is all one part: a bot that failed ``hello`` never
    started a match, so it all comes second (the caller knows it is start-up output). The
    bot's own text could hold a header line; that can only mislabel its own output.
    """
    if not report.startswith(_BEFORE + "\n"):
        return "", report
    rest = report[len(_BEFORE) + 1 :]
    startup, sep, current = rest.partition("\n" + _DURING + "\n")
    if not sep:
        return "", report
    return startup, current


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


async def start_sessions(
    sandbox: Sandbox,
    bots: Sequence[BotSpec],
    limits: Limits,
    time_control: TimeControl,
    *,
    names: Sequence[str] | None = None,
    request_ids: itertools.count[int] | None = None,
) -> list[BotSession]:
    """Start every bot and greet it; a bot that fails ``hello`` carries its fault.

    Cancelled half-way (Ctrl-C, SIGTERM), it stops every bot it started before it returns.
    """
    ids = request_ids or itertools.count(1)
    seat_names = list(names) if names is not None else distinct_names([b.name for b in bots])

    async def one(spec: BotSpec, name: str) -> BotSession:
        started = time.monotonic()
        # A start cut off half-way can leave its process behind (asyncio's subprocess_exec
        # may hang when cancelled): it is short, so let it finish, then stop the bot.
        starting = asyncio.ensure_future(BotSession.start(sandbox, spec, limits, name))
        try:
            session = await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await (await starting).close(bye=False)
            raise
        try:
            await session.hello(next(ids), time_control, started)
        except BotFault as f:
            session.fault = f
            await session.kill()
        except BaseException:
            await asyncio.shield(session.close(bye=False))
            raise
        return session

    starting = [asyncio.ensure_future(one(b, n)) for b, n in zip(bots, seat_names, strict=True)]
    try:
        results = await asyncio.gather(*starting, return_exceptions=True)
    except asyncio.CancelledError:
        started = [
            t.result() for t in starting if t.done() and not t.cancelled() and not t.exception()
        ]
        await asyncio.shield(asyncio.gather(*(s.close(bye=False) for s in started)))
        raise
    sessions = [r for r in results if isinstance(r, BotSession)]
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        for s in sessions:
            await s.close(bye=False)
        raise errors[0]
    return sessions


async def close_all(sessions: Sequence[BotSession]) -> None:
    """Say bye to every session and stop it, whatever happens to the others."""
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


class SessionPool:
    """Keeps bot processes (or containers) alive between consecutive matches, like cutechess.

    A session goes back to the pool after a match it finished without a fault, and is
    handed out again for a later match of the same bot, greeted already. Two rules keep
    duplicate play fair: a session never serves two seat rotations of the same deal (it
    would know the others' hands), so a match names its ``deal_key``; and a fault always
    ends the process. ``max_matches`` bounds how many matches one process serves,
    ``max_idle`` how many idle processes of one bot are kept (per seat it takes), and
    ``max_idle_total`` how many are kept in all, whatever the number of bots: the ones idle
    longest go first. Every idle process holds its memory limit's worth of promise, so the
    total is what the memory budget counts (:mod:`referee.sandbox.budget`); by default it
    is the largest table the pool has seated.

    An idle bot is frozen while it waits (the cgroup freezer, ``docker pause``), so that it
    burns no CPU between matches: it would slow the other bots of the machine, or think
    ahead. It is thawed before it is lent again, so a match's clock never runs on a frozen
    bot.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        limits: Limits,
        time_control: TimeControl,
        *,
        max_matches: int = 50,
        max_idle: int = 2,
        max_idle_total: int | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.time_control = time_control
        self.max_matches = max_matches
        self.max_idle = max_idle
        self.max_idle_total = max_idle_total
        self.ids = itertools.count(1)
        self._idle: dict[tuple[str, str], list[BotSession]] = {}
        self._deals: dict[int, set[str]] = {}
        self._served: dict[int, int] = {}
        self._width: dict[tuple[str, str], int] = {}  # most seats one bot took in a match
        self._idle_since: dict[int, int] = {}  # id(session) -> when it went idle (a count)
        self._clock = itertools.count()
        self._largest_table = 0
        self.started = 0

    @staticmethod
    def _key(spec: BotSpec) -> tuple[str, str]:
        return (spec.name, spec.sha256 or str(spec.folder))

    async def acquire(self, bots: Sequence[BotSpec], deal_key: str | None) -> list[BotSession]:
        """One greeted session per seat: reused when possible, else started now."""
        names = distinct_names([b.name for b in bots])
        self._largest_table = max(self._largest_table, len(bots))
        for key in {self._key(b) for b in bots}:
            seats = sum(1 for b in bots if self._key(b) == key)
            self._width[key] = max(self._width.get(key, 1), seats)
        chosen: list[BotSession | None] = []
        for spec in bots:
            idle = self._idle.get(self._key(spec), [])
            pick = next(
                (
                    s
                    for s in idle
                    if s.alive
                    and s.channel.exit_info is None  # not killed while idle (memory, say)
                    and (deal_key is None or deal_key not in self._deals[id(s)])
                ),
                None,
            )
            if pick is not None:
                idle.remove(pick)
                self._idle_since.pop(id(pick), None)
            chosen.append(pick)
        # Running again before anything of the match (its match_start) is written.
        await asyncio.gather(*(s.thaw() for s in chosen if s is not None))
        missing = [i for i, s in enumerate(chosen) if s is None]
        if missing:
            fresh = await start_sessions(
                self.sandbox,
                [bots[i] for i in missing],
                self.limits,
                self.time_control,
                names=[names[i] for i in missing],
                request_ids=self.ids,
            )
            self.started += len(fresh)
            for i, session in zip(missing, fresh, strict=True):
                self._deals[id(session)] = set()
                self._served[id(session)] = 0
                chosen[i] = session
        sessions = [s for s in chosen if s is not None]
        for session, name in zip(sessions, names, strict=True):
            session.name = name
            if deal_key is not None:
                self._deals[id(session)].add(deal_key)
        return sessions

    async def release(self, sessions: Sequence[BotSession]) -> None:
        """Return healthy sessions to the pool; close faulted, worn-out or surplus ones.

        At most ``max_idle`` idle processes are kept per seat a bot takes: the newest, since
        an older one has seen more deals and can serve fewer of the matches to come; and at
        most ``max_idle_total`` in all: those idle longest are closed first.
        """
        closing: list[BotSession] = []
        for session in sessions:
            self._served[id(session)] = self._served.get(id(session), 0) + 1
            if session.alive and self._served[id(session)] < self.max_matches:
                key = self._key(session.spec)
                idle = self._idle.setdefault(key, [])
                idle.append(session)
                self._idle_since[id(session)] = next(self._clock)
                while len(idle) > self.max_idle * self._width.get(key, 1):
                    closing.append(idle.pop(0))
            else:
                closing.append(session)
        closing += self._over_total()
        resting = [s for s in sessions if s not in closing]
        if resting:
            await asyncio.gather(*(s.freeze() for s in resting), return_exceptions=True)
        if closing:
            await asyncio.gather(*(self._close(s) for s in closing), return_exceptions=True)

    def _over_total(self) -> list[BotSession]:
        """Take the idle sessions beyond ``max_idle_total`` out of the pool, oldest first."""
        cap = self.max_idle_total if self.max_idle_total is not None else self._largest_table
        idle = [(key, s) for key, group in self._idle.items() for s in group]
        idle.sort(key=lambda entry: self._idle_since.get(id(entry[1]), 0))
        surplus = idle[: max(0, len(idle) - cap)]
        for key, session in surplus:
            self._idle[key].remove(session)
        return [session for _, session in surplus]

    async def discard(self, sessions: Sequence[BotSession]) -> None:
        """Stop sessions that must not be reused (their match broke off half-way)."""
        await asyncio.shield(asyncio.gather(*(self._close(s) for s in sessions)))

    async def _close(self, session: BotSession) -> None:
        self._deals.pop(id(session), None)
        self._served.pop(id(session), None)
        self._idle_since.pop(id(session), None)
        await session.thaw()  # a frozen bot could not read its bye
        await session.close()

    async def aclose(self) -> None:
        """Say ``bye`` to every idle bot and stop it."""
        idle = [s for group in self._idle.values() for s in group]
        self._idle.clear()
        await asyncio.gather(*(self._close(s) for s in idle), return_exceptions=True)

    async def lend(
        self,
        bots: Sequence[BotSpec],
        deal_key: str | None,
        play: Callable[[Sequence[BotSession]], Awaitable[_T]],
    ) -> _T:
        """Acquire sessions for ``bots``, ``play`` with them, then give them back.

        A match that broke off leaves its bots mid-conversation: they are never reused.
        """
        sessions = await self.acquire(bots, deal_key)
        try:
            result = await play(sessions)
        except BaseException:
            await self.discard(sessions)
            raise
        await asyncio.shield(self.release(sessions))
        return result
