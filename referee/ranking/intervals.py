"""Bootstrap intervals of finishing scores, and how sure the order of two bots is.

A bot's **normalised finishing score** in a match at a table of ``k`` is
``(k - place) / (k - 1)``: 1 for first place, 0 for last, shared places scoring alike, and a
forfeit counted at its place as the ratings see it (every forfeiting seat shares the last
place, :func:`referee.ranking.ratings.rating_places`). Its mean over a bot's matches is the plain
measure of strength that the intervals are about.

Matches are not independent: matches dealt the same cards share their luck, and the seat
rotations of one table deal share their players. So the bootstrap resamples **whole deal
blocks** (:func:`deal_blocks`: every match joined to another by its cards or its table
deal), never single matches, which would count one deal's luck as several independent
observations and make the intervals too narrow.

* :func:`score_intervals`: each bot's mean with a percentile bootstrap interval.
* :func:`order_confidence`: how sure it is that one bot is better than another, from the
  deal blocks **both** played (the same deals, each bot at every seat: a paired, duplicate
  comparison whatever the schedule, play-offs included): the share of resamples
  in which the first bot's mean score over those deals beats the second's (ties count
  half). An order is *significant* at level ``p`` when that share is at least ``p`` and it
  rests on at least :data:`MIN_SHARED_DEALS` deals.

Resampling is deterministic: each quantity draws from its own generator seeded with a
SHA-256 of its name, so the same results give the same intervals on every run, whatever
else is computed, and whatever order the matches were stored in.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from referee.ranking.ratings import rating_places
from referee.specs import MatchSpec, StoredMatch, deal_key

__all__ = [
    "MIN_SHARED_DEALS",
    "DealScores",
    "OrderConfidence",
    "ScoreInterval",
    "adjacent_confidences",
    "deal_blocks",
    "deal_scores",
    "normalised_score",
    "order_confidence",
    "score_intervals",
]

MIN_SHARED_DEALS = 8
"""Fewer shared deals never make an order significant: a bootstrap of a handful of deals
is overconfident (two deals both won give 100 % of resamples)."""


def normalised_score(place: int, table_size: int) -> float:
    """``(k - place) / (k - 1)``: 1 for first place, 0 for last."""
    return (table_size - place) / (table_size - 1)


@dataclass(frozen=True)
class DealScores:
    """One deal's outcome: each seated bot's normalised scores summed over the rotations
    played so far, and how many rotations that is."""

    key: str
    totals: dict[str, tuple[float, int]]

    def mean(self, name: str) -> float:
        total, count = self.totals[name]
        return total / count


def deal_blocks(specs: Iterable[MatchSpec]) -> dict[str, str]:
    """Each match's *deal block*: the matches joined by sharing cards or a table deal.

    Two matches are in one block when they were dealt the same cards (``deal_id``) or are
    seat rotations of one table deal (:func:`~referee.specs.deal_key`); a block is named by
    the smallest table deal in it. With deals shared across disjoint tables (the scheduler's
    default), a block is one class of tables: every entrant in it played the same deals, each
    once, so a block is a duplicate comparison of everyone in it, and matches of different
    blocks share nothing. With ``duplicate = "rotations"`` a block is one table deal.
    """
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        root = node
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[node] != root:
            parent[node], node = root, parent[node]
        return root

    keys = []
    for spec in specs:
        keys.append(spec.key)
        for node in ("d:" + spec.deal_id, "t:" + deal_key(spec.key)):
            a, b = find("k:" + spec.key), find(node)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for key in keys:
        members.setdefault(find("k:" + key), []).append(key)
    named = {root: min(deal_key(key) for key in group) for root, group in members.items()}
    return {key: named[root] for root, group in members.items() for key in group}


def deal_scores(matches: Iterable[StoredMatch]) -> list[DealScores]:
    """Finished matches grouped by deal block (:func:`deal_blocks`), in block order: the
    resampling units."""
    matches = list(matches)
    block_of = deal_blocks(m.spec for m in matches)
    deals: dict[str, dict[str, tuple[float, int]]] = {}
    for match in matches:
        totals = deals.setdefault(block_of[match.spec.key], {})
        k = len(match.seats)
        for name, place in rating_places(match):
            total, count = totals.get(name, (0.0, 0))
            totals[name] = (total + normalised_score(place, k), count + 1)
    return [DealScores(key, deals[key]) for key in sorted(deals)]


@dataclass(frozen=True)
class ScoreInterval:
    """A bot's mean normalised score and its bootstrap interval at ``level``."""

    mean: float
    low: float
    high: float
    matches: int
    deals: int

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def score_intervals(
    deals: Sequence[DealScores], *, level: float = 0.95, resamples: int = 1000
) -> dict[str, ScoreInterval]:
    """Each bot's mean normalised score with a percentile interval from resampled deals."""
    per_bot: dict[str, tuple[list[float], list[int]]] = {}
    for deal in deals:
        for name, (total, count) in deal.totals.items():
            sums, counts = per_bot.setdefault(name, ([], []))
            sums.append(total)
            counts.append(count)
    out = {}
    for name in sorted(per_bot):
        sums, counts = per_bot[name]
        means = sorted(_resampled_means(sums, counts, resamples, f"score\0{name}"))
        cut = int((1 - level) / 2 * resamples)
        out[name] = ScoreInterval(
            mean=sum(sums) / sum(counts),
            low=means[cut],
            high=means[resamples - 1 - cut],
            matches=sum(counts),
            deals=len(sums),
        )
    return out


