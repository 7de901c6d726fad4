"""Seating a match: the one way to put bots (and people) at a table, and to clean up after.

:func:`seated` is an async context manager, and everything that plays a match goes through
it: ``referee play`` (:func:`referee.match.runner.play_once`), ``bot check`` and
``submit``'s check (:mod:`referee.match.compliance`), the executors' workers
(:class:`referee.executors.worker.Worker`), :class:`referee.testing.InProcessExecutor`, the
test fixtures and the benchmarks. In order, it

1. **stages** the bots when asked (``stage=True``: a private copy of each in a fresh staging
   folder, :func:`~referee.sandbox.stage_bot`), or takes them staged already;
2. **starts** each bot fresh in a sandbox and greets it (``hello``, answered within
   ``hello_ms``; a bot that fails it carries its fault to the match, which forfeits the
   seat), or **borrows** it, greeted already, from a :class:`SessionPool`;
3. **seats** them in the order given around the seats the caller fills itself
   (``occupied``: a person at the terminal, or a bot session the caller keeps across
   several matches), their names made distinct (an occupied seat keeps its name);
4. yields a :class:`Table`: every seat's session in seat order, with the time control the
   bots were greeted under, the request ids to go on with, and the clock;
5. **cleans up**, whatever happens: borrowed bots go back to the pool after a block that
   ended normally and are stopped after one that did not (a match broken off leaves them
   mid-conversation); started bots are told ``bye`` and stopped (killed when they do not
   exit); the staging folder is removed. A cancellation (Ctrl-C, or SIGTERM through
   :mod:`referee.interrupts`) takes the same path with the cleanup shielded, and a bot cut
   off while it starts or is greeted is stopped too.

Not its business: the sandbox backend (whoever made it closes it: a command after its
match, a worker when it exits) and the occupied seats (the caller's).

A pool's bots were greeted under the pool's time control and limits, so a pooled table has
those and no others: asking for different ones is an error, never silently ignored.

:class:`SessionPool` keeps bots between the matches of one worker, like cutechess, within
the rules of duplicate play.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.clock import Clock, MonotonicClock
from referee.errors import BotFault
from referee.protocol.session import BotSession, SeatSession, distinct_names
from referee.sandbox.base import BotSpec, Limits, Sandbox
from referee.sandbox.staging import make_staging_root, remove_staging_root, stage_bot
from referee.specs import TimeControl

__all__ = ["SessionPool", "Table", "seated"]


@dataclass(frozen=True)
class Table:
    """The greeted seats of one match, and what the match goes on with (see :func:`seated`)."""

    seats: tuple[SeatSession, ...]
    """Whoever sits at each seat, in seat order: the bots seated here and the occupied seats."""
    bots: tuple[BotSession, ...]
    """The bot sessions seated here (started or borrowed), in seat order; occupied seats
    are not among them."""
    time_control: TimeControl
    """The time control the bots were greeted under: the only one a match may play them on."""
    request_ids: itertools.count[int]
    """Request ids, going on from the ``hello`` ids: the pool's count for borrowed bots
    (a process never sees an id twice), else the table's own."""
    clock: Clock


