"""Ranking after play-offs: which rule orders the neighbours the play-offs were played for.

``python -m bench.ranking_bench --rows after [--after-seeds 64]`` (part of the ranking
benchmark's default run). Play-offs (:mod:`referee.ranking.playoff`) seat uncertain
neighbours far more often than the rest, so their sigmas shrink and ``mu - 3 sigma`` moves
them up for having been played, not for having played well. This row measures, on a field of
:data:`BOTS` bots of known strength, the share of adjacent true pairs among the true top
:data:`TOP` that each rule orders right:

* **before**: the leaderboard after the scheduled matches (every rule agrees closely there:
  the sigmas are about equal);
* **after, mu - 3 sigma**: after the play-offs, ranked as before issue 33;
* **after, mu**: after the play-offs, ranked by TrueSkill ``mu`` (the referee's rule now,
  :func:`referee.ranking.ratings.rank_rule`);
* **after, Plackett-Luce**: after the play-offs, ranked by a Plackett-Luce fit (the
  multiplayer Bradley-Terry model) of every result, by the minorisation-maximisation
  algorithm of Hunter (2004), with one win and one loss against a virtual bot of average
  strength so that the fit exists when a bot won or lost everything.

**The field.** Playing 16 real bots of known order to the depth needed takes hours, so the
results are drawn from a model with what matters here: each bot has a strength (the true
order, :data:`GAP` apart), each seat of a deal gets a hand whose luck is drawn once from
the deal's seed (shared by every rotation and by every table that shares the deal, as the
referee's duplicate deals are), and each match adds its own noise; places follow the
performances. The schedule, the play-off planning, the ratings and the bootstrap are the
referee's own code. Each seed is a tournament on the balanced tables
(``tables = "balanced"``: 20 tables of 4 for 16 bots) with :data:`START_DEALS` deals, then
play-offs for the top :data:`TOP` until 0.95 or :data:`BUDGET_PER_BOT` play-off matches per
bot. The share is counted over seeds and pairs, with a Wilson 95 % interval; the
**crossing point** of a rule is the fewest play-off matches per bot (of the levels measured)
at which its share reaches :data:`RELIABLE`, with a bootstrap 95 % interval over seeds.
Every draw is seeded: the same ``--after-seeds`` give the same figures.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.ladder import TABLE_SIZE
from referee.ranking.playoff import plan_round
from referee.ranking.ratings import Rater, make_environment, rank_key
from referee.specs import MatchSpec, PlayoffSettings, RatingSettings, StoredMatch, StoredSeat
from referee.tournament.scheduler import round_robin

SECRET = hashlib.sha256(b"arschloch-referee ranking after play-offs").digest()
BOTS = 16
TOP = 8
GAP = 0.12
"""Strength between true neighbours, in units of a hand's luck (and of a match's noise)."""
START_DEALS = 2
BUDGET_PER_BOT = 160
LEVELS = (0, 10, 20, 40, 60, 80, 120, 160)
"""Play-off matches per bot (over the whole field) at which the orders are taken."""
RELIABLE = 0.8
"""The share of adjacent true pairs ordered right that makes a rule's order reliable."""
RULES = ("before", "after, mu - 3 sigma", "after, mu", "after, Plackett-Luce")

NAMES = tuple(f"b{i:02d}" for i in range(BOTS))
STRENGTH = {name: GAP * (BOTS - i) for i, name in enumerate(NAMES)}
TRUTH = NAMES  # strongest first


def play_model(spec: MatchSpec) -> StoredMatch:
    """One match of the model field (module docstring): a pure function of ``spec``."""
    luck = random.Random(f"hands {spec.deal_seed}")
    hands = [luck.gauss(0.0, 1.0) for _ in spec.table]
    noise = random.Random(f"match {spec.key}")
    performance = [
        STRENGTH[name] + hands[seat] + noise.gauss(0.0, 1.0) for seat, name in enumerate(spec.table)
    ]
    order = sorted(range(len(spec.table)), key=lambda seat: -performance[seat])
    seats = tuple(
        StoredSeat(seat, spec.table[seat], place, len(order) - place, False, None, None)
        for place, seat in enumerate(order, start=1)
    )
    return StoredMatch(spec, seats)


