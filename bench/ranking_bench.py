"""How right is the published order? Kendall tau against a ladder of known order.

``python -m bench.ranking_bench [--seeds 4] [--workers 2] [--format both]`` (``make bench``
runs it) plays the ladder of :mod:`bench.ladder` (8 rungs: the heuristic sample bot diluted
with random plays at rates 0 to 0.28) at 4-player tables of ``arschloch``, in two formats
(:data:`bench.ladder.FORMATS`): the preset's matches to 15 points, and one-round matches,
each against its own true order (:mod:`bench.ladder_truth`). For each it measures the
Kendall tau between the leaderboard's order (TrueSkill ``mu - 3 sigma``, exactly as
published) and the true order, averaged over seeds, by matches per bot, five ways:

* **(a)** random tables with independent deals: every match seats 4 rungs drawn at random,
  in random order, with fresh cards;
* **(b)** the scheduler's round robin: every 4-rung table, every table deal in every seat
  rotation, balanced seating (:mod:`referee.tournament.seating`), deals shared as
  ``--duplicate`` says (the referee's default, ``tables``: across pairs of disjoint tables,
  so no rung meets the same cards twice; or ``rotations``: one deal for every rotation of a
  table deal); 140 matches per bot per deal;
* **(c)** (b) with one deal, then play-offs (:mod:`referee.ranking.playoff`, ``top`` = every rung,
  ``until = 0.95``); tau is taken as the leaderboard would publish it at each level;
* **(b2)** the round robin on balanced tables (``tables = "balanced"``,
  :mod:`referee.tournament.design`): for 8 rungs at 4, 14 tables in which every pair meets 3 times;
  28 matches per bot per deal;
* **(c2)** (b2) with a few deals, then the same play-offs.

How far each row goes is the format's :class:`Plan`. The issue's target: (c) reaches tau
>= 0.95 with at most half the matches per bot that (a) needs; it is checked for (c) and
(c2). Also:

* **dup**: what shared deals take out: one deal of the round robin played with its deals
  shared across tables (``tables``), shared by the rotations of each table deal
  (``rotations``), and with fresh cards for every match; the seed-to-seed variance of the
  score difference between true neighbours, each against fresh cards;
* **twins**: a round robin with two copies of one rung (one policy, each with its own
  random draws) must not tell them apart: their score intervals overlap, each one's mean
  lies in the other's interval, and their order is not significant either way;
* **after**: the rank after play-offs, ``mu - 3 sigma`` against ``mu`` against a
  Plackett-Luce fit, on a model field of 16 bots over ``--after-seeds`` seeds
  (:mod:`bench.ranking_after`); printed once, after the formats.

Every schedule, deal and decision is seeded: the same ``--seeds`` give the same figures on
any machine (the worker count only changes the speed). ``--seeds 16`` made docs/performance.md's.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.ladder import DEFAULT_FORMAT, FORMATS, LADDER, TABLE_SIZE, play_all
from bench.ladder_truth import load_truth
from bench.ranking_after import run_after
from referee.ranking.intervals import deal_scores, order_confidence, score_intervals
from referee.ranking.playoff import plan_round
from referee.ranking.ratings import Rater, make_environment, rate
from referee.specs import MatchSpec, PlayoffSettings, RatingSettings, StoredMatch
from referee.tournament.deals import deal_seed
from referee.tournament.design import design_size
from referee.tournament.scheduler import DUPLICATE_MODES, Duplicate, round_robin

SECRET = hashlib.sha256(b"arschloch-referee ranking bench").digest()
TARGET_TAU = 0.95


@dataclass(frozen=True)
class Plan:
    """How far each row is played in one format, in matches per bot (8 rungs at tables of
    4: a deal of the full round robin is 140 per bot, of the balanced tables 28)."""

    random_levels: tuple[int, ...]
    """(a) is measured at these."""
    deals: int
    """(b): deals of the round robin."""
    playoff_levels: tuple[float, ...]
    """(c): play-off matches per bot on top of the round robin's first deal, measured at
    these; the last is the budget."""
    balanced_deals: int
    """(b2): deals of the balanced tables."""
    start_deals: int
    """(c2): deals of the balanced tables before the play-offs."""
    balanced_levels: tuple[int, ...]
    """(c2) is measured at these (matches per bot in all); the last is the budget."""


FORMAT_TITLES = {
    "to-15": "matches to 15 points (the arschloch preset)",
    "one-round": "one-round matches (arschloch, rounds = 1)",
}

PLANS = {
    "to-15": Plan(
        random_levels=(70, 140, 210, 280, 350, 420),
        deals=2,
        playoff_levels=(0, 17.5, 35, 70, 105, 140),
        balanced_deals=10,
        start_deals=2,
        balanced_levels=(28, 56, 84, 112, 140, 175, 210, 245, 280),
    ),
    "one-round": Plan(
        random_levels=(140, 280, 420, 560, 700, 840, 1120, 1400, 1680, 2100),
        deals=6,
        playoff_levels=(0, 70, 140, 210, 280, 420, 560, 700),
        balanced_deals=30,
        start_deals=5,
        balanced_levels=(140, 210, 280, 350, 420, 560, 700, 840),
    ),
}
"""Each format's :class:`Plan`: one-round matches carry less information each, so every row
goes further."""


def kendall_tau(order: Sequence[str], truth: Sequence[str]) -> float:
    """Kendall's tau between ``order`` and the true order (restricted to the same names)."""
    rank = {name: i for i, name in enumerate(n for n in truth if n in set(order))}
    pairs = list(itertools.combinations(order, 2))
    concordant = sum(rank[a] < rank[b] for a, b in pairs)
    return (2 * concordant - len(pairs)) / len(pairs)


