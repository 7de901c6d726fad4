"""Tournament formats turned into a deterministic list of match specs.

Every format plays *table deals*: a table of ``k`` bots, a deal number, and every one of the
``k`` cyclic seat rotations of the deal's *base order* (rotation ``r`` seats
``base[(seat + r) % k]``). The base order cycles, from deal to deal, through a balanced set
of seat orders (:mod:`referee.tournament.seating`): after
:data:`~referee.tournament.seating.BALANCED_DEALS` deals every ordered pair of a table's bots
has sat at every offset equally often, and over a table deal each bot sits at each seat
once.

**Which matches share cards** (``duplicate`` in the tournament file) is decided here, and
named by each spec's ``deal_id``:

* ``"tables"`` (the default): **no entrant ever meets the same cards twice.** A deal is
  shared across *disjoint* tables, as duplicate bridge shares a board: the table deals of
  one deal number are cut into classes of up to ``k`` tables that have no entrant (and no
  author) in common, and a class is dealt ``k`` deals, one per offset ``s``, the class's
  ``j``-th table playing rotation ``(j + s) % k`` of it. Each deal then goes to different
  entrants at different tables, each seat's cards to as many entrants as the class has
  tables, and every (table, rotation) still gets one deal, so the seating is as balanced
  as before. Where no two tables of a deal number are disjoint (fewer than ``2 k``
  entrants, a gauntlet, whose candidate sits at every table), every match gets a deal of
  its own. Copies of one bot running at once share a kernel, and covert channels on a
  shared kernel (file locks, the page cache) cannot all be closed: so duplicate play must
  never rely on a bot forgetting what it saw.
* ``"rotations"``: every rotation of a table deal shares one deal (the classic duplicate
  scheme, which cancels card luck within the table). Each entrant then holds every seat's
  cards of the deal in turn, so a bot that passes what it saw from one copy of itself to the
  next reads the other hands: for trusted bots only.

Formats:

* ``round-robin``: every ``k``-subset of the entrants (names sorted, so the order of the
  file does not matter) x ``deals``; with ``tables = "balanced"``, only the tables of a
  balanced design (:mod:`referee.tournament.design`), found from the tournament seed.
  Entrants whose authors are kept apart never sit at one table.
* ``gauntlet``: the candidate against ``k - 1`` opponents drawn from the field, ``matches``
  times, each draw played for ``deals`` table deals.
* ``compare`` (``referee compare NEW OLD``): paired duplicate matches of two versions of a
  bot against trusted field bots (:func:`compare`). Each deal seats the candidate and
  ``k - 1`` field bots drawn for it, in every seat rotation, and then again with the
  baseline in the candidate's seat: the same field bots in the same seats, the same cards.
  All ``2 k`` matches of a deal share one deal (its ``deal_id``, ``cmp/d<deal>``), so the
  field bots hold each seat's cards of it in every rotation and both halves: for trusted
  bots only, and no bot process serves two of them
  (:class:`~referee.protocol.seats.SessionPool`). Keys are
  ``cmp/d<deal>/<new|old>/r<rotation>``.

Keys come from SHA hashes of the tournament seed and the table, never from ``hash()`` or a
random generator whose algorithm could change, so the same file schedules the same matches
with the same keys and the same ``deal_id`` on every run and machine. Keys and deal ids are
public (bots see match ids); the cards are not: each deal's seed is keyed by the
tournament's deal secret (:mod:`referee.tournament.deals`). Keys do not depend on a match's
position in the list: adding a deal keeps every existing match as it was.

Play-off matches (:mod:`referee.ranking.playoff`) are keyed
``po/<round>/<table>/d<deal>/r<rotation>`` and dealt the same way, so ``referee verify``
checks them like any match. A league's (:func:`league_batch`), drawn batch by batch by
:mod:`referee.ranking.matchmaking`, are keyed ``lg/<batch>/<table>/r<rotation>`` and dealt
the same way too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from referee.specs import PLAYOFF_PREFIX, MatchSpec
from referee.tournament.deals import deal_seed
from referee.tournament.design import balanced_design
from referee.tournament.league import batch_prefix
from referee.tournament.seating import base_order

if TYPE_CHECKING:
    from referee.tournament.file import Plan, Tournament

__all__ = [
    "COMPARE_PREFIX",
    "DUPLICATE_MODES",
    "HALVES",
    "Duplicate",
    "TableDeal",
    "compare",
    "compare_deal",
    "deal_tables",
    "gauntlet",
    "league_batch",
    "playoff_deals",
    "round_robin",
    "round_robin_tables",
    "schedule",
]

Duplicate = Literal["tables", "rotations"]
Seating = Callable[[Sequence[str], int, int], tuple[str, ...]]
"""``(table, deal number, seed) -> base seat order``: :func:`~.seating.base_order`, the
balanced one; a test's control seats differently."""
DUPLICATE_MODES: tuple[Duplicate, ...] = ("tables", "rotations")