@dataclass(frozen=True)
class OrderConfidence:
    """How sure it is that ``upper`` is better than ``lower`` (see the module docstring)."""

    upper: str
    lower: str
    confidence: float
    deals: int
    """Deals both played: what the confidence rests on."""

    def significant(self, level: float) -> bool:
        return self.deals >= MIN_SHARED_DEALS and self.confidence >= level


def order_confidence(
    deals: Sequence[DealScores], upper: str, lower: str, *, resamples: int = 1000
) -> OrderConfidence:
    """The share of resampled shared deals in which ``upper`` outscores ``lower``."""
    differences = [
        deal.mean(upper) - deal.mean(lower)
        for deal in deals
        if upper in deal.totals and lower in deal.totals
    ]
    if not differences:
        return OrderConfidence(upper, lower, 0.5, 0)
    ones = [1] * len(differences)
    wins = 0.0
    for mean in _resampled_means(differences, ones, resamples, f"order\0{upper}\0{lower}"):
        wins += 1.0 if mean > 0 else 0.5 if mean == 0 else 0.0
    return OrderConfidence(upper, lower, wins / resamples, len(differences))


def adjacent_confidences(
    order: Sequence[str], deals: Sequence[DealScores], *, resamples: int = 1000
) -> list[OrderConfidence]:
    """:func:`order_confidence` of each bot over the next one in ``order``."""
    return [
        order_confidence(deals, upper, lower, resamples=resamples)
        for upper, lower in itertools.pairwise(order)
    ]


def _resampled_means(
    sums: Sequence[float], counts: Sequence[int], resamples: int, name: str
) -> list[float]:
    """``resamples`` ratio means ``sum(sums) / sum(counts)`` over units drawn with replacement.

    When every unit has the same count (each bot plays as many matches of every deal, and
    an order's differences count one each), the drawn counts always add up to the same
    integer, so only the sums are drawn and added: the same numbers, drawn and added in the
    same order, about a quarter faster (a publication waits for these).
    """
    digest = hashlib.sha256(b"referee-bootstrap\0" + name.encode("utf-8")).digest()
    rnd = random.Random(int.from_bytes(digest[:8], "big")).random
    n = len(sums)
    units = range(n)
    if n and counts.count(counts[0]) == n:
        total = counts[0] * n
        return [sum([sums[int(rnd() * n)] for _ in units]) / total for _ in range(resamples)]
    sum_at, count_at = sums.__getitem__, counts.__getitem__
    means = []
    for _ in range(resamples):
        drawn = [int(rnd() * n) for _ in units]
        means.append(sum(map(sum_at, drawn)) / sum(map(count_at, drawn)))
    return means
