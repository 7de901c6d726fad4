"""Uploads, their place in the check queue, and the web sessions: the server's durable state.

**An upload is stored before it is acknowledged.** :meth:`SubmissionBook.store` writes the
received bytes to a temporary file in ``uploads/`` (in the league's results folder), fsyncs
it, renames it to ``uploads/<id>``, fsyncs the folder, and only then commits the row
(``queued``) with ``synchronous=FULL``; the ``202`` is answered after that commit. A
process killed before the commit leaves at most a file with no row, which
:meth:`SubmissionBook.recover` deletes at the next start; one killed after it has a row
whose bytes are on the disk.

**Each upload is checked until it has a verdict, and entered at most once.** A check
claims a row by moving it from ``queued`` to ``checking`` in one transaction (two checkers
never claim one row) and records the SHA-256 of the bot's files it read. The verdict
(``accepted`` with the entrant, or ``refused``) is one more transaction. A server killed
during a check finds the row ``checking`` when it starts again: :meth:`recover` puts it
back in the queue, to be checked again from the stored bytes, unless the league file
already holds an entrant of this author with exactly those files, which the check entered
before the kill; that row is marked ``accepted`` then, so the bot is never entered twice.

**Comparisons** (``--compare``: is the new version better than the author's current one?).
An upload's ``mode`` says what its check leads to: ``enter`` (the bot is entered), or
``compare`` and ``enter-if-better`` (it is checked without being entered, then compared).
A compare upload whose check passed stays ``checking`` and gains a row in
``comparisons`` (``waiting``, then ``running`` once a comparer claims it, then ``done`` or
``failed``); its verdict makes the upload ``compared``, waiting for its author, who
enters it with :meth:`SubmissionBook.enter`: the upload goes back to the queue as an
``enter`` upload, checked again from the same stored bytes and entered. An
``enter-if-better`` upload whose verdict is "H1 accepted" goes back to the queue in the
verdict's own transaction. An author has one compare upload queued or checking at a
time, taken in the transaction that stores it (:class:`CompareRefused` otherwise), and
``[server] compare_deals_per_day`` deals in 24 hours (a running comparison counts the
deals it may play, a finished one those it played): :meth:`compare_budget`.

**Limits.** :meth:`retry_after` answers how long an author must wait before another upload
(``[server] per_day`` in 24 hours, ``interval_seconds`` between two): the ``429``'s
``Retry-After``.

**Sessions** (the web pages' sign-in): a cookie of 256 random bits; the row keeps its
SHA-256, the author and the selector of the token signed in with, and the session's CSRF
token. A session is valid while it has not expired, the author is not revoked and that
token is still the author's current one: revoking or rotating ends every session opened
with the old token.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from referee.clock import WallClock
from referee.errors import InfrastructureError
from referee.folders import private_folder
from referee.server.database import ServerDatabase

__all__ = [
    "UPLOADS",
    "CompareRefused",
    "Comparison",
    "Mode",
    "Session",
    "Status",
    "Submission",
    "SubmissionBook",
    "TooLarge",
    "csrf_matches",
]

UPLOADS = "uploads"
"""The folder of the stored uploads, in the league's results folder."""

Status = Literal["queued", "checking", "accepted", "refused", "compared"]
"""Where an upload stands; ``compared``: checked and compared, waiting for its author."""

Mode = Literal["enter", "compare", "enter-if-better"]
"""What an upload's check leads to (see the module docstring)."""

CompareStatus = Literal["waiting", "running", "done", "failed"]

_COLUMNS = (
    "id, author, created, filename, name, size, upload_sha256, status, attempts, bot_sha256, "
    "started, finished, progress, report, entrant, version, label, mode"
)
_COMPARE_COLUMNS = (
    "id, author, status, entrant, old, field, max_deals, deals, matches, decision, progress, "
    "verdict, created, started, finished"
)
_DAY_S = 86_400.0
_COPY_CHUNK = 1 << 16


class TooLarge(Exception):
    """The upload went past its size limit while it was read."""


