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
match budget is spent ("undecided").

Two minimums guard the normal approximation, which Wald's bounds take as exact:

* **Deals.** Fewer than :data:`MIN_DEALS` observations never decide: the variance of a few
  deals is too uncertain, and runs that happen to start with a small one stop too early,
  wrongly. For the same reason ``s2`` is scaled by ``(n - 1) / (n - 5)``: an estimated
  variance makes the test a little too eager.
* **Deals that differ.** Fewer than :data:`MIN_DIFFERING` observations other than 0 never
  decide either, however many deals were played. Two versions that mostly play alike (a
  small change, one-round matches) give mostly 0: the deals where their games part are
  the whole evidence, and they are few and skewed (a rare large gain or loss). With only
  a handful of them the sample mean and the sample variance are estimated from the same
  few values and fall together: a run that has not yet met a large one sees a small mean
  with a tiny variance, and the LLR dives to the wrong bound (false H0 when NEW is better
  by D1, false H1 for the mirror image). Counting the deals that differ, not all the
  deals, makes the minimum scale with their share: on dense observations (every deal
  differs) the minimum of deals binds, as before; at a tenth of deals differing it waits
  about ten times as long. This rule was kept over a prior on the variance (a floor, or
  pseudo-observations shrinking the share of differing deals) and over a t-based GSPRT
  (each hypothesis its own variance), each measured beside it on support-preserving
  tilts of real near-twin pools of one-round deals (each pool reweighted, zeros kept, to
  a mean of exactly D0 and of exactly D1): the others moved the error rates less for the
  deals they cost (docs/performance.md, "The sequential test on near-twin pools"). What it
  guarantees is that no verdict rests on fewer than :data:`MIN_DIFFERING` differing deals;
  the error rates themselves are measured, not proven, for laws unlike the benchmark's.

**Identical observations** (every deal the same value ``c``, most often 0: two programs
that play the same games) have no variance, so the LLR is infinite (:func:`llr` says
``+inf`` or ``-inf``, 0 when ``c`` is half-way between D0 and D1). The normal model says
nothing there, so they decide by a bound of their own: the observations lie in
``[-1, 1]``, so a law whose mean is ``D`` gives a value other than ``c`` with probability
at least ``|D - c| / (1 + |c|)``, and ``n`` equal values under it have probability at most
``(1 - |D - c| / (1 + |c|)) ** n``. The test accepts the hypothesis nearer ``c`` once that
probability under the other one is below its error rate (:meth:`Sprt.identical_deals`);
until then it goes on. This holds for any law of observations in ``[-1, 1]``.

:func:`interval` is the difference's two-sided 95 % confidence interval (Student's t),
computed as if the number of deals had been fixed in advance. It is not corrected for the
sequential stop: a run stops when its observations happen to lie far from the hypothesis
it rejects, so at the stop the interval covers the true difference less often than 95 %
(docs/performance.md has the coverage ``bench.compare_bench`` measures; docs/compare.md
says what to read from it), and the difference is biased away from the rejected
hypothesis.

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
    "MIN_DIFFERING",
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

