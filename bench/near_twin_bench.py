"""Does ``referee compare`` keep its error rates where most paired deals score 0?

``python -m bench.near_twin_bench [--deals 1600] [--runs 4000] [--workers 2]`` (``make
bench`` runs it with these defaults).

**The pools, from real play.** Near twins are two versions that play the same game on most
deals: in one-round matches most paired deals then score exactly 0, and the few that do not
are skewed (a rare large gain). The bench plays ``--deals`` paired deals of ``referee
compare`` (:func:`bench.compare_bench.paired_deal`: one-round matches, tables of 4, every
seat rotation, OLD in NEW's seats) of the ladder's best rung ``h00`` against rungs diluted
by 2 %, 3 % and 4 % random plays (``h02``, ``h03``, ``h04``), the other ladder rungs as the
field, and keeps each pool's observations. The issue's target is on pools with at least 80 %
zeros (:data:`ZERO_SHARE`); ``h04``'s pool, with fewer, is printed beside them as a check of
a denser pool and is not part of the target.

**At exactly D0 and D1.** A pool's own mean is neither hypothesis, so each pool, and its
mirror image (every observation negated: a change that makes things worse by as much), is
tilted exponentially to a mean of exactly D0 and of exactly D1 (:func:`tilt`: weights
``exp(theta * x)`` on the pool's own values, so the zeros and the skew stay; the support is
preserved). Each run draws observations from the tilted law, one deal at a time, until the
test decides (at most ``--cap``); ``--runs`` runs a row. alpha is the share of runs at D0
accepting H1, beta the share at D1 accepting H0, each printed with its standard error; a
rate counts as met when it is at most its target (:data:`ALPHA`, :data:`BETA`).

**The tests compared**, each run on the same draws:

* *today*: the test as it was before the minimum of differing deals (``min_differing`` 0);
* *compare*: the command's test (:class:`referee.ranking.sprt.Sprt` with its defaults);
* *oracle*: Wald's SPRT of the two tilted laws themselves (the log-likelihood ratio of each
  observation under the D1 law over the D0 law), a test no one can run, since it knows the
  law it draws from. It shows how few deals any test needs on this pool. Wald's
  inequality gives the bound it nearly meets: a test with error rates alpha at D0 and beta
  at D1 takes on average at least ``((1 - alpha) ln((1 - alpha) / beta) + alpha ln(alpha /
  (1 - beta))) / KL(D0 law, D1 law)`` deals at D0 (:func:`wald_floor`; the same with the
  roles exchanged at D1), printed beside it.

Each row gives the mean deals to the stop beside today's (the issue allows 25 % more), and the
**coverage** of the interval the command prints at the stop: the share of runs whose 95 %
interval holds the true mean (D0 or D1), which a sequential stop pushes below 0.95.

Everything is seeded: the same arguments give the same figures on any machine.
"""

from __future__ import annotations

import argparse
import bisect
import math
import multiprocessing
import random
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bench.compare_bench import paired_deal
from bench.ladder import LADDER
from referee.ranking.sprt import Sprt, SprtState, bounds

NEW = "h00"
OLDS = {"h02": 0.02, "h03": 0.03, "h04": LADDER["h04"]}
"""The near twins' OLD rungs and their dilutions (``h02`` and ``h03`` are not ladder rungs:
the bench adds them)."""

ZERO_SHARE = 0.80
"""The issue's pools: at least this share of paired deals score 0."""

ALPHA = 0.05
BETA = 0.06
"""The targets at D0 and D1 (the command's nominal rates are 0.05 both)."""

BUDGET = 1.25
"""The most deals the command may take, as a multiple of today's test's."""

TEST = Sprt()
TODAY = Sprt(min_differing=0)


def _deal(packed: tuple[str, int]) -> float:
    old, deal = packed
    rates = {**LADDER, **OLDS}
    (observation,) = paired_deal(NEW, old, deal, 0, "one-round", rates)
    return observation


def collect(deals: int, workers: int) -> dict[str, list[float]]:
    """Each OLD's pool: ``deals`` paired deals' observations, in deal order."""
    with multiprocessing.get_context("fork").Pool(workers) as processes:
        return {
            old: processes.map(_deal, [(old, d) for d in range(deals)], chunksize=8) for old in OLDS
        }


