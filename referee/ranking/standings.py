"""The standings: one value with everything a ranking decides, for publishing to render.

:func:`standings` turns the counting matches of a tournament (:class:`RankingInput`: the
matches, the entrants, the ``[ratings]`` and ``[playoff]`` settings, the authors and the
files' fingerprints) into :class:`Standings`: each rated entrant's TrueSkill rating (the
rank is by ``mu - 3 sigma``, or by ``mu`` once play-offs have been played:
:func:`referee.ranking.ratings.rank_rule`, whose module says why) with its mean normalised
score and bootstrap interval (:mod:`referee.ranking.intervals`), **over next**
(:class:`OverNext`: how sure it is, on the deals both played, that an entrant does better
than the next), the unrated, the play-offs
so far, byte-identical entrants, the collusion check (:mod:`referee.ranking.collusion`) and
the rating history (:mod:`referee.ranking.history`). Publishing adds what no ranking
decides (the tournament's settings, the deal commitments, reply times, replaced versions)
and renders; it computes nothing of the ranking itself.

A ranking has two halves of about equal cost that need nothing of each other:
:func:`rate_part` (TrueSkill over every match, the bootstrap of each adjacent pair, the
rating history and the collusion check) and :func:`score_part` (each entrant's score
interval). :func:`standings_meanwhile` computes them while its caller does other work (the
site writes its match pages): the first half in a process of its own, the second by
whichever of the two processes is free first. The standings are the same, value for
value, however they were computed: each half is a pure function of the input, its
bootstraps seeded by the bots' names.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Literal

from referee import interrupts
from referee.ranking.collusion import CollusionCheck, collusion_check
from referee.ranking.history import RatingHistory
from referee.ranking.intervals import (
    MIN_SHARED_DEALS,
    OrderConfidence,
    ScoreInterval,
    adjacent_confidences,
    deal_scores,
    score_intervals,
)
from referee.ranking.playoff import PlayoffState, identical, playoff_rounds
from referee.ranking.ratings import EntrantRating, RankRule, make_environment, rank_rule, rate
from referee.rules import ResolvedRules
from referee.specs import (
    PLAYOFF_PREFIX,
    RANK_AFTER_PLAYOFFS,
    PlayoffSettings,
    RatingSettings,
    StoredMatch,
    identical_groups,
)

__all__ = [
    "MIN_SHARED_DEALS",
    "LeaderboardEntry",
    "OverNext",
    "PlayoffSummary",
    "RankRule",
    "RankingInput",
    "Rated",
    "Standings",
    "rate_part",
    "score_part",
    "standings",
    "standings_meanwhile",
]


@dataclass(frozen=True)
class RankingInput:
    """What a ranking is computed from, and nothing else (it travels to another process).

    ``matches`` are the counting matches in canonical order (none retired); ``rules``
    decide the default draw probability; ``playoff`` and ``table_size`` say whether more
    play-offs are due; ``authors`` (entrant to author, where known) go into the collusion
    check's rows; ``fingerprints`` (entrant to the SHA-256 of its files) name
    byte-identical entrants, which the play-offs never separate; ``after_playoffs`` is the
    rank once play-offs were played, as the tournament's plan records it
    (:meth:`referee.tournament.model.Plan.playoff_rank`).
    """

    matches: tuple[StoredMatch, ...]
    entrants: tuple[str, ...]
    ratings: RatingSettings = field(default_factory=RatingSettings)
    rules: ResolvedRules | None = None
    playoff: PlayoffSettings | None = None
    table_size: int | None = None
    authors: Mapping[str, str] = field(default_factory=dict)
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    after_playoffs: RankRule = RANK_AFTER_PLAYOFFS


@dataclass(frozen=True)
class OverNext:
    """How sure it is that an entry does better than the next one: the **over next** cell.

    **Which estimate, and why.** The rank is TrueSkill's (``mu - 3 sigma``, or ``mu`` after
    play-offs; every match, the opponents weighed); the figure beside it is not: it is the
    paired comparison of the two bots on the deal blocks both played (the same cards, every
    seat, :func:`referee.ranking.intervals.order_confidence`), the share of bootstrap resamples in
    which this one outscores the next. TrueSkill's own certainty of the order would be
    ``Phi((mu_a - mu_b) / sqrt(sigma_a**2 + sigma_b**2))`` (with ``2 beta**2`` added under
    the root it becomes the chance that ``a`` places above ``b`` in one match: a
    prediction, not a certainty). ``python -m bench.certainty_bench`` compares the two on
    the ranking benchmark's ladder of bots of known order (figures in
    ``docs/performance.md``): the shared-deal figure predicts which bot of a pair is truly
    the better one at least as well as TrueSkill's, and where it disagrees with the rank,
    the bot ranked lower is mostly the truly better one. The play-offs stop on this figure
    too (``until``), and the twins controls (``bench/ranking_bench.py``,
    ``tests/tournament/test_fairness.py``) check that it calls two copies of one bot
    ordered no more often than its level says. So it stays, and every format says plainly
    which is which (the leaderboard's notes).

    **How it reads**, the same words in every format (:meth:`text`):

    * ``0.98``: significant at the leaderboard's confidence;
    * ``≈ 0.81``: this bot is ahead on the shared deals, but not surely;
    * ``≈ 0.13 (next ahead)``: the shared deals favour the *next* bot (87 % of resamples),
      though TrueSkill, weighing every match and opponent, ranks this one higher;
    * ``too few deals (6 of 8)``: the two bots have played fewer deals together
      than :data:`MIN_SHARED_DEALS`, too few for any figure (a bootstrap of a handful of
      deals reads 1.00 from two won deals); ``no shared deal yet`` when none.
      ``confidence`` is then ``None``. Rotations of one table deal count as one deal, and
      a replaced entrant's deals start again with its new version (its old matches are
      retired), so the cell says how many there are and how many it takes.
    """

    confidence: float | None
    deals: int
    significant: bool
    favours: Literal["this", "next", "even"] | None
    """Which bot the shared deals favour; ``None`` when they are too few."""

    @classmethod
    def of(cls, pair: OrderConfidence, level: float) -> OverNext:
        if pair.deals < MIN_SHARED_DEALS:
            return cls(None, pair.deals, False, None)
        c = pair.confidence
        favours: Literal["this", "next", "even"] = (
            "this" if c > 0.5 else "next" if c < 0.5 else "even"
        )
        return cls(c, pair.deals, pair.significant(level), favours)

    def text(self) -> str:
        """The cell, as every format shows it (see the class)."""
        if self.confidence is None:
            if self.deals == 0:
                return "no shared deal yet"
            return f"too few deals ({self.deals} of {MIN_SHARED_DEALS})"
        figure = f"{self.confidence:.2f}"
        if self.significant:
            return figure
        return f"≈ {figure} (next ahead)" if self.favours == "next" else f"≈ {figure}"


@dataclass(frozen=True)
class LeaderboardEntry:
    """One rated entrant of the standings, in rank order."""

    rank: int
    name: str
    mu: float
    sigma: float
    score: float
    matches: int
    avg_place: float | None
    firsts: int
    forfeits: int
    faults: dict[str, int] = field(default_factory=dict)
    interval: ScoreInterval | None = None
    """Mean normalised finishing score and its bootstrap interval."""
    over_next: OrderConfidence | None = None
    """The shared-deal comparison with the next entry (``None`` for the last)."""
    significant: bool | None = None
    """Whether ``over_next`` is significant at the leaderboard's confidence."""
    playoff_matches: int = 0
    certainty: OverNext | None = None
    """``over_next`` as every format shows it (:class:`OverNext`)."""

    @property
    def mark(self) -> str:
        """``≈`` when the order over the next entry is not significant, else nothing."""
        return "≈" if self.significant is False else ""

    @property
    def over_next_text(self) -> str:
        """The over-next cell: ``0.98``, ``≈ 0.81``, ``≈ 0.13 (next ahead)``,
        ``too few deals (6 of 8)``, or nothing for the last entry."""
        return "" if self.certainty is None else self.certainty.text()


