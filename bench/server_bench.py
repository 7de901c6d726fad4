"""The competition server under load: does the league keep its pace, and is an upload safe?

``python -m bench.server_bench [--window 20] [--runs 5] [--clients 200] [--rates
300,400,600] [--search-runs 2] [--search-window 15] [--uploads 50] [--workers 2] [--bots
16] [--skip-load] [--skip-search] [--skip-uploads]`` (``make bench-server``; not part of
``make bench``, ``make test`` or CI: it runs for several minutes and needs the ``server``
extra).

**The server.** A league file of ``--bots`` instant deterministic bots (tables of 4, the
default time limits, ``[server] checks = 1``, the default: one check at a time) in a
temporary folder, served by a real ``referee serve FILE --port P --workers 2`` (uvicorn,
the check queue, the publisher with its default ``--every``, and the league as its child
process ``referee league run``), exactly as an organiser starts it. The bench owns that
process group and stops it with SIGTERM at the end (SIGKILL if it does not stop).

**1. Load, open loop.** A load generator, a process of its own started with ``nice -n
10`` on the same machine, plays ``--clients`` clients at one request a second each. Every
arrival time is fixed before the window opens (:func:`schedule`: each client at a random
phase of its own, drawn from a seeded generator, then exactly one second apart), and a
request is sent at its time whether or not the answers before it have come: a slow answer
does not slow the offered load (an open loop; a closed loop, each client waiting for its
answer, would hide a slow server by asking less of it). Each client keeps one keep-alive
connection, opens another when its request falls due while the last is still unanswered,
and alternates the leaderboard page ``/`` and its JSON ``/api/v1/leaderboard``. A
request's latency runs from its *scheduled* time to the last byte of its answer, so a
generator that falls behind counts against the figures, never for them; how late the
generator itself sent (its lag) is printed beside them.

The generator speaks HTTP/1.1 over raw asyncio streams (a request line, the answer's
headers, ``Content-Length`` or chunked bytes), not ``httpx.AsyncClient``: httpx's client
spends many times the CPU per request of the server's own answer (measured with
``--client-cost``; figures in ``docs/performance.md``), and at ``nice 10`` on two cores
it would measure itself, not the server.

Windows with traffic and without alternate (``--runs`` pairs, the first of each pair
alternating too), each ``--window`` seconds; the league's rate in each is counted from its
own store: the matches whose ``finished`` time falls in the window (as
``tests/tournament/test_league_run.py`` counts done matches). Printed: requests per second
achieved, p50 and p99 latency, errors, and the league's matches per second with traffic
against without (the ratio of the medians, and pair by pair), each beside its target
(ratio >= 0.9, p99 < 100 ms). Then the same for each rate of ``--rates`` (as many clients
as requests a second, ``--search-runs`` pairs of ``--search-window`` seconds), in order,
stopping after the first that misses a target: the highest that holds both is printed.

**2. Uploads at once.** ``--uploads`` authors (added with
:class:`~referee.server.AuthorBook`) each send one bot at the same moment over the API.
Printed: how many were answered ``202``, the slowest and the median answer (target: each
within 1 s), whether every upload reached a verdict (polled on
``GET /api/v1/submissions/{id}``) and which, how many entries each author has in the league
file (target: exactly one each: none lost, none entered twice), and the time from the
uploads to the last verdict (the queue drained with ``checks = 1``).

**3. No false timeouts.** The bots answer at once, so a timeout in the league's matches is
the machine's doing. The results the store holds for the matches finished in every window
of both parts are read for faults: the timeouts are counted (target: none), every other
fault kind beside them, and the slowest replies of the league's bots with traffic and
without.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PATHS = ("/", "/api/v1/leaderboard")
TARGET_RATIO = 0.9
TARGET_P99_MS = 100.0
TARGET_ACCEPT_S = 1.0
REQUEST_TIMEOUT_S = 10.0
LEAD_S = 3.0
"""Seconds between starting the generator and its window: its imports and connections."""
LEAGUE = "open"
_REFEREE = (sys.executable, "-m", "referee")

BOT = """\
import json
import sys