def plackett_luce(matches: Sequence[StoredMatch], names: Sequence[str]) -> list[str]:
    """``names`` ordered by a Plackett-Luce fit of every match's places (best first; ties
    in the fit by name). Shared places are taken in seat order (the model field has none)."""
    index = {name: i for i, name in enumerate(names)}
    orders = [
        [index[s.name] for s in sorted(m.seats, key=lambda s: (s.place, s.seat))] for m in matches
    ]
    wins = [1.0] * len(names)  # the virtual bot's win and loss for each
    for order in orders:
        for winner in order[:-1]:
            wins[winner] += 1.0
    gamma = [1.0] * len(names)
    for _ in range(500):
        denominator = [2.0 / (1.0 + g) for g in gamma]  # the two virtual matches
        for order in orders:
            tail = sum(gamma[i] for i in order)
            share = 0.0
            for winner in order[:-1]:
                share += 1.0 / tail
                denominator[winner] += share
                tail -= gamma[winner]
            denominator[order[-1]] += share
        new = [w / d for w, d in zip(wins, denominator, strict=True)]
        scale = math.exp(sum(math.log(g) for g in new) / len(new))
        new = [g / scale for g in new]
        change = max(abs(math.log(a / b)) for a, b in zip(new, gamma, strict=True))
        gamma = new
        if change < 1e-7:
            break
    return sorted(names, key=lambda n: (-gamma[index[n]], n))


def right_pairs(order: Sequence[str]) -> tuple[bool, ...]:
    """Which adjacent true pairs of the true top :data:`TOP` ``order`` puts right."""
    place = {name: i for i, name in enumerate(order)}
    return tuple(place[a] < place[b] for a, b in itertools.pairwise(TRUTH[:TOP]))


Run = dict[str, list[tuple[bool, ...]]]
"""One seed: for each rule, at each of :data:`LEVELS`, which pairs it orders right."""


def one_seed(seed: int) -> Run:
    """One tournament: for each rule, the pairs it orders right at each of :data:`LEVELS`."""
    specs = list(round_robin(NAMES, TABLE_SIZE, START_DEALS, seed, SECRET, tables="balanced"))
    matches = [play_model(spec) for spec in specs]
    budget = BUDGET_PER_BOT * BOTS // TABLE_SIZE
    settings = PlayoffSettings(top=TOP, until=0.95, budget=budget)
    ends = [len(matches)]
    planner = Rater()
    for round_no in itertools.count():
        plan = plan_round(
            round_no,
            matches,
            specs,
            NAMES,
            settings=settings,
            ratings=RatingSettings(),
            rules=None,
            table_size=TABLE_SIZE,
            seed=seed,
            secret=SECRET,
            rater=planner,
        )
        if not plan.specs:
            break
        specs += plan.specs
        matches += [play_model(spec) for spec in plan.specs]
        ends.append(len(matches))
    env = make_environment()
    rater = Rater()
    before = rater.rate(matches[: ends[0]], NAMES, env=env)
    first = right_pairs([r.name for r in sorted(before, key=rank_key("conservative"))])
    out: Run = {rule: [] for rule in RULES}
    for level in LEVELS:
        end = [e for e in ends if (e - ends[0]) * TABLE_SIZE / BOTS <= level + 1e-9][-1]
        ratings = rater.rate(matches[:end], NAMES, env=env)
        out["before"].append(first)
        for rule, key in (("after, mu - 3 sigma", "conservative"), ("after, mu", "mu")):
            ordered = sorted(ratings, key=rank_key(key))  # type: ignore[arg-type]
            out[rule].append(right_pairs([r.name for r in ordered]))
        out["after, Plackett-Luce"].append(right_pairs(plackett_luce(matches[:end], NAMES)))
    return out


