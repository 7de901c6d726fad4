"""Is my new version better? How many matches ``referee compare`` needs, paired and unpaired,
and how often it is wrong.

``python -m bench.compare_bench [--seeds 32] [--runs 4000] [--workers 2] [--format both]``
(``make bench`` runs it with these defaults) plays the ladder of :mod:`bench.ladder` in-process
(8 rungs: the heuristic sample bot diluted with random plays at rates 0 to 0.28), at tables
of 4, in both its formats (matches to 15 points, one-round matches):

* **Paired against unpaired.** Rung 0 (``h00``) as NEW against rungs 1, 2 and 4 (``h04``,
  ``h08``, ``h16``) as OLD, the other six rungs as the field. *Paired* is ``referee
  compare``: each deal is :func:`referee.tournament.scheduler.compare_deal`'s (NEW and three
  field rungs drawn for the deal, every seat rotation, then OLD in NEW's seats, one deal for
  all eight matches), every bot's random draws seeded from ``match_start``'s seed as the
  referee seeds them (the field draws alike in both halves), one observation per deal (the
  mean over the rotations of NEW's normalised score minus OLD's). *Unpaired* plays NEW and
  OLD on independent deals at random seats against three field rungs drawn at random, and
  takes as an observation the mean of four NEW matches minus the mean of four OLD matches:
  the same eight matches an observation, a two-sample test. Both run the same sequential
  test (:class:`referee.ranking.sprt.Sprt`, D0 = 0, D1 = 0.02, alpha = beta = 0.05) one
  observation at a time until it decides, at most ``--cap`` observations; a run's
  matches are 8 per observation it took (what ``referee compare`` plays past the deciding
  deal to keep its workers busy is not counted). ``--seeds`` runs of each. Target: for
  ``h04`` and ``h08`` pairs need at most a third of the matches unpaired play needs.
* **Error rates**, over ``--runs`` simulated runs each, every run drawing observations at
  random (with replacement) from a pool of real ones: *twins*, ``h08`` against a copy of
  itself, one of the two making random draws of its own (the copy on even deals, the
  original on odd ones), from a pool of ``--pool`` paired deals, must accept H1 in at most
  alpha of runs. The two are one program, so the true difference is 0 = D0 and the law of
  an observation is symmetric about it (which copy plays NEW is arbitrary): the pool is
  taken with every observation negated too, so the runs are drawn at D0 exactly rather than
  at the pool's own mean (400 deals leave that mean off by 0.005 or so, a quarter of D1,
  which would move the rate). And
  ``h00`` against ``h08`` (their true scores differ by 0.093 in matches to 15 points, 0.039
  in one-round matches: above D1) must accept H0 in at most beta, from the observations of
  the paired runs above. Twins that draw alike (two copies on the same seeds) play the same
  games: every observation is 0.

**The statistic** (``--statistic``): each format is scored as the command scores it by
default (matches to 15 points by ``round-score``, one-round matches by ``final-score``,
:mod:`referee.ranking.statistics`), each with its default hypotheses
(:data:`~referee.ranking.statistics.HYPOTHESES`); under ``round-score`` the unpaired runs of
the small changes are also played scored by ``final-score``, and the paired runs compared
with those too. ``--old`` keeps only some OLD rungs. ``--calibrate DEALS`` plays DEALS paired
deals of each pair, scores each both ways, and prints the two mean differences, their ratio
(what turns final score's D1 into round score's) and the signal per deal of each.

Everything is seeded: the same arguments give the same figures on any machine.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import multiprocessing
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.ladder import FORMATS, LADDER, TABLE_SIZE, play_rounds
from referee.ranking.sprt import MIN_DEALS, Decision, PairedDeals, Sprt, llr
from referee.ranking.statistics import HYPOTHESES, STATISTICS, Statistic, version_score
from referee.specs import MatchSpec
from referee.tournament.deals import deal_seed
from referee.tournament.scheduler import compare_deal

SECRET = hashlib.sha256(b"arschloch-referee compare bench").digest()
NEW = "h00"
OLDS = ("h04", "h08", "h16")
SMALL = ("h04", "h08")
"""The small changes an author tests: where the target is set."""
TWIN = "h08"
TWIN_COPY = "h08-twin"
MATCHES_PER_OBSERVATION = 2 * TABLE_SIZE
TARGET_RATIO = 3.0


def field_of(*versions: str) -> list[str]:
    """The rungs other than ``versions``: the field."""
    return [name for name in sorted(LADDER) if name not in versions]


def paired_deal(
    new: str,
    old: str,
    deal: int,
    seed: int,
    fmt: str,
    rates: dict[str, float],
    own_draws: frozenset[str] = frozenset(),
    statistics: Sequence[Statistic] = ("final-score",),
) -> list[float]:
    """One deal of ``referee compare`` between ``new`` and ``old``: its observation under
    each of ``statistics`` (all from the same eight matches)."""
    field = [name for name in field_of(new, old) if name in rates and name != TWIN_COPY]
    salt = f"{fmt}/{new}/{old}/{seed}"
    specs = compare_deal(
        new, old, field, TABLE_SIZE, deal, 0, hashlib.sha256(SECRET + salt.encode()).digest()
    )
    played = [play_rounds(spec, rates, fmt, seeded=True, own_draws=own_draws) for spec in specs]
    rounds = {match.spec.key: places for match, places in played}
    matches = [match for match, _ in played]
    return [
        PairedDeals.of(
            new, old, TABLE_SIZE, matches, statistic=statistic, rounds=rounds
        ).observation(deal)
        for statistic in statistics
    ]


def unpaired_unit(
    new: str, old: str, unit: int, seed: int, fmt: str, statistic: Statistic = "final-score"
) -> float:
    """Four matches of ``new`` and four of ``old``, each on its own deal at a random seat
    against three field rungs drawn at random: the difference of their mean scores."""
    rng = random.Random(f"unpaired {fmt} {new} {old} {seed} {unit}")
    field = field_of(new, old)
    means = []
    for version in (new, old):
        scores = []
        for i in range(TABLE_SIZE):
            table = [version, *rng.sample(field, TABLE_SIZE - 1)]
            rng.shuffle(table)
            cards = deal_seed(SECRET, "unpaired", fmt, new, old, seed, unit, version, i)
            key = f"u/{seed}/{unit}/{version}/{i}"
            spec = MatchSpec(
                key=key,
                table=tuple(table),
                deal=unit,
                rotation=i,
                deal_seed=cards,
                match_seed=cards,
            )
            match, rounds = play_rounds(spec, LADDER, fmt, seeded=True)
            scores.append(version_score(match, version, statistic, rounds))
        means.append(sum(scores) / len(scores))
    return means[0] - means[1]


def sequential(
    observe: Callable[[int], float], cap: int, test: Sprt
) -> tuple[Decision, list[float]]:
    """Observe until ``test`` decides or ``cap`` observations; the decision and them."""
    low, high = test.state([]).bounds
    seen: list[float] = []
    for i in range(cap):
        seen.append(observe(i))
        if len(seen) >= MIN_DEALS:
            value = llr(seen, test.d0, test.d1)
            if value >= high:
                return "H1", seen
            if value <= low:
                return "H0", seen
    return "undecided", seen


@dataclass(frozen=True)
class Job:
    """One sequential run: ``paired`` or not, ``old`` against :data:`NEW`, in ``fmt``."""

    paired: bool
    fmt: str
    old: str
    seed: int
    cap: int
    statistic: Statistic = "final-score"


def test_of(statistic: Statistic) -> Sprt:
    """The default test of ``referee compare`` under ``statistic``."""
    return Sprt(*HYPOTHESES[statistic])


def run_job(job: Job) -> tuple[Job, Decision, list[float]]:
    test = test_of(job.statistic)
    stat = job.statistic
    if job.paired:
        observe = lambda i: paired_deal(  # noqa: E731
            NEW, job.old, i, job.seed, job.fmt, LADDER, statistics=(stat,)
        )[0]
    else:
        observe = lambda i: unpaired_unit(NEW, job.old, i, job.seed, job.fmt, stat)  # noqa: E731
    decision, seen = sequential(observe, job.cap, test)
    return job, decision, seen


def twin_deal(packed: tuple[int, str, bool, Statistic]) -> float:
    """A deal of :data:`TWIN` against its copy: one of them with draws of its own (the copy
    on even deals, the original on odd ones), or both drawing alike."""
    deal, fmt, own, statistic = packed
    rates = {**LADDER, TWIN_COPY: LADDER[TWIN]}
    own_draws = frozenset({TWIN_COPY if deal % 2 == 0 else TWIN}) if own else frozenset()
    return paired_deal(TWIN, TWIN_COPY, deal, 0, fmt, rates, own_draws, (statistic,))[0]


@dataclass
class Runs:
    """The runs of one way of playing one pair: decisions and observations, by seed."""

    decisions: list[Decision] = field(default_factory=list)
    observations: list[list[float]] = field(default_factory=list)

    def matches(self) -> float:
        """Mean matches to a decision (an undecided run counts its cap: a lower bound)."""
        return MATCHES_PER_OBSERVATION * sum(map(len, self.observations)) / len(self.observations)

    def variance(self) -> float:
        """The variance of one observation, pooled over the runs (each about its mean)."""
        squares = dof = 0.0
        for xs in self.observations:
            if len(xs) > 1:
                mean = sum(xs) / len(xs)
                squares += sum((x - mean) ** 2 for x in xs)
                dof += len(xs) - 1
        return squares / dof if dof else math.nan

    def counts(self) -> str:
        return ", ".join(
            f"{self.decisions.count(d)} {d}"
            for d in ("H1", "H0", "undecided")
            if self.decisions.count(d)
        )


def simulated_runs(
    pool: Sequence[float], runs: int, cap: int, salt: str, test: Sprt
) -> list[Decision]:
    """``runs`` sequential tests, each on observations drawn with replacement from ``pool``."""
    rng = random.Random(f"simulated {salt}")
    return [
        test.first_decision([rng.choice(pool) for _ in range(cap)]).decision for _ in range(runs)
    ]


Key = tuple[bool, str, Statistic]
"""A way of playing one pair: paired or not, OLD, the statistic."""


def play_runs(jobs: Sequence[Job], workers: int, say: Callable[[str], None]) -> dict[Key, Runs]:
    """Every job's run, by (paired, OLD, statistic)."""
    results: dict[Key, Runs] = {}
    started = time.monotonic()
    with multiprocessing.get_context("fork").Pool(workers) as processes:
        for done, (job, decision, seen) in enumerate(
            processes.imap_unordered(run_job, jobs), start=1
        ):
            runs_of = results.setdefault((job.paired, job.old, job.statistic), Runs())
            runs_of.decisions.append(decision)
            runs_of.observations.append(seen)
            if done % max(1, len(jobs) // 10) == 0:
                say(f"{job.fmt}: {done}/{len(jobs)} runs, {time.monotonic() - started:.0f} s")
    return results


def comparison_lines(
    results: dict[Key, Runs], olds: Sequence[str], statistic: Statistic
) -> list[str]:
    """Paired against unpaired, for each OLD (and, under ``round-score``, against unpaired
    play scored by ``final-score`` where that was played too)."""
    lines = []
    for old in olds:
        paired, unpaired = results[True, old, statistic], results[False, old, statistic]
        ratio = unpaired.matches() / paired.matches()
        target = ""
        if old in SMALL:
            met = "met" if ratio >= TARGET_RATIO else "NOT met"
            target = f"; target >= {TARGET_RATIO:g}x: {met}"
        lines.append(
            f"  {old}: paired {paired.matches():.0f} ({paired.counts()}), unpaired "
            f"{unpaired.matches():.0f} ({unpaired.counts()}): {ratio:.1f}x fewer matches "
            f"paired{target}; variance of an observation {paired.variance():.4f} paired, "
            f"{unpaired.variance():.4f} unpaired ({unpaired.variance() / paired.variance():.1f}x)"
        )
        today = results.get((False, old, "final-score"))
        if statistic != "final-score" and today is not None:
            ratio = today.matches() / paired.matches()
            met = "met" if ratio >= TARGET_RATIO else "NOT met"
            lines.append(
                f"  {old}: paired by {statistic} {paired.matches():.0f} against unpaired by "
                f"final-score {today.matches():.0f} ({today.counts()}): {ratio:.1f}x fewer "
                f"matches; target >= {TARGET_RATIO:g}x: {met}"
            )
    return lines


def error_lines(
    fmt: str,
    strong: Sequence[float],
    runs: int,
    pool: int,
    cap: int,
    workers: int,
    statistic: Statistic,
) -> list[str]:
    """The twins' false H1s and the false H0s of ``h00`` against ``h08`` (``strong``: the
    observations of its paired runs)."""
    with multiprocessing.get_context("fork").Pool(workers) as processes:
        jobs = [(d, fmt, True, statistic) for d in range(pool)]
        own = processes.map(twin_deal, jobs, chunksize=4)
        same = processes.map(twin_deal, [(d, fmt, False, statistic) for d in range(MIN_DEALS)])
    test = test_of(statistic)
    twins = simulated_runs([*own, *(-x for x in own)], runs, cap, f"twins {fmt}", test)
    h1 = twins.count("H1")
    rung2 = simulated_runs(strong, runs, cap, f"rung2 {fmt}", test)
    h0 = rung2.count("H0")
    return [
        f"  twins ({TWIN} against a copy, one with draws of its own; {runs} runs drawn from "
        f"{pool} deals and their negations, the deals' mean {sum(own) / len(own):+.4f}): H1 "
        f"in {h1}/{runs} = {h1 / runs:.3f} (alpha 0.05: "
        f"{'met' if h1 <= 0.05 * runs else 'NOT met'}), H0 in {twins.count('H0')}, undecided "
        f"{twins.count('undecided')}; copies drawing alike: observations {sorted(set(same))}",
        f"  {NEW} against h08 ({runs} runs drawn from the {len(strong)} deals of its paired "
        f"runs, their mean {sum(strong) / len(strong):+.4f}): H0 in {h0}/{runs} = "
        f"{h0 / runs:.3f} (beta 0.05: {'met' if h0 <= 0.05 * runs else 'NOT met'})",
    ]


def calibration_lines(fmt: str, deals: int, workers: int) -> list[str]:
    """Both statistics of the same paired deals of :data:`NEW` against each OLD: their mean
    differences, the ratio of the two (what turns a final-score D1 into a round-score
    one) and the signal of a deal (mean squared over variance) under each."""
    jobs = [(old, deal) for old in OLDS for deal in range(deals)]
    with multiprocessing.get_context("fork").Pool(workers) as processes:
        both = processes.map(_both_statistics, jobs, chunksize=4)
    lines = [
        f"calibration, {FORMATS_TITLES[fmt]}: {deals} paired deals of {NEW} against each OLD "
        "(seed 0), each scored both ways"
    ]
    sums = {"final": 0.0, "round": 0.0}
    for old in OLDS:
        pairs = [b for (o, _), b in zip(jobs, both, strict=True) if o == old]
        final, rounds = [p[0] for p in pairs], [p[1] for p in pairs]
        mf, mr = sum(final) / deals, sum(rounds) / deals
        sums["final"] += mf
        sums["round"] += mr
        gain = (mr**2 / _variance(rounds)) / (mf**2 / _variance(final))
        lines.append(
            f"  {old}: final-score difference {mf:+.4f} (variance {_variance(final):.4f}), "
            f"round-score {mr:+.4f} (variance {_variance(rounds):.4f}): round / final "
            f"{mr / mf:.3f}; signal per deal round / final {gain:.2f}x"
        )
    ratio = sums["round"] / sums["final"]
    lines.append(
        f"  pooled round / final {ratio:.3f}: final-score D1 0.02 is round-score D1 "
        f"{0.02 * ratio:.4f} (the command's: {HYPOTHESES['round-score'][1]:g})"
    )
    return lines


def _both_statistics(packed: tuple[str, int]) -> list[float]:
    old, deal = packed
    return paired_deal(NEW, old, deal, 0, CALIBRATION_FORMAT, LADDER, statistics=STATISTICS)


def _variance(xs: Sequence[float]) -> float:
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)