STRATEGY = {strategy!r}


def choose(legal):
    if STRATEGY == "last":
        return legal[-1]
    if STRATEGY == "pass" and [] in legal:
        return []
    if STRATEGY == "pairs":
        return max(legal, key=len)
    return legal[0]


for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        reply = {{"type": "ready", "name": STRATEGY}}
    elif msg.get("type") == "act":
        hand = msg.get("hand") or []
        if msg["kind"] == "give":
            reply = {{"cards": hand[: msg["count"]]}}
        elif msg["kind"] == "leftover":
            reply = {{"take": msg["offer"][0], "discard": hand[0]}}
        else:
            reply = {{"cards": choose(msg.get("legal") or [[]])}}
    elif msg.get("type") == "bye":
        break
    else:
        continue
    reply["id"] = msg["id"]
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""
STRATEGIES = ("first", "last", "pass", "pairs")


# --------------------------------------------------------------------------- pure parts


@dataclass(frozen=True, order=True)
class Arrival:
    """One request of the open loop: when (seconds from the window's start), by whom, what."""

    at: float
    client: int
    path: str


def schedule(
    clients: int, per_s: float, seconds: float, seed: int, paths: Sequence[str] = PATHS
) -> list[Arrival]:
    """Every request of a window, sorted by time: client ``i`` starts at a phase drawn
    uniformly in ``[0, 1 / per_s)`` (seeded), then asks every ``1 / per_s`` seconds until
    ``seconds``, alternating ``paths`` (client ``i``'s ``k``-th request asks
    ``paths[(i + k) % len(paths)]``, so that each path gets half of every instant's load)."""
    rng = random.Random(f"server bench {seed}")
    period = 1.0 / per_s
    arrivals = []
    for client in range(clients):
        phase, k = rng.uniform(0.0, period), 0
        while phase + k * period < seconds:
            path = paths[(client + k) % len(paths)]
            arrivals.append(Arrival(phase + k * period, client, path))
            k += 1
    return sorted(arrivals)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0 to 100) of ``values``, interpolated linearly between the
    two nearest ranks (numpy's default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ratio_of_medians(traffic: Sequence[float], quiet: Sequence[float]) -> float:
    """The median of ``traffic`` over the median of ``quiet`` (NaN when either is empty
    or the quiet median is 0)."""
    if not traffic or not quiet or statistics.median(quiet) == 0:
        return math.nan
    return statistics.median(traffic) / statistics.median(quiet)


# --------------------------------------------------------------------------- the generator


class HttpError(Exception):
    """An answer the generator could not read as HTTP/1.1."""


async def fetch(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, int, bool]:
    """Send ``request`` on a keep-alive connection and read its whole answer: ``(status,
    body bytes, whether the connection may be used again)``."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HttpError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        size = int(headers["content-length"])
        await reader.readexactly(size)
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        size = 0
        while True:
            chunk = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(chunk + 2)
            size += chunk
            if chunk == 0:
                break
    else:
        raise HttpError("an answer with neither Content-Length nor chunks")
    return int(parts[1]), size, headers.get("connection", "").lower() != "close"


@dataclass
class Outcome:
    """What the generator measured in one window (times in seconds)."""

    latencies: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    sent: int = 0
    connections: int = 0
    elapsed: float = 0.0

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def generate(port: int, arrivals: Sequence[Arrival], start_at: float) -> Outcome:
    """Play ``arrivals`` against ``127.0.0.1:port`` from the Unix time ``start_at``: one
    keep-alive connection per client opened before it, another whenever a request falls
    due while the client's connections are all busy (see the module docstring)."""
    outcome = Outcome()
    idle: dict[int, list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {}

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        outcome.connections += 1
        return await asyncio.open_connection("127.0.0.1", port)

    for client in sorted({a.client for a in arrivals}):
        idle[client] = [await connect()]
    requests = {
        path: f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\n\r\n".encode()
        for path in {a.path for a in arrivals}
    }
    loop = asyncio.get_running_loop()
    origin = loop.time() + (start_at - time.time())

    async def one(arrival: Arrival) -> None:
        pool = idle[arrival.client]
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                conn = pool.pop() if pool else await connect()
                status, _, again = await fetch(*conn, requests[arrival.path])
        except TimeoutError:
            outcome.error("timeout")
            return
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, HttpError) as e:
            outcome.error(type(e).__name__)
            return
        outcome.latencies.append(loop.time() - origin - arrival.at)
        if status != 200:
            outcome.error(f"HTTP {status}")
        if again:
            pool.append(conn)
        else:
            conn[1].close()

    tasks = []
    for arrival in arrivals:
        delay = origin + arrival.at - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        outcome.lags.append(max(0.0, loop.time() - origin - arrival.at))
        tasks.append(asyncio.create_task(one(arrival)))
        outcome.sent += 1
    await asyncio.gather(*tasks)
    outcome.elapsed = loop.time() - origin
    for pool in idle.values():
        for _, writer in pool:
            writer.close()
    return outcome


def generator_main(args: argparse.Namespace) -> int:
    """``--generate``: one window of load; its :class:`Outcome` as JSON on stdout."""
    arrivals = schedule(args.clients, 1.0, args.seconds, args.seed)
    outcome = asyncio.run(generate(args.port, arrivals, args.start_at))
    json.dump(outcome.__dict__, sys.stdout)
    return 0


# --------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_league(folder: Path, bots: int) -> Path:
    """A league file of ``bots`` instant bots (tables of 4, the default time limits,
    ``[server] checks = 1``, no wait between two uploads of an author)."""
    (folder / "bots").mkdir(parents=True, exist_ok=True)
    entries = []
    for i in range(bots):
        name = f"b{i:02d}"
        (folder / "bots" / f"{name}.py").write_text(BOT.format(strategy=STRATEGIES[i % 4]))
        entries.append(f'[[bots]]\npath = "bots/{name}.py"\nname = "{name}"\n')
    path = folder / f"{LEAGUE}.toml"
    path.write_text(
        f'name = "{LEAGUE}"\nrules = {{ preset = "arschloch", target = 3 }}\ntable_size = 4\n'
        'format = "league"\nseed = 3\n[league]\npoll_seconds = 5\n'
        '[sandbox]\nbackend = "process"\nmemory_mb = 256\n'
        "[server]\nchecks = 1\ninterval_seconds = 0\n\n" + "\n".join(entries)
    )
    return path


@dataclass
class Serve:
    """A running ``referee serve`` of the bench's own (its process group)."""

    path: Path
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def results(self) -> Path:
        return self.path.parent / f"{LEAGUE}.results"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@contextlib.contextmanager
def serving(path: Path, workers: int) -> Iterator[Serve]:
    """``referee serve path --port P --workers N``, answering, stopped at the end."""
    import httpx

    port = free_port()
    log = path.parent / "serve.log"
    with log.open("ab") as handle:
        process = subprocess.Popen(
            [*_REFEREE, "serve", str(path), "--port", str(port), "--workers", str(workers)],
            cwd=path.parent,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Serve(path, port, process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"referee serve did not answer:\n{server.tail()}")
            with contextlib.suppress(httpx.HTTPError):
                url = f"http://127.0.0.1:{port}/api/v1/leaderboard"
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- the store


def _read(results: Path, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    database = results / "results.sqlite"
    with contextlib.closing(
        sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    ) as db:
        return db.execute(sql, tuple(args)).fetchall()


def done_between(results: Path, start: float, end: float) -> int:
    """Matches stored as done with their ``finished`` time in ``[start, end)``."""
    rows = _read(
        results,
        "SELECT COUNT(*) FROM matches WHERE status = 'done' AND finished >= ? AND finished < ?",
        (start, end),
    )
    return int(rows[0][0])


def done_total(results: Path) -> int:
    try:
        return int(_read(results, "SELECT COUNT(*) FROM matches WHERE status = 'done'")[0][0])
    except sqlite3.OperationalError:  # no store yet
        return 0


def faults_between(results: Path, spans: Sequence[tuple[float, float]]) -> dict[str, int]:
    """Faults by kind in the results of the matches finished within ``spans``; ``failed``
    counts matches the league gave up on (a failure on the referee's side)."""
    found: dict[str, int] = {}
    for start, end in spans:
        rows = _read(
            results,
            "SELECT r.fault_kind, COUNT(*) FROM results r JOIN matches m ON m.key = r.match_key "
            "WHERE r.fault_kind IS NOT NULL AND m.finished >= ? AND m.finished < ? "
            "GROUP BY r.fault_kind",
            (start, end),
        )
        failed = _read(
            results,
            "SELECT COUNT(*) FROM matches WHERE status = 'failed' AND finished >= ? "
            "AND finished < ?",
            (start, end),
        )
        for kind, count in [*rows, ("failed", failed[0][0])]:
            if count:
                found[kind] = found.get(kind, 0) + int(count)
    return found


def replies_between(results: Path, spans: Sequence[tuple[float, float]]) -> list[int]:
    """Every reply time (ms) of the league's bots in the matches finished within ``spans``."""
    replies: list[int] = []
    for start, end in spans:
        rows = _read(
            results,
            "SELECT r.reply_ms FROM results r JOIN matches m ON m.key = r.match_key "
            "WHERE m.finished >= ? AND m.finished < ? AND r.reply_ms IS NOT NULL",
            (start, end),
        )
        for (text,) in rows:
            replies.extend(json.loads(text))
    return replies


# --------------------------------------------------------------------------- 1. load


@dataclass
class Window:
    """One window of the league's play, with ``clients`` of traffic (0: none)."""

    clients: int
    start: float
    end: float
    outcome: Outcome | None = None
    matches: int = 0

    @property
    def per_s(self) -> float:
        return self.matches / (self.end - self.start)


def run_window(server: Serve, clients: int, seconds: float, seed: int) -> Window:
    """``seconds`` of the league with ``clients`` of open-loop traffic from a generator at
    ``nice -n 10`` (none when 0); the window opens once the generator is connected."""
    if not clients:
        start = time.time() + 0.5
        time.sleep(start + seconds - time.time())
        return Window(0, start, start + seconds)
    start = time.time() + LEAD_S
    command = ["nice", "-n", "10", sys.executable, "-m", "bench.server_bench", "--generate"]
    command += ["--port", str(server.port), "--clients", str(clients)]
    command += ["--seconds", str(seconds), "--start-at", repr(start), "--seed", str(seed)]
    done = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=LEAD_S + seconds + REQUEST_TIMEOUT_S + 120,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"the load generator failed ({done.returncode}):\n{done.stderr}")
    outcome = Outcome(**json.loads(done.stdout))
    return Window(clients, start, start + seconds, outcome)


def interleaved(
    server: Serve, clients: int, runs: int, seconds: float, seed: int
) -> list[tuple[Window, Window]]:
    """``runs`` pairs (with traffic, without), the first of each pair alternating; each
    window's matches counted from the store once all are over."""
    pairs = []
    for run in range(runs):
        order = (clients, 0) if run % 2 == 0 else (0, clients)
        first, second = (run_window(server, c, seconds, seed + run) for c in order)
        busy, quiet = (first, second) if first.clients else (second, first)
        pairs.append((busy, quiet))
    time.sleep(2.0)  # the last results stored
    for busy, quiet in pairs:
        for window in (busy, quiet):
            window.matches = done_between(server.results, window.start, window.end)
    return pairs


@dataclass(frozen=True)
class LoadFigures:
    """The medians over a set of pairs."""

    offered: float
    achieved: float
    p50_ms: float
    p99_ms: float
    pooled_p99_ms: float
    lag_p99_ms: float
    errors: int
    busy_per_s: float
    quiet_per_s: float
    ratio: float

    @property
    def holds(self) -> bool:
        return self.ratio >= TARGET_RATIO and self.p99_ms < TARGET_P99_MS and not self.errors


def figures_of(pairs: Sequence[tuple[Window, Window]]) -> LoadFigures:
    outcomes = [busy.outcome for busy, _ in pairs if busy.outcome is not None]
    seconds = pairs[0][0].end - pairs[0][0].start
    return LoadFigures(
        offered=pairs[0][0].clients,
        achieved=statistics.median(len(o.latencies) / seconds for o in outcomes),
        p50_ms=1000 * statistics.median(percentile(o.latencies, 50) for o in outcomes),
        p99_ms=1000 * statistics.median(percentile(o.latencies, 99) for o in outcomes),
        pooled_p99_ms=1000 * percentile([x for o in outcomes for x in o.latencies], 99),
        lag_p99_ms=1000 * statistics.median(percentile(o.lags, 99) for o in outcomes),
        errors=sum(sum(o.errors.values()) for o in outcomes),
        busy_per_s=statistics.median(b.per_s for b, _ in pairs),
        quiet_per_s=statistics.median(q.per_s for _, q in pairs),
        ratio=ratio_of_medians([b.per_s for b, _ in pairs], [q.per_s for _, q in pairs]),
    )


def _ok(met: bool) -> str:
    return "OK" if met else "MISSED"


def print_pairs(pairs: Sequence[tuple[Window, Window]]) -> None:
    for run, (busy, quiet) in enumerate(pairs, start=1):
        o = busy.outcome
        assert o is not None
        seconds = busy.end - busy.start
        errors = ", ".join(f"{k} {v}" for k, v in sorted(o.errors.items())) or "0"
        ms = [1000 * x for x in o.latencies] or [math.nan]
        print(
            f"  run {run}: {len(o.latencies) / seconds:6.1f} req/s answered of "
            f"{o.sent / seconds:.1f} sent, p50 {percentile(ms, 50):5.1f} ms, p99 "
            f"{percentile(ms, 99):6.1f} ms, max {max(ms):6.1f} ms, errors {errors}, "
            f"generator lag p99 {1000 * percentile(o.lags, 99):5.1f} ms, "
            f"{o.connections} connections; league {busy.per_s:5.2f} matches/s with traffic, "
            f"{quiet.per_s:5.2f} without ({busy.per_s / quiet.per_s:.2f}x)"
        )


def load(
    server: Serve, clients: int, runs: int, seconds: float
) -> tuple[LoadFigures, list[tuple[Window, Window]]]:
    """Part 1 at ``clients`` requests a second: the pairs, printed; their medians."""
    print(
        f"load: {clients} clients at 1 request/s each, open loop, alternating {' and '.join(PATHS)}"
        f", from a generator at nice 10; {runs} interleaved pairs of {seconds:g} s windows "
        f"(load average {os.getloadavg()[0]:.1f} at the start)"
    )
    pairs = interleaved(server, clients, runs, seconds, seed=clients * 100)
    print_pairs(pairs)
    f = figures_of(pairs)
    print(
        f"  medians of {runs}: {f.achieved:.1f} req/s of {f.offered:.0f} offered, p50 "
        f"{f.p50_ms:.1f} ms, p99 {f.p99_ms:.1f} ms (target < {TARGET_P99_MS:.0f} ms) "
        f"{_ok(f.p99_ms < TARGET_P99_MS)} (p99 of all requests pooled {f.pooled_p99_ms:.1f} ms; "
        f"generator lag p99 {f.lag_p99_ms:.1f} ms), errors {f.errors} (target 0) "
        f"{_ok(not f.errors)}"
    )
    pair_ratios = sorted(b.per_s / q.per_s for b, q in pairs)
    print(
        f"  league: {f.busy_per_s:.2f} matches/s with traffic, {f.quiet_per_s:.2f} without: "
        f"ratio {f.ratio:.2f}x (target >= {TARGET_RATIO}) {_ok(f.ratio >= TARGET_RATIO)}; "
        f"pair by pair {', '.join(f'{r:.2f}x' for r in pair_ratios)} "
        f"(load average {os.getloadavg()[0]:.1f} at the end)"
    )
    return f, pairs


def search(
    server: Serve, rates: Sequence[int], runs: int, seconds: float, base: LoadFigures
) -> list[tuple[Window, Window]]:
    """The rates in order, ``runs`` pairs each, until one misses a target; the table and
    the highest that holds both. Returns every pair played (for part 3)."""
    print(
        f"highest rate: {runs} interleaved pairs of {seconds:g} s windows a rate, as many clients "
        "as requests a second, stopping after the first rate that misses a target"
    )
    rows, played = [base], []
    for rate in rates:
        pairs = interleaved(server, rate, runs, seconds, seed=rate * 100)
        played += pairs
        rows.append(figures_of(pairs))
        if not rows[-1].holds:
            break
    print(
        "  req/s offered | answered |  p50 ms |  p99 ms | errors | matches/s with/without "
        "| ratio | both"
    )
    for r in rows:
        print(
            f"  {r.offered:13.0f} | {r.achieved:8.1f} | {r.p50_ms:7.1f} | {r.p99_ms:7.1f} | "
            f"{r.errors:6d} | {r.busy_per_s:10.2f} / {r.quiet_per_s:<9.2f} | {r.ratio:5.2f} | "
            f"{'yes' if r.holds else 'no'}"
        )
    held = [r.offered for r in rows if r.holds]
    print(
        f"  highest rate holding both targets (ratio >= {TARGET_RATIO}, p99 < "
        f"{TARGET_P99_MS:.0f} ms, no error): "
        + (f"{max(held):.0f} req/s" if held else "none of those tried")
    )
    return played


# --------------------------------------------------------------------------- 2. uploads


@dataclass
class UploadFigures:
    answers: dict[str, tuple[int, float]]
    """Each author's upload: HTTP status, seconds to the answer."""
    verdicts: dict[str, tuple[str, float]]
    """Each author's verdict and when it came (seconds from the uploads)."""
    entries: dict[str, int]
    """Each author's entries in the league file."""
    start: float
    end: float


def add_authors(server: Serve, count: int) -> dict[str, str]:
    """``count`` authors in the server's book; their tokens by name."""
    from referee.server import AuthorBook

    tokens = {}
    with AuthorBook(server.results) as book:
        for i in range(count):
            tokens[f"u{i:02d}"] = book.add(f"u{i:02d}", actor="bench", role="author").token
    return tokens


async def _upload_all(
    url: str, tokens: dict[str, str], timeout: float
) -> tuple[dict[str, tuple[int, float]], dict[str, tuple[str, float]]]:
    """Every author's bot sent at once; the answers, then every verdict polled for."""
    import httpx

    def auth(author: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens[author]}"}

    limits = httpx.Limits(max_connections=len(tokens) + 10)
    async with httpx.AsyncClient(base_url=url, timeout=60.0, limits=limits) as client:
        ids: dict[str, str] = {}

        async def send(author: str) -> tuple[int, float]:
            source = f"# {author}'s bot\n" + BOT.format(strategy=STRATEGIES[len(ids) % 4])
            files = {"bot": (f"{author}.py", source.encode())}
            started = time.perf_counter()
            answer = await client.post(
                "/api/v1/submissions", files=files, data={"name": author}, headers=auth(author)
            )
            took = time.perf_counter() - started
            if answer.status_code == 202:
                ids[author] = answer.json()["id"]
            return answer.status_code, took

        origin = time.perf_counter()
        answers = dict(zip(tokens, await asyncio.gather(*(send(a) for a in tokens)), strict=True))
        verdicts: dict[str, tuple[str, float]] = {}
        while len(verdicts) < len(ids) and time.perf_counter() - origin < timeout:
            await asyncio.sleep(1.0)
            waiting = [a for a in ids if a not in verdicts]
            polls = await asyncio.gather(
                *(client.get(f"/api/v1/submissions/{ids[a]}", headers=auth(a)) for a in waiting)
            )
            for author, poll in zip(waiting, polls, strict=True):
                status = poll.json().get("status") if poll.status_code == 200 else None
                if status in ("accepted", "refused"):
                    verdicts[author] = (status, time.perf_counter() - origin)
    return answers, verdicts


def uploads(server: Serve, count: int, timeout: float = 900.0) -> UploadFigures:
    """Part 2: ``count`` authors upload at once; printed, and the figures."""
    tokens = add_authors(server, count)
    print(
        f"uploads: {count} authors upload one bot each at the same moment (POST "
        "/api/v1/submissions), [server] checks = 1 (the default: one check at a time), the "
        f"league playing on (load average {os.getloadavg()[0]:.1f})"
    )
    start = time.time()
    answers, verdicts = asyncio.run(_upload_all(f"http://127.0.0.1:{server.port}", tokens, timeout))
    end = time.time()
    text = server.path.read_text()
    entries = {a: len(re.findall(rf'^author = "{a}"$', text, re.M)) for a in tokens}
    figures = UploadFigures(answers, verdicts, entries, start, end)
    print_uploads(figures)
    return figures


def print_uploads(f: UploadFigures) -> None:
    count = len(f.answers)
    accepted = [t for s, t in f.answers.values() if s == 202]
    statuses = sorted({s for s, _ in f.answers.values()})
    slowest = max(t for _, t in f.answers.values())
    print(
        f"  answered 202: {len(accepted)} of {count} (statuses {statuses}); slowest answer "
        f"{slowest:.2f} s, median {statistics.median(t for _, t in f.answers.values()):.2f} s "
        f"(target: each within {TARGET_ACCEPT_S:g} s) "
        f"{_ok(len(accepted) == count and slowest <= TARGET_ACCEPT_S)}"
    )
    kinds = {k: sum(1 for v, _ in f.verdicts.values() if v == k) for k in ("accepted", "refused")}
    lost = [a for a, (s, _) in f.answers.items() if s == 202 and a not in f.verdicts]
    print(
        f"  checked: {len(f.verdicts)} of {len(accepted)} reached a verdict ({kinds['accepted']} "
        f"accepted, {kinds['refused']} refused), lost {len(lost)} (target 0) {_ok(not lost)}"
    )
    once = sum(1 for n in f.entries.values() if n == 1)
    twice = sorted(a for a, n in f.entries.items() if n > 1)
    missing = sorted(
        a for a, n in f.entries.items() if n == 0 and f.verdicts.get(a, ("",))[0] == "accepted"
    )
    print(
        f"  entries in the league file: {once} authors entered once, {len(twice)} twice or more"
        f"{f' {twice}' if twice else ''}, {len(missing)} accepted but absent"
        f"{f' {missing}' if missing else ''} (target: every "
        f"accepted upload entered exactly once) {_ok(not twice and not missing)}"
    )
    drained = max((t for _, t in f.verdicts.values()), default=math.nan)
    print(
        f"  queue drained (uploads sent to the last verdict): {drained:.1f} s, "
        f"{drained / max(1, len(f.verdicts)):.2f} s a check"
    )


# --------------------------------------------------------------------------- 3. timeouts


def timeouts(
    server: Serve, busy: Sequence[Window], quiet: Sequence[Window], up: UploadFigures | None
) -> None:
    """Part 3: faults in the league's matches during every window of both parts."""
    parts = [
        ("with traffic", [(w.start, w.end) for w in busy]),
        ("without", [(w.start, w.end) for w in quiet]),
    ]
    if up is not None:
        parts.append(("during the uploads", [(up.start, up.end)]))
    total = 0
    for label, spans in parts:
        matches = sum(done_between(server.results, s, e) for s, e in spans)
        faults = faults_between(server.results, spans)
        replies = replies_between(server.results, spans)
        total += faults.get("timeout", 0)
        others = ", ".join(f"{k} {v}" for k, v in sorted(faults.items()) if k != "timeout")
        print(
            f"  {label}: {faults.get('timeout', 0)} timeouts in {matches} matches "
            f"(other faults: {others or 'none'}); the bots' replies p99 "
            f"{percentile(replies, 99):.0f} ms, max {max(replies or [0])} ms of {len(replies)}"
        )
    print(f"  timeouts in all: {total} (target 0) {_ok(total == 0)}")


# --------------------------------------------------------------------------- the client's cost


async def _client_cpu(port: int, requests: int, concurrency: int, raw: bool) -> float:
    """CPU seconds of this process per request for ``requests`` leaderboard requests,
    ``concurrency`` at a time (closed loop), by raw streams or by ``httpx.AsyncClient``."""
    import httpx

    path = PATHS[1]
    per = requests // concurrency
    if raw:
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(concurrency)]
        line = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()

        async def worker(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
            for _ in range(per):
                await fetch(*conn, line)

        started = time.process_time()
        await asyncio.gather(*(worker(c) for c in conns))
        spent = time.process_time() - started
        for _, writer in conns:
            writer.close()
        return spent / (per * concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits) as client:
        await client.get(path)

        async def worker_httpx() -> None:
            for _ in range(per):
                (await client.get(path)).read()

        started = time.process_time()
        await asyncio.gather(*(worker_httpx() for _ in range(concurrency)))
        return (time.process_time() - started) / (per * concurrency)


def client_cost(server: Serve, requests: int = 1000, concurrency: int = 20) -> None:
    """Why the generator speaks raw HTTP: its CPU per request beside httpx's, in turns."""
    raw, hx = [], []
    for _ in range(2):
        raw.append(asyncio.run(_client_cpu(server.port, requests, concurrency, raw=True)))
        hx.append(asyncio.run(_client_cpu(server.port, requests, concurrency, raw=False)))
    print(
        f"client cost: {requests} leaderboard requests {concurrency} at a time, the client's "
        f"CPU per request: raw asyncio streams {1e3 * min(raw):.3f} ms, httpx.AsyncClient "
        f"{1e3 * min(hx):.3f} ms ({min(hx) / min(raw):.1f}x; best of 2 each, in turns)"
    )


# --------------------------------------------------------------------------- main


def warm_up(server: Serve, seconds: float) -> None:
    """Until the league has stored matches, then ``seconds`` more: its pool at work."""
    deadline = time.monotonic() + 120
    while done_total(server.results) == 0:
        if time.monotonic() > deadline or server.process.poll() is not None:
            raise RuntimeError(f"the league stored no match in 2 minutes:\n{server.tail()}")
        time.sleep(0.5)
    time.sleep(seconds)


def run(args: argparse.Namespace) -> int:
    from bench import installed_bytecode

    print(installed_bytecode())
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="server-bench-") as tmp:
        path = write_league(Path(tmp), args.bots)
        with serving(path, args.workers) as server:
            print(
                f"referee serve {path.name} --workers {args.workers}: {args.bots} instant bots, "
                f"tables of 4, default time limits, port {server.port}; {os.cpu_count()} cores"
            )
            warm_up(server, 10.0)
            client_cost(server)
            busy: list[Window] = []
            quiet: list[Window] = []
            if not args.skip_load:
                base, played = load(server, args.clients, args.runs, args.window)
                if not args.skip_search and args.rates:
                    played += search(server, args.rates, args.search_runs, args.search_window, base)
                busy += [b for b, _ in played]
                quiet += [q for _, q in played]
            up = None if args.skip_uploads else uploads(server, args.uploads)
            time.sleep(2.0)
            print("timeouts in the league's matches (its bots answer at once: any is false)")
            timeouts(server, busy, quiet, up)
            if server.process.poll() is not None:
                print(f"referee serve ended early:\n{server.tail()}")
                return 1
    print(f"(the whole bench: {time.monotonic() - began:.0f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=20.0, help="seconds a window")
    parser.add_argument("--runs", type=int, default=5, help="pairs of windows at --clients")
    parser.add_argument("--clients", type=int, default=200, help="clients at 1 request/s each")
    parser.add_argument(
        "--rates",
        type=lambda text: [int(r) for r in text.split(",") if r],
        default=[300, 400, 600],
        help="requests/s to try after --clients, in order (comma-separated)",
    )
    parser.add_argument("--search-runs", type=int, default=2)
    parser.add_argument("--search-window", type=float, default=15.0)
    parser.add_argument("--uploads", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2, help="the league's workers")
    parser.add_argument("--bots", type=int, default=16, help="the league's bots at the start")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--skip-uploads", action="store_true")
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.generate:
        return generator_main(args)
    return run(args)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
