"""``referee bot check``: a compliance run for one bot, like fastchess's ``--compliance``.

A bot that passes here behaves in a tournament: it starts and answers ``hello`` in time,
answers every kind of request (``play``, ``give``, ``leftover``) under every preset at the
smallest and the largest table, and plays a second match on the same process. The steps:

1. **handshake**: start the bot, time ``hello`` → ``ready`` against ``hello_ms``;
2. **every preset at 3 and 6 seats**: a short match (:data:`CHECK_ROUNDS` rounds) with the
   bot at seat 0 and the sample bots elsewhere, on a deal from :data:`SEEDS` chosen so that
   the bot is asked every request kind the preset has (a ``give`` where the president
   chooses what to give back, a ``leftover`` where leftovers are swapped). Which seat gets
   which request depends on the places, so on the bot's own play: while a kind was not
   asked the next seed of the list is played, and a kind still never asked after the last
   is reported, in the step's note and in the summary (those replies are untested);
3. **reuse**: two matches in a row at a table of their own (:data:`REUSE`), as a
   tournament worker plays them.

A match step fails on a fault, and also when the bot's kit replaced any of its decisions
with a safe one (the kits' safety net writes a marker line on stderr for each,
:mod:`referee.protocol.kit`): a tournament would play the safe moves, and the author would
never learn of the bug.

The sample bots are deterministic (the random one seeds itself from the match id and its
seat), so a given bot meets the same deals and the same replies every time it is checked.

**One process across the steps.** The bot under test keeps the handshake's process for
every step, as a tournament worker keeps one for many matches (the protocol lets a process
play match after match, ``protocol/SPEC.md`` section 11): every match after its first
proves reuse, and the reuse step adds two at a table of its own. The process is lent once
by a pool of its own (:class:`~referee.protocol.seats.SessionPool`, one block per process)
and held by the run (:meth:`ComplianceRun.own_process`) until a step fails: it is then
given up (:meth:`ComplianceRun.let_go`, stopped in the background with ``ahead``) and the
next step starts a fresh one, so a failure never spills into the next step, and each step's
findings are those of its own matches. A fault in a process's second match or later says
its number, and the reuse hint when the bot answered nothing in that match. Its ``bye`` is
checked at the end of a run whose last step passed (:meth:`ComplianceRun.say_bye`): a bot
killed after it is said in the summary. The bots' decisions do not depend on the matches
before (each resets on ``match_start``), so the pinned deals ask the same as on fresh
processes.

**The opponents.** Their processes are pooled across the run (a second
:class:`~referee.protocol.seats.SessionPool`), and the largest table's are started once
the bot's first process is greeted. They are ours, shipped with the referee: beside a bot
in Docker they run in the process sandbox (:func:`opponents_sandbox`), where a start costs
a small part of a container's CPU; a match mixes the two, each seat started by its pool's
sandbox. Neither pool freezes its idle bots: the sample bots are ours, and ``docker pause``
and ``unpause`` would cost time in every match. Both are seated the one way
(:func:`~referee.protocol.seats.seated`): the bot under test's process is seated alone,
then takes seat 0 of each match, an occupied seat among the borrowed opponents. By default
the run stops at the first failed step (a bot that never flushes would otherwise wait out
every step's clock); ``keep_going`` runs them all.

``referee submit`` runs the same steps for one tournament (:func:`check_entry`): the
handshake, the tournament's rules at its table size on the same pinned deals
(:func:`seeds_for`), one match of those rules played to its end (its target or its
rounds, as the tournament plays it: a bot that breaks in round 4 passes three-round
matches), and reuse at that table, stopping at the first failure.

Every problem is told by :func:`referee.explain.explain_fault`, the words ``play`` and
``submit`` use too. The report also gives the bot's reply times against ``move_ms`` and its
peak memory when the sandbox measures it (``None``, said as "not measured", otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import math
import statistics
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.clock import Clock, MonotonicClock
from referee.explain import explain_fault, explain_replacements
from referee.match.runner import play_match, run_in_command, seat_of
from referee.protocol.seats import SessionPool, seated
from referee.protocol.session import BotSession
from referee.results import FaultInfo, MatchResult
from referee.rules import PRESETS, RuleSet
from referee.rules.ruleset import ResolvedRules
from referee.sandbox.base import BotSpec, Limits, Sandbox
from referee.specs import TimeControl

__all__ = [
    "BOT_PROCESSES",
    "CHECK_ROUNDS",
    "FALLBACK_SEEDS",
    "OPPONENTS",
    "REQUEST_KINDS",
    "SEEDS",
    "TABLES",
    "CheckReport",
    "ComplianceRun",
    "Step",
    "check_entry",
    "kinds_for",
    "opponents_sandbox",
    "run_check",
    "seeds_for",
]

CHECK_ROUNDS = 3
"""Rounds per match: round 1 sets the roles, rounds 2 and 3 exchange (give, leftover)."""
OPPONENTS = ("heuristic", "lowest", "random")
TABLES = (3, 6)
MOST_OPPONENTS = 2 * (max(TABLES) - 1)
"""Sample bot processes alive at once at most: the opponents at the largest table, and as
many kept idle by the pool (its cap is the largest table it seated)."""
BOT_PROCESSES = 2
"""Processes of the bot under test alive at once at most (``ahead`` at its default of
:func:`run_check`, ``BOT_PROCESSES - 1``): the one playing, and after a failed step the
failed one being stopped behind while the next step's starts."""
REQUEST_KINDS = ("play", "give", "leftover")
REUSE = ("arschloch", 4, (1, 2))
"""The reuse step: preset, seats and the seeds of its two matches."""

