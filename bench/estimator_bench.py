"""Estimators that use more of a match than its final places: do they order the ladder sooner?

``python -m bench.estimator_bench [--seeds 16] [--workers 2] [--format to-15]`` plays the
ranking benchmark's schedules (:mod:`bench.ranking_bench`: (a) random tables with independent
deals, (b) the balanced duplicate round robin with deals shared across tables, and (b) with
the rotations of a table sharing a deal) on the ladder (:mod:`bench.ladder`), keeping every
round's places, and measures the Kendall tau of each estimator's order against the true
order by matches per bot, beside the published one:

* ``trueskill``: today's leaderboard, TrueSkill on each match's places (``mu - 3 sigma``);
* ``mean``: the mean normalised finishing score of the matches;
* ``rounds``: TrueSkill on every round's places, each round rated as a game of its own
  (a match of 6 rounds counts six times), ``mu - 3 sigma``;
* ``round-mean``: the mean normalised place of every round;
* ``deal-effects``: a least-squares fit of each match's normalised score as the bot's
  strength plus an effect of the cards it held (one per deal and seat: the seats that held
  the same hand, at other tables or in other rotations, share it), the effects shrunk
  towards 0 as a ridge with weight 1 (a hand held once says nothing apart from the bot);
  ranked by strength.

The target (the issue's): in matches to 15 points, tau >= 0.95 with at most half the
matches per bot that random tables need with today's leaderboard (280 in docs/performance.md).
An estimator is adopted only where this shows it helps.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.ladder import DEFAULT_FORMAT, FORMATS, LADDER, TABLE_SIZE, play_rounds
from bench.ladder_truth import load_truth
from bench.ranking_bench import PLANS, SECRET, kendall_tau
from referee.ranking.intervals import normalised_score
from referee.ranking.ratings import make_environment, rate, rating_places
from referee.specs import MatchSpec, StoredMatch, StoredSeat
from referee.tournament.deals import deal_seed
from referee.tournament.scheduler import Duplicate, round_robin

Played = tuple[StoredMatch, tuple[tuple[int, ...], ...]]
"""A match and its rounds (each round's seats, in the order they finished it)."""

ESTIMATORS = ("trueskill", "mean", "rounds", "round-mean", "deal-effects")
TARGET_TAU = 0.95
RIDGE = 1.0


def _play(packed: tuple[MatchSpec, str]) -> Played:
    return play_rounds(packed[0], LADDER, packed[1])


def play_all(specs: Sequence[MatchSpec], fmt: str, workers: int) -> list[Played]:
    if workers <= 1:
        return [_play((spec, fmt)) for spec in specs]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(_play, [(spec, fmt) for spec in specs], chunksize=16)


def random_specs(seed: int, matches: int) -> list[MatchSpec]:
    """(a): random tables in random order with fresh cards (as the ranking bench's)."""
    names = sorted(LADDER)
    rng = random.Random(f"random tables {seed}")
    specs = []
    for i in range(matches):
        table = tuple(rng.sample(names, TABLE_SIZE))
        cards = deal_seed(SECRET, "random", seed, i)
        key = f"a/{seed}/{i:06d}"
        specs.append(
            MatchSpec(key=key, table=table, deal=0, rotation=0, deal_seed=cards, match_seed=cards)
        )
    return specs


def _round_matches(played: Sequence[Played]) -> list[StoredMatch]:
    """Every round as a match of its own (places by the order the seats finished it)."""
    found = []
    for match, rounds in played:
        table = match.spec.table
        for number, order in enumerate(rounds):
            spec = match.spec.model_copy(update={"key": f"{match.spec.key}/{number:03d}"})
            seats = tuple(
                StoredSeat(seat, table[seat], place, 0, False, None, None)
                for place, seat in enumerate(order, start=1)
            )
            found.append(StoredMatch(spec, seats))
    return found


def _means(matches: Sequence[StoredMatch]) -> dict[str, float]:
    totals: dict[str, list[float]] = {name: [] for name in LADDER}
    for match in matches:
        for name, place in rating_places(match):
            totals[name].append(normalised_score(place, len(match.seats)))
    return {name: sum(xs) / len(xs) if xs else 0.0 for name, xs in totals.items()}


def _by(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda name: (-scores[name], name))


def deal_effects(matches: Sequence[StoredMatch]) -> dict[str, float]:
    """Each bot's strength in score = strength + effect(deal, seat) + noise, by alternating
    least squares with the effects shrunk as a ridge (:data:`RIDGE`)."""
    rows = []
    for match in matches:
        places = dict(rating_places(match))
        for seat in match.seats:
            score = normalised_score(places[seat.name], len(match.seats))
            rows.append((seat.name, (match.spec.deal_id, seat.seat), score))
    strength = dict.fromkeys(LADDER, 0.5)
    effect: dict[tuple[str, int], float] = {}
    for _ in range(30):
        sums: dict[tuple[str, int], list[float]] = {}
        for name, hand, score in rows:
            sums.setdefault(hand, []).append(score - strength[name])
        effect = {hand: sum(xs) / (len(xs) + RIDGE) for hand, xs in sums.items()}
        by_bot: dict[str, list[float]] = {name: [] for name in LADDER}
        for name, hand, score in rows:
            by_bot[name].append(score - effect[hand])
        strength = {name: sum(xs) / len(xs) if xs else 0.5 for name, xs in by_bot.items()}
    return strength


def orders(played: Sequence[Played]) -> dict[str, list[str]]:
    """Each estimator's order of the ladder from ``played``."""
    names = sorted(LADDER)
    matches = [match for match, _ in played]
    rounds = _round_matches(played)
    env = make_environment()
    return {
        "trueskill": [r.name for r in rate(matches, names, env=env)],
        "mean": _by(_means(matches)),
        "rounds": [r.name for r in rate(rounds, names, env=env)],
        "round-mean": _by(_means(rounds)),
        "deal-effects": _by(deal_effects(matches)),
    }


@dataclass(frozen=True)
class Row:
    """A schedule: its label, and the matches per bot it is measured at."""

    key: str
    label: str
    levels: tuple[int, ...]


def measure_seed(
    seed: int, fmt: str, rows: Sequence[Row], workers: int, truth: Sequence[str]
) -> dict[tuple[str, int, str], float]:
    """Tau of every estimator, row and level for one seed."""
    n = len(LADDER)
    out: dict[tuple[str, int, str], float] = {}
    for row in rows:
        if row.key == "a":
            played = play_all(random_specs(seed, max(row.levels) * n // TABLE_SIZE), fmt, workers)
            prefixes = {lv: played[: lv * n // TABLE_SIZE] for lv in row.levels}
        else:
            duplicate: Duplicate = "rotations" if row.key == "b-rot" else "tables"
            per_deal = row.levels[0]
            deals = max(row.levels) // per_deal
            specs = round_robin(
                sorted(LADDER), TABLE_SIZE, deals, seed, SECRET, duplicate=duplicate
            )
            played = play_all(specs, fmt, workers)
            prefixes = {
                lv: [p for p in played if p[0].spec.deal < lv // per_deal] for lv in row.levels
            }
        for level, prefix in prefixes.items():
            for estimator, order in orders(prefix).items():
                out[row.key, level, estimator] = kendall_tau(order, truth)
    return out


def run(seeds: int, fmt: str, workers: int, say: Callable[[str], None]) -> list[str]:
    plan = PLANS[fmt]
    per_deal = 140  # matches per bot in a deal of every 4-rung table of 8
    deals = tuple(per_deal * d for d in range(1, plan.deals + 1))
    rows = [
        Row("a", "random tables, independent deals", tuple(plan.random_levels)),
        Row("b", "round robin, deals shared across tables", deals),
        Row("b-rot", "round robin, deals shared by rotations", deals),
    ]
    truth = list(load_truth(fmt)["order"])
    taus: dict[tuple[str, int, str], list[float]] = {}
    started = time.monotonic()
    for seed in range(1, seeds + 1):
        for key, tau in measure_seed(seed, fmt, rows, workers, truth).items():
            taus.setdefault(key, []).append(tau)
        say(f"{fmt}: seed {seed}/{seeds}, {time.monotonic() - started:.0f} s")
    lines = [f"estimators, {fmt}: Kendall tau by matches per bot, mean of {seeds} seeds"]
    for row in rows:
        lines.append(f"  ({row.key}) {row.label}:")
        for estimator in ESTIMATORS:
            means = {lv: sum(taus[row.key, lv, estimator]) / seeds for lv in row.levels}
            cells = ", ".join(f"{lv}: {tau:.3f}" for lv, tau in means.items())
            reached = next((lv for lv, tau in means.items() if tau >= TARGET_TAU), None)
            need = f"tau >= {TARGET_TAU} at {reached}" if reached else "not reached"
            lines.append(f"      {estimator:>12}: {cells} ({need})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--format", choices=[*FORMATS, "both"], default=DEFAULT_FORMAT)
    args = parser.parse_args(argv)
    formats = list(FORMATS) if args.format == "both" else [args.format]
    for fmt in formats:
        lines = run(
            args.seeds,
            fmt,
            args.workers,
            lambda line: print("  " + line, file=sys.stderr, flush=True),
        )
        print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