def published_order(matches: Sequence[StoredMatch], names: Sequence[str]) -> list[str]:
    """The leaderboard's order of these matches, as ``referee leaderboard`` ranks it."""
    return [r.name for r in rate(matches, names, env=make_environment())]


@dataclass
class Curve:
    """Tau by matches per bot: one list of ``(matches per bot, tau)`` per seed."""

    runs: list[list[tuple[float, float]]] = field(default_factory=list)

    def taus_at(self, level: float) -> list[float]:
        """Each seed's tau as published with at most ``level`` matches per bot."""
        return [[tau for per_bot, tau in run if per_bot <= level + 1e-9][-1] for run in self.runs]

    def at(self, level: float) -> float:
        taus = self.taus_at(level)
        return sum(taus) / len(taus)

    def error(self, level: float) -> float:
        """Standard error of :meth:`at` over seeds."""
        taus = self.taus_at(level)
        if len(taus) < 2:
            return math.nan
        mean = sum(taus) / len(taus)
        return math.sqrt(sum((t - mean) ** 2 for t in taus) / (len(taus) - 1) / len(taus))


@dataclass
class Points:
    """One seed's taus, step by step: of the published order (TrueSkill ``mu - 3 sigma``),
    and of the order by ``mu`` alone (a diagnostic: where a schedule plays some bots far
    more than others, as play-offs do, ``- 3 sigma`` penalises the ones it played less)."""

    published: list[tuple[float, float]] = field(default_factory=list)
    by_mu: list[tuple[float, float]] = field(default_factory=list)
    rater: Rater = field(default_factory=Rater, repr=False, compare=False)
    """Points are mostly added for growing prefixes of one list: rated from the last."""

    def add(
        self,
        per_bot: float,
        matches: Sequence[StoredMatch],
        names: Sequence[str],
        truth: Sequence[str],
    ) -> None:
        ratings = self.rater.rate(matches, names, env=make_environment())
        self.published.append((per_bot, kendall_tau([r.name for r in ratings], truth)))
        ordered = sorted(ratings, key=lambda r: (not r.rated, -r.mu, r.name))
        self.by_mu.append((per_bot, kendall_tau([r.name for r in ordered], truth)))

    def until(self, steps: int) -> Points:
        return Points(self.published[:steps], self.by_mu[:steps])


