"""The sequential test of ``referee compare``: is NEW better than OLD, and how sure is that?

Each completed deal gives one observation ``x``: the mean, over the deal's seat rotations,
of NEW's normalised finishing score minus OLD's in the same seat, against the same field
on the same cards (a duplicate pair, as fishtest's game pairs are). The test weighs

    H0: the mean difference is D0    against    H1: the mean difference is D1

with the generalised sequential probability ratio test under a normal model of the
observations, in the form fishtest uses for its pentanomial results (``LLR_logistic``, after
Van den Bergh): the likelihood ratio of two normal laws with means D1 and D0 and the
observations' own variance ``s2`` (about their mean, with ``n - 1``), which is

    LLR = n * (D1 - D0) * (2 * mean - D0 - D1) / (2 * s2)

here with ``s2`` scaled by ``(n - 1) / (n - 5)`` (:data:`SMALL_SAMPLE`), a small-sample
correction (below).

The exact GSPRT of a normal law with unknown variance would give each hypothesis its own
variance, ``s2 + (mean - D)^2``; it is not used because it stalls where a new version is
clearly better: both hypotheses then fit the data equally badly (a clear difference that
this form decides in about half the deals left that form below its bound after all of
them: docs/performance.md, "Ranking"). Near the hypotheses the two agree.
It is checked after every deal against
Wald's bounds ``ln(beta / (1 - alpha))`` and ``ln((1 - beta) / alpha)``: below the lower
one H0 is accepted, above the upper one H1, in between the test goes on, at most until the
match budget is spent ("undecided"). Fewer than :data:`MIN_DEALS` observations never decide:
the variance of a few deals is too uncertain, and runs that happen to start with a small
one stop too early, wrongly.

The correction is there for the same reason: an estimated variance makes the test a little
too eager (Wald's bounds assume a known one): ``s2`` is scaled by ``(n - 1) / (n - 5)``,
which kept both error rates below alpha on the observations of real pairs
(``bench.compare_bench``) for fewer extra matches than a larger minimum of deals would
cost (docs/performance.md, "Ranking").

:func:`interval` is the difference's two-sided confidence interval (Student's t).

:class:`PairedDeals` turns the stored matches of a comparison into those observations (each
version scored by the comparison's statistic: the finishing score, or the mean round score,
:mod:`referee.ranking.statistics`), deal by deal, as they finish: the test reads them in
deal order, up to the first deal not yet complete, so the verdict does not depend on the
order matches finish in, on the number of workers, or on a run being interrupted and
resumed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from referee.ranking.statistics import RoundPlaces, Statistic, version_score
from referee.specs import StoredMatch

__all__ = [
    "MIN_DEALS",
    "SMALL_SAMPLE",
    "Decision",
    "PairedDeals",
    "Sprt",
    "SprtState",
    "bounds",
    "interval",
    "llr",
]

MIN_DEALS = 20
"""Observations needed before a decision can be taken."""

SMALL_SAMPLE = 5
"""The variance of ``n`` observations is taken as ``s2 * (n - 1) / (n - SMALL_SAMPLE)``: a
small-sample correction measured to keep both error rates below alpha and beta (above)."""

Decision = Literal["H0", "H1", "undecided"]


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's stopping bounds on the log-likelihood ratio: (accept H0, accept H1)."""
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError("alpha and beta must be between 0 and 1")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def llr(observations: Sequence[float], d0: float, d1: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (mean ``d1``) over H0 (mean ``d0``).

    0 for :data:`SMALL_SAMPLE` observations or fewer; a zero variance (every observation
    equal) is
    taken as a tiny one, so that identical observations at a hypothesis's mean still
    favour it.
    """
    return _llr(len(observations), sum(observations), sum(x * x for x in observations), d0, d1)


def _llr(n: int, total: float, squares: float, d0: float, d1: float) -> float:
    """:func:`llr` from the count, the sum and the sum of squares of the observations."""
    if n <= SMALL_SAMPLE:
        return 0.0
    mean = total / n
    s2 = max((squares - n * mean * mean) / (n - SMALL_SAMPLE), 1e-12)
    return n * (d1 - d0) * (2 * mean - d0 - d1) / (2 * s2)


_T_975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    25: 2.060,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}
"""Student's t 97.5 % quantiles by degrees of freedom (the 95 % two-sided interval)."""


def _t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (1.96 past 120)."""
    if df >= 120:
        return 1.96 + 2.4 / df  # within 0.001 of the exact value from 120 on
    below = max(k for k in _T_975 if k <= df)
    above = min(k for k in _T_975 if k >= df)
    if below == above:
        return _T_975[below]
    w = (1 / below - 1 / df) / (1 / below - 1 / above)  # interpolated in 1/df
    return _T_975[below] + w * (_T_975[above] - _T_975[below])


def interval(observations: Sequence[float]) -> tuple[float, float, float]:
    """The mean difference and its 95 % interval: (mean, low, high)."""
    n = len(observations)
    if n == 0:
        return 0.0, -math.inf, math.inf
    mean = sum(observations) / n
    if n == 1:
        return mean, -math.inf, math.inf
    sd = math.sqrt(sum((x - mean) ** 2 for x in observations) / (n - 1))
    half = _t975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class SprtState:
    """Where the test stands after ``deals`` observations."""

    decision: Decision
    llr: float
    bounds: tuple[float, float]
    deals: int
    difference: float
    low: float
    high: float

    @property
    def decided(self) -> bool:
        return self.decision != "undecided"


@dataclass(frozen=True)
class Sprt:
    """The test's settings: the hypotheses ``d0`` and ``d1`` and the error rates."""

    d0: float = 0.0
    d1: float = 0.02
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.d1 > self.d0:
            raise ValueError(f"D1 ({self.d1}) must be larger than D0 ({self.d0})")
        bounds(self.alpha, self.beta)

    def state(self, observations: Sequence[float]) -> SprtState:
        """The test after ``observations`` (in deal order)."""
        value = llr(observations, self.d0, self.d1)
        low, high = bounds(self.alpha, self.beta)
        decision: Decision = "undecided"
        if len(observations) >= MIN_DEALS:
            if value >= high:
                decision = "H1"
            elif value <= low:
                decision = "H0"
        mean, lo, hi = interval(observations)
        return SprtState(decision, value, (low, high), len(observations), mean, lo, hi)

    def first_decision(self, observations: Sequence[float]) -> SprtState:
        """The state at the first deal where the test decides (or after the last): the
        verdict of observations taken one deal at a time, whatever arrived after it."""
        low, high = bounds(self.alpha, self.beta)
        total = squares = 0.0
        for n, x in enumerate(observations, start=1):
            total += x
            squares += x * x
            if n >= MIN_DEALS and not low < _llr(n, total, squares, self.d0, self.d1) < high:
                return self.state(observations[:n])
        return self.state(observations)


@dataclass
class PairedDeals:
    """A comparison's deals as their matches finish: ``new`` against ``old``, ``table_size``
    seat rotations a half, scored by ``statistic``.

    A match is one half's rotation of a deal (whichever of the two versions it seats); a
    deal's observation is the mean over its rotations of ``new``'s score minus ``old``'s in
    the same rotation (:func:`~referee.ranking.statistics.version_score`: the normalised
    finishing score, a forfeit at the last place, or the mean normalised round score, each
    half over the rounds it played), once both halves of every rotation are in.
    A deal with a match that failed on the referee's side for good is *spoiled*: it gives
    no observation, and the deals after it still count; so is a deal :meth:`spoil` names a
    spoiler of (a field bot's fault: :mod:`referee.ranking.spoils` decides).
    """

    new: str
    old: str
    table_size: int
    scores: dict[int, dict[tuple[str, int], float]] = field(default_factory=dict)
    """By deal: each version's score by ``(version, rotation)``."""
    spoiled: set[int] = field(default_factory=set)
    statistic: Statistic = "final-score"
    spoiled_by: dict[int, set[str]] = field(default_factory=dict)
    """By deal spoiled by a fault: who spoiled it (:mod:`referee.ranking.spoils`)."""

    def add(self, match: StoredMatch, rounds: RoundPlaces | None = None) -> int | None:
        """Count a finished match (with its ``rounds`` under ``round-score``); returns its
        deal when that deal is now complete."""
        names = {seat.name for seat in match.seats}
        version = self.new if self.new in names else self.old
        if version not in names:
            raise ValueError(f"match {match.spec.key} seats neither {self.new} nor {self.old}")
        deal = self.scores.setdefault(match.spec.deal, {})
        deal[version, match.spec.rotation] = version_score(match, version, self.statistic, rounds)
        return match.spec.deal if self.complete(match.spec.deal) else None

    def fail(self, deal: int) -> None:
        """A match of ``deal`` failed for good: the deal gives no observation."""
        self.spoiled.add(deal)

    def spoil(self, deal: int, by: str) -> None:
        """A fault of ``by`` spoils ``deal``: it gives no observation."""
        self.spoiled.add(deal)
        self.spoiled_by.setdefault(deal, set()).add(by)

    def complete(self, deal: int) -> bool:
        return len(self.scores.get(deal, {})) == 2 * self.table_size

    def observation(self, deal: int) -> float:
        """The deal's observation (it must be complete)."""
        scores = self.scores[deal]
        rotations = range(self.table_size)
        return sum(scores[self.new, r] - scores[self.old, r] for r in rotations) / len(rotations)

    def observations(self) -> list[float]:
        """The observations of deals 0, 1, ... up to the first deal neither complete nor
        spoiled, in deal order (spoiled deals left out)."""
        found: list[float] = []
        deal = 0
        while True:
            if deal in self.spoiled:
                deal += 1
                continue
            if not self.complete(deal):
                return found
            found.append(self.observation(deal))
            deal += 1

    def settled(self) -> int:
        """Deals 0, 1, ... that are complete or spoiled (where the next observation starts)."""
        deal = 0
        while deal in self.spoiled or self.complete(deal):
            deal += 1
        return deal

    @classmethod
    def of(
        cls,
        new: str,
        old: str,
        table_size: int,
        matches: Iterable[StoredMatch],
        *,
        statistic: Statistic = "final-score",
        rounds: Mapping[str, RoundPlaces] | None = None,
    ) -> PairedDeals:
        """The deals of stored ``matches`` (``rounds``: each match's, by key)."""
        pairs = cls(new, old, table_size, statistic=statistic)
        for match in matches:
            pairs.add(match, None if rounds is None else rounds.get(match.spec.key))
        return pairs
