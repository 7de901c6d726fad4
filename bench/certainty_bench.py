"""Which certainty belongs beside the rank? The shared-deal figure against TrueSkill's.

``python -m bench.certainty_bench [--format one-round|to-15] [--seeds 24] [--deals 3]``
plays seeded round robins of the ladder of :mod:`bench.ladder` (8 rungs of known order,
:mod:`bench.ladder_truth`), and after each deal takes the adjacent pairs of the published
order (TrueSkill ``mu - 3 sigma``). For each pair it compares three figures for "the upper
bot is the better one" with the truth:

* ``shared``: the leaderboard's **over next**, the bootstrap over the deal blocks both bots
  played (:func:`referee.ranking.intervals.order_confidence`);
* ``trueskill``: ``Phi((mu_a - mu_b) / sqrt(sigma_a**2 + sigma_b**2))``, TrueSkill's own
  belief that ``a``'s skill is higher;
* ``match``: the same with ``2 beta**2`` under the root, the chance that ``a`` places above
  ``b`` in one match (a prediction of a game, not a certainty of an order).

It prints each one's Brier score (mean squared error of the figure against 1 for right, 0
for wrong: lower is better) and, for ``shared``, how many pairs it puts below 0.5 (it
disagrees with the rank) and in how many of those the rank was wrong. The figures in
docs/performance.md and :class:`referee.publish.leaderboard.OverNext` came from
``--seeds 24 --deals 3`` in one-round matches and ``--format to-15 --seeds 12 --deals 2``.
Every deal and decision is seeded: the same arguments print the same figures.
"""

from __future__ import annotations

import argparse
import itertools
import math
from dataclasses import dataclass

from bench.ladder import LADDER, TABLE_SIZE, play_all
from bench.ladder_truth import load_truth
from bench.ranking_bench import SECRET
from referee.ranking.intervals import deal_scores, order_confidence
from referee.ranking.ratings import make_environment, rate
from referee.specs import RatingSettings
from referee.tournament.scheduler import round_robin


@dataclass(frozen=True)
class Pair:
    deals: int
    right: bool
    shared: float
    trueskill: float
    match: float


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def pairs(fmt: str, seeds: int, deals: int, workers: int = 1) -> list[Pair]:
    """The adjacent pairs of the published order after each deal of each seed's round robin."""
    truth = {row["name"]: i for i, row in enumerate(load_truth(fmt)["rungs"])}
    beta = RatingSettings().beta
    names = sorted(LADDER)
    out = []
    for seed in range(seeds):
        specs = round_robin(names, TABLE_SIZE, deals, 1000 + seed, SECRET)
        matches = play_all(specs, LADDER, workers=workers, fmt=fmt)
        for upto in range(1, deals + 1):
            played = [m for m in matches if m.spec.deal < upto]
            rated = {r.name: r for r in rate(played, names, env=make_environment())}
            order = sorted(names, key=lambda n: -rated[n].score)
            blocks = deal_scores(played)
            for a, b in itertools.pairwise(order):
                ra, rb = rated[a], rated[b]
                spread = ra.sigma**2 + rb.sigma**2
                out.append(
                    Pair(
                        deals=upto,
                        right=truth[a] < truth[b],
                        shared=order_confidence(blocks, a, b).confidence,
                        trueskill=_phi((ra.mu - rb.mu) / math.sqrt(spread)),
                        match=_phi((ra.mu - rb.mu) / math.sqrt(spread + 2 * beta**2)),
                    )
                )
    return out


def _brier(values: list[tuple[float, bool]]) -> float:
    return sum((p - right) ** 2 for p, right in values) / len(values)


def report(found: list[Pair]) -> None:
    for deals in sorted({p.deals for p in found}):
        rows = [p for p in found if p.deals == deals]
        against = [p for p in rows if p.shared < 0.5]
        print(
            f"after {deals} deal(s), {len(rows)} pairs: Brier shared "
            f"{_brier([(p.shared, p.right) for p in rows]):.4f}, trueskill "
            f"{_brier([(p.trueskill, p.right) for p in rows]):.4f}, match "
            f"{_brier([(p.match, p.right) for p in rows]):.4f}; shared below 0.5 in "
            f"{len(against)}, the rank wrong in {sum(not p.right for p in against)} of them"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="one-round", choices=("one-round", "to-15"))
    parser.add_argument("--seeds", type=int, default=24)
    parser.add_argument("--deals", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    report(pairs(args.format, args.seeds, args.deals, args.workers))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
