"""A league's entrants and records: versions in the file, match keys, and its own tables.

A league (``format = "league"``) never ends: entrants come, change and go while it runs, and
its matches are chosen batch by batch (:mod:`referee.ranking.matchmaking`). This module is
what the plan and its record need to know of it; the loop is :mod:`referee.runs.league`.

**Versions in the file.** In a league every ``[[bots]]`` entry names its entrant, and
several entries may share a name: each is a **version** of that entrant, in file order
(``referee submit BOT --to FILE`` appends one when the name is taken), and an entry with
``retired = true`` takes the entrant out (``referee league retire FILE NAME`` appends one,
:func:`referee.tournament.file.append_retirement`; a later entry brings it back as a new
version). Every version rates on its own: a new version
is a new program, and the old one's results stay what they were (:class:`Roster`). Each
version has a **label**, the name its results are stored under: the entrant's name for the
first version, ``name#2``, ``name#3``... for the later ones (the mark ``#`` and a number
end no entrant's name in a league, so a label is never another entrant's name). Only the
current version of each entrant still in the league is loaded; the files of older versions
may be gone.

Unlike ``--replace`` in a round robin (:mod:`referee.tournament.replacement`), a new version
retires nothing but the old version itself: its results stay counted for its opponents
(they were real matches against a fixed program), its rating is kept and shown, and it is
no longer seated or ranked. Retiring its matches would mean re-rating every entrant that
ever met it, and a league has no schedule to play them again from.

**Match keys.** ``lg/<batch>/<table>/r<rotation>``: the batch in eight digits (so key order
is batch order, the canonical rating order, :mod:`referee.ranking.incremental`), the table
by a hash of the seed, the batch and its labels, and the seat rotation
(:func:`referee.tournament.scheduler.league_batch` makes a batch's matches: its deals shared
across its disjoint tables as in every format, each table seated by the balanced cycle,
going on where its last deal left it: ``league_tables`` counts the deals of each table).

**Records.** :class:`LeagueLedger` keeps, beside the store's own tables and in the same
database (so that a result and the ratings it changes commit in one transaction):

* ``league_entrants``: every version that ever joined: its name, version and author key,
  the batch it joined and the one it left at, its live rating (every result as it is
  stored) and its settled rating (the batches settled so far, in key order), its record
  (matches, places, firsts, forfeits, faults, when it last played), the last batch it was
  seated in and the placement tables it was planned;
* ``league_batches``: each batch, when it was planned (the planner's clock, stored with
  it) and settled, its tables and matches;
* ``league_seats``: who sat in each batch and for how many matches (the window of the cap
  on hogging is read from it);
* ``league_tables``: how many deals each table (its labels) has been dealt;
* ``league_suspensions``: each suspension of a version (the batch it takes effect at, the
  fault that made it, and how many forfeits in a row), and when it was lifted: the batch
  it is seated again from, and why (``referee league reinstate`` asks for it with
  ``asked``; the league lifts it at its next batch).

**Suspensions are counted from the stored results.** After each batch is settled, every
version that played in it is looked at: its last ``suspend_after`` results in key order
since it joined or was last reinstated (:meth:`LeagueLedger.own_forfeits`). When all of
them are forfeits of its own (:func:`referee.errors.own_fault`), it is suspended from the
next batch on, in the settling's own transaction. Nothing but stored results and the
stored suspensions goes into it, so the count is the same however the results arrived,
however many workers played them, and after any restart; a match that failed on the
referee's side left no result, and counts neither way.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.errors import UsageError, own_fault
from referee.names import skeleton
from referee.specs import EntrantRecord, MatchSpec, StoredFault, StoredMatch, StoredSeat
from referee.tournament.model import BotEntry, TournamentFile
from referee.tournament.store import DealSecret, Store, _request_of

__all__ = [
    "LEAGUE_PREFIX",
    "LEAGUE_SCHEMA",
    "VERSION_MARK",
    "BatchRecord",
    "LeagueEntrant",
    "LeagueLedger",
    "Roster",
    "SeatTally",
    "Suspension",
    "Version",
    "batch_of",
    "batch_prefix",
    "league_roster",
    "version_label",
]

LEAGUE_PREFIX = "lg/"
VERSION_MARK = "#"
LEAGUE_SCHEMA = 2
"""The version of the league's own tables (``meta`` key ``league_schema``); 2 added
``league_suspensions`` (a league of schema 1 gets it when it is run again)."""

_BATCH_DIGITS = 8
_TABLE_HASH = 12
_VERSIONED = re.compile(r".*#[0-9]+")


def version_label(name: str, version: int) -> str:
    """The label the results of ``version`` (1, 2, ...) of ``name`` are stored under."""
    return name if version == 1 else f"{name}{VERSION_MARK}{version}"


@dataclass(frozen=True)
class Version:
    """One version of an entrant as the file lists it: ``index`` is its ``[[bots]]`` entry."""

    label: str
    name: str
    version: int
    index: int
    entry: BotEntry


@dataclass(frozen=True)
class Roster:
    """A league file's entrants: every version in file order, and the current version of
    each entrant still in the league (its latest entry, unless that entry retired it)."""

    versions: tuple[Version, ...]
    active: tuple[Version, ...]
    retired: tuple[str, ...]
    """Names of the entrants whose latest entry retired them."""

    @property
    def names(self) -> list[str]:
        """Every entrant's name, in the order of its first entry."""
        return list(dict.fromkeys(v.name for v in self.versions))

    def current(self, name: str) -> Version | None:
        """The version of ``name`` in the league now (``None``: retired, or not entered)."""
        return next((v for v in self.active if v.name == name), None)

    def latest(self, name: str) -> Version | None:
        """The latest version of ``name``, in the league or retired."""
        return next((v for v in reversed(self.versions) if v.name == name), None)


