"""The results database of one tournament: SQLite in WAL mode, plus match logs on disk.

Layout, in ``<name>.results/`` next to the tournament file::

    results.sqlite      entrants, matches (with status, and the replacement that retired
                        them, if one did), results per seat (with each fault's evidence
                        and the faulting bot's stderr report, each reply's time and the
                        bank spent, and how many decisions its kit replaced), settings,
                        the deal secrets (see :mod:`referee.tournament.deals`), the
                        entrants replaced (:mod:`referee.tournament.replacement`)
    logs/<key>.jsonl    the match log of each match (``/`` in the key becomes ``_``)
    logs/<key>.stderr.json  what each seat wrote to stderr in it (:mod:`referee.stderrlog`)
    .lock               held (flock) by the one process running the tournament

The folder is private to its owner (mode 0700; a planted one is refused, see
:mod:`referee.folders`): it holds the deal secret, and the log of a
match in progress holds every hand of it; a bot must never read either.

Only the coordinator writes. Each finished match is one transaction that replaces the seat
rows of its key and marks it ``done``, so a result is never half stored and never counted
twice, however often the match was started. A coordinator killed mid-run leaves matches
``running``; the next run plays them again. Readers (``referee leaderboard``) never block
the writer (WAL).

A match **retired** by a replacement (``--replace``) keeps everything it had; it is left out
of what the ratings and pages count (:meth:`Store.completed`, :meth:`Store.fault_reports`,
:meth:`Store.reply_times`, :meth:`Store.kit_replacements`) and given back where everything
played matters (``completed(include_retired=True)``: ``referee verify``, the bot's history).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shlex
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from referee.clock import WallClock
from referee.errors import UsageError
from referee.folders import private_folder
from referee.results import FaultInfo, MatchResult, ReplyTimes
from referee.specs import (
    EntrantRecord,
    MatchSpec,
    Replacement,
    StoredFault,
    StoredMatch,
    StoredSeat,
)
from referee.text import printable
from referee.tournament import chain
from referee.tournament.deals import BeaconDeclaration, commitment, dealing_key, new_secret
from referee.tournament.model import Plan

__all__ = [
    "DATABASE",
    "ChainLink",
    "DealSecret",
    "MatchRecord",
    "MatchStatus",
    "RunLock",
    "Store",
    "wipe",
]

DATABASE = "results.sqlite"
LOGS = "logs"
LOCK = ".lock"
SCHEMA_VERSION = 9
"""5: a fault keeps the request it answered (``fault_request``, ``fault_round``); 6: a secret
committed before the run keeps the beacon declared with it (``beacon_source``,
``beacon_form``, bound into its commitment), and the results chain starts with a plan link
(``match_key`` empty); 7: each seat keeps its reply times and the bank it spent
(``reply_ms``, ``bank_spent_ms``); 8: and how many of its decisions its bot kit replaced
(``kit_replaced``); 9: an entrant replaced with ``--replace`` keeps its old version's
matches, retired (``replacements``; each match's ``generation``, the replacement it was
added under, and ``retired``, the one that retired it)."""

MatchStatus = Literal["pending", "running", "done", "failed"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entrants (
    name TEXT PRIMARY KEY,
    version TEXT,
    sha256 TEXT NOT NULL,
    path TEXT NOT NULL,
    author TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS deal_secrets (
    id INTEGER PRIMARY KEY,
    secret TEXT NOT NULL,
    commitment TEXT NOT NULL,
    created REAL NOT NULL,
    revealed REAL,
    beacon_source TEXT,
    beacon_form TEXT,
    beacon TEXT
);
CREATE TABLE IF NOT EXISTS matches (
    key TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    secret_id INTEGER NOT NULL REFERENCES deal_secrets(id),
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    started REAL,
    finished REAL,
    duration REAL,
    rounds INTEGER,
    log_path TEXT,
    error TEXT,
    deal_attempt INTEGER,
    generation INTEGER NOT NULL DEFAULT 0,
    retired INTEGER
);
CREATE TABLE IF NOT EXISTS results (
    match_key TEXT NOT NULL REFERENCES matches(key),
    seat INTEGER NOT NULL,
    name TEXT NOT NULL,
    place INTEGER NOT NULL,
    score INTEGER NOT NULL,
    forfeit INTEGER NOT NULL,
    fault_kind TEXT,
    fault_detail TEXT,
    fault_request_id INTEGER,
    fault_reply TEXT,
    fault_elapsed_ms INTEGER,
    stderr_tail TEXT,
    fault_request TEXT,
    fault_round INTEGER,
    reply_ms TEXT,
    bank_spent_ms INTEGER,
    kit_replaced INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (match_key, seat)
);
CREATE TABLE IF NOT EXISTS chain (
    position INTEGER PRIMARY KEY,
    match_key TEXT UNIQUE REFERENCES matches(key),
    entry TEXT NOT NULL,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS replacements (
    generation INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    old_version TEXT,
    old_sha256 TEXT NOT NULL,
    new_version TEXT,
    new_sha256 TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS matches_by_status ON matches(status);
"""


