"""Tournament formats turned into a deterministic list of match specs.

Every deal is played in all ``k`` cyclic seat rotations of its table with one shared deal
seed ("duplicate" play): the same hands go round the table, so each bot holds each seat's
cards once and deal luck cancels out. A rotation ``r`` seats ``base[(seat + r) % k]``, where
the deal's *base order* cycles, from deal to deal, through a balanced set of seat orders
(:mod:`referee.tournament.seating`): after
:data:`~referee.tournament.seating.BALANCED_DEALS` deals every ordered
pair of a table's bots has sat at every offset equally often.

* ``round-robin``: every ``k``-subset of the entrants (names sorted, so the order of the
  file does not matter) x ``deals`` x ``k`` rotations; with ``tables = "balanced"``, only
  the tables of a balanced design (:mod:`referee.tournament.design`: every bot at equally
  many tables,
  every pair of bots together equally often), found from the tournament seed.
* ``gauntlet``: the candidate against ``k - 1`` opponents drawn from the field, ``matches``
  times, each draw played for ``deals`` deals x ``k`` rotations.

Keys come from SHA hashes of the tournament seed and the table, never from ``hash()`` or a
random generator whose algorithm could change, so the same file schedules the same matches
with the same keys on every run and machine. Keys do not depend on a match's position in the
list: adding a deal keeps every existing key, and so does adding a bot to a full round
robin (a balanced design is made for its field: another bot makes other tables). A table
of a balanced design has the key, and the cards, it has in the full round robin. Keys are
public (bots see them as match ids); the cards are not: each deal's seed is keyed by the
tournament's deal secret (:mod:`referee.tournament.deals`), so the same file and the same
secret give
the same cards.

Play-off matches (:mod:`referee.ranking.playoff`) are keyed
``po/<round>/<table>/d<deal>/r<rotation>``
and dealt the same way, so ``referee verify`` checks them like any match.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from referee.specs import PLAYOFF_PREFIX, MatchSpec
from referee.tournament.deals import deal_seed
from referee.tournament.design import balanced_design
from referee.tournament.seating import base_order

if TYPE_CHECKING:
    from referee.tournament.file import Tournament

__all__ = [
    "gauntlet",
    "playoff_deal",
    "round_robin",
    "round_robin_tables",
    "schedule",
]

_KEY_HASH_CHARS = 12

def schedule(tournament: Tournament, secret: bytes) -> list[MatchSpec]:
    """Every match of ``tournament``, in a canonical order, dealt with ``secret``."""
    f = tournament.file
    if f.format == "gauntlet":
        assert f.candidate is not None and f.matches is not None  # load_tournament checks
        return gauntlet(
            f.candidate, tournament.entrants, f.table_size, f.matches, f.deals, f.seed, secret
        )
    return round_robin(
        tournament.entrants, f.table_size, f.deals, f.seed, secret, tables=f.tables
    )


def round_robin_tables(
    names: Sequence[str], table_size: int, seed: int, tables: str = "all"
) -> list[tuple[str, ...]]:
    """The tables of a round robin, each in sorted name order: every ``table_size``-subset
    of ``names`` (``tables = "all"``), or those of the seed's balanced design (``"balanced"``).
    """
    field = sorted(names)
    if tables == "all":
        return list(itertools.combinations(field, table_size))
    if tables == "balanced":
        design = balanced_design(len(field), table_size, seed)
        return [tuple(field[i] for i in table) for table in design]
    raise ValueError(f"unknown tables {tables!r} (allowed: all, balanced)")


def round_robin(
    names: Sequence[str],
    table_size: int,
    deals: int,
    seed: int,
    secret: bytes,
    *,
    tables: str = "all",
) -> list[MatchSpec]:
    """Each table of :func:`round_robin_tables` x ``deals`` x every seat rotation."""
    specs: list[MatchSpec] = []
    for table in round_robin_tables(names, table_size, seed, tables):
        table_id = _digest("rr", seed, table)[:_KEY_HASH_CHARS]
        for deal in range(deals):
            base = base_order(table, deal, seed)
            specs += _rotations(f"rr/{table_id}/d{deal:03d}", base, deal, seed, secret)
    return _unique(specs)


def gauntlet(
    candidate: str,
    names: Sequence[str],
    table_size: int,
    matches: int,
    deals: int,
    seed: int,
    secret: bytes,
) -> list[MatchSpec]:
    """``candidate`` against ``table_size - 1`` opponents drawn from the field, ``matches`` times.

    Draw ``m`` takes the opponents whose SHA-256 of ``(seed, m, name)`` is smallest: an
    even, reproducible draw without a random generator.
    """
    field = sorted(n for n in names if n != candidate)
    if len(field) < table_size - 1:
        raise ValueError(f"a gauntlet at {table_size} needs {table_size - 1} opponents")
    specs: list[MatchSpec] = []
    for draw in range(matches):
        opponents = sorted(field, key=lambda name: _digest("draw", seed, draw, name))
        table = (candidate, *sorted(opponents[: table_size - 1]))
        table_id = _digest("g", seed, draw, table)[:_KEY_HASH_CHARS]
        for deal in range(deals):
            prefix = f"g/{table_id}/m{draw:04d}/d{deal:03d}"
            base = base_order(tuple(sorted(table)), deal, seed)
            specs += _rotations(prefix, base, deal, seed, secret)
    return _unique(specs)


def playoff_deal(
    round_no: int, table: Sequence[str], deal: int, seed: int, secret: bytes
) -> list[MatchSpec]:
    """Every seat rotation of one play-off deal of ``table``, keyed for play-off ``round_no``.

    ``deal`` counts the deals the table has already played (scheduled and play-off), so
    the table's seating cycle goes on where the round robin left it.
    """
    bots = tuple(sorted(table))
    table_id = _digest("po", seed, bots)[:_KEY_HASH_CHARS]
    prefix = f"{PLAYOFF_PREFIX}{round_no:03d}/{table_id}/d{deal:03d}"
    return _rotations(prefix, base_order(bots, deal, seed), deal, seed, secret)


def _rotations(
    prefix: str, table: tuple[str, ...], deal: int, seed: int, secret: bytes
) -> list[MatchSpec]:
    """Every seat rotation of one deal (``table`` is its base order); they share its seed."""
    k = len(table)
    seed_of_deal = deal_seed(secret, "deal", seed, prefix)
    return [
        MatchSpec(
            key=f"{prefix}/r{rotation}",
            table=tuple(table[(seat + rotation) % k] for seat in range(k)),
            deal=deal,
            rotation=rotation,
            deal_seed=seed_of_deal,
            match_seed=seed_of_deal,
        )
        for rotation in range(k)
    ]


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def _unique(specs: list[MatchSpec]) -> list[MatchSpec]:
    keys = {spec.key for spec in specs}
    if len(keys) != len(specs):  # a 48-bit hash prefix collided: never silently merge matches
        raise RuntimeError("two matches got the same key; change the tournament seed")
    return specs
