"""``referee compare NEW OLD``: is NEW better than OLD, and how sure is that?

A comparison is a tournament of its own kind (``format = "compare"``,
:func:`referee.tournament.quick.compare_tournament`), planned by a :class:`ComparisonPlanner`
on the run core (:mod:`referee.runs.core`), entering the field as a tournament does.
Instead of a schedule fixed in advance it plays **paired deals** a batch at a time
(:func:`referee.tournament.scheduler.compare`: NEW and the field bots in every seat
rotation, then OLD in NEW's seats, the same field bots, the same cards) and after every
completed deal weighs the observations (:class:`~referee.ranking.sprt.PairedDeals`) with
the sequential test (:class:`~referee.ranking.sprt.Sprt`). It stops when the test decides,
or when the deals allowed (``--max-matches``) are spent.

What makes the pairs tight, and what the comparison trusts:

* **The same cards, seats and field**: both halves of a deal are one deal (one ``deal_id``).
* **The same random draws**: ``match_start``'s ``seed`` is derived from the cards' seed and
  the seat (:func:`referee.match.runner.bot_seed`), so a field bot that seeds its generator
  from it (the kits do) draws the same numbers in both halves.
* **The same cards again after a failure**: an attempt that did not finish is played again
  on its own cards (``same_cards``), unlike a tournament's, since a pair needs both halves
  on one deal; the field bots are trusted, and see every deal ``2 k`` times anyway.
* **Faults that are not the versions' are no evidence**: a deal where a field bot faulted,
  or where a version's process was killed on the referee's side, is *spoiled*
  (:mod:`referee.ranking.spoils`): it gives no observation, and since the test reads the
  deals that are not spoiled, the next deal number, on its own fresh cards, takes its place
  (deals are played until the test decides). Spoiled deals count against ``max_deals``. A
  field bot that spoils more than a quarter of the deals (from the eighth on) stops the
  run (:attr:`ComparisonSummary.capped` names it), so a broken field cannot use up the
  budget.
* **No process sees a deal twice**: a bot process is never lent to a second match of one
  deal (:class:`~referee.protocol.seats.SessionPool`), so nothing is carried from one half,
  or one rotation, to another in memory; across processes it could be (covert channels of
  a shared kernel), which is why the field must be trusted (the command says so when a field
  bot is not a bundled sample).

**What a deal is scored by** is the comparison's statistic
(:mod:`referee.ranking.statistics`: ``final-score``, or ``round-score``, the mean of each
round's place), written with the test's hypotheses and error rates into the comparison's
tournament file (``[compare]``, :class:`~referee.tournament.model.CompareSettings`), which
the results keep as their plan: a resumed run keeps them (:func:`stored_settings`; a run
asked for others is refused, a folder stored before the section existed is scored by
``final-score``), and ``referee verify`` recomputes the verdict with them. Under
``round-score`` the places of every round are read from each match log as its result
arrives and kept with it (:mod:`referee.tournament.rounds`, in the result's transaction),
so a resumed run reads no log; a finished match whose log gives no rounds spoils its deal.

The verdict is the test's state at the first deal, in deal order, where it decided
(:meth:`~referee.ranking.sprt.Sprt.first_decision`), or where a field bot's spoiled deals
reached the cap (:func:`~referee.ranking.spoils.first_cap`), whichever comes first: the
matches of a batch that finish after it do not change it, and neither do the number of
workers, the order results arrive in, or an interruption (the results are stored like a
tournament's, so the same command resumes where it stopped, and replays an unfinished
match on its own cards).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.clock import WallClock
from referee.errors import UsageError
from referee.executors import AttemptEvent, Executor, MatchFailed, MatchFinished, MatchTask
from referee.matchlog import read_log
from referee.ranking.incremental import stored_match
from referee.ranking.spoils import (
    REFEREE_SIDE,
    SpoilCap,
    first_cap,
    observations_through,
    spoil,
    spoiled_counts,
)
from referee.ranking.sprt import MIN_DIFFERING, PairedDeals, Sprt, SprtState
from referee.ranking.statistics import (
    HYPOTHESES,
    RoundPlaces,
    default_statistic,
    round_places,
)
from referee.results import MatchResult
from referee.rules import ResolvedRules
from referee.runs.core import Planner, Round, Run, play
from referee.runs.tournament import Event, enter_field, run_started
from referee.specs import MatchSpec, StoredMatch
from referee.text import printable
from referee.tournament.file import Tournament
from referee.tournament.model import CompareSettings, Plan
from referee.tournament.rounds import load_rounds, save_rounds
from referee.tournament.scheduler import COMPARE_PREFIX, HALVES, compare
from referee.tournament.store import DATABASE, Store

__all__ = [
    "ComparisonEvent",
    "ComparisonPlanner",
    "ComparisonSummary",
    "SprtProgress",
    "default_test",
    "progress_line",
    "run_comparison",
    "spoiled_text",
    "stored_settings",
    "verdict_line",
]


@dataclass(frozen=True)
class SprtProgress:
    """Where the test stands: after a deal completed, and when a run starts.

    ``matches`` and ``faults`` count every match stored (this run's and earlier ones), and
    the bot faults in them; ``spoiled`` the deals left out, because a match of theirs failed
    on the referee's side or a fault that was not a version's own spoiled them;
    ``spoiled_by`` how many deals each spoiler spoiled (:func:`~referee.ranking.spoils.shown`
    names, sorted); ``limit`` is the most deals this run may play, spoiled ones included.
    """

    state: SprtState
    matches: int
    faults: int
    spoiled: int
    limit: int
    spoiled_by: tuple[tuple[str, int], ...] = ()


ComparisonEvent = Event | SprtProgress


@dataclass(frozen=True)
class ComparisonSummary:
    """How a comparison ended: the test's ``state`` (its ``decision`` is ``"undecided"``
    when the deals allowed were spent first), the matches stored and their bot faults,
    the matches that failed on the referee's side for good in this run, the deals left out
    (and by whom, as in :class:`SprtProgress`); ``capped`` when a field bot's spoiled deals
    stopped it (the test is then undecided)."""

    state: SprtState
    matches: int
    faults: int
    failed: int
    spoiled: int
    results_dir: Path
    spoiled_by: tuple[tuple[str, int], ...] = ()
    capped: SpoilCap | None = None


def run_comparison(
    tournament: Tournament,
    executor: Executor,
    test: Sprt,
    *,
    max_deals: int,
    results_dir: Path,
    batch: int = 2,
    restart: bool = False,
    on_event: Callable[[ComparisonEvent], None] | None = None,
    deal_secret: bytes | None = None,
    clock: WallClock = time.time,
) -> ComparisonSummary:
    """Play ``tournament`` (``format = "compare"``) until ``test`` decides or ``max_deals``
    deals are played, ``batch`` deals at a time; resume what ``results_dir`` holds
    (``restart`` wipes it first).

    ``batch``: enough deals for every worker to have matches of other deals to go on with
    (so it can keep its bot processes), few enough that little is played past the deal the
    test decides at; twice the workers is both. ``deal_secret`` deals the comparison's
    cards (to reproduce one; a fresh secret otherwise); ``clock`` is the wall time the
    store stamps. Raises ``UsageError`` as
    :func:`referee.runs.tournament.run_tournament` does.
    """
    planner = ComparisonPlanner(tournament, test, max_deals, batch)
    play(
        planner,
        tournament,
        executor,
        results_dir,
        restart=restart,
        on_event=on_event,
        deal_secret=deal_secret,
        clock=clock,
    )
    return planner.result(results_dir)


def default_test(rules: ResolvedRules, table_size: int) -> tuple[CompareSettings, Sprt]:
    """``referee compare``'s test when none is asked for: the statistic these rules score
    by (:func:`~referee.ranking.statistics.default_statistic`), its hypotheses
    (:data:`~referee.ranking.statistics.HYPOTHESES`), the test's error rates and its
    minimum of differing deals; as the file's ``[compare]`` section, and as the test."""
    statistic = default_statistic(rules, table_size)
    d0, d1 = HYPOTHESES[statistic]
    test = Sprt(d0, d1, min_differing=MIN_DIFFERING)
    settings = CompareSettings(
        statistic=statistic,
        d0=d0,
        d1=d1,
        alpha=test.alpha,
        beta=test.beta,
        min_differing=test.min_differing,
    )
    return settings, test