CALIBRATION_FORMAT = "to-15"


def measure(
    fmt: str,
    seeds: int,
    runs: int,
    pool: int,
    cap: int,
    workers: int,
    say: Callable[[str], None],
    only_errors: bool = False,
    statistic: Statistic = "final-score",
    olds: Sequence[str] = OLDS,
) -> list[str]:
    """Every figure of one format under ``statistic``, as lines (``only_errors``: the
    error rates alone, with just the paired runs of ``h08`` they need). Under
    ``round-score`` the unpaired runs of the small changes are also played scored by
    ``final-score``, today's unpaired figure."""
    olds = ("h08",) if only_errors else olds
    ways = (True,) if only_errors else (True, False)
    jobs = [
        Job(paired, fmt, old, seed, cap, statistic)
        for old in olds
        for paired in ways
        for seed in range(1, seeds + 1)
    ]
    if statistic != "final-score" and not only_errors:
        jobs += [
            Job(False, fmt, old, seed, cap)
            for old in olds
            if old in SMALL
            for seed in range(1, seeds + 1)
        ]
    results = play_runs(jobs, workers, say)
    d0, d1 = HYPOTHESES[statistic]
    lines = [
        f"compare, {FORMATS_TITLES[fmt]}, scored by {statistic}: {NEW} as NEW, the field "
        f"the other rungs; {seeds} runs each way, mean matches to a decision (D0 {d0:g}, D1 "
        f"{d1:g}, alpha = beta = 0.05, at most {cap * MATCHES_PER_OBSERVATION} matches a run)"
    ]
    if not only_errors:
        lines += comparison_lines(results, olds, statistic)
    if "h08" not in olds:
        return lines
    strong = [x for xs in results[True, "h08", statistic].observations for x in xs]
    return lines + error_lines(fmt, strong, runs, pool, cap, workers, statistic)


