"""Counts the site shows beside the ratings: who placed above whom, where each bot placed,
and how quickly each bot answered.

Places are those the ratings use (:func:`referee.ranking.ratings.rating_places`): every forfeiting
seat shares the place below all the seats that did not forfeit, so a bot that crashed never
"beats" another one that crashed later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from referee.ranking.ratings import rating_places
from referee.results import ReplyTimes
from referee.specs import StoredMatch

__all__ = ["PairRecord", "ReplyStats", "pair_records", "place_counts", "reply_stats"]


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


@dataclass(frozen=True)
class ReplyStats:
    """How quickly a bot answered over its stored matches: the middle, the 99th percentile
    (nearest rank) and the slowest of its reply times, and the most of its time bank it
    spent in one match (``most_bank_ms`` of ``bank_ms``; ``None`` when no stored match kept
    it). Times run from writing a request to reading the reply (PROTOCOL.md, Time)."""

    replies: int
    median_ms: float | None
    p99_ms: int | None
    max_ms: int | None
    most_bank_ms: int | None
    bank_ms: int

    @property
    def most_bank_share(self) -> float | None:
        """``most_bank_ms`` as a share of the bank (``None`` without a bank)."""
        if self.most_bank_ms is None or self.bank_ms <= 0:
            return None
        return self.most_bank_ms / self.bank_ms

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (``leaderboard.json``'s ``reply_times``)."""
        share = self.most_bank_share
        return {
            "replies": self.replies,
            "median_ms": self.median_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
            "most_bank_spent_ms": self.most_bank_ms,
            "bank_ms": self.bank_ms,
            "most_bank_share": None if share is None else round(share, 3),
        }


def reply_stats(times: Mapping[str, ReplyTimes], bank_ms: int) -> dict[str, ReplyStats]:
    """Each bot's :class:`ReplyStats` from the times the store gathered, ``bank_ms`` being
    the tournament's time bank per match."""
    return {
        name: ReplyStats(
            replies=t.replies,
            median_ms=t.median_ms(),
            p99_ms=t.percentile_ms(99),
            max_ms=t.max_ms(),
            most_bank_ms=t.most_bank_spent_ms(),
            bank_ms=bank_ms,
        )
        for name, t in times.items()
    }
