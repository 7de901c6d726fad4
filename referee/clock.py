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
:meth:`~Clock.timeout` and :meth:`~Clock.sleep` are therefore asyncio's, and the fake one
checks that it runs on its own loop.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["Clock", "MonotonicClock"]


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


class MonotonicClock:
    """The real clock: :func:`time.monotonic`, which asyncio's own event loops keep too."""

    monotonic = staticmethod(time.monotonic)
    timeout = staticmethod(asyncio.timeout)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "MonotonicClock()"
