"""How quickly each bot answered, as the leaderboard and the site show it (who placed
above whom, and where each bot placed, are the ranking's: :mod:`referee.ranking.records`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from referee.results import ReplyTimes

__all__ = ["ReplyStats", "reply_stats"]


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
