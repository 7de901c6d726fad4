"""The competition server's web app: the API, the authors' pages, the live leaderboard.

A Starlette application (:func:`make_app`), served by uvicorn (:mod:`referee.server.serve`).
Who asks is decided by a token alone: ``Authorization: Bearer <token>`` on the API, or a
session cookie opened by signing in with the token on the web pages
(:mod:`referee.server.submissions`). A form, an upload's ``bot.toml`` or a query never
names the author.

**What an author may read.** An author's submissions, reports and private page answer only
that author: another author's submission is ``404``, exactly as one that does not exist, so
an id tells nothing about whether it exists. The public pages (the leaderboard and the
published site under ``/site/``) show no stderr unless the league file says
``[publish] stderr = "public"``.

**Refusals** are one sentence each, as JSON ``{"error": ...}`` on the API and on the page
for a form: ``401`` (no, a wrong, a revoked or a rotated token), ``403`` (a form without
its CSRF token), ``404`` (another author's anything; the organiser's pages to an author),
``413`` (an upload past ``[server] upload_mb``, refused while it streams: counted as it
is received, not trusted from its ``Content-Length``), ``429`` with ``Retry-After`` (too
many uploads, or too many failed sign-ins from one address).

**Comparisons** (``compare=1`` on an upload, the box on the upload form; ``enter_if_better=1``
as well for ``--enter-if-better``): the upload is checked and compared with the author's
current version of the entrant (:mod:`referee.server.compares`) instead of entered; the
submission's ``compare`` object and page show the comparison's progress and verdict, and
``POST /api/v1/submissions/{id}/enter`` (or the page's button) enters it. An upload for
an entrant the author has no current version of is ``400``; a second comparison while one
is queued, checked or played, and one past the day's deals, ``429``.

**Forms** carry the session's CSRF token in a hidden field, compared in constant time; the
cookie is ``HttpOnly``, ``SameSite=Strict``, and ``Secure`` when the request came over TLS
(the scheme uvicorn reports, from the proxy's headers only when ``--forwarded-allow-ips``
trusts it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import Message, Receive

from referee.server import organiser, private
from referee.server.authors import Author
from referee.server.compares import league_field
from referee.server.state import (
    COOKIE,
    ServerState,
    address,
    error,
    page,
    session_of,
    when,
)
from referee.server.submissions import (
    CompareRefused,
    Mode,
    Session,
    Submission,
    TooLarge,
    csrf_matches,
)
from referee.text import printable
from referee.tournament.league import league_roster

__all__ = ["ServerState", "make_app"]

_TEMPLATES = Path(__file__).parent / "templates"
_MAX_NAME = 64
_UPLOAD_SUFFIXES = (".py", ".tar.gz", ".tgz", ".zip")
_CSRF_REFUSED = (
    "this form has expired or did not come from this site's page; reload the page and try again"
)


class _Limited(Exception):
    """Answer this response instead (a refusal found while reading the request)."""

    def __init__(self, response: Response) -> None:
        self.response = response


def _limited_receive(receive: Receive, limit: int) -> Receive:
    """``receive``, refusing with :class:`TooLarge` once the body passes ``limit`` bytes."""
    seen = 0

    async def counted() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise TooLarge
        return message

    return counted


def make_app(state: ServerState) -> Starlette:
    """The Starlette app of ``state`` (see the module docstring)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["when"] = when
    templates = Jinja2Templates(env=environment)
    pages = _Pages(state, templates)
    routes: list[Route | Mount] = [
        Route("/api/v1/submissions", _api(state, _api_submit), methods=["POST"]),
        Route("/api/v1/submissions", _api(state, _api_list), methods=["GET"]),
        Route("/api/v1/submissions/{sid}", _api(state, _api_get), methods=["GET"]),
        Route("/api/v1/submissions/{sid}/enter", _api(state, _api_enter), methods=["POST"]),
        Route("/api/v1/leaderboard", _leaderboard(state), methods=["GET"]),
        Route("/", pages.index, methods=["GET"]),
        Route("/signin", pages.signin_form, methods=["GET"]),
        Route("/signin", pages.signin, methods=["POST"]),
        Route("/signout", pages.signout, methods=["POST"]),
        Route("/me", pages.me, methods=["GET"]),
        Route("/upload", pages.upload, methods=["POST"]),
        Route("/me/submissions/{sid}", pages.submission, methods=["GET"]),
        Route("/me/submissions/{sid}/enter", pages.enter, methods=["POST"]),
        *private.routes(state, templates),
        *organiser.routes(state, templates),
    ]
    if state.site is not None:
        state.site.mkdir(parents=True, exist_ok=True)
        routes.append(Mount("/site", StaticFiles(directory=state.site, html=True), name="site"))
    return Starlette(routes=routes)