def league_roster(file: TournamentFile, where: Path | str = "") -> Roster:
    """The versions of the league ``file`` (see the module docstring); ``UsageError`` for an
    entry without a name, a name ending in ``#<number>``, or a retirement of nobody."""
    prefix = f"{where}: " if str(where) else ""
    counts: dict[str, int] = {}
    latest: dict[str, Version | None] = {}
    versions: list[Version] = []
    for index, entry in enumerate(file.bots):
        name = entry.name
        if name is None:
            raise UsageError(
                f'{prefix}bots[{index}]: name: required in a league (name = "..."): the '
                "versions of one entrant are the entries that share its name"
            )
        if _VERSIONED.fullmatch(name):
            raise UsageError(
                f"{prefix}bots[{index}]: the name {name!r} ends in '#' and a number, which "
                "marks an entrant's later versions in a league (alice#2); choose another"
            )
        if entry.retired:
            if latest.get(name) is None:
                raise UsageError(
                    f"{prefix}bots[{index}]: retired = true, but {name!r} has no version in "
                    "the league before this entry to retire"
                )
            latest[name] = None
            continue
        counts[name] = counts.get(name, 0) + 1
        version = Version(version_label(name, counts[name]), name, counts[name], index, entry)
        versions.append(version)
        latest[name] = version
    active = tuple(sorted((v for v in latest.values() if v is not None), key=lambda v: v.index))
    retired = tuple(name for name, v in latest.items() if v is None)
    return Roster(tuple(versions), active, retired)


# --------------------------------------------------------------------------- keys


def batch_prefix(batch: int) -> str:
    """``lg/00000012/``: every key of the batch starts with it."""
    return f"{LEAGUE_PREFIX}{batch:0{_BATCH_DIGITS}d}/"


def batch_of(key: str) -> int | None:
    """The batch of a league match key, or ``None`` for any other key."""
    if not key.startswith(LEAGUE_PREFIX):
        return None
    part = key[len(LEAGUE_PREFIX) :].split("/", 1)[0]
    return int(part) if part.isdigit() else None


