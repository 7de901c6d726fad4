"""The collusion check: for each pair of entrants that met, does either do better when the
other sits at its table than in its other matches, more than the tables' strengths explain?

Two entrants of one author can share what they see: on a shared kernel no uid, namespace
or container closes every covert channel (README, "what the sandbox does not stop"). So
they can help each other: one lets the other win, or both play against the rest. What
that leaves in the results is a pair whose scores, in the matches they share, are out of
line with how each does otherwise. :func:`collusion_check` measures it for every pair.

**What is compared.** For a pair (A, B), the plain figures are A's mean normalised score
(:mod:`~referee.ranking.intervals`, places as the ratings see them) in the matches where B
sits at its table, and in its other matches. Their difference alone misleads: a strong B
lowers the score of everybody at its table, and a weak one raises it, collusion or not.
So each seat is first compared with what the strengths at its table predict: every match is
read as the orders of its pairs of seats, a Bradley-Terry model is fitted to them all
(:func:`strengths`), and a seat's **residual** is the share of the other seats it placed
above, less the model's expected share. A's **excess** with B is A's mean residual in the
matches with B less its mean residual in its other matches: about 0 for an honest pair,
whatever the strengths; positive when A gains from B's presence.

**When it is far out of line.** Matches are grouped by deal (``spec.deal_id``: matches
dealt the same cards are not independent, as for the intervals), each deal giving one mean
residual. Three one-sided tests are made, each that an excess is above :data:`MIN_EXCESS`:
A's, B's, and the two together (the pair placing well together), with Welch's t (the
deals with the other against the deals without; Satterthwaite's degrees of freedom, an
exact t tail, :func:`t_tail`). The pair's p-value is the smallest of the three times
three (Bonferroni). A pair is **flagged** when that p-value is at most ``level`` (default
:data:`LEVEL`, 0.001 per pair: in a field of 20 entrants, 190 pairs, about one chance flag
in five tournaments) and the pair shared at least ``min_deals`` deals.

Measured on simulated round robins (``bench/collusion_bench.py``, whose simulator the
tests use too: 4 to 6 entrants, 3 or 4 per table, 4 to 12 deals, strengths from even to
nearly deterministic; 1,800 to 4,500 pairs per setting): honest pairs are flagged at 0 to
0.35 times the level, at levels 0.05, 0.01 and 0.001. Without the margin it is 0.4 to 1.3
times the level, but up to 2.6 and 16 times it at 0.01 and 0.001 where one entrant nearly
always wins (the model's bias for such a pair is tiny, and its spread tinier still). A bot
that always lets its partner win is flagged in every tournament; one that does so in part
of their matches, in a share of tournaments that grows with the deals (docs/performance.md,
"Ranking").

A flag is evidence, not proof: an honest bot whose play happens to exploit another's (or
to suffer from it) shows the same pattern, and a pair that shares few deals is never
flagged. It says where to look: at the two bots' code, and at their replays together.

Deterministic: the same matches give the same rows, in any order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from referee.ranking.intervals import normalised_score
from referee.ranking.ratings import rating_places
from referee.specs import StoredMatch

__all__ = [
    "LEVEL",
    "MIN_DEALS",
    "CollusionCheck",
    "PairCheck",
    "collusion_check",
    "strengths",
    "t_tail",
]

LEVEL = 0.001
"""A pair is flagged at this p-value or below (see the module docstring)."""
MIN_DEALS = 10
"""Pairs that shared fewer deals are listed, never flagged: a t-test on a handful of deal
values says little about a tail this far out."""
MIN_EXCESS = 0.02
"""What a flag must be beyond: an excess (a share of the table's other seats) of more than
this, significantly. An honest pair's excess is not exactly zero where the model does not
fit (an entrant that always wins is predicted to win a little less than always), and a
bias that small, over enough deals, is "significant"; collusion worth the name is larger."""
_PRIOR = 0.1
"""Comparisons each pair that met is given, split evenly (see :func:`strengths`)."""
_ITERATIONS = 1000
_TOLERANCE = 1e-10
_DIGITS = 4

Pattern = Literal["a_gains", "b_gains", "both_gain"]
_PATTERNS: tuple[Pattern, ...] = ("a_gains", "b_gains", "both_gain")


@dataclass(frozen=True)
class PairCheck:
    """How two entrants that met did together (see the module docstring).

    ``a_with`` is A's mean normalised score in the matches with B, ``a_without`` in its
    other matches (``None`` without any), ``a_excess`` its excess with B; the same for B.
    ``p_value`` is the pair's (``None`` when there are not two deals with and two without
    each other to compare), ``pattern`` the
    statistic that gave it: ``a_gains`` (A does better when B is there), ``b_gains`` or
    ``both_gain``. ``a_author`` and ``b_author`` are the entrants' authors where known.
    """

    a: str
    b: str
    matches: int
    deals: int
    a_with: float
    a_without: float | None
    a_excess: float
    b_with: float
    b_without: float | None
    b_excess: float
    p_value: float | None
    pattern: Pattern | None
    flagged: bool
    a_author: str | None = None
    b_author: str | None = None

    @property
    def same_author(self) -> bool:
        return self.a_author is not None and self.a_author == self.b_author

    def describe(self) -> str:
        """What a flag says, in words: ``B does better when A is at its table``."""
        if self.pattern == "a_gains":
            return f"{self.a} does better when {self.b} is at its table"
        if self.pattern == "b_gains":
            return f"{self.b} does better when {self.a} is at its table"
        return f"{self.a} and {self.b} both do better together"

    def as_dict(self) -> dict[str, Any]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, _DIGITS)

        return {
            "a": self.a,
            "b": self.b,
            "a_author": self.a_author,
            "b_author": self.b_author,
            "matches": self.matches,
            "deals": self.deals,
            "a_with": r(self.a_with),
            "a_without": r(self.a_without),
            "a_excess": r(self.a_excess),
            "b_with": r(self.b_with),
            "b_without": r(self.b_without),
            "b_excess": r(self.b_excess),
            "p_value": None if self.p_value is None else float(f"{self.p_value:.3g}"),
            "pattern": self.pattern,
            "flagged": self.flagged,
        }


@dataclass(frozen=True)
class CollusionCheck:
    """Every pair that met, flagged ones first, then by p-value; with the test's settings."""

    level: float
    min_deals: int
    pairs: tuple[PairCheck, ...]

    @property
    def flagged(self) -> tuple[PairCheck, ...]:
        return tuple(p for p in self.pairs if p.flagged)

    @property
    def tested(self) -> int:
        """Pairs with enough shared deals to be flagged at all."""
        return sum(p.deals >= self.min_deals for p in self.pairs)

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (``collusion`` in ``leaderboard.json``)."""
        return {
            "level": self.level,
            "min_deals": self.min_deals,
            "tested": self.tested,
            "flagged": len(self.flagged),
            "pairs": [p.as_dict() for p in self.pairs],
        }


def collusion_check(
    matches: Iterable[StoredMatch],
    *,
    level: float = LEVEL,
    min_deals: int = MIN_DEALS,
    order: Sequence[str] = (),
    authors: Mapping[str, str] | None = None,
    margin: float = MIN_EXCESS,
) -> CollusionCheck:
    """The collusion check of ``matches`` (see the module docstring).

    Each pair is named in ``order`` (the entrants' order, then by name for the rest);
    ``authors`` maps entrants to their authors, where known; ``margin`` is what an excess
    is tested against (:data:`MIN_EXCESS`; ``bench/collusion_bench.py`` measures 0 too).
    """
    scored = [_scores(m) for m in sorted(matches, key=lambda m: m.spec.key)]
    x = strengths(scored)
    every: dict[str, _Deals] = {}
    shared: dict[tuple[str, str], _Deals] = {}
    for deal, seats in scored:
        residual = _residuals(seats, x)
        for i, (a, score, _) in enumerate(seats):
            _add(every.setdefault(a, {}), deal, score, residual[i])
            for b in {b for b, _, _ in seats if b != a}:
                _add(shared.setdefault((a, b), {}), deal, score, residual[i])
    rank = {name: i for i, name in enumerate(order)}

    def position(name: str) -> tuple[int, str]:
        return rank.get(name, len(rank)), name

    known = authors or {}
    rows = [
        _check(a, b, every, shared, level, min_deals, margin, known.get(a), known.get(b))
        for a, b in shared
        if position(a) < position(b)
    ]
    rows.sort(key=lambda p: (not p.flagged, 2.0 if p.p_value is None else p.p_value, p.a, p.b))
    return CollusionCheck(level, min_deals, tuple(rows))


_Deals = dict[str, list[float]]
"""An entrant's matches by deal: the sums of its scores and residuals, and their count."""


def _add(deals: _Deals, deal: str, score: float, residual: float) -> None:
    sums = deals.setdefault(deal, [0.0, 0.0, 0.0])
    sums[0] += score
    sums[1] += residual
    sums[2] += 1


def _check(
    a: str,
    b: str,
    every: Mapping[str, _Deals],
    shared: Mapping[tuple[str, str], _Deals],
    level: float,
    min_deals: int,
    margin: float,
    author_a: str | None,
    author_b: str | None,
) -> PairCheck:
    """The row of the pair ``(a, b)``: each one's scores and excess, and the tests."""
    with_a, with_b = shared[(a, b)], shared[(b, a)]
    alone_a, alone_b = _without(every[a], with_a), _without(every[b], with_b)
    deals = sorted(with_a)
    res_a = [with_a[d][1] / with_a[d][2] for d in deals]
    res_b = [with_b[d][1] / with_b[d][2] for d in deals]
    other_a = [r / n for _, r, n in alone_a.values()]
    other_b = [r / n for _, r, n in alone_b.values()]
    together = [ra + rb for ra, rb in zip(res_a, res_b, strict=True)]
    tails = [
        _tail([(res_a, 1), (other_a, -1)], margin),
        _tail([(res_b, 1), (other_b, -1)], margin),
        _tail([(together, 1), (other_a, -1), (other_b, -1)], margin),
    ]
    p_value: float | None = None
    pattern: Pattern | None = None
    if all(t is not None for t in tails):
        best = min(range(3), key=lambda i: tails[i] or 0.0)
        p_value, pattern = min(1.0, 3 * (tails[best] or 0.0)), _PATTERNS[best]
    matches = int(sum(n for _, _, n in with_a.values()))
    return PairCheck(
        a=a,
        b=b,
        matches=matches,
        deals=len(deals),
        a_with=_mean_score(with_a),
        a_without=_mean_score(alone_a) if alone_a else None,
        a_excess=_mean(res_a) - _mean(other_a) if other_a else _mean(res_a),
        b_with=_mean_score(with_b),
        b_without=_mean_score(alone_b) if alone_b else None,
        b_excess=_mean(res_b) - _mean(other_b) if other_b else _mean(res_b),
        p_value=p_value,
        pattern=pattern,
        flagged=p_value is not None and len(deals) >= min_deals and p_value <= level,
        a_author=author_a,
        b_author=author_b,
    )


def _without(every: _Deals, shared: _Deals) -> _Deals:
    """An entrant's matches by deal less those it shared with the other one."""
    out = {}
    for deal, (score, residual, n) in every.items():
        s_score, s_residual, s_n = shared.get(deal, (0.0, 0.0, 0.0))
        if n > s_n:
            out[deal] = [score - s_score, residual - s_residual, n - s_n]
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _mean_score(deals: _Deals) -> float:
    """The mean normalised score over every match of ``deals``."""
    return sum(s for s, _, _ in deals.values()) / sum(n for _, _, n in deals.values())


def _tail(parts: Sequence[tuple[Sequence[float], int]], margin: float) -> float | None:
    """One-sided p-value that ``sum(sign * mean(values))`` exceeds ``margin``.

    Welch's t for a sum of independent means (the parts are deal values of different
    deals, or of different matches of one), with Satterthwaite's degrees of freedom,
    rounded down (which only makes the tail heavier). ``None`` when a part has fewer than
    two values: no spread to measure.
    """
    if any(len(values) < 2 for values, _ in parts):
        return None
    estimate = -margin
    variance = 0.0
    pieces = []
    for values, sign in parts:
        mean = _mean(values)
        estimate += sign * mean
        piece = sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values)
        variance += piece
        pieces.append((piece, len(values) - 1))
    if variance <= 1e-24:  # every deal alike: nothing to weigh the estimate against
        return 0.0 if estimate > 0 else 1.0
    df = variance**2 / sum(piece**2 / dof for piece, dof in pieces if piece > 0)
    return t_tail(estimate / math.sqrt(variance), max(1, int(df)))


