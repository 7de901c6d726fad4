"""The server benchmark's own parts (bench/server_bench.py), fast: its open-loop schedule,
its percentiles, its HTTP reading, and a generator that keeps its schedule however slowly
the server answers."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Awaitable, Callable

import pytest

from bench import server_bench
from bench.server_bench import Arrival, fetch, generate, percentile, ratio_of_medians, schedule


def test_the_schedule_is_each_client_once_a_period_at_a_seeded_phase() -> None:
    arrivals = schedule(200, 1.0, 5.0, seed=7)
    assert arrivals == sorted(arrivals)
    assert len(arrivals) == 1000  # every phase is below the period: 5 requests a client
    by_client: dict[int, list[Arrival]] = {}
    for arrival in arrivals:
        by_client.setdefault(arrival.client, []).append(arrival)
    assert sorted(by_client) == list(range(200))
    for client, own in by_client.items():
        assert 0.0 <= own[0].at < 1.0
        gaps = [b.at - a.at for a, b in itertools.pairwise(own)]
        assert all(math.isclose(g, 1.0) for g in gaps)
        # Alternating paths, out of step between neighbours.
        assert [a.path for a in own] == [server_bench.PATHS[(client + k) % 2] for k in range(5)]
    # Phases spread over the second: every tenth of it gets some of the load.
    assert {int(a.at * 10) % 10 for a in arrivals} == set(range(10))
    assert sum(a.path == "/" for a in arrivals) == 500
    assert schedule(200, 1.0, 5.0, seed=7) == arrivals
    assert schedule(200, 1.0, 5.0, seed=8) != arrivals
    faster = schedule(10, 4.0, 2.0, seed=1)
    assert len(faster) == 80 and max(a.at for a in faster) < 2.0


def test_percentiles_interpolate_between_ranks_as_numpy_does() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 3.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 90) == pytest.approx(4.6)
    assert percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))
    assert ratio_of_medians([9.0, 10.0, 11.0], [10.0, 12.0, 14.0]) == pytest.approx(10 / 12)
    assert math.isnan(ratio_of_medians([], [1.0]))


_Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _serve(handler: _Handler) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_fetch_reads_sized_and_chunked_answers_on_one_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            b"3\r\nabc\r\n4;x=1\r\ndefg\r\n0\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    async def main() -> list[tuple[int, int, bool]]:
        server, port = await _serve(handler)
        async with server:
            conn = await asyncio.open_connection("127.0.0.1", port)
            request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            got = [await fetch(*conn, request), await fetch(*conn, request)]
            conn[1].close()
            return got

    assert asyncio.run(main()) == [(200, 5, True), (404, 7, False)]


def test_a_slow_answer_does_not_slow_the_offered_load() -> None:
    """Open loop: client 0's first answer takes 0.5 s; its later requests still leave on
    time (on new connections), and that answer's latency counts from its scheduled time."""
    slow = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            if b"GET /slow" in head and not slow.is_set():
                slow.set()
                await asyncio.sleep(0.5)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    arrivals = [Arrival(0.0, 0, "/slow")] + [Arrival(0.1 * k, 0, "/") for k in range(1, 6)]
    arrivals += [Arrival(0.05 + 0.1 * k, 1, "/") for k in range(6)]

    async def main() -> server_bench.Outcome:
        server, port = await _serve(handler)
        async with server:
            return await generate(port, sorted(arrivals), time.time() + 0.1)

    outcome = asyncio.run(main())
    assert outcome.sent == 12 and not outcome.errors
    assert len(outcome.latencies) == 12
    assert max(outcome.lags) < 0.1  # every request left at its time, the slow one pending
    assert max(outcome.latencies) >= 0.5
    assert sorted(outcome.latencies)[-2] < 0.25  # the others were not held up behind it
    assert outcome.connections > 2  # client 0 opened more while its first was unanswered