SEEDS: dict[tuple[str, int], tuple[int, ...]] = {
    ("arschloch", 3): (36, 38),
    ("arschloch", 6): (9, 16),
    ("arschloch-high10", 3): (6, 36),
    ("arschloch-high10", 6): (41,),
    ("arschloch-52", 3): (6, 17, 23),
    ("arschloch-52", 6): (46,),
    ("trou-du-cul", 3): (52,),
    ("trou-du-cul", 6): (9,),
    ("president-es", 3): (1,),
    ("president-es", 6): (1,),
}
"""Deals per preset and table size, tried in order until the bot was asked every kind.

Searched with the bots emulated in-process (``python -m tests.match.emulated_bots``): the
first seed asks the most of the ``referee bot new`` bot, the ``heuristic`` and the ``random``
sample bot for every kind of request the preset has, and the seeds after it complete what is
missing; ``tests/test_compliance.py`` proves it for all three (``president-es`` has only
``play``).
"""

FALLBACK_SEEDS = (1, 2, 3)
"""The deals tried for rules that are not a preset's name."""

_REUSE_HINT = (
    "hint: after match_end the bot must keep reading: another match_start may follow on the "
    "same process; only bye (or the end of its input) ends it"
)


def kinds_for(rules: ResolvedRules) -> tuple[str, ...]:
    """The request kinds a seat may be asked under ``rules`` (``play`` always)."""
    kinds = ["play"]
    seats = rules.players or 0
    if rules.return_choice == "choose" and rules.exchange:
        kinds.append("give")
    leftover_cards = 4 * len(rules.ranks) % seats if seats and rules.deal == "equal" else 0
    if rules.leftovers == "swap" and leftover_cards:
        kinds.append("leftover")
    return tuple(kinds)


