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
from referee.errors import BotFault, InfrastructureError, UsageError
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
    ``deal_key`` (never for another match of a deal they have played; the pool's
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
            await session.forfeit(f)
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


_Coming = tuple[dict[tuple[str, str], int], str | None, tuple[BotSpec, ...]]
"""The match :meth:`SessionPool.warm` was last told of: its seats per bot, its deal, its bots."""


class SessionPool:
    """Keeps bot processes (or containers) alive between consecutive matches, like cutechess.

    A session goes back to the pool after a match it finished without a fault, and is
    handed out again for a later match of the same bot, greeted already. Two rules keep
    duplicate play fair: a session never serves two matches of the same deal (it would know
    the others' hands), so a match names its ``deal_key``: not two seat rotations of it, nor
    both halves of a ``referee compare`` pair, whose matches all name one deal (a field bot
    must not carry what it saw with NEW into the match with OLD); and a fault always ends
    the process. ``max_matches`` bounds how many matches one process serves,
    ``max_idle`` how many idle processes of one bot are kept (per seat it takes), and
    ``max_idle_total`` how many are kept in all, whatever the number of bots: the ones idle
    longest go first. Every idle process holds its memory limit's worth of promise, so the
    total is what the memory budget counts (:mod:`referee.sandbox.budget`); by default it
    is the largest table the pool has seated.

    **Warm starts.** Told which match comes next (:meth:`warm`), the pool starts and greets,
    in the background, the processes that match would otherwise have to start (a bot it
    keeps none of, or only ones that have seen that deal), so that the start of a process
    or a container is hidden behind the match being played. They count as idle processes
    (within ``max_idle_total``: idle ones the coming match cannot use make room, never
    one it would take: stopping it to start another would gain nothing), a
    fresh process has seen no deal, and :meth:`acquire` waits for one still starting rather
    than start another. When the guess was wrong they are idle processes like any other.

    An idle bot is frozen while it waits (the cgroup freezer, ``docker pause``), so that it
    burns no CPU between matches: it would slow the other bots of the machine, or think
    ahead. It is thawed before it is lent again, so a match's clock never runs on a frozen
    bot. ``freeze_idle=False`` leaves idle bots running: only for bots that wait on their
    input without burning CPU and need no fairness guard (the sample bots a ``bot check``
    plays against), since ``docker pause`` and ``unpause`` cost tens of milliseconds each.
    ``close_behind`` closes the processes the pool gives up in the background (:meth:`aclose`
    waits for them), for a caller whose memory budget counts them until then: they count
    against ``max_idle_total`` until they are gone, and each one gone makes room for what
    the coming match (:meth:`warm`) still lacks, started then.
    ``request_ids`` (default: a count of the pool's own) numbers every request its bots are
    sent, so that the bots of two pools seated at one table never see an id twice.

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
        request_ids: itertools.count[int] | None = None,
        freeze_idle: bool = True,
        close_behind: bool = False,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.time_control = time_control
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.max_matches = max_matches
        self.max_idle = max_idle
        self.max_idle_total = max_idle_total
        self.ids = request_ids if request_ids is not None else itertools.count(1)
        self.freeze_idle = freeze_idle
        self.close_behind = close_behind
        self._idle: dict[tuple[str, str], list[BotSession]] = {}
        self._lent: dict[int, BotSession] = {}
        self._warming: dict[tuple[str, str], list[asyncio.Task[BotSession | None]]] = {}
        self._coming: _Coming | None = None
        self._shut = False
        self._closing: set[asyncio.Future[None]] = set()
        self._deals: dict[int, set[str]] = {}
        self._served: dict[int, int] = {}
        self._width: dict[tuple[str, str], int] = {}  # most seats one bot took in a match
        self._idle_since: dict[int, int] = {}  # id(session) -> when it went idle (a count)
        self._idle_order = itertools.count()
        self._largest_table = 0
        self.started = 0
        self.warmed = 0
        """Processes started ahead of need by :meth:`warm` (``started`` counts them too)."""

    @staticmethod
    def _key(spec: BotSpec) -> tuple[str, str]:
        return (spec.name, spec.sha256 or str(spec.folder))

    def _cap(self) -> int:
        return self.max_idle_total if self.max_idle_total is not None else self._largest_table

    def _kept(self) -> int:
        """The processes that count against the cap: idle, starting ahead, and with
        ``close_behind`` those still being stopped."""
        kept = sum(len(group) for group in self._idle.values())
        kept += sum(len(group) for group in self._warming.values())
        return kept + (len(self._closing) if self.close_behind else 0)

    def _usable(self, session: BotSession, deal_key: str | None) -> bool:
        return (
            session.alive
            and session.channel.exit_info is None  # not killed while idle (memory, say)
            and (deal_key is None or deal_key not in self._deals[id(session)])
        )

    # -- lending ---------------------------------------------------------------------------

    async def acquire(
        self,
        bots: Sequence[BotSpec],
        deal_key: str | None,
        *,
        names: Sequence[str] | None = None,
    ) -> list[BotSession]:
        """One greeted session per seat, named ``names`` (default: the bots' names made
        distinct): reused when possible, else one started ahead (waited for if still
        starting), else started now."""
        names = list(names) if names is not None else distinct_names([b.name for b in bots])
        self._note_table(bots)
        self._coming = None  # until told of the match after this one
        chosen: list[BotSession | None] = []
        try:
            await self._take_kept(bots, deal_key, chosen)
            if self.freeze_idle:
                # Running again before anything of the match (its match_start) is written.
                await asyncio.gather(*(s.thaw() for s in chosen if s is not None))
            missing = [i for i, s in enumerate(chosen) if s is None]
            fresh = await self._start([bots[i] for i in missing], [names[i] for i in missing])
        except BaseException:
            # Cancelled (or failed) while the rest started: the idle ones taken out for this
            # match are neither lent nor back in the pool, so nobody else would stop them.
            await self.discard([s for s in chosen if s is not None])
            raise
        for i, session in zip(missing, fresh, strict=True):
            chosen[i] = session
        sessions = [s for s in chosen if s is not None]
        for session, name in zip(sessions, names, strict=True):
            session.name = name
            self._lent[id(session)] = session
            if deal_key is not None:
                self._deals[id(session)].add(deal_key)
        return sessions

    def _note_table(self, bots: Sequence[BotSpec]) -> None:
        self._largest_table = max(self._largest_table, len(bots))
        for key in {self._key(b) for b in bots}:
            seats = sum(1 for b in bots if self._key(b) == key)
            self._width[key] = max(self._width.get(key, 1), seats)

    async def _take_kept(
        self, bots: Sequence[BotSpec], deal_key: str | None, chosen: list[BotSession | None]
    ) -> None:
        """Fill ``chosen`` with, for each seat, an idle session that may play ``deal_key``,
        or one starting ahead (waited for), or ``None``; what it holds when cancelled is
        out of the pool (the caller stops it)."""
        waiting: dict[int, asyncio.Task[BotSession | None]] = {}
        for i, spec in enumerate(bots):
            key = self._key(spec)
            idle = self._idle.get(key, [])
            pick = next((s for s in idle if self._usable(s, deal_key)), None)
            if pick is not None:
                idle.remove(pick)
                self._idle_since.pop(id(pick), None)
            elif self._warming.get(key):
                waiting[i] = self._warming[key].pop(0)
            chosen.append(pick)
        for i, task in waiting.items():
            session = await asyncio.shield(task)
            idle = self._idle.get(self._key(bots[i]), [])
            if session is not None and session in idle:
                # Done starting, it went idle: it is this seat's now.
                idle.remove(session)
                self._idle_since.pop(id(session), None)
                chosen[i] = session

    async def _start(self, bots: Sequence[BotSpec], names: Sequence[str]) -> list[BotSession]:
        if not bots:
            return []
        fresh = await _start_sessions(
            self.sandbox,
            bots,
            self.limits,
            self.time_control,
            names=names,
            request_ids=self.ids,
            clock=self.clock,
        )
        self.started += len(fresh)
        for session in fresh:
            self._deals[id(session)] = set()
            self._served[id(session)] = 0
        return fresh

    # -- starting ahead ----------------------------------------------------------------------

    def warm(self, bots: Sequence[BotSpec], deal_key: str | None) -> None:
        """Start in the background what a coming match of ``bots`` on ``deal_key`` could not
        take from the pool (see the class docstring). Returns at once; the starts go on
        while the caller's loop runs (the match being played)."""
        if self._shut:
            return
        need: dict[tuple[str, str], int] = {}
        for spec in bots:
            need[self._key(spec)] = need.get(self._key(spec), 0) + 1
        self._coming = (need, deal_key, tuple(bots))
        specs = {self._key(spec): spec for spec in bots}
        starts: list[BotSpec] = []
        for key, seats in need.items():
            have = sum(self._usable(s, deal_key) for s in self._idle.get(key, []))
            have += sum(
                self._usable(s, deal_key) and self._served.get(id(s), 0) + 1 < self.max_matches
                for s in self._lent.values()
                if self._key(s.spec) == key
            )
            have += len(self._warming.get(key, []))
            starts += [specs[key]] * max(0, seats - have)
        room = self._cap() - self._kept()
        if room < len(starts):
            for session in self._spare()[: len(starts) - room]:
                self._idle[self._key(session.spec)].remove(session)
                self._idle_since.pop(id(session), None)
                self._close_later(session)
                room += 1
        for spec in starts[: max(0, room)]:
            task = asyncio.ensure_future(self._warm_one(spec))
            self._warming.setdefault(self._key(spec), []).append(task)

    async def _warm_one(self, spec: BotSpec) -> BotSession | None:
        """Start and greet one process ahead of need, freeze it and keep it idle; ``None``
        when it failed to start or to answer ``hello`` (the match will start its own)."""
        key = self._key(spec)
        task = asyncio.current_task()
        try:
            try:
                (session,) = await self._start([spec], [spec.name])
            except (InfrastructureError, UsageError):
                return None  # the match's own start says why, if it fails again
            self.warmed += 1
            if not session.alive:
                await self._close(session)
                return None
            try:
                if self.freeze_idle:
                    await session.freeze()
            except asyncio.CancelledError:
                await asyncio.shield(self._close(session))
                raise
            # Idle from the moment it leaves the starting list: a match can take it at once.
            self._idle.setdefault(key, []).append(session)
            self._idle_since[id(session)] = next(self._idle_order)
            return session
        finally:
            warming = self._warming.get(key, [])
            if task in warming:
                warming.remove(task)

    def _useful(self, session: BotSession) -> bool:
        """True when the match :meth:`warm` was last told of could take ``session``."""
        if self._coming is None:
            return False
        need, deal_key, _ = self._coming
        return self._key(session.spec) in need and self._usable(session, deal_key)

    def _spare(self) -> list[BotSession]:
        """Idle sessions that may make room for a warm start: those the coming match cannot
        use, and of those it can, more of a bot than it has seats for (the longest idle);
        stopping one it would take, to start another, would gain nothing."""
        need = dict(self._coming[0]) if self._coming is not None else {}
        evictable = self._evictable()
        taken: set[int] = set()
        for session in reversed(evictable):  # the shortest idle first
            key = self._key(session.spec)
            if self._useful(session) and need.get(key, 0) > 0:
                need[key] -= 1
                taken.add(id(session))
        return [s for s in evictable if id(s) not in taken]

    def _evictable(self) -> list[BotSession]:
        """Idle sessions in the order they are closed to keep within the caps: those the
        coming match cannot use before those it can, each the longest idle first."""
        idle = [s for group in self._idle.values() for s in group]
        idle.sort(key=lambda s: (self._useful(s), self._idle_since.get(id(s), 0)))
        return idle

    # -- giving back -----------------------------------------------------------------------

    async def release(self, sessions: Sequence[BotSession]) -> None:
        """Return healthy sessions to the pool; close faulted, worn-out or surplus ones.

        At most ``max_idle`` idle processes are kept per seat a bot takes, and at most
        ``max_idle_total`` in all; beyond either, the ones the coming match (:meth:`warm`)
        cannot use go first, then the longest idle (an older one has seen more deals and
        can serve fewer of the matches to come).
        """
        closing: list[BotSession] = []
        for session in sessions:
            self._lent.pop(id(session), None)
            self._served[id(session)] = self._served.get(id(session), 0) + 1
            if session.alive and self._served[id(session)] < self.max_matches:
                key = self._key(session.spec)
                idle = self._idle.setdefault(key, [])
                idle.append(session)
                self._idle_since[id(session)] = next(self._idle_order)
                while len(idle) > self.max_idle * self._width.get(key, 1):
                    surplus = min(idle, key=lambda s: (self._useful(s), self._idle_since[id(s)]))
                    idle.remove(surplus)
                    closing.append(surplus)
            else:
                closing.append(session)
        closing += self._over_total()
        resting = [s for s in sessions if s not in closing]
        if self.close_behind:
            for session in closing:
                self._close_later(session)
        elif closing:
            # Out of the pool already: cancelled half-way, they would be stopped by nobody.
            await asyncio.shield(
                asyncio.gather(*(self._close(s) for s in closing), return_exceptions=True)
            )
        if resting and self.freeze_idle:
            await asyncio.gather(*(s.freeze() for s in resting), return_exceptions=True)

    def _over_total(self) -> list[BotSession]:
        """Take the idle sessions beyond ``max_idle_total`` out of the pool (see release)."""
        idle = self._evictable()
        surplus = idle[: max(0, self._kept() - self._cap())]
        for session in surplus:
            self._idle[self._key(session.spec)].remove(session)
            self._idle_since.pop(id(session), None)
        return surplus

    async def discard(self, sessions: Sequence[BotSession]) -> None:
        """Stop sessions that must not be reused (their match broke off half-way)."""
        for session in sessions:
            self._lent.pop(id(session), None)
        await asyncio.shield(asyncio.gather(*(self._close(s) for s in sessions)))

    def _close_later(self, session: BotSession) -> None:
        """Close a session in the background (making room for a warm start, or given up
        with ``close_behind``); :meth:`aclose` waits for it."""
        closing = asyncio.ensure_future(self._close(session))
        self._closing.add(closing)
        closing.add_done_callback(self._closed_behind)

    def _closed_behind(self, closing: asyncio.Future[None]) -> None:
        """A background close ended (see :meth:`_close_later`)."""
        self._closing.discard(closing)
        if self.close_behind and self._coming is not None:
            # Its room is free now: start what the coming match still lacks.
            _, deal_key, bots = self._coming
            self.warm(bots, deal_key)

    async def _close(self, session: BotSession) -> None:
        self._deals.pop(id(session), None)
        self._served.pop(id(session), None)
        self._idle_since.pop(id(session), None)
        await session.thaw()  # a frozen bot could not read its bye
        await session.close()

    async def aclose(self) -> None:
        """Stop the bots starting ahead, then say ``bye`` to every idle bot and stop it."""
        self._shut = True  # nothing starts ahead any more, even when a close makes room
        self._coming = None
        warming = [task for group in self._warming.values() for task in group]
        for task in warming:
            task.cancel()
        await asyncio.gather(*warming, return_exceptions=True)
        self._warming.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)
        idle = [s for group in self._idle.values() for s in group]
        self._idle.clear()
        await asyncio.gather(*(self._close(s) for s in idle), return_exceptions=True)