# --------------------------------------------------------------------------- the API

_Handler = Callable[[ServerState, Request, Author], Awaitable[Response]]


def _api(state: ServerState, handler: _Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` behind the API's token check (and the sign-in throttle)."""

    async def endpoint(request: Request) -> Response:
        where = address(request)
        wait = state.throttled(where)
        if wait:
            return error(
                429,
                "too many failed sign-ins from this address; wait before trying again",
                {"Retry-After": str(int(wait) + 1)},
            )
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        author = None
        if scheme.lower() == "bearer" and token:
            author = await run_in_threadpool(lambda: state.authors().authenticate(token.strip()))
        elif not header and request.method == "GET":
            session = await run_in_threadpool(session_of, state, request)
            if session is not None:
                author = await run_in_threadpool(lambda: state.authors().author(session.author))
        if author is None:
            if header:
                state.failed(where)
            return error(
                401,
                "a valid token is needed: send Authorization: Bearer <token> (referee authors "
                "add gives one); a revoked or rotated token no longer works",
                {"WWW-Authenticate": "Bearer"},
            )
        return await handler(state, request, author)

    return endpoint


async def _receive_upload(
    state: ServerState, request: Request, author: Author, session: Session | None
) -> tuple[str, str | None, UploadFile, Mode]:
    """The upload's form, read within the size limit; :class:`_Limited` with the refusal."""
    limit = int(state.settings.upload_mb * 1024 * 1024)
    if await run_in_threadpool(state.closed):
        raise _Limited(error(409, "the tournament has started: it takes no more entries"))
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit + 64 * 1024:
        raise _Limited(_too_large(state))
    wait = await run_in_threadpool(
        lambda: state.uploads().retry_after(
            author.name,
            per_day=state.settings.per_day,
            interval_s=state.settings.interval_seconds,
        )
    )
    if wait > 0:
        raise _Limited(
            error(
                429,
                f"too many uploads: wait {int(wait) + 1} s before the next one "
                f"([server] allows {state.settings.per_day} a day, one every "
                f"{state.settings.interval_seconds:g} s)",
                {"Retry-After": str(int(wait) + 1)},
            )
        )
    limited = Request(request.scope, _limited_receive(request.receive, limit + 64 * 1024))
    try:
        form = await limited.form(max_files=1, max_fields=6, max_part_size=4096)
    except TooLarge:
        raise _Limited(_too_large(state)) from None
    except Exception as exc:  # a malformed multipart body: the parser's words
        raise _Limited(error(400, f"the upload is not a readable form: {exc}")) from None
    if session is not None and not csrf_matches(session, str(form.get("csrf", ""))):
        raise _Limited(error(403, _CSRF_REFUSED))
    bot = form.get("bot")
    if not isinstance(bot, UploadFile):
        raise _Limited(error(400, "the upload needs a file in the form field 'bot'"))
    filename = (bot.filename or "").rsplit("/", 1)[-1]
    if not filename.lower().endswith(_UPLOAD_SUFFIXES):
        raise _Limited(
            error(400, "the bot must be a .py file, or a .tar.gz or .zip of a folder with bot.toml")
        )
    name = form.get("name")
    wanted = name.strip() if isinstance(name, str) and name.strip() else None
    if wanted is not None and len(wanted) > _MAX_NAME:
        raise _Limited(error(400, f"the name is longer than {_MAX_NAME} characters"))
    mode: Mode = "enter"
    if _ticked(form.get("enter_if_better")):
        mode = "enter-if-better"
    elif _ticked(form.get("compare")):
        mode = "compare"
    return filename[:200], wanted, bot, mode


def _ticked(value: object) -> bool:
    """Whether a form's box (or the API's flag) is set: ``1``, ``true``, ``on``, ``yes``."""
    return isinstance(value, str) and value.strip().lower() in ("1", "true", "on", "yes")


def _compare_refusal(
    state: ServerState, author: str, filename: str, name: str | None
) -> JSONResponse | None:
    """Why a compare upload cannot be compared, found before it is stored: the server
    compares nothing, the author has no version of the entrant in the league now (its name
    is the form's, or a ``.py`` file's stem; an archive's is known once unpacked, and its
    check says it), or too few entrants of other authors. ``None``: it may be."""
    settings = state.settings
    if settings.compare_deals_per_day == 0:
        return error(
            400,
            "this server runs no comparisons ([server] compare_deals_per_day = 0); upload "
            "without --compare",
        )
    tournament = state.tournament()
    if name is None and filename.lower().endswith(".py"):
        name = filename[: -len(".py")]
    if name is not None:
        current = league_roster(tournament.file, tournament.path).current(name)
        bot = next((b for b in tournament.bots if current and b.name == current.label), None)
        if current is None or author not in (current.entry.author, bot and bot.author):
            return error(
                400,
                f"you have no entrant named {printable(name)!r} in the league to compare "
                "with: --compare compares a new version with your current one; upload "
                "without --compare to enter a new entrant",
            )
    k = tournament.file.table_size
    field = league_field(tournament, author)
    if len(field) < k - 1:
        return error(
            400,
            f"the league has {len(field)} entrants of other authors seated now, and a "
            f"comparison at tables of {k} needs {k - 1}; upload without --compare",
        )
    return None


def _too_large(state: ServerState) -> JSONResponse:
    return error(
        413,
        f"the upload is larger than {state.settings.upload_mb:g} MiB ([server] upload_mb)",
        {"Connection": "close"},
    )


async def _store(
    state: ServerState, request: Request, author: Author, session: Session | None = None
) -> str:
    """Read and store an upload; its id. :class:`_Limited` with the refusal. A form of the
    pages (``session``) must carry the session's CSRF token."""
    filename, name, bot, mode = await _receive_upload(state, request, author, session)
    limit = int(state.settings.upload_mb * 1024 * 1024)

    def store() -> str:
        if mode != "enter":
            refused = _compare_refusal(state, author.name, filename, name)
            if refused is not None:
                raise _Limited(refused)
        bot.file.seek(0)
        stored = state.uploads().store(
            author.name,
            filename,
            name,
            bot.file,
            limit,
            mode=mode,
            deals_per_day=state.settings.compare_deals_per_day,
        )
        detail = f"{filename}, {stored.size} bytes" + ("" if mode == "enter" else f", {mode}")
        state.authors().record(f"author:{author.name}", "upload", stored.id, detail)
        return stored.id

    try:
        sid = await run_in_threadpool(store)
    except TooLarge:
        raise _Limited(_too_large(state)) from None
    except CompareRefused as refused:
        wait = str(int(refused.retry_after) + 1)
        raise _Limited(error(429, refused.message, {"Retry-After": wait})) from None
    finally:
        await bot.close()
    if state.checker is not None:
        state.checker.notify()
    return sid


async def _api_submit(state: ServerState, request: Request, author: Author) -> Response:
    try:
        sid = await _store(state, request, author)
    except _Limited as refused:
        return refused.response
    url = f"/api/v1/submissions/{sid}"
    return JSONResponse({"id": sid, "status": "queued", "url": url}, status_code=202)


def _public(state: ServerState, found: Submission) -> dict[str, object]:
    """A submission as the API shows it to its author, with its comparison (or ``None``)."""
    body = found.public(f"/api/v1/submissions/{found.id}")
    compared = state.uploads().comparison(found.id)
    body["compare"] = None if compared is None else compared.public()
    return body


async def _api_get(state: ServerState, request: Request, author: Author) -> Response:
    sid = request.path_params["sid"]

    def read() -> dict[str, object] | None:
        found = state.uploads().get(sid, author=author.name)
        return None if found is None else _public(state, found)

    body = await run_in_threadpool(read)
    if body is None:
        return error(404, "no such submission")
    return JSONResponse(body)


async def _api_list(state: ServerState, request: Request, author: Author) -> Response:
    def read() -> list[dict[str, object]]:
        return [_public(state, s) for s in state.uploads().of_author(author.name)]

    return JSONResponse({"submissions": await run_in_threadpool(read)})


def _enter(state: ServerState, sid: str, author: str) -> tuple[int, str]:
    """Enter the author's compared submission ``sid``: its status code and a sentence."""
    queued, found = state.uploads().enter(sid, author)
    if found is None:
        return 404, "no such submission"
    if not queued:
        return 409, (
            f"submission {sid} is {found.status}: only a compared submission waits to be entered"
        )
    state.authors().record(f"author:{author}", "enter", sid, "after its comparison")
    if state.checker is not None:
        state.checker.notify()
    return 202, "queued"


async def _api_enter(state: ServerState, request: Request, author: Author) -> Response:
    sid = request.path_params["sid"]
    status, said = await run_in_threadpool(_enter, state, sid, author.name)
    if status != 202:
        return error(status, said)
    url = f"/api/v1/submissions/{sid}"
    return JSONResponse({"id": sid, "status": "queued", "url": url}, status_code=202)


def _leaderboard(state: ServerState) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        body = await run_in_threadpool(state.board_json)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-cache"})

    return endpoint


# --------------------------------------------------------------------------- the pages


class _Pages:
    """The web pages: the live leaderboard, sign-in, an author's page, upload, a check."""

    def __init__(self, state: ServerState, templates: Jinja2Templates) -> None:
        self.state = state
        self.templates = templates
        self._public: tuple[bytes, bytes] | None = None

    def _page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return page(self.state, self.templates, request, name, status, **context)

    async def index(self, request: Request) -> Response:
        """The live leaderboard. A visitor who is not signed in gets the page rendered for
        the board as it is now, rendered once per board (most requests are theirs)."""
        raw = await run_in_threadpool(self.state.board_json)
        session = None
        if request.cookies.get(COOKIE):
            session = await run_in_threadpool(session_of, self.state, request)
        if session is None and self._public is not None and self._public[0] == raw:
            return HTMLResponse(self._public[1])
        rendered = self._page(request, "index.html", board=json.loads(raw), session=session)
        if session is None:
            self._public = (raw, bytes(rendered.body))
        return rendered

    async def signin_form(self, request: Request) -> Response:
        return self._page(request, "signin.html", error=None)

    async def signin(self, request: Request) -> Response:
        where = address(request)
        wait = self.state.throttled(where)
        if wait:
            return self._page(
                request,
                "signin.html",
                429,
                error=f"too many failed sign-ins from this address; try again in {int(wait) + 1} s",
            )
        form = await request.form(max_files=0, max_fields=2, max_part_size=512)
        token = str(form.get("token", "")).strip()
        author = await run_in_threadpool(lambda: self.state.authors().authenticate(token))
        if author is None or author.token_id is None:
            self.state.failed(where)
            return self._page(
                request, "signin.html", 401, error="that token is not valid (or no longer)"
            )
        cookie = await run_in_threadpool(
            lambda: self.state.uploads().open_session(
                author.name, author.token_id or "", self.state.settings.session_hours
            )
        )
        response = RedirectResponse("/me", status_code=303)
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=int(self.state.settings.session_hours * 3600),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    async def _signed_in(self, request: Request) -> Session | None:
        return await run_in_threadpool(session_of, self.state, request)

    async def _checked_form(self, request: Request) -> tuple[Session | None, Response | None]:
        """The session of a small form's post, or the refusal (no session: to sign in; no
        CSRF token, or another: ``403``)."""
        session = await self._signed_in(request)
        if session is None:
            return None, RedirectResponse("/signin", status_code=303)
        form = await request.form(max_files=0, max_fields=8, max_part_size=1024)
        if not csrf_matches(session, str(form.get("csrf", ""))):
            return session, self._page(request, "error.html", 403, error=_CSRF_REFUSED)
        return session, None

    async def signout(self, request: Request) -> Response:
        _, refused = await self._checked_form(request)
        if refused is not None:
            return refused
        cookie = request.cookies.get(COOKIE, "")
        await run_in_threadpool(lambda: self.state.uploads().close_session(cookie))
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def me(self, request: Request) -> Response:
        session = await self._signed_in(request)
        if session is None:
            return RedirectResponse("/signin", status_code=303)
        uploads = await run_in_threadpool(lambda: self.state.uploads().of_author(session.author))
        return self._page(request, "me.html", session=session, uploads=uploads, error=None)

    async def upload(self, request: Request) -> Response:
        session = await self._signed_in(request)
        if session is None:
            return RedirectResponse("/signin", status_code=303)
        author = await run_in_threadpool(lambda: self.state.authors().author(session.author))
        if author is None:
            return RedirectResponse("/signin", status_code=303)
        try:
            sid = await _store(self.state, request, author, session)
        except _Limited as limited:
            body = json.loads(bytes(limited.response.body))
            uploads = await run_in_threadpool(
                lambda: self.state.uploads().of_author(session.author)
            )
            return self._page(
                request,
                "me.html",
                limited.response.status_code,
                session=session,
                uploads=uploads,
                error=body["error"],
            )
        return RedirectResponse(f"/me/submissions/{sid}", status_code=303)

    async def submission(self, request: Request) -> Response:
        session = await self._signed_in(request)
        if session is None:
            return RedirectResponse("/signin", status_code=303)
        sid = request.path_params["sid"]
        found = await run_in_threadpool(
            lambda: self.state.uploads().get(sid, author=session.author)
        )
        if found is None:
            return self._page(
                request, "error.html", 404, error="no such submission", session=session
            )
        compared = await run_in_threadpool(lambda: self.state.uploads().comparison(sid))
        return self._page(
            request, "submission.html", session=session, upload=found, compared=compared
        )

    async def enter(self, request: Request) -> Response:
        session, refused = await self._checked_form(request)
        if refused is not None or session is None:
            return refused or RedirectResponse("/signin", status_code=303)
        sid = request.path_params["sid"]
        status, said = await run_in_threadpool(_enter, self.state, sid, session.author)
        if status != 202:
            return self._page(request, "error.html", status, error=said, session=session)
        return RedirectResponse(f"/me/submissions/{sid}", status_code=303)