COMPARE_PREFIX = "cmp/"
"""Keys of ``referee compare``'s matches start with this (``cmp/d<deal>/<half>/r<rotation>``)."""

HALVES = ("new", "old")
"""The halves of a compared pair: the candidate's matches, then the baseline's."""

_KEY_HASH_CHARS = 12
_SLOTS_SCANNED = 4096
"""How many of the slots left a class looks at for a disjoint table: it bounds the work of a
class on large fields, where a disjoint table is found long before that."""


@dataclass(frozen=True)
class TableDeal:
    """One deal number of one table: its key prefix, base seat order and deal number."""

    prefix: str
    base: tuple[str, ...]
    deal: int


def schedule(
    tournament: Tournament | Plan, secret: bytes, *, seating: Seating = base_order
) -> list[MatchSpec]:
    """Every match of ``tournament`` (or of its stored plan), in a canonical order, dealt
    with ``secret`` (the dealing key: :attr:`referee.tournament.store.DealSecret.key`),
    each table seated by ``seating``."""
    f = tournament.file
    authors = tournament.authors_apart()
    if f.format == "compare":
        assert f.candidate is not None and f.baseline is not None  # referee compare sets them
        pair = (f.candidate, f.baseline)
        field = [name for name in tournament.entrants if name not in pair]
        return compare(*pair, field, f.table_size, f.deals, f.seed, secret)
    if f.format == "gauntlet":
        assert f.candidate is not None and f.matches is not None  # load_tournament checks
        return gauntlet(
            f.candidate,
            list(tournament.entrants),
            f.table_size,
            f.matches,
            f.deals,
            f.seed,
            secret,
            duplicate=f.duplicate,
            authors=authors,
            seating=seating,
        )
    return round_robin(
        list(tournament.entrants),
        f.table_size,
        f.deals,
        f.seed,
        secret,
        tables=f.tables,
        duplicate=f.duplicate,
        authors=authors,
        seating=seating,
    )


def round_robin_tables(
    names: Sequence[str],
    table_size: int,
    seed: int,
    tables: str = "all",
    *,
    authors: Mapping[str, str] | None = None,
) -> list[tuple[str, ...]]:
    """The tables of a round robin, each in sorted name order: every ``table_size``-subset
    of ``names`` (``tables = "all"``), or those of the seed's balanced design (``"balanced"``).

    With ``authors`` (entrant -> author, for authors kept apart), no table seats two
    entrants of one author.
    """
    field = sorted(names)
    if tables == "all":
        chosen = list(itertools.combinations(field, table_size))
    elif tables == "balanced":
        design = balanced_design(len(field), table_size, seed)
        chosen = [tuple(field[i] for i in table) for table in design]
    else:
        raise ValueError(f"unknown tables {tables!r} (allowed: all, balanced)")
    if authors:
        chosen = [t for t in chosen if len({authors.get(n, n) for n in t}) == len(t)]
    return chosen