def stored_settings(results_dir: Path) -> CompareSettings | None:
    """The test settings of the comparison stored in ``results_dir``: ``None`` when it
    holds none yet (or no comparison: the run then refuses its settings); an old folder's
    without a ``[compare]`` section are ``final-score``'s. Raises ``UsageError`` when the
    stored plan cannot be read (a statistic that is none, a damaged database)."""
    if not (results_dir / DATABASE).is_file():
        return None
    with Store(results_dir, readonly=True) as store:
        return _stored_settings(store)


def _stored_settings(store: Store) -> CompareSettings | None:
    text = store.plan()
    if text is None:
        return None
    plan = Plan.from_json(text, store.path)
    return CompareSettings.of(plan.file) if plan.file.format == "compare" else None


def check_resumed(stored: CompareSettings, asked: CompareSettings, folder: Path) -> None:
    """Refuse to go on with the comparison in ``folder`` under other test settings than it
    was started with (a value not asked for, or one an old folder did not record, is not
    compared)."""
    changed = [
        key
        for key, value in stored.model_dump().items()
        if value is not None and getattr(asked, key) not in (None, value)
    ]
    if changed:
        was = ", ".join(f"{key} {getattr(stored, key)}" for key in changed)
        now = ", ".join(f"{key} {getattr(asked, key)}" for key in changed)
        raise UsageError(
            f"{folder} holds a comparison run with {was}, not {now}: a sequential test "
            "keeps the settings it started with; run the same command without those "
            "options to resume it, or give another --results (or --restart) to start "
            "another"
        )