@contextlib.asynccontextmanager
async def seated(
    bots: Sequence[BotSpec],
    *,
    sandbox: Sandbox | None = None,
    pool: SessionPool | None = None,
    deal_key: str | None = None,
    time_control: TimeControl | None = None,
    limits: Limits | None = None,
    occupied: Mapping[int, SeatSession] | None = None,
    stage: bool = False,
    request_ids: itertools.count[int] | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[Table]:
    """Seat ``bots`` (one per seat, in order), yield the :class:`Table`, clean up after.

    Bots are started in ``sandbox`` (with ``time_control``, ``limits``, ``request_ids`` and
    ``clock``, each defaulting to the usual), or borrowed from ``pool`` for a match of
    ``deal_key`` (never for another seat rotation of a deal they have played; the pool's
    time control, limits, ids and clock apply, and asking for others is a ``ValueError``).
    ``occupied`` maps seat numbers to sessions the caller brings and keeps; the bots fill
    the other seats in order. ``stage`` copies the bots into a staging folder first (not
    for a pool, whose bots outlive the table). See the module docstring for the cleanup.
    """
    taken = dict(occupied or {})
    if (sandbox is None) == (pool is None):
        raise ValueError("seat bots either from a sandbox or from a pool: give one of them")
    if pool is not None:
        _check_pooled(pool, time_control, limits, request_ids, clock, stage)
        tc, ids, clk = pool.time_control, pool.ids, pool.clock
    else:
        tc = time_control or TimeControl()
        ids = request_ids or itertools.count(1)
        clk = clock if clock is not None else MonotonicClock()
    names = _bot_names(bots, taken)
    staging: Path | None = None
    try:
        if stage:
            staging = make_staging_root()
            bots = [stage_bot(bot, staging) for bot in bots]
        if pool is not None:
            sessions = await pool.acquire(bots, deal_key, names=names)
        else:
            assert sandbox is not None
            sessions = await _start_sessions(
                sandbox, bots, limits or Limits(), tc, names=names, request_ids=ids, clock=clk
            )
        free = iter(sessions)
        seats = [taken[s] if s in taken else next(free) for s in range(len(bots) + len(taken))]
        table = Table(tuple(seats), tuple(sessions), tc, ids, clk)
        try:
            yield table
        except BaseException:
            if pool is not None:
                await pool.discard(sessions)
            else:
                await asyncio.shield(_close_all(sessions))
            raise
        if pool is not None:
            await asyncio.shield(pool.release(sessions))
        else:
            await asyncio.shield(_close_all(sessions))
    finally:
        if staging is not None:
            remove_staging_root(staging)


def _check_pooled(
    pool: SessionPool,
    time_control: TimeControl | None,
    limits: Limits | None,
    request_ids: itertools.count[int] | None,
    clock: Clock | None,
    stage: bool,
) -> None:
    """A pooled table has the pool's settings: refuse others rather than ignore them."""
    if time_control is not None and time_control != pool.time_control:
        raise ValueError(
            f"the pool's bots are greeted under {pool.time_control.describe()}, not "
            f"{time_control.describe()}: a pooled match plays on the pool's time control"
        )
    if limits is not None and limits != pool.limits:
        raise ValueError(
            f"the pool's bots run with {pool.limits.describe()}, not {limits.describe()}"
        )
    if request_ids is not None and request_ids is not pool.ids:
        raise ValueError("a pooled table goes on with the pool's request ids")
    if clock is not None and clock is not pool.clock:
        raise ValueError("a pooled table runs on the pool's clock")
    if stage:
        raise ValueError("a pool's bots outlive the table: stage them for as long as the pool")


def _bot_names(bots: Sequence[BotSpec], occupied: Mapping[int, SeatSession]) -> list[str]:
    """The bots' seat names, distinct from each other and from the occupied seats' names."""
    n = len(bots) + len(occupied)
    if any(not 0 <= s < n for s in occupied):
        raise ValueError(f"the seats taken must be among 0 to {n - 1}: {sorted(occupied)}")
    specs = iter(bots)
    names = [occupied[s].name if s in occupied else next(specs).name for s in range(n)]
    distinct = distinct_names(names)
    return [distinct[s] for s in range(n) if s not in occupied]


async def _start_sessions(
    sandbox: Sandbox,
    bots: Sequence[BotSpec],
    limits: Limits,
    time_control: TimeControl,
    *,
    names: Sequence[str],
    request_ids: itertools.count[int],
    clock: Clock,
) -> list[BotSession]:
    """Start every bot and greet it; a bot that fails ``hello`` carries its fault.

    Cancelled half-way (Ctrl-C, SIGTERM), it stops every bot it started before it returns.
    """

    async def one(spec: BotSpec, name: str) -> BotSession:
        started = clock.monotonic()
        # A start cut off half-way can leave its process behind (asyncio's subprocess_exec
        # may hang when cancelled): it is short, so let it finish, then stop the bot.
        starting = asyncio.ensure_future(BotSession.start(sandbox, spec, limits, name, clock=clock))
        try:
            session = await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await (await starting).close(bye=False)
            raise
        try:
            await session.hello(next(request_ids), time_control, started)
        except BotFault as f:
            session.fault = f
            await session.kill()
        except BaseException:
            await asyncio.shield(session.close(bye=False))
            raise
        return session

    starting = [asyncio.ensure_future(one(b, n)) for b, n in zip(bots, names, strict=True)]
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


async def _close_all(sessions: Sequence[BotSession]) -> None:
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

    Matches borrow through :func:`seated` (``pool=``), which gives the sessions back.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        limits: Limits,
        time_control: TimeControl,
        *,
        clock: Clock | None = None,
        max_matches: int = 50,
        max_idle: int = 2,
        max_idle_total: int | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.time_control = time_control
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.max_matches = max_matches
        self.max_idle = max_idle
        self.max_idle_total = max_idle_total
        self.ids = itertools.count(1)
        self._idle: dict[tuple[str, str], list[BotSession]] = {}
        self._deals: dict[int, set[str]] = {}
        self._served: dict[int, int] = {}
        self._width: dict[tuple[str, str], int] = {}  # most seats one bot took in a match
        self._idle_since: dict[int, int] = {}  # id(session) -> when it went idle (a count)
        self._idle_order = itertools.count()
        self._largest_table = 0
        self.started = 0

    @staticmethod
    def _key(spec: BotSpec) -> tuple[str, str]:
        return (spec.name, spec.sha256 or str(spec.folder))

    async def acquire(
        self,
        bots: Sequence[BotSpec],
        deal_key: str | None,
        *,
        names: Sequence[str] | None = None,
    ) -> list[BotSession]:
        """One greeted session per seat, named ``names`` (default: the bots' names made
        distinct): reused when possible, else started now."""
        names = list(names) if names is not None else distinct_names([b.name for b in bots])
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
        missing = [i for i, s in enumerate(chosen) if s is None]
        try:
            # Running again before anything of the match (its match_start) is written.
            await asyncio.gather(*(s.thaw() for s in chosen if s is not None))
            fresh = await _start_sessions(
                self.sandbox,
                [bots[i] for i in missing],
                self.limits,
                self.time_control,
                names=[names[i] for i in missing],
                request_ids=self.ids,
                clock=self.clock,
            )
        except BaseException:
            # Cancelled (or failed) while the rest started: the idle ones taken out for this
            # match are neither lent nor back in the pool, so nobody else would stop them.
            await self.discard([s for s in chosen if s is not None])
            raise
        if missing:
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
                self._idle_since[id(session)] = next(self._idle_order)
                while len(idle) > self.max_idle * self._width.get(key, 1):
                    closing.append(idle.pop(0))
            else:
                closing.append(session)
        closing += self._over_total()
        resting = [s for s in sessions if s not in closing]
        if closing:
            # Out of the pool already: cancelled half-way, they would be stopped by nobody.
            await asyncio.shield(
                asyncio.gather(*(self._close(s) for s in closing), return_exceptions=True)
            )
        if resting:
            await asyncio.gather(*(s.freeze() for s in resting), return_exceptions=True)

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
