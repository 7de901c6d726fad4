"""TrueSkill ratings over stored results, replayed in canonical (key) order.

TrueSkill updates depend on the order of the matches, so the ratings are always recomputed
from the store sorted by match key: the leaderboard is then the same whatever the worker
count, the finishing order, or how often the run was interrupted and resumed.

Each match is one ``env.rate()`` with one team per seat, ranked by the match standings:
shared places are equal ranks (draws), and forfeits already rank last there. Entrants are
ordered by the conservative estimate ``mu - 3 * sigma``. The TrueSkill environment is an
explicit object (never ``trueskill.setup()``), so two leaderboards can never share state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import trueskill

from referee.store import StoredMatch

__all__ = ["DRAW_PROBABILITY", "EntrantRating", "make_environment", "rate"]

DRAW_PROBABILITY = 0.10
"""Shared places happen (equal scores under ``below`` scoring), but rarely."""


def make_environment(draw_probability: float = DRAW_PROBABILITY) -> trueskill.TrueSkill:
    """A TrueSkill environment with the library's default mu 25 and sigma 25/3."""
    return trueskill.TrueSkill(draw_probability=draw_probability, backend=None)


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
        """The conservative skill estimate ``mu - 3 sigma`` the leaderboard ranks by."""
        return self.mu - 3 * self.sigma

    @property
    def avg_place(self) -> float | None:
        return self.place_sum / self.matches if self.matches else None


def rate(
    matches: Iterable[StoredMatch],
    entrants: Sequence[str],
    *,
    env: trueskill.TrueSkill | None = None,
) -> list[EntrantRating]:
    """Ratings of ``entrants`` (plus anyone else seated in ``matches``), best first.

    Matches are sorted by key here, so the caller's order never matters. Ties in the
    conservative score are broken by mu, then by name, to keep the order total.
    """
    env = env or make_environment()
    ratings: dict[str, trueskill.Rating] = {name: env.create_rating() for name in entrants}
    stats: dict[str, EntrantRating] = {}

    def entry(name: str) -> EntrantRating:
        if name not in stats:
            rating = ratings.setdefault(name, env.create_rating())
            stats[name] = EntrantRating(name, rating.mu, rating.sigma)
        return stats[name]

    for name in entrants:
        entry(name)
    for match in sorted(matches, key=lambda m: m.spec.key):
        seats = sorted(match.seats, key=lambda s: s.seat)
        if len(seats) < 2:
            continue
        for seat in seats:
            entry(seat.name)
        groups = [(ratings[seat.name],) for seat in seats]
        new = env.rate(groups, ranks=[seat.place - 1 for seat in seats])
        for seat, (rating,) in zip(seats, new, strict=True):
            ratings[seat.name] = rating
            record = stats[seat.name]
            record.matches += 1
            record.place_sum += seat.place
            record.firsts += seat.place == 1
            record.forfeits += seat.forfeit
            if seat.fault_kind is not None:
                record.faults[seat.fault_kind] = record.faults.get(seat.fault_kind, 0) + 1
    for name, record in stats.items():
        record.mu = ratings[name].mu
        record.sigma = ratings[name].sigma
        record.faults = dict(sorted(record.faults.items()))
    return sorted(stats.values(), key=lambda r: (-r.score, -r.mu, r.name))
