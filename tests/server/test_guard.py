"""The read deadlines against a real uvicorn server on loopback: a client that sends its
headers or its body a byte at a time is cut off (headers: closed; body: 408 and closed,
the app's read ended), while other clients are answered at once, ordinary requests and
forms pass, and a kept-alive connection's timer restarts per request without ringing
while the app works."""

from __future__ import annotations

import asyncio
import json
import logging
import select
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from referee.errors import UsageError
from referee.server.guard import ReadDeadline, ReadDeadlineExceeded, guarded_config

HEADER_S = 1.0
BODY_S = 1.0
CHUNK_S = 0.5
SLOW_S = 1.2  # longer than HEADER_S: the header timer must be off while the app works
PACE_S = 0.2  # a hostile client's byte interval

# A real server and clients that wait out its limits: the slow lane, each test bounded.
pytestmark = pytest.mark.timeout(30)


def make_app(stopped: list[str]) -> Starlette:
    async def hello(request: Request) -> Response:
        return PlainTextResponse("hello")

    async def echo(request: Request) -> Response:
        return JSONResponse({"length": len(await request.body())})

    async def form(request: Request) -> Response:
        try:
            async with request.form() as fields:
                name, bot = fields["name"], fields["bot"]
                assert isinstance(name, str) and isinstance(bot, UploadFile)
                return JSONResponse({"name": name, "bot": len(await bot.read())})
        except ReadDeadlineExceeded:
            stopped.append(request.query_params["id"])
            raise

    async def slow(request: Request) -> Response:
        await asyncio.sleep(SLOW_S)
        return PlainTextResponse("done")

    routes = [
        Route("/", hello),
        Route("/echo", echo, methods=["POST"]),
        Route("/form", form, methods=["POST"]),
        Route("/slow", slow),
    ]
    return Starlette(routes=routes)


class Served:
    def __init__(self, port: int, stopped: list[str]) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.stopped = stopped

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    stopped: list[str] = []
    config = guarded_config(
        make_app(stopped),
        "127.0.0.1",
        0,
        header_seconds=HEADER_S,
        body_seconds=BODY_S,
        chunk_seconds=CHUNK_S,
        timeout_keep_alive=5,  # well above HEADER_S: an idle close sooner is the header timer
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(port, stopped)
    finally:
        server.should_exit = True
        thread.join(10)


def read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def dribble(sock: socket.socket, data: bytes, *, wait: float = 3.0) -> tuple[float, bytes]:
    """Sends ``data`` a byte every PACE_S until the server answers or closes (for ``wait``
    seconds at most); returns how long that took and everything the server sent."""
    start = time.monotonic()
    for byte in data:
        if time.monotonic() - start > wait:
            break
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - start, read_until_closed(sock)
        if select.select([sock], [], [], PACE_S)[0]:
            return time.monotonic() - start, read_until_closed(sock)
    if select.select([sock], [], [], max(0.0, wait - (time.monotonic() - start)))[0]:
        return time.monotonic() - start, read_until_closed(sock)
    return time.monotonic() - start, b"(no answer)"


def read_response(sock: socket.socket) -> tuple[bytes, dict[bytes, bytes], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(b":") for ln in lines)}
    while len(body) < int(headers[b"content-length"]):
        body += sock.recv(65536)
    return status, headers, body


def others_answered(served: Served, slow: Future[tuple[float, bytes]]) -> int:
    """Asks for / over httpx while ``slow`` runs; each answer must come at once."""
    count = 0
    with httpx.Client(base_url=served.url, trust_env=False, timeout=5) as client:
        while not slow.done():
            start = time.monotonic()
            response = client.get("/")
            assert response.text == "hello"
            assert time.monotonic() - start < 0.5
            count += 1
            time.sleep(0.1)
    return count


@pytest.mark.slow
def test_slow_headers_are_cut_off_and_others_are_answered(served: Served) -> None:
    sock = served.connect()
    headers = b"GET / HTTP/1.1\r\nHost: referee\r\nX-Padding: " + b"a" * 60 + b"\r\n\r\n"
    with sock, ThreadPoolExecutor(1) as pool:
        slow = pool.submit(dribble, sock, headers)
        assert others_answered(served, slow) >= 3
        elapsed, answer = slow.result()
    assert answer == b""  # closed, nothing to answer
    assert HEADER_S * 0.9 <= elapsed < 2 * HEADER_S


