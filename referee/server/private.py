"""An author's private pages: their entrants and versions, their matches, their own stderr.

Three pages, for the author of the session cookie (signed out: to ``/signin``)::

    /me/entrants        their entrants, every version with its rating and record (the
                        league's leaderboard) and the report of the upload that entered it
    /me/matches         their latest matches: the result of every seat, every fault told
    /me/matches/{key}   one of them: every seat, every fault explained, and the full stderr
                        of their own seats

**What is theirs is decided by the league file.** A version is the author's when its
``[[bots]]`` entry names the author's account as its ``author`` (the server writes it from
the token that uploaded the bot, never from what the bot says). A match is theirs when one
of its seats is a version of theirs; a seat is theirs when it is.

**What an author reads of a match.** Of their own seats: the stderr the match kept (the
last ``cap`` bytes, :mod:`referee.stderrlog`), and each fault explained as ``bot check``
explains it (:func:`referee.explain.explain_fault`), with the stderr report it kept. Of the
other seats: the result and the kind of a fault; the explanation (never the stderr) only
once the published site shows the match, which is what the site then shows everyone. A
match that is not theirs, not finished, or does not exist is one and the same ``404`` page,
so a key tells nothing about whether it exists.

**Replays are the site's.** A match links its replay on the published site (``/site/``)
only when the site has published it: ``league-site.json`` says its batch was published and
the page is on the disk. The site decides what is released (a replay shows every hand, so
it waits for the deal to give nothing away, :mod:`referee.publish.league_site`); these pages
never show a replay themselves.

Everything a bot or an author chose (names, reports, stderr) is shown through the
templates' autoescaping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from referee.errors import RefereeError
from referee.explain import explain_fault, stored_fault_info
from referee.publish.league import LeagueBoard, LeagueEntry, league_board
from referee.publish.league_site import LEAGUE_STATE, match_stem
from referee.server.state import ServerState, page, session_of
from referee.server.submissions import Session, Submission
from referee.specs import StoredFault, StoredMatch
from referee.stderrlog import MatchStderr, stderr_path
from referee.tournament.league import LeagueLedger, Version, batch_of, league_roster
from referee.tournament.store import DATABASE, Store

__all__ = ["MatchPage", "SeatView", "own_versions", "released_replay", "routes"]

RECENT = 50
"""Matches listed on ``/me/matches``, latest first."""

_KEY = re.compile(r"lg/[0-9]{8}/[0-9a-f]{12}/r[0-9]{1,4}")
_NO_MATCH = "no such match of yours"


@dataclass(frozen=True)
class VersionView:
    """One version of an author's entrant: where it stands and the upload that entered it."""

    label: str
    version: int
    path: str
    state: str
    board: LeagueEntry | None
    upload: Submission | None


@dataclass(frozen=True)
class EntrantView:
    name: str
    versions: tuple[VersionView, ...]


@dataclass(frozen=True)
class SeatView:
    """A seat of a match as its page shows it: ``explained`` is every line told of its
    fault to this author (empty: no fault), ``stderr`` its stderr (own seats only)."""

    seat: int
    label: str
    own: bool
    place: int
    score: int
    forfeit: bool
    fault_kind: str | None
    explained: tuple[str, ...]
    stderr: str | None = None
    stderr_note: str = ""


@dataclass(frozen=True)
class MatchPage:
    """A match of the author's: its key, where it was played, its seats, its replay."""

    key: str
    batch: int | None
    rotation: int
    table: tuple[str, ...]
    seats: tuple[SeatView, ...]
    replay: str | None


def routes(state: ServerState, templates: Jinja2Templates) -> list[Route]:
    """The private pages' routes (see the module docstring)."""
    pages = _Private(state, templates)
    return [
        Route("/me/entrants", pages.entrants, methods=["GET"]),
        Route("/me/matches", pages.matches, methods=["GET"]),
        Route("/me/matches/{key:path}", pages.match, methods=["GET"]),
    ]


def own_versions(state: ServerState, author: str) -> list[Version]:
    """Every version in the league file whose entry names ``author``, in file order."""
    tournament = state.tournament()
    roster = league_roster(tournament.file, tournament.path)
    return [v for v in roster.versions if v.entry.author == author]