MIN_DIFFERING = 8
"""Observations other than 0 (deals where the versions' scores differ) needed before the
LLR can decide (the module docstring says why)."""

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

    0 for :data:`SMALL_SAMPLE` observations or fewer. Identical observations (no variance)
    give ``+inf`` or ``-inf`` by the side of ``(d0 + d1) / 2`` they lie on (0 on it): the
    normal model's limit, which the test does not use (the module docstring).
    """
    if len(set(observations)) == 1 and len(observations) > SMALL_SAMPLE:
        return _constant_llr(observations[0], d0, d1)
    return _llr(len(observations), sum(observations), sum(x * x for x in observations), d0, d1)


def _constant_llr(value: float, d0: float, d1: float) -> float:
    side = (d1 - d0) * (2 * value - d0 - d1)
    return math.copysign(math.inf, side) if side else 0.0


def _llr(n: int, total: float, squares: float, d0: float, d1: float) -> float:
    """:func:`llr` of observations that are not all equal, from their count, sum and sum of
    squares (a rounding error's zero variance is taken as a tiny one)."""
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
    """Where the test stands after ``deals`` observations, ``differing`` of them other
    than 0; ``identical``: every observation is the same value (``llr`` is then infinite,
    or 0)."""

    decision: Decision
    llr: float
    bounds: tuple[float, float]
    deals: int
    difference: float
    low: float
    high: float
    differing: int = 0
    identical: bool = False

    @property
    def decided(self) -> bool:
        return self.decision != "undecided"


@dataclass(frozen=True)
class Sprt:
    """The test's settings: the hypotheses ``d0`` and ``d1``, the error rates, and the
    deals other than 0 a decision waits for (``min_differing``: :data:`MIN_DIFFERING`; a
    comparison stored before that rule existed keeps 0, the rule it ran under)."""

    d0: float = 0.0
    d1: float = 0.02
    alpha: float = 0.05
    beta: float = 0.05
    min_differing: int = MIN_DIFFERING

    def __post_init__(self) -> None:
        if not self.d1 > self.d0:
            raise ValueError(f"D1 ({self.d1}) must be larger than D0 ({self.d0})")
        bounds(self.alpha, self.beta)
        if self.min_differing < 0:
            raise ValueError(f"min_differing ({self.min_differing}) must be 0 or more")

    def identical_deals(self, value: float) -> int:
        """How many identical observations of ``value`` decide (for the hypothesis nearer
        it): the fewest ``n`` (at least :data:`MIN_DEALS`) with ``(1 - gap / (1 + |value|))
        ** n`` at most the other hypothesis's error rate, ``gap`` the distance from
        ``value`` to the other hypothesis (the module docstring)."""
        h1 = _constant_llr(value, self.d0, self.d1) > 0
        other, error = (self.d0, self.alpha) if h1 else (self.d1, self.beta)
        miss = 1 - min(1.0, abs(other - value) / (1 + abs(value)))
        if miss <= 0:
            return MIN_DEALS
        return max(MIN_DEALS, math.ceil(math.log(error) / math.log(miss) - 1e-9))

    def _decide(self, n: int, differing: int, value: float, constant: float | None) -> Decision:
        """The decision after ``n`` observations with LLR ``value``; ``constant``: their
        common value when they are all equal."""
        if n < MIN_DEALS:
            return "undecided"
        if constant is not None:
            if value == 0 or n < self.identical_deals(constant):
                return "undecided"
            return "H1" if value > 0 else "H0"
        if differing < self.min_differing:
            return "undecided"
        low, high = bounds(self.alpha, self.beta)
        if value >= high:
            return "H1"
        if value <= low:
            return "H0"
        return "undecided"

    def state(self, observations: Sequence[float]) -> SprtState:
        """The test after ``observations`` (in deal order)."""
        n = len(observations)
        value = llr(observations, self.d0, self.d1)
        differing = sum(x != 0 for x in observations)
        constant = observations[0] if n and len(set(observations)) == 1 else None
        decision = self._decide(n, differing, value, constant)
        mean, lo, hi = interval(observations)
        return SprtState(
            decision,
            value,
            bounds(self.alpha, self.beta),
            n,
            mean,
            lo,
            hi,
            differing,
            constant is not None,
        )

    def first_decision(self, observations: Iterable[float]) -> SprtState:
        """The state at the first deal where the test decides (or after the last): the
        verdict of observations taken one deal at a time, whatever arrived after it (an
        iterable is read no further than that deal)."""
        seen: list[float] = []
        total = squares = 0.0
        differing = 0
        constant: float | None = None
        for x in observations:
            seen.append(x)
            n = len(seen)
            total += x
            squares += x * x
            differing += x != 0
            constant = x if n == 1 or (constant is not None and x == constant) else None
            if n < MIN_DEALS:
                continue
            if constant is not None:
                value = _constant_llr(constant, self.d0, self.d1)
            else:
                value = _llr(n, total, squares, self.d0, self.d1)
            if self._decide(n, differing, value, constant) != "undecided":
                break
        return self.state(seen)


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