def _with_test(settings: CompareSettings, test: Sprt) -> CompareSettings:
    """``settings`` with the hypotheses and error rates of the ``test`` being run, which
    must be the file's where it names them."""
    values = {
        "d0": test.d0,
        "d1": test.d1,
        "alpha": test.alpha,
        "beta": test.beta,
        "min_differing": test.min_differing,
    }
    written = {key: getattr(settings, key) for key in values}
    if any(value is not None and value != values[key] for key, value in written.items()):
        raise ValueError(f"the test {values} is not the one the file names: {written}")
    return settings.model_copy(update=values)


class ComparisonPlanner(Planner):
    """Paired deals, a batch at a time, until the test decides (see the module docstring)."""

    def __init__(self, tournament: Tournament, test: Sprt, max_deals: int, batch: int = 2) -> None:
        self.test = test
        self.max_deals = max_deals
        self.batch = max(1, batch)
        f = tournament.file
        assert f.format == "compare" and f.candidate is not None and f.baseline is not None
        self.pair = (f.candidate, f.baseline)
        self.field = [name for name in tournament.entrants if name not in self.pair]
        self.settings = _with_test(CompareSettings.of(f), test)
        self.statistic = self.settings.statistic
        self.deals = PairedDeals(*self.pair, f.table_size, statistic=self.statistic)
        self.match_rounds: dict[str, RoundPlaces] = {}
        """Each counted match's rounds, under ``round-score``."""
        self.counted: set[str] = set()
        self.failed: set[str] = set()
        self.failed_deals: set[int] = set()
        self.faults = 0
        self.examples: dict[str, str] = {}
        """A fault of each spoiler, the first by match key, for the stop's message."""
        self.pending: list[MatchSpec] = []
        self.specs: dict[str, MatchSpec] = {}
        """The matches of the round being played, by key."""
        self.next_deal = 0
        self.rounds = 0
        self.complete = False

    def result(self, results_dir: Path) -> ComparisonSummary:
        state, cap = self.verdict()
        return ComparisonSummary(
            state,
            len(self.counted),
            self.faults,
            len(self.failed),
            len(self.deals.spoiled),
            results_dir,
            self.spoiled_by(),
            cap,
        )

    def state(self) -> SprtState:
        return self.verdict()[0]

    def verdict(self) -> tuple[SprtState, SpoilCap | None]:
        """The test's state, and the cap when it stopped the comparison before the test
        decided: both read in deal order (see the module docstring)."""
        cap = first_cap(self.deals, self.failed_deals, self.examples)
        if cap is None:
            return self.test.first_decision(self.deals.observations()), None
        state = self.test.first_decision(observations_through(self.deals, cap.deal))
        return state, None if state.decided else cap

    def spoiled_by(self) -> tuple[tuple[str, int], ...]:
        return tuple(spoiled_counts(self.deals).items())

    # -- the hooks ----------------------------------------------------------------------

    def prepare(self, run: Run) -> None:
        """Refuse other test settings than the stored ones, enter the field, count what is
        stored (with its kept rounds), and go on with what is not done."""
        started = _stored_settings(run.store)
        if started is not None:
            check_resumed(started, self.settings, run.store.results_dir)
        enter_field(run)
        if self.statistic == "round-score":
            self.match_rounds = load_rounds(run.store)
        for match in run.store.completed():
            self._count(match)
        self._progress(run)
        stored = [s for s in run.store.specs().values() if s.key.startswith(COMPARE_PREFIX)]
        self.next_deal = max((s.deal + 1 for s in stored), default=0)
        self.pending = sorted(stored, key=lambda spec: spec.key)

    def next_round(self, run: Run) -> Round | None:
        """What is stored and not done, then batches of new deals until the test decides
        or the deals allowed are spent. A match that failed for good spoils its deal and
        holds nothing up; the next run plays it again."""
        while True:
            done = run.store.done_keys()
            self.pending = [
                s for s in self.pending if s.key not in done and s.key not in self.failed
            ]
            if self.pending:
                self.specs = {spec.key: spec for spec in self.pending}
                return run.round(self.pending)
            state, cap = self.verdict()
            if state.decided or cap is not None or self.next_deal >= self.max_deals:
                self.complete = run.store.done_keys() >= set(run.store.specs())
                return None
            last = min(self.max_deals, self.next_deal + self.batch)
            self.pending = self._deal(run, self.next_deal, last)
            self.next_deal = last

    def task(self, run: Run, spec: MatchSpec, started: int) -> MatchTask:
        """Every attempt on the scheduled cards (see the module docstring)."""
        task = run.dealt(spec, 0)
        return dataclasses.replace(task, reseeds=(), first_attempt=0, same_cards=True)

    def order(self, task: MatchTask) -> tuple[Any, ...]:
        """Rotation, then half, then deal: a worker's consecutive matches are of other
        deals, so it may keep its bot processes (never for a second match of one deal)."""
        spec = task.spec
        return (spec.rotation, HALVES.index(spec.key.split("/")[2]), spec.deal)

    def round_started(self, run: Run, round: Round) -> None:
        if self.rounds == 0:
            run.notify(run_started(run, round))
        else:
            run.progress()
        self.rounds += 1

    def on_result(self, run: Run, spec: MatchSpec, result: MatchResult) -> None:
        """Under ``round-score``: the match's rounds from its log, kept with its result."""
        if self.statistic != "round-score" or result.log is None:
            return
        try:
            rounds = round_places(read_log(result.log), len(spec.table))
        except (UsageError, ValueError):
            return  # no rounds to score: its deal is spoiled when the match is counted
        with run.store.transaction() as db:
            save_rounds(db, spec.key, rounds)
        self.match_rounds[spec.key] = rounds

    def on_event(self, run: Run, event: AttemptEvent) -> None:
        """Count a result, or spoil the deal of a match failed for good; say where the test
        stands when that completes or spoils a deal."""
        if isinstance(event, MatchFinished):
            if self._count(stored_match(self.specs[event.key], event.result)) is not None:
                self._progress(run)
        elif isinstance(event, MatchFailed) and event.final:
            self.failed.add(event.key)
            self.failed_deals.add(self.specs[event.key].deal)
            self.deals.fail(self.specs[event.key].deal)
            self._progress(run)

    def finished(self, run: Run) -> bool:
        return self.complete

    # -- the test -------------------------------------------------------------------

    def _deal(self, run: Run, first: int, last: int) -> list[MatchSpec]:
        """Store deals ``first`` to ``last - 1``; returns them as stored."""
        f = run.tournament.file
        specs = compare(
            *self.pair, self.field, f.table_size, last, f.seed, run.secret.key, first_deal=first
        )
        run.store.add_matches(specs, run.secret)
        stored = run.store.specs()
        return [stored[spec.key] for spec in specs]

    def _count(self, match: StoredMatch) -> int | None:
        """Count a stored match (once); its deal when that deal is now complete."""
        if match.spec.key in self.counted:
            return None
        self.counted.add(match.spec.key)
        self.faults += sum(seat.fault_kind is not None for seat in match.seats)
        names = spoil(self.deals, match)
        for seat in match.seats:
            name = REFEREE_SIDE if seat.name in self.pair else seat.name
            if seat.fault_kind is not None and name in names:
                example = f"{match.spec.key}: {seat.fault_kind}: {seat.fault_detail or ''}"
                if example < self.examples.get(name, "\uffff"):
                    self.examples[name] = example
        rounds = self.match_rounds.get(match.spec.key)
        if self.statistic == "round-score" and rounds is None:
            self.deals.fail(match.spec.deal)
            return None
        return self.deals.add(match, rounds)

    def _progress(self, run: Run) -> None:
        run.notify(
            SprtProgress(
                self.state(),
                len(self.counted),
                self.faults,
                len(self.deals.spoiled),
                self.max_deals,
                self.spoiled_by(),
            )
        )