@dataclass(frozen=True)
class PlayoffSummary:
    """The play-offs as far as they went: ``state`` says whether more are due."""

    top: int
    until: float
    budget: int
    matches: int
    rounds: int
    state: PlayoffState

    def text(self) -> str:
        why = {
            "settled": f"every adjacent pair of the top {self.top} is ordered with "
            f"confidence {self.until:g}",
            "budget": "the budget is spent",
            "open": "more are due (run the tournament again)",
        }[self.state]
        return (
            f"Play-offs (top {self.top} until {self.until:g}, budget {self.budget}): "
            f"{self.matches} matches in {self.rounds} rounds; {why}."
        )


@dataclass(frozen=True)
class Standings:
    """Everything a ranking decides (see the module docstring): ``matches`` is how many
    counting matches it rests on; ``unrated`` are the entrants without a match yet (no
    rating, no rank); ``confidence`` is the level of the intervals and of the marks on
    adjacent pairs; ``twins`` are the groups of byte-identical entrants; ``ranked_by`` is
    what the entries are ordered by (:func:`referee.ranking.ratings.rank_rule`)."""

    matches: int
    entries: tuple[LeaderboardEntry, ...]
    unrated: tuple[str, ...]
    confidence: float
    collusion: CollusionCheck
    history: RatingHistory
    playoff: PlayoffSummary | None = None
    twins: tuple[tuple[str, ...], ...] = ()
    ranked_by: RankRule = "conservative"


