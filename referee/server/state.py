"""What every part of the web app shares: the server's state and its small answers.

:class:`ServerState` is the league file, its results folder, its ``[server]`` limits, the
check queue and the site's folder, with one database connection per thread (SQLite
connections are not shared between threads), the sign-in throttle, and the leaderboard's
JSON, read again only when the store or the file changed. :func:`error` is the shape of
every refusal of the API (``{"error": one sentence}``); :func:`session_of` the signed-in
browser of a request, if any; :func:`page` a page rendered with what every page's frame
(``base.html``) reads.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates

from referee.errors import RefereeError
from referee.publish.league import league_board, render_league
from referee.server.authors import AuthorBook
from referee.server.checks import Checker
from referee.server.compares import Comparer
from referee.server.submissions import Session, SubmissionBook
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.model import ServerSettings

__all__ = ["COOKIE", "ServerState", "address", "error", "page", "session_of", "when"]

COOKIE = "referee_session"


@dataclass
class ServerState:
    """What the app serves: the league file, its results folder, its limits, the check
    queue, and the folder the published site is kept in."""

    path: Path
    results_dir: Path
    settings: ServerSettings
    checker: Checker | None = None
    comparer: Comparer | None = None
    site: Path | None = None
    clock: Callable[[], float] = time.time
    _local: threading.local = field(default_factory=threading.local)
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _failures_lock: threading.Lock = field(default_factory=threading.Lock)
    _board: tuple[tuple[Any, ...], float, bytes] | None = None
    _board_lock: threading.Lock = field(default_factory=threading.Lock)
    _tournament: tuple[tuple[int, int], Tournament] | None = None

    # -- one connection per thread --------------------------------------------------------

    def authors(self) -> AuthorBook:
        book = getattr(self._local, "authors", None)
        if book is None:
            book = self._local.authors = AuthorBook(self.results_dir, clock=self.clock)
        return book

    def uploads(self) -> SubmissionBook:
        book = getattr(self._local, "uploads", None)
        if book is None:
            book = self._local.uploads = SubmissionBook(self.results_dir, clock=self.clock)
        return book

    # -- sign-in throttling ----------------------------------------------------------------

    def throttled(self, address: str) -> float:
        """Seconds ``address`` must wait before it may try a token again (0: now)."""
        window = self.settings.signin_window_seconds
        now = self.clock()
        with self._failures_lock:
            seen = self._failures.get(address)
            if not seen:
                return 0.0
            while seen and seen[0] <= now - window:
                seen.popleft()
            if len(seen) < self.settings.signin_failures:
                return 0.0
            return max(1.0, seen[0] + window - now)

    def failed(self, address: str) -> None:
        with self._failures_lock:
            if len(self._failures) > 100_000:  # a flood of addresses: forget the oldest
                self._failures.pop(next(iter(self._failures)))
            seen = self._failures.setdefault(address, deque())
            seen.append(self.clock())
            while len(seen) > self.settings.signin_failures:
                seen.popleft()

    # -- the league --------------------------------------------------------------------

    def tournament(self) -> Tournament:
        """The league file, loaded again only when it changed."""
        info = self.path.stat()
        key = (info.st_mtime_ns, info.st_size)
        cached = self._tournament
        if cached is not None and cached[0] == key:
            return cached[1]
        loaded = load_tournament(self.path)
        self._tournament = (key, loaded)
        return loaded

    def closed(self) -> bool:
        """Whether entries are closed: a tournament (not a league) that has started."""
        return (
            self.tournament().file.format != "league"
            and (self.results_dir / "results.sqlite").exists()
        )

    def board_json(self) -> bytes:
        """``referee leaderboard --format json``, read again at most once a second and only
        when the store or the file changed."""
        key = changes_key(self.path, self.results_dir)
        now = time.monotonic()
        with self._board_lock:
            cached = self._board
            if cached is not None and (cached[0] == key or now - cached[1] < 1.0):
                return cached[2]
            tournament = self.tournament()
            if tournament.file.format != "league":  # entries so far; its site once run
                text = json.dumps(
                    {
                        "tournament": tournament.name,
                        "entrants": list(tournament.entrants),
                        "closed": self.closed(),
                        "entries": [],
                        "matches": 0,
                        "batches": 0,
                    }
                )
            else:
                try:
                    text = render_league(league_board(tournament), "json")
                except RefereeError:  # no results yet
                    text = json.dumps(
                        {"league": tournament.name, "entries": [], "matches": 0, "batches": 0}
                    )
            self._board = (key, now, text.encode())
            return self._board[2]


def when(at: float | None) -> str:
    """A Unix time as the pages show it (UTC, to the second)."""
    if at is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def changes_key(path: Path, results_dir: Path) -> tuple[Any, ...]:
    """What tells that the league file or its store changed: each one's modification time
    and size (``None`` for one that does not exist: the store before its first result), in
    the order file, store, store's write-ahead log."""
    parts: list[Any] = []
    for file in (path, results_dir / "results.sqlite", results_dir / "results.sqlite-wal"):
        try:
            info = file.stat()
        except OSError:
            parts.append(None)
            continue
        parts.append((info.st_mtime_ns, info.st_size))
    return tuple(parts)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def session_of(state: ServerState, request: Request) -> Session | None:
    cookie = request.cookies.get(COOKIE, "")
    return state.uploads().session(cookie) if cookie else None


def page(
    state: ServerState,
    templates: Jinja2Templates,
    request: Request,
    name: str,
    status: int = 200,
    **context: Any,
) -> Response:
    """The template ``name`` rendered (autoescaped) with ``context`` and the frame's names:
    the league, whether a site is served, the session (``None``: signed out), an error."""
    context.setdefault("league", state.path.stem)
    context.setdefault("site", state.site is not None)
    context.setdefault("session", None)
    context.setdefault("error", None)
    return templates.TemplateResponse(request, name, context, status_code=status)