# -- what a comparison says ---------------------------------------------------------


def progress_line(progress: SprtProgress) -> str:
    """Where the test stands, as ``referee compare`` shows it: ``12 deals (at most 38
    more), 72 matches: LLR 1.23 (-2.94, 2.94), 12 deals differ, difference +0.031 [+0.012,
    +0.050], 0 faults``."""
    state = progress.state
    spoiled = f", {spoiled_text(progress)}" if progress.spoiled else ""
    left = max(0, progress.limit - state.deals)
    return (
        f"{state.deals} deals (at most {left} more), {progress.matches} matches: "
        f"{_evidence(state)}, difference {_interval(state)}, {progress.faults} faults{spoiled}"
    )


def _evidence(state: SprtState) -> str:
    """The LLR and its bounds, or what identical observations mean instead."""
    low, high = state.bounds
    if state.identical and state.differing == 0:
        return f"identical play on all {state.deals} deals"
    if not math.isfinite(state.llr):
        return f"the same observation on all {state.deals} deals"
    return f"LLR {state.llr:.2f} ({low:.2f}, {high:.2f}), {state.differing} deals differ"


def spoiled_text(counts: SprtProgress | ComparisonSummary) -> str:
    """``3 deals spoiled (crashy 2, the referee's side 1)``: the deals left out, by whom
    (a deal whose match failed on the referee's side names nobody)."""
    who = ", ".join(f"{printable(name)} {count}" for name, count in counts.spoiled_by)
    return f"{counts.spoiled} deals spoiled" + (f" ({who})" if who else "")


