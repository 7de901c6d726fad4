"""The competition server's own SQLite file, ``server.sqlite`` in the league's results folder.

It sits beside the league's store (``results.sqlite``, :mod:`referee.tournament.store`) and
apart from it: what the server keeps (authors, their tokens' digests, the audit log, the
uploads, their queue and their comparisons) is not a result, survives ``--restart``
(which wipes the results, :func:`referee.tournament.store.wipe`) and is never read by
``referee verify`` or published.

Durability: WAL mode with ``synchronous=FULL``, so a commit that returned is on the disk
(the fsync of the WAL is part of it), which is what the server's ``202`` promises for an
upload; a killed process or a power cut loses nothing committed. Every change is one
``BEGIN IMMEDIATE`` transaction, so two processes writing at once (the server and an
organiser's ``referee authors add``) wait for each other, up to the busy timeout, instead
of failing or interleaving. Threads of one process (the app's, the checks') first take an
in-process lock per file (:func:`_writer_lock`): SQLite's own wait for a busy database
sleeps with a backoff that grows to 100 ms between tries, which turned 50 uploads at once
into a queue of sleeps, each far longer than the write it waited for
(``docs/performance.md`` has the figures);
an in-process lock hands the write over at once, and ``BEGIN IMMEDIATE`` then waits only
for another process.

The file says what it is: ``PRAGMA application_id`` is :data:`APPLICATION_ID` and
``PRAGMA user_version`` the schema's version. Opening refuses, in one line
(:class:`~referee.errors.UsageError`), a file that is no SQLite database (damaged or
foreign bytes), an SQLite database of something else (another ``application_id``, or
tables without one), and a schema of another version of the referee. A later schema adds
its tables by a migration from the one before, inside the transaction that checks it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from referee.errors import UsageError
from referee.folders import private_folder

__all__ = ["APPLICATION_ID", "DATABASE", "SCHEMA_VERSION", "ServerDatabase"]

DATABASE = "server.sqlite"

APPLICATION_ID = 0x52465356
"""``PRAGMA application_id`` of a server database ("RFSV"): how a file is told apart from
any other SQLite database, the league's own store included."""

SCHEMA_VERSION = 1
"""1: authors, their tokens (a public selector and the SHA-256 of the token), the uploads
and their checks (``submissions``), the comparisons of uploads asked for with ``--compare``
(``comparisons``), the web sessions (the SHA-256 of each cookie, tied to
the token it was opened with), the audit log."""

BUSY_TIMEOUT_S = 30.0
"""How long a writer waits for another process's transaction before giving up."""

_SCHEMA = """
CREATE TABLE authors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    name_key TEXT NOT NULL UNIQUE,
    name_fold TEXT NOT NULL UNIQUE,
    email TEXT,
    role TEXT NOT NULL CHECK (role IN ('author', 'organiser')),
    created REAL NOT NULL,
    revoked REAL
);
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    author_id INTEGER NOT NULL REFERENCES authors(id),
    selector TEXT NOT NULL UNIQUE,
    digest BLOB NOT NULL,
    created REAL NOT NULL,
    ended REAL
);
CREATE INDEX tokens_by_author ON tokens(author_id);
CREATE TABLE submissions (
    id TEXT PRIMARY KEY,
    author TEXT NOT NULL REFERENCES authors(name),
    created REAL NOT NULL,
    filename TEXT NOT NULL,
    name TEXT,
    size INTEGER NOT NULL,
    upload_sha256 TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('queued', 'checking', 'accepted', 'refused', 'compared')),
    mode TEXT NOT NULL DEFAULT 'enter'
        CHECK (mode IN ('enter', 'compare', 'enter-if-better')),
    attempts INTEGER NOT NULL DEFAULT 0,
    bot_sha256 TEXT,
    started REAL,
    finished REAL,
    progress TEXT NOT NULL DEFAULT '',
    report TEXT NOT NULL DEFAULT '',
    entrant TEXT,
    version INTEGER,
    label TEXT
);
CREATE INDEX submissions_by_author ON submissions(author, created);
CREATE INDEX submissions_by_status ON submissions(status, created);
CREATE TABLE comparisons (
    id TEXT PRIMARY KEY REFERENCES submissions(id),
    author TEXT NOT NULL REFERENCES authors(name),
    status TEXT NOT NULL CHECK (status IN ('waiting', 'running', 'done', 'failed')),
    entrant TEXT NOT NULL,
    old TEXT NOT NULL,
    field TEXT NOT NULL DEFAULT '[]',
    max_deals INTEGER NOT NULL DEFAULT 0,
    deals INTEGER NOT NULL DEFAULT 0,
    matches INTEGER NOT NULL DEFAULT 0,
    decision TEXT CHECK (decision IN ('H0', 'H1', 'undecided')),
    progress TEXT NOT NULL DEFAULT '',
    verdict TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    started REAL,
    finished REAL
);
CREATE INDEX comparisons_by_author ON comparisons(author, created);
CREATE TABLE sessions (
    digest BLOB PRIMARY KEY,
    author TEXT NOT NULL REFERENCES authors(name),
    selector TEXT NOT NULL,
    csrf TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""


_WRITERS: dict[str, threading.RLock] = {}
_WRITERS_LOCK = threading.Lock()


def _writer_lock(path: Path) -> threading.RLock:
    """The lock this process's writers of the database at ``path`` share (one per file,
    by its absolute path; see the module docstring). Reentrant: a thread that opens a
    second connection inside a transaction meets SQLite's busy timeout, as before, not a
    lock that never opens."""
    key = str(path.absolute())
    with _WRITERS_LOCK:
        return _WRITERS.setdefault(key, threading.RLock())


class ServerDatabase:
    """One connection to the server database of a results folder (made when missing)."""

    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / DATABASE
        self._writing = _writer_lock(self.path)
        private_folder(results_dir, parents=True)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:  # a folder in its place, a file we may not open
            raise UsageError(f"cannot open the server database {self.path}: {exc}") from None
        try:
            self._open()
        except sqlite3.DatabaseError as exc:  # damaged, or not a database at all
            self._db.close()
            raise UsageError(
                f"{self.path} cannot be read as the server's database ({exc}); "
                "move it away to start with no authors"
            ) from None
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a committed transaction survives a power cut too, not only a killed process.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            application = self._pragma("application_id")
            version = self._pragma("user_version")
            tables = self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if application == 0 and version == 0 and tables == 0:
                self._create()
                return
            if application != APPLICATION_ID:
                raise UsageError(
                    f"{self.path} is an SQLite database of something else (application_id "
                    f"{application}, not the server's {APPLICATION_ID}); move it away"
                )
            if version != SCHEMA_VERSION:
                raise UsageError(
                    f"{self.path} was written by another version of the referee (schema "
                    f"{version}, this one reads {SCHEMA_VERSION}); use the version that wrote it"
                )

    def _create(self) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                self._db.execute(statement)
        self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _pragma(self, name: str) -> int:
        return int(self._db.execute(f"PRAGMA {name}").fetchone()[0])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction around the block (joined when one is open):
        committed when the block ends, rolled back when it raises."""
        if self._db.in_transaction:
            yield self._db
            return
        if not self._writing.acquire(timeout=BUSY_TIMEOUT_S):  # as SQLite's own wait ends
            raise sqlite3.OperationalError("database is locked")
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        finally:
            self._writing.release()

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection, for reads."""
        return self._db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ServerDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