@dataclass(frozen=True)
class PreflightFailure:
    """An entrant that failed its handshake before the first match: ``ended`` when its
    process ended (or never started) without answering, so every match would forfeit."""

    bot: str
    detail: str
    ended: bool


async def preflight(
    sandbox: Sandbox,
    bots: Sequence[BotSpec],
    limits: Limits,
    time_control: TimeControl,
    *,
    at_once: int = 2,
) -> list[PreflightFailure]:
    """Start each of ``bots`` (staged) in ``sandbox``, greet it and say ``bye``, at most
    ``at_once`` at a time; the ones that did not answer ``ready``, in the order given.

    What a run does before any match is dealt, so that a bot that cannot start in the
    tournament's own sandbox and image is reported at once, not forfeited in every match.
    """
    gate = asyncio.Semaphore(at_once)

    async def one(spec: BotSpec) -> PreflightFailure | None:
        async with gate:
            clock = MonotonicClock()
            started = clock.monotonic()
            try:
                session = await BotSession.start(sandbox, spec, limits, clock=clock)
            except (InfrastructureError, UsageError) as exc:
                return PreflightFailure(spec.name, f"cannot start: {exc}", True)
            try:
                await session.hello(1, time_control, started)
            except BotFault as fault:
                await session.forfeit(fault)
                await session.close(bye=False)
                stderr = session.stderr_report(400).strip()
                detail = fault.detail + (f"; its stderr: {stderr}" if stderr else "")
                return PreflightFailure(spec.name, detail, fault.kind == "crash")
            await session.close()
            return None

    found = await asyncio.gather(*(one(spec) for spec in bots))
    return [failure for failure in found if failure is not None]