def _interval(state: SprtState) -> str:
    if not math.isfinite(state.low):
        return f"{state.difference:+.3f}"
    return f"{state.difference:+.3f} [{state.low:+.3f}, {state.high:+.3f}]"


def verdict_line(summary: ComparisonSummary, new: str, old: str, test: Sprt) -> str:
    """The verdict ``referee compare`` prints: ``H1 accepted: NEW is better than OLD by
    ...``, ``H0 accepted: ...``, ``undecided at the limit: ...``, or why a field bot stopped
    the comparison."""
    state = summary.state
    if summary.capped is not None:
        return f"{summary.capped.message()}; the difference so far is {_interval(state)}"
    if state.identical and state.differing == 0:
        verdict = {"H0": "H0 accepted", "H1": "H1 accepted", "undecided": "undecided"}
        return (
            f"{verdict[state.decision]}: identical play on all {state.deals} deals ({new} and "
            f"{old} scored the same on every deal)"
        )
    if state.decision == "H1":
        return (
            f"H1 accepted: {new} is better than {old} by {_interval(state)} (95% interval, "
            "not corrected for the sequential stop)"
        )
    if state.decision == "H0":
        return (
            f"H0 accepted: {new} is not better than {old} by {test.d1:g}; the difference "
            f"is {_interval(state)}"
        )
    return f"undecided at the limit: the difference is {_interval(state)}"
