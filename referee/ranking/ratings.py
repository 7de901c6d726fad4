"""TrueSkill ratings over stored results, replayed in canonical (key) order.

TrueSkill updates depend on the order of the matches, so the ratings are always recomputed
from the store in one canonical order: the scheduled matches by key, then the play-off
rounds in the order they were played (:func:`replay_order`). The leaderboard is then the
same whatever the worker count, the finishing order, or how often the run was interrupted.

The environment is tuned for bots, which do not change during a tournament
(:class:`RatingSettings`, the tournament file's ``[ratings]``):

* ``tau = 0``: no dynamics noise. TrueSkill's default ``tau`` (``sigma / 100``) lets a skill
  drift between matches, which is right for people who learn and wrong for a fixed program:
  it keeps ``sigma`` from shrinking and weighs late matches more than early ones, so the
  order of the keys would matter more.
* draws only where places are really shared: each match is one ``env.rate()`` with one
  team per seat ranked by its place, equal places being draws; ``draw_probability`` is how
  often neighbours in the standings share a place (0 when the rules break every tie).
* a forfeit is not a result of play: every forfeiting seat of a match shares the place
  below every seat that did not forfeit (:func:`rating_places`), so a table where every
  bot forfeited is a draw, with no first place for anyone.

The environment is an explicit object (never ``trueskill.setup()``), so two leaderboards can
never share state. Entrants are ordered by the conservative estimate ``mu - 3 * sigma`` while
every match is a scheduled one, and by ``mu`` once play-offs have been played
(:func:`rank_rule`); entrants with no match yet (a gauntlet's undrawn opponents) are unrated
and come last. The rule after play-offs is the tournament's, as its stored plan records it
(:data:`referee.specs.RANK_AFTER_PLAYOFFS`): a folder stored before the rule was recorded was
played, planned and published by ``mu - 3 sigma`` throughout, and keeps it, so that
``referee verify`` and a resumed run order it as it was ordered.

**Why ``mu`` after play-offs.** A schedule that seats every entrant equally often leaves the
sigmas about equal, and ``- 3 sigma`` then moves every entrant alike: the order is the order
of ``mu``, with a caution against an entrant that played little. Play-offs seat the uncertain
neighbours many more times than the rest, so their sigmas shrink and ``- 3 sigma`` rewards
having been played off rather than having played well: it can rank a neighbour with the
lower ``mu`` above the one with the higher, by about the very gap the play-offs were there to
resolve. ``mu`` is TrueSkill's estimate of skill from every result, the opponents weighed;
with ``tau = 0`` it does not drift, so it is the fair order once match counts differ. A
Bradley-Terry (Plackett-Luce) fit of every result was measured against it on the ranking
benchmark (``python -m bench.ranking_bench --rows after``, ``docs/performance.md``) and kept
out: it orders the pairs no better, and ``mu`` keeps one rating model for the leaderboard,
the play-off planner, the history and ``referee verify``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trueskill

from referee.specs import (
    RANK_AFTER_PLAYOFFS,
    RankRule,
    RatingSettings,
    StoredMatch,
    playoff_round,
)

if TYPE_CHECKING:
    from referee.rules import ResolvedRules

__all__ = [
    "EntrantRating",
    "RankRule",
    "Rater",
    "make_environment",
    "rank_key",
    "rank_rule",
    "rate",
    "rating_places",
    "rating_steps",
    "replay_order",
    "update",
]


def make_environment(
    settings: RatingSettings | None = None, rules: ResolvedRules | None = None
) -> trueskill.TrueSkill:
    """The TrueSkill environment of ``settings`` (the defaults when ``None``) for ``rules``."""
    s = settings or RatingSettings()
    return trueskill.TrueSkill(
        mu=s.mu,
        sigma=s.sigma,
        beta=s.beta,
        tau=s.tau,
        draw_probability=s.draw_probability_for(rules.tie_break if rules else None),
        backend=None,
    )


def replay_order(key: str) -> tuple[int, str]:
    """The canonical rating order: scheduled matches by key, then play-offs by round."""
    round_no = playoff_round(key)
    return (-1 if round_no is None else round_no), key


def rank_rule(
    matches: Iterable[StoredMatch], after_playoffs: RankRule = RANK_AFTER_PLAYOFFS
) -> RankRule:
    """``after_playoffs`` (the tournament's recorded rule, ``mu`` for a new one) when any of
    ``matches`` is a play-off match, else ``conservative`` (see the module docstring:
    play-offs make the match counts, and so the sigmas, unequal)."""
    played_off = any(playoff_round(m.spec.key) is not None for m in matches)
    return after_playoffs if played_off else "conservative"


def rank_key(rule: RankRule) -> Callable[[EntrantRating], tuple[bool, float, float, str]]:
    """The sort key of ``rule``: rated first, then by the rule's estimate, highest first;
    ties broken by the other estimate (under ``mu``, the surer rating first), then by name,
    so that the order is total."""
    if rule == "mu":
        return lambda r: (not r.rated, -r.mu, -r.score, r.name)
    return lambda r: (not r.rated, -r.score, -r.mu, r.name)


def rating_places(match: StoredMatch) -> list[tuple[str, int]]:
    """``(name, place)`` by seat, with every forfeiting seat sharing the last place.

    Seats that did not forfeit keep their places (the engine ranks them among themselves);
    the forfeits, whose order only says who was asked first, all take the place after them.
    """
    clean = sum(not seat.forfeit for seat in match.seats)
    return [
        (seat.name, clean + 1 if seat.forfeit else seat.place)
        for seat in sorted(match.seats, key=lambda s: s.seat)
    ]


@dataclass
class EntrantRating:
    """One entrant's rating and record over the stored matches."""

    name: str
    mu: float
    sigma: float
    matches: int = 0
    place_sum: int = 0
    firsts: int = 0
    forfeits: int = 0
    faults: dict[str, int] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """The conservative skill estimate ``mu - 3 sigma`` (the leaderboard ranks by it
        before play-offs, :func:`rank_rule`)."""
        return self.mu - 3 * self.sigma

    @property
    def rated(self) -> bool:
        """Whether the entrant has played: an entrant without a match has no rating yet."""
        return self.matches > 0

    @property
    def avg_place(self) -> float | None:
        return self.place_sum / self.matches if self.matches else None


def rating_steps(
    matches: Iterable[StoredMatch],
    entrants: Sequence[str],
    env: trueskill.TrueSkill,
) -> Iterator[tuple[StoredMatch, dict[str, trueskill.Rating]]]:
    """Replay ``matches`` in :func:`replay_order`: after each one, the match and every rating
    so far (the same dict each time, updated in place; copy what you keep).

    Entrants start at the environment's initial rating; anyone else seated in a match is
    added when first seen. Matches with fewer than two seats change nothing and are skipped.
    """
    ratings: dict[str, trueskill.Rating] = {name: env.create_rating() for name in entrants}
    for match in _replayed(matches):
        _step(env, ratings, match)
        yield match, ratings


def _replayed(matches: Iterable[StoredMatch]) -> list[StoredMatch]:
    """``matches`` in :func:`replay_order`, without those of fewer than two seats."""
    ordered = sorted(matches, key=lambda m: replay_order(m.spec.key))
    return [match for match in ordered if len(match.seats) >= 2]


def update(
    env: trueskill.TrueSkill, ratings: dict[str, trueskill.Rating], match: StoredMatch
) -> None:
    """Update ``ratings`` in place with one match, exactly as every replay does (a league
    rates each result as it is stored, :mod:`referee.ranking.incremental`)."""
    _step(env, ratings, match)


def _step(env: trueskill.TrueSkill, ratings: dict[str, trueskill.Rating], m: StoredMatch) -> None:
    """Update ``ratings`` in place with one match."""
    places = rating_places(m)
    groups = [(ratings.setdefault(name, env.create_rating()),) for name, _ in places]
    new = env.rate(groups, ranks=[place - 1 for _, place in places])
    for (name, _), (rating,) in zip(places, new, strict=True):
        ratings[name] = rating


@dataclass(frozen=True)
class _Replay:
    """A replay :class:`Rater` made: what it was of, and where it ended."""

    environment: tuple[float, ...]
    entrants: tuple[str, ...]
    matches: tuple[StoredMatch, ...]
    ratings: Mapping[str, trueskill.Rating]


def _environment_key(env: trueskill.TrueSkill) -> tuple[float, ...]:
    return (env.mu, env.sigma, env.beta, env.tau, env.draw_probability)


class Rater:
    """Rates a list of results that grows between calls, going on from its last replay.

    TrueSkill is the cost of a leaderboard, and the play-off loop rates the same results
    again and again with more after them: each round is planned from every result so far,
    and play-off rounds come last in the replay order. A rater keeps its last replay (its
    environment, entrants, matches and final ratings); :meth:`rate` goes on from there when
    the new call is of the same environment and entrants and the last replay's matches are
    the first of the new ones, equal result for result, and replays from the start
    otherwise. A sequential update over an unchanged prefix gives the same ratings, so a
    rater only saves time: its results are always those of :func:`rate`.

    Whoever re-rates a growing list owns one (the coordinator's play-offs, their check in
    :mod:`referee.verify.audit`, the ranking benchmark) and drops it when done; nothing
    is shared between owners. ``steps`` counts the matches this rater has replayed.
    """

    def __init__(self) -> None:
        self._last: _Replay | None = None
        self.steps = 0

    def rate(
        self,
        matches: Iterable[StoredMatch],
        entrants: Sequence[str],
        *,
        env: trueskill.TrueSkill | None = None,
        after_playoffs: RankRule = RANK_AFTER_PLAYOFFS,
    ) -> list[EntrantRating]:
        """The same as :func:`rate` (without ``observe``), from the last replay if it may."""
        env = env or make_environment()
        ordered = _replayed(matches)
        final = self._final_ratings(ordered, entrants, env)
        return _records(ordered, entrants, env, final, rank_rule(ordered, after_playoffs))

    def _final_ratings(
        self, ordered: Sequence[StoredMatch], entrants: Sequence[str], env: trueskill.TrueSkill
    ) -> dict[str, trueskill.Rating]:
        """The ratings after replaying ``ordered`` (already in replay order): the last step
        of :func:`rating_steps`, going on from the last replay where the class says."""
        environment = _environment_key(env)
        last = self._last
        start = 0
        ratings: dict[str, trueskill.Rating] = {name: env.create_rating() for name in entrants}
        if (
            last is not None
            and last.environment == environment
            and last.entrants == tuple(entrants)
            and len(last.matches) <= len(ordered)
            and all(a is b or a == b for a, b in zip(last.matches, ordered, strict=False))
        ):
            start = len(last.matches)
            ratings = dict(last.ratings)
        for match in ordered[start:]:
            _step(env, ratings, match)
        self.steps += len(ordered) - start
        self._last = _Replay(environment, tuple(entrants), tuple(ordered), dict(ratings))
        return ratings


def rate(
    matches: Iterable[StoredMatch],
    entrants: Sequence[str],
    *,
    env: trueskill.TrueSkill | None = None,
    observe: Callable[[StoredMatch, Mapping[str, trueskill.Rating]], None] | None = None,
    after_playoffs: RankRule = RANK_AFTER_PLAYOFFS,
) -> list[EntrantRating]:
    """Ratings of ``entrants`` (plus anyone else seated in ``matches``): rated best first,
    then the unrated by name.

    Matches are replayed in :func:`replay_order` here, from the start on every call, so
    neither the caller's order nor an earlier call ever matters (a :class:`Rater` goes on
    from its last replay instead). The order is :func:`rank_rule`'s of ``matches`` (with
    ``after_playoffs``, the tournament's recorded rule), ties broken as :func:`rank_key`
    says. ``observe(match, ratings)`` is called after each match
    (the rating history is drawn from the same replay: TrueSkill is most of the cost of a
    leaderboard).
    """
    env = env or make_environment()
    ordered = _replayed(matches)
    final: dict[str, trueskill.Rating] = {name: env.create_rating() for name in entrants}
    for match, ratings in rating_steps(ordered, entrants, env):
        final = ratings
        if observe is not None:
            observe(match, ratings)
    return _records(ordered, entrants, env, final, rank_rule(ordered, after_playoffs))


def _records(
    ordered: Sequence[StoredMatch],
    entrants: Sequence[str],
    env: trueskill.TrueSkill,
    final: Mapping[str, trueskill.Rating],
    rule: RankRule,
) -> list[EntrantRating]:
    """Each entrant's rating (from ``final``) and record over ``ordered``, ordered by
    ``rule`` (:func:`rank_key`)."""
    stats: dict[str, EntrantRating] = {}

    def entry(name: str) -> EntrantRating:
        if name not in stats:
            stats[name] = EntrantRating(name, env.mu, env.sigma)
        return stats[name]

    for name in entrants:
        entry(name)
    for match in ordered:
        clean = sum(not seat.forfeit for seat in match.seats)
        for seat in match.seats:
            place = clean + 1 if seat.forfeit else seat.place
            record = entry(seat.name)
            record.matches += 1
            record.place_sum += place
            record.firsts += place == 1 and not seat.forfeit
            record.forfeits += seat.forfeit
            if seat.fault_kind is not None:
                record.faults[seat.fault_kind] = record.faults.get(seat.fault_kind, 0) + 1
    for name, record in stats.items():
        if name in final:
            record.mu = final[name].mu
            record.sigma = final[name].sigma
        record.faults = dict(sorted(record.faults.items()))
    return sorted(stats.values(), key=rank_key(rule))
