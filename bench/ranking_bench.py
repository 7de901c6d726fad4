"""How right is the published order? Kendall tau against a ladder of known order.

``python -m bench.ranking_bench [--seeds 8] [--workers 2]`` (``make bench`` runs it) plays
the ladder of :mod:`bench.ladder` (8 rungs of the heuristic sample bot diluted with random
plays, true order in ``bench/ladder_truth.json``) at 4-player tables, three ways, and
measures the Kendall tau between the leaderboard's order (TrueSkill, ``mu - 3 sigma``,
exactly as published) and the true order, averaged over seeds, by matches per bot:

* **(a)** random tables with independent deals: every match seats 4 rungs drawn at random,
  in random order, with fresh cards;
* **(b)** the round robin of the scheduler: every 4-rung table, duplicate deals in every
  seat rotation, balanced seating (:mod:`referee.seating`); 140 matches per bot per deal;
* **(c)** (b) with one deal, then play-offs (:mod:`referee.playoff`) over the whole ladder
  until every adjacent pair is ordered with confidence 0.95 or the budget is spent; tau is
  taken after each play-off round, as it would be published then.

The target: (c) reaches tau >= 0.95 with at most half the matches per bot that (a) needs.
Also the twins check: a tournament with two copies of one rung (the same policy, their own
random draws) must not tell them apart: their score intervals overlap, each one's mean
lies in the other's interval, and their order is not marked significant.

Every schedule, deal and bot decision is seeded, so the figures are the same on every run
with the same ``--seeds`` (the worker count only changes the speed).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.ladder import LADDER, TABLE_SIZE, play_all
from bench.ladder_truth import load_truth
from referee.deals import deal_seed
from referee.intervals import deal_scores, order_confidence, score_intervals
from referee.playoff import PlayoffSettings, plan_round
from referee.ratings import RatingSettings, make_environment, rate
from referee.scheduler import MatchSpec, round_robin
from referee.store import StoredMatch

SECRET = hashlib.sha256(b"arschloch-referee ranking bench").digest()
TARGET_TAU = 0.95
RANDOM_LEVELS = (35, 70, 140, 210, 280, 420, 560)
"""Matches per bot at which (a) is evaluated."""
ROUND_ROBIN_DEALS = 3
PLAYOFF_BUDGET_PER_BOT = 140
"""(c)'s budget: play-off matches per bot on average (``budget = this * bots / 4``)."""


def kendall_tau(order: Sequence[str], truth: Sequence[str]) -> float:
    """Kendall's tau between two orders of the same names (1: equal, -1: reversed)."""
    rank = {name: i for i, name in enumerate(truth)}
    pairs = list(itertools.combinations(order, 2))
    concordant = sum(rank[a] < rank[b] for a, b in pairs)
    return (2 * concordant - len(pairs)) / len(pairs)


def published_order(matches: Sequence[StoredMatch], names: Sequence[str]) -> list[str]:
    """The leaderboard's order, as ``referee leaderboard`` would rank these matches."""
    return [r.name for r in rate(matches, names, env=make_environment())]


@dataclass
class Curve:
    """Tau by matches per bot, one list of (matches per bot, tau) per seed."""

    runs: list[list[tuple[float, float]]] = field(default_factory=list)

    def at(self, level: float) -> float:
        """Mean tau over seeds at ``level`` matches per bot (the last point at or below it)."""
        taus = []
        for run in self.runs:
            below = [tau for per_bot, tau in run if per_bot <= level + 1e-9]
            taus.append(below[-1] if below else float("nan"))
        return sum(taus) / len(taus)


