"""The clocks: the real one is the loop's, the fake one (referee.testing.FakeClock) jumps
to the next timer once every task waits, serves ready I/O first, and runs on its own loop."""

from __future__ import annotations

import asyncio
import os

import pytest

from referee.clock import Clock, MonotonicClock
from referee.testing import FakeClock


def test_the_real_clock_is_the_loops_clock() -> None:
    async def go() -> tuple[float, float, float]:
        loop = asyncio.get_running_loop()
        return loop.time(), MonotonicClock().monotonic(), loop.time()

    before, clock, after = asyncio.run(go())
    assert before <= clock <= after


def test_the_fake_clock_waits_out_timers_in_order_at_their_virtual_time() -> None:
    clock = FakeClock(start=100.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float, on: Clock) -> None:
        await on.sleep(seconds)
        woke.append((name, on.monotonic()))

    async def go() -> None:
        await asyncio.gather(sleeper("hour", 3600, clock), sleeper("second", 1, clock))
        with pytest.raises(TimeoutError):
            async with clock.timeout(2.5):
                await asyncio.Event().wait()  # nothing ever sets it

    clock.run(go())
    assert woke == [("second", 101.0), ("hour", 3700.0)]
    assert clock.monotonic() == 3702.5


def test_the_fake_clock_serves_ready_input_before_it_jumps() -> None:
    clock = FakeClock()
    r, w = os.pipe()

    async def go() -> bytes:
        loop = asyncio.get_running_loop()
        got: asyncio.Future[bytes] = loop.create_future()
        loop.add_reader(r, lambda: got.done() or got.set_result(os.read(r, 100)))
        try:
            async with clock.timeout(10):
                os.write(w, b"ready\n")
                return await got
        finally:
            loop.remove_reader(r)

    try:
        assert clock.run(go()) == b"ready\n"
    finally:
        os.close(r)
        os.close(w)
    assert clock.monotonic() == 0.0, "no time passed: the line was there"


def test_the_fake_clock_refuses_another_loop_and_going_backwards() -> None:
    clock = FakeClock()

    async def on_a_plain_loop() -> None:
        await clock.sleep(1)

    with pytest.raises(RuntimeError, match=r"run the coroutine with clock.run"):
        asyncio.run(on_a_plain_loop())
    with pytest.raises(ValueError, match="time does not go backwards"):
        clock.advance(-1)
    clock.advance(0.25)
    assert clock.monotonic() == 0.25
