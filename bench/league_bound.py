"""What any league could gain on the league benchmark's field: an oracle bound, and tables
designs compared on a calibrated surrogate.

``python -m bench.league_bound [--bots 200] [--seeds 6] [--budget 1000] [--designs ...]
[--calibration-bots 200] [--skip-bound] [--skip-designs]`` needs numpy and scipy (in the
``dev`` extra, not dependencies of the referee). It answers the question
:mod:`bench.league_bench` leaves open: matchmaking there is nowhere near half of random
tables' matches to Kendall tau 0.9; could any design be?

**Calibration.** A field of :func:`bench.league_bench.field_of` (``--calibration-bots``;
every size draws from the same law) plays random tables over
the real engine (``--calibrate`` matches per bot, one-round matches at tables of 4, each
table's deal in every seat rotation, as the league plays), and a Bradley-Terry fit of every
pair of places (:func:`bench.league_bench.bradley_terry`: Plackett-Luce's pairwise
marginals are exactly Bradley-Terry) gives each bot's Plackett-Luce log-strength, smoothed
by a cubic in its dilution. Measured there too: how a table's four rotations vary
together. The league deals every rotation of a table a deal of its own (``duplicate =
"tables"``: each deal is shared with other tables of the batch, never within one), so a
table's four matches vary as four independent matches, and the surrogate draws them
independently. (Rotations that share one deal, ``duplicate = "rotations"``, vary less: the
shared cards cancel part of the luck; ``python -m bench.league_bench --rotation-check``
measures both.)

**The bound.** Whatever the tables, a match of four gives each seat at most ``c_max`` units
of Fisher information about its own strength (at equal strengths, the most: checked
against random tables), and the difference of two estimated strengths has a variance at
least ``4 / (J_i + J_j + 2 x_ij)`` (Cramér-Rao for the difference, every other strength
known: optimistic), where ``J_i`` is the information bot ``i`` gathered and ``x_ij`` what it
shares with ``j`` (their direct meetings). A pair is misordered with probability
``Phi(-|s_i - s_j| / sd)``, so the expected share of discordant pairs of a design is a
function of its ``x``; tau 0.9 is 5 % of pairs discordant. The bound minimises that over
every non-negative ``x`` (mirror descent) for a budget of matches per bot: allocation and
opponents both free, as an oracle knowing the truth would choose them, and no constraint
from tables, batches or fairness. Random tables' expected information, in the same model,
gives their matches to the same tau; the ratio is what the best possible design can save.

**Designs.** The surrogate (Plackett-Luce draws from the calibrated strengths, the bench's
batches: ``round(32 n / 1000)`` disjoint tables, each played in 4 rotations) plays designs
rated by the same Bradley-Terry fit, so every design is read the same way: ``random``
(random tables), ``equal`` (random tables of the least played: equal counts), ``density``
(random opponents, each bot played in proportion to the density of the field around it to
the 2/3, the allocation the bound's model favours), ``window`` (the least played, each table
drawn within a quarter of the field in the true order: the oracle tables of
:mod:`bench.league_bench`), ``neighbours`` (tables of consecutive bots in the true order,
shifted each batch) and ``active`` (no oracle: bots chosen by the estimated chance that they
are misordered with anyone, weighted by what a table would shrink it, tables of estimated
neighbours). Printed: mean tau over ``--seeds`` fields at a few budgets, and the matches per
bot each needs to reach tau 0.8, 0.85, 0.88 and 0.9 on its mean curve.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from typing import Any

try:
    import numpy as np
    from scipy.stats import kendalltau, norm
except ImportError:  # pragma: no cover - optional
    np = None

from bench.ladder import TABLE_SIZE, play_all
from bench.league_bench import FORMAT, SECRET, bench_settings, bradley_terry, field_of
from referee.tournament.scheduler import league_batch

LEVELS = (0.8, 0.85, 0.88, 0.9)
DESIGNS = ("random", "equal", "density", "window", "neighbours", "active")


# ------------------------------------------------------------------------- calibration


def calibrate(bots: int, seed: int, per_bot: float) -> tuple[Any, Any]:
    """Random tables on the real engine; returns (dilutions, log-strengths smoothed by a
    cubic in the dilution) and prints the check of independent rotations."""
    from bench.league_bench import truth_of

    rates = field_of(bots, seed)
    names = sorted(rates)
    tables_per_batch = bench_settings(bots).batch
    dealt: dict[tuple[str, ...], int] = {}
    pairs: dict[tuple[str, str], list[int]] = {}
    scores: dict[str, list[float]] = {n: [] for n in names}
    by_table: dict[tuple[str, str], float] = {}
    batch = 0
    rng = np.random.default_rng(seed)
    seats = 0
    while seats / bots < per_bot:
        order = list(rng.permutation(names))
        tables = [
            tuple(sorted(order[i * TABLE_SIZE : (i + 1) * TABLE_SIZE]))
            for i in range(tables_per_batch)
        ]
        specs = league_batch(batch, tables, dealt, seed=seed, secret=SECRET, duplicate="tables")
        for table in tables:
            dealt[table] = dealt.get(table, 0) + 1
        for match in play_all(specs, rates, fmt=FORMAT):
            table_key = match.spec.key.rsplit("/r", 1)[0]
            for i, ahead in enumerate(match.seats):
                score = (TABLE_SIZE - ahead.place) / (TABLE_SIZE - 1)
                scores[ahead.name].append(score)
                key = (table_key, ahead.name)
                by_table[key] = by_table.get(key, 0.0) + score
                for behind in match.seats[i + 1 :]:
                    a, b = sorted((ahead.name, behind.name))
                    pairs.setdefault((a, b), [0, 0])[0 if a == ahead.name else 1] += 1
        batch += 1
        seats += len(specs) * TABLE_SIZE
    means = {n: float(np.mean(scores[n])) for n in names}
    single = np.var([s - means[n] for n in names for s in scores[n]])
    totals = np.var([v - TABLE_SIZE * means[n] for (_, n), v in by_table.items()])
    print(
        f"  calibration: {sum(map(len, scores.values())) // TABLE_SIZE:,} real matches, "
        f"{per_bot:.0f} per bot; a table's {TABLE_SIZE} rotations (a deal each): variance of "
        f"a bot's total {totals:.3f}, {TABLE_SIZE} independent matches "
        f"{TABLE_SIZE * single:.3f}"
    )
    strengths = bradley_terry(pairs, names, iterations=300)
    dilution = np.array([rates[n] for n in names])
    fitted = np.array([strengths[n] for n in names])
    coef = np.polyfit(dilution, fitted, 3)
    smooth = np.polyval(coef, dilution)
    truth = truth_of(rates)
    print(
        f"  log-strength = cubic in the dilution, coefficients {np.round(coef, 3).tolist()}; "
        f"fit residual sd {np.std(fitted - smooth):.3f}; strongest {smooth.max():+.2f}, "
        f"weakest {smooth.min():+.2f}, middle half "
        f"{np.percentile(smooth, 25):+.2f} to {np.percentile(smooth, 75):+.2f}; "
        f"true top: {truth[0]}"
    )
    return dilution, coef


# ------------------------------------------------------------------------------ bound


_PERMUTATIONS = list(itertools.permutations(range(TABLE_SIZE)))


def table_information(strengths: Any) -> Any:
    """The Fisher information matrix of one Plackett-Luce ranking of a table."""
    w = np.exp(strengths)
    info = np.zeros((len(w), len(w)))
    for perm in _PERMUTATIONS:
        prob, grad = 1.0, np.zeros(len(w))
        for k in range(len(w) - 1):
            rest = list(perm[k:])
            total = w[rest].sum()
            prob *= w[perm[k]] / total
            grad[perm[k]] += 1
            grad[rest] -= w[rest] / total
        info += prob * np.outer(grad, grad)
    return info


def discordant(joint: Any, shared: Any, gaps: Any) -> tuple[float, Any, Any]:
    """Expected discordant pairs under the bound (module docstring)."""
    spread = joint[:, None] + joint[None, :] + 2 * shared
    z = gaps * np.sqrt(spread) / 2
    upper = np.triu_indices(len(joint), 1)
    return float(norm.sf(z[upper]).sum()), spread, z


def best_design(gaps: Any, budget: float, iterations: int) -> float:
    """The fewest expected discordant pairs of any information design of ``budget`` total
    information (mirror descent over the shared information of every pair)."""
    n = gaps.shape[0]
    shared = np.ones((n, n))
    np.fill_diagonal(shared, 0)
    shared *= budget / (shared.sum() / 2)
    for _ in range(iterations):
        _, spread, z = discordant(shared.sum(1), shared, gaps)
        g = -norm.pdf(z) * gaps / (4 * np.sqrt(spread))
        np.fill_diagonal(g, 0)
        total = g.sum(1)
        grad = total[:, None] + total[None, :] + 2 * g
        shared *= np.exp(-0.5 * grad / np.abs(grad).max())
        np.fill_diagonal(shared, 0)
        shared *= budget / (shared.sum() / 2)
    return discordant(shared.sum(1), shared, gaps)[0]


def bound(strengths: Any, iterations: int) -> None:
    n = len(strengths)
    rng = np.random.default_rng(1)
    equal = table_information(np.zeros(TABLE_SIZE))[0, 0]
    seen = max(
        table_information(rng.choice(strengths, TABLE_SIZE, replace=False))[0, 0]
        for _ in range(2000)
    )
    c_max = max(equal, seen)
    joint, shared, tables = np.zeros(n), np.zeros((n, n)), np.zeros(n)
    for _ in range(8000):  # random tables' expected information per match
        seats = rng.choice(n, TABLE_SIZE, replace=False)
        info = table_information(strengths[seats])
        joint[seats] += np.diag(info)
        tables[seats] += 1
        for a, b in itertools.permutations(range(TABLE_SIZE), 2):
            shared[seats[a], seats[b]] -= info[a, b]
    joint, shared = joint / tables, shared / tables.mean()
    print(
        f"  information per seat about its own strength: at most {c_max:.4f} (equal "
        f"strengths {equal:.4f}), random tables of this field {joint.mean():.4f}"
    )
    gaps = np.abs(strengths[:, None] - strengths[None, :])
    pairs = n * (n - 1) / 2
    for level in LEVELS:
        target = (1 - level) / 2 * pairs
        low, high = 1.0, 100_000.0
        for _ in range(40):
            m = (low * high) ** 0.5
            low, high = (
                (m, high) if discordant(joint * m, shared * m, gaps)[0] > target else (low, m)
            )
        random_m = high
        low, high = 1.0, random_m
        for _ in range(12):
            m = (low + high) / 2
            if best_design(gaps, n * m * c_max / 2, iterations) > target:
                low = m
            else:
                high = m
        print(
            f"  tau {level}: random tables {random_m:.0f} matches per bot in this model; "
            f"the best possible design {high:.0f}: ratio {high / random_m:.2f}",
            flush=True,
        )


# ---------------------------------------------------------------------------- designs


def _fit(counts: Any, wins: Any, start: Any, iterations: int = 40) -> Any:
    """Bradley-Terry by MM, numpy (the same prior as :func:`bench.league_bench.bradley_terry`)."""
    w = start.copy()
    won = wins.sum(1) + 0.5
    for _ in range(iterations):
        w = won / ((counts / (w[:, None] + w[None, :])).sum(1) + 1.0 / (w + 1.0))
        w /= np.exp(np.log(w).mean())
    return w


def play_design(
    design: str, dilution: Any, coef: Any, seed: int, budget: float, check: float
) -> list[tuple[float, float]]:
    """One surrogate league; ``(matches per bot, tau of the fit)`` every ``check``."""
    n = len(dilution)
    rng = np.random.default_rng([seed, DESIGNS.index(design)])
    strengths = np.polyval(coef, dilution)
    rank = np.empty(n, int)
    rank[np.argsort(-strengths)] = np.arange(n)
    density = norm.pdf(strengths, strengths.mean(), strengths.std())
    share = density ** (2 / 3) if design == "density" else np.ones(n)
    share = share / share.sum()
    tables_per_batch = bench_settings(n).batch
    seated = tables_per_batch * TABLE_SIZE
    counts, wins, played = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n)
    w, points, seats, next_check = np.ones(n), [], 0, check
    while seats / n < budget:
        jitter = rng.random(n) * 1e-3
        if design == "random":
            tables = rng.permutation(n)[:seated].reshape(-1, TABLE_SIZE)
        elif design in ("equal", "density"):
            deficit = share * (seats + seated * TABLE_SIZE) - played * TABLE_SIZE + jitter
            pick = np.argsort(-deficit)[:seated]
            tables = rng.permutation(pick).reshape(-1, TABLE_SIZE)
        elif design == "neighbours":
            pick = np.argsort(played + jitter)[:seated]
            pick = np.roll(pick[np.argsort(rank[pick])], rng.integers(0, TABLE_SIZE))
            tables = pick.reshape(-1, TABLE_SIZE)
        elif design == "window":
            pick = [int(i) for i in np.argsort(played + jitter)[:seated]]
            free, rows = set(pick), []
            for i in pick:
                if i not in free:
                    continue
                free.discard(i)
                near = [j for j in sorted(free) if abs(rank[j] - rank[i]) <= n // 4]
                if len(near) < TABLE_SIZE - 1:
                    near = sorted(free, key=lambda j: abs(rank[j] - rank[i]))[: TABLE_SIZE - 1]
                opponents = [int(j) for j in rng.choice(near, TABLE_SIZE - 1, replace=False)]
                free.difference_update(opponents)
                rows.append([i, *opponents])
            tables = np.array(rows)
        else:  # active
            logw = np.log(w)
            p = w[:, None] / (w[:, None] + w[None, :])
            info = (counts * p * (1 - p)).sum(1) + 0.25
            spread = np.sqrt(1 / info[:, None] + 1 / info[None, :])
            z = np.abs(logw[:, None] - logw[None, :]) / spread
            mass = norm.sf(z).sum(1) - 0.5
            gain = mass * (1 - np.sqrt(info / (info + TABLE_SIZE * 0.6))) + jitter * 1e-6
            pick = np.argsort(-gain)[:seated]
            pick = np.roll(pick[np.argsort(-logw[pick])], rng.integers(0, TABLE_SIZE))
            tables = pick.reshape(-1, TABLE_SIZE)
        for table in tables:
            for _ in range(TABLE_SIZE):  # the rotations: a deal each, independent
                order = table[np.argsort(-(strengths[table] + rng.gumbel(size=TABLE_SIZE)))]
                for a in range(TABLE_SIZE):
                    for b in range(a + 1, TABLE_SIZE):
                        wins[order[a], order[b]] += 1
                        counts[order[a], order[b]] += 1
                        counts[order[b], order[a]] += 1
            played[table] += TABLE_SIZE
        seats += seated * TABLE_SIZE
        if seats / n >= next_check:
            w = _fit(counts, wins, w)
            points.append((seats / n, kendalltau(np.log(w), -dilution).statistic))
            next_check += check
    return points


def designs(coef: Any, names: Sequence[str], seeds: int, budget: float, bots: int) -> None:
    check = 25.0
    grid = np.arange(check, budget + 1, check)
    curves: dict[str, Any] = {}
    print(
        f"  surrogate: {bots} bots, {seeds} fields, Bradley-Terry order; mean tau at "
        "matches per bot:"
    )
    shown = [g for g in grid if g in (100, 200, 400, 600, 800, 1000)]
    print("  design      " + "".join(f"{g:>8.0f}" for g in shown) + "   (standard error)")
    for design in names:
        taus = []
        for seed in range(seeds):
            rates = field_of(bots, seed)
            dil = np.array([rates[n] for n in sorted(rates)])
            points = play_design(design, dil, coef, seed, budget + check / 2, check)
            taus.append(np.interp(grid, [p for p, _ in points], [t for _, t in points]))
        curves[design] = np.mean(taus, 0)
        error = float(np.mean(np.std(taus, 0))) / np.sqrt(seeds)
        cells = "".join(f"{curves[design][list(grid).index(g)]:>8.3f}" for g in shown)
        print(f"  {design:<12}{cells}   ({error:.3f})", flush=True)
    print("  matches per bot to tau (on the mean curves), ratio to random tables:")
    print("  design      " + "".join(f"{level:>14}" for level in LEVELS))
    base = {level: _needed(grid, curves["random"], level) for level in LEVELS}
    for design in names:
        cells = []
        for level in LEVELS:
            m = _needed(grid, curves[design], level)
            ref = base[level]
            text = f"> {budget:.0f}" if m is None else f"{m:.0f}"
            if m is not None and ref is not None and design != "random":
                text += f" ({m / ref:.2f})"
            cells.append(f"{text:>14}")
        print(f"  {design:<12}" + "".join(cells))


def _needed(grid: Any, curve: Any, level: float) -> float | None:
    above = np.nonzero(curve >= level)[0]
    if len(above) == 0:
        return None
    i = int(above[0])
    if i == 0:
        return float(grid[0])
    return float(
        grid[i - 1] + (level - curve[i - 1]) / (curve[i] - curve[i - 1]) * (grid[i] - grid[i - 1])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--budget", type=float, default=1000.0)
    parser.add_argument("--calibrate", type=float, default=480.0, help="real matches per bot")
    parser.add_argument(
        "--calibration-bots", type=int, default=200, help="the field calibrated on (same law)"
    )
    parser.add_argument("--designs", default=",".join(DESIGNS))
    parser.add_argument("--iterations", type=int, default=1500, help="of the bound's descent")
    parser.add_argument("--skip-bound", action="store_true")
    parser.add_argument("--skip-designs", action="store_true")
    args = parser.parse_args(argv)
    if np is None:
        print("League bound skipped: it needs numpy and scipy (pip install numpy scipy)")
        return 0
    names = [d for d in args.designs.split(",") if d]
    if "random" not in names or any(d not in DESIGNS for d in names):
        parser.error(f"--designs: a list of {', '.join(DESIGNS)}, random among them")
    print(f"League bound: {args.bots} bots of the league benchmark's field")
    _, coef = calibrate(args.calibration_bots, 0, args.calibrate)
    rates = field_of(args.bots, 0)
    dilution = np.array([rates[n] for n in sorted(rates)])
    if not args.skip_bound:
        bound(np.polyval(coef, dilution), args.iterations)
    if not args.skip_designs:
        designs(coef, names, args.seeds, args.budget, args.bots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