@dataclass(frozen=True)
class Law:
    """A law on a pool's distinct values: ``values`` and their ``weights`` (summing to 1)."""

    values: tuple[float, ...]
    weights: tuple[float, ...]

    @classmethod
    def of(cls, pool: Sequence[float]) -> Law:
        counts: dict[float, int] = {}
        for x in pool:
            counts[x] = counts.get(x, 0) + 1
        values = tuple(sorted(counts))
        return cls(values, tuple(counts[v] / len(pool) for v in values))

    @property
    def mean(self) -> float:
        return sum(v * w for v, w in zip(self.values, self.weights, strict=True))

    def draws(self, rng: random.Random) -> Iterator[float]:
        """Observations drawn from the law, for ever."""
        cumulative = []
        total = 0.0
        for w in self.weights:
            total += w
            cumulative.append(total)
        last = len(self.values) - 1
        while True:
            yield self.values[min(last, bisect.bisect_left(cumulative, rng.random() * total))]


def tilt(law: Law, mean: float) -> Law:
    """``law`` reweighted by ``exp(theta * x)``, ``theta`` solved (by bisection) for a mean of
    exactly ``mean``: the same values, the zeros and the skew kept."""

    def tilted(theta: float) -> Law:
        top = max(theta * v for v in law.values)
        raw = [w * math.exp(theta * v - top) for v, w in zip(law.values, law.weights, strict=True)]
        total = sum(raw)
        return Law(law.values, tuple(r / total for r in raw))

    low, high = -500.0, 500.0
    for _ in range(200):
        middle = (low + high) / 2
        if tilted(middle).mean < mean:
            low = middle
        else:
            high = middle
    return tilted((low + high) / 2)


def kl(p: Law, q: Law) -> float:
    """The Kullback-Leibler divergence of ``p`` from ``q`` (same values)."""
    return sum(a * math.log(a / b) for a, b in zip(p.weights, q.weights, strict=True) if a > 0)


def wald_floor(at: Law, other: Law, error: float, other_error: float) -> float:
    """The fewest deals on average any sequential test can take under ``at`` while erring
    with probability ``error`` there and ``other_error`` under ``other`` (Wald's
    inequality)."""
    right = 1 - error
    return (
        right * math.log(right / other_error) + error * math.log(error / (1 - other_error))
    ) / kl(at, other)


@dataclass(frozen=True)
class Row:
    """What one test did over the runs at one hypothesis."""

    wrong: float
    deals: float
    coverage: float


def runs_of(
    law: Law, truth: float, wrong: str, step: dict[float, float], runs: int, cap: int, salt: str
) -> dict[str, Row]:
    """Each test's row on ``runs`` runs drawn from ``law`` (its mean ``truth``), the same
    draws for every test; ``wrong`` is the decision that errs there, ``step`` each value's
    log-likelihood ratio for the oracle."""
    rows: dict[str, list[tuple[bool, int, bool]]] = {"today": [], "compare": [], "oracle": []}
    rng = random.Random(f"near twins {salt}")
    for _ in range(runs):
        seen = _Shared(law.draws(random.Random(rng.getrandbits(64))), cap)
        for name, test in (("today", TODAY), ("compare", TEST)):
            state = test.first_decision(seen)
            rows[name].append((state.decision == wrong, state.deals, _holds(state, truth)))
        decision, deals = _oracle(seen, step)
        rows["oracle"].append((decision == wrong, deals, False))
    return {
        name: Row(
            sum(r[0] for r in kept) / runs,
            statistics.fmean(r[1] for r in kept),
            sum(r[2] for r in kept) / runs,
        )
        for name, kept in rows.items()
    }


class _Shared:
    """At most ``cap`` draws, made as the first reader needs them and read again, the same,
    by every other."""

    def __init__(self, draws: Iterator[float], cap: int) -> None:
        self.draws = draws
        self.cap = cap
        self.made: list[float] = []

    def __iter__(self) -> Iterator[float]:
        for i in range(self.cap):
            if i == len(self.made):
                self.made.append(next(self.draws))
            yield self.made[i]


