"""Balanced tables: a round robin that seats every pair of bots together equally often.

A full round robin plays every ``k``-subset of ``n`` bots: C(n, k) tables, which grows like
``n^k`` (12 bots at tables of 4: 495 tables a deal). Ranking needs far less: every bot
should meet every other bot equally often, and play equally often. That is a *balanced
incomplete block design* 2-(n, k, lambda): ``b`` tables of ``k`` bots, each bot at ``r``
tables, each pair of bots together at exactly ``lambda`` tables. Counting the pairs at a
bot's tables and all the bot places gives the two conditions every such design meets:

* ``r (k - 1) = lambda (n - 1)``  (a bot's ``r`` tables seat ``k - 1`` others each, and
  each of the ``n - 1`` others ``lambda`` times);
* ``b k = n r``  (seats at the tables = seats taken by the bots);

and Fisher's inequality ``b >= n``. :func:`design_size` takes the smallest ``lambda`` that
satisfies them: for 8 bots at 4, ``lambda = 3``, 14 tables (the 14 planes of the affine
space AG(3, 2) are one such design), every bot at 7 of them; for 12 bots, 33 tables
instead of 495.

**Construction.** :func:`balanced_design` finds the tables by a seeded local search. It
starts from ``r`` shuffled copies of the field cut into ``b`` tables of ``k`` (a bot that
lands twice at one table is swapped with a bot of another table), and from then on only
ever *swaps* a bot of one table with a bot of another that sits at neither. A swap keeps
every bot's number of tables, so **every bot plays exactly r tables by construction**. Each
step takes a pair that meets too often and up to :data:`_TABLES_PER_STEP` of the tables
where it meets; for each, and for each of the pair's two bots, it weighs the swaps with the
bots that would gain most by sitting there (:data:`_TOP_ENTRANTS`), at every table of
theirs, and makes the one that lowers ``sum((count - lambda)^2)`` over all pairs the most
(ties drawn from the seed; a short tabu keeps a bot from going straight back). The search
stops when every pair meets exactly ``lambda`` times, or after a fixed amount of work
(:data:`SEARCH_WORK` candidate swaps: it never depends on the clock, so the result does
not depend on the machine).

**What is guaranteed, and checked before a design is returned.** In order of preference:

1. exactly ``lambda`` for every pair, at the smallest ``lambda``;
2. if the search did not reach it and ``lambda >= 2``: every pair ``lambda - 1``,
   ``lambda`` or ``lambda + 1`` times, as even as the search got (some designs do not
   exist: no 2-(15, 5, 2), by the Hall-Connor theorem, and no 2-(16, 6, 1) by Fisher);
3. the same two at ``2 lambda`` (where ``lambda = 1`` and no Steiner system was found,
   1 ± 1 could leave a pair that never meets);
4. the complete round robin, whenever it is no larger than the design, or when all else
   failed (it is a design with ``lambda = C(n - 2, k - 2)``) and it has at most
   :data:`COMPLETE_FALLBACK` tables;
5. past that size, the tables the search found at the smaller ``lambda`` in which every
   pair meets at least once (64 bots at tables of 6: every pair 3 to 6 times at
   ``lambda = 5``, after about 10 seconds of search); the complete round robin only if
   there are none.

The search finds exact designs for every field from 4 to 24 bots at tables of 3 and 4, each
in under a second, and for most fields at 5; at 6, most fields above 14 bots end with the
within-one tables after a few seconds (``tests/tournament/test_design.py`` checks the
guarantees over these ranges, the exact ones where they are claimed). It
uses its own generator (SplitMix64 seeded by SHA-256 of the tournament seed and the
parameters) and integer arithmetic only, so the same seed gives the same tables in every
Python version and on every machine.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from dataclasses import dataclass

__all__ = [
    "SEARCH_WORK",
    "DesignSize",
    "balanced_design",
    "design_size",
    "pair_counts",
]

SEARCH_WORK = 1_000_000
"""Candidate swaps the search may weigh for one ``lambda`` before it settles for less."""

COMPLETE_FALLBACK = 10_000
"""Where the search reaches neither guarantee, the complete round robin is played only if it
has at most this many tables (64 bots at tables of 6 would make 75 million)."""

_TOP_ENTRANTS = 6
"""Bots considered for a table per step: the ones that gain the most by sitting there."""

_TABLES_PER_STEP = 3
"""Tables of the chosen pair a step tries to split (all of them when it meets less often)."""

_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class DesignSize:
    """``lam``: meetings per pair; ``tables``: tables per deal; ``per_bot``: tables per bot."""

    lam: int
    tables: int
    per_bot: int


def design_size(n: int, k: int) -> DesignSize:
    """The smallest 2-(n, k, lambda) the counting conditions and Fisher's inequality allow."""
    if not 2 <= k <= n:
        raise ValueError(f"tables of {k} need 2 to {n} seats")
    lam = 1
    while (lam * (n - 1)) % (k - 1) or (lam * n * (n - 1)) % (k * (k - 1)):
        lam += 1
    size = _size(n, k, lam)
    while size.tables < n:  # Fisher: a design has at least as many tables as bots
        size = _size(n, k, 2 * size.lam)
    return size


