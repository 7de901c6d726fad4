"""Authors of a competition server, their tokens, and the audit log of what was done to them.

An **author** is an account of the server: a name (:data:`referee.names.IDENTIFIER_PATTERN`:
ASCII letters, digits, ``.``, ``_``, ``-``; unique, and no two alike: neither their
skeletons, :func:`referee.names.skeleton`, nor those of their lower-case forms may meet,
so "alice", "ALICE" and "AIice" are one name), an
optional e-mail address, and a role: ``author`` (submits bots) or ``organiser`` (the
organiser's pages; an organiser who also enters bots has an author account besides).
A revoked account stays revoked and keeps its name, so that its entrants, reports and
stderr can never become someone else's.

A **token** is what an author signs in with; it alone decides who is asking::

    referee_<selector>_<verifier>

``selector``: 16 hex digits (64 random bits), the token's public id, stored as it is and
shown by ``referee authors list`` and the log; ``verifier``: ``secrets.token_urlsafe(32)``,
256 random bits. The file keeps the selector and the SHA-256 of the whole token, never the
token: a leaked database signs nobody in. SHA-256 and not a slow password hash (bcrypt,
scrypt, Argon2): those exist to slow down guessing a password people chose, and a token of
256 random bits cannot be guessed, while a slow hash would cost CPU on every request the
server answers. :meth:`AuthorBook.authenticate` finds the row by the selector and decides
with :func:`hmac.compare_digest` on the digests (the time it takes does not depend on how
much of a digest matches); a malformed token or an unknown selector is compared with a
dummy digest all the same, so every attempt costs the same work. A token is printed once,
when it is made (``add``, ``rotate``), and never logged or stored in clear.

``rotate`` ends the current token and makes a new one in one transaction: the old token
fails from the commit on. ``revoke`` ends the account and its token.

The **audit log** records each change in the transaction that makes it (no change without
its line, no line without its change): when, who (``actor``: the organiser's shell as
``shell:<login>``, later an organiser's account), what, of whom, and the token ids concerned.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from referee.clock import WallClock
from referee.errors import UsageError
from referee.names import check_identifier, lookalike_note, skeleton
from referee.server.database import ServerDatabase

__all__ = [
    "TOKEN_PREFIX",
    "Author",
    "AuthorBook",
    "LogEntry",
    "NewToken",
    "Role",
    "check_email",
]

Role = Literal["author", "organiser"]

TOKEN_PREFIX = "referee_"
_SELECTOR_HEX = 16
_VERIFIER_BYTES = 32
_TOKEN = re.compile(rf"{TOKEN_PREFIX}([0-9a-f]{{{_SELECTOR_HEX}}})_([A-Za-z0-9_-]{{43}})")
_DUMMY_DIGEST = bytes(32)
MAX_EMAIL_LENGTH = 254
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


@dataclass(frozen=True)
class Author:
    """An account: ``revoked`` (a Unix time) once it is ended; ``token_id``: the selector
    of its current token (``None`` once revoked)."""

    name: str
    role: Role
    email: str | None
    created: float
    revoked: float | None
    token_id: str | None

    @property
    def organiser(self) -> bool:
        return self.role == "organiser"

    @property
    def active(self) -> bool:
        return self.revoked is None


@dataclass(frozen=True)
class NewToken:
    """A token just made, and whose it is: the only time the token exists in clear."""

    author: Author
    token: str


@dataclass(frozen=True)
class LogEntry:
    """One line of the audit log: when, who, what, of whom, and the token ids concerned."""

    at: float
    actor: str
    action: str
    subject: str
    detail: str


def check_email(email: str) -> str:
    """``email`` if it looks like one address (``a@b.c``, printable, no spaces, at most
    :data:`MAX_EMAIL_LENGTH` characters), else ``UsageError`` in one line."""
    if len(email) > MAX_EMAIL_LENGTH or not email.isprintable() or _EMAIL.fullmatch(email) is None:
        shown = repr(email[:40]) + ("..." if len(email) > 40 else "")
        raise UsageError(
            f"e-mail address {shown} is not allowed: one address like alice@example.org, "
            f"at most {MAX_EMAIL_LENGTH} characters, no spaces"
        )
    return email


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def _looks(name: str) -> tuple[str, str]:
    """What ``name`` looks like, as written and in lower case (the skeleton maps a capital
    I to a small l, so "ALICE" and "alice" meet only in lower case)."""
    return skeleton(name), skeleton(name.casefold())


def _new_token() -> tuple[str, str]:
    """A fresh token and its selector."""
    selector = secrets.token_hex(_SELECTOR_HEX // 2)
    return f"{TOKEN_PREFIX}{selector}_{secrets.token_urlsafe(_VERIFIER_BYTES)}", selector


_AUTHOR_COLUMNS = (
    "a.name, a.role, a.email, a.created, a.revoked, "
    "(SELECT t.selector FROM tokens t WHERE t.author_id = a.id AND t.ended IS NULL)"
)


class AuthorBook:
    """The authors of one results folder's server database (one connection, one thread).

    ``clock``: the wall time it stamps; every change takes an ``actor`` for the log.
    """

    def __init__(self, results_dir: Path, *, clock: WallClock = time.time) -> None:
        self.database = ServerDatabase(results_dir)
        self.clock = clock

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> AuthorBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------

    def authors(self) -> list[Author]:
        """Every account, revoked ones too, in the order they were added."""
        rows = self.database.connection.execute(
            f"SELECT {_AUTHOR_COLUMNS} FROM authors a ORDER BY a.id"
        )
        return [Author(*row) for row in rows]

    def author(self, name: str) -> Author | None:
        """The account called ``name`` exactly, if any."""
        row = self.database.connection.execute(
            f"SELECT {_AUTHOR_COLUMNS} FROM authors a WHERE a.name = ?", (name,)
        ).fetchone()
        return None if row is None else Author(*row)

    def log(self) -> list[LogEntry]:
        """The audit log, oldest first."""
        rows = self.database.connection.execute(
            "SELECT at, actor, action, subject, detail FROM audit_log ORDER BY id"
        )
        return [LogEntry(*row) for row in rows]

    def authenticate(self, token: str) -> Author | None:
        """The active account whose current token is ``token``, else ``None`` (a malformed,
        unknown, rotated-away or revoked token): see the module docstring for why every
        attempt costs one digest comparison."""
        found = _TOKEN.fullmatch(token) if len(token) < 128 else None
        selector = found.group(1) if found is not None else ""
        row = self.database.connection.execute(
            f"SELECT t.digest, {_AUTHOR_COLUMNS} FROM tokens t JOIN authors a "
            "ON a.id = t.author_id WHERE t.selector = ? AND t.ended IS NULL "
            "AND a.revoked IS NULL",
            (selector,),
        ).fetchone()
        stored = bytes(row[0]) if row is not None else _DUMMY_DIGEST
        offered = _digest(token) if found is not None else _DUMMY_DIGEST
        matched = hmac.compare_digest(offered, stored)
        if row is None or found is None or not matched:
            return None
        return Author(*row[1:])

    # -- changing -----------------------------------------------------------------------

    def add(
        self, name: str, *, actor: str, email: str | None = None, role: Role = "author"
    ) -> NewToken:
        """A new account and its first token; ``UsageError`` for a name not allowed, taken,
        or alike to one taken (revoked ones count), or an e-mail address not allowed."""
        check_identifier(name, "author name")
        if email is not None:
            check_email(email)
        now = self.clock()
        with self.database.transaction() as db:
            self._refuse_taken(db, name)
            try:
                cursor = db.execute(
                    "INSERT INTO authors (name, name_key, name_fold, email, role, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (name, *_looks(name), email, role, now),
                )
            except sqlite3.IntegrityError:  # added by another process since the check
                raise UsageError(f"an author named {name!r} exists already") from None
            assert cursor.lastrowid is not None
            token, selector = self._issue(db, cursor.lastrowid, now)
            shown = f" <{email}>" if email else ""
            self._record(db, now, actor, "add", name, f"{role}{shown}; token {selector}")
        author = self.author(name)
        assert author is not None
        return NewToken(author, token)

    def rotate(self, name: str, *, actor: str) -> NewToken:
        """A new token for the active account ``name``; its old token fails from now on."""
        now = self.clock()
        with self.database.transaction() as db:
            author_id, old = self._active(db, name, "give a new token to")
            db.execute("UPDATE tokens SET ended = ? WHERE id = ?", (now, old[0]))
            token, selector = self._issue(db, author_id, now)
            self._record(db, now, actor, "rotate", name, f"token {old[1]} ended; token {selector}")
        author = self.author(name)
        assert author is not None
        return NewToken(author, token)

    def revoke(self, name: str, *, actor: str) -> Author:
        """End the active account ``name`` and its token, for good."""
        now = self.clock()
        with self.database.transaction() as db:
            author_id, old = self._active(db, name, "revoke")
            db.execute("UPDATE tokens SET ended = ? WHERE id = ?", (now, old[0]))
            db.execute("UPDATE authors SET revoked = ? WHERE id = ?", (now, author_id))
            self._record(db, now, actor, "revoke", name, f"token {old[1]} ended")
        author = self.author(name)
        assert author is not None
        return author

    def record(self, actor: str, action: str, subject: str, detail: str) -> None:
        """Write one line of the audit log (an action of the server's: a submission, a
        retirement, a sign-in refused)."""
        with self.database.transaction() as db:
            self._record(db, self.clock(), actor, action, subject, detail)

    def _refuse_taken(self, db: sqlite3.Connection, name: str) -> None:
        looks = _looks(name)
        row = db.execute(
            "SELECT name, revoked FROM authors WHERE name = ? OR name_key IN (?, ?) "
            "OR name_fold IN (?, ?)",
            (name, *looks, *looks),
        ).fetchone()
        if row is None:
            return
        taken, revoked = row
        state = " (revoked; a revoked name is never given again)" if revoked else ""
        if taken == name:
            raise UsageError(f"an author named {name!r} exists already{state}")
        raise UsageError(
            f"author name {name!r} looks like the author {taken!r}{state} "
            f"({lookalike_note(name, taken)}); choose another name"
        )

    def _active(self, db: sqlite3.Connection, name: str, what: str) -> tuple[int, tuple[int, str]]:
        """The id of the active account ``name`` and its token's (id, selector)."""
        check_identifier(name, "author name")
        row = db.execute("SELECT id, revoked FROM authors WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in db.execute("SELECT name FROM authors ORDER BY id LIMIT 21")]
            listed = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise UsageError(
                f"no author named {name!r} to {what} (authors: {listed or 'none yet'})"
            )
        if row[1] is not None:
            raise UsageError(f"the author {name!r} is revoked already; cannot {what} it")
        token = db.execute(
            "SELECT id, selector FROM tokens WHERE author_id = ? AND ended IS NULL", (row[0],)
        ).fetchone()
        return row[0], (token[0], token[1])

    def _issue(self, db: sqlite3.Connection, author_id: int, now: float) -> tuple[str, str]:
        token, selector = _new_token()
        db.execute(
            "INSERT INTO tokens (author_id, selector, digest, created) VALUES (?, ?, ?, ?)",
            (author_id, selector, _digest(token), now),
        )
        return token, selector

    @staticmethod
    def _record(
        db: sqlite3.Connection, now: float, actor: str, action: str, subject: str, detail: str
    ) -> None:
        db.execute(
            "INSERT INTO audit_log (at, actor, action, subject, detail) VALUES (?, ?, ?, ?, ?)",
            (now, actor, action, subject, detail),
        )