def released_replay(site: Path | None, key: str, table: Sequence[str]) -> str | None:
    """The address of the replay of ``key`` on the published site, once the site has
    published it (its batch published, its page on the disk); else ``None``."""
    batch = batch_of(key)
    if site is None or batch is None or batch >= _published_batch(site):
        return None
    stem = match_stem(key, table)
    if not (site / "matches" / f"{stem}.html").is_file():
        return None
    return f"/site/matches/{stem}.html"


def _published_batch(site: Path) -> int:
    """The batches the site has published (``[0, n)``; 0 before its first publication)."""
    try:
        state = json.loads((site / f"{LEAGUE_STATE}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    batch = state.get("batch") if isinstance(state, dict) else None
    return batch if isinstance(batch, int) and batch >= 0 else 0


class _Private:
    def __init__(self, state: ServerState, templates: Jinja2Templates) -> None:
        self.state = state
        self.templates = templates

    async def _session(self, request: Request) -> Session | None:
        return await run_in_threadpool(session_of, self.state, request)

    async def entrants(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return RedirectResponse("/signin", status_code=303)
        try:
            found = await run_in_threadpool(self._entrants, session.author)
        except RefereeError as exc:
            return self._unavailable(request, session, exc)
        return page(
            self.state, self.templates, request, "me_entrants.html", session=session, entrants=found
        )

    async def matches(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return RedirectResponse("/signin", status_code=303)
        try:
            found = await run_in_threadpool(self._matches, session.author)
        except RefereeError as exc:
            return self._unavailable(request, session, exc)
        return page(
            self.state,
            self.templates,
            request,
            "me_matches.html",
            session=session,
            matches=found,
            recent=RECENT,
        )

    async def match(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return RedirectResponse("/signin", status_code=303)
        key = request.path_params["key"]
        try:
            found = await run_in_threadpool(self._match, session.author, key)
        except RefereeError as exc:
            return self._unavailable(request, session, exc)
        if found is None:  # not theirs, not finished, or no such key: one answer
            return page(
                self.state,
                self.templates,
                request,
                "error.html",
                404,
                session=session,
                error=_NO_MATCH,
            )
        return page(
            self.state, self.templates, request, "me_match.html", session=session, match=found
        )

    def _unavailable(self, request: Request, session: Session, exc: RefereeError) -> Response:
        return page(
            self.state,
            self.templates,
            request,
            "error.html",
            503,
            session=session,
            error=f"the league cannot be read just now: {exc}",
        )

    # -- reading (in a worker thread) ------------------------------------------------------

    def _entrants(self, author: str) -> list[EntrantView]:
        versions = own_versions(self.state, author)
        if not versions:
            return []
        tournament = self.state.tournament()
        roster = league_roster(tournament.file, tournament.path)
        board = self._board()
        places = _board_places(board)
        uploads: dict[str, Submission] = {}
        for upload in reversed(self.state.uploads().of_author(author)):  # the newest wins
            if upload.status == "accepted" and upload.label:
                uploads[upload.label] = upload
        by_name: dict[str, list[VersionView]] = {}
        for v in versions:
            entry, where = places.get(v.label, (None, _unplayed(roster.current(v.name), v)))
            by_name.setdefault(v.name, []).append(
                VersionView(v.label, v.version, v.entry.path, where, entry, uploads.get(v.label))
            )
        return [EntrantView(name, tuple(views)) for name, views in by_name.items()]

    def _board(self) -> LeagueBoard | None:
        if not (self.state.results_dir / DATABASE).exists():
            return None
        return league_board(self.state.tournament(), self.state.results_dir)

    def _matches(self, author: str) -> list[MatchPage]:
        labels = {v.label for v in own_versions(self.state, author)}
        if not labels or not (self.state.results_dir / DATABASE).exists():
            return []
        with Store(self.state.results_dir, readonly=True) as store, store.snapshot():
            ledger = LeagueLedger(store, readonly=True)
            found: dict[str, StoredMatch] = {}
            for label in sorted(labels):
                for match in ledger.recent(label, RECENT):
                    found[match.spec.key] = match
            keys = sorted(found, reverse=True)[:RECENT]
            return [self._view(store, ledger, found[key], labels, stderr=False) for key in keys]

    def _match(self, author: str, key: str) -> MatchPage | None:
        if not _KEY.fullmatch(key) or not (self.state.results_dir / DATABASE).exists():
            return None
        labels = {v.label for v in own_versions(self.state, author)}
        if not labels:
            return None
        with Store(self.state.results_dir, readonly=True) as store, store.snapshot():
            ledger = LeagueLedger(store, readonly=True)
            match = ledger.match(key)
            if match is None or not labels.intersection(match.spec.table):
                return None
            return self._view(store, ledger, match, labels, stderr=True)

    def _view(
        self,
        store: Store,
        ledger: LeagueLedger,
        match: StoredMatch,
        labels: set[str],
        *,
        stderr: bool,
    ) -> MatchPage:
        """``match`` as ``labels``' author may read it (``stderr``: with their seats' full
        stderr and the stderr reports of their faults)."""
        spec = match.spec
        replay = released_replay(self.state.site, spec.key, spec.table)
        faults = {f.seat: f for f in ledger.faults(spec.key)}
        kept = _read_stderr(store.log_path(spec.key)) if stderr else None
        seats = []
        for seat in match.seats:
            own = seat.name in labels
            fault = faults.get(seat.seat)
            explained = _told(fault, own=own, released=replay is not None, report=stderr)
            text, note = _seat_stderr(kept, seat.seat, seat.name) if own and stderr else (None, "")
            seats.append(
                SeatView(
                    seat.seat,
                    seat.name,
                    own,
                    seat.place,
                    seat.score,
                    seat.forfeit,
                    seat.fault_kind,
                    explained,
                    text,
                    note,
                )
            )
        return MatchPage(
            spec.key, batch_of(spec.key), spec.rotation, spec.table, tuple(seats), replay
        )


def _unplayed(current: Version | None, version: Version) -> str:
    """Where a version not on the leaderboard stands."""
    if current == version:
        return "joins the league at its next batch"
    if current is None:
        return "retired before it played"
    return "replaced by a later version before it played"


def _board_places(board: LeagueBoard | None) -> dict[str, tuple[LeagueEntry, str]]:
    """Each version on the leaderboard by label, and where it stands there."""
    if board is None:
        return {}
    places: dict[str, tuple[LeagueEntry, str]] = {}
    for entry in board.entries:
        places[entry.label] = (entry, f"ranked {entry.rank}")
    for entry in board.unrated:
        places[entry.label] = (entry, "in the league, not rated yet")
    for entry in board.suspended:
        places[entry.label] = (entry, f"suspended: {entry.suspended_why or ''}".rstrip(": "))
    for entry in board.retired:
        places[entry.label] = (entry, f"left the league: {entry.why or 'retired'}")
    return places


def _told(fault: StoredFault | None, *, own: bool, released: bool, report: bool) -> tuple[str, ...]:
    """What this author is told of a seat's fault: their own explained in full (with the
    stderr report it kept when ``report``), another's explained without its stderr once the
    site shows the match, else its kind alone."""
    if fault is None:
        return ()
    info = stored_fault_info(fault)
    if own:
        lines = explain_fault(info, fault.stderr if report else None)
        return tuple(line for line in lines if report or not line.startswith("stderr"))
    if released:
        return tuple(line for line in explain_fault(info) if not line.startswith("stderr"))
    return (f"{fault.kind} (told once the site publishes the match)",)


def _read_stderr(log: Path) -> MatchStderr | str:
    """The stderr the match kept, or why there is none to show."""
    try:
        raw = stderr_path(log).read_bytes()
    except FileNotFoundError:
        return "this match kept no stderr"
    except OSError as exc:
        return f"its stderr cannot be read ({exc.strerror})"
    try:
        return MatchStderr.model_validate_json(raw)
    except ValueError:
        return "its stderr file cannot be read (damaged)"


def _seat_stderr(kept: MatchStderr | str | None, seat: int, label: str) -> tuple[str, str]:
    """A seat's whole stderr text, and a note on what was cut (or why there is none)."""
    if kept is None:
        return "", ""
    if isinstance(kept, str):
        return "", kept
    found = next((s for s in kept.seats if s.seat == seat and s.name == label), None)
    if found is None:
        return "", "this seat's stderr was not kept"
    text = "".join(piece.text for piece in found.pieces)
    if not found.written:
        return "", "it wrote nothing to stderr"
    note = f"{found.written} bytes written"
    if found.cut:
        note += f"; the first {found.cut} were cut, the match keeps the last {kept.cap}"
    return text, note