@dataclass
class Step:
    """One step of the run and what came of it."""

    name: str
    ok: bool = True
    note: str = ""
    preset: str | None = None
    seats: int | None = None
    seeds: list[int] = field(default_factory=list)
    asked: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)
    problem: list[str] = field(default_factory=list)
    fault: FaultInfo | None = None
    kit_replaced: int = 0
    """Decisions the bot's kit replaced with safe ones in this step's matches."""
    stderr: str | None = None
    logs: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "note": self.note,
            "preset": self.preset,
            "seats": self.seats,
            "seeds": self.seeds,
            "asked": dict(self.asked),
            "not_asked": self.missing,
            "problem": self.problem,
            "fault": self.fault.model_dump(mode="json") if self.fault else None,
            "kit_replaced": self.kit_replaced,
            "stderr": self.stderr,
            "logs": self.logs,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class CheckReport:
    """Everything a check found; :attr:`passed` decides the exit code."""

    bot: str
    path: str
    sandbox: str
    time_control: TimeControl
    limits: Limits
    steps: list[Step] = field(default_factory=list)
    ready_ms: int | None = None
    reply_ms: list[float] = field(default_factory=list)
    peak_memory: int | None = None
    stopped_early: bool = False
    planned: int = 0
    """The steps of the whole check, run or not (a run stops at its first failure)."""
    opponents_sandbox: str | None = None
    """Where the sample bots ran, when not in :attr:`sandbox` (:func:`opponents_sandbox`)."""
    killed_after_bye: bool = False
    """The bot's last process did not exit within 1 s of ``bye`` and was killed."""

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps) and not self.stopped_early

    @property
    def asked(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for step in self.steps:
            total.update(step.asked)
        return total

    @property
    def not_asked(self) -> list[str]:
        return [f"{kind} ({s.name})" for s in self.steps for kind in s.missing]

    def reply_stats(self) -> dict[str, float] | None:
        """Median, 99th percentile (nearest rank) and maximum reply time in ms."""
        times = sorted(self.reply_ms)
        if not times:
            return None
        p99 = times[max(0, math.ceil(0.99 * len(times)) - 1)]
        return {
            "median": round(statistics.median(times), 2),
            "p99": round(p99, 2),
            "max": round(times[-1], 2),
        }

    def as_json(self) -> dict[str, Any]:
        """The report as one JSON object (``referee bot check --json``)."""
        return {
            "bot": self.bot,
            "path": self.path,
            "passed": self.passed,
            "sandbox": self.sandbox,
            "time": self.time_control.model_dump(),
            "limits": vars(self.limits),
            "ready_ms": self.ready_ms,
            "steps": [s.as_json() for s in self.steps],
            "stopped_early": self.stopped_early,
            "steps_planned": self.planned,
            "opponents_sandbox": self.opponents_sandbox or self.sandbox,
            "killed_after_bye": self.killed_after_bye,
            "kit_replaced": sum(s.kit_replaced for s in self.steps),
            "asked": dict(self.asked),
            "not_asked": self.not_asked,
            "reply_ms": {"count": len(self.reply_ms), **(self.reply_stats() or {})},
            "peak_memory_bytes": self.peak_memory,
            "memory_limit_bytes": self.limits.memory_mb * 1024 * 1024,
        }


Progress = Callable[[Step], None]
StepRun = Callable[[], Awaitable[Step]]
"""One step of a run, to be awaited: a bound method, or one with its arguments given."""


def seeds_for(preset: str, seats: int) -> tuple[int, ...]:
    """The deals tried for ``preset`` at ``seats``: the pinned :data:`SEEDS`, else the
    preset's pinned seeds of both table sizes in turn (a table of 4 or 5, a custom ruleset
    named after its preset), else :data:`FALLBACK_SEEDS`. A request kind never asked on
    them is reported, not failed."""
    if (preset, seats) in SEEDS:
        return SEEDS[preset, seats]
    pinned = [seed for n in TABLES for seed in SEEDS.get((preset, n), ())]
    return tuple(dict.fromkeys(pinned)) or FALLBACK_SEEDS


class ComplianceRun:
    """One check: the sandbox, the bots (staged, or fakes in tests), the opponents' pool and
    the report it fills; :meth:`run` plays the steps, each step is a method too. Every
    process and step is timed on ``clock`` (a test's fake clock, or the real one)."""

    def __init__(
        self,
        sandbox: Sandbox,
        bot: BotSpec,
        opponents: dict[str, BotSpec],
        report: CheckReport,
        log_dir: Path | None = None,
        progress: Progress | None = None,
        *,
        clock: Clock | None = None,
        ahead: int = 0,
        opponent_sandbox: Sandbox | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.opponent_sandbox = opponent_sandbox or sandbox
        """Where the sample bots run: the bot's sandbox, or the process sandbox beside a
        container (:func:`opponents_sandbox`)."""
        self.bot = bot
        self.opponents = opponents
        self.report = report
        self.tc = report.time_control
        self.limits = report.limits
        self.log_dir = log_dir
        self.progress = progress or (lambda step: None)
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.pool = SessionPool(
            self.opponent_sandbox,
            report.limits,
            report.time_control,
            clock=self.clock,
            freeze_idle=False,
        )
        self.ids: itertools.count[int] = self.pool.ids
        self.ahead = int(ahead)
        """Processes of the bot alive at once beside its step's: a failed one being stopped
        behind while the next step's starts (0: one at a time; see the module docstring)."""
        # One block per process: a process is lent once, for the steps it serves, and never
        # idle in the pool. Ids shared with the opponents, who sit at the same tables.
        self.own = SessionPool(
            sandbox,
            report.limits,
            report.time_control,
            clock=self.clock,
            max_matches=1,
            max_idle=1,
            max_idle_total=self.ahead,
            request_ids=self.ids,
            freeze_idle=False,
            close_behind=self.ahead > 0,
        )
        self._held: tuple[contextlib.AsyncExitStack, BotSession] | None = None
        self._matches = 0  # matches the held process has played
        self._tables: Sequence[int] = ()  # whose opponents start with the first process

    # -- the bot under test ----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def own_process(self) -> AsyncIterator[BotSession]:
        """The bot's process for a step: the one the steps before played on, else a fresh,
        greeted one (its fault set when ``hello`` failed), seated alone and kept until a
        step fails (:meth:`let_go`) or the run ends. Its peak memory is noted after the
        step."""
        if self._held is None:
            stack = contextlib.AsyncExitStack()
            table = await stack.enter_async_context(seated([self.bot], pool=self.own))
            self._held = (stack, table.bots[0])
            self._matches = 0
            if table.bots[0].fault is None:  # else the run may stop here: start nothing
                self._warm()
        session = self._held[1]
        try:
            yield session
        finally:
            await asyncio.shield(self.note_peak(session))

    async def let_go(self, error: BaseException | None = None) -> None:
        """Give the held process up (after a failed step, or at the end): the pool stops it,
        in the background with :attr:`ahead`; the next step starts a fresh one. With
        ``error`` (the run broke off) it is stopped at once, mid-conversation as it may be."""
        held, self._held = self._held, None
        if held is not None:
            stack = held[0]
            if error is None:
                await stack.aclose()
            else:
                await stack.__aexit__(type(error), error, error.__traceback__)

    def _warm(self) -> None:
        """Start every opponent of the largest table once the bot's first process is
        greeted (all the steps are known, so they can be started before they are needed),
        so that the handshake's time is not the machine's time to start all of them."""
        if self._tables:
            seats = max(self._tables)
            self._tables = ()
            specs = [self.opponents[OPPONENTS[i % len(OPPONENTS)]] for i in range(seats - 1)]
            self.pool.max_idle_total = max(self.pool.max_idle_total or 0, seats - 1)
            self.pool.warm(specs, None)

    async def note_peak(self, session: BotSession) -> None:
        """Note the process's peak memory (before it is stopped, which frees the counter)."""
        peak = await session.channel.proc.peak_memory()
        if peak is not None:
            self.report.peak_memory = max(peak, self.report.peak_memory or 0)

    async def stop(self, session: BotSession) -> bool:
        """Note its peak memory, say ``bye``; True when it had to be killed after ``bye``."""
        await self.note_peak(session)
        was_alive = session.alive
        info = await session.close()
        return was_alive and info.signal is not None

    # -- the steps ---------------------------------------------------------------------------

    async def handshake(self) -> Step:
        """Start the bot and time ``hello`` against ``hello_ms``; the process goes on to the
        next step (its ``bye`` is checked at the end of the run, :meth:`say_bye`)."""
        step = Step("handshake")
        started = self.clock.monotonic()
        async with self.own_process() as session:
            step.seconds = self.clock.monotonic() - started
            if session.fault is not None:
                self._fail(step, _fault_info(session), session.stderr_report())
                return step
            self.report.ready_ms = ready = session.ready_ms
            step.note = f"ready in {ready} ms (hello_ms {self.tc.hello_ms})"
            if session.ready_name is not None and session.ready_name != self.bot.name:
                step.note += (
                    f"; its ready names it {session.ready_name!r}, shown: {self.bot.name!r}"
                )
            if ready is not None and ready > self.tc.hello_ms // 2:
                step.note += "; over half of hello_ms: a loaded machine may time it out"
        return step

    async def say_bye(self) -> None:
        """At the end of a run whose last step passed: say ``bye`` to the held process and
        note in the report whether it had to be killed after it."""
        if self._held is not None and self._held[1].alive:
            self.report.killed_after_bye = await self.stop(self._held[1])

    async def preset(self, preset: str, seats: int, seeds: Sequence[int] | None = None) -> Step:
        """The preset's matches at ``seats``, seed after seed (of :data:`SEEDS`, or ``seeds``)
        until the bot was asked every kind of request."""
        return await self.rules(RuleSet.preset(preset), seats, seeds or SEEDS[(preset, seats)])

    async def rules(self, ruleset: RuleSet, seats: int, seeds: Sequence[int]) -> Step:
        """Short matches (:data:`CHECK_ROUNDS` rounds) of ``ruleset`` at ``seats``, seed
        after seed until the bot was asked every kind of request the rules have."""
        rules = ruleset.with_overrides(max_rounds=CHECK_ROUNDS).resolve(seats)
        wanted = kinds_for(rules)
        preset = ruleset.name
        step = Step(f"{preset} at {seats} seats", preset=preset, seats=seats)
        started = self.clock.monotonic()
        for seed in seeds:
            step.seeds.append(seed)
            async with self.own_process() as session:
                await self._play(step, session, rules, seed, f"check-{preset}-{seats}-{seed}")
            if not step.ok or all(step.asked[k] for k in wanted):
                break
        if step.ok:
            step.missing = [k for k in wanted if not step.asked[k]]
        step.seconds = self.clock.monotonic() - started
        if step.ok:
            step.note = _asked_note(step, wanted)
        return step

    async def full_match(self, ruleset: RuleSet, seats: int, seed: int) -> Step:
        """One match of ``ruleset`` at ``seats`` played to its end, as a tournament plays
        it (its target or its rounds, never :data:`CHECK_ROUNDS`): a bot that breaks in a
        later round (a key it never met in the first three) fails here, not in the
        tournament."""
        rules = ruleset.resolve(seats)
        step = Step(
            f"a full match of {ruleset.name} at {seats} seats", preset=ruleset.name, seats=seats
        )
        started = self.clock.monotonic()
        step.seeds.append(seed)
        result = None
        async with self.own_process() as session:
            match_id = f"check-full-{ruleset.name}-{seats}-{seed}"
            result = await self._play(step, session, rules, seed, match_id)
        step.seconds = self.clock.monotonic() - started
        if step.ok and result is not None:
            step.note = f"played to the end: {result.rounds} rounds; asked {_counts(step.asked)}"
        elif result is not None and step.problem:
            at = _fault_round(result)
            if at is not None and at > CHECK_ROUNDS:
                step.problem.insert(
                    0, f"(in round {at}: past the {CHECK_ROUNDS} rounds of the short matches)"
                )
        return step

    async def reuse(self, ruleset: RuleSet | None = None, seats: int | None = None) -> Step:
        """Two matches on one process: the second is where a one-match bot fails (on the
        seeds of :data:`REUSE`; by default with its preset and table too)."""
        preset, default_seats, seeds = REUSE
        ruleset = ruleset if ruleset is not None else RuleSet.preset(preset)
        seats = seats if seats is not None else default_seats
        rules = ruleset.with_overrides(max_rounds=CHECK_ROUNDS).resolve(seats)
        step = Step("reuse: two matches on one process", preset=ruleset.name, seats=seats)
        started = self.clock.monotonic()
        async with self.own_process() as session:
            for n, seed in enumerate(seeds, 1):
                step.seeds.append(seed)
                await self._play(step, session, rules, seed, f"check-reuse{n}-{seed}")
                if not step.ok:
                    break
        step.seconds = self.clock.monotonic() - started
        if step.ok:
            step.note = f"{len(seeds)} matches on one process; asked {_counts(step.asked)}"
        return step

    # -- one match ---------------------------------------------------------------------------

    async def _play(
        self, step: Step, session: BotSession, rules: ResolvedRules, seed: int, match_id: str
    ) -> MatchResult | None:
        """One match with the bot at seat 0; its requests and fault go into ``step``.
        Returns the match's result (``None``: the bot had failed before it)."""
        if session.fault is not None:
            self._fail(step, _fault_info(session), session.stderr_report())
            return None
        session.record = []
        self._matches += 1
        result = await self._match(session, rules, seed, match_id)
        step.asked.update(kind for kind, _ in session.record)
        self.report.reply_ms.extend(ms for _, ms in session.record)
        if result.log is not None:
            step.logs.append(result.log)
        mine = seat_of(result, 0)
        fault = mine.fault
        step.kit_replaced += mine.kit_replaced
        if fault is not None:
            if fault.request is not None and fault.request.get("id") == fault.request_id:
                step.asked[str(fault.request.get("kind", "hello"))] += 1
            self._fail(step, fault, result.stderr_tails.get(0))
            log = f", match log {result.log}" if result.log is not None else ""
            step.problem.insert(0, f"(seed {seed}{log})")
            if self._matches > 1:
                _later_match(step, self._matches, answered=bool(session.record))
        elif mine.kit_replaced:
            log = f", match log {result.log}" if result.log is not None else ""
            step.ok = False
            step.problem = [
                f"(seed {seed}{log})",
                *explain_replacements(mine.kit_replaced, mine.kit_replacements),
            ]
        return result

    async def _match(
        self, session: BotSession, rules: ResolvedRules, seed: int, match_id: str
    ) -> MatchResult:
        """The bot's process at seat 0, the opponents borrowed from the pool around it."""
        n = rules.players
        assert n is not None  # a resolved ruleset knows its table
        specs = [self.opponents[OPPONENTS[i % len(OPPONENTS)]] for i in range(n - 1)]
        log = None if self.log_dir is None else self.log_dir / f"{match_id}.jsonl"
        async with seated(specs, pool=self.pool, occupied={0: session}) as table:
            return await play_match(table, rules, seed, match_id=match_id, log_path=log)

    def _fail(self, step: Step, fault: FaultInfo, stderr: str | None) -> None:
        step.ok = False
        step.fault = fault
        step.stderr = stderr
        step.problem = explain_fault(fault, stderr)

    # -- the run -------------------------------------------------------------------------------

    def preset_steps(self, presets: Sequence[str]) -> list[StepRun]:
        """``referee bot check``'s steps: the handshake, every preset at 3 and 6 seats,
        reuse."""
        steps: list[StepRun] = [self.handshake]
        steps += [functools.partial(self.preset, p, seats) for p in presets for seats in TABLES]
        steps.append(self.reuse)
        return steps

    def tournament_steps(self, ruleset: RuleSet, seats: int) -> list[StepRun]:
        """``referee submit``'s steps: the same, for one tournament's rules at its table
        size (on :func:`seeds_for` them), then one match of those rules played to its end
        (:meth:`full_match`, on the first of those deals), reuse included."""
        seeds = seeds_for(ruleset.name, seats)
        return [
            self.handshake,
            functools.partial(self.rules, ruleset, seats, seeds),
            functools.partial(self.full_match, ruleset, seats, seeds[0]),
            functools.partial(self.reuse, ruleset, seats),
        ]

    async def run(
        self, steps: Sequence[StepRun], keep_going: bool = False, tables: Sequence[int] = ()
    ) -> None:
        """Every step in order (:meth:`preset_steps` or :meth:`tournament_steps`); stops
        after a failed handshake, or any failure unless ``keep_going``. ``tables``: the
        table sizes the steps play at, whose opponents start once the bot's first process
        is greeted (else when a step needs them). The opponents' processes are stopped at
        the end."""
        self.report.planned = len(steps)
        self._tables = tables
        try:
            for i, make in enumerate(steps):
                step = await make()
                self.report.steps.append(step)
                self.progress(step)
                if not step.ok:
                    await self.let_go()  # a fresh process for the next step
                    if i == 0 or not keep_going:
                        self.report.stopped_early = i < len(steps) - 1
                        return
            await self.say_bye()
        except BaseException as error:
            await asyncio.shield(self.let_go(error))
            raise
        finally:
            await asyncio.shield(self.let_go())
            await self.own.aclose()
            await self.pool.aclose()


def _fault_round(result: MatchResult) -> int | None:
    """The round the bot at seat 0 failed in (``None`` when its fault does not say)."""
    fault = seat_of(result, 0).fault
    return fault.round if fault is not None else None


def _later_match(step: Step, n: int, answered: bool) -> None:
    """Say that the fault came in a later match of the process; when the bot answered
    nothing in that match, the likely cause first: it ignores a second ``match_start``."""
    step.problem.insert(0, f"(in the match number {n} of this process)")
    if answered:
        return
    hints = [i for i, line in enumerate(step.problem) if line.startswith(("hint:", "stderr"))]
    step.problem.insert(hints[0] if hints else len(step.problem), _REUSE_HINT)


def _fault_info(session: BotSession) -> FaultInfo:
    """The fault record of a bot that failed ``hello`` (no match was played)."""
    fault = session.fault
    assert fault is not None
    return FaultInfo(
        kind=fault.kind,
        detail=fault.detail,
        request_id=fault.request_id,
        reply=fault.reply,
        elapsed_ms=fault.elapsed_ms,
        request=session.last_request_data(),
    )


def _counts(asked: Counter[str]) -> str:
    return ", ".join(f"{kind} {asked[kind]}" for kind in REQUEST_KINDS if asked[kind]) or "nothing"


def _asked_note(step: Step, wanted: Sequence[str]) -> str:
    seeds = ", ".join(map(str, step.seeds))
    note = f"seed{'s' if len(step.seeds) > 1 else ''} {seeds}: asked {_counts(step.asked)}"
    if step.missing:
        note += f"; never asked: {', '.join(step.missing)} (its places did not lead there)"
    elif len(wanted) > 1:
        note += " (every kind)"
    return note


def step_lines(step: Step) -> list[str]:
    """A finished step for people: ``ok``/``FAIL``, its name and note, the problem below."""
    head = f"{'ok  ' if step.ok else 'FAIL'}  {step.name}"
    if step.note:
        head += f": {step.note}"
    return [f"{head}  [{step.seconds:.1f} s]", *("        " + line for line in step.problem)]


def summary_lines(report: CheckReport) -> list[str]:
    """The end of a report: requests, reply times, memory and the verdict."""
    tc, lines = report.time_control, []
    lines.append(f"requests asked: {_counts(report.asked)}")
    stats = report.reply_stats()
    if stats is not None:
        lines.append(
            f"reply times: median {stats['median']} ms, p99 {stats['p99']} ms, "
            f"max {stats['max']} ms (move_ms {tc.move_ms})"
        )
    limit = report.limits.memory_mb
    if report.peak_memory is not None:
        lines.append(f"peak memory: {report.peak_memory / 2**20:.1f} MiB of {limit} MiB")
    else:
        lines.append(
            f"peak memory: not measured (this sandbox gives no counter here); limit {limit} MiB"
        )
    if report.not_asked:
        lines.append(
            f"never asked: {'; '.join(report.not_asked)} (on every deal tried, the bot's "
            "places did not lead there: those replies are untested)"
        )
    if report.killed_after_bye:
        lines.append("bye: the bot did not exit within 1 s of bye and was killed")
    failed = sum(not s.ok for s in report.steps)
    if report.passed:
        lines.append(f"PASSED: all {len(report.steps)} steps")
    else:
        planned = max(report.planned, len(report.steps))
        not_run = planned - len(report.steps)
        stop = ""
        if report.stopped_early and not_run and len(report.steps) == 1:
            stop = f"; {not_run} not run: none can run without a handshake"
        elif report.stopped_early and not_run:
            stop = f"; stopped at the first failure, {not_run} not run (--keep-going runs all)"
        lines.append(f"FAILED: {failed} of {planned} steps failed{stop}")
    return lines


def header_lines(report: CheckReport) -> list[str]:
    """What is checked, where, and under which limits."""
    tc, lim = report.time_control, report.limits
    theirs = report.opponents_sandbox
    where = f" (in the {theirs.partition(':')[0]}: ours, trusted)" if theirs else ""
    return [
        f"bot check: {report.bot} ({report.path})",
        f"sandbox: {report.sandbox}",
        f"limits: {tc.describe()}; {lim.describe()}",
        f"opponents: the sample bots {', '.join(OPPONENTS)}{where}; {CHECK_ROUNDS} rounds a match",
    ]


def run_check(
    bot: BotSpec,
    sandbox: Sandbox,
    *,
    time_control: TimeControl | None = None,
    limits: Limits | None = None,
    presets: Sequence[str] | None = None,
    keep_going: bool = False,
    log_dir: Path | None = None,
    on_start: Callable[[CheckReport], None] | None = None,
    progress: Progress | None = None,
    ahead: int = BOT_PROCESSES - 1,
) -> CheckReport:
    """Check ``bot`` (as loaded) in ``sandbox``; stages the bots, stops everything after.

    Ctrl-C and SIGTERM stop the run with every bot stopped (:mod:`referee.interrupts`).
    Match logs go to ``log_dir`` when given. ``on_start`` is called with the empty report
    (what is checked, where), ``progress`` with each finished step. ``ahead``: how many
    processes of the bot may be alive beside the one playing: one that failed a step, being
    stopped while the next step's starts (0: one at a time; see the module docstring).
    """
    from referee.sandbox import make_staging_root, remove_staging_root, stage_bot

    report = _new_report(bot, sandbox, time_control, limits)
    theirs = opponents_sandbox(sandbox)
    report.opponents_sandbox = theirs.describe() if theirs is not None else None
    if on_start is not None:
        on_start(report)
    # One staging folder for the whole run, not one per table: the pooled opponents serve
    # many steps, and the bot under test plays the same bytes in every step.
    staging = make_staging_root()
    try:
        staged = stage_bot(bot, staging)
        steps = functools.partial(ComplianceRun.preset_steps, presets=list(presets or PRESETS))
        run = _Run(staged, sandbox, theirs, report, staging, steps, TABLES, progress, ahead)
        run.go(keep_going, log_dir)
    finally:
        remove_staging_root(staging)
    return report


def check_entry(
    staged: BotSpec,
    sandbox: Sandbox,
    ruleset: RuleSet,
    seats: int,
    *,
    time_control: TimeControl,
    limits: Limits,
    on_start: Callable[[CheckReport], None] | None = None,
    progress: Progress | None = None,
) -> CheckReport:
    """The check ``referee submit`` runs: bot check's steps for one tournament.

    The handshake, short matches of the tournament's ``ruleset`` at its table of ``seats``
    on the pinned deals (:func:`seeds_for`), one match of it played to its end, and two
    matches on one process, under the
    tournament's clock and limits; it stops at the first failure (a few seconds for a bot
    that answers at once). ``staged`` is played as it is, never staged again: the caller
    staged the bytes it holds and enters what passed. The opponents are staged here.
    """
    from referee.sandbox import make_staging_root, remove_staging_root

    report = _new_report(staged, sandbox, time_control, limits)
    theirs = opponents_sandbox(sandbox)
    report.opponents_sandbox = theirs.describe() if theirs is not None else None
    if on_start is not None:
        on_start(report)
    staging = make_staging_root()
    try:
        steps = functools.partial(ComplianceRun.tournament_steps, ruleset=ruleset, seats=seats)
        _Run(staged, sandbox, theirs, report, staging, steps, (seats,), progress).go(False, None)
    finally:
        remove_staging_root(staging)
    return report


def _new_report(
    bot: BotSpec, sandbox: Sandbox, time_control: TimeControl | None, limits: Limits | None
) -> CheckReport:
    return CheckReport(
        bot=bot.name,
        path=str(bot.folder / bot.single_file if bot.single_file else bot.folder),
        sandbox=sandbox.describe(),
        time_control=time_control or TimeControl(),
        limits=limits or Limits(),
    )


def opponents_sandbox(sandbox: Sandbox) -> Sandbox | None:
    """The process sandbox for the sample bots of a check whose bot runs in Docker, or
    ``None``: they run in ``sandbox`` itself.

    The sample bots are ours, shipped with the referee (``@NAME``), so they need no
    container of their own, and a process starts and stops for a small part of a
    container's CPU. A match then mixes sandboxes: each seat's process is started by its
    pool's sandbox, and the match talks to every seat the same way. They stay in
    ``sandbox`` when it is not Docker, and when the process sandbox is not fully available
    here (bubblewrap or the seccomp filter does not work: it would run them less confined,
    and warn about it, in a check that asked for Docker).
    """
    if sandbox.name != "docker":
        return None
    from referee.errors import InfrastructureError, UsageError
    from referee.sandbox import ProcessSandbox

    try:
        process = ProcessSandbox()
        if not process.bwrap_status().works or not process.seccomp_filter().works:
            return None
    except (InfrastructureError, UsageError, OSError):
        return None
    return process


@dataclass
class _Run:
    """What a check needs to run: the staged bot, its sandbox and its opponents' (``None``:
    the same), the report, where the sample bots are staged, the steps and the tables."""

    staged: BotSpec
    sandbox: Sandbox
    theirs: Sandbox | None
    report: CheckReport
    staging: Path
    steps: Callable[[ComplianceRun], list[StepRun]]
    tables: Sequence[int]
    progress: Progress | None
    ahead: int = 0

    def go(self, keep_going: bool, log_dir: Path | None) -> None:
        """The sample bots staged, then the steps; both sandboxes closed after."""
        from referee.resources import sample_bot
        from referee.sandbox import load_bot, stage_bot

        opponents = {
            name: stage_bot(load_bot(sample_bot(name)), self.staging) for name in OPPONENTS
        }
        check = ComplianceRun(
            self.sandbox,
            self.staged,
            opponents,
            self.report,
            log_dir,
            self.progress,
            ahead=self.ahead,
            opponent_sandbox=self.theirs,
        )
        theirs = self.theirs

        async def main() -> None:
            try:
                await check.run(self.steps(check), keep_going, self.tables)
            finally:
                if theirs is not None:
                    await asyncio.shield(theirs.aclose())

        run_in_command(main, self.sandbox)
