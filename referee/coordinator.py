"""The coordinator: one tournament run, from the file to the stored results.

:func:`run_tournament` is the only writer of a tournament's results store. In order, a
:class:`TournamentRun`:

1. **prepares**: takes the tournament's lock, stages every bot once, opens the deal secret,
   makes the replacements asked for (``--replace``: the old version's matches retired, its
   tables scheduled again on fresh cards, :mod:`referee.tournament.replacement`), and
   refuses stored results played by other bot files or other settings;
2. **schedules**: adds the scheduled matches to the store (each keeps the deal of the secret
   it was first scheduled with; a retired one stands for its replay) and builds a task for
   each match not yet done;
3. **plays** them on an executor (:mod:`referee.executors`), committing each result, retry
   and failure the moment the executor reports it;
4. with ``playoff`` in the file, plays **play-off rounds**, each planned from the stored
   results (:mod:`referee.ranking.playoff`) and stored before it is played, until the order at the
   top is sure or the budget is spent;
5. **finishes**: when every match is done, reveals the deal secret.

Blame decides what happens to a match: a bot fault is a normal result; an
``InfrastructureError`` or a dead worker is retried a bounded number of times and then
recorded as ``failed``; a ``UsageError`` (the configuration cannot work at all) stops the
run; an unexpected exception (a bug of ours) fails that match at once with its traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.errors import UsageError
from referee.executors import (
    PARTIAL_SUFFIX,
    AttemptEvent,
    Executor,
    MatchFailed,
    MatchFinished,
    MatchStarted,
    MatchTask,
    release_prepared,
)
from referee.ranking.playoff import PlayoffState, plan_round
from referee.ranking.ratings import Rater
from referee.sandbox import BotSpec, make_staging_root, remove_staging_root, stage_bot
from referee.specs import EntrantRecord, MatchSpec, PlayoffSettings, playoff_round
from referee.stderrlog import STDERR_SUFFIX
from referee.text import printable
from referee.tournament.chain import log_digest
from referee.tournament.deals import BeaconDeclaration
from referee.tournament.file import Tournament
from referee.tournament.replacement import live_key, replace_entrants
from referee.tournament.scheduler import schedule
from referee.tournament.store import DealSecret, RunLock, Store, wipe

__all__ = [
    "Event",
    "PlayoffRound",
    "PlayoffsOver",
    "ResultStored",
    "RunProgress",
    "RunStarted",
    "RunSummary",
    "TournamentRun",
    "commit_tournament",
    "run_tournament",
]

Uncertain = tuple[tuple[str, str, float, int], ...]
"""``(upper, lower, confidence, shared deals)`` for adjacent pairs whose order is unsure."""


@dataclass(frozen=True)
class RunStarted:
    total: int
    done: int
    to_play: int
    sandbox: str
    commitment: str
    """SHA-256 of the deal secret that deals this run's new matches (published now)."""
    limits: str
    """The clock and resource limits every bot runs under, in one line."""
    beacon: str | None = None
    """The public value mixed into the committed secret (``--beacon``), if any."""
    beacon_source: str | None = None
    """Where that value comes from, as declared with the commitment."""
    chain: tuple[int, str | None] = (0, None)
    """The results chain when the run starts: results stored so far and its head."""
    warnings: tuple[str, ...] = ()
    """What the tournament file chose that weakens the run (said before it starts)."""
    replaced: tuple[str, ...] = ()
    """What each ``--replace`` did, a line each (:meth:`Replaced.describe`)."""