@dataclass(frozen=True)
class Rated:
    """The ratings' half of a ranking (:func:`rate_part`): every entrant's rating, best
    first, how sure each place is over the next, the history the ratings went through, and
    the collusion check (computed with them: it balances the two halves)."""

    rated: tuple[EntrantRating, ...]
    pairs: tuple[OrderConfidence, ...]
    history: RatingHistory
    collusion: CollusionCheck


def rate_part(given: RankingInput) -> Rated:
    """Rate the matches (TrueSkill, recording the history), compare each rated entrant
    with the next over the deals both played, and check every pair for collusion."""
    rating = given.ratings
    history = RatingHistory(rating, given.rules)
    env = make_environment(rating, given.rules)
    rated = rate(
        given.matches,
        given.entrants,
        env=env,
        observe=history,
        after_playoffs=given.after_playoffs,
    )
    order = [r.name for r in rated if r.rated]
    pairs = adjacent_confidences(order, deal_scores(given.matches), resamples=rating.resamples)
    collusion = collusion_check(given.matches, order=given.entrants, authors=given.authors)
    return Rated(tuple(rated), tuple(pairs), history, collusion)


def score_part(given: RankingInput) -> dict[str, ScoreInterval]:
    """Each entrant's mean score with its bootstrap interval, at the ratings' confidence."""
    rating = given.ratings
    return score_intervals(
        deal_scores(given.matches), level=rating.confidence, resamples=rating.resamples
    )


def standings(
    given: RankingInput, parts: tuple[Rated, dict[str, ScoreInterval]] | None = None
) -> Standings:
    """The standings of ``given``; ``parts`` are :func:`rate_part` and :func:`score_part`
    of it when computed already (elsewhere, at the same time): the standings are the same."""
    rated, intervals = parts if parts is not None else (rate_part(given), score_part(given))
    level = given.ratings.confidence
    in_playoffs = _playoff_matches(given.matches)
    pairs = rated.pairs
    entries = []
    for rank, r in enumerate((r for r in rated.rated if r.rated), start=1):
        over = pairs[rank - 1] if rank - 1 < len(pairs) else None
        entries.append(
            LeaderboardEntry(
                rank=rank,
                name=r.name,
                mu=r.mu,
                sigma=r.sigma,
                score=r.score,
                matches=r.matches,
                avg_place=r.avg_place,
                firsts=r.firsts,
                forfeits=r.forfeits,
                faults=dict(r.faults),
                interval=intervals.get(r.name),
                over_next=over,
                significant=None if over is None else over.significant(level),
                playoff_matches=in_playoffs.get(r.name, 0),
                certainty=None if over is None else OverNext.of(over, level),
            )
        )
    playoff = None
    if given.playoff is not None:
        table_size = given.table_size or len(given.entrants)
        playoff = _playoff_summary(
            given.matches, given.playoff, pairs, table_size, given.fingerprints
        )
    prints = given.fingerprints
    return Standings(
        matches=len(given.matches),
        entries=tuple(entries),
        unrated=tuple(r.name for r in rated.rated if not r.rated),
        confidence=level,
        collusion=rated.collusion,
        history=rated.history,
        playoff=playoff,
        twins=tuple(identical_groups({n: prints.get(n, "") for n in given.entrants})),
        ranked_by=rank_rule(given.matches, given.after_playoffs),
    )


