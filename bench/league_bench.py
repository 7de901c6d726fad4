"""A league of bots of known strength, in process: does matchmaking pay, and how fast is the
coordinator?

``python -m bench.league_bench [--bots 1000] [--seeds 1] [--first-seed 0] [--workers 1]
[--budget 600] [--newcomers 4] [--join 150] [--window 20] [--newcomers-only]
[--rotation-check TABLES] [--throughput-results 20000] [--skip-simulation]
[--skip-throughput]`` (``make bench`` runs a smaller field: see :func:`run`).

**The field.** ``--bots`` ladder bots (:mod:`bench.ladder`: the heuristic sample bot diluted
with random legal plays, over the real engine, one-round matches of ``arschloch`` at tables
of 4), spread like a real field: a few far at the top (dilution 0 to 0.04: the heuristic
itself and nearly so, one bot in a hundred), the many close together in the middle
(dilution drawn from a normal law around 0.55, sd 0.2, kept within 0.12 and 1). The truth
is the order of the dilutions (more random plays, weaker: measured monotone by
:mod:`bench.ladder_truth` on the ladder's rungs, and by :func:`strength_check` here).

**Simulation.** Leagues play the field batch by batch, exactly as ``referee league run``
plans and rates (the same :func:`~referee.ranking.matchmaking.plan_batch`,
:func:`~referee.tournament.scheduler.league_batch` for seats and shared deals,
:func:`~referee.ranking.incremental.settle_batch` for ratings; only the store and the
sandbox are left out), with the same batch size, one deal per table in every seat rotation.
Three ways of choosing the tables (``--arms``):

* **matchmaking**: the league's own planner, default ``[league]`` knobs;
* **random tables**: each batch's disjoint tables drawn at random from the field;
* **oracle tables**: tables chosen knowing the truth (:mod:`bench.league_bound` has the
  bound on what any design can do, and other designs on a surrogate): each batch seats
  the bots that played least (equal counts), each table drawn around the least played of
  them among the bots within a quarter of the field of it in the true order (opponents
  close in strength, so each match tells nearly the most a match can, yet spread enough to
  keep every neighbourhood tied to the rest).

**Newcomers.** ``--newcomers`` bots (:func:`newcomers_of`: strengths drawn from the
field's own law) join each league, the first once the field has played ``--join`` matches
per bot, the others :data:`STAGGER` batches apart; the cap on hogging counts the last
``--window`` batches (the league's window, counted in batches). After every batch each
newcomer's **rank error** is read: how far its place in the leaderboard's order is from its
true place among the entrants then in the league, as a share of them.

Every ``--check`` matches per bot, each league's order is read three ways and compared
with the truth by Kendall's tau: **published** (``mu - 3 sigma``, the leaderboard),
**mu** (TrueSkill's mean alone) and **bt**, a Bradley-Terry fit of every stored result
broken into its pairs of places (:func:`bradley_terry`: Plackett-Luce's pairwise marginals
are exactly Bradley-Terry, so this is its composite likelihood; unlike TrueSkill it keeps
every correlation between ratings). Reported for each order side by side: the matches per
bot each league needs to reach tau 0.7, 0.8, 0.85 and 0.9 (the first check at which it is
reached and held at the next two), its ratio to random tables' in the same order, and at
the end each one's tau and top-10 accuracy: how many of the true top 10 are in its top 10,
and tau within the true top 10.

**The targets** (:func:`targets`, each printed beside its figure, seed by seed, for every
arm against random tables): (a) the newcomers' median rank error falls to 10 % of the field
(and holds for :data:`HOLD` batches) within a third of the batches random tables take, all
newcomers of all fields pooled, while the others play at most 10 % less than an equal
share over the newcomers' batches (from the first arrival to :data:`CUT_SPAN` batches after
the last); (b) at half the matches per bot random tables need to full-field tau 0.9 (each
field's own), the published top 10 holds at least 9 of the true top 10, with tau at least
0.8 among them (means over the fields); (c) full-field tau 0.9 at most 0.95 of random
tables' matches (the ratio of the means over the fields), a guard.

**Rotations** (``--rotation-check TABLES``): how a table's seat rotations vary together,
with a deal each (``duplicate = "tables"``, the league's) and sharing one deal
(``"rotations"``): :func:`rotation_check`.

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
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.ladder import TABLE_SIZE, play_all
from referee.executors.base import (
    AttemptEvent,
    Executor,
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


def newcomers_of(n: int, count: int, seed: int) -> dict[str, float]:
    """``count`` newcomers' dilution rates, drawn from the law of :func:`field_of`'s field of
    ``n``: one of its few at the top with their share, else from the crowd."""
    rng = random.Random(f"league newcomers {seed}")
    top = max(3, n // 100)
    rates: dict[str, float] = {}
    while len(rates) < count:
        if rng.random() < top / n:
            rate = rng.uniform(0.0, 0.04)
        else:
            rate = rng.gauss(0.55, 0.2)
            if not 0.12 <= rate <= 1.0:
                continue
        rates[f"q{len(rates):03d}"] = rate
    return rates


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


ARMS = ("matchmaking", "random", "oracle")
ARM_LABELS = {"matchmaking": "matchmaking", "random": "random tables", "oracle": "oracle tables"}
ORDERS = ("published", "mu", "bt")
"""How a league's order is read (module docstring): the leaderboard's ``mu - 3 sigma``,
TrueSkill's ``mu``, and a Bradley-Terry fit of every result."""
ORACLE_WINDOW = 4
"""Oracle tables draw opponents within ``n / ORACLE_WINDOW`` places of the true order."""


