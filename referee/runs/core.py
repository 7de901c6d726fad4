"""The run core: one loop for every kind of run, extended by a :class:`Planner`'s hooks.

:func:`play` is the only writer of a results store. It takes the folder's lock (wiping it
first on ``restart``), opens the :class:`~referee.tournament.store.Store` on the run's wall
clock, and hands both to a :class:`Run`, which:

1. asks the executor to **prepare** the sandbox backend, removes the logs of attempts that
   died with an earlier run, makes the staging folder, refuses other settings, opens the
   deal secret and calls :meth:`Planner.prepare` (stage and record the entrants, chain the
   plan); when any of that fails, the executor releases what it prepared
   (:meth:`~referee.executors.Executor.release_prepared`);
2. inside one ``with executor:`` block (its workers kept from round to round), asks
   :meth:`Planner.next_round` for rounds until it answers ``None``; for each it builds a
   task for every match not done yet (:meth:`Planner.task`, in :meth:`Planner.order`),
   plays them, and **records** every attempt the moment the executor reports it: a result
   with its chain link and its log's digest in one transaction, which
   :meth:`Planner.on_result` joins (a league's ratings commit with their result);
3. reveals the deal secret when :meth:`Planner.finished` says every match is done, and
   removes the staging folder and the partial logs however the run ends.

Every event goes to one stream (``notify``): the executor's attempt events, each result's
:class:`ResultStored`, the counts of :class:`RunProgress`, and whatever the planner adds.

New behaviour is a planner: a :class:`Planner` overrides the no-op hooks it needs (as a
``distributed`` ``SchedulerPlugin`` does), never a subclass of :class:`Run`.

Blame decides what happens to a match: a bot fault is a normal result; an
``InfrastructureError`` or a dead worker is retried a bounded number of times and then
recorded as ``failed``; a ``UsageError`` (the configuration cannot work at all) stops the
run; an unexpected exception (a bug of ours) fails that match at once with its traceback.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.clock import WallClock
from referee.errors import UsageError
from referee.executors import (
    PARTIAL_SUFFIX,
    AttemptEvent,
    Executor,
    MatchFailed,
    MatchFinished,
    MatchStarted,
    MatchTask,
)
from referee.protocol.seats import PreflightFailure
from referee.results import MatchResult
from referee.sandbox import (
    BotSpec,
    make_staging_root,
    remove_staging_root,
    stage_bot,
    stage_files,
)
from referee.sandbox.build import Builder, BuildLimits
from referee.specs import MatchSpec
from referee.stderrlog import STDERR_SUFFIX
from referee.text import printable
from referee.tournament.chain import log_digest
from referee.tournament.file import Tournament
from referee.tournament.store import DealSecret, RunLock, Store, wipe

__all__ = [
    "Planner",
    "ResultStored",
    "Round",
    "Run",
    "RunProgress",
    "RunSummary",
    "play",
]


@dataclass(frozen=True)
class RunProgress:
    """The run's counts after a change: every listener reads these, none counts for itself.

    ``total`` grows with each round; ``done`` counts matches finished (in this run or
    before) and matches failed for good; ``played`` those finished in this run, ``faults``
    the bot faults in them, ``failed`` the matches failed for good.
    """

    total: int
    done: int
    played: int
    faults: int
    failed: int


@dataclass(frozen=True)
class ResultStored:
    """A result was committed: the results chain now holds ``results`` with this ``head``."""

    key: str
    results: int
    head: str


@dataclass(frozen=True)
class PreflightWarning:
    """Entrants that started but failed their handshake before the first match (slow, or
    an answer that is not ``ready``): they play, and the fault policy judges each match."""

    lines: tuple[str, ...]


@dataclass
class RunSummary:
    """How a run ended (``chain_head``: the results chain's head, once anything is stored)."""

    total: int
    done: int
    failed: int
    played: int
    faults: int
    results_dir: Path
    chain_results: int = 0
    chain_head: str | None = None


@dataclass
class Round:
    """The stored matches a planner hands the core to play, and what became of them.

    ``done`` holds the keys finished already (their matches get no task) and ``started``
    how often each match was started before (its next attempt is dealt fresh cards,
    :meth:`~referee.executors.MatchTask.dealt`). The core fills in the rest as it plays:
    the round's tasks, the results it stored (``stored``, in ``store_s`` seconds, with the
    planner's :meth:`~Planner.on_result`), the results that counted (``played``) and their
    bot ``faults``, and the matches ``failed`` for good.
    """

    specs: Sequence[MatchSpec]
    done: Container[str] = frozenset()
    started: Mapping[str, int] = dataclasses.field(default_factory=dict)
    tasks: dict[str, MatchTask] = dataclasses.field(default_factory=dict)
    began: float = dataclasses.field(default_factory=time.perf_counter)
    stored: int = 0
    store_s: float = 0.0
    played: int = 0
    faults: int = 0
    failed: int = 0


class Planner:
    """What a kind of run decides, asked by the core at each step (see the module docstring).

    Every hook does nothing (or gives the plainest answer) here; a planner overrides the
    ones it needs. Hooks get the :class:`Run`, whose store, staged bots, deal secret and
    ``notify`` they use.
    """

    def prepare(self, run: Run) -> None:
        """Stage and record the entrants and chain the plan: after the store's settings
        were checked and the deal secret opened, before anything is played."""

    def next_round(self, run: Run) -> Round | None:
        """The next matches to play, stored already (:meth:`Run.round`), or ``None`` when
        the run is over."""
        return None

    def task(self, run: Run, spec: MatchSpec, started: int) -> MatchTask | None:
        """The task of ``spec``, started ``started`` times before, or ``None`` when it cannot
        be played (the planner recorded why)."""
        return run.dealt(spec, started)

    def order(self, task: MatchTask) -> tuple[Any, ...]:
        """Where a task goes in its round: rotation-major, so a worker's consecutive matches
        are other deals and it can keep its bot processes (never across rotations of one)."""
        return (task.spec.rotation, task.spec.key)

    def round_started(self, run: Run, round: Round) -> None:
        """The round's tasks are built (``round.tasks``) and about to be played."""

    def on_result(self, run: Run, spec: MatchSpec, result: MatchResult) -> None:
        """A result new to the store, inside its transaction: what the planner writes here
        commits with it or not at all."""

    def on_event(self, run: Run, event: AttemptEvent) -> None:
        """An attempt event, after the core stored it and passed it on."""

    def round_over(self, run: Run, round: Round) -> None:
        """Every task of the round finished or failed for good."""

    def finished(self, run: Run) -> bool:
        """Whether every match of the run is done, so that its deal secret is revealed."""
        return False


def play(
    planner: Planner,
    tournament: Tournament,
    executor: Executor,
    results_dir: Path,
    *,
    restart: bool = False,
    on_event: Callable[[Any], None] | None = None,
    deal_secret: bytes | None = None,
    beacon: str | None = None,
    clock: WallClock = time.time,
) -> Run:
    """Run ``planner`` on the store in ``results_dir`` (``restart``: wiped first) under its
    lock; returns the finished :class:`Run`. ``clock`` is the run's wall time, the one the
    store stamps and the planner reads (a test pins it). ``deal_secret`` and ``beacon``:
    :meth:`~referee.tournament.store.Store.deal_secret`."""
    with RunLock(results_dir):
        if restart:
            wipe(results_dir)
        with Store(results_dir, clock=clock) as store:
            run = Run(tournament, store, executor, planner, on_event or _ignore, clock=clock)
            run.play(deal_secret, beacon)
            return run


def _ignore(event: object) -> None:
    pass


class Run:
    """One run against its open store: the loop of the module docstring, the same for every
    planner. ``tournament`` is the file as the run reads it now (a league reads it again)."""

    def __init__(
        self,
        tournament: Tournament,
        store: Store,
        executor: Executor,
        planner: Planner,
        notify: Callable[[Any], None],
        *,
        clock: WallClock = time.time,
    ) -> None:
        self.tournament = tournament
        self.store = store
        self.executor = executor
        self.planner = planner
        self.notify = notify
        self.clock = clock
        self.images = tuple(sorted(tournament.images))
        self.sandbox = executor.prepare(tournament.file.sandbox.backend, self.images)
        self.staged: dict[str, BotSpec] = {}
        self.staging: Path | None = None
        self.summary = RunSummary(0, 0, 0, 0, 0, store.results_dir)
        self._secret: DealSecret | None = None
        self._round: Round | None = None
        self._builder: Builder | None = None
        self._shipped: set[str] = set()

    @property
    def secret(self) -> DealSecret:
        """The deal secret that deals this run's new matches (open once prepared)."""
        if self._secret is None:
            raise RuntimeError("the run has not opened its deal secret yet")
        return self._secret

    def play(self, deal_secret: bytes | None, beacon: str | None = None) -> None:
        _remove_partial_logs(self.store)
        self.staging = make_staging_root()
        try:
            try:
                self.store.check_settings(self.tournament.settings())
                self._secret = self.store.deal_secret(deal_secret, beacon=beacon)
                self.planner.prepare(self)
                self._preflight()
                self.summary.chain_results, self.summary.chain_head = self.store.chain_head()
            except BaseException:  # refused (other settings, changed bots) or interrupted
                self.executor.release_prepared()
                raise
            with self.executor:  # one pool for every round
                while (round := self.planner.next_round(self)) is not None:
                    self._play(round)
            if self.planner.finished(self):
                self.store.reveal_secrets()  # published; it never deals again
        finally:
            remove_staging_root(self.staging)
            _remove_partial_logs(self.store)

    def _preflight(self) -> None:
        """Greet every entrant staged so far in this run's own sandbox and image before any
        match is dealt (the shipped sample bots excepted: they are known to start).

        An entrant whose process ends (or cannot start) before it answers stops the run with
        one line for each such bot: it would forfeit every match. One that starts but
        answers late or wrongly is reported (:class:`PreflightWarning`) and plays. Only for
        executors whose workers run here: a cluster's sandbox is on its workers."""
        from referee.executors.base import RunsHere
        from referee.protocol.seats import preflight
        from referee.sandbox import get_sandbox
        from referee.sandbox.build import run_sync

        bots = [bot for name, bot in self.staged.items() if name not in self._shipped]
        if not bots or not isinstance(self.executor, RunsHere):
            return

        async def greet() -> list[PreflightFailure]:
            sandbox = get_sandbox(self.sandbox.name, images=self.images)
            try:
                return await preflight(
                    sandbox, bots, self.tournament.limits, self.tournament.time_control
                )
            finally:
                await sandbox.aclose()

        failures = run_sync(greet())
        ended = [f for f in failures if f.ended]
        where = f"the {self.sandbox.name} sandbox"
        if ended:
            lines = [f"  {printable(f.bot)}: {printable(f.detail)}" for f in ended]
            raise UsageError(
                f"{len(ended)} entrant(s) cannot start in {where}, so every match of theirs "
                "would be a forfeit; nothing was dealt. Fix or remove them, then run again:\n"
                + "\n".join(lines)
            )
        if failures:
            self.notify(
                PreflightWarning(
                    tuple(
                        f"pre-flight: {printable(f.bot)} started in {where} but "
                        f"{printable(f.detail)}"
                        for f in failures
                    )
                )
            )

    # -- what planners call ------------------------------------------------------------

    def builder(self) -> Builder:
        """Builds this run's bots: in its sandbox, within the file's ``[build]`` limits."""
        if self._builder is None:
            self._builder = Builder(
                self.sandbox.name,
                images=self.images,
                limits=BuildLimits(**self.tournament.file.build.model_dump()),
            )
        return self._builder

    def stage(self, bot: BotSpec) -> BotSpec:
        """Stage ``bot`` for this run (under its name) and return the staged copy.

        A bot with a build step is built first, here, once (or found in the build cache),
        in this run's sandbox and within the file's ``[build]`` limits; the staged copy is
        its built bundle, which is what every worker receives."""
        assert self.staging is not None
        if _is_shipped(bot.folder):
            self._shipped.add(bot.name)
        if bot.build:
            built = self.builder().build(bot)
            staged = stage_files(built.spec, built.files, self.staging)
            self.staged[bot.name] = staged
            return staged
        staged = stage_bot(bot, self.staging)
        self.staged[bot.name] = staged
        return staged

    def unstage(self, name: str) -> None:
        """Forget the staged copy of ``name`` and remove it from the staging folder."""
        assert self.staging is not None
        folder = self.staged.pop(name).folder
        if folder.parent == self.staging:
            shutil.rmtree(folder, ignore_errors=True)

    def round(self, specs: Sequence[MatchSpec]) -> Round:
        """A round of ``specs``, with what the store says of every match done or started."""
        return Round(specs, self.store.done_keys(), self.store.attempts())

    def dealt(
        self, spec: MatchSpec, started: int, bots: Sequence[BotSpec] | None = None
    ) -> MatchTask:
        """The task of ``spec`` (its ``bots``, staged in seat order: by default the staged
        copies of its table), started ``started`` times before (:meth:`MatchTask.dealt`:
        fresh cards from then on)."""
        return MatchTask.dealt(
            self.tournament,
            spec,
            [self.staged[name] for name in spec.table] if bots is None else bots,
            key=self.secret.key,
            started=started,
            max_attempts=self.executor.max_attempts,
            sandbox=self.sandbox.name,
            log_path=self.store.log_path(spec.key),
            images=self.images,
        )

    def progress(self) -> None:
        """Tell the run's counts (:class:`RunProgress`)."""
        s = self.summary
        self.notify(RunProgress(s.total, s.done + s.failed, s.played, s.faults, s.failed))

    # -- the loop ----------------------------------------------------------------------

    def _play(self, round: Round) -> None:
        tasks = []
        for spec in round.specs:
            if spec.key not in round.done:
                task = self.planner.task(self, spec, round.started.get(spec.key, 0))
                if task is not None:
                    tasks.append(task)
        tasks.sort(key=self.planner.order)
        round.tasks = {task.spec.key: task for task in tasks}
        self.summary.total += len(round.specs)
        self.summary.done += len(round.specs) - len(tasks)
        self._round = round
        try:
            self.planner.round_started(self, round)
            if tasks:
                self.executor.run(tasks, self._record)
            self.planner.round_over(self, round)
        finally:
            self._round = None

    def _record(self, event: AttemptEvent) -> None:
        """Commit what the executor reports, pass it on, then tell the planner."""
        round = self._round
        assert round is not None
        if isinstance(event, MatchStarted):
            self.store.mark_running(event.key)
            self.notify(event)
        elif isinstance(event, MatchFinished):
            self._store_result(event, round)
        elif isinstance(event, MatchFailed):
            self.store.record_failure(event.key, event.error, final=event.final)
            self.summary.failed += event.final
            round.failed += event.final
            self.notify(event)
            if event.final:
                self.progress()
        self.planner.on_event(self, event)

    def _store_result(self, event: MatchFinished, round: Round) -> None:
        """The result, its chain link and the planner's part in one transaction; counted
        once (a match computed twice is stored once: the first result stands)."""
        task = round.tasks[event.key]
        began = time.perf_counter()
        with self.store.transaction():
            head = self.store.record_result(
                event.key,
                event.result,
                task.spec.table,
                attempt=task.deal_attempt(event.attempt),
                log_sha256=_log_digest(event.result.log),
            )
            if head is not None:
                self.planner.on_result(self, task.spec, event.result)
        round.store_s += time.perf_counter() - began
        round.stored += 1
        summary = self.summary
        if head is not None:
            faults = sum(st.fault is not None for st in event.result.standings)
            summary.done += 1
            summary.played += 1
            summary.faults += faults
            round.played += 1
            round.faults += faults
            summary.chain_results += 1
            summary.chain_head = head
        self.notify(event)
        if head is not None:
            self.notify(ResultStored(event.key, summary.chain_results, head))
            self.progress()


def _remove_partial_logs(store: Store) -> None:
    """Logs of attempts that died with their worker (or with a killed coordinator)."""
    for partial in store.logs_dir.glob(f"*{PARTIAL_SUFFIX}"):
        partial.unlink(missing_ok=True)
    for partial in store.logs_dir.glob(f"*{PARTIAL_SUFFIX}{STDERR_SUFFIX}"):
        partial.unlink(missing_ok=True)


def _log_digest(log: str | None) -> str:
    """SHA-256 of a finished match's log file, for the results chain ("" without a log)."""
    if log is None:
        return ""
    try:
        return log_digest(Path(log).read_bytes())
    except OSError:
        return ""


def _is_shipped(folder: Path) -> bool:
    """Whether ``folder`` is one of the sample bots shipped with the referee."""
    from referee.resources import sample_bot, sample_bot_names

    return any(folder == sample_bot(name).resolve() for name in sample_bot_names())
