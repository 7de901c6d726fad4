"""A league of bots of known strength, in process: does matchmaking pay, and how fast is the
coordinator?

``python -m bench.league_bench [--bots 1000] [--seeds 1] [--workers 1] [--budget 600]
[--throughput-results 20000] [--skip-simulation] [--skip-throughput]`` (``make bench`` runs
a smaller field: see :func:`run`).

**The field.** ``--bots`` ladder bots (:mod:`bench.ladder`: the heuristic sample bot diluted
with random legal plays, over the real engine, one-round matches of ``arschloch`` at tables
of 4), spread like a real field: a few far at the top (dilution 0 to 0.04: the heuristic
itself and nearly so, one bot in a hundred), the many close together in the middle
(dilution drawn from a normal law around 0.55, sd 0.2, kept within 0.12 and 1). The truth
is the order of the dilutions (more random plays, weaker: measured monotone by
:mod:`bench.ladder_truth` on the ladder's rungs, and by :func:`strength_check` here).

**Simulation.** Two leagues play the field batch by batch, exactly as ``referee league run``
plans and rates (the same :func:`~referee.ranking.matchmaking.plan_batch`,
:func:`~referee.tournament.scheduler.league_batch` for seats and shared deals,
:func:`~referee.ranking.incremental.settle_batch` for ratings; only the store and the
sandbox are left out), with the same batch size, one deal per table in every seat rotation:

* **matchmaking**: the league's own planner, default ``[league]`` knobs;
* **random tables**: each batch's disjoint tables drawn at random from the field.

After each batch, Kendall's tau between the published order (``mu - 3 sigma``) and the
truth. Reported: the matches per bot each needs to reach tau 0.9 (the first batch at
which it is reached and held at the next two checks), their ratio (target: matchmaking
needs at most half), and at matchmaking's budget, each one's tau and its top-10 accuracy:
how many of the true top 10 are in its top 10, and tau within the true top 10.

**Coordinator throughput.** A real league (store, ledger, planner, settling, events) of
``--bots`` entrants on an executor that plays nothing: each task's result is made up at
once (places drawn from the bots' strengths) with a 16 KiB log written where the worker
would write it, so all the time measured is the coordinator's: results stored (each with
its chain link, live ratings and records, in one transaction) and tables chosen per
second, each step's average cost, and the coordinator's resident memory as the run goes
(flat: nothing is kept from batch to batch). Target: at least 200 results a second.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import math
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.ladder import TABLE_SIZE, play_all
from referee.executors.base import (
    AttemptEvent,
    MatchFinished,
    MatchStarted,
    MatchTask,
    SandboxPlan,
)
from referee.ranking.incremental import settle_batch
from referee.ranking.matchmaking import LeagueState, Standing, plan_batch
from referee.ranking.ratings import make_environment
from referee.results import MatchResult, SeatResult
from referee.specs import StoredMatch
from referee.tournament.model import LeagueSettings
from referee.tournament.scheduler import league_batch

SECRET = hashlib.sha256(b"arschloch-referee league bench").digest()
FORMAT = "one-round"
TARGET_TAU = 0.9
TARGET_RATIO = 0.5
TARGET_RESULTS_PER_S = 200.0
TOP = 10


def field_of(n: int, seed: int) -> dict[str, float]:
    """``n`` dilution rates by bot name (module docstring): a few far at the top, the many
    close in the middle."""
    rng = random.Random(f"league field {seed}")
    top = max(3, n // 100)
    rates = [0.04 * i / max(1, top - 1) for i in range(top)]
    while len(rates) < n:
        rate = rng.gauss(0.55, 0.2)
        if 0.12 <= rate <= 1.0:
            rates.append(rate)
    rng.shuffle(rates)
    return {f"p{i:04d}": rate for i, rate in enumerate(rates)}


def bench_settings(bots: int) -> LeagueSettings:
    """The league's default knobs, with batches seating the share of the field the default
    32 tables seat among 1,000 entrants (12.8 %): so that a smaller field, cheaper to play,
    is matched as often between batches as the large one."""
    return LeagueSettings(batch=max(1, round(LeagueSettings().batch * bots / 1000)))


def truth_of(rates: dict[str, float]) -> list[str]:
    return sorted(rates, key=lambda name: (rates[name], name))


def kendall_tau(order: Sequence[str], truth: Sequence[str]) -> float:
    """Kendall's tau of ``order`` against ``truth`` (same names), in ``O(n log n)``: the
    discordant pairs are the inversions of the true ranks read in ``order``."""
    rank = {name: i for i, name in enumerate(truth)}
    ranks = [rank[name] for name in order]
    n = len(ranks)
    inversions = _inversions(ranks)
    pairs = n * (n - 1) // 2
    return (pairs - 2 * inversions) / pairs if pairs else 1.0


def _inversions(values: list[int]) -> int:
    if len(values) < 2:
        return 0
    middle = len(values) // 2
    left, right = values[:middle], values[middle:]
    count = _inversions(left) + _inversions(right)
    merged, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            count += len(left) - i
            j += 1
    merged += left[i:] + right[j:]
    values[:] = merged
    return count


def top_accuracy(order: Sequence[str], truth: Sequence[str], top: int = TOP) -> tuple[int, float]:
    """How many of the true top ``top`` are in ``order``'s top, and tau among the true top
    (in ``order``'s order)."""
    best = set(truth[:top])
    found = len(best & set(order[:top]))
    within = [name for name in order if name in best]
    return found, kendall_tau(within, [n for n in truth if n in best])


# --------------------------------------------------------------------------- simulation


@dataclass
class League:
    """One simulated league: the planner's state, kept as the league's ledger keeps it."""

    rates: dict[str, float]
    matchmaking: bool
    seed: int
    settings: LeagueSettings = field(default_factory=LeagueSettings)
    batch: int = 0
    ratings: dict[str, tuple[float, float]] = field(default_factory=dict)
    standings: dict[str, Standing] = field(default_factory=dict)
    dealt: dict[tuple[str, ...], int] = field(default_factory=dict)
    seats: int = 0

    def __post_init__(self) -> None:
        env = make_environment()
        for name in sorted(self.rates):
            self.ratings[name] = (env.mu, env.sigma)
            self.standings[name] = Standing(name, env.mu, env.sigma, last_batch=-1)

    @property
    def per_bot(self) -> float:
        return self.seats / len(self.rates)

    def order(self) -> list[str]:
        return sorted(
            self.ratings, key=lambda n: (-(self.ratings[n][0] - 3 * self.ratings[n][1]), n)
        )

    def tables(self) -> list[tuple[str, ...]]:
        if not self.matchmaking:
            names = sorted(self.rates)
            random.Random(f"random tables {self.seed} {self.batch}").shuffle(names)
            count = min(self.settings.batch, len(names) // TABLE_SIZE)
            return [
                tuple(sorted(names[i * TABLE_SIZE : (i + 1) * TABLE_SIZE])) for i in range(count)
            ]
        state = LeagueState(self.batch, tuple(self.standings.values()), 0)
        plan = plan_batch(state, self.settings, table_size=TABLE_SIZE, seed=self.seed)
        self.placed = plan.placement
        return [table.labels for table in plan.tables]

    def play_batch(self, workers: int) -> int:
        """Plan, play and settle one batch; returns its matches."""
        self.placed: list[str] = []
        tables = self.tables()
        specs = league_batch(
            self.batch, tables, self.dealt, seed=self.seed, secret=SECRET, duplicate="tables"
        )
        results = play_all(specs, self.rates, workers=workers, fmt=FORMAT)
        self._settle(tables, results)
        return len(results)

    def _settle(self, tables: Sequence[tuple[str, ...]], results: Sequence[StoredMatch]) -> None:
        env = make_environment()
        seated = {seat.name for match in results for seat in match.seats}
        settled = settle_batch(env, {n: self.ratings[n] for n in seated}, results)
        self.ratings.update(settled)
        counts: dict[str, int] = {}
        for match in results:
            for seat in match.seats:
                counts[seat.name] = counts.get(seat.name, 0) + 1
        for table in tables:
            self.dealt[table] = self.dealt.get(table, 0) + 1
        for name, n in counts.items():
            old = self.standings[name]
            mu, sigma = self.ratings[name]
            self.standings[name] = Standing(
                name, mu, sigma, old.matches + n, old.placement + (name in self.placed),
                self.batch, "", 0,
            )  # fmt: skip
        self.seats += sum(counts.values())
        self.batch += 1


@dataclass
class Run:
    """One league's taus, batch by batch: ``(matches per bot, tau)``, and the orders."""

    points: list[tuple[float, float]] = field(default_factory=list)
    orders: list[list[str]] = field(default_factory=list)

    def reached(self, target: float = TARGET_TAU) -> float | None:
        """Matches per bot at the first check from which tau stays at ``target`` for the
        next two checks as well (a single lucky batch does not count)."""
        for i, (per_bot, _) in enumerate(self.points):
            window = self.points[i : i + 3]
            if len(window) == 3 and all(tau >= target for _, tau in window):
                return per_bot
        return None

    def at(self, per_bot: float) -> tuple[float, list[str]]:
        """Tau and order after the last batch within ``per_bot`` matches per bot."""
        index = max(i for i, (p, _) in enumerate(self.points) if p <= per_bot + 1e-9)
        return self.points[index][1], self.orders[index]


def simulate(
    rates: dict[str, float],
    *,
    matchmaking: bool,
    seed: int,
    budget: float,
    workers: int,
    progress: Callable[[str], None],
) -> Run:
    """One league played until ``budget`` matches per bot (or tau held at the target)."""
    league = League(rates, matchmaking, seed, settings=bench_settings(len(rates)))
    truth = truth_of(rates)
    run = Run()
    started = time.perf_counter()
    while league.per_bot < budget:
        league.play_batch(workers)
        order = league.order()
        run.points.append((league.per_bot, kendall_tau(order, truth)))
        run.orders.append(order)
        if league.batch % 100 == 0:
            progress(
                f"  {'matchmaking' if matchmaking else 'random'} seed {seed}: batch "
                f"{league.batch}, {league.per_bot:.0f} matches per bot, tau "
                f"{run.points[-1][1]:.3f} ({time.perf_counter() - started:.0f} s)"
            )
        if run.reached() is not None:
            break
    return run


LEVELS = (0.7, 0.8, 0.85, TARGET_TAU)
"""Kendall tau levels reported on the way to the target: a crowded field may not reach the
target within an affordable budget, and the ratio at lower levels still says which way the
matchmaking goes."""


def simulation(bots: int, seeds: int, budget: float, workers: int) -> bool:
    """Both leagues on ``seeds`` fields; prints the figures; True when the target is met."""
    print(f"League simulation: {bots} bots of known strength, one-round arschloch at tables "
          f"of {TABLE_SIZE}, batches of {bench_settings(bots).batch} tables; tau target "
          f"{TARGET_TAU}")  # fmt: skip
    ratios: dict[float, list[float]] = {level: [] for level in LEVELS}
    lines = []
    for seed in range(seeds):
        rates = field_of(bots, seed)
        truth = truth_of(rates)
        runs = {
            matchmaking: simulate(
                rates, matchmaking=matchmaking, seed=seed, budget=budget, workers=workers,
                progress=print,
            )
            for matchmaking in (True, False)
        }  # fmt: skip
        for level in LEVELS:
            made, rand = runs[True].reached(level), runs[False].reached(level)
            shown = [f"{r:.0f}" if r is not None else f"> {budget:.0f}" for r in (made, rand)]
            ratio = "" if made is None or rand is None else f", ratio {made / rand:.2f}"
            if made is not None and rand is not None:
                ratios[level].append(made / rand)
            lines.append(f"  seed {seed}: matches per bot to tau {level}: matchmaking "
                         f"{shown[0]}, random tables {shown[1]}{ratio}")  # fmt: skip
        made = runs[True].reached()
        level = made if made is not None else min(budget, runs[False].points[-1][0])
        for label, run in (("matchmaking", runs[True]), ("random tables", runs[False])):
            tau, order = run.at(level)
            found, within = top_accuracy(order, truth)
            lines.append(
                f"  seed {seed}: at {level:.0f} matches per bot, {label}: tau {tau:.3f}, "
                f"top {TOP}: {found}/{TOP} found, their order tau {within:.2f}"
            )
    print("\n".join(lines))
    for level in LEVELS:
        if ratios[level]:
            mean = sum(ratios[level]) / len(ratios[level])
            print(f"  matchmaking / random, matches per bot to tau {level}: {mean:.2f}")
    target = ratios[TARGET_TAU]
    ok = bool(target) and sum(target) / len(target) <= TARGET_RATIO
    verdict = "OK" if ok else ("MISSED" if target else "NOT MEASURED (budget)")
    print(f"  target: matchmaking needs at most {TARGET_RATIO} of random's matches per bot to "
          f"tau {TARGET_TAU}: {verdict}")  # fmt: skip
    return ok


def strength_check(bots: int, seed: int, matches: int, workers: int) -> None:
    """The truth's premise: mean score falls with the dilution (random tables, quartiles)."""
    rates = field_of(bots, seed)
    league = League(rates, matchmaking=False, seed=seed)
    scores: dict[str, list[float]] = {n: [] for n in rates}
    while league.per_bot < matches:
        tables = league.tables()
        specs = league_batch(
            league.batch, tables, {}, seed=seed, secret=SECRET, duplicate="tables"
        )
        for match in play_all(specs, rates, workers=workers, fmt=FORMAT):
            for seat in match.seats:
                scores[seat.name].append((TABLE_SIZE - seat.place) / (TABLE_SIZE - 1))
        league.seats += len(specs) * TABLE_SIZE
        league.batch += 1
    truth = truth_of(rates)
    quarter = len(truth) // 4
    means = []
    for q in range(4):
        names = truth[q * quarter : (q + 1) * quarter]
        values = [v for n in names for v in scores[n]]
        means.append(sum(values) / max(1, len(values)))
    print("  mean score by quartile of strength (strongest first): "
          + ", ".join(f"{m:.3f}" for m in means))  # fmt: skip


# --------------------------------------------------------------------------- throughput


class InstantExecutor:
    """Plays nothing: each task's result is drawn at once from the bots' strengths (a
    Thurstone model), with a log of typical size written where a worker would write it."""

    max_attempts = 1

    def __init__(self, strength: dict[str, float]) -> None:
        self.strength = strength
        self.log = b'{"type":"event"}\n' * 1024  # 16 KiB

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        return SandboxPlan("process", "no bots: results made up at once (bench)")

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        for task in tasks:
            key = task.spec.key
            on_event(MatchStarted(key, 1))
            rng = random.Random(task.spec.match_seed)
            table = task.spec.table
            noise = [rng.gauss(0, 1) for _ in table]
            drawn = sorted(range(len(table)), key=lambda s: -self.strength[table[s]] - noise[s])
            Path(task.log_path).write_bytes(self.log)
            standings = [
                SeatResult(seat=seat, name=table[seat], place=place, score=len(table) - place,
                           forfeit=False)
                for place, seat in enumerate(drawn, start=1)
            ]  # fmt: skip
            result = MatchResult(
                match=key, seed=task.spec.match_seed, rules="arschloch", rounds=1,
                log=task.log_path, standings=standings, duration_s=0.01,
                reply_ms={s: [3] * 12 for s in range(len(table))},
            )  # fmt: skip
            on_event(MatchFinished(key, result))


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return math.nan


def throughput(bots: int, results: int) -> bool:
    """A real league of ``bots`` entrants on :class:`InstantExecutor` for about ``results``
    results; prints the figures; True when the target is met."""
    from referee.league import BatchPlanned, BatchSettled, LeagueStarted, run_league

    with tempfile.TemporaryDirectory(prefix="league-bench-") as tmp:
        folder = Path(tmp)
        names = [f"e{i:04d}" for i in range(bots)]
        for name in names:
            (folder / f"{name}.py").write_text(f"# {name}\n")
        path = folder / "bench.toml"
        path.write_text(
            'name = "bench"\nrules = { preset = "arschloch", target = 3 }\nformat = "league"\n'
            "seed = 1\n[authors]\napart = false\n"
            + "".join(f'[[bots]]\npath = "{n}.py"\nname = "{n}"\n' for n in names)
        )
        strength = {n: random.Random(n).gauss(0, 1) for n in names}
        batch = LeagueSettings().batch * TABLE_SIZE
        batches = max(2, results // batch)
        marks: dict[str, float] = {}
        plan_ms: list[float] = []
        store_ms: list[float] = []
        settle_ms: list[float] = []
        again: list[float] = []
        rss: list[float] = []

        def seen(event: object) -> None:
            if isinstance(event, LeagueStarted):
                marks["start"] = time.perf_counter()
                marks["cpu"] = time.process_time()
                rss.append(_rss_mib())
            elif isinstance(event, BatchPlanned):
                plan_ms.append(event.plan_ms)
            elif isinstance(event, BatchSettled):
                store_ms.append(event.store_ms)
                settle_ms.append(event.settle_ms)
                again.append(event.rated_again)
                rss.append(_rss_mib())

        summary = run_league(path, InstantExecutor(strength), batches=batches, on_event=seen)
        seconds = time.perf_counter() - marks["start"]
        cpu = time.process_time() - marks["cpu"]
    per_s, per_cpu_s = summary.played / seconds, summary.played / cpu
    ok = per_cpu_s >= TARGET_RESULTS_PER_S
    tables = summary.played / TABLE_SIZE
    quarter = max(1, len(rss) // 4)
    verdict = "OK" if ok else "MISSED"
    print(f"League coordinator: {bots} entrants, {summary.played} results in {batches} "
          f"batches of {batch} matches, nothing played (InstantExecutor)")  # fmt: skip
    print(f"  {per_cpu_s:,.0f} results stored and {tables / cpu:,.0f} tables chosen per second "
          f"of the coordinator's CPU (target >= {TARGET_RESULTS_PER_S:.0f} results/s) {verdict}; "
          f"{per_s:,.0f} per second of wall time on this machine now")  # fmt: skip
    print(f"  per result: {_mean(store_ms):.2f} ms to store it with its ratings; per batch: "
          f"{_mean(plan_ms):.1f} ms to choose its {batch // TABLE_SIZE} tables, "
          f"{_mean(settle_ms):.1f} ms to settle it ({_mean(again):.1f} tables rated "
          "again)")  # fmt: skip
    print(f"  coordinator memory (RSS): {rss[0]:.0f} MiB at the start, "
          f"{_mean(rss[quarter:2 * quarter]):.0f} MiB in the second quarter, "
          f"{_mean(rss[-quarter:]):.0f} MiB in the last")  # fmt: skip
    return ok


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def run(
    bots: int = 200,
    seeds: int = 1,
    budget: float = 300,
    workers: int = 1,
    throughput_bots: int = 1000,
    throughput_results: int = 20_000,
) -> None:
    """What ``make bench`` runs: the simulation on a field of 200 (matches per bot to a
    given tau hardly depend on the field's size: Kendall's tau counts pairs, and the share
    of pairs too close to tell apart is the field's shape, not its size), the
    coordinator on 1,000 entrants."""
    simulation(bots, seeds, budget, workers)
    throughput(throughput_bots, throughput_results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--budget", type=float, default=600.0, help="matches per bot at most")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--throughput-bots", type=int, default=1000)
    parser.add_argument("--throughput-results", type=int, default=20_000)
    parser.add_argument("--skip-simulation", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--strength-check", type=int, default=0, metavar="MATCHES")
    args = parser.parse_args(argv)
    ok = True
    if args.strength_check:
        strength_check(args.bots, 0, args.strength_check, args.workers)
    if not args.skip_simulation:
        ok = simulation(args.bots, args.seeds, args.budget, args.workers) and ok
    if not args.skip_throughput:
        ok = throughput(args.throughput_bots, args.throughput_results) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