def bradley_terry(
    pairs: dict[tuple[str, str], list[int]],
    names: Sequence[str],
    start: dict[str, float] | None = None,
    iterations: int = 30,
) -> dict[str, float]:
    """Log-strengths of a Bradley-Terry fit of ``pairs`` (``(a, b)`` with ``a < b`` ->
    ``[a's wins, b's wins]``) by Hunter's MM iterations, from ``start`` (a fit of fewer
    results: a warm start, so a few iterations suffice). Each name also holds half a win
    and half a loss against a virtual entrant of strength 1, so that a name with all wins
    or all losses has a finite rating."""
    w = {n: math.exp((start or {}).get(n, 0.0)) for n in names}
    won = {n: 0.5 for n in names}
    for (a, b), (wa, wb) in pairs.items():
        won[a] += wa
        won[b] += wb
    for _ in range(iterations):
        den = {n: 1.0 / (w[n] + 1.0) for n in names}
        for (a, b), (wa, wb) in pairs.items():
            share = (wa + wb) / (w[a] + w[b])
            den[a] += share
            den[b] += share
        w = {n: won[n] / den[n] for n in names}
        centre = sum(math.log(v) for v in w.values()) / len(w)
        w = {n: v / math.exp(centre) for n, v in w.items()}
    return {n: math.log(v) for n, v in w.items()}


