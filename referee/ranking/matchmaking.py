"""Matchmaking: the tables a league plays next, as a pure function of what is stored.

A league (:mod:`referee.league`) plays in batches. :func:`plan_batch` chooses the tables of
one batch from a :class:`LeagueState`, which the league reads from its store after the
batch before was settled (:mod:`referee.tournament.league`): each entrant's settled rating,
matches, placement tables, the last batch it sat in, its author, and the matches it was
planned in the window of the cap on hogging. Nothing else goes in: no clock but the batch's
own time (stored with it), no worker count, no order in which results arrived (the settled
ratings fold each batch's results in key order, :mod:`referee.ranking.incremental`). So
the same stored state plans the same batch, and a league resumed after a crash makes the
choices the uninterrupted one would have made. Ties are broken by SHA-256 of the league's
seed, the batch and the label, never by ``hash()`` or a random generator.

**A batch** has at most ``batch`` tables (:class:`~referee.tournament.model.LeagueSettings`)
and seats each entrant at most once, so its tables are disjoint (their deals are shared
across them, as in every format); it has as many tables as the eligible entrants fill.
Tables are filled in three passes, each taking only entrants not seated yet:

1. **Fair tables.** ``ceil(fair_share x tables)`` tables are drawn around the entrants that
   have waited longest (the oldest last batch; a newcomer's wait starts when it joins).
2. **Placement.** An entrant that has played fewer than ``placement`` placement tables (and
   fewer matches than they hold: :func:`in_placement`) gets one, against a spread of the
   field: its opponents stand at evenly spaced places of the
   ranking (by ``mu - 3 sigma``), shifted from one placement table to the next by the
   golden ratio, so that a few tables meet the top, the middle and the bottom. Until then
   it is no matchmaking opponent (its high sigma would draw it to every table).
3. **Matchmaking.** The rest are drawn around the most uncertain entrants (highest sigma,
   then fewest matches). Each seed gets the opponent that tells most about it (two at
   tables of 5 and 6, :func:`near_opponents`): near it in rating and uncertain relative to
   it. For a seed ``s`` and a candidate ``o`` that is ``(sigma_s² + sigma_o²) / c² ·
   exp(-(mu_s - mu_o)² / 2c²)`` with ``c² = 2 beta² + sigma_s² + sigma_o²``: TrueSkill's
   match quality (how likely a close result is) weighted by how much of the spread is still
   uncertainty rather than performance noise; the candidates are the :data:`CANDIDATES` x
   table size entrants nearest in mu. The other seats go to **anchors** drawn across the
   whole field (by the seed's and each entrant's hash). Why not near opponents all round:
   TrueSkill keeps each entrant's rating alone, never how two ratings move together, so
   tables of close neighbours only order each neighbourhood, and a whole neighbourhood can
   stay offset from the rest; one near opponent and two anchors ordered the field better than
   three near ones on the field of ``bench/league_bench.py``. This game's results are mostly
   the cards, so a random table already tells nearly the most a table can, and no design
   beats random tables by much at ordering the whole field (the oracle bound of
   ``bench/league_bound.py``; the figures are in docs/performance.md, "League matchmaking").

Entrants of one author never share a table when the file keeps authors apart.

**No starvation, by construction.** The fair tables alone bound every entrant's wait: each
batch seats the ``F`` entrants that waited longest (or seats them elsewhere first), and
seated entrants go to the back of the queue; nobody joins ahead of an entrant already
waiting. So an eligible entrant is seated at least once every ``ceil(n / F)`` batches
(:func:`wait_bound`; ``n`` eligible entrants): with the defaults, 1,000 entrants at tables
of 4 (32 tables, 8 of them fair) wait at most 125 batches, 10 entrants (2 tables, 1 fair) at
most 10.

**No hogging, by construction.** An entrant is eligible only while its matches planned in
the last ``window_minutes`` plus one more table stay within :func:`hog_cap`: ``max_share``
times the average entrant's matches in that window (this batch counted full), and never
less than its placement plus one table. The property tests (``tests/tournament/
test_matchmaking.py``) check both bounds on random leagues.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from referee.specs import RatingSettings
from referee.tournament.model import LeagueSettings

__all__ = [
    "CANDIDATES",
    "BatchPlan",
    "LeagueState",
    "PlannedTable",
    "Standing",
    "fair_tables",
    "hog_cap",
    "in_placement",
    "information",
    "near_opponents",
    "plan_batch",
    "table_count",
    "wait_bound",
]

CANDIDATES = 8
"""Matchmaking looks at this many entrants per seat nearest its seed in mu (both sides)."""

_GOLDEN = (math.sqrt(5) - 1) / 2

TableKind = Literal["fair", "placement", "matchmaking"]


@dataclass(frozen=True)
class Standing:
    """One entrant as the planner sees it (read from the league's records)."""

    label: str
    mu: float
    sigma: float
    matches: int = 0
    placement: int = 0
    """Placement tables it was planned so far."""
    last_batch: int = -1
    """The last batch it sat in (the batch before it joined, until it sits in one)."""
    author: str = ""
    """Its author's key (empty: its own); entrants of one author never share a table."""
    recent: int = 0
    """Matches it was planned in the window of the cap on hogging."""

    @property
    def score(self) -> float:
        return self.mu - 3 * self.sigma


@dataclass(frozen=True)
class LeagueState:
    """What a batch is planned from: its number, the entrants in the league (any order)
    and the matches planned for all of them in the window (seats)."""

    batch: int
    standings: tuple[Standing, ...]
    window_seats: int = 0


@dataclass(frozen=True)
class PlannedTable:
    """A table of the batch: its labels (sorted), the entrant it was drawn around, and why."""

    labels: tuple[str, ...]
    seed: str
    kind: TableKind


@dataclass(frozen=True)
class BatchPlan:
    """The tables of one batch, and who was left out by the cap on hogging."""

    batch: int
    tables: tuple[PlannedTable, ...]
    capped: tuple[str, ...] = ()

    @property
    def placement(self) -> list[str]:
        """The entrants that play a placement table in this batch."""
        return [t.seed for t in self.tables if t.kind == "placement"]


def in_placement(standing: Standing, settings: LeagueSettings, table_size: int) -> bool:
    """Whether an entrant still plays placement tables: fewer than ``placement`` of them,
    and fewer matches than they hold (seated at others' tables often enough, it is placed
    already)."""
    wanted = settings.placement
    return standing.placement < wanted and standing.matches < wanted * table_size


def near_opponents(table_size: int) -> int:
    """How many of a matchmaking table's opponents are chosen near its seed (one at tables
    of 3 and 4, two at 5 and 6); the others are anchors drawn across the field."""
    return max(1, (table_size - 1) // 2)


def table_count(eligible: int, settings: LeagueSettings, table_size: int) -> int:
    """Tables of a batch with ``eligible`` entrants: ``batch``, or fewer when they run out."""
    return min(settings.batch, eligible // table_size)


def fair_tables(tables: int, settings: LeagueSettings) -> int:
    """How many of a batch's ``tables`` go to the entrants that waited longest."""
    return min(tables, math.ceil(settings.fair_share * tables))


def wait_bound(eligible: int, settings: LeagueSettings, table_size: int) -> int:
    """The most batches an eligible entrant waits between two tables (module docstring)."""
    fair = fair_tables(table_count(eligible, settings, table_size), settings)
    return math.ceil(eligible / fair) if fair else 0


def hog_cap(
    standings: Sequence[Standing], window_seats: int, settings: LeagueSettings, table_size: int
) -> float:
    """The most matches an entrant may have been planned in the window, this batch's
    included (module docstring)."""
    n = len(standings)
    if n == 0:
        return 0.0
    full = table_count(n, settings, table_size) * table_size
    average = (window_seats + full) / n
    return max((settings.placement + 1) * table_size, settings.max_share * average)


def information(seed: Standing, other: Standing, beta: float) -> float:
    """How much a table of ``seed`` and ``other`` tells about their order (module docstring)."""
    spread = seed.sigma**2 + other.sigma**2
    c2 = 2 * beta**2 + spread
    return spread / c2 * math.exp(-((seed.mu - other.mu) ** 2) / (2 * c2))


def plan_batch(
    state: LeagueState,
    settings: LeagueSettings,
    *,
    table_size: int,
    seed: int,
    ratings: RatingSettings | None = None,
    authors_apart: bool = True,
) -> BatchPlan:
    """The tables of batch ``state.batch`` (see the module docstring)."""
    k = table_size
    cap = hog_cap(state.standings, state.window_seats, settings, k)
    eligible = [s for s in state.standings if s.recent + k <= cap]
    capped = tuple(sorted(s.label for s in state.standings if s.recent + k > cap))
    total = table_count(len(eligible), settings, k)
    if total == 0:
        return BatchPlan(state.batch, (), capped)
    beta = (ratings or RatingSettings()).beta
    placing = {s.label for s in eligible if in_placement(s, settings, k)}
    pool = _Pool(eligible, seed, state.batch, authors_apart, placing)
    tables: list[PlannedTable] = []

    def fill(order: Sequence[Standing], limit: int, kind: TableKind) -> None:
        for standing in order:
            if len(tables) >= limit:
                return
            if pool.taken(standing.label):
                continue
            placing = in_placement(standing, settings, k)
            if kind == "matchmaking" and placing:
                continue  # placement first: pass 2 seats it when there is room
            labels = pool.placement(standing, k) if placing else pool.near(standing, k, beta)
            if labels is not None:
                why: TableKind = "placement" if placing else kind
                tables.append(PlannedTable(labels, standing.label, why))

    tiebreak = pool.tiebreak
    fill(
        sorted(eligible, key=lambda s: (s.last_batch, tiebreak[s.label])),
        fair_tables(total, settings),
        "fair",
    )
    newcomers = [s for s in eligible if s.label in placing]
    fill(
        sorted(newcomers, key=lambda s: (s.placement, s.last_batch, tiebreak[s.label])),
        total,
        "placement",
    )
    fill(
        sorted(eligible, key=lambda s: (-s.sigma, s.matches, tiebreak[s.label])),
        total,
        "matchmaking",
    )
    return BatchPlan(state.batch, tuple(tables), capped)


class _Pool:
    """The eligible entrants not seated yet in the batch being planned, by mu."""

    def __init__(
        self,
        eligible: Sequence[Standing],
        seed: int,
        batch: int,
        authors_apart: bool,
        placing: set[str],
    ) -> None:
        self.placing = placing
        """Entrants still in placement: seated at their own placement tables (or at
        another's), never drawn as a matchmaking opponent (their sigma would draw them to
        every table before they are placed)."""
        self.tiebreak = {s.label: _tiebreak(seed, batch, s.label) for s in eligible}
        self.by_label = {s.label: s for s in eligible}
        self.order = sorted((s.mu, self.tiebreak[s.label], s.label) for s in eligible)
        self.apart = authors_apart
        self.seated: set[str] = set()

    def taken(self, label: str) -> bool:
        return label in self.seated

    def _author(self, standing: Standing) -> str:
        return (standing.author or standing.label) if self.apart else standing.label

    def _seat(self, labels: Sequence[str]) -> tuple[str, ...]:
        for label in labels:
            s = self.by_label[label]
            self.order.remove((s.mu, self.tiebreak[label], label))
            self.seated.add(label)
        return tuple(sorted(labels))

    def near(self, seed: Standing, k: int, beta: float) -> tuple[str, ...] | None:
        """``seed`` and the ``k - 1`` candidates that tell most about it (module docstring)."""
        here = bisect.bisect_left(self.order, (seed.mu, self.tiebreak[seed.label], seed.label))
        want = CANDIDATES * k
        low, high = here - 1, here + 1
        candidates: list[Standing] = []
        while len(candidates) < want and (low >= 0 or high < len(self.order)):
            for index in (low, high):
                if 0 <= index < len(self.order) and self.order[index][2] not in self.placing:
                    candidates.append(self.by_label[self.order[index][2]])
            low, high = low - 1, high + 1
        ranked = sorted(
            candidates,
            key=lambda o: (-information(seed, o, beta), self.tiebreak[o.label]),
        )
        close = ranked[: near_opponents(k)]
        taken = {seed.label, *(o.label for o in close)}
        mine = self.tiebreak[seed.label]
        anchors = sorted(
            (
                self.by_label[label]
                for _, _, label in self.order
                if label not in taken and label not in self.placing
            ),
            key=lambda o: (self.tiebreak[o.label] ^ mine, o.label),
        )
        return self._table(seed, [*close, *anchors, *ranked], k)

    def placement(self, seed: Standing, k: int) -> tuple[str, ...] | None:
        """``seed`` and opponents at evenly spaced places of the field's ranking."""
        field = sorted(
            (self.by_label[label] for _, _, label in self.order if label != seed.label),
            key=lambda s: (-s.score, self.tiebreak[s.label]),
        )
        if len(field) < k - 1:
            return None
        shift = (seed.placement * _GOLDEN) % 1.0
        spots = [
            round(((i + 0.5) / (k - 1) + shift) % 1.0 * (len(field) - 1)) for i in range(k - 1)
        ]
        chosen = [seed.label]
        authors = {self._author(seed)}
        for target in spots:  # the free place nearest each spot
            for step in range(len(field)):
                found = next(
                    (
                        field[i]
                        for i in (target - step, target + step)
                        if 0 <= i < len(field)
                        and field[i].label not in chosen
                        and self._author(field[i]) not in authors
                    ),
                    None,
                )
                if found is not None:
                    chosen.append(found.label)
                    authors.add(self._author(found))
                    break
        return self._seat(chosen) if len(chosen) == k else None

    def _table(self, seed: Standing, ranked: Sequence[Standing], k: int) -> tuple[str, ...] | None:
        """``seed`` and the first ``k - 1`` of ``ranked`` whose authors are all different."""
        chosen = [seed.label]
        authors = {self._author(seed)}
        for other in ranked:
            if len(chosen) == k:
                break
            author = self._author(other)
            if other.label == seed.label or other.label in chosen or author in authors:
                continue
            chosen.append(other.label)
            authors.add(author)
        if len(chosen) < k:
            return None
        return self._seat(chosen)


def _tiebreak(seed: int, batch: int, label: str) -> int:
    digest = hashlib.sha256(f"league\0{seed}\0{batch}\0{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big")
