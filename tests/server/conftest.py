"""A real competition server for the tests: ``referee serve`` on a loopback port of its own.

:func:`start_server` writes a league of three instant deterministic bots (the tournament
tests' bots, :mod:`tests.tournament.conftest`) in the test's folder, adds authors with
:class:`referee.server.AuthorBook`, starts ``referee serve`` as a child process on a port
it found free, waits until it answers, and stops it (SIGTERM, then SIGKILL) when the test
ends: the test owns that process and nothing else.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from referee.server import AuthorBook
from tests.tournament.conftest import MARKER, REFEREE, STRATEGIES, write_bot

__all__ = ["Server", "free_port", "write_league"]

LEAGUE = "open"


def free_port() -> int:
    """A port free on the loopback now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_league(folder: Path, *, server: str = "", league: str = "", bots: int = 3) -> Path:
    """A league file of ``bots`` instant bots in ``folder``, with ``[server]`` and
    ``[league]`` lines added."""
    (folder / "bots").mkdir(parents=True, exist_ok=True)
    entries = []
    for i in range(bots):
        name = f"{MARKER}-{chr(ord('a') + i)}"
        write_bot(folder / "bots", name, STRATEGIES[i % len(STRATEGIES)])
        entries.append(f'[[bots]]\npath = "bots/{name}.py"\nname = "p{i}"\n')
    path = folder / f"{LEAGUE}.toml"
    path.write_text(
        f'name = "{LEAGUE}"\nrules = {{ preset = "arschloch", target = 3 }}\ntable_size = 3\n'
        'format = "league"\nseed = 3\n'
        f"[league]\nplacement = 1\npoll_seconds = 1\nbatch = 2\n{league}\n"
        "[time]\nmove_ms = 2000\nbank_ms = 5000\nhello_ms = 10000\n"
        '[sandbox]\nbackend = "process"\nmemory_mb = 256\n'
        f"[server]\n{server}\n{_unless('interval_seconds', server)}\n\n" + "\n".join(entries)
    )
    return path


def _unless(key: str, given: str) -> str:
    """No wait between two uploads in a test, unless the test sets it."""
    return "" if key in given else f"{key} = 0"


@dataclass
class Server:
    """A running ``referee serve`` and what the test needs to talk to it."""

    path: Path
    port: int
    process: subprocess.Popen[str]
    log: Path
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def results(self) -> Path:
        return self.path.parent / f"{LEAGUE}.results"

    def client(self, author: str | None = None, **kw: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[author]}"} if author else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0, **kw)  # type: ignore[arg-type]

    def add_author(self, name: str, *, organiser: bool = False) -> str:
        with AuthorBook(self.results) as book:
            made = book.add(name, actor="test", role="organiser" if organiser else "author")
        self.tokens[name] = made.token
        return made.token

    def wait_verdict(self, author: str, sid: str, timeout: float = 90.0) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        with self.client(author) as client:
            while time.monotonic() < deadline:
                body = client.get(f"/api/v1/submissions/{sid}").json()
                if body["status"] in ("accepted", "refused"):
                    return dict(body)
                time.sleep(0.3)
        raise AssertionError(f"no verdict for {sid} within {timeout} s:\n{self.log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


def start(path: Path, *args: str, port: int | None = None) -> Server:
    """``referee serve path`` on a port of its own, answering (or ``AssertionError``)."""
    port = port or free_port()
    log = path.parent / f"serve-{port}.log"
    handle = log.open("a")
    process = subprocess.Popen(
        [str(REFEREE), "serve", str(path), "--port", str(port), "--every", "1", *args],
        cwd=path.parent,
        stdout=handle,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    handle.close()
    server = Server(path, port, process, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"referee serve ended ({process.returncode}):\n{log.read_text()}")
        try:
            if httpx.get(f"{server.url}/api/v1/leaderboard", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.stop(signal.SIGKILL)
    raise AssertionError(f"referee serve did not answer within 60 s:\n{log.read_text()}")


@pytest.fixture
def serve_league(tmp_path: Path) -> Iterator[list[Server]]:
    """The servers a test starts (``serve_league.append(start(...))``), stopped at its end,
    every one of their process groups killed if they do not stop."""
    servers: list[Server] = []
    yield servers
    for server in servers:
        server.stop()
        if server.process.poll() is None:  # pragma: no cover - stop() killed it
            os.killpg(server.process.pid, signal.SIGKILL)


def bot_source(strategy: str = "pairs") -> bytes:
    """The bytes of an instant deterministic single-file bot."""
    from tests.tournament.conftest import BOT_TEMPLATE

    return BOT_TEMPLATE.format(strategy=strategy).encode()