@dataclass
class League:
    """One simulated league: the planner's state, kept as the league's ledger keeps it.

    ``rates`` holds every bot that ever plays, ``arrivals`` the batch each newcomer joins at
    (the others are there from batch 0). The cap on hogging counts the last ``window``
    batches (the league's window, counted in batches)."""

    rates: dict[str, float]
    arm: str
    seed: int
    settings: LeagueSettings = field(default_factory=LeagueSettings)
    window: int = 20
    arrivals: dict[str, int] = field(default_factory=dict)
    batch: int = 0
    ratings: dict[str, tuple[float, float]] = field(default_factory=dict)
    standings: dict[str, Standing] = field(default_factory=dict)
    dealt: dict[tuple[str, ...], int] = field(default_factory=dict)
    seats: int = 0
    pairs: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    strengths: dict[str, float] = field(default_factory=dict)
    """The last Bradley-Terry fit (:meth:`fit`)."""
    recent: deque[dict[str, int]] = field(default_factory=deque)
    """Matches per bot in each of the last ``window`` batches."""
    errors: dict[str, list[float]] = field(default_factory=dict)
    """Each newcomer's rank error (share of the field) after each batch since it joined."""
    shares: list[tuple[float, float]] = field(default_factory=list)
    """Per batch from the first arrival: the others' mean matches, and every entrant's."""

    def __post_init__(self) -> None:
        self._join(0)
        self.true_rank = {name: i for i, name in enumerate(truth_of(self.rates))}

    def _join(self, batch: int) -> None:
        env = make_environment()
        for name in sorted(self.rates):
            if name not in self.ratings and self.arrivals.get(name, 0) <= batch:
                self.ratings[name] = (env.mu, env.sigma)
                self.standings[name] = Standing(name, env.mu, env.sigma, last_batch=batch - 1)

    @property
    def per_bot(self) -> float:
        return self.seats / len(self.ratings)

    def present(self) -> dict[str, float]:
        """The rates of the bots in the league now."""
        return {name: self.rates[name] for name in self.ratings}

    def order(self, how: str = "published") -> list[str]:
        """The league's order, read ``how`` (:data:`ORDERS`)."""
        if how == "bt":
            return sorted(self.strengths, key=lambda n: (-self.strengths[n], n))
        sigmas = 3 if how == "published" else 0
        return sorted(
            self.ratings,
            key=lambda n: (-(self.ratings[n][0] - sigmas * self.ratings[n][1]), n),
        )

    def fit(self) -> None:
        """Fit Bradley-Terry to every result so far (warm-started from the last fit)."""
        self.strengths = bradley_terry(self.pairs, sorted(self.ratings), self.strengths)

    def _shuffled(self, label: str) -> list[str]:
        names = sorted(self.ratings)
        random.Random(f"{label} {self.seed} {self.batch}").shuffle(names)
        return names

    def tables(self) -> list[tuple[str, ...]]:
        count = min(self.settings.batch, len(self.ratings) // TABLE_SIZE)
        if self.arm == "random":
            names = self._shuffled("random tables")
            return [
                tuple(sorted(names[i * TABLE_SIZE : (i + 1) * TABLE_SIZE])) for i in range(count)
            ]
        if self.arm == "oracle":
            return self._oracle_tables(count)
        counts: dict[str, int] = {}
        for batch in self.recent:
            for name, n in batch.items():
                counts[name] = counts.get(name, 0) + n
        standings = tuple(
            replace(s, recent=counts.get(s.label, 0)) for s in self.standings.values()
        )
        state = LeagueState(self.batch, standings, sum(counts.values()))
        plan = plan_batch(state, self.settings, table_size=TABLE_SIZE, seed=self.seed)
        self.placed = plan.placement
        return [table.labels for table in plan.tables]

    def _oracle_tables(self, count: int) -> list[tuple[str, ...]]:
        """Oracle tables (module docstring): the least played, each table among bots close
        to its first in the true order."""
        shuffled = self._shuffled("oracle tables")
        tiebreak = {name: i for i, name in enumerate(shuffled)}
        chosen = sorted(self.ratings, key=lambda n: (self.standings[n].matches, tiebreak[n]))[
            : count * TABLE_SIZE
        ]
        free = set(chosen)
        window = len(self.ratings) // ORACLE_WINDOW
        rng = random.Random(f"oracle opponents {self.seed} {self.batch}")
        tables = []
        for name in chosen:
            if name not in free:
                continue
            free.discard(name)
            here = self.true_rank[name]
            near = sorted(n for n in free if abs(self.true_rank[n] - here) <= window)
            if len(near) < TABLE_SIZE - 1:
                near = sorted(free, key=lambda n: (abs(self.true_rank[n] - here), n))
                near = near[: TABLE_SIZE - 1]
            opponents = rng.sample(near, TABLE_SIZE - 1)
            free.difference_update(opponents)
            tables.append(tuple(sorted([name, *opponents])))
        return tables

    def play_batch(self, workers: int) -> int:
        """Plan, play and settle one batch; returns its matches."""
        self._join(self.batch)
        self.placed: list[str] = []
        tables = self.tables()
        specs = league_batch(
            self.batch, tables, self.dealt, seed=self.seed, secret=SECRET, duplicate="tables"
        )
        results = play_all(specs, self.rates, workers=workers, fmt=FORMAT)
        self._settle(tables, results)
        self._track()
        self.batch += 1
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
            for i, ahead in enumerate(match.seats):
                for behind in match.seats[i + 1 :]:
                    if ahead.place == behind.place:
                        continue
                    a, b = sorted((ahead.name, behind.name))
                    tally = self.pairs.setdefault((a, b), [0, 0])
                    tally[0 if a == ahead.name else 1] += 1
        for table in tables:
            self.dealt[table] = self.dealt.get(table, 0) + 1
        for name, n in counts.items():
            old = self.standings[name]
            mu, sigma = self.ratings[name]
            self.standings[name] = Standing(
                name,
                mu,
                sigma,
                old.matches + n,
                old.placement + (name in self.placed),
                self.batch,
                "",
                0,
            )
        self.seats += sum(counts.values())
        self.recent.append(counts)
        while len(self.recent) > self.window:
            self.recent.popleft()

    def _track(self) -> None:
        """Each newcomer's rank error in the published order, and the others' share."""
        if not self.arrivals or self.batch < min(self.arrivals.values()):
            return
        counts = self.recent[-1]
        others = [n for n in self.ratings if n not in self.arrivals]
        mean = sum(counts.get(n, 0) for n in others) / len(others)
        self.shares.append((mean, sum(counts.values()) / len(self.ratings)))
        joined = [n for n in self.arrivals if n in self.ratings]
        if not joined:
            return
        n = len(self.ratings)
        place = {name: i for i, name in enumerate(self.order())}
        truth = {name: i for i, name in enumerate(truth_of(self.present()))}
        for name in joined:
            self.errors.setdefault(name, []).append(abs(place[name] - truth[name]) / n)


@dataclass
class Run:
    """One league's taus at each check: ``(matches per bot, {order: tau})``, and the orders;
    its newcomers' rank errors after each batch since they joined, and the others' share
    of the matches (:class:`League`)."""

    points: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    orders: list[dict[str, list[str]]] = field(default_factory=list)
    errors: dict[str, list[float]] = field(default_factory=dict)
    shares: list[tuple[float, float]] = field(default_factory=list)

    def reached(self, target: float = TARGET_TAU, how: str = "published") -> float | None:
        """Matches per bot at the first check from which tau (of the order read ``how``)
        stays at ``target`` for the next two checks as well (a single lucky check does not
        count)."""
        for i, (per_bot, _) in enumerate(self.points):
            window = self.points[i : i + 3]
            if len(window) == 3 and all(taus[how] >= target for _, taus in window):
                return per_bot
        return None

    def at(self, per_bot: float, how: str = "published") -> tuple[float, list[str]]:
        """Tau and order (read ``how``) at the last check within ``per_bot`` matches per bot."""
        index = max(i for i, (p, _) in enumerate(self.points) if p <= per_bot + 1e-9)
        return self.points[index][1][how], self.orders[index][how]

    def cut(self, span: int) -> float:
        """How much less than an equal share the others played, over the first ``span``
        batches from the first newcomer's arrival (0: an equal share)."""
        window = self.shares[:span]
        equal = sum(e for _, e in window)
        return 1 - sum(o for o, _ in window) / equal if equal else 0.0


NEWCOMERS = 4
"""Newcomers per field, arriving :data:`STAGGER` batches apart (:func:`arrivals_of`)."""
STAGGER = 35
HORIZON = 700
"""Batches a newcomer is followed for, at most."""
HOLD = 20
"""A newcomer's median rank error counts as reached when it holds for this many batches."""
TARGET_ERROR = 0.1
TARGET_NEWCOMER_RATIO = 1 / 3
TARGET_CUT = 0.1
CUT_SPAN = 140
"""The others' share is counted until this many batches after the last arrival."""
TARGET_TOP = (9, 0.8)
TARGET_GUARD = 0.95


def arrivals_of(
    rates: dict[str, float], newcomers: dict[str, float], join: float
) -> dict[str, int]:
    """The batch each newcomer joins at: the first once the field has played ``join``
    matches per bot (at the bench's batches), the next :data:`STAGGER` batches apart."""
    per_batch = bench_settings(len(rates)).batch * TABLE_SIZE * TABLE_SIZE / len(rates)
    first = math.ceil(join / per_batch)
    return {name: first + i * STAGGER for i, name in enumerate(sorted(newcomers))}


def median_curve(series: Sequence[Sequence[float]]) -> list[float]:
    """The median over ``series`` after each batch, of those followed that long."""
    longest = max((len(s) for s in series), default=0)
    return [statistics.median(s[b] for s in series if len(s) > b) for b in range(longest)]


def batches_to(curve: Sequence[float], level: float = TARGET_ERROR, hold: int = HOLD) -> int | None:
    """Batches played to the first point from which ``curve`` stays at most ``level`` for
    ``hold`` more batches (``None``: not within the curve)."""
    for b in range(len(curve) - hold):
        if all(v <= level for v in curve[b : b + hold + 1]):
            return b + 1
    return None


def simulate(
    rates: dict[str, float],
    *,
    arm: str,
    seed: int,
    budget: float,
    workers: int,
    check: float,
    progress: Callable[[str], None],
    arrivals: dict[str, int] | None = None,
    window: int = 20,
    newcomers_only: bool = False,
) -> Run:
    """One league played until ``budget`` matches per bot, or until every order held at
    the target and every newcomer was followed long enough; its orders checked every
    ``check`` matches per bot. ``newcomers_only``: until the newcomers alone are done."""
    league = League(
        rates,
        arm,
        seed,
        settings=bench_settings(len(rates) - len(arrivals or {})),
        window=window,
        arrivals=dict(arrivals or {}),
    )
    run = Run(errors=league.errors, shares=league.shares)
    started = time.perf_counter()
    next_check = check
    while league.per_bot < budget:
        league.play_batch(workers)
        followed = _followed(league)
        if newcomers_only:
            if followed:
                break
            if league.batch % 100 == 0:
                progress(f"  {ARM_LABELS[arm]} seed {seed}: batch {league.batch}")
            continue
        if league.per_bot + 1e-9 < min(next_check, budget):
            continue
        next_check += check
        league.fit()
        truth = truth_of(league.present())
        orders = {how: league.order(how) for how in ORDERS}
        run.points.append(
            (league.per_bot, {how: kendall_tau(order, truth) for how, order in orders.items()})
        )
        run.orders.append(orders)
        if len(run.points) % 10 == 0:
            taus = ", ".join(f"{how} {tau:.3f}" for how, tau in run.points[-1][1].items())
            progress(
                f"  {ARM_LABELS[arm]} seed {seed}: batch {league.batch}, {league.per_bot:.0f} "
                f"matches per bot, tau {taus} ({time.perf_counter() - started:.0f} s)"
            )
        if followed and all(run.reached(how=how) is not None for how in ORDERS):
            break
    return run


def _followed(league: League) -> bool:
    """Whether every newcomer was followed long enough: :data:`HORIZON` batches, or its
    field's median error reached the target and held (with room for the others')."""
    if not league.arrivals:
        return True
    if len(league.errors) < len(league.arrivals):
        return False
    series = list(league.errors.values())
    if min(len(s) for s in series) >= HORIZON:
        return True
    reached = batches_to(median_curve(series))
    return reached is not None and min(len(s) for s in series) >= reached + 3 * HOLD


LEVELS = (0.7, 0.8, 0.85, TARGET_TAU)
"""Kendall tau levels reported on the way to the target: a crowded field may not reach the
target within an affordable budget, and the ratio at lower levels still says which way the
matchmaking goes."""


@dataclass(frozen=True)
class Scenario:
    """What the simulation plays besides the field (module docstring): ``newcomers`` per
    field, the first arriving once the field has played ``join`` matches per bot; the cap's
    window in batches; ``newcomers_only``: play until the newcomers are followed, no more."""

    newcomers: int = NEWCOMERS
    join: float = 150.0
    window: int = 20
    newcomers_only: bool = False
    first_seed: int = 0


def simulation(
    bots: int,
    seeds: int,
    budget: float,
    workers: int,
    *,
    check: float = 10.0,
    arms: Sequence[str] = ARMS,
    scenario: Scenario | None = None,
) -> bool:
    """The leagues of ``arms`` on ``seeds`` fields; prints the figures side by side and each
    target beside its figure (:func:`targets`); True when every target measured is met."""
    scenario = scenario or Scenario()
    print(
        f"League simulation: {bots} bots of known strength and {scenario.newcomers} newcomers "
        f"{STAGGER} batches apart from {scenario.join:g} matches per bot on, one-round "
        f"arschloch at tables of {TABLE_SIZE}, batches of {bench_settings(bots).batch} tables, "
        f"the cap's window {scenario.window} batches, orders checked every {check:g} matches "
        f"per bot; tau target {TARGET_TAU}"
    )
    reached: dict[tuple[str, str, float], list[float | None]] = {}
    finals: list[str] = []
    fields: list[tuple[dict[str, float], dict[str, Run]]] = []
    for seed in range(scenario.first_seed, scenario.first_seed + seeds):
        rates = field_of(bots, seed)
        fresh = newcomers_of(bots, scenario.newcomers, seed)
        everyone = {**rates, **fresh}
        runs = {
            arm: simulate(
                everyone,
                arm=arm,
                seed=seed,
                budget=budget,
                workers=workers,
                check=check,
                progress=print,
                arrivals=arrivals_of(rates, fresh, scenario.join),
                window=scenario.window,
                newcomers_only=scenario.newcomers_only,
            )
            for arm in arms
        }
        fields.append((everyone, runs))
        if scenario.newcomers_only:
            continue
        for how in ORDERS:
            for level in LEVELS:
                for arm in arms:
                    reached.setdefault((how, arm, level), []).append(runs[arm].reached(level, how))
        end = min(run.points[-1][0] for run in runs.values())
        for how in ORDERS:
            for arm in arms:
                tau, order = runs[arm].at(end, how)
                found, within = top_accuracy(order, truth_of(everyone))
                finals.append(
                    f"  seed {seed}, {how}, {ARM_LABELS[arm]}: at {end:.0f} matches per bot tau "
                    f"{tau:.3f}, top {TOP}: {found}/{TOP} found, their order tau {within:.2f}"
                )
    if not scenario.newcomers_only:
        _levels(reached, arms, seeds, budget)
        print("\n".join(finals))
    return targets(fields, arms, scenario)


def _levels(
    reached: dict[tuple[str, str, float], list[float | None]],
    arms: Sequence[str],
    seeds: int,
    budget: float,
) -> None:
    """The table of matches per bot to each level of tau, seed by seed, and the ratios."""
    print(
        f"  matches per bot to tau, seed by seed ('-': not reached within {budget:.0f}), "
        f"their mean and its ratio to random tables' read the same way:"
    )
    width = 14 + 5 * seeds
    print("  order      level " + "".join(f"{ARM_LABELS[a]:>{width}}" for a in arms))
    for how in ORDERS:
        for level in LEVELS:
            cells = []
            base = _mean_reached(reached.get((how, "random", level), []))
            for arm in arms:
                values = reached[(how, arm, level)]
                mean = _mean_reached(values)
                ratio = mean / base if mean is not None and base is not None else None
                shown = "/".join("-" if v is None else f"{v:.0f}" for v in values)
                if mean is not None and seeds > 1:
                    shown += f" = {mean:.0f}"
                if arm != "random" and ratio is not None:
                    shown += f" ({ratio:.2f})"
                cells.append(f"{shown:>{width}}")
            print(f"  {how:<10} {level:<5} " + "".join(cells))


def _verdict(ok: bool | None) -> str:
    return "NOT MEASURED" if ok is None else ("OK" if ok else "MISSED")


def _spread(values: Sequence[float | None], form: str = "{:.0f}") -> str:
    return "/".join("-" if v is None else form.format(v) for v in values)


def targets(
    fields: Sequence[tuple[dict[str, float], dict[str, Run]]],
    arms: Sequence[str],
    scenario: Scenario,
) -> bool:
    """Print each target of the league (docs/league.md) beside its figure, for every arm
    against random tables, seed by seed; True when matchmaking meets all it measured."""
    ok = True
    span = (scenario.newcomers - 1) * STAGGER + CUT_SPAN
    for arm in (a for a in arms if a != "random"):
        label = ARM_LABELS[arm]
        mine = [batches_to(median_curve(list(r[arm].errors.values()))) for _, r in fields]
        base = [batches_to(median_curve(list(r["random"].errors.values()))) for _, r in fields]
        pooled = {
            a: batches_to(median_curve([s for _, r in fields for s in r[a].errors.values()]))
            for a in (arm, "random")
        }
        ratio = (
            pooled[arm] / pooled["random"]
            if pooled[arm] is not None and pooled["random"] is not None
            else None
        )
        cuts = [r[arm].cut(span) for _, r in fields]
        base_cuts = [r["random"].cut(span) for _, r in fields]
        met_a = None if ratio is None else ratio <= TARGET_NEWCOMER_RATIO
        met_cut = max(cuts) <= TARGET_CUT
        print(
            f"  (a) {label}: a newcomer's median rank error to {TARGET_ERROR:.0%} of the field "
            f"(held {HOLD} batches), batches since joining, seed by seed {_spread(mine)}, all "
            f"{sum(len(r[arm].errors) for _, r in fields)} newcomers pooled "
            f"{_spread([pooled[arm]])}; random tables {_spread(base)}, pooled "
            f"{_spread([pooled['random']])}: ratio {_spread([ratio], '{:.2f}')} (target <= "
            f"{TARGET_NEWCOMER_RATIO:.2f}) {_verdict(met_a)}"
        )
        print(
            f"      the others' matches in the {span} batches from the first arrival, against "
            f"an equal share: cut by {_spread([100 * c for c in cuts], '{:.1f}')} % seed by "
            f"seed (random tables {_spread([100 * c for c in base_cuts], '{:.1f}')} %; target "
            f"<= {TARGET_CUT:.0%}) {_verdict(met_cut)}"
        )
        ok = ok and bool(met_a) and met_cut
        if scenario.newcomers_only:
            continue
        ok = _full_field(fields, arm) and ok
    return ok


def _full_field(fields: Sequence[tuple[dict[str, float], dict[str, Run]]], arm: str) -> bool:
    """Targets (b) and (c) for ``arm`` (:func:`targets`)."""
    label = ARM_LABELS[arm]
    base = [r["random"].reached() for _, r in fields]
    mine = [r[arm].reached() for _, r in fields]
    found: list[float | None] = []
    within: list[float | None] = []
    for (everyone, runs), full in zip(fields, base, strict=True):
        if full is None:
            found.append(None)
            within.append(None)
            continue
        _, order = runs[arm].at(full / 2)
        f, w = top_accuracy(order, truth_of(everyone))
        found.append(f)
        within.append(w)
    measured = [f for f in found if f is not None]
    taus = [w for w in within if w is not None]
    met_b = None
    if measured and len(measured) == len(found):
        met_b = (
            statistics.mean(measured) >= TARGET_TOP[0] and statistics.mean(taus) >= TARGET_TOP[1]
        )
    print(
        f"  (b) {label}: at half of random tables' matches to full-field tau {TARGET_TAU} "
        f"(published, {_spread([None if b is None else b / 2 for b in base])} per bot), "
        f"the true top {TOP} found {_spread(found)} seed by seed (mean "
        f"{_spread([statistics.mean(measured) if measured else None], '{:.1f}')}), their order "
        f"tau {_spread(within, '{:.2f}')} (mean "
        f"{_spread([statistics.mean(taus) if taus else None], '{:.2f}')}); target >= "
        f"{TARGET_TOP[0]} found, tau >= {TARGET_TOP[1]} {_verdict(met_b)}"
    )
    ratios = [
        m / b if m is not None and b is not None else None for m, b in zip(mine, base, strict=True)
    ]
    mean_mine, mean_base = _mean_reached(mine), _mean_reached(base)
    ratio = mean_mine / mean_base if mean_mine is not None and mean_base is not None else None
    met_c = None if ratio is None else ratio <= TARGET_GUARD
    print(
        f"  (c) {label}: matches per bot to full-field tau {TARGET_TAU} (published) "
        f"{_spread(mine)} against random tables' {_spread(base)}: ratio seed by seed "
        f"{_spread(ratios, '{:.2f}')}, of the means {_spread([ratio], '{:.2f}')} (target <= "
        f"{TARGET_GUARD}) {_verdict(met_c)}"
    )
    return bool(met_b) and bool(met_c)


def _mean_reached(values: Sequence[float | None]) -> float | None:
    """The mean matches per bot to a level over seeds, None when a seed did not reach it."""
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def strength_check(bots: int, seed: int, matches: int, workers: int) -> None:
    """The truth's premise: mean score falls with the dilution (random tables, quartiles)."""
    rates = field_of(bots, seed)
    league = League(rates, "random", seed)
    scores: dict[str, list[float]] = {n: [] for n in rates}
    while league.per_bot < matches:
        tables = league.tables()
        specs = league_batch(league.batch, tables, {}, seed=seed, secret=SECRET, duplicate="tables")
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
    print(
        "  mean score by quartile of strength (strongest first): "
        + ", ".join(f"{m:.3f}" for m in means)
    )


def rotation_check(bots: int, seed: int, tables: int, workers: int) -> None:
    """How much a table's rotations vary together: random tables of ``field_of(bots)``,
    ``tables`` of them played in every seat rotation, once with each rotation on a deal of
    its own (``duplicate = "tables"``, the league's: its deal shared with other tables)
    and once with the rotations sharing one deal (``"rotations"``). For each, the variance
    of a bot's total score over its table's rotations, against the rotations' count times
    the variance of a single match's score (the ratio is 1 when the rotations vary like
    independent matches, below 1 when the shared deal cancels luck)."""
    rates = field_of(bots, seed)
    per_batch = min(LeagueSettings().batch, len(rates) // TABLE_SIZE)
    for duplicate in ("tables", "rotations"):
        league = League(rates, "random", seed)
        totals: dict[tuple[str, str], float] = {}
        scores: dict[str, list[float]] = {n: [] for n in rates}
        while league.batch * per_batch < tables:
            specs = league_batch(
                league.batch, league.tables(), {}, seed=seed, secret=SECRET, duplicate=duplicate
            )
            for match in play_all(specs, rates, workers=workers, fmt=FORMAT):
                table = match.spec.key.rsplit("/r", 1)[0]
                for seat in match.seats:
                    score = (TABLE_SIZE - seat.place) / (TABLE_SIZE - 1)
                    scores[seat.name].append(score)
                    totals[table, seat.name] = totals.get((table, seat.name), 0.0) + score
            league.batch += 1
        means = {n: statistics.mean(v) for n, v in scores.items() if v}
        single = statistics.pvariance([x - means[n] for n, v in scores.items() for x in v])
        total = statistics.pvariance([v - TABLE_SIZE * means[n] for (_, n), v in totals.items()])
        print(
            f"  rotations, duplicate = {duplicate!r}: {len(totals) // TABLE_SIZE} tables, "
            f"variance of a bot's total over its table's {TABLE_SIZE} rotations {total:.3f}, "
            f"{TABLE_SIZE} independent matches {TABLE_SIZE * single:.3f}: ratio "
            f"{total / (TABLE_SIZE * single):.2f}"
        )


# --------------------------------------------------------------------------- throughput


class InstantExecutor(Executor):
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
                SeatResult(
                    seat=seat,
                    name=table[seat],
                    place=place,
                    score=len(table) - place,
                    forfeit=False,
                )
                for place, seat in enumerate(drawn, start=1)
            ]
            result = MatchResult(
                match=key,
                seed=task.spec.match_seed,
                rules="arschloch",
                rounds=1,
                log=task.log_path,
                standings=standings,
                duration_s=0.01,
                reply_ms={s: [3] * 12 for s in range(len(table))},
            )
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
    from referee.runs.league import BatchPlanned, BatchSettled, LeagueStarted, run_league

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
    print(
        f"League coordinator: {bots} entrants, {summary.played} results in {batches} "
        f"batches of {batch} matches, nothing played (InstantExecutor)"
    )
    print(
        f"  {per_cpu_s:,.0f} results stored and {tables / cpu:,.0f} tables chosen per second "
        f"of the coordinator's CPU (target >= {TARGET_RESULTS_PER_S:.0f} results/s) {verdict}; "
        f"{per_s:,.0f} per second of wall time on this machine now"
    )
    print(
        f"  per result: {_mean(store_ms):.2f} ms to store it with its ratings; per batch: "
        f"{_mean(plan_ms):.1f} ms to choose its {batch // TABLE_SIZE} tables, "
        f"{_mean(settle_ms):.1f} ms to settle it ({_mean(again):.1f} tables rated "
        "again)"
    )
    print(
        f"  coordinator memory (RSS): {rss[0]:.0f} MiB at the start, "
        f"{_mean(rss[quarter : 2 * quarter]):.0f} MiB in the second quarter, "
        f"{_mean(rss[-quarter:]):.0f} MiB in the last"
    )
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
    parser.add_argument("--check", type=float, default=10.0, help="matches per bot between checks")
    parser.add_argument("--arms", default=",".join(ARMS), help="of: " + ", ".join(ARMS))
    parser.add_argument("--newcomers", type=int, default=NEWCOMERS, help="newcomers per field")
    parser.add_argument("--join", type=float, default=150.0, help="matches per bot at the first")
    parser.add_argument("--window", type=int, default=20, help="the cap's window, in batches")
    parser.add_argument("--first-seed", type=int, default=0, help="the first field's seed")
    parser.add_argument("--newcomers-only", action="store_true", help="no full-field targets")
    parser.add_argument("--throughput-bots", type=int, default=1000)
    parser.add_argument("--throughput-results", type=int, default=20_000)
    parser.add_argument("--skip-simulation", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--strength-check", type=int, default=0, metavar="MATCHES")
    parser.add_argument("--rotation-check", type=int, default=0, metavar="TABLES")
    args = parser.parse_args(argv)
    ok = True
    if args.rotation_check:
        rotation_check(args.bots, 0, args.rotation_check, args.workers)
    if args.strength_check:
        strength_check(args.bots, 0, args.strength_check, args.workers)
    if not args.skip_simulation:
        arms = [arm for arm in args.arms.split(",") if arm]
        if "random" not in arms or any(arm not in ARMS for arm in arms):
            parser.error(f"--arms: a list of {', '.join(ARMS)}, random among them")
        ok = (
            simulation(
                args.bots,
                args.seeds,
                args.budget,
                args.workers,
                check=args.check,
                arms=arms,
                scenario=Scenario(
                    args.newcomers, args.join, args.window, args.newcomers_only, args.first_seed
                ),
            )
            and ok
        )
    if not args.skip_throughput:
        ok = throughput(args.throughput_bots, args.throughput_results) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
