"""Balanced seating: the seat order each deal of a table is played in.

Every deal is played in all ``k`` cyclic rotations of one *base order* (duplicate play), so
within a deal each bot holds each seat's hand once, but the bots keep their order round the
table: who plays right after whom never changes inside a deal. Seat order matters a lot in
climbing games (the next player is the one you must beat, the previous one the one who must
beat you), so the base order changes from deal to deal, cycling through a *balanced* set of
cyclic orders: over one cycle, every ordered pair of the table's bots sits at every offset
(1 to ``k - 1`` seats apart, clockwise) equally often.

Why each set below is balanced. Let ``O`` be a set of cyclic orders of the labels
``0 .. k-1`` and ``G`` a group of permutations of the labels that maps ``O`` onto itself and
is *2-transitive* (it carries any ordered pair of distinct labels to any other). Write
``N(a, b, o)`` for the number of orders in ``O`` in which ``b`` sits ``o`` seats after ``a``.
A permutation ``g`` in ``G`` maps ``O`` onto itself and keeps offsets, so
``N(a, b, o) = N(g(a), g(b), o)``: for a fixed ``o`` the count is the same ``c_o`` for every
ordered pair. Each cyclic order has exactly ``k`` ordered pairs at offset ``o`` (one per
starting seat), so ``k (k - 1) c_o = k |O|`` and ``c_o = |O| / (k - 1)`` for every offset.
The orbit of any cyclic order under a 2-transitive group is such a set:

* ``k = 3, 4``: every cyclic order, ``(k - 1)!`` of them (``G`` = all permutations): 2 and
  6 deals. No smaller set exists for 4 (checked exhaustively: a set of 3 cannot be balanced).
* ``k = 5``: the orders ``i -> m * i mod 5`` for ``m = 1 .. 4``, the orbit of ``0 1 2 3 4``
  under the affine maps ``x -> m x + c`` of the field of 5 (a translation only rotates the
  order): 4 deals instead of 24.
* ``k = 6``: the orbit of ``0 1 2 4 3 5`` under PSL(2, 5), the Möbius maps
  ``x -> (a x + b) / (c x + d)`` with ``a d - b c`` a non-zero square, acting 2-transitively
  on the projective line ``{0 .. 4, ∞}`` (``∞`` is label 5): 20 deals instead of 120. (No
  set of 5 or 10 is balanced: checked exhaustively.)

:data:`BALANCED_DEALS` is the cycle length: a table played for a multiple of it is exactly
balanced, whatever deal the cycle starts at. The starting point is drawn per table from the
tournament seed, so a tournament with fewer deals still spreads the orders over its tables.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Sequence

__all__ = ["BALANCED_DEALS", "balanced_orders", "base_order"]


@functools.cache  # an immutable value (tuples of tuples of ints), pure in k (3 to 6)
def balanced_orders(k: int) -> tuple[tuple[int, ...], ...]:
    """The balanced set of cyclic orders for ``k`` seats, each starting with label 0."""
    if k in (3, 4):
        return tuple((0, *rest) for rest in itertools.permutations(range(1, k)))
    if k == 5:
        return tuple(_canonical(tuple((m * i) % 5 for i in range(5))) for m in range(1, 5))
    if k == 6:
        return _psl2_5_orbit((0, 1, 2, 4, 3, 5))
    raise ValueError(f"no balanced seating for tables of {k} (allowed: 3 to 6)")


def base_order(table: Sequence[str], deal: int, seed: int) -> tuple[str, ...]:
    """The base seat order of deal number ``deal`` of ``table`` (rotation 0 seats it as is).

    ``table`` names the bots in a fixed order (its labels). Deal ``d`` uses the balanced
    set's order number ``(start + d) mod len(set)``, where ``start`` comes from SHA-256 of
    the tournament seed and the table: any run of :data:`BALANCED_DEALS` consecutive deals
    of one table is exactly balanced, and the same file seats the same way on every run.
    """
    orders = balanced_orders(len(table))
    digest = hashlib.sha256(
        json.dumps(["seating", seed, list(table)], ensure_ascii=False).encode("utf-8")
    ).digest()
    start = int.from_bytes(digest[:8], "big") % len(orders)
    return tuple(table[label] for label in orders[(start + deal) % len(orders)])


def _canonical(order: tuple[int, ...]) -> tuple[int, ...]:
    """The rotation of a cyclic order that starts with label 0."""
    i = order.index(0)
    return order[i:] + order[:i]


def _psl2_5_orbit(base: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The cyclic orders ``g(base)`` for every ``g`` in PSL(2, 5) (see the module docstring)."""
    infinity = 5

    def mobius(a: int, b: int, c: int, d: int, x: int) -> int:
        if x == infinity:
            return infinity if c == 0 else a * pow(c, -1, 5) % 5
        denominator = (c * x + d) % 5
        if denominator == 0:
            return infinity
        return (a * x + b) * pow(denominator, -1, 5) % 5

    maps = {
        tuple(mobius(a, b, c, d, x) for x in range(6))
        for a, b, c, d in itertools.product(range(5), repeat=4)
        if (a * d - b * c) % 5 in (1, 4)
    }
    return tuple(sorted({_canonical(tuple(g[label] for label in base)) for g in maps}))


BALANCED_DEALS = {k: len(balanced_orders(k)) for k in range(3, 7)}
"""Deals after which a table is exactly balanced, by table size: 2, 6, 4 and 20."""