def round_robin(
    names: Sequence[str],
    table_size: int,
    deals: int,
    seed: int,
    secret: bytes,
    *,
    tables: str = "all",
    duplicate: Duplicate = "tables",
    authors: Mapping[str, str] | None = None,
    seating: Seating = base_order,
) -> list[MatchSpec]:
    """Each table of :func:`round_robin_tables` x ``deals`` x every seat rotation, each
    table deal seated by ``seating``."""
    chosen = round_robin_tables(names, table_size, seed, tables, authors=authors)
    ids = [_digest("rr", seed, table)[:_KEY_HASH_CHARS] for table in chosen]
    specs: list[MatchSpec] = []
    for deal in range(deals):
        slots = [
            TableDeal(f"rr/{table_id}/d{deal:03d}", seating(table, deal, seed), deal)
            for table, table_id in zip(chosen, ids, strict=True)
        ]
        specs += deal_tables(
            slots, seed, secret, duplicate=duplicate, authors=authors, salt=f"rr/d{deal}"
        )
    return _unique(specs)


def gauntlet(
    candidate: str,
    names: Sequence[str],
    table_size: int,
    matches: int,
    deals: int,
    seed: int,
    secret: bytes,
    *,
    duplicate: Duplicate = "tables",
    authors: Mapping[str, str] | None = None,
    seating: Seating = base_order,
) -> list[MatchSpec]:
    """``candidate`` against ``table_size - 1`` opponents drawn from the field, ``matches`` times.

    Draw ``m`` takes the opponents whose SHA-256 of ``(seed, m, name)`` is smallest (among
    those whose author is not already at the table, when authors are kept apart): an even,
    reproducible draw without a random generator. The candidate sits at every table, so in
    ``"tables"`` mode every match has a deal of its own.
    """
    owner = (lambda name: authors.get(name, name)) if authors else (lambda name: name)
    field = sorted(
        n for n in names if n != candidate and (not authors or owner(n) != owner(candidate))
    )
    specs: list[MatchSpec] = []
    for draw in range(matches):
        ranked = sorted(field, key=lambda name: _digest("draw", seed, draw, name))
        opponents: list[str] = []
        seen = {owner(candidate)}
        for name in ranked:
            if len(opponents) == table_size - 1:
                break
            if authors and owner(name) in seen:
                continue
            opponents.append(name)
            seen.add(owner(name))
        if len(opponents) < table_size - 1:
            raise ValueError(f"a gauntlet at {table_size} needs {table_size - 1} opponents")
        table = (candidate, *sorted(opponents))
        table_id = _digest("g", seed, draw, table)[:_KEY_HASH_CHARS]
        slots = [
            TableDeal(
                f"g/{table_id}/m{draw:04d}/d{deal:03d}",
                seating(tuple(sorted(table)), deal, seed),
                deal,
            )
            for deal in range(deals)
        ]
        specs += deal_tables(
            slots, seed, secret, duplicate=duplicate, authors=authors, salt=f"g/m{draw}"
        )
    return _unique(specs)


def compare(
    new: str,
    old: str,
    field: Sequence[str],
    table_size: int,
    deals: int,
    seed: int,
    secret: bytes,
    *,
    first_deal: int = 0,
) -> list[MatchSpec]:
    """Both halves of ``referee compare``'s deals ``first_deal`` to ``deals - 1``
    (:func:`compare_deal` each), deal by deal."""
    specs: list[MatchSpec] = []
    for deal in range(first_deal, deals):
        specs += compare_deal(new, old, field, table_size, deal, seed, secret)
    return _unique(specs)