class CompareRefused(Exception):
    """A compare upload not taken now: one sentence, and the seconds to wait."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Submission:
    """One upload and where its check stands (a row of ``submissions``)."""

    id: str
    author: str
    created: float
    filename: str
    name: str | None
    size: int
    upload_sha256: str
    status: Status
    attempts: int
    bot_sha256: str | None
    started: float | None
    finished: float | None
    progress: str
    report: str
    entrant: str | None
    version: int | None
    label: str | None
    mode: Mode = "enter"

    def public(self, url: str) -> dict[str, object]:
        """What ``GET /api/v1/submissions/{id}`` answers its author."""
        return {
            "id": self.id,
            "status": self.status,
            "report": self.report,
            "progress": self.progress,
            "entrant": self.entrant,
            "version": self.version,
            "mode": self.mode,
            "url": url,
        }


@dataclass(frozen=True)
class Comparison:
    """The comparison of a compare upload (a row of ``comparisons``): the entrant, the
    version it is compared with (``old``, its label), the field bots' labels, the deals it
    may play and has played, and where the test stands (``progress``: ``referee compare``'s
    progress line; ``verdict``: its verdict line; ``decision``: ``H1`` when the new
    version is better)."""

    id: str
    author: str
    status: CompareStatus
    entrant: str
    old: str
    field: str
    max_deals: int
    deals: int
    matches: int
    decision: Literal["H0", "H1", "undecided"] | None
    progress: str
    verdict: str
    created: float
    started: float | None
    finished: float | None

    @property
    def field_bots(self) -> list[str]:
        return [str(name) for name in json.loads(self.field)]

    def public(self) -> dict[str, object]:
        """The ``compare`` object of ``GET /api/v1/submissions/{id}``."""
        return {
            "status": self.status,
            "entrant": self.entrant,
            "old": self.old,
            "field": self.field_bots,
            "deals": self.deals,
            "max_deals": self.max_deals,
            "matches": self.matches,
            "decision": self.decision,
            "better": self.decision == "H1",
            "progress": self.progress,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its author, and the CSRF token its forms must carry."""

    author: str
    csrf: str


