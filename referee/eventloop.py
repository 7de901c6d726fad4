"""The event loop the referee plays matches on: asyncio's, whose waits poll briefly first.

A round trip to a bot wakes two processes: the bot when its request is written, and the
referee when the reply is. On a virtual machine a process woken on a core that sleeps waits
for that core to come back, twice per round trip, and that wait is a large part of the
round trip (``bench/match_bench.py`` times the raw ping-pong with both processes on one core
and on two). A referee that is still polling when the reply comes needs no waking.

:class:`PollingSelector` does what KVM's halt polling does for a virtual CPU: before a
wait that may sleep, it polls without sleeping for up to :data:`POLL_S`, but only while
polling pays. After a wait that ended within :data:`POLL_S` (a bot that answers at once)
the next one polls; after a longer one (a bot that thinks, an idle loop) it sleeps at
once, so a bot that thinks costs nothing more. A poll that caught nothing skips the polls
of the next waits, twice as many after each such poll (up to :data:`MAX_SKIP`): where the
bot needs the core the referee polls on, its reply can only come once the referee sleeps,
and the polls soon stop. A process allowed a single core never polls. A wait never ends
later than asked: the poll stops at the wait's own timeout, so the loop's timers ring on
time.

On ``bench/match_bench.py``'s long match the referee's wall time per request comes close
to the ping-pong floor on this loop, for a little more CPU a request (the polling); bots
that think poll nothing, and a tournament of instant bots plays as fast either way (most of
a short match is per-match work). The figures are in docs/performance.md. asyncio has no
such option and uvloop was not kept (docs/performance.md, the referee's time per request):
this is a selector of the standard library's with the poll in front, and the loop is
asyncio's own.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import time

__all__ = ["MAX_SKIP", "POLL_S", "PollingSelector", "new_event_loop"]

POLL_S = 100e-6
"""The longest poll before a wait sleeps, and the longest wait after which the next one
polls (seconds)."""
MAX_SKIP = 64
"""The most waits that skip their poll after a poll that caught nothing."""


class PollingSelector(selectors.DefaultSelector):
    """The platform's selector, polling up to ``poll_s`` before each wait that follows a
    short one (see the module docstring). ``polls`` counts the waits that polled and
    ``caught`` those a poll ended, for the tests."""

    def __init__(self, poll_s: float = POLL_S) -> None:
        super().__init__()
        self.poll_s = poll_s
        self._short = True  # the last wait that could sleep ended within poll_s
        self._skip = 0  # waits left that skip their poll
        self._backoff = 0  # how many the next poll that catches nothing makes skip
        self.polls = 0
        self.caught = 0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= 0:
            return super().select(0)
        start = time.perf_counter()
        if self._short and self.poll_s > 0:
            if self._skip:
                self._skip -= 1
            else:
                ready = self._poll(start, timeout)
                if ready:
                    return ready
        left = None if timeout is None else max(0.0, start + timeout - time.perf_counter())
        ready = super().select(left)
        self._short = time.perf_counter() - start <= self.poll_s
        return ready

    def _poll(self, start: float, timeout: float | None) -> list[tuple[selectors.SelectorKey, int]]:
        """Poll until something is ready or ``poll_s`` (at most ``timeout``) has passed."""
        self.polls += 1
        stop = start + (self.poll_s if timeout is None else min(self.poll_s, timeout))
        while True:
            ready = super().select(0)
            if ready:
                self.caught += 1
                self._backoff = 0
                return ready
            if time.perf_counter() >= stop:
                self._backoff = min(MAX_SKIP, max(1, 2 * self._backoff))
                self._skip = self._backoff
                return ready


def new_event_loop() -> asyncio.AbstractEventLoop:
    """asyncio's event loop on a :class:`PollingSelector` (``asyncio.Runner``'s
    ``loop_factory``); one that never polls in a process allowed a single core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return asyncio.SelectorEventLoop(PollingSelector(POLL_S if (cores or 1) > 1 else 0.0))
