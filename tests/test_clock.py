"""The clocks: the real one is the loop's, the fake one (referee.testing.FakeClock) jumps
to the next timer once every task waits, serves ready I/O first, and runs on its own loop."""

from __future__ import annotations

import asyncio
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
        loop.add_reader(r, lambda: got.done() or got.set_result(os.read(r, 100)))  # type: ignore[func-returns-value]
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


# -- the alarm: asyncio.timeout_at for a task's successive waits, one timer kept ------------

Block = tuple[int, int, list[tuple[str, int]]]  # idle before, budget, the waits (ms)

BLOCKS = st.lists(
    st.tuples(
        st.integers(0, 40),
        st.integers(1, 50),
        st.lists(st.tuples(st.sampled_from(["sleep", "reply"]), st.integers(0, 30)), max_size=3),
    ),
    max_size=8,
)


def _timed(blocks: list[Block], alarm: bool) -> list[tuple[str, float]]:
    """Each block's outcome and the virtual time it ended at, timed by an alarm or by
    ``asyncio.timeout_at``. A ``reply`` wait is a fake bot's: the clock moves, then the
    answer comes in the loop's next turn. Times are to the nanosecond: a timer the alarm
    kept can make the fake clock jump to a deadline in two steps, which float sums may
    leave a last bit apart."""
    clock = FakeClock()

    async def wait(kind: str, ms: int) -> None:
        if kind == "sleep":
            await asyncio.sleep(ms / 1000)
            return
        clock.advance(ms / 1000)
        answer = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(answer.set_result, None)
        await answer

    async def go() -> list[tuple[str, float]]:
        timer = clock.alarm()
        seen = []
        for idle, budget, waits in blocks:
            await asyncio.sleep(idle / 1000)
            when = clock.monotonic() + budget / 1000
            try:
                if alarm:
                    with timer.at(when):
                        for kind, ms in waits:
                            await wait(kind, ms)
                else:
                    async with asyncio.timeout_at(when):
                        for kind, ms in waits:
                            await wait(kind, ms)
                seen.append(("done", round(clock.monotonic(), 9)))
            except TimeoutError:
                seen.append(("timeout", round(clock.monotonic(), 9)))
        return seen

    return clock.run(go())


@settings(max_examples=200, deadline=None)
@given(BLOCKS)
def test_an_alarm_times_blocks_as_asyncio_timeout_at_does(blocks: list[Block]) -> None:
    assert _timed(blocks, alarm=True) == _timed(blocks, alarm=False)


def test_an_alarm_keeps_its_timer_for_later_deadlines_and_passes_other_cancels_on() -> None:
    clock = FakeClock()

    async def go() -> tuple[int, int, bool]:
        loop = asyncio.get_running_loop()
        alarm = clock.alarm()
        for i in range(5):
            with alarm.at(loop.time() + 10 + i):
                await asyncio.sleep(0.001)
        timers = len(loop._scheduled)  # type: ignore[attr-defined]
        armed = alarm._handle is not None
        task = asyncio.current_task()
        assert task is not None
        loop.call_soon(task.cancel)
        with pytest.raises(asyncio.CancelledError), alarm.at(loop.time() + 10):
            await asyncio.sleep(1)
        task.uncancel()
        with alarm.at(loop.time() + 1):
            nested = alarm.at(loop.time() + 1)
            with pytest.raises(RuntimeError, match="do not nest"):
                nested.__enter__()
        alarm.cancel()
        return timers, len([h for h in loop._scheduled if not h.cancelled()]), armed  # type: ignore[attr-defined]

    timers, left, armed = clock.run(go())
    assert (timers, armed) == (1, True), "one timer kept for five requests"
    assert left == 0, "cancelled: no timer waits with a bot in a pool"


def test_a_fake_clocks_alarm_refuses_another_loop() -> None:
    async def on_a_plain_loop() -> None:
        FakeClock().alarm()

    with pytest.raises(RuntimeError, match=r"run the coroutine with clock.run"):
        asyncio.run(on_a_plain_loop())