@dataclass(frozen=True)
class MatchRecord:
    """A stored match's state: status, rounds played, and when (Unix times, seconds);
    ``retired``: the replacement that retired it (``None`` while it counts)."""

    key: str
    status: MatchStatus
    rounds: int | None
    started: float | None
    finished: float | None
    duration: float | None
    retired: int | None = None


@dataclass(frozen=True)
class DealSecret:
    """A deal secret: ``revealed`` (a time) once the matches it dealt are all played.

    ``declared``: made by ``referee tournament commit`` before entries closed, with the
    beacon's source and form (bound into the commitment); ``beacon``: the public value
    mixed in when the run started (then required), in that form.
    :attr:`key` is what the deal seeds are derived with.
    """

    id: int
    secret: bytes
    commitment: str
    revealed: float | None
    declared: BeaconDeclaration | None = None
    beacon: str | None = None

    @property
    def key(self) -> bytes:
        return dealing_key(self.secret, self.beacon)


@dataclass(frozen=True)
class ChainLink:
    """One link of the results chain (:mod:`referee.tournament.chain`): a stored result
    (``key``: its match), or a plan link (``key`` is ``None``)."""

    position: int
    key: str | None
    entry: str
    head: str


class Store:
    """The SQLite results database of one tournament (one connection, this process only)."""

    def __init__(
        self, results_dir: Path, *, readonly: bool = False, clock: WallClock = time.time
    ) -> None:
        """Open (``readonly``: only read, never create or change anything: how ``referee
        verify`` opens someone else's results) the store in ``results_dir``; ``clock`` is
        the wall time it stamps (the run's, :class:`~referee.clock.WallClock`)."""
        self.results_dir = results_dir
        self.clock = clock
        self.logs_dir = results_dir / LOGS
        self.path = results_dir / DATABASE
        try:
            self._open(readonly)
        except sqlite3.DatabaseError as exc:  # a damaged file, or not a database at all
            if getattr(self, "_db", None) is not None:
                self._db.close()
            fix = "" if readonly else "; move it away, or run with --restart to discard it"
            raise UsageError(
                f"{self.path} cannot be read as a results database ({exc}){fix}"
            ) from exc

    def _open(self, readonly: bool) -> None:
        if readonly:
            uri = f"file:{self.path.as_posix()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
            rows = self._db.execute("SELECT value FROM meta WHERE key = 'schema'")
            self._check_schema(rows, readonly=True)
            return
        private_folder(self.results_dir, parents=True)
        private_folder(self.logs_dir)
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a killed process loses nothing committed; a power cut may
        # lose the last few results, which the next run then plays again.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        with self._transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            else:
                self._check_schema(iter([row]))

    def _check_schema(self, rows: Iterator[Any], *, readonly: bool = False) -> None:
        row = next(rows, None)
        if row is not None and row[0] != str(SCHEMA_VERSION):
            what = (
                "check it with the version that wrote it"
                if readonly
                else "run with --restart to discard its results"
            )
            raise UsageError(
                f"{self.path} was written by another version of the referee "
                f"(schema {str(row[0])[:20]}, this one reads {SCHEMA_VERSION}); {what}"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._db.in_transaction:  # joined: the outermost block commits or rolls back
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction around the block, joined by every store method called in it.

        For the tables a module keeps beside the store's own in the same database (the
        league's ratings, :mod:`referee.tournament.league`): a result and what it changes
        there commit together or not at all. Yields the connection to write them with.
        """
        with self._transaction():
            yield self._db

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection, to read those tables (inside :meth:`snapshot` for one state)."""
        return self._db

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one state of the store, however many results the run commits
        meanwhile (a read transaction: in WAL mode it never blocks the writer)."""
        self._db.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    def log_path(self, key: str) -> Path:
        """Where the match log of ``key`` goes."""
        return self.logs_dir / f"{key.replace('/', '_')}.jsonl"

    # -- settings and entrants ------------------------------------------------------

    def settings(self) -> dict[str, Any] | None:
        """The settings the stored results were played with (``None`` before the first run)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def check_settings(self, settings: dict[str, Any]) -> None:
        """Store ``settings`` on first use; refuse if stored results were played with others."""
        text = json.dumps(settings, sort_keys=True)
        row = self._db.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        if row is None:
            with self._transaction():
                self._db.execute("INSERT INTO meta VALUES ('settings', ?)", (text,))
            return
        stored = json.loads(row[0])
        keys = settings.keys() | stored.keys()
        changed = sorted(k for k in keys if settings.get(k) != stored.get(k))
        if changed:
            why = ""
            if settings.get("format") == "compare":
                why = " (these are the results of another comparison: give another --results)"
            elif "field" in changed:
                why = " (a balanced round robin's tables are made for its whole field of bots)"
            raise UsageError(
                f"{self.path}: results were played with other settings ({', '.join(changed)} "
                f"changed{why}); run with --restart to discard them, or undo the change"
            )

    def save_plan(self, plan: Plan) -> None:
        """Keep the tournament plan the matches are scheduled from (``referee verify``
        recomputes the schedule from it) and chain it: a plan link
        (:func:`referee.tournament.chain.plan_entry`, with the stored entrants' SHA-256)
        when it is not the last one chained. Needs the deal secret (the chain starts from
        its commitment) and the entrants stored first. The link binds the replacements made
        so far too, so a replacement is chained before any result played after it."""
        fingerprints = {n: e.sha256 for n, e in self.entrants().items()}
        entry = chain.plan_entry(plan, fingerprints, self.replacements())
        with self._transaction():
            self._db.execute(
                "INSERT INTO meta VALUES ('plan', ?) ON CONFLICT(key) DO UPDATE SET "
                "value = excluded.value",
                (plan.to_json(),),
            )
            last = self._db.execute(
                "SELECT entry FROM chain WHERE match_key IS NULL ORDER BY position DESC LIMIT 1"
            ).fetchone()
            if last is None or last[0] != entry:
                self._chain(None, entry)

    def plan(self) -> str | None:
        """The stored tournament plan (JSON), or ``None`` before the first run."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'plan'").fetchone()
        return None if row is None else str(row[0])

    def entrants(self) -> dict[str, EntrantRecord]:
        rows = self._db.execute(
            "SELECT name, version, sha256, path, author FROM entrants ORDER BY name"
        )
        return {r[0]: EntrantRecord(*r) for r in rows}

    def check_entrants(
        self, current: Sequence[EntrantRecord], *, replaceable: bool = False
    ) -> None:
        """Refuse when a stored entrant's files changed or it left the tournament.

        Results played by other code would be mixed with new ones. New entrants are fine; a
        changed one can be replaced first (``--replace``, :mod:`referee.tournament.
        replacement`): with ``replaceable`` (the command offers it) the refusal says so.
        """
        stored = self.entrants()
        now = {e.name: e for e in current}
        problems = []
        changed = []
        for name, old in stored.items():
            new = now.get(name)
            if new is None:
                problems.append(f"{name!r} has results but is no longer in the tournament")
            elif new.sha256 != old.sha256:
                changed.append(name)
                problems.append(
                    f"{name!r} changed since its results were stored "
                    f"(sha256 {old.sha256[:12]}… is now {new.sha256[:12]}…)"
                )
        if problems:
            replace = "".join(f" --replace {shlex.quote(printable(n))}" for n in changed)
            keep = (
                f"run with{replace} to play its tables again with the new files (the other "
                "results are kept), with --restart to discard every stored result, or put "
                "the old files back"
                if replaceable and len(changed) == len(problems)
                else "run with --restart to discard the stored results, or put the old files back"
            )
            raise UsageError(f"{self.path}: {'; '.join(problems)}; {keep}")

    def save_entrants(self, entrants: Iterable[EntrantRecord]) -> None:
        with self._transaction():
            self._db.executemany(
                "INSERT INTO entrants VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                "version = excluded.version, sha256 = excluded.sha256, path = excluded.path, "
                "author = excluded.author",
                [(e.name, e.version, e.sha256, e.path, e.author) for e in entrants],
            )

    # -- deal secrets -------------------------------------------------------------------

    def deal_secret(
        self, provided: bytes | None = None, *, beacon: str | None = None
    ) -> DealSecret:
        """The secret that deals new matches: the unrevealed one, or a new one.

        ``provided`` (to reproduce a tournament) becomes the new secret when one is needed,
        and must equal the unrevealed one when there is one. A secret committed to before
        the run (:meth:`commit_secret`) needs ``beacon``, in the form declared with it: it
        is recorded, in that form's one spelling, the first time and must be the same on
        every later run; a ``beacon`` needs such a secret (mixed into a secret drawn now,
        it would prove nothing).
        """
        current = self._unrevealed()
        if current is not None:
            if provided is not None and provided != current.secret:
                raise UsageError(
                    f"{self.path}: its matches are dealt with another secret (commitment "
                    f"{current.commitment[:16]}…); run with --restart to deal with this one"
                )
            return self._with_beacon(current, beacon)
        if beacon is not None:
            raise UsageError(
                "--beacon mixes a public value into a secret committed to before it was "
                "known; commit first (referee tournament commit FILE --beacon-source ... "
                "--beacon-form ...), publish the commitment, then run with the beacon"
            )
        return self._insert_secret(provided if provided is not None else new_secret(), None)

    def commit_secret(self, declared: BeaconDeclaration) -> DealSecret:
        """The secret for ``referee tournament commit``: the unrevealed one, or a new one,
        committed to together with ``declared``, the beacon its matches are then dealt with.
        Committing again with the same declaration returns the same secret."""
        current = self._unrevealed()
        if current is None:
            return self._insert_secret(new_secret(), declared)
        if current.declared is None:
            raise UsageError(
                f"{self.path}: a run has already dealt matches with its secret "
                f"(commitment {current.commitment[:16]}…); commit before the first run, "
                "or run with --restart"
            )
        if current.declared != declared:
            raise UsageError(
                f"{self.path}: its secret is already committed to (commitment "
                f"{current.commitment[:16]}…) with the beacon {current.declared.source!r} "
                f"({current.declared.form}); a commitment stands once published: run with "
                "that beacon, or --restart to commit anew (and publish the new commitment)"
            )
        return current

    def _unrevealed(self) -> DealSecret | None:
        row = self._db.execute(
            f"SELECT {_SECRET_COLUMNS} FROM deal_secrets WHERE revealed IS NULL"
        ).fetchone()
        return None if row is None else _secret_row(row)

    def _insert_secret(self, secret: bytes, declared: BeaconDeclaration | None) -> DealSecret:
        sealed = commitment(secret, declared)
        with self._transaction():
            cursor = self._db.execute(
                "INSERT INTO deal_secrets (secret, commitment, created, beacon_source, "
                "beacon_form) VALUES (?, ?, ?, ?, ?)",
                (
                    secret.hex(),
                    sealed,
                    self.clock(),
                    declared.source if declared else None,
                    declared.form if declared else None,
                ),
            )
        assert cursor.lastrowid is not None
        return DealSecret(cursor.lastrowid, secret, sealed, None, declared)

    def _with_beacon(self, current: DealSecret, beacon: str | None) -> DealSecret:
        """Check ``beacon`` against what ``current`` needs, recording it the first time."""
        declared = current.declared
        if declared is None:
            if beacon is not None:
                raise UsageError(
                    f"{self.path}: its secret (commitment {current.commitment[:16]}…) was drawn "
                    "when the first run started, not committed to before it: a beacon mixed "
                    "in now would prove nothing; run with --restart after "
                    "referee tournament commit FILE"
                )
            return current
        if beacon is None:
            if current.beacon is not None:
                return current
            raise UsageError(
                f"{self.path}: its secret was committed to before the run (commitment "
                f"{current.commitment[:16]}…) with the beacon {declared.source!r}; give that "
                f"value with --beacon ({declared.describe()})"
            )
        try:
            value = declared.normalise(beacon)
        except ValueError as exc:
            raise UsageError(f"--beacon: {exc} (the beacon: {declared.source})") from None
        if current.beacon is not None:
            if value != current.beacon:
                raise UsageError(
                    f"{self.path}: its matches are dealt with the beacon {current.beacon!r}, "
                    f"not {value!r}"
                )
            return current
        with self._transaction():
            self._db.execute("UPDATE deal_secrets SET beacon = ? WHERE id = ?", (value, current.id))
        return dataclasses.replace(current, beacon=value)

    def deal_secrets(self) -> list[DealSecret]:
        """Every deal secret of the tournament, oldest first."""
        rows = self._db.execute(f"SELECT {_SECRET_COLUMNS} FROM deal_secrets ORDER BY id")
        return [_secret_row(r) for r in rows]

    def reveal_secrets(self) -> None:
        """Mark every secret revealed (the tournament is complete): it never deals again."""
        with self._transaction():
            self._db.execute(
                "UPDATE deal_secrets SET revealed = ? WHERE revealed IS NULL", (self.clock(),)
            )

    def secret_of(self) -> dict[str, int]:
        """The id of the secret that dealt each match, by key."""
        return dict(self._db.execute("SELECT key, secret_id FROM matches"))

    # -- matches ----------------------------------------------------------------------

    def add_matches(self, specs: Iterable[MatchSpec], secret: DealSecret) -> None:
        """Record scheduled matches as ``pending``, under the latest replacement; keys
        already stored keep their state, their spec and the secret that dealt them."""
        with self._transaction():
            generation = self._generation()
            self._db.executemany(
                "INSERT INTO matches (key, spec, secret_id, generation) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(key) DO NOTHING",
                [(s.key, s.model_dump_json(), secret.id, generation) for s in specs],
            )

    # -- replacements (referee.tournament.replacement) --------------------------------

    def _generation(self) -> int:
        row = self._db.execute("SELECT MAX(generation) FROM replacements").fetchone()
        return int(row[0] or 0)

    def replacements(self) -> list[Replacement]:
        """Every replacement of an entrant's files, in the order they were made."""
        rows = self._db.execute(
            "SELECT generation, name, old_version, old_sha256, new_version, new_sha256, "
            "created FROM replacements ORDER BY generation"
        )
        return [Replacement(*row) for row in rows]

    def replace_entrant(
        self,
        replacement: Replacement,
        entrant: EntrantRecord,
        retire: Iterable[str],
        replays: Iterable[MatchSpec],
        secret: DealSecret,
    ) -> None:
        """Store ``replacement`` in one transaction: the entrant's new record, ``retire``
        (the matches of its old version) retired by it, ``replays`` scheduled under it and
        dealt by ``secret``. Its generation must be the next one."""
        r = replacement
        with self._transaction():
            if r.generation != self._generation() + 1:
                raise ValueError(f"replacement {r.generation} is not the next one")
            self._db.execute(
                "INSERT INTO replacements VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    r.generation,
                    r.name,
                    r.old_version,
                    r.old_sha256,
                    r.new_version,
                    r.new_sha256,
                    r.created,
                ),
            )
            self._db.execute(
                "UPDATE entrants SET version = ?, sha256 = ?, path = ?, author = ? WHERE name = ?",
                (entrant.version, entrant.sha256, entrant.path, entrant.author, entrant.name),
            )
            self._db.executemany(
                "UPDATE matches SET retired = ? WHERE key = ? AND retired IS NULL",
                [(r.generation, key) for key in retire],
            )
            self._db.executemany(
                "INSERT INTO matches (key, spec, secret_id, generation) VALUES (?, ?, ?, ?)",
                [(s.key, s.model_dump_json(), secret.id, r.generation) for s in replays],
            )

    def retired(self) -> dict[str, int]:
        """The retired matches (played or not), by key: the replacement that retired each."""
        rows = self._db.execute("SELECT key, retired FROM matches WHERE retired IS NOT NULL")
        return {key: int(generation) for key, generation in rows}

    def generations(self) -> dict[str, int]:
        """The replacement each stored match was added under (0: before any), by key."""
        return {key: int(g) for key, g in self._db.execute("SELECT key, generation FROM matches")}

    def specs(self) -> dict[str, MatchSpec]:
        """Every stored match spec (with the deal seed it was scheduled with), by key."""
        rows = self._db.execute("SELECT key, spec FROM matches")
        return {key: MatchSpec.model_validate_json(spec) for key, spec in rows}

    def done_keys(self) -> set[str]:
        rows = self._db.execute("SELECT key FROM matches WHERE status = 'done'")
        return {r[0] for r in rows}

    def counts(self) -> dict[str, int]:
        """How many matches are in each status."""
        rows = self._db.execute("SELECT status, COUNT(*) FROM matches GROUP BY status")
        counts = dict.fromkeys(("pending", "running", "done", "failed"), 0)
        counts.update({r[0]: r[1] for r in rows})
        return counts

    def mark_running(self, key: str) -> None:
        """A match was handed to a worker: one more attempt (a ``done`` match stays done)."""
        with self._transaction():
            self._db.execute(
                "UPDATE matches SET status = 'running', attempts = attempts + 1, started = ?, "
                "error = NULL WHERE key = ? AND status != 'done'",
                (self.clock(), key),
            )

    def record_result(
        self,
        key: str,
        result: MatchResult,
        table: Sequence[str],
        *,
        attempt: int = 0,
        log_sha256: str = "",
    ) -> str | None:
        """Store a finished match: its seat rows, ``done`` and its chain link, in one
        transaction; returns the chain's new head, or ``None`` when ``key`` was already
        stored (a match computed twice is stored once: the first result stands).

        ``table`` (entrant names by seat, from the spec) names the seats, so a seat name the
        match runner made distinct never hides whose result it is. ``attempt`` is the deal
        attempt the match was played on (0: its scheduled deal; more: fresh cards after an
        attempt that did not finish) and ``log_sha256`` the SHA-256 of its log. A faulted
        seat keeps its evidence: the request id, the offending reply line, the time taken
        and the bot's stderr report (:meth:`fault_reports`). Every seat keeps its reply times
        and the bank it spent (:meth:`reply_times`).
        """
        rows = [
            (
                key,
                st.seat,
                table[st.seat],
                st.place,
                st.score,
                int(st.forfeit),
                *_fault_columns(st.fault),
                result.stderr_tails.get(st.seat) if st.fault else None,
                *_request_columns(st.fault),
                json.dumps(result.reply_ms.get(st.seat, []), separators=(",", ":")),
                result.bank_spent_ms.get(st.seat),
                st.kit_replaced,
            )
            for st in result.standings
        ]
        if sorted(r[1] for r in rows) != list(range(len(table))):
            raise ValueError(f"match {key}: standings do not cover seats 0..{len(table) - 1}")
        entry = chain.entry_text(
            key,
            attempt,
            result.seed,
            log_sha256,
            [(r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows],
        )
        with self._transaction():
            status = self._db.execute("SELECT status FROM matches WHERE key = ?", (key,)).fetchone()
            if status is None:
                raise ValueError(f"match {key} is not scheduled in this store")
            if status[0] == "done":
                return None
            self._db.execute("DELETE FROM results WHERE match_key = ?", (key,))
            self._db.executemany(f"INSERT INTO results VALUES ({_RESULT_SLOTS})", rows)
            self._db.execute(
                "UPDATE matches SET status = 'done', finished = ?, duration = ?, rounds = ?, "
                "log_path = ?, error = NULL, deal_attempt = ? WHERE key = ?",
                (self.clock(), result.duration_s, result.rounds, result.log, attempt, key),
            )
            head = self._chain(key, entry)
        return head

    def _chain(self, key: str | None, entry: str) -> str:
        """Append a link to the chain (inside a transaction); returns its head."""
        last = self._db.execute(
            "SELECT position, head FROM chain ORDER BY position DESC LIMIT 1"
        ).fetchone()
        position, head = (last[0] + 1, last[1]) if last else (1, self._genesis())
        head = chain.next_head(head, entry)
        self._db.execute("INSERT INTO chain VALUES (?, ?, ?, ?)", (position, key, entry, head))
        return head

    def _genesis(self) -> str:
        first = self._db.execute("SELECT commitment FROM deal_secrets ORDER BY id").fetchone()
        if first is None:
            raise ValueError("no deal secret: nothing can have been played")
        return chain.genesis(first[0])

    def chain(self) -> list[ChainLink]:
        """Every link of the chain (plan links and results), in the order they were stored."""
        rows = self._db.execute("SELECT position, match_key, entry, head FROM chain ORDER BY 1")
        return [ChainLink(*row) for row in rows]

    def chain_head(self) -> tuple[int, str | None]:
        """How many results the chain holds and its head (``None`` before the first link)."""
        row = self._db.execute(
            "SELECT COUNT(match_key), (SELECT head FROM chain ORDER BY position DESC LIMIT 1) "
            "FROM chain"
        ).fetchone()
        return (row[0], row[1])

    def deal_attempts(self) -> dict[str, int]:
        """The deal attempt each ``done`` match was played on (0: its scheduled deal)."""
        rows = self._db.execute("SELECT key, deal_attempt FROM matches WHERE status = 'done'")
        return {key: attempt or 0 for key, attempt in rows}

    def record_failure(self, key: str, error: str, *, final: bool) -> None:
        """An attempt failed on our side: back to ``pending`` for a retry, or ``failed``."""
        with self._transaction():
            self._db.execute(
                "UPDATE matches SET status = ?, finished = ?, error = ? WHERE key = ?",
                ("failed" if final else "pending", self.clock(), error, key),
            )

    def attempts(self) -> dict[str, int]:
        rows = self._db.execute("SELECT key, attempts FROM matches")
        return {r[0]: r[1] for r in rows}

    def completed(self, *, include_retired: bool = False) -> list[StoredMatch]:
        """Every ``done`` match that counts with its seats, in key order (the canonical
        rating order); with ``include_retired``, the retired ones too."""
        counts = "" if include_retired else " AND m.retired IS NULL"
        seats: dict[str, list[StoredSeat]] = {}
        rows = self._db.execute(
            "SELECT r.match_key, r.seat, r.name, r.place, r.score, r.forfeit, r.fault_kind, "
            "r.fault_detail FROM results r JOIN matches m ON m.key = r.match_key "
            f"WHERE m.status = 'done'{counts} ORDER BY r.match_key, r.place, r.seat"
        )
        for r in rows:
            seats.setdefault(r[0], []).append(
                StoredSeat(r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7])
            )
        specs = self._db.execute(
            f"SELECT key, spec FROM matches m WHERE status = 'done'{counts} ORDER BY key"
        )
        return [
            StoredMatch(MatchSpec.model_validate_json(spec), tuple(seats.get(key, ())))
            for key, spec in specs
        ]

    def fault_reports(self) -> list[StoredFault]:
        """Every fault of a ``done`` match that counts with its evidence, by key then seat."""
        rows = self._db.execute(
            "SELECT r.match_key, r.seat, r.name, r.fault_kind, r.fault_detail, "
            "r.fault_request_id, r.fault_reply, r.fault_elapsed_ms, r.stderr_tail, "
            "r.fault_request, r.fault_round FROM results r JOIN matches m ON m.key = r.match_key "
            "WHERE m.status = 'done' AND m.retired IS NULL AND r.fault_kind IS NOT NULL "
            "ORDER BY r.match_key, r.seat"
        )
        found = []
        for row in rows:
            key, seat, name, kind, detail, request_id, reply, elapsed, stderr = row[:9]
            request = _request_of(row[9])
            found.append(
                StoredFault(
                    key,
                    seat,
                    name,
                    kind,
                    detail,
                    request_id,
                    reply,
                    elapsed,
                    stderr,
                    request=request,
                    round=row[10],
                )
            )
        return found

    def reply_times(self) -> dict[str, ReplyTimes]:
        """Each bot's reply times over its ``done`` matches that count, by the name it was
        entered as (a histogram of whole milliseconds, and the bank it spent in each match):
        a replaced version's times are not the current one's."""
        rows = self._db.execute(
            "SELECT r.name, r.reply_ms, r.bank_spent_ms FROM results r "
            "JOIN matches m ON m.key = r.match_key WHERE m.status = 'done' "
            "AND m.retired IS NULL ORDER BY r.match_key, r.seat"
        )
        found: dict[str, ReplyTimes] = {}
        for name, times, spent in rows:
            found.setdefault(name, ReplyTimes()).add(json.loads(times or "[]"), spent)
        return found

    def kit_replacements(self) -> dict[str, tuple[int, int]]:
        """For each entrant whose bot kit replaced decisions in ``done`` matches that count:
        in how many matches, and how many decisions in all (the kits' safety net)."""
        rows = self._db.execute(
            "SELECT r.name, COUNT(*), SUM(r.kit_replaced) FROM results r "
            "JOIN matches m ON m.key = r.match_key "
            "WHERE m.status = 'done' AND m.retired IS NULL AND r.kit_replaced > 0 "
            "GROUP BY r.name"
        )
        return {name: (matches, decisions) for name, matches, decisions in rows}

    def match_records(self) -> dict[str, MatchRecord]:
        """Every stored match's status and timings, by key."""
        rows = self._db.execute(
            "SELECT key, status, rounds, started, finished, duration, retired FROM matches"
        )
        return {row[0]: MatchRecord(*row) for row in rows}