def _playoff_matches(matches: Sequence[StoredMatch]) -> dict[str, int]:
    """How many play-off matches each bot played."""
    counts: dict[str, int] = {}
    for match in matches:
        if match.spec.key.startswith(PLAYOFF_PREFIX):
            for seat in match.seats:
                counts[seat.name] = counts.get(seat.name, 0) + 1
    return counts


def _playoff_summary(
    matches: Sequence[StoredMatch],
    settings: PlayoffSettings,
    pairs: Sequence[OrderConfidence],
    table_size: int,
    fingerprints: Mapping[str, str],
) -> PlayoffSummary:
    """How far the play-offs went, and whether more are due (as :func:`plan_round` sees it:
    a pair of byte-identical entrants is never waited for)."""
    played = sum(m.spec.key.startswith(PLAYOFF_PREFIX) for m in matches)
    state: PlayoffState = "open"
    top_pairs = pairs[: settings.top - 1]
    if top_pairs and all(
        p.significant(settings.until) or identical(p, fingerprints) for p in top_pairs
    ):
        state = "settled"
    elif settings.budget - played < table_size:
        state = "budget"
    rounds = playoff_rounds([m.spec for m in matches])
    return PlayoffSummary(settings.top, settings.until, settings.budget, played, rounds, state)


# --------------------------------------------------------------------------- two processes


@contextlib.contextmanager
def standings_meanwhile(
    given: RankingInput, *, elsewhere: bool = True
) -> Iterator[Callable[[], Standings]]:
    """A function that returns the standings of ``given``: call it once the caller's other
    work is done. Without ``elsewhere`` (a small tournament, where starting a process costs
    more than it saves) all of it is computed here when asked.

    With it, :func:`rate_part` starts at once in a process of its own (spawned: nothing is
    shared; a script calling this must guard its entry point, as for a tournament run),
    and :func:`score_part` is computed by whichever of the two processes is free first:
    that process once its half is done, or this one when it asks (:class:`_Claim`, handed
    to the process as it starts). Which is faster depends on the disk and the cores; the
    standings are the same whichever computes them. A process that cannot be started, or
    dies (killed, out of memory), is made up for here. Leaving the block ends the process
    if it is still running.
    """
    if not elsewhere:
        yield lambda: standings(given)
        return
    context = multiprocessing.get_context("spawn")
    try:
        claim = _Claim(context)
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(
            target=_rank_there, args=(claim, given, sender), name="referee-ranking", daemon=True
        )
        process.start()
    except OSError:  # no process to be had here: rank in this one
        yield lambda: standings(given)
        return
    sender.close()  # the process holds its end: a death reads as the end of the pipe

    def result() -> Standings:
        intervals = score_part(given) if claim.take(_HERE) else None
        try:
            rated, theirs = receiver.recv()
        except (EOFError, OSError):  # the process died before it answered: rate here
            rated, theirs = rate_part(given), None
        if intervals is None:
            intervals = theirs if theirs is not None else score_part(given)
        return standings(given, (rated, intervals))

    try:
        yield result
    finally:
        receiver.close()
        if process.is_alive():  # left early (an error): its answer is not wanted
            process.terminate()
        process.join()


_HERE, _THERE = 1, 2  # who took the score intervals (the ranking process: 2)


class _Claim:
    """Who computes the score intervals: the first of the two processes to :meth:`take`
    them (a shared byte under its lock: 0 while nobody has)."""

    def __init__(self, context: multiprocessing.context.SpawnContext) -> None:
        self._value = context.Value("b", 0)

    def take(self, who: int) -> bool:
        """Whether ``who`` computes them: true for the first to ask, false after."""
        with self._value.get_lock():
            if self._value.value:
                return False
            self._value.value = who
            return True


def _rank_there(claim: _Claim, given: RankingInput, sender: Connection) -> None:
    """The ranking process: the ratings' half, and the score intervals unless the other
    process took them first; sent back as one answer, then it exits without teardown."""
    interrupts.skip_teardown()
    rated = rate_part(given)
    intervals = score_part(given) if claim.take(_THERE) else None
    sender.send((rated, intervals))
    sender.close()
