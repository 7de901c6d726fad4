"""A league that never stops: ``referee league run FILE``.

:func:`run_league` plays a league (``format = "league"``) until it is stopped (Ctrl-C,
SIGTERM, or ``batches`` settled), and is the only writer of its store, as
:func:`referee.coordinator.run_tournament` is of a tournament's. It works in batches, the
pattern of the play-off rounds: each batch is **planned** from the stored state
(:func:`referee.ranking.matchmaking.plan_batch`) and **stored** before any of it is played,
then **played** on the executor (one ``run`` call, inside one ``with executor:`` block that
keeps the workers from batch to batch), each result **recorded** with the live ratings it
changes in one transaction, and finally **settled**: its results folded into the settled
ratings in key order (:mod:`referee.ranking.incremental`). The next batch is planned from
those, so the order in which results arrive never changes a choice.

**Entrants come and go.** The file is read again every ``poll_seconds`` (and between
batches) when it changed: a version new to the league is staged and joins at the next
batch, a version no longer current (a new one was submitted, or the entrant retired) leaves
at the next batch (:mod:`referee.tournament.league`). Each change is stored with the batch it
takes effect at, and the file's plan is chained (:meth:`~referee.tournament.store.Store.
save_plan`), so what was played follows from the store. A file that cannot be read at a
poll changes nothing: the league goes on with what it has and says why once.

**An entrant that faults in every match is suspended.** When a batch is settled, a
version whose last ``suspend_after`` results (``[league]``, since it joined or was last
reinstated) are all forfeits of its own (a crash, a timeout, an illegal play, a protocol
fault; :func:`referee.errors.own_fault`) is suspended from the next batch on, in the
settling's transaction: it is not seated, its rating is kept, and :class:`EntrantSuspended`
says why (the last fault, told as ``bot check`` tells it). A failure on the referee's side
leaves no result, so it never counts. The count is read from the stored results in key
order (:meth:`~referee.tournament.league.LeagueLedger.own_forfeits`): the same whatever
order they arrived in, and after a restart. A new version (a new label) starts afresh;
``referee league reinstate FILE NAME`` asks the store to lift a suspension, which the
league does at its next batch (:class:`EntrantReinstated`), the count starting afresh.

**Killed and started again**, a league loses no stored result and plays nothing twice: a
result is one transaction (seats, chain link, live ratings, records), a batch is stored
before it is played, and the open batch is resumed as stored: its finished matches kept,
the others played again (on fresh cards if they had started,
:func:`~referee.tournament.deals.redeal_seed`), then settled as if nothing had happened.

**Memory stays flat.** Nothing is kept from one batch to the next but the staged bots of the
entrants in the league: the store answers every question with a query bounded by the
entrants or the batch (never a list of every match), and the tasks, specs and timings of a
batch are dropped when it is settled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Mapping
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
from referee.explain import fault_summary, stored_fault_info
from referee.ranking.incremental import (
    in_arrival_order,
    rate_result,
    settle_batch,
    stored_match,
    tallies,
)
from referee.ranking.matchmaking import LeagueState, Standing, plan_batch
from referee.ranking.ratings import make_environment
from referee.sandbox import (
    BotSpec,
    bot_sha256,
    load_bot,
    make_staging_root,
    read_bot_files,
    remove_staging_root,
    stage_bot,
)
from referee.specs import EntrantRecord, MatchSpec, StoredMatch, deal_key
from referee.stderrlog import STDERR_SUFFIX
from referee.text import printable
from referee.tournament.chain import log_digest
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.league import LeagueLedger, Roster, Suspension, Version, league_roster
from referee.tournament.scheduler import league_batch
from referee.tournament.store import DATABASE, DealSecret, RunLock, Store, wipe

__all__ = [
    "BatchPlanned",
    "BatchSettled",
    "EntrantReinstated",
    "EntrantSuspended",
    "EntrantsChanged",
    "FileProblem",
    "LeagueEvent",
    "LeagueRun",
    "LeagueStarted",
    "LeagueSummary",
    "LeagueWaiting",
    "reinstate",
    "run_league",
]


@dataclass(frozen=True)
class LeagueStarted:
    """The league starts (or resumes): ``entrants`` in it, ``settled`` batches so far."""

    entrants: int
    settled: int
    sandbox: str
    commitment: str
    limits: str
    warnings: tuple[str, ...] = ()
    chain: tuple[int, str | None] = (0, None)


@dataclass(frozen=True)
class EntrantsChanged:
    """Versions ``joined`` and ``left`` (label, why) the league, from batch ``batch`` on."""

    batch: int
    joined: tuple[str, ...]
    left: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class EntrantSuspended:
    """``label`` is not seated from batch ``batch`` on: its last ``forfeits`` results were
    forfeits of its own, the last a ``kind`` fault (``why``: it told in one line)."""

    batch: int
    label: str
    forfeits: int
    kind: str
    why: str


@dataclass(frozen=True)
class EntrantReinstated:
    """``label`` is seated again from batch ``batch`` on (``referee league reinstate``)."""

    batch: int
    label: str


@dataclass(frozen=True)
class FileProblem:
    """The league file, read again while the league runs, says something it cannot do: the
    league goes on as it was (said once per problem)."""

    message: str


@dataclass(frozen=True)
class LeagueWaiting:
    """No table can be drawn: ``entrants`` are in the league, ``capped`` of them at their
    cap on hogging, and a table needs ``table_size``; the league polls its file meanwhile."""

    entrants: int
    capped: int
    table_size: int
    suspended: int = 0
    """Entrants in the league not counted in ``entrants``: suspended."""


@dataclass(frozen=True)
class BatchPlanned:
    """A batch is about to be played: ``to_play`` of its ``matches`` (``resumed``: planned
    by an earlier run); ``plan_ms``: how long choosing its tables took."""

    batch: int
    tables: int
    matches: int
    to_play: int
    placement: int
    capped: int
    resumed: bool
    plan_ms: float


@dataclass(frozen=True)
class BatchSettled:
    """A batch is over and its ratings settled: ``played`` results (``faults`` bot faults
    among them), ``failed`` matches failed on our side; ``store_ms``: the average time to
    store one result with its ratings, ``settle_ms``: to settle the batch."""

    batch: int
    played: int
    failed: int
    faults: int
    seconds: float
    store_ms: float
    settle_ms: float
    rated_again: int = 0
    """Tables whose results arrived out of key order, rated again when it was settled."""


LeagueEvent = (
    LeagueStarted
    | EntrantsChanged
    | EntrantSuspended
    | EntrantReinstated
    | FileProblem
    | LeagueWaiting
    | BatchPlanned
    | BatchSettled
    | AttemptEvent
)


@dataclass
class LeagueSummary:
    """What this run of the league did."""

    results_dir: Path
    batches: int = 0
    played: int = 0
    faults: int = 0
    failed: int = 0


def run_league(
    path: Path,
    executor: Executor,
    *,
    results_dir: Path | None = None,
    on_event: Callable[[LeagueEvent], None] | None = None,
    batches: int | None = None,
    restart: bool = False,
    deal_secret: bytes | None = None,
    clock: Callable[[], float] = time.time,
    wait: Callable[[float], None] = time.sleep,
) -> LeagueSummary:
    """Run the league of the file at ``path`` until stopped, or until ``batches`` more
    batches are settled; resume where it stopped (see the module docstring).

    ``restart`` wipes its stored results first; ``deal_secret`` deals with that secret
    (to reproduce a league); ``clock`` is the time stored with each batch (the cap on
    hogging counts from it) and the one the file is polled by, ``wait`` how the league
    waits for entrants. Raises
    ``UsageError`` for a file that is no league, stored results played with other
    settings, an entrant whose files changed since it joined, or a lock held by another run.
    """
    tournament = load_tournament(path)
    if tournament.file.format != "league":
        raise UsageError(
            f'{path} is not a league (format = "{tournament.file.format}"); run it with '
            f"referee tournament run {path}"
        )
    folder = results_dir or tournament.results_dir
    with RunLock(folder):
        if restart:
            wipe(folder)
        with Store(folder) as store:
            run = LeagueRun(
                tournament, store, executor, on_event or (lambda event: None), clock=clock
            )
            return run.run(batches, deal_secret, wait)


def reinstate(path: Path, name: str, *, clock: Callable[[], float] = time.time) -> Suspension:
    """Ask that the suspended entrant ``name`` (or the version so labelled) of the league
    at ``path`` be seated again: stored for the league, which lifts the suspension at its
    next batch (a running league at its next look, a stopped one when it runs again).
    Returns the suspension; ``UsageError`` for a file that is no league, a league with no
    results, an unknown name, or one that is not suspended."""
    tournament = load_tournament(path)
    if tournament.file.format != "league":
        raise UsageError(
            f'{path} is not a league (format = "{tournament.file.format}"): only a league '
            "suspends entrants"
        )
    folder = tournament.results_dir
    if not (folder / DATABASE).exists():
        raise UsageError(
            f"no results yet for {tournament.name} ({folder} has none); nobody is suspended"
        )
    roster = league_roster(tournament.file, path)
    with Store(folder) as store:
        ledger = LeagueLedger(store)
        known = ledger.entrants()
        current = roster.current(name)
        label = current.label if current is not None else name  # a name, else a label
        if label not in known:
            listed = ", ".join(v.name for v in roster.active[:20]) or "nobody"
            raise UsageError(f"{path}: {name!r} is not an entrant of the league (in it: {listed})")
        asked = ledger.ask_reinstatement(label, clock())
        if asked is None:
            held = sorted(ledger.suspended(ledger.next_batch()))
            now = f"suspended now: {', '.join(held)}" if held else "none is suspended now"
            raise UsageError(f"{path}: {label!r} is not suspended, nothing to reinstate ({now})")
        return asked


class LeagueRun:
    """One run of a league against its open store (see the module docstring)."""

    def __init__(
        self,
        tournament: Tournament,
        store: Store,
        executor: Executor,
        notify: Callable[[LeagueEvent], None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tournament = tournament
        self.path = tournament.path
        self.store = store
        self.executor = executor
        self.notify = notify
        self.clock = clock
        f = tournament.file
        self.settings = f.league
        self.env = make_environment(f.ratings, tournament.rules)
        self.images = tuple(sorted(tournament.images))
        self.sandbox = executor.prepare(f.sandbox.backend, self.images)
        self.ledger = LeagueLedger(store)
        self.summary = LeagueSummary(store.results_dir)
        self.staged: dict[str, BotSpec] = {}
        self.staging: Path | None = None
        self.secret: DealSecret | None = None
        self.polled = (0.0, (0, 0))
        """When the file was last looked at, and its (mtime, size) then."""
        self.problems: set[str] = set()
        self.batch: _Batch | None = None
        self.waiting = (0, 0, 0)
        """Why the last batch could not be planned: entrants that may play, capped, and
        suspended."""

    # -- the loop ----------------------------------------------------------------------

    def run(
        self, batches: int | None, deal_secret: bytes | None, wait: Callable[[float], None]
    ) -> LeagueSummary:
        """Prepare, then plan, play and settle batches until stopped."""
        _remove_partial_logs(self.store)
        self.staging = make_staging_root()
        try:
            try:
                self._prepare(deal_secret)
            except BaseException:  # refused (other settings, changed bots) or interrupted
                release_prepared(self.executor)
                raise
            with contextlib.ExitStack() as keep:
                if isinstance(self.executor, contextlib.AbstractContextManager):
                    keep.enter_context(self.executor)  # one pool for every batch
                waiting = False
                while batches is None or self.summary.batches < batches:
                    self._poll()
                    self._reinstate()
                    batch = self._open_batch() or self._plan()
                    if batch is None:
                        if not waiting:
                            self._waiting()
                        waiting = True
                        wait(float(self.settings.poll_seconds))
                        continue
                    waiting = False
                    self._play(batch)
        finally:
            remove_staging_root(self.staging)
            _remove_partial_logs(self.store)
        return self.summary

    def _prepare(self, deal_secret: bytes | None) -> None:
        """Refuse other settings, open the deal secret, stage the entrants in the league
        (refusing one whose files changed since it joined), take in new ones."""
        t = self.tournament
        self.store.check_settings(t.settings())
        self.secret = self.store.deal_secret(deal_secret)
        self.polled = (self.clock(), _stat(self.path))
        self._sync(t, strict=True)
        self._save_plan(t)
        self.notify(
            LeagueStarted(
                entrants=len(self.ledger.in_league(self.ledger.next_batch())),
                settled=self.ledger.settled_batches(),
                sandbox=self.sandbox.description,
                commitment=self.secret.commitment,
                limits=f"{t.time_control.describe()}; {t.limits.describe()}",
                warnings=(*t.warnings(), *self.sandbox.notes),
                chain=self.store.chain_head(),
            )
        )

    def _poll(self) -> None:
        """Read the file again when ``poll_seconds`` have passed and it changed."""
        last, seen = self.polled
        now = self.clock()
        if now - last < self.settings.poll_seconds:
            return
        stat = _stat(self.path)
        self.polled = (now, stat)
        if stat == seen:
            return
        try:
            tournament = load_tournament(self.path)
            self.store.check_settings(tournament.settings())
        except UsageError as exc:
            self._problem(f"{exc}; the league goes on with the file as it was")
            return
        for problem in self._sync(tournament):
            self._problem(problem)
        self.settings = tournament.file.league  # the knobs may change between batches
        self.tournament = tournament

    def _problem(self, message: str) -> None:
        if message not in self.problems:
            self.problems.add(message)
            self.notify(FileProblem(message))

    def _sync(self, tournament: Tournament, *, strict: bool = False) -> list[str]:
        """Take in the versions of the file new to the league and let go of those no longer
        current, from the next batch on; returns what cannot be done (a changed or
        returning version), which changes nothing. ``strict`` (when the league starts):
        refuse the whole file then, before anything is stored."""
        roster = league_roster(tournament.file, self.path)
        stored = self.ledger.entrants()
        records = self.store.entrants()
        current = {v.label: v for v in roster.active}
        problems: list[str] = []
        joining: list[tuple[EntrantRecord, Version]] = []
        for label, version in current.items():
            known = stored.get(label)
            bot = tournament.bot(label)
            if known is None:
                staged = self._stage(bot)
                joining.append((_record(tournament, staged, version), version))
            elif known.retired is not None:
                problems.append(
                    f"{label!r} left the league at batch {known.retired} and cannot come back "
                    f"as it was; enter it again as a new version (referee submit BOT --to FILE)"
                )
            elif bot.sha256 != records[label].sha256:
                problems.append(
                    f"{label!r} changed since it joined the league (sha256 "
                    f"{records[label].sha256[:12]}… is now {bot.sha256[:12]}…); enter the "
                    "new files as a new version (referee submit BOT --to FILE --name "
                    f"{version.name}), or put the old files back"
                )
            elif label not in self.staged:
                self.staged[label] = self._stage(bot)
        leaving = {
            label: _why_left(roster, entrant.name, label)
            for label, entrant in stored.items()
            if entrant.retired is None and label not in current
        }
        if problems and strict:
            raise UsageError(f"{self.path}: {'; '.join(problems)}")
        if joining or leaving:
            self._change(tournament, joining, leaving)
        return problems

    def _change(
        self,
        tournament: Tournament,
        joining: list[tuple[EntrantRecord, Version]],
        leaving: Mapping[str, str],
    ) -> None:
        """Store who joins and who leaves at the next batch, with the plan, at once."""
        batch = self.ledger.next_batch()
        with self.store.transaction():
            if joining:
                initial = self.env.create_rating()
                self.ledger.join(joining, batch, (initial.mu, initial.sigma))
            if leaving:
                self.ledger.retire(leaving, batch)
                self.ledger.lift(leaving, batch)  # a suspension ends with its version
            self._save_plan(tournament)
        joined = tuple(version.label for _, version in joining)
        self.notify(EntrantsChanged(batch, joined, tuple(sorted(leaving.items()))))

    def _save_plan(self, tournament: Tournament) -> None:
        """Chain the file as it is now, with the versions in the league from the next batch
        (a new plan link only when either changed)."""
        batch = self.ledger.next_batch()
        active = tuple(self.ledger.in_league(batch))
        self.store.save_plan(dataclasses.replace(tournament.plan(), entrants=active))

    def _stage(self, bot: BotSpec) -> BotSpec:
        assert self.staging is not None
        staged = stage_bot(bot, self.staging)
        self.staged[bot.name] = staged
        return staged

    # -- a batch ---------------------------------------------------------------------

    def _open_batch(self) -> _Batch | None:
        """The batch planned by an earlier run and not settled, if any."""
        last = self.ledger.last_batch()
        if last is None or last.settled is not None:
            return None
        return _Batch(last.batch, resumed=True, plan_ms=0.0)

    def _plan(self) -> _Batch | None:
        """Plan the next batch and store it (``None`` when no table can be drawn)."""
        t, settings, ledger = self.tournament, self.settings, self.ledger
        started = time.perf_counter()
        batch = ledger.next_batch()
        now = self.clock()
        suspended = ledger.suspended(batch)
        entrants = {k: e for k, e in ledger.in_league(batch).items() if k not in suspended}
        recent, seats = ledger.window(now - settings.window_minutes * 60)
        state = LeagueState(
            batch,
            tuple(
                Standing(
                    label,
                    e.settled_mu,
                    e.settled_sigma,
                    e.matches,
                    e.placement,
                    e.last_batch,
                    e.author,
                    recent.get(label, 0),
                )
                for label, e in entrants.items()
                if label in self.staged
            ),
            seats,
        )
        f = t.file
        plan = plan_batch(
            state,
            settings,
            table_size=f.table_size,
            seed=f.seed,
            ratings=f.ratings,
            authors_apart=f.authors.apart,
        )
        if not plan.tables:
            self.waiting = (len(state.standings), len(plan.capped), len(suspended))
            return None
        assert self.secret is not None
        tables = [table.labels for table in plan.tables]
        authors = {label: e.author for label, e in entrants.items()} if f.authors.apart else None
        specs = league_batch(
            batch,
            tables,
            ledger.dealt(tables),
            seed=f.seed,
            secret=self.secret.key,
            duplicate=f.duplicate,
            authors=authors,
        )
        ledger.plan(batch, now, specs, plan.placement, self.secret)
        elapsed = (time.perf_counter() - started) * 1000
        return _Batch(
            batch,
            resumed=False,
            plan_ms=elapsed,
            placement=len(plan.placement),
            capped=len(plan.capped),
        )

    def _waiting(self) -> None:
        entrants, capped, suspended = self.waiting
        self.notify(LeagueWaiting(entrants, capped, self.tournament.file.table_size, suspended))

    def _play(self, batch: _Batch) -> None:
        """Play the batch's matches not yet done, then settle it."""
        self.batch = batch
        rows = self.ledger.batch_matches(batch.number)
        tasks = []
        for spec, status, attempts in rows:
            batch.specs[spec.key] = spec
            if status == "done":
                continue
            bots = [self._bot(label) for label in spec.table]
            if any(bot is None for bot in bots):
                gone = [label for label, bot in zip(spec.table, bots, strict=True) if bot is None]
                self.store.record_failure(
                    spec.key, f"the files of {', '.join(gone)} are gone or changed", final=True
                )
                continue
            tasks.append(self._task(spec, attempts, [b for b in bots if b is not None]))
        tasks.sort(key=lambda task: (task.spec.rotation, task.spec.key))
        tables = sum(spec.rotation == 0 for spec in batch.specs.values())
        self.notify(
            BatchPlanned(
                batch.number,
                tables,
                len(rows),
                len(tasks),
                batch.placement,
                batch.capped,
                batch.resumed,
                batch.plan_ms,
            )
        )
        if tasks:
            self.executor.run(tasks, self._record)
        self._settle(batch)
        self.batch = None

    def _bot(self, label: str) -> BotSpec | None:
        """The staged bot of ``label``: an entrant in the league, or a version that left it
        while its last batch was open (staged again from its entry, if its files are
        still the ones it joined with)."""
        if label in self.staged:
            return self.staged[label]
        roster = league_roster(self.tournament.file, self.path)
        version = next((v for v in roster.versions if v.label == label), None)
        if version is None:
            return None
        try:
            bot = load_bot(version.entry.path, relative_to=self.path.parent)
            bot = dataclasses.replace(bot, name=label, sha256=bot_sha256(read_bot_files(bot)))
        except UsageError:
            return None
        record = self.store.entrants().get(label)
        if record is None or bot.sha256 != record.sha256:
            return None
        return self._stage(bot)

    def _task(self, spec: MatchSpec, started: int, bots: list[BotSpec]) -> MatchTask:
        """The task of ``spec``, started ``started`` times before (fresh cards from then on,
        as in a tournament: :meth:`MatchTask.dealt`)."""
        assert self.secret is not None and self.batch is not None
        task = MatchTask.dealt(
            self.tournament,
            spec,
            bots,
            key=self.secret.key,
            started=started,
            max_attempts=self.executor.max_attempts,
            sandbox=self.sandbox.name,
            log_path=self.store.log_path(spec.key),
            images=self.images,
        )
        self.batch.tasks[spec.key] = task
        return task

    def _record(self, event: AttemptEvent) -> None:
        """Commit what the executor reports (a result with the ratings it changes), pass
        it on, and look at the file when it is time."""
        batch = self.batch
        assert batch is not None
        if isinstance(event, MatchStarted):
            self.store.mark_running(event.key)
        elif isinstance(event, MatchFinished):
            started = time.perf_counter()
            self._store_result(event, batch)
            batch.store_s += time.perf_counter() - started
            batch.stored += 1
        elif isinstance(event, MatchFailed):
            self.store.record_failure(event.key, event.error, final=event.final)
            batch.failed += event.final
        self.notify(event)
        self._poll()

    def _store_result(self, event: MatchFinished, batch: _Batch) -> None:
        spec = batch.specs[event.key]
        match = stored_match(spec, event.result)
        with self.store.transaction():
            head = self.store.record_result(
                event.key,
                event.result,
                spec.table,
                attempt=batch.tasks[event.key].deal_attempt(event.attempt),
                log_sha256=_log_digest(event.result.log),
            )
            if head is None:
                return  # stored already: a result is counted once
            rated = rate_result(self.env, self.ledger.live(spec.table), match)
            self.ledger.record(rated, tallies(match), self.clock())
        self.summary.played += 1
        faults = sum(st.fault is not None for st in event.result.standings)
        self.summary.faults += faults
        batch.faults += faults

    def _settle(self, batch: _Batch) -> None:
        """Fold the batch's results into the settled ratings, in key order: the live
        ratings of the tables whose results arrived in key order, the others rated again
        (:func:`~referee.ranking.incremental.in_arrival_order`)."""
        started = time.perf_counter()
        results = self.ledger.batch_results(batch.number)
        arrival = self.ledger.arrival(batch.number)
        tables: dict[str, list[StoredMatch]] = {}
        for match in results:
            tables.setdefault(deal_key(match.spec.key), []).append(match)
        again = [m for ms in tables.values() if not in_arrival_order(ms, arrival) for m in ms]
        again_keys = {m.spec.key for m in again}
        kept = {seat.name for m in results if m.spec.key not in again_keys for seat in m.seats}
        rated = {seat.name for m in again for seat in m.seats}
        settled = {
            **self.ledger.live(kept),
            **settle_batch(self.env, self.ledger.settled(rated), again),
        }
        with self.store.transaction():
            self.ledger.settle(batch.number, settled, len(results), self.clock())
            suspended = self._suspend({seat.name for m in results for seat in m.seats})
        self.summary.batches += 1
        self.summary.failed += batch.failed
        self._drop_left()
        self.notify(
            BatchSettled(
                batch.number,
                len(results),
                batch.failed,
                batch.faults,
                time.perf_counter() - batch.began,
                batch.store_s / batch.stored * 1000 if batch.stored else 0.0,
                (time.perf_counter() - started) * 1000,
                len({deal_key(m.spec.key) for m in again}),
            )
        )
        for suspension in suspended:
            self.notify(
                EntrantSuspended(
                    suspension.since,
                    suspension.label,
                    suspension.forfeits,
                    suspension.kind,
                    suspension.why,
                )
            )

    def _suspend(self, played: set[str]) -> list[Suspension]:
        """Suspend from the next batch on every version among ``played`` whose last
        ``suspend_after`` results are all forfeits of its own (inside the settling's
        transaction; see the module docstring)."""
        ledger, limit = self.ledger, self.settings.suspend_after
        batch = ledger.next_batch()
        held = ledger.suspended(batch)
        entrants = ledger.in_league(batch)
        found = []
        for label in sorted(played):
            entrant = entrants.get(label)
            if entrant is None or label in held:
                continue
            lifted = [s.lifted for s in ledger.suspensions(label) if s.lifted is not None]
            since = max([entrant.joined, *lifted])
            faults = ledger.own_forfeits(label, limit, since)
            if len(faults) < limit:
                continue
            last = faults[0]
            suspension = Suspension(
                label,
                batch,
                len(faults),
                last.kind,
                fault_summary(stored_fault_info(last)),
                last.key,
            )
            ledger.suspend(suspension)
            found.append(suspension)
        return found

    def _reinstate(self) -> None:
        """Lift the suspensions ``referee league reinstate`` asked to lift, from the next
        batch on (the version is staged again if its copy is gone)."""
        asked = self.ledger.reinstatements()
        if not asked:
            return
        batch = self.ledger.next_batch()
        lifted = {s.label: "reinstated (referee league reinstate)" for s in asked}
        with self.store.transaction():
            self.ledger.lift(lifted, batch)
        for label in lifted:
            if label not in self.staged:
                self._bot(label)
            self.notify(EntrantReinstated(batch, label))

    def _drop_left(self) -> None:
        """Remove the staged copies of versions no longer in the league."""
        assert self.staging is not None
        staying = self.ledger.labels_in_league(self.ledger.next_batch())
        for label in [label for label in self.staged if label not in staying]:
            folder = self.staged.pop(label).folder
            if folder.parent == self.staging:
                shutil.rmtree(folder, ignore_errors=True)


