"""The figures of the table ``referee play --matches N`` ends with: how each bot did.

Per bot: its mean normalised finishing score (1 first, 0 last) with a bootstrap interval
over whole deal blocks (:mod:`referee.ranking.intervals`, the leaderboard's own figure;
shown from :data:`~referee.ranking.intervals.MIN_SHARED_DEALS` blocks on, the same
threshold as the leaderboard's certainty), how often it finished 1st, 2nd, ... in the
matches it did not forfeit, and its forfeits by fault kind. No TrueSkill and no rank: with
the same bots at every match, the mean score says what a rating would, and an author's
question ("did my change help?") is what the interval answers. Rows go by mean score, best
first.

The figures come from the stored matches alone, in key order, and the bootstrap is seeded
by the bots' names (:func:`referee.ranking.intervals.score_intervals`), so the same
matches give the same table whatever the number of workers or the order results arrived in.
The terminal table is the CLI's (:mod:`referee.cli.tally`): this module makes the numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.ranking.intervals import (
    MIN_SHARED_DEALS,
    deal_scores,
    score_intervals,
)
from referee.ranking.records import place_counts
from referee.specs import StoredMatch

__all__ = ["BotTally", "Tally", "tally"]


@dataclass(frozen=True)
class BotTally:
    """One bot's line: its mean score and interval, its places and its faults.

    ``score`` is ``None`` before the bot's first match; ``interval`` (low, high) is ``None``
    too while the deal blocks are fewer than :data:`MIN_SHARED_DEALS`: a bootstrap of two
    deals reads ``[1.00, 1.00]`` for a bot that won both, a certainty nothing supports.
    ``places[i]`` counts the matches it finished ``i + 1``-th without forfeiting;
    ``forfeits`` the others, and ``faults`` those by kind (``timeout``, ``crash``, ...).
    """

    name: str
    matches: int
    score: float | None
    interval: tuple[float, float] | None
    places: tuple[int, ...]
    forfeits: int
    faults: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "matches": self.matches,
            "score": None if self.score is None else round(self.score, 4),
            "interval": None if self.interval is None else [round(x, 4) for x in self.interval],
            "places": list(self.places),
            "forfeits": self.forfeits,
            "faults": dict(self.faults),
        }

    def score_text(self, deals: int) -> str:
        """``0.62 [0.55,0.70]``; ``0.62 (2 deals)`` while too few for an interval; ``—``."""
        if self.score is None:
            return "—"
        if self.interval is None:
            return f"{self.score:.2f} ({deals} deal{'s' if deals != 1 else ''})"
        low, high = self.interval
        return f"{self.score:.2f} [{low:.2f},{high:.2f}]"


@dataclass(frozen=True)
class Tally:
    """The table: ``matches`` counted (of ``scheduled``), at tables of ``table_size``."""

    rules: str
    table_size: int
    matches: int
    scheduled: int
    deals: int
    """Deal blocks the intervals resample (:func:`referee.ranking.intervals.deal_blocks`)."""
    confidence: float
    bots: tuple[BotTally, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rules": self.rules,
            "table_size": self.table_size,
            "matches": self.matches,
            "scheduled": self.scheduled,
            "deals": self.deals,
            "confidence": self.confidence,
            "bots": [bot.as_dict() for bot in self.bots],
        }


def tally(
    matches: Sequence[StoredMatch],
    names: Sequence[str],
    *,
    rules: str,
    table_size: int,
    scheduled: int,
    confidence: float = 0.95,
    resamples: int = 1000,
) -> Tally:
    """The table of ``matches`` for the bots ``names`` (each listed, played or not)."""
    blocks = deal_scores(matches)
    intervals = score_intervals(blocks, level=confidence, resamples=resamples)
    counts = place_counts(matches)
    faults: dict[str, dict[str, int]] = {name: {} for name in names}
    for match in matches:
        for seat in match.seats:
            if seat.forfeit:
                kind = seat.fault_kind or "forfeit"
                kinds = faults.setdefault(seat.name, {})
                kinds[kind] = kinds.get(kind, 0) + 1
    rows = []
    for name in names:
        placed = counts.get(name, Counter())
        forfeits = placed.get("forfeit", 0)
        places = tuple(placed.get(place, 0) for place in range(1, table_size + 1))
        interval = intervals.get(name)
        rows.append(
            BotTally(
                name=name,
                matches=sum(places) + forfeits,
                score=None if interval is None else interval.mean,
                interval=(
                    (interval.low, interval.high)
                    if interval is not None and len(blocks) >= MIN_SHARED_DEALS
                    else None
                ),
                places=places,
                forfeits=forfeits,
                faults=dict(sorted(faults.get(name, {}).items())),
            )
        )
    rows.sort(key=lambda row: (-(row.score if row.score is not None else -1.0), row.name))
    return Tally(rules, table_size, len(matches), scheduled, len(blocks), confidence, tuple(rows))