class SubmissionBook:
    """The uploads of one results folder (one connection: one per thread)."""

    def __init__(self, results_dir: Path, *, clock: WallClock = time.time) -> None:
        self.database = ServerDatabase(results_dir)
        self.folder = results_dir / UPLOADS
        private_folder(self.folder, parents=True)
        self.clock = clock

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> SubmissionBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- uploads ------------------------------------------------------------------------

    def store(
        self,
        author: str,
        filename: str,
        name: str | None,
        source: BinaryIO,
        limit: int,
        *,
        mode: Mode = "enter",
        deals_per_day: int = 0,
    ) -> Submission:
        """Copy ``source`` (at most ``limit`` bytes, else :class:`TooLarge` and nothing
        kept) to the disk and queue it, durably (see the module docstring). A compare
        upload is taken only while the author has no other (:meth:`comparing`) and deals
        left of ``deals_per_day`` (:meth:`compare_budget`), checked in the transaction that
        queues it: :class:`CompareRefused` otherwise, and nothing kept."""
        sid = secrets.token_hex(12)
        digest = hashlib.sha256()
        temporary = self.folder / f".incoming-{sid}"
        size = 0
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with open(fd, "wb") as out:
                while chunk := source.read(_COPY_CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise TooLarge
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.rename(temporary, self.folder / sid)
            _fsync_folder(self.folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            raise
        try:
            with self.database.transaction() as db:
                if mode != "enter":
                    self._admit_comparison(author, deals_per_day)
                db.execute(
                    "INSERT INTO submissions (id, author, created, filename, name, size, "
                    "upload_sha256, status, mode) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
                    (sid, author, self.clock(), filename, name, size, digest.hexdigest(), mode),
                )
        except CompareRefused:
            with contextlib.suppress(FileNotFoundError):
                (self.folder / sid).unlink()
            raise
        found = self.get(sid)
        assert found is not None
        return found

    def path(self, sid: str) -> Path:
        """Where the bytes of upload ``sid`` are kept."""
        return self.folder / sid

    def discard(self, sid: str) -> None:
        """Delete the stored bytes of upload ``sid`` (its row and report stay)."""
        with contextlib.suppress(FileNotFoundError):
            self.path(sid).unlink()

    def get(self, sid: str, *, author: str | None = None) -> Submission | None:
        """Upload ``sid`` (only if it is ``author``'s, when given: another author's is
        ``None``, as one that does not exist)."""
        row = self.database.connection.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE id = ?", (sid,)
        ).fetchone()
        found = None if row is None else Submission(*row)
        if found is not None and author is not None and found.author != author:
            return None
        return found

    def of_author(self, author: str, limit: int = 200) -> list[Submission]:
        """The author's uploads, newest first."""
        rows = self.database.connection.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE author = ? ORDER BY created DESC, id "
            "LIMIT ?",
            (author, limit),
        )
        return [Submission(*row) for row in rows]

    def recent(self, limit: int = 500) -> list[Submission]:
        """Every author's uploads, newest first (the organiser's pages)."""
        rows = self.database.connection.execute(
            f"SELECT {_COLUMNS} FROM submissions ORDER BY created DESC, id LIMIT ?", (limit,)
        )
        return [Submission(*row) for row in rows]

    def queue(self) -> list[Submission]:
        """The uploads waiting or being checked, oldest first."""
        rows = self.database.connection.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE status IN ('queued', 'checking') "
            "ORDER BY created, id"
        )
        return [Submission(*row) for row in rows]

    def retry_after(self, author: str, *, per_day: int, interval_s: float) -> float:
        """Seconds ``author`` must wait before another upload is taken (0: now)."""
        now = self.clock()
        db = self.database.connection
        last = db.execute(
            "SELECT max(created) FROM submissions WHERE author = ?", (author,)
        ).fetchone()[0]
        wait = 0.0 if last is None else last + interval_s - now
        rows = db.execute(
            "SELECT created FROM submissions WHERE author = ? AND created > ? "
            "ORDER BY created DESC LIMIT ?",
            (author, now - _DAY_S, per_day),
        ).fetchall()
        if len(rows) >= per_day:  # the oldest of the last per_day leaves the window first
            wait = max(wait, rows[-1][0] + _DAY_S - now)
        return max(0.0, wait)

    # -- the queue ----------------------------------------------------------------------

    def claim(self) -> Submission | None:
        """The oldest queued upload, now ``checking`` (``None`` when the queue is empty)."""
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT id FROM submissions WHERE status = 'queued' ORDER BY created, id LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE submissions SET status = 'checking', attempts = attempts + 1, "
                "started = ?, progress = '', report = '' WHERE id = ?",
                (self.clock(), row[0]),
            )
        return self.get(row[0])

    def read(self, sid: str, bot_sha256: str) -> None:
        """Record the SHA-256 of the bot's files the check of ``sid`` read."""
        with self.database.transaction() as db:
            db.execute("UPDATE submissions SET bot_sha256 = ? WHERE id = ?", (bot_sha256, sid))

    def step(self, sid: str, progress: str) -> None:
        """Record how far the check of ``sid`` has got (its report so far)."""
        with self.database.transaction() as db:
            db.execute(
                "UPDATE submissions SET progress = ? WHERE id = ? AND status = 'checking'",
                (progress, sid),
            )

    def finish(
        self,
        sid: str,
        status: Literal["accepted", "refused"],
        report: str,
        *,
        entrant: str | None = None,
        version: int | None = None,
        label: str | None = None,
    ) -> None:
        """Record the verdict of the check of ``sid``."""
        with self.database.transaction() as db:
            db.execute(
                "UPDATE submissions SET status = ?, report = ?, progress = ?, finished = ?, "
                "entrant = ?, version = ?, label = ? WHERE id = ?",
                (status, report, report, self.clock(), entrant, version, label, sid),
            )

    def recover(self, entered: dict[tuple[str, str], tuple[str, int | None, str]]) -> int:
        """After a start: delete stored bytes with no row, and put every check that was cut
        off back in the queue, unless ``entered`` (``(author, files' sha256)`` → entrant,
        version, label, from the league file) shows it was entered before the stop. A
        comparison cut off waits again, to be resumed from its results folder. Returns the
        checks queued again."""
        known = {row[0] for row in self.database.connection.execute("SELECT id FROM submissions")}
        for child in self.folder.iterdir():
            if child.name not in known:
                with contextlib.suppress(FileNotFoundError):
                    child.unlink()
        again = 0
        for cut in [s for s in self.queue() if s.status == "checking"]:
            compared = self.comparison(cut.id)
            if compared is not None and compared.status in ("waiting", "running"):
                with self.database.transaction() as db:  # resumed from its results folder
                    db.execute("UPDATE comparisons SET status = 'waiting' WHERE id = ?", (cut.id,))
                continue
            done = entered.get((cut.author, cut.bot_sha256 or "")) if cut.mode == "enter" else None
            if done is not None:
                entrant, version, label = done
                self.finish(
                    cut.id,
                    "accepted",
                    f"{cut.progress}\naccepted: {entrant} was entered before the server "
                    "stopped".strip(),
                    entrant=entrant,
                    version=version,
                    label=label,
                )
                continue
            with self.database.transaction() as db:
                db.execute(
                    "UPDATE submissions SET status = 'queued' WHERE id = ? AND status = 'checking'",
                    (cut.id,),
                )
            again += 1
        return again

    # -- comparisons --------------------------------------------------------------------

    def comparing(self, author: str) -> Submission | None:
        """The author's compare upload still queued or being checked or compared, if any."""
        row = self.database.connection.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE author = ? AND mode != 'enter' "
            "AND status IN ('queued', 'checking') ORDER BY created LIMIT 1",
            (author,),
        ).fetchone()
        return None if row is None else Submission(*row)

    def compare_budget(self, author: str, per_day: int) -> tuple[int, float]:
        """The deals of ``per_day`` left to the author's comparisons now, and when none is
        left, the seconds until one is (the module docstring says what counts)."""
        now = self.clock()
        rows = self.database.connection.execute(
            "SELECT created, CASE WHEN status IN ('waiting', 'running') THEN max_deals "
            "ELSE deals END FROM comparisons WHERE author = ? AND created > ? ORDER BY created",
            (author, now - _DAY_S),
        ).fetchall()
        used = sum(deals for _, deals in rows)
        if used < per_day:
            return per_day - used, 0.0
        for created, deals in rows:  # the oldest leave the window first
            used -= deals
            if used < per_day:
                return 0, max(1.0, created + _DAY_S - now)
        return 0, _DAY_S  # pragma: no cover - the loop empties ``used``

    def _admit_comparison(self, author: str, per_day: int) -> None:
        running = self.comparing(author)
        if running is not None:
            raise CompareRefused(
                f"one comparison at a time: your submission {running.id} is still being "
                "checked or compared; wait for its verdict before asking for another",
                60.0,
            )
        left, wait = self.compare_budget(author, per_day)
        if left < 1:
            raise CompareRefused(
                f"your comparisons have played their {per_day} deals of the last 24 hours "
                f"([server] compare_deals_per_day); the next can start in {int(wait) + 1} s",
                wait,
            )

    def to_compare(self, sid: str, report: str, entrant: str, old: str) -> None:
        """The check of compare upload ``sid`` passed: its report, and its comparison of
        ``entrant``'s new version with the version ``old`` queued (``waiting``)."""
        with self.database.transaction() as db:
            db.execute(
                "UPDATE submissions SET report = ?, progress = ? WHERE id = ?",
                (report, report, sid),
            )
            db.execute(
                "INSERT OR REPLACE INTO comparisons (id, author, status, entrant, old, created) "
                "SELECT id, author, 'waiting', ?, ?, ? FROM submissions WHERE id = ?",
                (entrant, old, self.clock(), sid),
            )

    def comparison(self, sid: str) -> Comparison | None:
        row = self.database.connection.execute(
            f"SELECT {_COMPARE_COLUMNS} FROM comparisons WHERE id = ?", (sid,)
        ).fetchone()
        return None if row is None else Comparison(*row)

    def claim_comparison(self) -> Comparison | None:
        """The oldest waiting comparison, now ``running`` (``None``: none waits)."""
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT id FROM comparisons WHERE status = 'waiting' ORDER BY created, id LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE comparisons SET status = 'running', started = coalesce(started, ?) "
                "WHERE id = ?",
                (self.clock(), row[0]),
            )
        return self.comparison(row[0])

    def plan_comparison(self, sid: str, field: list[str], max_deals: int) -> None:
        """Record the field and the deals a comparison starting now may play."""
        with self.database.transaction() as db:
            db.execute(
                "UPDATE comparisons SET field = ?, max_deals = ? WHERE id = ?",
                (json.dumps(field), max_deals, sid),
            )

    def compare_step(self, sid: str, deals: int, matches: int, progress: str) -> None:
        """Record where the comparison of ``sid`` stands."""
        with self.database.transaction() as db:
            db.execute(
                "UPDATE comparisons SET deals = ?, matches = ?, progress = ? "
                "WHERE id = ? AND status = 'running'",
                (deals, matches, progress, sid),
            )

    def finish_comparison(
        self,
        sid: str,
        status: Literal["done", "failed"],
        verdict: str,
        *,
        decision: Literal["H0", "H1", "undecided"] | None = None,
        deals: int | None = None,
        matches: int | None = None,
    ) -> bool:
        """Record the verdict of the comparison of ``sid``: the upload is ``compared``, or
        back in the queue to be entered when it asked for that and the verdict is H1 (then
        ``True``)."""
        with self.database.transaction() as db:
            db.execute(
                "UPDATE comparisons SET status = ?, verdict = ?, decision = ?, "
                "deals = coalesce(?, deals), matches = coalesce(?, matches), finished = ? "
                "WHERE id = ?",
                (status, verdict, decision, deals, matches, self.clock(), sid),
            )
            found = self.get(sid)
            enter = found is not None and found.mode == "enter-if-better" and decision == "H1"
            if enter:
                db.execute(
                    "UPDATE submissions SET status = 'queued', mode = 'enter' WHERE id = ?",
                    (sid,),
                )
            else:
                db.execute(
                    "UPDATE submissions SET status = 'compared', finished = ? WHERE id = ?",
                    (self.clock(), sid),
                )
        return enter

    def enter(self, sid: str, author: str) -> tuple[bool, Submission | None]:
        """The author enters their compared upload ``sid``: back in the queue as an
        ``enter`` upload (checked again from its stored bytes, then entered). Returns
        whether it was put back, and the upload as it now stands (``None``: no such upload
        of this author)."""
        with self.database.transaction() as db:
            changed = db.execute(
                "UPDATE submissions SET status = 'queued', mode = 'enter' "
                "WHERE id = ? AND author = ? AND status = 'compared'",
                (sid, author),
            ).rowcount
        return changed == 1, self.get(sid, author=author)

    # -- sessions -----------------------------------------------------------------------

    def open_session(self, author: str, selector: str, hours: float) -> str:
        """A new session cookie for ``author``, signed in with the token ``selector``."""
        cookie = secrets.token_urlsafe(32)
        now = self.clock()
        with self.database.transaction() as db:
            db.execute("DELETE FROM sessions WHERE expires < ?", (now,))
            db.execute(
                "INSERT INTO sessions (digest, author, selector, csrf, created, expires) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    _digest(cookie),
                    author,
                    selector,
                    secrets.token_urlsafe(24),
                    now,
                    now + hours * 3600,
                ),
            )
        return cookie

    def session(self, cookie: str) -> Session | None:
        """The valid session of ``cookie`` (see the module docstring), else ``None``."""
        if not cookie or len(cookie) > 128:
            return None
        row = self.database.connection.execute(
            "SELECT s.author, s.csrf FROM sessions s JOIN authors a ON a.name = s.author "
            "JOIN tokens t ON t.author_id = a.id AND t.selector = s.selector "
            "WHERE s.digest = ? AND s.expires > ? AND a.revoked IS NULL AND t.ended IS NULL",
            (_digest(cookie), self.clock()),
        ).fetchone()
        return None if row is None else Session(row[0], row[1])

    def close_session(self, cookie: str) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM sessions WHERE digest = ?", (_digest(cookie),))


def csrf_matches(session: Session, offered: str) -> bool:
    """Whether a form's CSRF token is its session's (compared in constant time)."""
    return hmac.compare_digest(session.csrf.encode(), offered.encode())


def _digest(cookie: str) -> bytes:
    return hashlib.sha256(cookie.encode()).digest()


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise InfrastructureError(f"cannot open {folder}: {exc.strerror}") from None
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