def _holds(state: SprtState, truth: float) -> bool:
    return state.low <= truth <= state.high


def _oracle(seen: _Shared, step: dict[float, float]) -> tuple[str, int]:
    low, high = bounds(TEST.alpha, TEST.beta)
    total = 0.0
    for n, x in enumerate(seen, start=1):
        total += step[x]
        if total >= high:
            return "H1", n
        if total <= low:
            return "H0", n
    return "undecided", seen.cap


def pool_lines(name: str, pool: Sequence[float], runs: int, cap: int) -> list[str]:
    """The rows of one pool and its mirror image."""
    zeros = sum(x == 0 for x in pool) / len(pool)
    mean = statistics.fmean(pool)
    sd = statistics.stdev(pool)
    skew = statistics.fmean(((x - mean) / sd) ** 3 for x in pool) if sd else 0.0
    target = "the target's pool" if zeros >= ZERO_SHARE else "not a target pool (too few zeros)"
    lines = [
        f"  {NEW} against {name}: {len(pool)} deals, {zeros:.1%} zeros, mean {mean:+.4f}, "
        f"skewness {skew:+.2f} ({target})"
    ]
    for mirrored in (False, True):
        law = Law.of([-x for x in pool] if mirrored else pool)
        at = {"D0": tilt(law, TEST.d0), "D1": tilt(law, TEST.d1)}
        label = f"{name}{' mirrored' if mirrored else ''}"
        for hypothesis, wrong, target_rate, error, other_error in (
            ("D0", "H1", ALPHA, TEST.alpha, TEST.beta),
            ("D1", "H0", BETA, TEST.beta, TEST.alpha),
        ):
            other = at["D1" if hypothesis == "D0" else "D0"]
            salt = f"{label} {hypothesis}"
            step = {
                v: math.log(b / a)
                for v, a, b in zip(law.values, at["D0"].weights, at["D1"].weights, strict=True)
            }
            truth = TEST.d0 if hypothesis == "D0" else TEST.d1
            rows = runs_of(at[hypothesis], truth, wrong, step, runs, cap, salt)
            floor = wald_floor(at[hypothesis], other, error, other_error)
            lines.append(_row_line(label, hypothesis, rows, target_rate, runs, floor))
    return lines


def _row_line(
    label: str, hypothesis: str, rows: dict[str, Row], target: float, runs: int, floor: float
) -> str:
    rate = "alpha" if hypothesis == "D0" else "beta"
    today, new, oracle = rows["today"], rows["compare"], rows["oracle"]
    se = math.sqrt(max(new.wrong * (1 - new.wrong), target * (1 - target)) / runs)
    ratio = new.deals / today.deals
    return (
        f"    {label} at {hypothesis}: {rate} {new.wrong:.3f} (SE {se:.4f}; target <= "
        f"{target:g}) {'OK' if new.wrong <= target else 'MISSED'}, today {today.wrong:.3f}; "
        f"deals {new.deals:.1f} against today's {today.deals:.1f}: {ratio:.2f}x (target <= "
        f"{BUDGET:g}x) {'OK' if ratio <= BUDGET else 'MISSED'}; oracle {oracle.deals:.1f} "
        f"({rate} {oracle.wrong:.3f}), Wald's floor {floor:.1f} ({floor / today.deals:.2f}x "
        f"today's); interval coverage {new.coverage:.3f}, today {today.coverage:.3f} "
        "(nominal 0.95)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=1600, help="paired deals a pool")
    parser.add_argument("--runs", type=int, default=4000, help="simulated runs a row")
    parser.add_argument("--cap", type=int, default=600, help="most deals a run takes")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    pools = collect(args.deals, args.workers)
    print(
        f"compare on near-twin pools (one-round matches; D0 {TEST.d0:g}, D1 {TEST.d1:g}, "
        f"alpha = beta = {TEST.alpha:g}; {args.runs} runs a row, at most {args.cap} deals a "
        f"run; the command waits for {TEST.min_differing} deals that differ, today's test "
        "for none)",
        flush=True,
    )
    for name, pool in pools.items():
        print("\n".join(pool_lines(name, pool, args.runs, args.cap)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