@pytest.mark.slow
def test_slow_body_gets_408_and_others_are_answered(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    sock = served.connect()
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: referee\r\nContent-Length: 1000\r\n\r\n")
    with sock, ThreadPoolExecutor(1) as pool:
        slow = pool.submit(dribble, sock, b"a" * 1000)
        assert others_answered(served, slow) >= 3
        elapsed, answer = slow.result()
    assert BODY_S * 0.9 <= elapsed < 2 * BODY_S
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in head.lower()
    assert json.loads(body) == {"error": "The request's body was not complete within 1 second."}
    # The exception the app's read raised ended at the middleware: nothing for the server to log.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.slow
def test_a_body_that_stops_gets_408_after_the_chunk_limit(served: Served) -> None:
    with served.connect() as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: referee\r\nContent-Length: 10\r\n\r\nabc")
        start = time.monotonic()
        select.select([sock], [], [], 3)
        answer = read_until_closed(sock)
        elapsed = time.monotonic() - start
    assert CHUNK_S * 0.9 <= elapsed < BODY_S
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert json.loads(body) == {
        "error": "The request's body came too slowly: nothing arrived for 0.5 seconds."
    }


def multipart(name: str, bot: bytes) -> tuple[str, bytes]:
    boundary = "referee-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n{name}\r\n'
            f"--{boundary}\r\nContent-Disposition: form-data; "
            f'name="bot"; filename="bot.py"\r\n\r\n'
        ).encode()
        + bot
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"multipart/form-data; boundary={boundary}", body


@pytest.mark.slow
def test_slow_form_gets_408_and_the_apps_form_read_ends(served: Served) -> None:
    content_type, body = multipart("alice", b"x" * 200)
    head = (
        f"POST /form?id=slow-form HTTP/1.1\r\nHost: referee\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with served.connect() as sock:
        sock.sendall(head + body[:80])  # the first field whole, then the file a byte at a time
        elapsed, answer = dribble(sock, body[80:])
    assert elapsed < 2 * BODY_S
    assert answer.startswith(b"HTTP/1.1 408 ")
    deadline = time.monotonic() + 2
    while "slow-form" not in served.stopped and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.stopped.count("slow-form") == 1


@pytest.mark.slow
def test_ordinary_bodies_and_forms_pass(served: Served) -> None:
    with httpx.Client(base_url=served.url, trust_env=False, timeout=5) as client:
        echoed = client.post("/echo", content=b"x" * 100_000)
        form = client.post(
            "/form?id=ordinary",
            data={"name": "alice"},
            files={"bot": ("bot.py", b"print('hi')\n")},
        )
    assert echoed.status_code == 200 and echoed.json() == {"length": 100_000}
    assert form.status_code == 200 and form.json() == {"name": "alice", "bot": 12}


@pytest.mark.slow
def test_kept_alive_requests_pass_and_the_timer_restarts_per_request(served: Served) -> None:
    with served.connect() as sock:
        # The app takes longer than HEADER_S: the header timer is off while it works.
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: referee\r\n\r\n")
        status, _, body = read_response(sock)
        assert (status, body) == (b"HTTP/1.1 200 OK", b"done")
        # The second request's headers come in pieces, within HEADER_S of the first answer.
        second = b"GET / HTTP/1.1\r\nHost: referee\r\n\r\n"
        for piece in (second[:10], second[10:20], second[20:]):
            sock.sendall(piece)
            time.sleep(0.25)
        status, _, body = read_response(sock)
        assert (status, body) == (b"HTTP/1.1 200 OK", b"hello")
        # Idle, the connection is closed by the timer armed after the second answer
        # (uvicorn's own keep-alive limit is far longer).
        start = time.monotonic()
        select.select([sock], [], [], 5)
        assert read_until_closed(sock) == b""
        assert HEADER_S * 0.5 <= time.monotonic() - start < 2 * HEADER_S


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), "5", True])
def test_limits_that_are_not_positive_seconds_are_refused(seconds: object) -> None:
    with pytest.raises(UsageError, match="must be a"):
        guarded_config(
            make_app([]),
            "127.0.0.1",
            0,
            header_seconds=seconds,  # type: ignore[arg-type]
            body_seconds=1,
            chunk_seconds=1,
        )
    with pytest.raises(UsageError, match="chunk_seconds must be a"):
        ReadDeadline(make_app([]), body_seconds=1, chunk_seconds=seconds)  # type: ignore[arg-type]