def compare_deal(
    new: str,
    old: str,
    field: Sequence[str],
    table_size: int,
    deal: int,
    seed: int,
    secret: bytes,
) -> list[MatchSpec]:
    """One deal of ``referee compare``: ``new`` and the ``table_size - 1`` field bots drawn
    for the deal in every seat rotation, then ``old`` in ``new``'s seats; all on one deal.

    The field bots drawn are those whose SHA-256 of ``(seed, deal, name)`` is smallest (the
    whole field when it is just large enough); the base order cycles through the balanced
    orders (:func:`~referee.tournament.seating.base_order`) of the table with ``new``, which
    both halves share.
    """
    if len(set(field)) < table_size - 1 or new in field or old in field or new == old:
        raise ValueError(
            f"a comparison at tables of {table_size} needs two versions and "
            f"{table_size - 1} field bots besides them"
        )
    drawn = sorted(sorted(set(field)), key=lambda name: _digest("field", seed, deal, name))
    base = base_order((new, *sorted(drawn[: table_size - 1])), deal, seed)
    deal_id = f"{COMPARE_PREFIX}d{deal:05d}"
    cards = deal_seed(secret, "deal", seed, deal_id)
    specs = []
    for half, candidate in zip(HALVES, (new, old), strict=True):
        seats = tuple(candidate if name == new else name for name in base)
        slot = TableDeal(f"{deal_id}/{half}", seats, deal)
        specs += [_spec(slot, rotation, deal_id, cards) for rotation in range(table_size)]
    return specs


def playoff_deals(
    round_no: int,
    tables: Sequence[tuple[tuple[str, ...], int]],
    seed: int,
    secret: bytes,
    *,
    duplicate: Duplicate = "tables",
    authors: Mapping[str, str] | None = None,
) -> list[MatchSpec]:
    """Every seat rotation of the play-off round's table deals ``(table, deal number)``.

    A deal number counts the deals the table has already played (scheduled and play-off),
    so the table's seating cycle goes on where the round robin left it. The round's table
    deals share cards as every format does (:func:`deal_tables`).
    """
    slots = []
    for table, deal in tables:
        bots = tuple(sorted(table))
        table_id = _digest("po", seed, bots)[:_KEY_HASH_CHARS]
        prefix = f"{PLAYOFF_PREFIX}{round_no:03d}/{table_id}/d{deal:03d}"
        slots.append(TableDeal(prefix, base_order(bots, deal, seed), deal))
    return _unique(
        deal_tables(
            slots, seed, secret, duplicate=duplicate, authors=authors, salt=f"po/{round_no}"
        )
    )


def league_batch(
    batch: int,
    tables: Sequence[tuple[str, ...]],
    dealt: Mapping[tuple[str, ...], int],
    *,
    seed: int,
    secret: bytes,
    duplicate: Duplicate,
    authors: Mapping[str, str] | None = None,
) -> list[MatchSpec]:
    """A league's batch (:mod:`referee.tournament.league`): every seat rotation of one deal
    of each of its tables (each table's labels in sorted order), dealt with ``secret``:
    deals shared across the batch's disjoint tables (:func:`deal_tables`), each table seated
    where its cycle of balanced orders stands after ``dealt[table]`` deals."""
    prefix = batch_prefix(batch)
    slots = []
    for table in tables:
        ordered = tuple(sorted(table))
        deal = dealt.get(ordered, 0)
        table_id = _digest("lg", seed, batch, ordered)[:_KEY_HASH_CHARS]
        slots.append(TableDeal(f"{prefix}{table_id}", base_order(ordered, deal, seed), deal))
    return _unique(
        deal_tables(slots, seed, secret, duplicate=duplicate, authors=authors, salt=f"lg/{batch}")
    )