FORMATS_TITLES = {
    "to-15": "matches to 15 points",
    "one-round": "one-round matches",
}

DEFAULT_STATISTIC: dict[str, Statistic] = {"to-15": "round-score", "one-round": "final-score"}
"""The command's default statistic in each format (one-round matches: the two coincide)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=32, help="runs of each pair, each way")
    parser.add_argument(
        "--only-errors", action="store_true", help="only the error rates (no runs but h08's)"
    )
    parser.add_argument("--runs", type=int, default=4000, help="simulated runs for error rates")
    parser.add_argument("--pool", type=int, default=400, help="twins' deals to draw runs from")
    parser.add_argument("--cap", type=int, default=600, help="most observations a run takes")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--format", choices=[*FORMATS, "both"], default="both")
    parser.add_argument(
        "--statistic",
        choices=["default", *STATISTICS],
        default="default",
        help="what a deal is scored by (default: the command's for the format)",
    )
    parser.add_argument(
        "--old", action="append", choices=OLDS, help="only these OLD rungs (repeatable)"
    )
    parser.add_argument(
        "--calibrate",
        type=int,
        default=0,
        metavar="DEALS",
        help="only the round-score calibration, on DEALS paired deals a pair",
    )
    args = parser.parse_args(argv)
    if args.calibrate:
        print("\n".join(calibration_lines(CALIBRATION_FORMAT, args.calibrate, args.workers)))
        return 0
    formats = list(FORMATS) if args.format == "both" else [args.format]
    for i, fmt in enumerate(formats):
        statistic = DEFAULT_STATISTIC[fmt] if args.statistic == "default" else args.statistic
        lines = measure(
            fmt,
            args.seeds,
            args.runs,
            args.pool,
            args.cap,
            args.workers,
            lambda line: print("  " + line, file=sys.stderr, flush=True),
            args.only_errors,
            statistic,
            tuple(args.old or OLDS),
        )
        if i:
            print()
        print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