def _size(n: int, k: int, lam: int) -> DesignSize:
    return DesignSize(lam, lam * n * (n - 1) // (k * (k - 1)), lam * (n - 1) // (k - 1))


def pair_counts(tables: tuple[tuple[int, ...], ...]) -> dict[tuple[int, int], int]:
    """How many tables seat each pair ``(a, b)``, ``a < b`` (pairs that never meet: absent)."""
    counts: dict[tuple[int, int], int] = {}
    for table in tables:
        for a, b in itertools.combinations(sorted(table), 2):
            counts[a, b] = counts.get((a, b), 0) + 1
    return counts


# Not a cache of objects: an immutable value (tuples of tuples of ints), a pure function of
# (n, k, seed); bounded, as a long-lived process may schedule for many seeds.
@functools.lru_cache(maxsize=16)
def balanced_design(n: int, k: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """Tables (sorted tuples of bot numbers ``0 .. n-1``, in sorted order) for ``n`` bots
    at tables of ``k``: see the module docstring for what is guaranteed, and in what order."""
    complete = math.comb(n, k)
    size = design_size(n, k)
    covering: list[tuple[tuple[int, ...], ...]] = []
    for lam in (size.lam, 2 * size.lam):
        current = _size(n, k, lam)
        if current.tables >= complete:
            break
        search = _Search(n, k, current, _Rng("balanced tables", seed, n, k, lam))
        search.run(SEARCH_WORK)
        if search.deviation == 0 or (search.deviation == 1 and lam >= 2):
            return search.result()
        if search.deviation < lam:
            covering.append(search.result())
    if covering and complete > COMPLETE_FALLBACK:
        return covering[0]
    return tuple(itertools.combinations(range(n), k))


class _Rng:
    """SplitMix64 from a SHA-256 seed: a generator whose algorithm cannot change under us."""

    def __init__(self, *parts: object) -> None:
        digest = hashlib.sha256(json.dumps(parts).encode("utf-8")).digest()
        self.state = int.from_bytes(digest[:8], "big")

    def below(self, bound: int) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return (z ^ (z >> 31)) % bound


def _random_tables(n: int, k: int, size: DesignSize, rng: _Rng) -> list[list[int]]:
    """``r`` shuffled copies of the bots cut into tables of ``k``, then a bot seated twice
    at one table swapped with one from another table (where neither is seated yet)."""
    seats: list[int] = []
    for _ in range(size.per_bot):
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            j = rng.below(i + 1)
            order[i], order[j] = order[j], order[i]
        seats += order
    tables = [seats[t * k : (t + 1) * k] for t in range(size.tables)]
    for table in tables:
        while len(set(table)) < k:
            x = next(a for a in table if table.count(a) > 1)
            other = tables[rng.below(len(tables))]
            y = other[rng.below(k)]
            if y not in table and x not in other:
                table[table.index(x)] = y
                other[other.index(y)] = x
    return tables


class _Search:
    """The swap local search of the module docstring, on one ``lambda``."""

    def __init__(self, n: int, k: int, size: DesignSize, rng: _Rng) -> None:
        self.n, self.k, self.lam, self.rng = n, k, size.lam, rng
        self.tables = _random_tables(n, k, size, rng)
        self.at: list[set[int]] = [set() for _ in range(n)]  # tables of each bot
        self.excess = [[-self.lam] * n for _ in range(n)]  # meetings - lambda, by pair
        for t, table in enumerate(self.tables):
            for a in table:
                self.at[a].add(t)
            for a, b in itertools.combinations(table, 2):
                self.excess[a][b] += 1
                self.excess[b][a] += 1
        self.over = {(a, b) for a in range(n) for b in range(a + 1, n) if self.excess[a][b] > 0}
        self.cost = sum(self.excess[a][b] ** 2 for a in range(n) for b in range(a + 1, n))
        self.best = (self.cost, [list(t) for t in self.tables])
        self.tabu: dict[tuple[int, int], int] = {}

    @property
    def deviation(self) -> int:
        """The largest ``|meetings - lambda|`` of the best tables found."""
        counts = pair_counts(self.result())
        n = self.n
        return max(abs(counts.get((a, b), 0) - self.lam) for a in range(n) for b in range(a + 1, n))

    def result(self) -> tuple[tuple[int, ...], ...]:
        return tuple(sorted(tuple(sorted(t)) for t in self.best[1]))

    def run(self, work: int) -> None:
        """Improve until exact or ``work`` candidate swaps have been weighed."""
        step = 0
        while self.cost and work > 0:
            work -= self._step(step)
            step += 1
            if self.cost < self.best[0]:
                self.best = (self.cost, [list(t) for t in self.tables])

    def _step(self, step: int) -> int:
        """One swap for a pair that meets too often; returns the candidates weighed."""
        over = sorted(self.over)
        u, v = over[self.rng.below(len(over))]
        best: int | None = None
        moves: list[tuple[int, int, int, int]] = []
        weighed = 0
        meetings = sorted(self.at[u] & self.at[v])
        for _ in range(min(_TABLES_PER_STEP, len(meetings))):
            a = meetings.pop(self.rng.below(len(meetings)))
            for x in (u, v):
                for delta, move in self._swaps(a, x, step):
                    weighed += 1
                    if best is None or delta < best:
                        best, moves = delta, [move]
                    elif delta == best:
                        moves.append(move)
        if best is not None:
            self._swap(*moves[self.rng.below(len(moves))], step)
            self.cost += best
        return max(weighed, 1)

    def _swaps(self, a: int, x: int, step: int) -> list[tuple[int, tuple[int, int, int, int]]]:
        """Swaps taking ``x`` out of table ``a``: ``(change of cost, (a, x, b, y))``.

        With ``e`` the excess of a pair, one more meeting changes ``e^2`` by ``2e + 1`` and
        one fewer by ``1 - 2e``; a bot sitting at both tables keeps both its pairs.
        """
        e, table_a = self.excess, self.tables[a]
        rest = [w for w in table_a if w != x]
        leave = sum(1 - 2 * e[x][w] for w in rest)
        entrants = sorted(
            (sum(2 * e[y][w] + 1 for w in rest), self.rng.below(1 << 30), y)
            for y in range(self.n)
            if y not in table_a and self.tabu.get((y, a), -1) <= step
        )
        out = []
        for enter, _, y in entrants[:_TOP_ENTRANTS]:
            for b in sorted(self.at[y]):
                table_b = self.tables[b]
                if x in table_b:
                    continue
                delta = leave + enter - 4 * sum(w in table_b for w in rest)
                delta += sum(2 - 2 * e[y][w] + 2 * e[x][w] for w in table_b if w != y)
                out.append((delta, (a, x, b, y)))
        return out

    def _swap(self, a: int, x: int, b: int, y: int, step: int) -> None:
        """Move ``x`` from table ``a`` to ``b`` and ``y`` the other way; ``x`` may not
        come back to ``a`` for a few steps."""
        for table, leaving, entering in ((a, x, y), (b, y, x)):
            for w in self.tables[table]:
                if w != leaving:
                    self._meet(leaving, w, -1)
                    self._meet(entering, w, +1)
        self.tables[a][self.tables[a].index(x)] = y
        self.tables[b][self.tables[b].index(y)] = x
        self.at[x].discard(a)
        self.at[x].add(b)
        self.at[y].discard(b)
        self.at[y].add(a)
        self.tabu[x, a] = step + 1 + self.rng.below(10)

    def _meet(self, p: int, q: int, change: int) -> None:
        self.excess[p][q] += change
        self.excess[q][p] += change
        pair = (p, q) if p < q else (q, p)
        if self.excess[p][q] > 0:
            self.over.add(pair)
        else:
            self.over.discard(pair)
