"""A tournament: ``referee tournament run FILE``, planned by a :class:`TournamentPlanner`.

On the run core (:mod:`referee.runs.core`), the planner:

1. **prepares** (:func:`enter_field`): stages every bot, makes the replacements asked for
   (``--replace``: the old version's matches retired, its tables scheduled again on fresh
   cards, :mod:`referee.tournament.replacement`), refuses stored results played by other
   bot files, and chains the plan (keeping the rank after play-offs the folder's plan
   recorded: a folder stored before the rule was recorded goes on by ``mu - 3 sigma``,
   :class:`~referee.tournament.model.Plan`);
2. **schedules** the first round: adds the scheduled matches to the store (each keeps the
   deal of the secret it was first scheduled with; a retired one stands for its replay);
3. with ``playoff`` in the file, plans **play-off rounds**, each from the stored results
   (:mod:`referee.ranking.playoff`) and stored before it is played, until the order at the
   top is sure or the budget is spent;
4. says the run is **finished** when every match is done: the core then reveals the deal
   secret.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.clock import WallClock
from referee.errors import UsageError
from referee.executors import AttemptEvent, Executor
from referee.ranking.playoff import PlayoffState, plan_round
from referee.ranking.ratings import Rater
from referee.runs.core import (
    Planner,
    PreflightWarning,
    ResultStored,
    Round,
    Run,
    RunProgress,
    RunSummary,
    play,
)
from referee.sandbox import BotSpec
from referee.specs import (
    RANK_AFTER_PLAYOFFS,
    EntrantRecord,
    MatchSpec,
    PlayoffSettings,
    RankRule,
    playoff_round,
)
from referee.text import printable
from referee.tournament.deals import BeaconDeclaration
from referee.tournament.file import Tournament
from referee.tournament.model import Plan
from referee.tournament.replacement import live_key, replace_entrants
from referee.tournament.scheduler import schedule
from referee.tournament.store import DealSecret, RunLock, Store, wipe

__all__ = [
    "Event",
    "PlayoffRound",
    "PlayoffsOver",
    "PreflightWarning",
    "ResultStored",
    "RunProgress",
    "RunStarted",
    "RunSummary",
    "TournamentPlanner",
    "commit_tournament",
    "enter_field",
    "kept_plan",
    "run_started",
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


Event = (
    RunStarted
    | AttemptEvent
    | RunProgress
    | ResultStored
    | PlayoffRound
    | PlayoffsOver
    | PreflightWarning
)


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
    scheduler: Callable[[Tournament, bytes], list[MatchSpec]] = schedule,
    clock: WallClock = time.time,
) -> RunSummary:
    """Play every match of ``tournament`` not yet in its store; resume where a run stopped.

    ``restart`` wipes the stored results first; ``replace`` names entrants whose new files
    replace the ones their results were played with (the old results are retired, their
    tables played again: :mod:`referee.tournament.replacement`); ``None`` where the command
    offers no ``--replace`` (a changed bot's refusal then does not suggest it). New matches
    are dealt with the store's unrevealed deal secret (a fresh one when there is none, or
    ``deal_secret`` to reproduce a tournament), with ``beacon`` mixed in when the secret was
    committed to before the run (:func:`commit_tournament`); when every scheduled match is
    done, and the play-offs are over, the secret is revealed. ``scheduler`` makes the
    scheduled matches from the tournament and the dealing key (a test's control seats
    differently); ``clock`` is the wall time the store stamps. Raises ``UsageError`` when
    stored results were played by other bot files or other settings (unless ``restart``, or
    ``replace`` names them), when another run holds the lock, when the beacon is missing,
    unexpected or different, or when ``replace`` cannot be done.
    """
    if restart and replace:
        raise UsageError(
            "--replace keeps every other stored result and --restart discards them all: "
            "give one of them"
        )
    planner = TournamentPlanner(scheduler=scheduler, replace=replace)
    folder = results_dir or tournament.results_dir
    run = play(
        planner,
        tournament,
        executor,
        folder,
        restart=restart,
        on_event=on_event,
        deal_secret=deal_secret,
        beacon=beacon,
        clock=clock,
    )
    return run.summary


def commit_tournament(
    tournament: Tournament,
    declared: BeaconDeclaration,
    *,
    results_dir: Path | None = None,
    restart: bool = False,
    clock: WallClock = time.time,
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
        with Store(folder, clock=clock) as store:
            store.check_settings(tournament.settings())
            return store.commit_secret(declared)


def enter_field(run: Run, replace: Sequence[str] | None = None) -> tuple[str, ...]:
    """Stage every bot of the file, make the replacements ``replace`` asks for, refuse
    changed bots, record the entrants and chain the plan; returns what each replacement
    did, a line each (``replace`` is ``None`` where the command offers no ``--replace``)."""
    t, store = run.tournament, run.store
    for bot in t.bots:
        run.stage(bot)
    records = [_entrant(t, run.staged[name]) for name in t.entrants]
    f = t.file
    replaced = replace_entrants(
        store,
        records,
        replace or (),
        seed=f.seed,
        duplicate=f.duplicate,
        secret=run.secret,
        at=run.clock(),
    )
    store.check_entrants(records, replaceable=replace is not None)
    store.save_entrants(records)
    store.save_plan(kept_plan(t, store))  # chained, before any result of this run
    return tuple(r.describe() for r in replaced)


def kept_plan(tournament: Tournament, store: Store) -> Plan:
    """The plan a run of ``tournament`` stores: the file's, with the rank after play-offs
    the folder's plan recorded when it holds one already (``None`` for a folder stored
    before the rule was recorded, so it keeps ``mu - 3 sigma``: its play-offs were planned,
    and its leaderboard published, so). ``UsageError`` when the stored plan cannot be
    read."""
    plan = tournament.plan()
    stored = store.plan()
    if stored is None:
        return plan
    recorded = Plan.from_json(stored, store.path).rank_after_playoffs
    return dataclasses.replace(plan, rank_after_playoffs=recorded)


def run_started(run: Run, round: Round, replaced: tuple[str, ...] = ()) -> RunStarted:
    """The event that opens a run's first round (``round``, its tasks built)."""
    t, s, secret = run.tournament, run.summary, run.secret
    return RunStarted(
        s.total,
        s.done,
        len(round.tasks),
        run.sandbox.description,
        secret.commitment,
        f"{t.time_control.describe()}; {t.limits.describe()}",
        beacon=secret.beacon,
        beacon_source=secret.declared.source if secret.declared else None,
        chain=(s.chain_results, s.chain_head),
        warnings=(*t.warnings(), *run.sandbox.notes),
        replaced=replaced,
    )