def deal_tables(
    slots: Sequence[TableDeal],
    seed: int,
    secret: bytes,
    *,
    duplicate: Duplicate,
    authors: Mapping[str, str] | None = None,
    salt: str,
) -> list[MatchSpec]:
    """Every rotation of every table deal in ``slots``, with its deal (module docstring).

    ``salt`` names the group of slots (a deal number of the round robin, a gauntlet draw, a
    play-off round): the classes are drawn from the tournament seed and the salt. Entrants
    of one author (``authors``; each entrant is its own author when absent) never share a
    deal, even at different tables. Returns specs in slot order, then rotation order.
    """
    if duplicate == "rotations":
        return [spec for slot in slots for spec in _rotations(slot, seed, secret)]
    if duplicate != "tables":
        raise ValueError(f"unknown duplicate {duplicate!r} (allowed: tables, rotations)")
    if not slots:
        return []
    k = len(slots[0].base)
    assignment: dict[tuple[str, int], str] = {}
    for members in _classes(slots, seed, salt, authors or {}):
        for offset in range(k):
            group = [(members[j], (j + offset) % k) for j in range(len(members))]
            deal_id = (
                "deal/"
                + _digest(
                    "deal", seed, salt, [[slot.prefix, rotation] for slot, rotation in group]
                )[: _KEY_HASH_CHARS * 2]
            )
            for slot, rotation in group:
                assignment[slot.prefix, rotation] = deal_id
    specs = []
    for slot in slots:
        for rotation in range(k):
            deal_id = assignment[slot.prefix, rotation]
            specs.append(_spec(slot, rotation, deal_id, deal_seed(secret, "deal", seed, deal_id)))
    return specs


def _classes(
    slots: Sequence[TableDeal], seed: int, salt: str, authors: Mapping[str, str]
) -> list[list[TableDeal]]:
    """The slots cut into classes of at most ``k`` tables with no author in common.

    Greedy, in an order drawn from the seed: a class starts with the first slot left and
    takes each later slot that shares no author with it, until it holds ``k`` (or
    :data:`_SLOTS_SCANNED` slots were looked at); then the next class starts. On complete
    round robins nearly every table lands in a full class, the rest in classes one short
    (docs/performance.md). Authors are bits of an integer, so a test is one ``&``.
    """
    k = len(slots[0].base)
    bit: dict[str, int] = {}
    masks = []
    for slot in slots:
        mask = 0
        for name in slot.base:
            owner = authors.get(name, name)
            mask |= 1 << bit.setdefault(owner, len(bit))
        masks.append(mask)
    size = max(1, min(k, len(bit) // k))  # more disjoint tables than that cannot exist
    order = sorted(range(len(slots)), key=lambda i: _digest("class", seed, salt, slots[i].prefix))
    placed = bytearray(len(order))  # by position in ``order``
    classes: list[list[TableDeal]] = []
    start = 0
    while True:
        while start < len(order) and placed[start]:
            start += 1
        if start == len(order):
            return classes
        placed[start] = 1
        members, taken = [order[start]], masks[order[start]]
        position, scanned = start + 1, 0
        while len(members) < size and position < len(order) and scanned < _SLOTS_SCANNED:
            if not placed[position]:
                scanned += 1
                i = order[position]
                if taken & masks[i] == 0:
                    members.append(i)
                    taken |= masks[i]
                    placed[position] = 1
            position += 1
        classes.append([slots[i] for i in members])


def _rotations(slot: TableDeal, seed: int, secret: bytes) -> list[MatchSpec]:
    """Every seat rotation of one table deal, all on one deal (``duplicate = "rotations"``)."""
    seed_of_deal = deal_seed(secret, "deal", seed, slot.prefix)
    return [_spec(slot, rotation, slot.prefix, seed_of_deal) for rotation in range(len(slot.base))]


def _spec(slot: TableDeal, rotation: int, deal_id: str, seed_of_deal: int) -> MatchSpec:
    k = len(slot.base)
    return MatchSpec(
        key=f"{slot.prefix}/r{rotation}",
        table=tuple(slot.base[(seat + rotation) % k] for seat in range(k)),
        deal=slot.deal,
        rotation=rotation,
        deal_seed=seed_of_deal,
        match_seed=seed_of_deal,
        deal_id=deal_id,
    )


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def _unique(specs: list[MatchSpec]) -> list[MatchSpec]:
    keys = {spec.key for spec in specs}
    if len(keys) != len(specs):  # a 48-bit hash prefix collided: never silently merge matches
        raise RuntimeError("two matches got the same key; change the tournament seed")
    return specs