def random_tables(
    seed: int, names: Sequence[str], levels: Sequence[int], rates: dict[str, float], workers: int
) -> list[tuple[float, float]]:
    """(a): ``max(levels)`` matches per bot of random tables; tau at each level."""
    rng = random.Random(f"random tables {seed}")
    total = max(levels) * len(names) // TABLE_SIZE
    specs = []
    for i in range(total):
        table = tuple(rng.sample(list(names), TABLE_SIZE))
        cards = deal_seed(SECRET, "random", seed, i)
        specs.append(MatchSpec(key=f"a/{seed}/{i:06d}", table=table, deal=0, rotation=0,
                               deal_seed=cards, match_seed=cards))
    matches = play_all(specs, rates, workers=workers)
    truth = load_truth()["order"]
    points = []
    for level in levels:
        prefix = matches[: level * len(names) // TABLE_SIZE]
        points.append((float(level), kendall_tau(published_order(prefix, names), truth)))
    return points


def round_robin_run(
    seed: int, names: Sequence[str], deals: int, rates: dict[str, float], workers: int
) -> tuple[list[tuple[float, float]], list[MatchSpec], list[StoredMatch]]:
    """(b): the round robin with ``deals`` deals; tau after each deal. Also returns the
    one-deal schedule and results, where (c) starts."""
    specs = round_robin(list(names), TABLE_SIZE, deals, seed, SECRET)
    matches = play_all(specs, rates, workers=workers)
    truth = load_truth()["order"]
    points = []
    for d in range(1, deals + 1):
        prefix = [m for m in matches if m.spec.deal < d]
        per_bot = len(prefix) * TABLE_SIZE / len(names)
        points.append((per_bot, kendall_tau(published_order(prefix, names), truth)))
    first = [m for m in matches if m.spec.deal == 0]
    return points, [m.spec for m in first], first


def playoff_run(
    seed: int,
    names: Sequence[str],
    specs: list[MatchSpec],
    matches: list[StoredMatch],
    rates: dict[str, float],
    workers: int,
    budget: int,
    on_round: Callable[[int, int], None] | None = None,
) -> list[tuple[float, float]]:
    """(c): play-off rounds on top of ``matches`` until settled or ``budget`` is spent."""
    settings = PlayoffSettings(top=len(names), until=TARGET_TAU, budget=budget)
    truth = load_truth()["order"]
    specs, matches = list(specs), list(matches)
    points = [(len(matches) * TABLE_SIZE / len(names), kendall_tau(published_order(matches, names), truth))]
    for round_no in itertools.count():
        plan = plan_round(
            round_no,
            matches,
            specs,
            list(names),
            settings=settings,
            ratings=RatingSettings(),
            rules=None,
            table_size=TABLE_SIZE,
            seed=seed,
            secret=SECRET,
        )
        if not plan.specs:
            break
        specs += plan.specs
        matches += play_all(plan.specs, rates, workers=workers)
        if on_round is not None:
            on_round(round_no, len(plan.specs))
        per_bot = len(matches) * TABLE_SIZE / len(names)
        points.append((per_bot, kendall_tau(published_order(matches, names), truth)))
    return points


def twins(seed: int, workers: int, deals: int = 2) -> dict[str, Any]:
    """A round robin of the ladder with a second copy of one rung: are the twins told apart?"""
    rates = dict(LADDER)
    twin_of = sorted(LADDER)[3]
    twin = f"{twin_of}-twin"
    rates[twin] = LADDER[twin_of]
    names = sorted(rates)
    matches = play_all(round_robin(names, TABLE_SIZE, deals, seed, SECRET), rates, workers=workers)
    by_deal = deal_scores(matches)
    intervals = score_intervals(by_deal)
    a, b = intervals[twin_of], intervals[twin]
    pair = order_confidence(by_deal, twin_of, twin)
    return {
        "overlap": a.low <= b.high and b.low <= a.high,
        "means_inside": a.contains(b.mean) and b.contains(a.mean),
        "not_significant": not pair.significant(0.95) and not pair.significant(0.95)
        and 0.05 < pair.confidence < 0.95,
        "means": (round(a.mean, 3), round(b.mean, 3)),
        "confidence": pair.confidence,
    }


def run(seeds: int = 6, workers: int = 2, *, names: Sequence[str] | None = None,
        levels: Sequence[int] = RANDOM_LEVELS, deals: int = ROUND_ROBIN_DEALS,
        budget_per_bot: int = PLAYOFF_BUDGET_PER_BOT, quiet: bool = False) -> dict[str, Any]:
    """Every figure of the module docstring, printed and returned."""
    names = list(names or sorted(LADDER))
    rates = {name: LADDER[name] for name in names}
    say: Callable[..., None] = (lambda *a, **k: None) if quiet else print
    started = time.monotonic()
    a, b, c = Curve(), Curve(), Curve()
    budget = budget_per_bot * len(names) // TABLE_SIZE
    for seed in range(1, seeds + 1):
        a.runs.append(random_tables(seed, names, levels, rates, workers))
        points, specs, first = round_robin_run(seed, names, deals, rates, workers)
        b.runs.append(points)
        c.runs.append(playoff_run(seed, names, specs, first, rates, workers, budget))
        say(f"  seed {seed}/{seeds} done, {time.monotonic() - started:.0f} s", file=sys.stderr)
    twin_checks = [twins(seed, workers) for seed in range(1, max(2, seeds // 2) + 1)]
    return report(a, b, c, twin_checks, names, levels, deals, budget, say)


def report(a: Curve, b: Curve, c: Curve, twin_checks: list[dict[str, Any]], names: Sequence[str],
           levels: Sequence[int], deals: int, budget: int, say: Callable[..., None]) -> dict[str, Any]:
    k, n = TABLE_SIZE, len(names)
    per_deal = len(list(itertools.combinations(names, k))) * k * k / n
    say(f"ranking: {n} ladder bots at tables of {k}, Kendall tau vs the true order, "
        f"mean over {len(a.runs)} seeds")
    say(f"  (a) random tables, independent deals: "
        + ", ".join(f"{lv}: {a.at(lv):.3f}" for lv in levels))
    b_levels = [per_deal * d for d in range(1, deals + 1)]
    say(f"  (b) balanced duplicate round robin:   "
        + ", ".join(f"{lv:.0f}: {b.at(lv):.3f}" for lv in b_levels))
    c_levels = sorted({per_deal + step for step in (0, 17.5, 35, 70, 105, 140) if step <= budget * k / n})
    final = [run[-1] for run in c.runs]
    c_final_per_bot = sum(p for p, _ in final) / len(final)
    c_final_tau = sum(t for _, t in final) / len(final)
    say(f"  (c) (b) with 1 deal + play-offs:      "
        + ", ".join(f"{lv:.0f}: {c.at(lv):.3f}" for lv in c_levels)
        + f"; stopped at {c_final_per_bot:.0f} per bot on average, tau {c_final_tau:.3f}")
    need_a = next((lv for lv in levels if a.at(lv) >= TARGET_TAU), None)
    need_c = next((lv for lv in c_levels if c.at(lv) >= TARGET_TAU), None)
    if need_c is None and c_final_tau >= TARGET_TAU:
        need_c = c_final_per_bot
    met = need_a is not None and need_c is not None and need_c <= need_a / 2
    say(f"  tau >= {TARGET_TAU}: (a) needs {need_a if need_a else f'more than {max(levels)}'} "
        f"matches per bot, (c) {f'{need_c:.0f}' if need_c else 'not reached'}; target "
        f"(c) <= half of (a): {'met' if met else 'NOT met'}")
    told_apart = sum(not (t["overlap"] and t["means_inside"] and t["not_significant"]) for t in twin_checks)
    say(f"  twins: {len(twin_checks) - told_apart}/{len(twin_checks)} tournaments could not tell "
        f"them apart (means {', '.join(str(t['means']) for t in twin_checks)})")
    return {
        "a": {lv: a.at(lv) for lv in levels},
        "b": {lv: b.at(lv) for lv in b_levels},
        "c": {lv: c.at(lv) for lv in c_levels},
        "c_final": (c_final_per_bot, c_final_tau),
        "need_a": need_a,
        "need_c": need_c,
        "target_met": met,
        "twins": twin_checks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    run(args.seeds, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
