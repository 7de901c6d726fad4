"""The rating history: each bot's conservative score after every match.

:class:`RatingHistory` watches the standings' own replay of the ratings (TrueSkill is the
costly part of a ranking, so it runs once: ``observe`` of
:func:`referee.ranking.ratings.rate`), so the last point of each line is the score the
standings give. The site draws it (:func:`referee.publish.history.history_chart`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.ranking.ratings import make_environment, rating_steps
from referee.rules import ResolvedRules
from referee.specs import RatingSettings, StoredMatch

__all__ = ["RatingHistory", "rating_history"]


class RatingHistory:
    """Each bot's ``(match number, score)`` after each of its matches, from match 0.

    Pass it as ``observe`` to :func:`referee.ranking.ratings.rate` (as
    :func:`~referee.ranking.standings.rate_part` does); ``initial`` is the score of a bot
    before its first match.
    """

    def __init__(
        self, ratings: RatingSettings | None = None, rules: ResolvedRules | None = None
    ) -> None:
        env = make_environment(ratings, rules)
        self.initial = env.mu - 3 * env.sigma
        self.matches = 0
        self.points: dict[str, list[tuple[int, float]]] = {}

    def __call__(self, match: StoredMatch, ratings: Mapping[str, Any]) -> None:
        self.matches += 1
        for seat in match.seats:
            rating = ratings[seat.name]
            line = self.points.setdefault(seat.name, [(0, self.initial)])
            line.append((self.matches, rating.mu - 3 * rating.sigma))

    def line(self, name: str) -> list[tuple[int, float]]:
        return self.points.get(name, [(0, self.initial)])


def rating_history(
    matches: Sequence[StoredMatch],
    names: Sequence[str],
    *,
    ratings: RatingSettings | None = None,
    rules: ResolvedRules | None = None,
) -> RatingHistory:
    """The history of ``matches`` on its own (the leaderboard records it as it rates)."""
    history = RatingHistory(ratings, rules)
    for match, current in rating_steps(matches, names, make_environment(ratings, rules)):
        history(match, current)
    return history
