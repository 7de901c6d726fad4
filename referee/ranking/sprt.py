"""The sequential test of ``referee compare``: is NEW better than OLD, and how sure is that?

Each completed deal gives one observation ``x``: the mean, over the deal's seat rotations,
of NEW's normalised finishing score minus OLD's in the same seat, against the same field
on the same cards (a duplicate pair, as fishtest's game pairs are). The test weighs

    H0: the mean difference is D0    against    H1: the mean difference is D1

with the generalised sequential probability ratio test under a normal model of the
observations: the variance is unknown, so under each hypothesis it takes its maximum
likelihood value given that hypothesis's mean (``s2 + (mean - D)^2``, ``s2`` the variance of
the observations about their own mean), and the log-likelihood ratio is

    LLR = n / 2 * ln((s2 + (mean - D0)^2) / (s2 + (mean - D1)^2))

the normal case of the GSPRT fishtest runs on pentanomial results (the ratio of the
likelihoods maximised under each hypothesis). It is checked after every deal against
Wald's bounds ``ln(beta / (1 - alpha))`` and ``ln((1 - beta) / alpha)``: below the lower
one H0 is accepted, above the upper one H1, in between the test goes on, at most until the
match budget is spent ("undecided"). Fewer than :data:`MIN_DEALS` observations never decide
(a variance from two deals is no estimate).

:func:`interval` is the difference's two-sided confidence interval (Student's t).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MIN_DEALS",
    "Decision",
    "Sprt",
    "SprtState",
    "bounds",
    "interval",
    "llr",
]

MIN_DEALS = 5
"""Observations needed before a decision can be taken."""

Decision = Literal["H0", "H1", "undecided"]


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's stopping bounds on the log-likelihood ratio: (accept H0, accept H1)."""
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError("alpha and beta must be between 0 and 1")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def llr(observations: Sequence[float], d0: float, d1: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (mean ``d1``) over H0 (mean ``d0``).

    0 for fewer than two observations; a zero variance (every observation equal) is
    taken as a tiny one, so that identical observations at a hypothesis's mean still
    favour it.
    """
    return _llr(len(observations), sum(observations), sum(x * x for x in observations), d0, d1)


def _llr(n: int, total: float, squares: float, d0: float, d1: float) -> float:
    """:func:`llr` from the count, the sum and the sum of squares of the observations."""
    if n < 2:
        return 0.0
    mean = total / n
    s2 = max(squares / n - mean * mean, 1e-12)
    return n / 2 * math.log((s2 + (mean - d0) ** 2) / (s2 + (mean - d1) ** 2))


_T_975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042,
    40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip
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