class TournamentPlanner(Planner):
    """The scheduled matches, then the play-offs (see the module docstring)."""

    def __init__(
        self,
        *,
        scheduler: Callable[[Tournament, bytes], list[MatchSpec]] = schedule,
        replace: Sequence[str] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.replace = replace
        self.replaced: tuple[str, ...] = ()
        self.rounds = 0
        self.complete = True
        """Every match of the rounds played so far is done."""
        self.rater = Rater()  # each play-off round rates only what is new since the last
        self.playoff: _Playoff | None = None
        self.after_playoffs: RankRule = RANK_AFTER_PLAYOFFS
        """The rank after play-offs the folder's plan records (set as the run prepares)."""

    def prepare(self, run: Run) -> None:
        self.replaced = enter_field(run, self.replace)
        self.after_playoffs = kept_plan(run.tournament, run.store).playoff_rank()

    def next_round(self, run: Run) -> Round | None:
        if not self.complete:
            return None  # a match failed on our side: the next run retries it, then goes on
        if self.rounds == 0:
            specs = self._schedule(run)
        else:
            settings = run.tournament.file.playoff
            if settings is None:
                return None
            planned = self._play_off(run, settings, self.rounds - 1)
            if planned is None:
                return None
            specs = planned
        return run.round(specs)

    def round_started(self, run: Run, round: Round) -> None:
        if self.rounds == 0:
            run.notify(run_started(run, round, self.replaced))
        else:
            playoff = self.playoff
            if playoff is not None and round.tasks:
                run.notify(
                    PlayoffRound(
                        self.rounds - 1,
                        len(round.specs),
                        len(round.tasks),
                        playoff.uncertain,
                        playoff.spent,
                        playoff.budget,
                    )
                )
            run.progress()

    def round_over(self, run: Run, round: Round) -> None:
        self.rounds += 1
        self.complete = {spec.key for spec in round.specs} <= run.store.done_keys()

    def finished(self, run: Run) -> bool:
        return self.complete

    def _schedule(self, run: Run) -> list[MatchSpec]:
        """Store the scheduled matches; returns those that count as stored (with their own
        deals): a retired match's latest replay in its place."""
        scheduled = self.scheduler(run.tournament, run.secret.key)
        run.store.add_matches(scheduled, run.secret)
        stored, retired = run.store.specs(), run.store.retired()
        return [stored[live_key(spec.key, retired)] for spec in scheduled]

    def _play_off(
        self, run: Run, settings: PlayoffSettings, round_no: int
    ) -> list[MatchSpec] | None:
        """Play-off round ``round_no``, or ``None`` when none is due.

        A round already stored (planned by an earlier, interrupted run) is played as stored,
        never planned again; a new round is planned from the finished matches and stored
        before any of it is played. Retired matches (an entrant replaced) are neither played
        nor planned from: the budget counts the play-off matches that count.
        """
        t, store = run.tournament, run.store
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
                secret=run.secret.key,
                duplicate=t.file.duplicate,
                authors=t.authors_apart(),
                rater=self.rater,
                fingerprints={name: bot.sha256 for name, bot in run.staged.items()},
                after_playoffs=self.after_playoffs,
            )
            uncertain = tuple((p.upper, p.lower, p.confidence, p.deals) for p in plan.uncertain)
            if not plan.specs:
                run.notify(PlayoffsOver(plan.state, round_no, spent, uncertain))
                return None
            store.add_matches(plan.specs, run.secret)
            in_round = list(plan.specs)
            spent += len(in_round)
        self.playoff = _Playoff(uncertain, spent, settings.budget)
        return in_round


@dataclass(frozen=True)
class _Playoff:
    """What the play-off round about to be played is for, and the budget so far."""

    uncertain: Uncertain
    spent: int
    budget: int


def _entrant(tournament: Tournament, staged: BotSpec) -> EntrantRecord:
    original = tournament.bot(staged.name)
    path = original.folder / original.single_file if original.single_file else original.folder
    author = tournament.author(staged.name)
    # Where the bot came from, for people to read: a folder name that is not UTF-8 (its
    # bytes kept as surrogates) could not be stored at all, so it is stored escaped.
    shown = printable(str(path))
    return EntrantRecord(staged.name, staged.version, staged.sha256, shown, author)