@dataclass(frozen=True)
class RunProgress:
    """The run's counts after a change: every listener reads these, none counts for itself.

    ``total`` grows when a play-off round is planned; ``done`` counts matches finished
    (in this run or before) and matches failed for good; ``played`` those finished in this
    run, ``faults`` the bot faults in them, ``failed`` the matches failed for good.
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
class PlayoffRound:
    """A play-off round is about to be played (``to_play`` of its ``matches`` are left).

    ``uncertain`` holds the pairs of the top that the round is for (empty for a round
    resumed from the store).
    """

    round: int
    matches: int
    to_play: int
    uncertain: Uncertain
    spent: int
    budget: int


@dataclass(frozen=True)
class PlayoffsOver:
    """No play-off round is due: ``settled`` (the top is ordered) or ``budget`` (spent)."""

    state: PlayoffState
    rounds: int
    matches: int
    uncertain: Uncertain


Event = RunStarted | AttemptEvent | RunProgress | ResultStored | PlayoffRound | PlayoffsOver


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


def run_tournament(
    tournament: Tournament,
    executor: Executor,
    *,
    restart: bool = False,
    results_dir: Path | None = None,
    on_event: Callable[[Event], None] | None = None,
    deal_secret: bytes | None = None,
    beacon: str | None = None,
    replace: Sequence[str] | None = None,
) -> RunSummary:
    """Play every match of ``tournament`` not yet in its store; resume where a run stopped.

    ``restart`` wipes the stored results first; ``replace`` names entrants whose new files
    replace the ones their results were played with (the old results are retired, their
    tables played again: :mod:`referee.tournament.replacement`); ``None`` where the command
    offers no ``--replace`` (a changed bot's refusal then does not suggest it). New matches
    are dealt with the store's unrevealed deal secret (a fresh one when there is none, or
    ``deal_secret`` to reproduce a tournament), with ``beacon`` mixed in when the secret was
    committed to before the run (:func:`commit_tournament`); when every scheduled match is
    done, and the play-offs are over, the secret is revealed. Raises ``UsageError`` when
    stored results were played by other bot files or other settings (unless ``restart``, or
    ``replace`` names them), when another run holds the lock, when the beacon is missing,
    unexpected or different, or when ``replace`` cannot be done.
    """
    if restart and replace:
        raise UsageError(
            "--replace keeps every other stored result and --restart discards them all: "
            "give one of them"
        )
    folder = results_dir or tournament.results_dir
    with RunLock(folder):
        if restart:
            wipe(folder)
        with Store(folder) as store:
            notify = on_event or (lambda event: None)
            run = TournamentRun(tournament, store, executor, notify, replace=replace)
            return run.play(deal_secret, beacon)


def commit_tournament(
    tournament: Tournament,
    declared: BeaconDeclaration,
    *,
    results_dir: Path | None = None,
    restart: bool = False,
) -> DealSecret:
    """Draw and store the deal secret before entries close (``referee tournament commit``).

    Returns the secret whose commitment is to be published now, with ``declared`` (where
    the beacon will come from, and its form) bound into it; its matches are then dealt only
    with that beacon (a public value revealed after entries closed) mixed in, so a secret
    picked after seeing the entries is worth nothing. Committing again with the same
    declaration returns the same secret until it has dealt.
    """
    folder = results_dir or tournament.results_dir
    with RunLock(folder):
        if restart:
            wipe(folder)
        with Store(folder) as store:
            store.check_settings(tournament.settings())
            return store.commit_secret(declared)


class TournamentRun:
    """One run of a tournament against its open store (see the module docstring).

    ``scheduler`` makes the scheduled matches from the tournament and the dealing key
    (:func:`~referee.tournament.scheduler.schedule`; a test's control seats differently).
    """

    def __init__(
        self,
        tournament: Tournament,
        store: Store,
        executor: Executor,
        notify: Callable[[Event], None],
        *,
        scheduler: Callable[[Tournament, bytes], list[MatchSpec]] = schedule,
        replace: Sequence[str] | None = None,
    ) -> None:
        self.tournament = tournament
        self.scheduler = scheduler
        self.store = store
        self.executor = executor
        self.notify = notify
        self.images = tuple(sorted(tournament.images))
        self.sandbox = executor.prepare(tournament.file.sandbox.backend, self.images)
        self.staged: dict[str, BotSpec] = {}
        self.tables: dict[str, tuple[str, ...]] = {}
        self.summary = RunSummary(0, 0, 0, 0, 0, store.results_dir)
        self.secret: DealSecret | None = None
        self.tasks: dict[str, MatchTask] = {}
        self.replace = replace
        """Entrants whose new files replace their old ones (``--replace``; ``None`` where
        the command offers none)."""
        self.replaced: tuple[str, ...] = ()

    def play(self, deal_secret: bytes | None, beacon: str | None = None) -> RunSummary:
        """Prepare, play the rounds (:meth:`_rounds`), reveal the secret once all is done."""
        _remove_partial_logs(self.store)
        staging = make_staging_root()
        try:
            try:
                secret = self._prepare(staging, deal_secret, beacon)
            except BaseException:  # refused (other settings, changed bots) or interrupted
                release_prepared(self.executor)
                raise
            with contextlib.ExitStack() as keep:
                if self._rounds_to_come() and isinstance(
                    self.executor, contextlib.AbstractContextManager
                ):
                    keep.enter_context(self.executor)  # one pool for the rounds to come
                complete = self._rounds(secret)
            if complete:
                self.store.reveal_secrets()  # published; it never deals again
        finally:
            remove_staging_root(staging)
            _remove_partial_logs(self.store)
        return self.summary

    def _rounds_to_come(self) -> bool:
        """Whether more than one round may be played (then the executor keeps its pool)."""
        return self.tournament.file.playoff is not None

    def _rounds(self, secret: DealSecret) -> bool:
        """The scheduled matches, then the play-offs; True when every match is done."""
        specs = self._schedule(secret)
        complete = self._play_round(specs, first=True)
        playoff = self.tournament.file.playoff
        if complete and playoff is not None:
            complete = self._play_offs(playoff, secret)
        return complete

    # -- the steps -------------------------------------------------------------------------

    def _prepare(self, staging: Path, deal_secret: bytes | None, beacon: str | None) -> DealSecret:
        """Stage every bot, open the deal secret, make the replacements asked for, refuse
        changed bots or settings, chain the plan."""
        t, store = self.tournament, self.store
        store.check_settings(t.settings())
        secret = store.deal_secret(deal_secret, beacon=beacon)
        self.staged = {b.name: stage_bot(b, staging) for b in t.bots}
        records = [_record(t, self.staged[name]) for name in t.entrants]
        f = t.file
        replaced = replace_entrants(
            store, records, self.replace or (), seed=f.seed, duplicate=f.duplicate, secret=secret
        )
        self.replaced = tuple(r.describe() for r in replaced)
        store.check_entrants(records, replaceable=self.replace is not None)
        store.save_entrants(records)
        store.save_plan(t.plan())  # chained, before any result of this run
        self.secret = secret
        self.summary.chain_results, self.summary.chain_head = store.chain_head()
        return secret

    def _schedule(self, secret: DealSecret) -> list[MatchSpec]:
        """Store the scheduled matches; returns those that count as stored (with their own
        deals): a retired match's latest replay in its place."""
        scheduled = self.scheduler(self.tournament, secret.key)
        self.store.add_matches(scheduled, secret)
        stored, retired = self.store.specs(), self.store.retired()
        return [stored[live_key(spec.key, retired)] for spec in scheduled]

    def _task(self, spec: MatchSpec, started: int) -> MatchTask:
        """The task of ``spec``, started ``started`` times before (:meth:`MatchTask.dealt`:
        fresh cards from then on)."""
        assert self.secret is not None
        task = MatchTask.dealt(
            self.tournament,
            spec,
            [self.staged[name] for name in spec.table],
            key=self.secret.key,
            started=started,
            max_attempts=self.executor.max_attempts,
            sandbox=self.sandbox.name,
            log_path=self.store.log_path(spec.key),
            images=self.images,
        )
        self.tasks[spec.key] = task
        return task

    def _play_round(self, specs: Sequence[MatchSpec], *, first: bool = False) -> bool:
        """Play the matches of ``specs`` not yet done; True when every one of them is done.

        Tasks go in rotation-major order: a worker's consecutive matches are different
        deals, so it can keep its bot processes (never across rotations of one deal).
        """
        done = self.store.done_keys()
        started = self.store.attempts()
        tasks = [self._task(spec, started[spec.key]) for spec in specs if spec.key not in done]
        tasks.sort(key=self._order)
        self.tables.update({spec.key: spec.table for spec in specs})
        self.summary.total += len(specs)
        self.summary.done += len(specs) - len(tasks)
        if not first:
            self._progress()
        if first:
            assert self.secret is not None
            self.notify(
                RunStarted(
                    self.summary.total,
                    self.summary.done,
                    len(tasks),
                    self.sandbox.description,
                    self.secret.commitment,
                    f"{self.tournament.time_control.describe()}; "
                    f"{self.tournament.limits.describe()}",
                    beacon=self.secret.beacon,
                    beacon_source=self.secret.declared.source if self.secret.declared else None,
                    chain=(self.summary.chain_results, self.summary.chain_head),
                    warnings=(*self.tournament.warnings(), *self.sandbox.notes),
                    replaced=self.replaced,
                )
            )
        if tasks:
            self.executor.run(tasks, self._record)
        return {spec.key for spec in specs} <= self.store.done_keys()

    @staticmethod
    def _order(task: MatchTask) -> tuple[int | str, ...]:
        """Where a task goes in a round: rotation-major (see :meth:`_play_round`)."""
        return (task.spec.rotation, task.spec.key)

    def _record(self, event: AttemptEvent) -> None:
        """Commit what the executor reports, then pass it on."""
        store, summary = self.store, self.summary
        if isinstance(event, MatchStarted):
            store.mark_running(event.key)
        elif isinstance(event, MatchFinished):
            head = store.record_result(
                event.key,
                event.result,
                self.tables[event.key],
                attempt=self.tasks[event.key].deal_attempt(event.attempt),
                log_sha256=_log_digest(event.result.log),
            )
            summary.done += 1
            summary.played += 1
            summary.faults += sum(st.fault is not None for st in event.result.standings)
            self.notify(event)
            if head is not None:
                summary.chain_results += 1
                summary.chain_head = head
                self.notify(ResultStored(event.key, summary.chain_results, head))
            self._progress()
            return
        elif isinstance(event, MatchFailed):
            store.record_failure(event.key, event.error, final=event.final)
            summary.failed += event.final
            self.notify(event)
            if event.final:
                self._progress()
            return
        self.notify(event)

    def _progress(self) -> None:
        s = self.summary
        self.notify(RunProgress(s.total, s.done + s.failed, s.played, s.faults, s.failed))

    def _play_offs(self, settings: PlayoffSettings, secret: DealSecret) -> bool:
        """Play play-off rounds until none is due; ``False`` if one could not be completed.

        A round already stored (planned by an earlier, interrupted run) is played as stored,
        never planned again; a new round is planned from the finished matches and stored
        before any of it is played. Retired matches (an entrant replaced) are neither played
        nor planned from: the budget counts the play-off matches that count.
        """
        t, store = self.tournament, self.store
        rater = Rater()  # each round rates only what is new since the last
        round_no = 0
        while True:
            stored, retired = store.specs(), store.retired()
            live = [spec for key, spec in stored.items() if key not in retired]
            in_round = sorted(
                (spec for spec in live if playoff_round(spec.key) == round_no),
                key=lambda spec: spec.key,
            )
            spent = sum(playoff_round(spec.key) is not None for spec in live)
            uncertain: Uncertain = ()
            if not any(playoff_round(key) == round_no for key in stored):
                plan = plan_round(
                    round_no,
                    store.completed(),
                    live,
                    t.entrants,
                    settings=settings,
                    ratings=t.file.ratings,
                    rules=t.rules,
                    table_size=t.file.table_size,
                    seed=t.file.seed,
                    secret=secret.key,
                    duplicate=t.file.duplicate,
                    authors=t.authors_apart(),
                    rater=rater,
                    fingerprints={name: bot.sha256 for name, bot in self.staged.items()},
                )
                uncertain = tuple((p.upper, p.lower, p.confidence, p.deals) for p in plan.uncertain)
                if not plan.specs:
                    self.notify(PlayoffsOver(plan.state, round_no, spent, uncertain))
                    return True
                store.add_matches(plan.specs, secret)
                in_round = list(plan.specs)
                spent += len(in_round)
            done = store.done_keys()
            to_play = sum(spec.key not in done for spec in in_round)
            if to_play:
                budget = settings.budget
                self.notify(
                    PlayoffRound(round_no, len(in_round), to_play, uncertain, spent, budget)
                )
            if not self._play_round(in_round):
                return False  # a match failed on our side: the next run retries it, then goes on
            round_no += 1


def _remove_partial_logs(store: Store) -> None:
    """Logs of attempts that died with their worker (or with a killed coordinator)."""
    for partial in store.logs_dir.glob(f"*{PARTIAL_SUFFIX}"):
        partial.unlink(missing_ok=True)
    for partial in store.logs_dir.glob(f"*{PARTIAL_SUFFIX}{STDERR_SUFFIX}"):
        partial.unlink(missing_ok=True)


def _record(tournament: Tournament, staged: BotSpec) -> EntrantRecord:
    original = tournament.bot(staged.name)
    path = original.folder / original.single_file if original.single_file else original.folder
    author = tournament.author(staged.name)
    # Where the bot came from, for people to read: a folder name that is not UTF-8 (its
    # bytes kept as surrogates) could not be stored at all, so it is stored escaped.
    shown = printable(str(path))
    return EntrantRecord(staged.name, staged.version, staged.sha256, shown, author)


def _log_digest(log: str | None) -> str:
    """SHA-256 of a finished match's log file, for the results chain ("" without a log)."""
    if log is None:
        return ""
    try:
        return log_digest(Path(log).read_bytes())
    except OSError:
        return ""