def random_tables(
    seed: int,
    rates: dict[str, float],
    truth: Sequence[str],
    levels: Sequence[int],
    workers: int,
    fmt: str = DEFAULT_FORMAT,
) -> Points:
    """(a): random tables, independent deals; tau at each of ``levels`` matches per bot."""
    names = sorted(rates)
    rng = random.Random(f"random tables {seed}")
    specs = []
    for i in range(max(levels) * len(names) // TABLE_SIZE):
        table = tuple(rng.sample(names, TABLE_SIZE))
        cards = deal_seed(SECRET, "random", seed, i)
        key = f"a/{seed}/{i:06d}"
        specs.append(
            MatchSpec(key=key, table=table, deal=0, rotation=0, deal_seed=cards, match_seed=cards)
        )
    matches = play_all(specs, rates, workers=workers, fmt=fmt)
    points = Points()
    for level in levels:
        points.add(float(level), matches[: level * len(names) // TABLE_SIZE], names, truth)
    return points


def balanced_round_robin(
    seed: int,
    rates: dict[str, float],
    truth: Sequence[str],
    deals: int,
    workers: int,
    tables: str = "all",
    fmt: str = DEFAULT_FORMAT,
    measured: Sequence[int] | None = None,
    duplicate: Duplicate = "tables",
) -> tuple[Points, list[StoredMatch]]:
    """(b) or (b2): the round robin with ``deals`` deals, tau after each deal (or after
    each of ``measured``, deal counts); and its matches."""
    names = sorted(rates)
    specs = round_robin(names, TABLE_SIZE, deals, seed, SECRET, tables=tables, duplicate=duplicate)
    matches = play_all(specs, rates, workers=workers, fmt=fmt)
    points = Points()
    for d in measured or range(1, deals + 1):
        prefix = [m for m in matches if m.spec.deal < d]
        points.add(len(prefix) * TABLE_SIZE / len(names), prefix, names, truth)
    return points, matches


def with_playoffs(
    seed: int,
    rates: dict[str, float],
    truth: Sequence[str],
    start: list[StoredMatch],
    budget: int,
    workers: int,
    fmt: str = DEFAULT_FORMAT,
    levels: Sequence[float] = (),
    duplicate: Duplicate = "tables",
) -> tuple[Points, str]:
    """(c): play-off rounds after ``start`` until settled or ``budget`` is spent; and how
    the play-offs ended. Tau is taken as the leaderboard would publish it at each of
    ``levels`` (matches per bot: after the last round that fits), and at the end."""
    names = sorted(rates)
    settings = PlayoffSettings(top=len(names), until=TARGET_TAU, budget=budget)
    matches = list(start)
    specs = [m.spec for m in matches]
    ends = [len(matches)]  # the number of matches after each round
    state = "open"
    rater = Rater()  # each round rates only the results new since the last
    for round_no in itertools.count():
        plan = plan_round(
            round_no,
            matches,
            specs,
            names,
            settings=settings,
            ratings=RatingSettings(),
            rules=None,
            table_size=TABLE_SIZE,
            seed=seed,
            secret=SECRET,
            duplicate=duplicate,
            rater=rater,
        )
        if not plan.specs:
            state = plan.state
            break
        specs += plan.specs
        matches += play_all(plan.specs, rates, workers=workers, fmt=fmt)
        ends.append(len(matches))
    # Rating is most of the cost: only at the start, the end, and the last round end that
    # fits each level.
    shown = {ends[0], ends[-1]}
    for level in levels:
        fitting = [end for end in ends if end * TABLE_SIZE / len(names) <= level + 1e-9]
        shown.update(fitting[-1:])
    points = Points()
    for end in sorted(shown):
        points.add(end * TABLE_SIZE / len(names), matches[:end], names, truth)
    return points, state


def twins(
    seed: int,
    workers: int,
    deals: int = 6,
    fmt: str = DEFAULT_FORMAT,
    duplicate: Duplicate = "tables",
) -> dict[str, Any]:
    """A round robin of 5 rungs, two of them copies of one rung: are the twins told apart?

    6 deals make every table exactly balanced (:data:`referee.tournament.seating.BALANCED_DEALS`).
    """
    ladder = sorted(LADDER)
    twin_of, twin = ladder[2], f"{ladder[2]}-twin"
    rates = {name: LADDER[name] for name in ladder[:4]}
    rates[twin] = LADDER[twin_of]
    names = sorted(rates)
    specs = round_robin(names, TABLE_SIZE, deals, seed, SECRET, duplicate=duplicate)
    matches = play_all(specs, rates, workers=workers, fmt=fmt)
    by_deal = deal_scores(matches)
    intervals = score_intervals(by_deal)
    a, b = intervals[twin_of], intervals[twin]
    pair = order_confidence(by_deal, twin_of, twin)
    return {
        "overlap": a.low <= b.high and b.low <= a.high,
        "means_inside": a.contains(b.mean) and b.contains(a.mean),
        "not_significant": not pair.significant(TARGET_TAU)
        and not order_confidence(by_deal, twin, twin_of).significant(TARGET_TAU),
        "means": (round(a.mean, 3), round(b.mean, 3)),
        "confidence": round(pair.confidence, 3),
    }


def duplicate_effect(
    seed: int, rates: dict[str, float], truth: Sequence[str], workers: int, fmt: str
) -> tuple[list[float], list[float], list[float]]:
    """What shared deals cancel: one deal of the round robin, played with its deals shared
    across disjoint tables, shared by each table deal's rotations, and with fresh cards for
    every match, same tables and seats. Returns, for each, the differences of mean score
    between true neighbours."""
    names = sorted(rates)
    specs = round_robin(names, TABLE_SIZE, 1, seed, SECRET)
    rotations = round_robin(names, TABLE_SIZE, 1, seed, SECRET, duplicate="rotations")
    fresh = [
        spec.model_copy(
            update={
                "deal_seed": deal_seed(SECRET, "fresh", seed, i),
                "match_seed": deal_seed(SECRET, "fresh", seed, i),
            }
        )
        for i, spec in enumerate(specs)
    ]
    out = []
    for played in (specs, rotations, fresh):
        scores = score_intervals(deal_scores(play_all(played, rates, workers=workers, fmt=fmt)))
        out.append([scores[a].mean - scores[b].mean for a, b in itertools.pairwise(truth)])
    return out[0], out[1], out[2]


@dataclass
class Duplicates:
    """:func:`duplicate_effect` over seeds: each neighbour difference's spread from seed to
    seed, duplicate against fresh cards."""

    duplicate: list[list[float]] = field(default_factory=list)
    """Deals shared across disjoint tables (the referee's default)."""
    rotations: list[list[float]] = field(default_factory=list)
    """One deal for every rotation of a table deal."""
    fresh: list[list[float]] = field(default_factory=list)

    def spread(self, runs: list[list[float]]) -> float:
        """Root mean over neighbour pairs of the variance across seeds."""
        pairs = list(zip(*runs, strict=True))
        variances = [sum((x - sum(p) / len(p)) ** 2 for x in p) / (len(p) - 1) for p in pairs]
        return math.sqrt(sum(variances) / len(variances))

    def line(self) -> str:
        if len(self.duplicate) < 2:
            return "  duplicate deals: need 2 seeds or more"
        dup, rot = self.spread(self.duplicate), self.spread(self.rotations)
        fresh = self.spread(self.fresh)
        return (
            f"  shared deals ({len(self.duplicate)} round robins of 1 deal, each played three "
            f"ways): neighbours' score difference varies from seed to seed {fresh:.4f} with "
            f"fresh cards for every match, {dup:.4f} with deals shared across tables "
            f"({fresh**2 / dup**2:.2f}x less variance), {rot:.4f} with deals shared by the "
            f"rotations of a table ({fresh**2 / rot**2:.2f}x less)"
        )


@dataclass
class Row:
    """One way of playing the ladder: its label, tau curve, the levels it is shown at, and
    (for the rows with play-offs) how each seed's play-offs ended."""

    key: str
    label: str
    curve: Curve
    levels: tuple[float, ...]
    states: list[str] = field(default_factory=list)
    by_mu: Curve = field(default_factory=Curve)
    """Tau of the order by TrueSkill ``mu`` alone (a diagnostic, see :class:`Points`)."""

    def add(self, points: Points, state: str | None = None) -> None:
        self.curve.runs.append(points.published)
        self.by_mu.runs.append(points.by_mu)
        if state is not None:
            self.states.append(state)

    def needs(self, curve: Curve | None = None) -> float | None:
        """The fewest matches per bot (of ``levels``) at which mean tau >= the target."""
        shown = curve or self.curve
        return next((lv for lv in self.levels if shown.at(lv) >= TARGET_TAU), None)

    def text(self, curve: Curve | None = None) -> str:
        shown = curve or self.curve
        return ", ".join(f"{lv:g}: {shown.at(lv):.3f}" for lv in self.levels)


@dataclass
class Results:
    """Every figure of a run (see the module docstring)."""

    fmt: str
    bots: int
    seeds: int
    rows: dict[str, Row]
    twins: list[dict[str, Any]]
    duplicates: Duplicates | None = None

    @property
    def a(self) -> Curve:
        return self.rows["a"].curve

    @property
    def b(self) -> Curve:
        return self.rows["b"].curve

    @property
    def c(self) -> Curve:
        return self.rows["c"].curve

    def target_met(self, key: str) -> bool:
        """Whether row ``key`` reaches the target tau with at most half of what (a) needs."""
        need_a, need = self.rows["a"].needs(), self.rows[key].needs()
        return need_a is not None and need is not None and need <= need_a / 2

    def largest_error(self) -> float:
        errors = [row.curve.error(level) for row in self.rows.values() for level in row.levels]
        return max((e for e in errors if not math.isnan(e)), default=math.nan)

    def twins_summary(self) -> str:
        """How often each twins check held, and the mean difference (a bias would show)."""
        n = len(self.twins)
        if not n:
            return "  twins: not measured"
        differences = [t["means"][0] - t["means"][1] for t in self.twins]
        mean = sum(differences) / n
        spread = math.sqrt(sum((d - mean) ** 2 for d in differences) / max(1, n - 1))
        return (
            f"  twins ({n} round robins): intervals overlap in "
            f"{sum(t['overlap'] for t in self.twins)}/{n}, each mean inside the other's "
            f"interval in {sum(t['means_inside'] for t in self.twins)}/{n}, order not "
            f"significant either way in {sum(t['not_significant'] for t in self.twins)}/{n}; "
            f"mean difference {mean:+.3f} (seed to seed {spread:.3f})"
        )

    def playoff_summary(self, row: Row) -> str:
        final = [run[-1][0] for run in row.curve.runs]
        return (
            f"      play-offs ended at {sum(final) / len(final):.0f} matches per bot on average "
            f"({row.states.count('settled')} of {len(row.states)} settled, the rest at the "
            "budget)"
        )

    def lines(self) -> list[str]:
        def needs(row: Row, curve: Curve | None = None) -> str:
            need = row.needs(curve)
            return f"{need:g}" if need else f"more than {max(row.levels):g}"

        heads = {key: f"({key}) {row.label}:" for key, row in self.rows.items()}
        width = max((len(head) for head in heads.values()), default=0)
        out = [
            f"ranking, {FORMAT_TITLES[self.fmt]}: {self.bots} ladder bots at tables of "
            f"{TABLE_SIZE}"
            + (
                f"; Kendall tau of the published order vs the truth by matches per bot, mean "
                f"of {self.seeds} seeds (standard errors up to {self.largest_error():.3f})"
                if self.rows
                else ""
            ),
        ]
        for key, row in self.rows.items():
            out.append(f"  {heads[key]:<{width}} {row.text()}")
            out.append(f"      {'by mu alone:':<{width - 4}} {row.text(row.by_mu)}")
            if row.states:
                out.append(self.playoff_summary(row))
        a = self.rows.get("a")
        for key in ("c", "c2"):
            if a is not None and key in self.rows:
                out.append(
                    f"  tau >= {TARGET_TAU}: (a) needs {needs(a)} matches per bot, ({key}) "
                    f"{needs(self.rows[key])}; target ({key}) <= half of (a): "
                    f"{'met' if self.target_met(key) else 'NOT met'} (by mu alone: (a) "
                    f"{needs(a, a.by_mu)}, ({key}) {needs(self.rows[key], self.rows[key].by_mu)})"
                )
        if self.duplicates is not None:
            out.append(self.duplicates.line())
        out.append(self.twins_summary())
        return out


def run(
    seeds: int = 4,
    workers: int = 2,
    *,
    fmt: str = DEFAULT_FORMAT,
    rates: dict[str, float] | None = None,
    truth: Sequence[str] | None = None,
    a_levels: Sequence[int] | None = None,
    deals: int | None = None,
    budget_per_bot: float | None = None,
    balanced_deals: int | None = None,
    start_deals: int | None = None,
    total_per_bot: int | None = None,
    with_twins: bool = True,
    rows: Sequence[str] = ("a", "b", "c", "b2", "c2", "dup"),
    progress: Callable[[str], None] | None = None,
    duplicate: Duplicate = "tables",
) -> Results:
    """Measure the ``rows`` and the twins over ``seeds`` seeds in format ``fmt`` (see the
    module docstring). Every figure left out comes from the format's :class:`Plan`;
    ``rates`` and ``truth`` default to the ladder and its stored true order in ``fmt``.
    """
    plan = PLANS[fmt]
    rates = dict(rates or LADDER)
    truth = list(truth or load_truth(fmt)["order"])
    a_levels = tuple(a_levels or plan.random_levels)
    deals = deals or plan.deals
    budget_per_bot = plan.playoff_levels[-1] if budget_per_bot is None else budget_per_bot
    playoff_levels = sorted(
        {x for x in plan.playoff_levels if x < budget_per_bot} | {budget_per_bot}
    )
    balanced_deals = balanced_deals or plan.balanced_deals
    start_deals = start_deals or plan.start_deals
    total_per_bot = total_per_bot or plan.balanced_levels[-1]
    n = len(rates)
    full_deal = math.comb(n - 1, TABLE_SIZE - 1) * TABLE_SIZE
    design_deal = design_size(n, TABLE_SIZE).per_bot * TABLE_SIZE
    if design_size(n, TABLE_SIZE).tables >= math.comb(n, TABLE_SIZE):
        design_deal = full_deal
    start = design_deal * start_deals
    # (b2) is shown at up to 10 deal counts, evenly spread.
    step = max(1, balanced_deals // 10)
    balanced_measured = sorted({*range(step, balanced_deals + 1, step), balanced_deals})
    c2_levels = (start, *(x for x in plan.balanced_levels if start < x <= total_per_bot))
    table: dict[str, Row] = {
        "a": Row("a", "random tables, independent deals", Curve(), tuple(map(float, a_levels))),
        "b": Row(
            "b",
            "balanced duplicate round robin",
            Curve(),
            tuple(float(full_deal * d) for d in range(1, deals + 1)),
        ),
        "c": Row(
            "c",
            "(b) 1 deal + play-offs",
            Curve(),
            tuple(float(full_deal + x) for x in playoff_levels),
        ),
        "b2": Row(
            "b2",
            "(b) on balanced tables",
            Curve(),
            tuple(float(design_deal * d) for d in balanced_measured),
        ),
        "c2": Row(
            "c2",
            f"(b2) {start_deals} deal{'s' if start_deals != 1 else ''} + play-offs",
            Curve(),
            tuple(float(x) for x in c2_levels),
        ),
    }
    duplicates = Duplicates() if "dup" in rows else None
    started = time.monotonic()
    for seed in range(1, seeds + 1):
        if duplicates is not None:
            dup, rot, fresh = duplicate_effect(seed, rates, truth, workers, fmt)
            duplicates.duplicate.append(dup)
            duplicates.rotations.append(rot)
            duplicates.fresh.append(fresh)
        if "a" in rows:
            table["a"].add(random_tables(seed, rates, truth, a_levels, workers, fmt))
        if "b" in rows or "c" in rows:
            points, matches = balanced_round_robin(
                seed, rates, truth, deals, workers, fmt=fmt, duplicate=duplicate
            )
            table["b"].add(points)
            if "c" in rows:
                first = [m for m in matches if m.spec.deal == 0]
                budget = int(budget_per_bot * n // TABLE_SIZE)
                levels = table["c"].levels
                table["c"].add(
                    *with_playoffs(
                        seed, rates, truth, first, budget, workers, fmt, levels, duplicate
                    )
                )
        if "b2" in rows or "c2" in rows:
            most = max(balanced_deals if "b2" in rows else 0, start_deals)
            measured = [d for d in balanced_measured if d <= most]
            points, matches = balanced_round_robin(
                seed,
                rates,
                truth,
                most,
                workers,
                tables="balanced",
                fmt=fmt,
                measured=measured,
                duplicate=duplicate,
            )
            table["b2"].add(points)
            if "c2" in rows:
                begin = [m for m in matches if m.spec.deal < start_deals]
                budget = (total_per_bot * n - start * n) // TABLE_SIZE
                levels = table["c2"].levels
                table["c2"].add(
                    *with_playoffs(
                        seed, rates, truth, begin, budget, workers, fmt, levels, duplicate
                    )
                )
        if progress is not None:
            progress(f"{fmt}: seed {seed}/{seeds} done, {time.monotonic() - started:.0f} s")
    return Results(
        fmt=fmt,
        bots=n,
        seeds=seeds,
        rows={key: row for key, row in table.items() if row.curve.runs},
        twins=[twins(seed, workers, fmt=fmt, duplicate=duplicate) for seed in range(1, seeds + 1)]
        if with_twins
        else [],
        duplicates=duplicates,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--format",
        choices=[*FORMATS, "both"],
        default="both",
        help="the ladder's match length (default: both, one after the other)",
    )
    parser.add_argument(
        "--rows",
        default="a,b,c,b2,c2,dup,after",
        help="the ways of playing to measure, comma-separated, dup for what duplicate "
        "deals cancel, and after for the rank after play-offs (default: all)",
    )
    parser.add_argument(
        "--after-seeds",
        type=int,
        default=64,
        help="seeds of the rank-after-play-offs row (default: 64)",
    )
    parser.add_argument(
        "--start-deals",
        type=int,
        default=None,
        help="(c2): deals of the balanced tables before the play-offs (default: the format's)",
    )
    parser.add_argument("--no-twins", action="store_true", help="skip the twins check")
    parser.add_argument(
        "--duplicate",
        choices=DUPLICATE_MODES,
        default="tables",
        help="how the round robins share deals (default: tables, the referee's default)",
    )
    args = parser.parse_args(argv)
    rows = tuple(args.rows.split(","))
    formats = list(FORMATS) if args.format == "both" else [args.format]
    if not set(rows) - {"after"}:
        formats = []  # the row after play-offs alone
    for i, fmt in enumerate(formats):
        results = run(
            args.seeds,
            args.workers,
            fmt=fmt,
            rows=rows,
            start_deals=args.start_deals,
            with_twins=not args.no_twins,
            progress=lambda line: print("  " + line, file=sys.stderr),
            duplicate=args.duplicate,
        )
        if i:
            print()
        print("\n".join(results.lines()), flush=True)
    if "after" in rows:
        if formats:
            print()
        after = run_after(args.after_seeds, lambda line: print("  " + line, file=sys.stderr))
        print("\n".join(after.lines()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
