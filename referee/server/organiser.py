"""The organiser's pages: the check queue, every submission, the authors, the entrants, the log.

Under ``/admin``, for a session whose account has the role ``organiser``::

    /admin                      the queue: uploads queued or being checked, oldest first
    /admin/submissions          every author's uploads, newest first
    /admin/submissions/{id}     one upload with its report
    /admin/authors              every account, with a button that revokes it
    /admin/entrants             the league's entrants, with a button that retires one
    /admin/log                  the audit log, newest first (``referee authors log``)

**Who may.** The role is read again from the server's database at every request, so an
organiser's account revoked or turned into an author's loses the pages at once. A signed-
out browser is sent to ``/signin``; a signed-in author gets ``404``, the very answer of a
page that does not exist (Starlette's own), so the pages are nothing to an author.

**Every action is a POST form** carrying the session's CSRF token, compared in constant
time (:func:`~referee.server.submissions.csrf_matches`); without it, or with another, the
answer is ``403`` and nothing is done. Each action is written to the audit log with the
actor ``organiser:<name>``:

- *revoke* ends the account and its token in one transaction with its log line
  (:meth:`~referee.server.authors.AuthorBook.revoke`); the sessions it signed in end with
  the token (:meth:`~referee.server.submissions.SubmissionBook.session` joins each session
  to its token, which must not be ended);
- *retire* appends the retirement to the league file
  (:func:`~referee.tournament.file.append_retirement`: the running league takes the entrant
  out at its next batch), under the check queue's entry lock so that it never interleaves
  with a check appending an entry, and then writes its log line. A file and a database
  cannot commit together: a crash between the two leaves the retirement without its line,
  never a line without its retirement.

A refusal (an author already revoked, an entrant already retired) is the one sentence the
book or the file says, on the page, with ``400``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from referee.errors import RefereeError, UsageError
from referee.server.state import ServerState, page, session_of
from referee.server.submissions import Session, csrf_matches
from referee.tournament.file import append_retirement
from referee.tournament.league import Version, league_roster

__all__ = ["routes"]

_CSRF_REFUSED = (
    "this form has expired or did not come from this site's page; reload the page and try again"
)


@dataclass(frozen=True)
class EntrantRow:
    """An entrant in the league now, its current version, and its author."""

    name: str
    label: str
    version: int
    author: str | None
    path: str


def routes(state: ServerState, templates: Jinja2Templates) -> list[Route]:
    """The organiser's routes (see the module docstring)."""
    pages = _Organiser(state, templates)
    return [
        Route("/admin", pages.queue, methods=["GET"]),
        Route("/admin/submissions", pages.submissions, methods=["GET"]),
        Route("/admin/submissions/{sid}", pages.submission, methods=["GET"]),
        Route("/admin/authors", pages.authors, methods=["GET"]),
        Route("/admin/authors/revoke", pages.revoke, methods=["POST"]),
        Route("/admin/entrants", pages.entrants, methods=["GET"]),
        Route("/admin/entrants/retire", pages.retire, methods=["POST"]),
        Route("/admin/log", pages.log, methods=["GET"]),
    ]