_Seats = list[tuple[str, float, float]]
"""A match's seats: (name, normalised score, share of the others it placed above)."""


def _scores(match: StoredMatch) -> tuple[str, _Seats]:
    """A match's deal and its seats (see :data:`_Seats`), by seat; a shared place counts
    half a place above in the share."""
    places = rating_places(match)
    k = len(places)
    seats = []
    for name, place in places:
        above = sum(1.0 if place < p else 0.5 if place == p else 0.0 for _, p in places)
        seats.append((name, normalised_score(place, k), (above - 0.5) / (k - 1)))
    return match.spec.deal_id, seats


def _residuals(seats: _Seats, x: Mapping[str, float]) -> list[float]:
    """Each seat's share minus what the strengths predict at this table."""
    k = len(seats)
    return [
        share
        - sum(_beats(x[name], x[other]) for j, (other, _, _) in enumerate(seats) if j != i)
        / (k - 1)
        for i, (name, _, share) in enumerate(seats)
    ]


def _beats(x: float, y: float) -> float:
    """The model's chance that strength ``x`` places above ``y``."""
    return 1 / (1 + math.exp(y - x))


def strengths(scored: Sequence[tuple[str, _Seats]]) -> dict[str, float]:
    """The Bradley-Terry strengths (log scale, mean zero) of the pairwise orders.

    Every match is read as the orders of its pairs of seats (a shared place half a win
    each way), and ``P(i above j) = 1 / (1 + exp(x_j - x_i))`` is fitted by maximum
    likelihood with Hunter's MM iteration (``gamma_i = wins_i / sum_j n_ij / (gamma_i +
    gamma_j)``). Each pair that met also gets one comparison split evenly, so an entrant
    that never (or always) won keeps a finite strength.
    """
    wins: dict[str, float] = {}
    met: dict[str, dict[str, float]] = {}
    for _, seats in scored:
        k = len(seats)
        for i, (name, _, share) in enumerate(seats):
            wins[name] = wins.get(name, 0.0) + share * (k - 1)
            row = met.setdefault(name, {})
            for j, (other, _, _) in enumerate(seats):
                if j != i and other != name:
                    row[other] = row.get(other, 0.0) + 1
    names = sorted(wins)
    if not names:
        return {}
    pairs = {n: sorted((o, c + _PRIOR) for o, c in met[n].items()) for n in names}
    won = {n: wins[n] + _PRIOR / 2 * len(pairs[n]) for n in names}
    gamma = dict.fromkeys(names, 1.0)
    for _ in range(_ITERATIONS):
        new = {
            n: won[n] / sum(c / (gamma[n] + gamma[o]) for o, c in pairs[n]) if pairs[n] else 1.0
            for n in names
        }
        centre = math.exp(sum(math.log(v) for v in new.values()) / len(names))
        change = max(abs(math.log(new[n] / centre / gamma[n])) for n in names)
        gamma = {n: new[n] / centre for n in names}
        if change < _TOLERANCE:
            break
    return {n: math.log(gamma[n]) for n in names}


def t_tail(t: float, df: int) -> float:
    """``P(T >= t)`` for Student's t with ``df`` degrees of freedom (an integer, >= 1).

    Exact, from the finite series for ``P(|T| < t)`` at integer degrees of freedom
    (Abramowitz and Stegun 26.7.3 and 26.7.4), with ``theta = atan(t / sqrt(df))``: for
    odd ``df``, ``2/pi (theta + sin theta (cos theta + 2/3 cos^3 theta + ...))``; for even
    ``df``, ``sin theta (1 + 1/2 cos^2 theta + 1*3/(2*4) cos^4 theta + ...)``.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    c2 = cos * cos
    if df % 2:
        term, series = cos, 0.0
        if df > 1:
            series = term
            for k in range(1, (df - 3) // 2 + 1):
                term *= c2 * (2 * k) / (2 * k + 1)
                series += term
        inside = 2 / math.pi * (theta + sin * series)
    else:
        term = series = 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            series += term
        inside = sin * series
    upper = max(0.0, (1 - inside) / 2)
    return upper if t >= 0 else 1 - upper