class RunLock:
    """One run per tournament at a time: an ``flock`` on ``<results>/.lock``.

    The lock goes away with its process, so a killed run never blocks the next one.
    """

    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / LOCK
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        private_folder(self.path.parent, parents=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(
                f"another run of this tournament is in progress ({self.path} is locked)"
            ) from None
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_RESULT_SLOTS = ", ".join("?" * 17)


def _fault_columns(fault: FaultInfo | None) -> tuple[Any, ...]:
    """The fault columns of a seat row: kind, detail, request id, reply, elapsed ms."""
    if fault is None:
        return (None,) * 5
    return (fault.kind, fault.detail, fault.request_id, fault.reply, fault.elapsed_ms)


MAX_REQUEST_BYTES = 8192
"""A fault's request is kept whole up to this size (as JSON); a larger one (an ``act``
with hundreds of legal plays in a 52-card deck) keeps every key but ``legal``, which
becomes a count."""


def _request_columns(fault: FaultInfo | None) -> tuple[str | None, int | None]:
    """The request a fault answered (the last one written to the bot), as compact JSON,
    and the round then: what the published fault explains it with."""
    if fault is None or fault.request is None:
        return (None, None if fault is None else fault.round)
    text = json.dumps(fault.request, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode("utf-8")) > MAX_REQUEST_BYTES:
        cut = {k: v for k, v in fault.request.items() if k != "legal"}
        legal = fault.request.get("legal")
        if isinstance(legal, list):
            cut["legal"] = f"{len(legal)} legal plays (left out of a request this long)"
        text = json.dumps(cut, ensure_ascii=False, separators=(",", ":"))[:MAX_REQUEST_BYTES]
    return (text, fault.round)


def _request_of(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:  # cut in the middle of a value: keep what it was, as text
        return {"request": text}
    return value if isinstance(value, dict) else None


_SECRET_COLUMNS = "id, secret, commitment, revealed, beacon_source, beacon_form, beacon"


def _secret_row(row: tuple[Any, ...]) -> DealSecret:
    """A stored secret, as stored (a declaration is checked by ``verify``, not here)."""
    declared = None
    if row[4] is not None or row[5] is not None:
        declared = BeaconDeclaration(str(row[4] or ""), str(row[5] or ""))
    return DealSecret(row[0], bytes.fromhex(row[1]), row[2], row[3], declared, row[6])


def wipe(results_dir: Path) -> None:
    """Delete the stored results and logs of a tournament (``--restart``); keeps the lock."""
    for name in (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm"):
        with contextlib.suppress(FileNotFoundError):
            (results_dir / name).unlink()
    shutil.rmtree(results_dir / LOGS, ignore_errors=True)
