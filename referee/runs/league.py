"""A league that never stops: ``referee league run FILE``.

:func:`run_league` plays a league (``format = "league"``) until it is stopped (Ctrl-C,
SIGTERM, or ``batches`` settled), and is the only writer of its store, as
:func:`referee.runs.tournament.run_tournament` is of a tournament's: a :class:`LeaguePlanner`
on the run core (:mod:`referee.runs.core`). It works in batches, the
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

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from referee.clock import WallClock
from referee.errors import UsageError
from referee.executors import AttemptEvent, Executor, MatchTask
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
from referee.results import MatchResult
from referee.runs.core import Planner, ResultStored, Round, Run, RunProgress, play
from referee.sandbox import BotSpec, bot_sha256, load_bot, read_bot_files
from referee.specs import EntrantRecord, MatchSpec, StoredMatch, deal_key
from referee.text import printable
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.league import LeagueLedger, Roster, Suspension, Version, league_roster
from referee.tournament.scheduler import league_batch
from referee.tournament.store import DATABASE, Store

__all__ = [
    "BatchPlanned",
    "BatchSettled",
    "EntrantReinstated",
    "EntrantSuspended",
    "EntrantsChanged",
    "FileProblem",
    "LeagueEvent",
    "LeaguePlanner",
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
    | ResultStored
    | RunProgress
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
    clock: WallClock = time.time,
    wait: Callable[[float], None] = time.sleep,
) -> LeagueSummary:
    """Run the league of the file at ``path`` until stopped, or until ``batches`` more
    batches are settled; resume where it stopped (see the module docstring).

    ``restart`` wipes its stored results first; ``deal_secret`` deals with that secret
    (to reproduce a league); ``clock`` is the run's wall time: the time the store stamps
    and stores with each batch (the cap on hogging counts from it), and the one the file
    is polled by; ``wait`` how the league waits for entrants. Raises
    ``UsageError`` for a file that is no league, stored results played with other
    settings, an entrant whose files changed since it joined, or a lock held by another run.
    """
    tournament = load_tournament(path)
    if tournament.file.format != "league":
        raise UsageError(
            f'{path} is not a league (format = "{tournament.file.format}"); run it with '
            f"referee tournament run {path}"
        )
    planner = LeaguePlanner(tournament, batches=batches, wait=wait)
    run = play(
        planner,
        tournament,
        executor,
        results_dir or tournament.results_dir,
        restart=restart,
        on_event=on_event,
        deal_secret=deal_secret,
        clock=clock,
    )
    s = run.summary
    return LeagueSummary(s.results_dir, planner.settled, s.played, s.faults, s.failed)


def reinstate(path: Path, name: str, *, clock: WallClock = time.time) -> Suspension:
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
    with Store(folder, clock=clock) as store:
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


class LeaguePlanner(Planner):
    """Batches planned from the stored state, played, and settled (see the module
    docstring); ``batches``: settle that many and stop (``None``: never stop)."""

    def __init__(
        self,
        tournament: Tournament,
        *,
        batches: int | None = None,
        wait: Callable[[float], None] = time.sleep,
    ) -> None:
        self.path = tournament.path
        self.settings = tournament.file.league
        self.env = make_environment(tournament.file.ratings, tournament.rules)
        self.batches = batches
        self.wait = wait
        self.settled = 0
        """Batches settled in this run."""
        self.polled = (0.0, (0, 0))
        """When the file was last looked at, and its (mtime, size) then."""
        self.problems: set[str] = set()
        self.batch: _Batch | None = None
        self.waiting = (0, 0, 0)
        """Why the last batch could not be planned: entrants that may play, capped, and
        suspended."""
        self._ledger: LeagueLedger | None = None

    @property
    def ledger(self) -> LeagueLedger:
        assert self._ledger is not None, "the league is not prepared"
        return self._ledger

    # -- the hooks ---------------------------------------------------------------------

    def prepare(self, run: Run) -> None:
        """Stage the entrants in the league (refusing one whose files changed since it
        joined), take in new ones, chain the plan."""
        t = run.tournament
        self._ledger = LeagueLedger(run.store)
        # The file may have changed since ``t`` was read from it (a server enters a bot
        # while the league starts): its stat now would hide that change from every poll.
        # So the first poll reads it again, whatever it looks like.
        self.polled = (run.clock() - self.settings.poll_seconds, (0, 0))
        self._sync(run, t, strict=True)
        self._save_plan(run, t)
        run.notify(
            LeagueStarted(
                entrants=len(self.ledger.in_league(self.ledger.next_batch())),
                settled=self.ledger.settled_batches(),
                sandbox=run.sandbox.description,
                commitment=run.secret.commitment,
                limits=f"{t.time_control.describe()}; {t.limits.describe()}",
                warnings=(*t.warnings(), *run.sandbox.notes),
                chain=run.store.chain_head(),
            )
        )

    def next_round(self, run: Run) -> Round | None:
        """The open batch, else the next one planned; while none can be drawn, the league
        waits and reads its file again."""
        waiting = False
        while self.batches is None or self.settled < self.batches:
            self._poll(run)
            self._reinstate(run)
            batch = self._open_batch() or self._plan(run)
            if batch is not None:
                self.batch = batch
                rows = self.ledger.batch_matches(batch.number)
                specs = [spec for spec, _, _ in rows]
                done = {spec.key for spec, status, _ in rows if status == "done"}
                started = {spec.key: attempts for spec, _, attempts in rows}
                return Round(specs, done, started)
            if not waiting:
                entrants, capped, suspended = self.waiting
                run.notify(
                    LeagueWaiting(entrants, capped, run.tournament.file.table_size, suspended)
                )
            waiting = True
            self.wait(float(self.settings.poll_seconds))
        return None

    def task(self, run: Run, spec: MatchSpec, started: int) -> MatchTask | None:
        """The task of ``spec``, or ``None`` (recorded as failed) when the files of one of
        its versions are gone or changed."""
        bots = [self._bot(run, label) for label in spec.table]
        found = [bot for bot in bots if bot is not None]
        if len(found) < len(bots):
            gone = [label for label, bot in zip(spec.table, bots, strict=True) if bot is None]
            run.store.record_failure(
                spec.key, f"the files of {', '.join(gone)} are gone or changed", final=True
            )
            return None
        return run.dealt(spec, started, found)

    def round_started(self, run: Run, round: Round) -> None:
        batch = self.batch
        assert batch is not None
        run.notify(
            BatchPlanned(
                batch.number,
                sum(spec.rotation == 0 for spec in round.specs),
                len(round.specs),
                len(round.tasks),
                batch.placement,
                batch.capped,
                batch.resumed,
                batch.plan_ms,
            )
        )

    def on_result(self, run: Run, spec: MatchSpec, result: MatchResult) -> None:
        """The live ratings the result changes, in its transaction."""
        match = stored_match(spec, result)
        rated = rate_result(self.env, self.ledger.live(spec.table), match)
        self.ledger.record(rated, tallies(match), run.clock())

    def on_event(self, run: Run, event: AttemptEvent) -> None:
        self._poll(run)

    def round_over(self, run: Run, round: Round) -> None:
        """Fold the batch's results into the settled ratings, in key order: the live
        ratings of the tables whose results arrived in key order, the others rated again
        (:func:`~referee.ranking.incremental.in_arrival_order`)."""
        batch = self.batch
        assert batch is not None
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
        with run.store.transaction():
            self.ledger.settle(batch.number, settled, len(results), run.clock())
            suspended = self._suspend({seat.name for m in results for seat in m.seats})
        self.settled += 1
        self._drop_left(run)
        self.batch = None
        run.notify(
            BatchSettled(
                batch.number,
                len(results),
                round.failed,
                round.faults,
                time.perf_counter() - round.began,
                round.store_s / round.stored * 1000 if round.stored else 0.0,
                (time.perf_counter() - started) * 1000,
                len({deal_key(m.spec.key) for m in again}),
            )
        )
        for suspension in suspended:
            run.notify(
                EntrantSuspended(
                    suspension.since,
                    suspension.label,
                    suspension.forfeits,
                    suspension.kind,
                    suspension.why,
                )
            )

    # -- the file and its entrants ---------------------------------------------------

    def _poll(self, run: Run) -> None:
        """Read the file again when ``poll_seconds`` have passed and it changed."""
        last, seen = self.polled
        now = run.clock()
        if now - last < self.settings.poll_seconds:
            return
        stat = _stat(self.path)
        self.polled = (now, stat)
        if stat == seen:
            return
        try:
            tournament = load_tournament(self.path)
            run.store.check_settings(tournament.settings())
        except UsageError as exc:
            self._problem(run, f"{exc}; the league goes on with the file as it was")
            return
        for problem in self._sync(run, tournament):
            self._problem(run, problem)
        self.settings = tournament.file.league  # the knobs may change between batches
        run.tournament = tournament

    def _problem(self, run: Run, message: str) -> None:
        if message not in self.problems:
            self.problems.add(message)
            run.notify(FileProblem(message))

    def _sync(self, run: Run, tournament: Tournament, *, strict: bool = False) -> list[str]:
        """Take in the versions of the file new to the league and let go of those no longer
        current, from the next batch on; returns what cannot be done (a changed or
        returning version), which changes nothing. ``strict`` (when the league starts):
        refuse the whole file then, before anything is stored."""
        roster = league_roster(tournament.file, self.path)
        stored = self.ledger.entrants()
        records = run.store.entrants()
        current = {v.label: v for v in roster.active}
        problems: list[str] = []
        joining: list[tuple[EntrantRecord, Version]] = []
        for label, version in current.items():
            known = stored.get(label)
            bot = tournament.bot(label)
            if known is None:
                staged = run.stage(bot)
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
            elif label not in run.staged:
                run.stage(bot)
        leaving = {
            label: _why_left(roster, entrant.name, label)
            for label, entrant in stored.items()
            if entrant.retired is None and label not in current
        }
        if problems and strict:
            raise UsageError(f"{self.path}: {'; '.join(problems)}")
        if joining or leaving:
            self._change(run, tournament, joining, leaving)
        return problems

    def _change(
        self,
        run: Run,
        tournament: Tournament,
        joining: list[tuple[EntrantRecord, Version]],
        leaving: Mapping[str, str],
    ) -> None:
        """Store who joins and who leaves at the next batch, with the plan, at once."""
        batch = self.ledger.next_batch()
        with run.store.transaction():
            if joining:
                initial = self.env.create_rating()
                self.ledger.join(joining, batch, (initial.mu, initial.sigma))
            if leaving:
                self.ledger.retire(leaving, batch)
                self.ledger.lift(leaving, batch)  # a suspension ends with its version
            self._save_plan(run, tournament)
        joined = tuple(version.label for _, version in joining)
        run.notify(EntrantsChanged(batch, joined, tuple(sorted(leaving.items()))))

    def _save_plan(self, run: Run, tournament: Tournament) -> None:
        """Chain the file as it is now, with the versions in the league from the next batch
        (a new plan link only when either changed)."""
        batch = self.ledger.next_batch()
        active = tuple(self.ledger.in_league(batch))
        run.store.save_plan(dataclasses.replace(tournament.plan(), entrants=active))

    def _bot(self, run: Run, label: str) -> BotSpec | None:
        """The staged bot of ``label``: an entrant in the league, or a version that left it
        while its last batch was open (staged again from its entry, if its files are
        still the ones it joined with)."""
        if label in run.staged:
            return run.staged[label]
        roster = league_roster(run.tournament.file, self.path)
        version = next((v for v in roster.versions if v.label == label), None)
        if version is None:
            return None
        try:
            bot = load_bot(version.entry.path, relative_to=self.path.parent)
            bot = dataclasses.replace(bot, name=label, sha256=bot_sha256(read_bot_files(bot)))
        except UsageError:
            return None
        record = run.store.entrants().get(label)
        if record is None or bot.sha256 != record.sha256:
            return None
        return run.stage(bot)

    # -- a batch ---------------------------------------------------------------------

    def _open_batch(self) -> _Batch | None:
        """The batch planned by an earlier run and not settled, if any."""
        last = self.ledger.last_batch()
        if last is None or last.settled is not None:
            return None
        return _Batch(last.batch, resumed=True, plan_ms=0.0)

    def _plan(self, run: Run) -> _Batch | None:
        """Plan the next batch and store it (``None`` when no table can be drawn)."""
        t, settings, ledger = run.tournament, self.settings, self.ledger
        started = time.perf_counter()
        batch = ledger.next_batch()
        now = run.clock()
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
                if label in run.staged
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
        tables = [table.labels for table in plan.tables]
        authors = {label: e.author for label, e in entrants.items()} if f.authors.apart else None
        specs = league_batch(
            batch,
            tables,
            ledger.dealt(tables),
            seed=f.seed,
            secret=run.secret.key,
            duplicate=f.duplicate,
            authors=authors,
        )
        ledger.plan(batch, now, specs, plan.placement, run.secret)
        elapsed = (time.perf_counter() - started) * 1000
        return _Batch(
            batch,
            resumed=False,
            plan_ms=elapsed,
            placement=len(plan.placement),
            capped=len(plan.capped),
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

    def _reinstate(self, run: Run) -> None:
        """Lift the suspensions ``referee league reinstate`` asked to lift, from the next
        batch on (the version is staged again if its copy is gone)."""
        asked = self.ledger.reinstatements()
        if not asked:
            return
        batch = self.ledger.next_batch()
        lifted = {s.label: "reinstated (referee league reinstate)" for s in asked}
        with run.store.transaction():
            self.ledger.lift(lifted, batch)
        for label in lifted:
            if label not in run.staged:
                self._bot(run, label)
            run.notify(EntrantReinstated(batch, label))

    def _drop_left(self, run: Run) -> None:
        """Remove the staged copies of versions no longer in the league."""
        staying = self.ledger.labels_in_league(self.ledger.next_batch())
        for label in [label for label in run.staged if label not in staying]:
            run.unstage(label)


@dataclass
class _Batch:
    """The batch being played: its number and how it was planned (the core keeps its
    tally, :class:`~referee.runs.core.Round`)."""

    number: int
    resumed: bool
    plan_ms: float
    placement: int = 0
    capped: int = 0


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