@dataclass
class _Batch:
    """The batch being played: its number, how it was planned, and its tally so far."""

    number: int
    resumed: bool
    plan_ms: float
    placement: int = 0
    capped: int = 0
    specs: dict[str, MatchSpec] = dataclasses.field(default_factory=dict)
    tasks: dict[str, MatchTask] = dataclasses.field(default_factory=dict)
    began: float = dataclasses.field(default_factory=time.perf_counter)
    stored: int = 0
    store_s: float = 0.0
    failed: int = 0
    faults: int = 0


def _why_left(roster: Roster, name: str, label: str) -> str:
    """Why the version ``label`` of ``name`` is no longer current."""
    current = roster.current(name)
    if current is not None and current.label != label:
        return f"replaced by {current.label}"
    if name in roster.retired:
        return "retired"
    return "no longer in the file"


def _record(tournament: Tournament, staged: BotSpec, version: Version) -> EntrantRecord:
    """The entrant record of a version joining: its author is the entrant's (the entry's
    ``author``, else its bot's, else the entrant's name, for every version alike)."""
    author = staged.author or tournament.bot(staged.name).author or version.name
    shown = printable(str(tournament.path.parent / version.entry.path))
    return EntrantRecord(staged.name, staged.version, staged.sha256, shown, author)


def _stat(path: Path) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)


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