class _Organiser:
    def __init__(self, state: ServerState, templates: Jinja2Templates) -> None:
        self.state = state
        self.templates = templates

    async def _organiser(self, request: Request) -> Session:
        """The organiser's session; else the refusal, raised: signed out, to ``/signin``
        (:class:`_SignIn`); anyone else, the ``404`` of a page that does not exist."""

        def read() -> Session | None:
            session = session_of(self.state, request)
            if session is None:
                raise _SignIn
            author = self.state.authors().author(session.author)
            return session if author is not None and author.organiser else None

        session = await run_in_threadpool(read)
        if session is None:
            raise HTTPException(status_code=404)
        return session

    def _page(
        self, request: Request, session: Session, name: str, status: int = 200, **context: Any
    ) -> Response:
        context.update(session=session, organiser=True)
        return page(self.state, self.templates, request, name, status, **context)

    # -- the pages -------------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        return await self._guarded(request, self._queue)

    async def _queue(self, request: Request, session: Session) -> Response:
        queued = await run_in_threadpool(lambda: self.state.uploads().queue())
        return self._page(request, session, "admin_queue.html", uploads=queued)

    async def submissions(self, request: Request) -> Response:
        return await self._guarded(request, self._submissions)

    async def _submissions(self, request: Request, session: Session) -> Response:
        every = await run_in_threadpool(lambda: self.state.uploads().recent())
        return self._page(request, session, "admin_submissions.html", uploads=every)

    async def submission(self, request: Request) -> Response:
        return await self._guarded(request, self._submission)

    async def _submission(self, request: Request, session: Session) -> Response:
        sid = request.path_params["sid"]
        found = await run_in_threadpool(lambda: self.state.uploads().get(sid))
        if found is None:
            return self._page(request, session, "error.html", 404, error="no such submission")
        return self._page(request, session, "admin_submission.html", upload=found)

    async def authors(self, request: Request) -> Response:
        return await self._guarded(request, self._authors)

    async def _authors(
        self, request: Request, session: Session, error: str | None = None, status: int = 200
    ) -> Response:
        every = await run_in_threadpool(lambda: self.state.authors().authors())
        return self._page(
            request, session, "admin_authors.html", status, authors=every, error=error
        )

    async def entrants(self, request: Request) -> Response:
        return await self._guarded(request, self._entrants)

    async def _entrants(
        self, request: Request, session: Session, error: str | None = None, status: int = 200
    ) -> Response:
        try:
            active, retired = await run_in_threadpool(self._roster)
        except RefereeError as exc:
            active, retired = [], []
            error, status = f"the league file cannot be read: {exc}", 503
        return self._page(
            request,
            session,
            "admin_entrants.html",
            status,
            entrants=active,
            retired=retired,
            error=error,
        )

    async def log(self, request: Request) -> Response:
        return await self._guarded(request, self._log)

    async def _log(self, request: Request, session: Session) -> Response:
        lines = await run_in_threadpool(lambda: self.state.authors().log())
        return self._page(request, session, "admin_log.html", log=list(reversed(lines)))

    # -- the actions -----------------------------------------------------------------------

    async def revoke(self, request: Request) -> Response:
        return await self._guarded(request, self._revoke)

    async def _revoke(self, request: Request, session: Session) -> Response:
        name, refused = await self._form(request, session)
        if refused is not None:
            return refused
        actor = f"organiser:{session.author}"
        try:
            await run_in_threadpool(lambda: self.state.authors().revoke(name, actor=actor))
        except UsageError as exc:
            return await self._authors(request, session, str(exc), 400)
        return RedirectResponse("/admin/authors", status_code=303)

    async def retire(self, request: Request) -> Response:
        return await self._guarded(request, self._retire)

    async def _retire(self, request: Request, session: Session) -> Response:
        name, refused = await self._form(request, session)
        if refused is not None:
            return refused
        try:
            await run_in_threadpool(self._retire_entrant, name, f"organiser:{session.author}")
        except UsageError as exc:
            return await self._entrants(request, session, str(exc), 400)
        return RedirectResponse("/admin/entrants", status_code=303)

    # -- the parts -------------------------------------------------------------------------

    async def _guarded(
        self, request: Request, handler: Callable[[Request, Session], Awaitable[Response]]
    ) -> Response:
        try:
            session = await self._organiser(request)
        except _SignIn:
            return RedirectResponse("/signin", status_code=303)
        return await handler(request, session)

    async def _form(self, request: Request, session: Session) -> tuple[str, Response | None]:
        """The ``name`` an action's form names, or its refusal (``403`` without the
        session's CSRF token)."""
        form = await request.form(max_files=0, max_fields=4, max_part_size=1024)
        if not csrf_matches(session, str(form.get("csrf", ""))):
            return "", self._page(request, session, "error.html", 403, error=_CSRF_REFUSED)
        return str(form.get("name", "")).strip(), None

    def _roster(self) -> tuple[list[EntrantRow], list[str]]:
        tournament = self.state.tournament()
        roster = league_roster(tournament.file, tournament.path)
        return [_row(v) for v in roster.active], list(roster.retired)

    def _retire_entrant(self, name: str, actor: str) -> None:
        lock = self.state.checker.enter_lock if self.state.checker is not None else None
        with lock if lock is not None else contextlib.nullcontext():
            version = append_retirement(self.state.path, name)
        self.state.authors().record(
            actor,
            "retire",
            name,
            f"{version.label} (version {version.version}) leaves the league at its next batch",
        )


class _SignIn(Exception):
    """The request has no valid session: it is sent to sign in."""


def _row(version: Version) -> EntrantRow:
    entry = version.entry
    return EntrantRow(version.name, version.label, version.version, entry.author, entry.path)
