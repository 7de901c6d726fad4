"""How the collusion check behaves: honest pairs flagged by chance, colluders found.

Run ``python -m bench.collusion_bench``. Round robins are made up, not played
(:func:`round_robin`): each bot has a strength, each deal gives each seat a strength of
cards (shared by the deal's seat rotations, as duplicate deals are), and a seat's
performance is the sum of both and some noise; the places follow. Two figures:

* **chance flags**: over many honest tournaments, the share of pairs (with enough shared
  deals to be tested) whose p-value is at or below 0.05, 0.01 and 0.001, as a multiple of
  that level (1.0 is nominal; below is conservative), with the check's margin and without
  it, for fields from even to nearly deterministic strengths (``spread``);
* **power**: the share of 6-entrant tournaments in which a colluding pair is flagged at
  the default level: one lets the other win in all (``q=1``) or some of their matches, or
  both play better together (``team``: a bonus to both one's performances).

``tests/tournament/test_collusion.py`` uses :func:`round_robin` too, on a smaller budget.
"""

from __future__ import annotations

import itertools
import random
import time

from referee.ranking.collusion import MIN_EXCESS, collusion_check
from referee.specs import MatchSpec, StoredMatch, StoredSeat

LEVELS = (0.05, 0.01, 0.001)


def round_robin(
    seed: int,
    *,
    bots: int = 5,
    table_size: int = 3,
    deals: int = 6,
    spread: float = 0.5,
    strength: dict[str, float] | None = None,
    helps: tuple[str, str] | None = None,
    q: float = 1.0,
    team: float = 0.0,
) -> list[StoredMatch]:
    """Every table of ``table_size`` of ``bots`` bots, ``deals`` deals each in every seat
    rotation. ``helps = (x, y)``: where both play, x lets y win (in a share ``q`` of those
    matches) and both perform ``team`` better."""
    rnd = random.Random(seed)
    names = [f"bot{i}" for i in range(bots)]
    theta = {n: rnd.gauss(0, spread) for n in names} | (strength or {})
    out = []
    for t, table in enumerate(itertools.combinations(names, table_size)):
        for d in range(deals):
            cards = [rnd.gauss(0, 1) for _ in table]
            for r in range(table_size):
                seated = table[r:] + table[:r]
                together = helps is not None and helps[0] in seated and helps[1] in seated
                perf = [
                    theta[b] + cards[s] + rnd.gauss(0, 1) + (team if together and b in helps else 0)
                    for s, b in enumerate(seated)
                ]
                order = sorted(range(table_size), key=lambda s: -perf[s])
                if together and helps is not None and (q >= 1 or rnd.random() < q):
                    order.remove(seated.index(helps[1]))
                    order.insert(0, seated.index(helps[1]))
                spec = MatchSpec(
                    key=f"rr/{t:012x}/d{d:03d}/r{r}",
                    table=seated,
                    deal=d,
                    rotation=r,
                    deal_seed=1,
                    match_seed=1,
                )
                seats = tuple(
                    StoredSeat(s, seated[s], place, 0, False, None, None)
                    for place, s in enumerate(order, start=1)
                )
                out.append(StoredMatch(spec, seats))
    return out


def chance_flags(
    seeds: int, *, margin: float, bots: int, table_size: int, deals: int, spread: float
) -> tuple[int, dict[float, float]]:
    """Pairs tested over ``seeds`` honest tournaments, and the share flagged at each level
    as a multiple of the level."""
    pairs = 0
    flagged = dict.fromkeys(LEVELS, 0)
    for seed in range(seeds):
        matches = round_robin(seed, bots=bots, table_size=table_size, deals=deals, spread=spread)
        for p in collusion_check(matches, margin=margin).pairs:
            if p.p_value is not None and p.deals >= 10:
                pairs += 1
                for level in LEVELS:
                    flagged[level] += p.p_value <= level
    return pairs, {level: flagged[level] / pairs / level for level in LEVELS}


def power(seeds: int, *, deals: int, q: float, team: float) -> float:
    """The share of tournaments in which the colluding pair is flagged."""
    found = 0
    for seed in range(seeds):
        matches = round_robin(seed, bots=6, deals=deals, helps=("bot0", "bot1"), q=q, team=team)
        found += any({p.a, p.b} == {"bot0", "bot1"} for p in collusion_check(matches).flagged)
    return found / seeds


def main(seeds: int = 300, power_seeds: int = 40) -> None:
    fields = [
        (5, 3, 6, 0.0),
        (5, 3, 6, 1.0),
        (5, 3, 6, 3.0),
        (6, 3, 4, 0.5),
        (6, 3, 4, 2.5),
        (5, 4, 6, 1.0),
        (4, 3, 12, 1.0),
    ]
    for margin in (MIN_EXCESS, 0.0):
        for bots, k, deals, spread in fields:
            started = time.monotonic()
            pairs, ratio = chance_flags(
                seeds, margin=margin, bots=bots, table_size=k, deals=deals, spread=spread
            )
            shares = ", ".join(f"{ratio[level]:.2f} at {level:g}" for level in LEVELS)
            print(
                f"collusion: chance flags, margin {margin:g}, {bots} bots, {k} per table, "
                f"{deals} deals, spread {spread:g}: {pairs} pairs, {shares} "
                f"(x the level; {time.monotonic() - started:.0f} s)"
            )
    for deals in (4, 12, 20):
        found = ", ".join(
            f"{label} {power(power_seeds, deals=deals, q=q, team=team):.0%}"
            for label, q, team in (
                ("q=1", 1.0, 0.0),
                ("q=0.3", 0.3, 0.0),
                ("q=0.15", 0.15, 0.0),
                ("team 0.5", 0.0, 0.5),
                ("team 1", 0.0, 1.0),
            )
        )
        print(f"collusion: power, 6 bots, 3 per table, {deals} deals: {found}")


def run() -> None:
    main()


if __name__ == "__main__":
    run()