def wilson(right: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial share."""
    if total == 0:
        return (0.0, 1.0)
    p = right / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (centre - half, centre + half)


@dataclass
class After:
    """Every seed's pairs ordered right, by rule and level."""

    seeds: int = 0
    runs: list[Run] = field(default_factory=list)

    def share(self, rule: str, i: int, runs: Sequence[Run] | None = None) -> float:
        chosen = self.runs if runs is None else runs
        return sum(sum(run[rule][i]) for run in chosen) / ((TOP - 1) * len(chosen))

    def disagreements(self, rule: str, other: str, i: int) -> tuple[int, int]:
        """Of the pairs ``rule`` and ``other`` order differently at level ``i``: how many
        ``rule`` puts right, and how many there are (a paired comparison of two rules)."""
        right = total = 0
        for run in self.runs:
            for mine, theirs in zip(run[rule][i], run[other][i], strict=True):
                if mine != theirs:
                    total += 1
                    right += mine
        return right, total

    def crossing(self, rule: str, runs: Sequence[Run] | None = None) -> float:
        """The fewest play-off matches per bot at which ``rule``'s share reaches
        :data:`RELIABLE` (``inf`` when none does)."""
        return next(
            (lv for i, lv in enumerate(LEVELS) if self.share(rule, i, runs) >= RELIABLE),
            math.inf,
        )

    def crossing_interval(self, rule: str, resamples: int = 1000) -> tuple[float, float]:
        """A bootstrap 95 % interval of :meth:`crossing` over seeds."""
        rng = random.Random(f"crossing {rule}")
        found = sorted(
            self.crossing(rule, [rng.choice(self.runs) for _ in self.runs])
            for _ in range(resamples)
        )
        return found[int(0.025 * resamples)], found[int(0.975 * resamples) - 1]

    def lines(self) -> list[str]:
        total = (TOP - 1) * len(self.runs)
        out = [
            f"ranking after play-offs (model field: {BOTS} bots {GAP} apart, balanced tables of "
            f"{TABLE_SIZE}, {START_DEALS} deals, then play-offs top {TOP} until 0.95, budget "
            f"{BUDGET_PER_BOT} per bot; {len(self.runs)} seeds): share of the {TOP - 1} adjacent "
            f"true pairs of the top {TOP} ordered right ({total} pairs per figure, Wilson 95 %), "
            "by play-off matches per bot",
        ]
        for rule in RULES:
            cells = []
            for i, level in enumerate(LEVELS):
                right = sum(sum(run[rule][i]) for run in self.runs)
                low, high = wilson(right, total)
                cells.append(f"{level:g}: {right / total:.3f} [{low:.3f}, {high:.3f}]")
            out.append(f"  {rule + ':':<22} " + ", ".join(cells))
        for rule in RULES[1:]:
            point = self.crossing(rule)
            low, high = self.crossing_interval(rule)
            out.append(
                f"  crossing ({RELIABLE:g} of pairs right), {rule}: {point:g} play-off matches "
                f"per bot (bootstrap 95 % {low:g} to {high:g})"
            )
        for other in ("after, mu - 3 sigma", "after, Plackett-Luce"):
            cells = []
            for i, level in enumerate(LEVELS[1:], start=1):
                right, total = self.disagreements("after, mu", other, i)
                low, high = wilson(right, total)
                cells.append(
                    f"{level:g}: {right}/{total}" + (f" [{low:.2f}, {high:.2f}]" if total else "")
                )
            out.append(
                f"  where mu and {other} disagree, mu is right in (Wilson 95 %): "
                + ", ".join(cells)
            )
        last = len(LEVELS) - 1
        mu, cons = self.share("after, mu", last), self.share("after, mu - 3 sigma", last)
        pl, before = self.share("after, Plackett-Luce", last), self.share("before", last)
        out.append(
            f"  target: after, mu >= after, mu - 3 sigma at the budget: {mu:.3f} vs {cons:.3f} "
            f"({'met' if mu >= cons else 'NOT met'}); after, mu >= before: {mu:.3f} vs "
            f"{before:.3f} ({'met' if mu >= before else 'NOT met'}); Plackett-Luce {pl:.3f}"
        )
        return out


def run_after(seeds: int = 64, progress: Callable[[str], None] | None = None) -> After:
    """Measure :class:`After` over ``seeds`` seeds."""
    after = After(seeds)
    for seed in range(1, seeds + 1):
        after.runs.append(one_seed(seed))
        if progress is not None and seed % 8 == 0:
            progress(f"after play-offs: seed {seed}/{seeds} done")
    return after
