"""Time as a dependency: the clock a match's channels, sessions and runner read and wait on.

Everything the referee times about a bot (a request's reply against ``move_ms`` and the
bank, ``hello`` against ``hello_ms``, a line's arrival, the moment to give up on an exit)
reads a :class:`Clock` handed down from the seating (:func:`referee.protocol.seats.seated`)
instead of calling :func:`time.monotonic` itself, so a test can run a match in virtual time
(:class:`referee.testing.FakeClock`) and a timeout test need not sleep.

A clock and the event loop must agree. asyncio's own timeouts (:func:`asyncio.timeout`,
:func:`asyncio.wait_for`, :func:`asyncio.sleep`, ``proc.wait(timeout)`` in the sandboxes)
measure time with the running loop's :meth:`~asyncio.AbstractEventLoop.time`, so a clock is
*the loop's clock*: :class:`MonotonicClock` is the clock of asyncio's ordinary loops (their
``time()`` is :func:`time.monotonic`), and the fake clock makes its own loop whose ``time()``
is the fake time. The other way (a clock with timers of its own, every wait of the channel
going through it) would leave asyncio's internal waits on another time, and only the loop
knows when every task is waiting, which is when a fake clock may jump ahead. A clock's
:meth:`~Clock.timeout` and :meth:`~Clock.sleep` are therefore asyncio's, and so is the
timer of its :meth:`~Clock.alarm` (an :class:`Alarm`, the timeout of a bot's requests);
the fake one checks that it runs on its own loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

__all__ = ["Alarm", "Clock", "MonotonicClock", "WallClock"]

WallClock = Callable[[], float]
"""Wall time, in seconds since the epoch (as :func:`time.time`): what a run stamps in its
store (a secret drawn or revealed, a match started or finished, a replacement, a league's
batches). A run takes one (:func:`referee.runs.core.play`) and hands it down, so a test
pins it; the clock above, a match's, measures durations on the loop's time scale instead.
"""


class Clock(Protocol):
    """Where the referee reads the time and how it waits: seconds, monotonic, the loop's."""

    def monotonic(self) -> float:
        """Now, in seconds, on the running loop's time scale (as :func:`time.monotonic`)."""
        ...

    def timeout(self, delay: float | None) -> asyncio.Timeout:
        """A context manager cancelling its block after ``delay`` seconds of this clock
        (:func:`asyncio.timeout`; ``None``: never)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock."""
        ...

    def alarm(self) -> Alarm:
        """An :class:`Alarm` on this clock, for one task's waits one after another."""
        ...


class Alarm:
    """The timeout of waits that follow one another in one task, keeping one timer armed.

    ``with alarm.at(when):`` around a wait is ``async with asyncio.timeout_at(when):`` (the
    task cancelled once the loop's time reaches ``when``, ``TimeoutError`` at the end of
    the block, a cancellation from elsewhere passed on as asyncio does), but the timer
    outlives the block: the next block whose deadline is no earlier keeps it, and when it
    rings before the deadline now in force it arms itself again for that one. A bot's
    requests come one at a time, each with a deadline later than the last (``move_ms`` plus
    what is left of the bank, from a later start), so a session arms a timer every
    ``move_ms + bank_ms`` or so instead of for every request. ``asyncio.timeout`` per
    request pushes a timer on the loop's heap (whose handles compare in Python) and leaves it
    there cancelled, besides its own state, so the alarm lowers the referee's CPU per request
    (how much: docs/performance.md, "Figures behind the code"). Blocks do not nest.
    """

    __slots__ = ("_armed_at", "_cancelling", "_handle", "_rang", "_task", "_when")

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | asyncio.Handle | None = None
        self._armed_at = 0.0
        self._when = 0.0
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._rang = False

    def at(self, when: float) -> Alarm:
        """The alarm for a block ending at ``when`` on the loop's clock (enter it)."""
        self._when = when
        return self

    def __enter__(self) -> Alarm:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("an alarm times a task's wait: use it inside a task")
        if self._task is not None:
            raise RuntimeError("an alarm's blocks do not nest")
        self._task = task
        self._cancelling = task.cancelling()
        self._rang = False
        if self._handle is None or self._armed_at > self._when:
            self._arm()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        task, self._task = self._task, None
        if self._rang:
            self._rang = False
            assert task is not None
            if task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc

    def cancel(self) -> None:
        """Drop the timer (the owner is done with the alarm; a later block arms it again)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self.cancel()
        loop = asyncio.get_running_loop()
        self._armed_at = when = self._when
        if when <= loop.time():
            self._handle = loop.call_soon(self._ring)
        else:
            self._handle = loop.call_at(when, self._ring)

    def _ring(self) -> None:
        self._handle = None
        if self._task is None:
            return  # between blocks: the next one arms it again
        # Armed for an earlier block: wait on for this one's deadline, unless a timer set
        # for it would be due in this very turn of the loop (asyncio takes the timers due
        # before now + the clock's resolution), where asyncio.timeout's would ring too.
        when = self._when
        if when > self._armed_at and when >= asyncio.get_running_loop().time() + _RESOLUTION:
            self._arm()
            return
        self._rang = True
        self._task.cancel()


_RESOLUTION = time.get_clock_info("monotonic").resolution
"""How far ahead asyncio's loop takes timers as due (its ``_clock_resolution``)."""


class MonotonicClock:
    """The real clock: :func:`time.monotonic`, which asyncio's own event loops keep too."""

    monotonic = staticmethod(time.monotonic)
    timeout = staticmethod(asyncio.timeout)
    alarm = staticmethod(Alarm)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "MonotonicClock()"
