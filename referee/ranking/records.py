"""Counts beside the ratings: who placed above whom, and where each bot placed.

Places are those the ratings use (:func:`referee.ranking.ratings.rating_places`): every
forfeiting seat shares the place below all the seats that did not forfeit, so a bot that
crashed never "beats" another one that crashed later. The site's crosstable, head-to-head
records and place charts show them; ``play --matches`` counts places with them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from referee.ranking.ratings import rating_places
from referee.specs import StoredMatch

__all__ = ["PairRecord", "pair_records", "place_counts"]


@dataclass(frozen=True)
class PairRecord:
    """How two bots fared when they met: ``above`` and ``below`` are the first bot's."""

    meetings: int = 0
    above: int = 0
    below: int = 0
    ties: int = 0

    @property
    def share(self) -> float | None:
        """The share of meetings the first bot placed above the second (a tie counts half)."""
        if not self.meetings:
            return None
        return (self.above + self.ties / 2) / self.meetings


def pair_records(matches: Iterable[StoredMatch]) -> dict[tuple[str, str], PairRecord]:
    """For every ordered pair of bots that met, how often the first placed above the second."""
    counts: dict[tuple[str, str], list[int]] = {}
    for match in matches:
        places = rating_places(match)
        for a, place_a in places:
            for b, place_b in places:
                if a == b:
                    continue
                c = counts.setdefault((a, b), [0, 0, 0, 0])
                c[0] += 1
                if place_a < place_b:
                    c[1] += 1
                elif place_a > place_b:
                    c[2] += 1
                else:
                    c[3] += 1
    return {pair: PairRecord(*c) for pair, c in counts.items()}


def place_counts(matches: Iterable[StoredMatch]) -> dict[str, Counter[int | str]]:
    """Each bot's finishing places (1, 2, ...) in the matches it did not forfeit, and how
    many it forfeited (under ``"forfeit"``)."""
    counts: dict[str, Counter[int | str]] = {}
    for match in matches:
        for seat in match.seats:
            counter = counts.setdefault(seat.name, Counter())
            counter["forfeit" if seat.forfeit else seat.place] += 1
    return counts
