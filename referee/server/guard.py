"""Time limits on reading a request, so that a client that sends a byte a second is cut off.

A slow client (slowloris) holds a connection, and what the server keeps for it, by sending
its request a little at a time, never quite finishing. uvicorn bounds none of it: h11
(``uvicorn/protocols/http/h11_impl.py``) and httptools (``httptools_impl.py``) wait for a
request's line and headers as long as bytes keep coming, ``timeout_keep_alive`` covers only
an idle connection between two requests (any byte ends it), and a request's body is read
at the pace the client sends it. Two layers here close these, each on what it can see:

- :class:`HeaderDeadlineProtocol`, under the app: uvicorn's :class:`H11Protocol` with one
  timer. It is armed when the connection opens and again when a response has been sent and
  the connection stays open, and disarmed when h11 has parsed the next request's line and
  headers. If it rings first, the connection is closed, without an answer (there is no
  request to answer). So no connection waits for a request's headers, nor for the rest of a
  body the app did not read, longer than ``header_seconds`` after it became ready for them;
  an idle kept-alive connection is therefore closed after the shorter of
  ``header_seconds`` and uvicorn's ``timeout_keep_alive``. The timer is off while the app
  works on a request, however long it takes. It is hand-written because uvicorn has no
  such setting; it overrides two public hooks of the protocol (``handle_events`` and
  ``on_response_complete``, calling uvicorn's own) and adds nothing else.
- :class:`ReadDeadline`, an ASGI middleware around the app: each read of the request's body
  waits at most ``chunk_seconds``, and the body must be complete ``body_seconds`` after the
  request reached the app. Past either, the client is answered ``408 Request Timeout``
  with ``Connection: close`` and a JSON body ``{"error": "..."}`` saying which limit it
  missed, so uvicorn closes the connection once the answer is written; the app's pending
  read raises :class:`ReadDeadlineExceeded` (so ``request.body()``, ``request.stream()``
  and ``request.form()`` stop where they are), whatever the app sends afterwards is
  dropped, and the exception ends at the middleware. If the app had already started its
  response, there is no 408 to send: the exception goes on to the server, which closes the
  connection (and logs it). After the body is complete, reads pass through untimed: they
  wait for the client's disconnect, which is how a streaming response learns of it.

:func:`guarded_config` puts both in front of an app: a :class:`uvicorn.Config` that serves
``ReadDeadline(app)`` over this h11 protocol (always h11, even where httptools is
installed, since the header timer is written for h11's states).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from referee.errors import UsageError

__all__ = [
    "HeaderDeadlineProtocol",
    "ReadDeadline",
    "ReadDeadlineExceeded",
    "guarded_config",
    "header_deadline_protocol",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ReadDeadlineExceeded(Exception):
    """The request's body did not arrive in time: raised to the app from ``receive`` once
    :class:`ReadDeadline` has answered (or could not answer) for it."""


def _check_seconds(name: str, seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise UsageError(f"{name} must be a number of seconds, not {seconds!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{name} must be a positive number of seconds, not {seconds!r}")
    return float(seconds)


def _timeout_response(error: str) -> tuple[Message, Message]:
    body = json.dumps({"error": error}).encode()
    start: Message = {
        "type": "http.response.start",
        "status": 408,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ],
    }
    return start, {"type": "http.response.body", "body": body, "more_body": False}


class ReadDeadline:
    """ASGI middleware: the body of an http request must come at ``chunk_seconds`` a read
    at least, and be complete ``body_seconds`` after the request reached the app; past
    either, ``408`` and the connection closed (the module's docstring says how).

    Other scopes (``lifespan``, ``websocket``) pass through untouched.
    """

    def __init__(self, app: ASGIApp, *, body_seconds: float, chunk_seconds: float) -> None:
        self.app = app
        self.body_seconds = _check_seconds("body_seconds", body_seconds)
        self.chunk_seconds = _check_seconds("chunk_seconds", chunk_seconds)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        body_deadline = loop.time() + self.body_seconds
        started = False  # the app's response has begun
        answered = False  # the 408 is sent: the app's own messages are dropped
        body_done = False
        late: str | None = None

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if answered:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def guarded_receive() -> Message:
            nonlocal answered, body_done, late
            if late is not None:
                raise ReadDeadlineExceeded(late)
            if body_done:
                return await receive()
            chunk_deadline = loop.time() + self.chunk_seconds
            try:
                async with asyncio.timeout_at(min(chunk_deadline, body_deadline)):
                    message = await receive()
            except TimeoutError:
                late = self._late(chunk=chunk_deadline < body_deadline)
                if not started:
                    answered = True
                    for part in _timeout_response(late):
                        await send(part)
                raise ReadDeadlineExceeded(late) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except ReadDeadlineExceeded:
            if not answered:
                raise

    def _late(self, *, chunk: bool) -> str:
        if chunk:
            return (
                "The request's body came too slowly: nothing arrived for "
                f"{_seconds(self.chunk_seconds)}."
            )
        return f"The request's body was not complete within {_seconds(self.body_seconds)}."


def _seconds(seconds: float) -> str:
    return "1 second" if seconds == 1 else f"{seconds:g} seconds"


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on a request's line and headers: a connection
    that has not sent them ``header_seconds`` after it became ready for a request (opened,
    or its last response sent) is closed (the module's docstring says what it guarantees).

    ``header_seconds`` is a class attribute because uvicorn makes the protocol itself, with
    its own arguments: :func:`header_deadline_protocol` makes a subclass with the value.
    """

    header_seconds: ClassVar[float] = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    # uvicorn's own signature, which narrows asyncio's BaseTransport as uvicorn does.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        # uvicorn makes a new scope for each request whose headers h11 has parsed.
        scope = self.scope
        super().handle_events()
        if self.scope is not scope:
            self._disarm_header_timer()

    def on_response_complete(self) -> None:
        # Armed before uvicorn's own hook, which may parse a pipelined request at once.
        if not self.transport.is_closing():
            self._arm_header_timer()
        super().on_response_complete()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        # uvicorn's connection_lost, which follows, tells h11 and any request cycle.
        self.transport.close()


def header_deadline_protocol(header_seconds: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class to pass as ``uvicorn.Config(http=...)``: a
    :class:`HeaderDeadlineProtocol` whose connections must send a request's headers within
    ``header_seconds``."""
    seconds = _check_seconds("header_seconds", header_seconds)

    class Bound(HeaderDeadlineProtocol):
        header_seconds = seconds

    return Bound


def guarded_config(
    app: ASGIApp,
    host: str,
    port: int,
    *,
    header_seconds: float,
    body_seconds: float,
    chunk_seconds: float,
    **kw: Any,
) -> uvicorn.Config:
    """A uvicorn configuration serving ``app`` on ``host:port`` with both time limits: the
    request's headers within ``header_seconds`` (:class:`HeaderDeadlineProtocol`), its body
    at a read per ``chunk_seconds`` and whole within ``body_seconds`` (:class:`ReadDeadline`).

    ``kw`` goes to :class:`uvicorn.Config` as it is (``http`` is this module's to set).
    """
    guarded = ReadDeadline(app, body_seconds=body_seconds, chunk_seconds=chunk_seconds)
    protocol = header_deadline_protocol(header_seconds)
    return uvicorn.Config(guarded, host=host, port=port, http=protocol, **kw)