def _key_range(batch: int) -> tuple[str, str]:
    """Keys of the batch lie in ``[low, high)`` (``0`` follows ``/``): an index range."""
    low = batch_prefix(batch)
    return low, low[:-1] + "0"


# --------------------------------------------------------------------------- records

_SCHEMA = """
CREATE TABLE IF NOT EXISTS league_entrants (
    label TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    author TEXT NOT NULL,
    joined INTEGER NOT NULL,
    retired INTEGER,
    retired_why TEXT,
    mu REAL NOT NULL,
    sigma REAL NOT NULL,
    settled_mu REAL NOT NULL,
    settled_sigma REAL NOT NULL,
    matches INTEGER NOT NULL DEFAULT 0,
    place_sum INTEGER NOT NULL DEFAULT 0,
    firsts INTEGER NOT NULL DEFAULT 0,
    forfeits INTEGER NOT NULL DEFAULT 0,
    faults TEXT NOT NULL DEFAULT '{}',
    last_played REAL,
    last_batch INTEGER NOT NULL,
    placement INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS league_batches (
    batch INTEGER PRIMARY KEY,
    planned REAL NOT NULL,
    settled REAL,
    tables INTEGER NOT NULL,
    matches INTEGER NOT NULL,
    played INTEGER
);
CREATE TABLE IF NOT EXISTS league_seats (
    batch INTEGER NOT NULL,
    label TEXT NOT NULL,
    matches INTEGER NOT NULL,
    PRIMARY KEY (batch, label)
);
CREATE TABLE IF NOT EXISTS league_tables (
    labels TEXT PRIMARY KEY,
    deals INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS league_suspensions (
    label TEXT NOT NULL,
    since INTEGER NOT NULL,
    forfeits INTEGER NOT NULL,
    kind TEXT NOT NULL,
    why TEXT NOT NULL,
    match_key TEXT NOT NULL,
    asked REAL,
    lifted INTEGER,
    lifted_why TEXT,
    PRIMARY KEY (label, since)
);
CREATE INDEX IF NOT EXISTS league_batches_by_time ON league_batches(planned);
CREATE INDEX IF NOT EXISTS results_by_name ON results(name, match_key)
"""

_ENTRANT_COLUMNS = (
    "label, name, version, author, joined, retired, retired_why, mu, sigma, settled_mu, "
    "settled_sigma, matches, place_sum, firsts, forfeits, faults, last_played, last_batch, "
    "placement"
)


@dataclass(frozen=True)
class LeagueEntrant:
    """One version of an entrant as the league keeps it (see the module docstring)."""

    label: str
    name: str
    version: int
    author: str
    joined: int
    retired: int | None
    retired_why: str | None
    mu: float
    sigma: float
    settled_mu: float
    settled_sigma: float
    matches: int
    place_sum: int
    firsts: int
    forfeits: int
    faults: dict[str, int]
    last_played: float | None
    last_batch: int
    placement: int

    def in_league(self, batch: int) -> bool:
        """Whether it may be seated in ``batch``."""
        return self.joined <= batch and (self.retired is None or self.retired > batch)

    @property
    def score(self) -> float:
        """The conservative skill ``mu - 3 sigma`` the leaderboard ranks by."""
        return self.mu - 3 * self.sigma


@dataclass(frozen=True)
class BatchRecord:
    """A batch: when it was planned and settled (Unix times), its tables and matches, and
    how many of them were played (``None`` until it is settled; failed ones are not)."""

    batch: int
    planned: float
    settled: float | None
    tables: int
    matches: int
    played: int | None


@dataclass(frozen=True)
class Suspension:
    """A version suspended from batch ``since`` on after ``forfeits`` forfeits of its own
    in a row, the last in match ``match_key``: its ``kind`` and ``why`` (the fault told in
    one line). ``asked``: when ``referee league reinstate`` asked to lift it; ``lifted``:
    the batch it is seated again from (``lifted_why`` says why), ``None`` while it holds."""

    label: str
    since: int
    forfeits: int
    kind: str
    why: str
    match_key: str
    asked: float | None = None
    lifted: int | None = None
    lifted_why: str | None = None

    def holds(self, batch: int) -> bool:
        """Whether it keeps the version from being seated in ``batch``."""
        return self.since <= batch and (self.lifted is None or self.lifted > batch)


