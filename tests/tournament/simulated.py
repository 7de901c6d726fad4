"""Round robins made up, not played, for the tests of statistics over stored results.

Each bot has a strength, each deal gives each seat a strength of cards (shared by the
deal's seat rotations, as duplicate deals are), and a seat's performance is the sum of
both and some noise; the places follow. A bot that "lets its partner win" moves the
partner to first place whenever both sit at a table.
"""

from __future__ import annotations

import itertools
import random

from referee.specs import MatchSpec, StoredMatch, StoredSeat


def round_robin(
    seed: int,
    *,
    bots: int = 5,
    table_size: int = 3,
    deals: int = 6,
    spread: float = 0.5,
    strength: dict[str, float] | None = None,
    helps: tuple[str, str] | None = None,
) -> list[StoredMatch]:
    """Every table of ``table_size`` of ``bots`` bots, ``deals`` deals each in every seat
    rotation; ``helps = (x, y)``: x lets y win wherever both play."""
    rnd = random.Random(seed)
    names = [f"bot{i}" for i in range(bots)]
    theta = {n: rnd.gauss(0, spread) for n in names} | (strength or {})
    out = []
    for t, table in enumerate(itertools.combinations(names, table_size)):
        for d in range(deals):
            cards = [rnd.gauss(0, 1) for _ in table]
            for r in range(table_size):
                seated = table[r:] + table[:r]
                perf = [theta[b] + cards[s] + rnd.gauss(0, 1) for s, b in enumerate(seated)]
                order = sorted(range(table_size), key=lambda s: -perf[s])
                if helps and helps[0] in seated and helps[1] in seated:
                    order.remove(seated.index(helps[1]))
                    order.insert(0, seated.index(helps[1]))
                spec = MatchSpec(key=f"rr/{t:012x}/d{d:03d}/r{r}", table=seated, deal=d,
                                 rotation=r, deal_seed=1, match_seed=1)  # fmt: skip
                seats = tuple(
                    StoredSeat(s, seated[s], place, 0, False, None, None)
                    for place, s in enumerate(order, start=1)
                )
                out.append(StoredMatch(spec, seats))
    return out