_SUSPENSION_COLUMNS = "label, since, forfeits, kind, why, match_key, asked, lifted, lifted_why"


@dataclass(frozen=True)
class SeatTally:
    """What one stored result adds to one seat's record."""

    label: str
    place: int
    first: bool
    forfeit: bool
    fault: str | None


class LeagueLedger:
    """The league's tables in ``store`` (see the module docstring); ``readonly`` to read a
    league another process runs (nothing is created then)."""

    def __init__(self, store: Store, *, readonly: bool = False) -> None:
        self.store = store
        self._db = store.connection
        if readonly:
            self._check_schema()
            return
        with store.transaction() as db:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            row = db.execute("SELECT value FROM meta WHERE key = 'league_schema'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('league_schema', ?)", (str(LEAGUE_SCHEMA),))
            elif row[0] == "1":  # its new table was just made: nothing else changed
                db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'league_schema'", (str(LEAGUE_SCHEMA),)
                )
        self._check_schema()

    def _check_schema(self) -> None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'league_schema'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is None or row[0] != str(LEAGUE_SCHEMA):
            found = "no league records" if row is None else f"league schema {str(row[0])[:20]}"
            raise UsageError(
                f"{self.store.path} holds {found} (this referee reads league schema "
                f"{LEAGUE_SCHEMA}); run the league with referee league run first"
            )

    # -- entrants --------------------------------------------------------------------

    def entrants(self) -> dict[str, LeagueEntrant]:
        """Every version that ever joined, by label (in label order)."""
        rows = self._db.execute(f"SELECT {_ENTRANT_COLUMNS} FROM league_entrants ORDER BY label")
        return {row[0]: _entrant(row) for row in rows}

    def in_league(self, batch: int) -> dict[str, LeagueEntrant]:
        """The versions that may be seated in ``batch``, by label."""
        rows = self._db.execute(
            f"SELECT {_ENTRANT_COLUMNS} FROM league_entrants WHERE joined <= ? "
            "AND (retired IS NULL OR retired > ?) ORDER BY label",
            (batch, batch),
        )
        return {row[0]: _entrant(row) for row in rows}

    def join(
        self,
        records: Sequence[tuple[EntrantRecord, Version]],
        batch: int,
        rating: tuple[float, float],
    ) -> None:
        """New versions join at ``batch`` with the initial ``rating`` (mu, sigma); each is
        kept apart by its author's key (:func:`referee.names.skeleton`)."""
        mu, sigma = rating
        with self.store.transaction() as db:
            self.store.save_entrants(record for record, _ in records)
            db.executemany(
                "INSERT INTO league_entrants (label, name, version, author, joined, mu, sigma, "
                "settled_mu, settled_sigma, last_batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        v.label,
                        v.name,
                        v.version,
                        skeleton(r.author or v.name),
                        batch,
                        mu,
                        sigma,
                        mu,
                        sigma,
                        batch - 1,
                    )
                    for r, v in records
                ],
            )

    def retire(self, labels: Mapping[str, str], batch: int) -> None:
        """The versions ``labels`` (label -> why) leave the league at ``batch``."""
        with self.store.transaction() as db:
            db.executemany(
                "UPDATE league_entrants SET retired = ?, retired_why = ? "
                "WHERE label = ? AND retired IS NULL",
                [(batch, why, label) for label, why in labels.items()],
            )

    # -- suspensions -----------------------------------------------------------------

    def suspensions(self, label: str | None = None) -> list[Suspension]:
        """Every suspension (of ``label``), in the order they came."""
        where, params = ("WHERE label = ?", (label,)) if label is not None else ("", ())
        rows = self._db.execute(
            f"SELECT {_SUSPENSION_COLUMNS} FROM league_suspensions {where} ORDER BY since, label",
            params,
        )
        return [Suspension(*row) for row in rows]

    def suspended(self, batch: int) -> dict[str, Suspension]:
        """The suspensions that keep a version from being seated in ``batch``, by label."""
        rows = self._db.execute(
            f"SELECT {_SUSPENSION_COLUMNS} FROM league_suspensions WHERE since <= ? "
            "AND (lifted IS NULL OR lifted > ?) ORDER BY label",
            (batch, batch),
        )
        return {row[0]: Suspension(*row) for row in rows}

    def own_forfeits(
        self, label: str, limit: int, since: int, before: int | None = None
    ) -> list[StoredFault]:
        """The forfeits of its own that end the results of ``label`` from batch ``since``
        on (and before batch ``before``), latest first, at most ``limit``: its last
        ``limit`` results in key order, cut at the latest that is not such a forfeit
        (:func:`referee.errors.own_fault`)."""
        end = LEAGUE_PREFIX[:-1] + "0" if before is None else batch_prefix(before)
        rows = self._db.execute(
            "SELECT r.match_key, r.seat, r.name, r.fault_kind, r.fault_detail, "
            "r.fault_request_id, r.fault_reply, r.fault_elapsed_ms, r.stderr_tail, "
            "r.fault_request, r.fault_round, r.forfeit FROM results r "
            "JOIN matches m ON m.key = r.match_key WHERE r.name = ? AND m.status = 'done' "
            "AND r.match_key >= ? AND r.match_key < ? ORDER BY r.match_key DESC LIMIT ?",
            (label, batch_prefix(since), end, limit),
        )
        found: list[StoredFault] = []
        for row in rows:
            if not row[11] or not own_fault(row[3], row[4]):
                break
            found.append(_stored_fault(row))
        return found

    def first_faults(self, label: str) -> list[tuple[StoredFault, int]]:
        """The first fault of each kind of ``label`` (in key order) and how many of that
        kind it has: a query per kind, none per match."""
        kinds = self._db.execute(
            "SELECT fault_kind, COUNT(*), MIN(match_key) FROM results WHERE name = ? "
            "AND fault_kind IS NOT NULL GROUP BY fault_kind ORDER BY fault_kind",
            (label,),
        ).fetchall()
        found = []
        for _kind, count, key in kinds:
            row = self._db.execute(
                "SELECT match_key, seat, name, fault_kind, fault_detail, fault_request_id, "
                "fault_reply, fault_elapsed_ms, stderr_tail, fault_request, fault_round "
                "FROM results WHERE match_key = ? AND name = ?",
                (key, label),
            ).fetchone()
            if row is not None:
                found.append((_stored_fault(row), int(count)))
        return found

    def faults(self, key: str) -> list[StoredFault]:
        """The faults of match ``key`` with their evidence, seat by seat (none: no fault, or
        no such match)."""
        rows = self._db.execute(
            "SELECT match_key, seat, name, fault_kind, fault_detail, fault_request_id, "
            "fault_reply, fault_elapsed_ms, stderr_tail, fault_request, fault_round "
            "FROM results WHERE match_key = ? AND fault_kind IS NOT NULL ORDER BY seat",
            (key,),
        )
        return [_stored_fault(row) for row in rows]

    def results_between(self, label: str, first: int, end: int | None) -> int:
        """How many results ``label`` has in batches ``first`` to ``end`` (excluded; ``None``:
        every later one)."""
        high = LEAGUE_PREFIX[:-1] + "0" if end is None else batch_prefix(end)
        row = self._db.execute(
            "SELECT COUNT(*) FROM results WHERE name = ? AND match_key >= ? AND match_key < ?",
            (label, batch_prefix(first), high),
        ).fetchone()
        return int(row[0])

    def suspend(self, suspension: Suspension) -> None:
        """Store ``suspension`` (the version is not seated from its batch on)."""
        with self.store.transaction() as db:
            db.execute(
                f"INSERT INTO league_suspensions ({_SUSPENSION_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                dataclasses.astuple(suspension),
            )

    def ask_reinstatement(self, label: str, at: float) -> Suspension | None:
        """Ask that the suspension holding ``label`` be lifted (the league lifts it at its
        next batch); returns it, or ``None`` when ``label`` is not suspended."""
        with self.store.transaction() as db:
            current = self.suspended(self.next_batch()).get(label)
            if current is None:
                return None
            if current.asked is None:
                db.execute(
                    "UPDATE league_suspensions SET asked = ? WHERE label = ? AND since = ?",
                    (at, label, current.since),
                )
        return current

    def reinstatements(self) -> list[Suspension]:
        """The suspensions asked to be lifted and not lifted yet."""
        rows = self._db.execute(
            f"SELECT {_SUSPENSION_COLUMNS} FROM league_suspensions WHERE asked IS NOT NULL "
            "AND lifted IS NULL ORDER BY label"
        )
        return [Suspension(*row) for row in rows]

    def lift(self, labels: Mapping[str, str], batch: int) -> None:
        """The suspensions of ``labels`` (label -> why) end: seated again from ``batch``."""
        with self.store.transaction() as db:
            db.executemany(
                "UPDATE league_suspensions SET lifted = ?, lifted_why = ? "
                "WHERE label = ? AND lifted IS NULL",
                [(batch, why, label) for label, why in labels.items()],
            )

    # -- batches ---------------------------------------------------------------------

    def last_batch(self) -> BatchRecord | None:
        """The latest batch planned, settled or not."""
        row = self._db.execute(
            "SELECT batch, planned, settled, tables, matches, played FROM league_batches "
            "ORDER BY batch DESC LIMIT 1"
        ).fetchone()
        return None if row is None else BatchRecord(*row)

    def next_batch(self) -> int:
        """The number of the batch planned next (entrants picked up now join at it)."""
        last = self.last_batch()
        return 0 if last is None else last.batch + 1

    def settled_batches(self) -> int:
        """How many batches are settled (the batches before the open one, if any)."""
        last = self.last_batch()
        if last is None:
            return 0
        return last.batch + 1 if last.settled is not None else last.batch

    def plan(
        self,
        batch: int,
        planned: float,
        specs: Sequence[MatchSpec],
        placement: Iterable[str],
        secret: DealSecret,
    ) -> None:
        """Store the batch's matches (dealt by ``secret``), who sits in it, and the
        placement tables it plays, in one transaction: from now on it is played as stored."""
        seats: dict[str, int] = {}
        tables: dict[tuple[str, ...], int] = {}
        for spec in specs:
            for label in spec.table:
                seats[label] = seats.get(label, 0) + 1
            if spec.rotation == 0:
                tables[tuple(sorted(spec.table))] = spec.deal
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO league_batches (batch, planned, tables, matches) VALUES (?, ?, ?, ?)",
                (batch, planned, len(tables), len(specs)),
            )
            self.store.add_matches(specs, secret)
            db.executemany(
                "INSERT INTO league_seats VALUES (?, ?, ?)",
                [(batch, label, n) for label, n in seats.items()],
            )
            db.executemany(
                "UPDATE league_entrants SET last_batch = ? WHERE label = ?",
                [(batch, label) for label in seats],
            )
            db.executemany(
                "UPDATE league_entrants SET placement = placement + 1 WHERE label = ?",
                [(label,) for label in placement],
            )
            db.executemany(
                "INSERT INTO league_tables VALUES (?, ?) ON CONFLICT(labels) DO UPDATE SET "
                "deals = deals + 1",
                [(json.dumps(list(t), ensure_ascii=False), 1) for t in tables],
            )

    def dealt(self, tables: Iterable[tuple[str, ...]]) -> dict[tuple[str, ...], int]:
        """How many deals each of ``tables`` (labels sorted) has been dealt so far."""
        found = {}
        for table in tables:
            row = self._db.execute(
                "SELECT deals FROM league_tables WHERE labels = ?",
                (json.dumps(list(table), ensure_ascii=False),),
            ).fetchone()
            found[table] = 0 if row is None else int(row[0])
        return found

    def window(self, since: float) -> tuple[dict[str, int], int]:
        """Matches each label was planned in batches planned after ``since``, and all of
        them together (seats): the cap on hogging counts these."""
        rows = self._db.execute(
            "SELECT s.label, SUM(s.matches) FROM league_seats s JOIN league_batches b "
            "ON b.batch = s.batch WHERE b.planned > ? GROUP BY s.label",
            (since,),
        )
        counts = {label: int(n) for label, n in rows}
        return counts, sum(counts.values())

    def batch_matches(self, batch: int) -> list[tuple[MatchSpec, str, int]]:
        """The batch's matches in key order: spec, status and attempts so far."""
        low, high = _key_range(batch)
        rows = self._db.execute(
            "SELECT spec, status, attempts FROM matches WHERE key >= ? AND key < ? ORDER BY key",
            (low, high),
        )
        return [(MatchSpec.model_validate_json(s), status, int(n)) for s, status, n in rows]

    def arrival(self, batch: int) -> dict[str, int]:
        """The results chain's position of each stored result of the batch: the order in
        which they arrived."""
        low, high = _key_range(batch)
        rows = self._db.execute(
            "SELECT match_key, position FROM chain WHERE match_key >= ? AND match_key < ?",
            (low, high),
        )
        return {key: int(position) for key, position in rows}

    def labels_in_league(self, batch: int) -> set[str]:
        """The labels of the versions that may be seated in ``batch``."""
        rows = self._db.execute(
            "SELECT label FROM league_entrants WHERE joined <= ? "
            "AND (retired IS NULL OR retired > ?)",
            (batch, batch),
        )
        return {row[0] for row in rows}

    def batch_results(self, batch: int) -> list[StoredMatch]:
        """The batch's finished matches with their seats, in key order."""
        low, high = _key_range(batch)
        return list(self._completed("m.key >= ? AND m.key < ?", (low, high)))

    def completed(self) -> Iterator[StoredMatch]:
        """Every finished league match, in key order, one at a time (for a full replay:
        nothing but the current match is held)."""
        low = LEAGUE_PREFIX
        return self._completed("m.key >= ? AND m.key < ?", (low, low[:-1] + "0"))

    def _completed(self, where: str, params: tuple[Any, ...]) -> Iterator[StoredMatch]:
        rows = self._db.execute(
            "SELECT m.key, m.spec, r.seat, r.name, r.place, r.score, r.forfeit, r.fault_kind, "
            "r.fault_detail FROM matches m JOIN results r ON r.match_key = m.key "
            f"WHERE m.status = 'done' AND {where} ORDER BY m.key, r.place, r.seat",
            params,
        )
        key: str | None = None
        spec = ""
        seats: list[StoredSeat] = []
        for row in rows:
            if row[0] != key:
                if key is not None:
                    yield StoredMatch(MatchSpec.model_validate_json(spec), tuple(seats))
                key, spec, seats = row[0], row[1], []
            seats.append(StoredSeat(row[2], row[3], row[4], row[5], bool(row[6]), row[7], row[8]))
        if key is not None:
            yield StoredMatch(MatchSpec.model_validate_json(spec), tuple(seats))

    def match(self, key: str) -> StoredMatch | None:
        """The finished match ``key`` with its seats (``None``: not finished)."""
        return next(self._completed("m.key = ?", (key,)), None)

    def recent(self, label: str, limit: int) -> list[StoredMatch]:
        """The last ``limit`` finished matches of ``label``, latest first."""
        keys = [
            row[0]
            for row in self._db.execute(
                "SELECT r.match_key FROM results r JOIN matches m ON m.key = r.match_key "
                "WHERE r.name = ? AND m.status = 'done' ORDER BY r.match_key DESC LIMIT ?",
                (label, limit),
            )
        ]
        found: list[StoredMatch] = []
        for key in keys:
            found += self._completed("m.key = ?", (key,))
        return found

    # -- ratings -----------------------------------------------------------------------

    def live(self, labels: Iterable[str]) -> dict[str, tuple[float, float]]:
        """The live ratings (mu, sigma) of ``labels``."""
        return self._ratings("mu, sigma", labels)

    def settled(self, labels: Iterable[str]) -> dict[str, tuple[float, float]]:
        """The settled ratings (mu, sigma) of ``labels``."""
        return self._ratings("settled_mu, settled_sigma", labels)

    def _ratings(self, columns: str, labels: Iterable[str]) -> dict[str, tuple[float, float]]:
        found = {}
        for label in labels:
            row = self._db.execute(
                f"SELECT {columns} FROM league_entrants WHERE label = ?", (label,)
            ).fetchone()
            if row is not None:
                found[label] = (float(row[0]), float(row[1]))
        return found

    def record(
        self,
        ratings: Mapping[str, tuple[float, float]],
        tallies: Sequence[SeatTally],
        finished: float,
    ) -> None:
        """A stored result's changes: the seats' new live ratings and records (call it in
        the result's own transaction, :meth:`Store.transaction`)."""
        with self.store.transaction() as db:
            for tally in tallies:
                if tally.fault is not None:
                    row = db.execute(
                        "SELECT faults FROM league_entrants WHERE label = ?", (tally.label,)
                    ).fetchone()
                    faults = dict(json.loads(row[0])) if row is not None else {}
                    faults[tally.fault] = faults.get(tally.fault, 0) + 1
                    db.execute(
                        "UPDATE league_entrants SET faults = ? WHERE label = ?",
                        (
                            json.dumps(dict(sorted(faults.items())), separators=(",", ":")),
                            tally.label,
                        ),
                    )
                mu, sigma = ratings[tally.label]
                db.execute(
                    "UPDATE league_entrants SET mu = ?, sigma = ?, matches = matches + 1, "
                    "place_sum = place_sum + ?, firsts = firsts + ?, forfeits = forfeits + ?, "
                    "last_played = MAX(COALESCE(last_played, 0), ?) WHERE label = ?",
                    (
                        mu,
                        sigma,
                        tally.place,
                        int(tally.first),
                        int(tally.forfeit),
                        finished,
                        tally.label,
                    ),
                )

    def settle(
        self, batch: int, ratings: Mapping[str, tuple[float, float]], played: int, at: float
    ) -> None:
        """Batch ``batch`` is over: ``ratings`` are its seats' settled ratings (the settled
        ones before it, then its results in key order), which the live ones become too."""
        with self.store.transaction() as db:
            db.executemany(
                "UPDATE league_entrants SET mu = ?, sigma = ?, settled_mu = ?, "
                "settled_sigma = ? WHERE label = ?",
                [(mu, sigma, mu, sigma, label) for label, (mu, sigma) in ratings.items()],
            )
            db.execute(
                "UPDATE league_batches SET settled = ?, played = ? WHERE batch = ?",
                (at, played, batch),
            )


def _stored_fault(row: Sequence[Any]) -> StoredFault:
    """A fault from its result row's columns, in the order :meth:`LeagueLedger.own_forfeits`
    selects them."""
    key, seat, name, kind, detail, request_id, reply, elapsed, stderr, request = row[:10]
    return StoredFault(
        key,
        seat,
        name,
        kind,
        detail or "",
        request_id,
        reply,
        elapsed,
        stderr,
        request=_request_of(request),
        round=row[10],
    )


def _entrant(row: tuple[Any, ...]) -> LeagueEntrant:
    values = list(row)
    values[15] = dict(json.loads(values[15] or "{}"))
    return LeagueEntrant(*values)
