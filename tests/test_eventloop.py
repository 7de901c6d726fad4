"""The referee's event loop: a selector that polls before it sleeps, only while polling pays
(referee.eventloop). What it returns is what the platform's selector returns; when it polls
is counted (``polls``, ``caught``), never timed."""

from __future__ import annotations

import asyncio
import itertools
import os
import selectors
import socket
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee import eventloop, interrupts
from referee.eventloop import MAX_SKIP, PollingSelector, new_event_loop
from referee.executors.worker import Worker


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    yield ours, theirs
    ours.close()
    theirs.close()


def _selector(ours: socket.socket, poll_s: float) -> PollingSelector:
    selector = PollingSelector(poll_s)
    selector.register(ours, selectors.EVENT_READ)
    return selector


def test_a_reply_already_there_is_caught_by_the_poll(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    selector = _selector(ours, poll_s=0.05)
    theirs.send(b"reply\n")
    ready = selector.select(timeout=5)
    assert [(key.fileobj, events) for key, events in ready] == [(ours, selectors.EVENT_READ)]
    assert (selector.polls, selector.caught) == (1, 1)
    selector.close()


def test_after_a_long_wait_the_next_one_sleeps_without_polling(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """A bot that thinks: its wait outlasts the poll, and the wait after it does not poll."""
    ours, theirs = pair
    selector = _selector(ours, poll_s=0.001)
    assert selector.select(timeout=0.02) == []  # polled 1 ms, then slept: a long wait
    assert (selector.polls, selector.caught) == (1, 0)
    theirs.send(b"reply\n")
    assert len(selector.select(timeout=5)) == 1
    assert (selector.polls, selector.caught) == (1, 0)  # slept at once: no poll
    for n in (1, 2):  # short waits: the first skips its poll (the one in vain), then polls
        ours.recv(100)
        theirs.send(b"again\n")
        assert len(selector.select(timeout=5)) == 1
        assert (selector.polls, selector.caught) == (n, n - 1)
    selector.close()


def test_a_poll_that_catches_nothing_makes_twice_as_many_waits_skip_theirs(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """A bot that needs the core the referee polls on: its reply comes only once the
    referee sleeps. Each poll in vain makes the next waits skip theirs, 1, 2, 4 ... up to
    MAX_SKIP; a poll that catches the reply ends that."""
    ours, theirs = pair
    selector = _selector(ours, poll_s=1.0)  # every wait below is short (timeout 1 ms)
    polled_at = []
    for wait in range(300):
        before = selector.polls
        assert selector.select(timeout=0.001) == []
        if selector.polls > before:
            polled_at.append(wait)
    gaps = [b - a - 1 for a, b in itertools.pairwise(polled_at)]
    assert gaps[:7] == [1, 2, 4, 8, 16, 32, 64]
    assert set(gaps[6:]) == {MAX_SKIP}
    while selector._skip:  # the waits that still skip
        selector.select(timeout=0.001)
    theirs.send(b"reply\n")
    assert len(selector.select(timeout=0.001)) == 1
    assert selector.caught == 1
    ours.recv(100)
    theirs.send(b"next\n")
    polls = selector.polls
    assert len(selector.select(timeout=0.001)) == 1  # caught: the next wait polls again
    assert (selector.polls, selector.caught) == (polls + 1, 2)
    selector.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from([None, 0.0, 0.0005, 0.002])),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([0.0, 0.0002, 0.001]),
)
def test_it_returns_what_is_ready_and_nothing_else(
    waits: list[tuple[bool, float | None]], poll_s: float
) -> None:
    """Whatever it polled before: a wait returns the descriptor when a line is there, and
    nothing once the timeout has passed without one."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    selector = _selector(ours, poll_s)
    try:
        for line_there, timeout in waits:
            if timeout is None and not line_there:
                continue  # would wait for ever
            if line_there:
                theirs.send(b"x\n")
            ready = selector.select(timeout)
            assert [key.fileobj for key, _ in ready] == ([ours] if line_there else [])
            if line_there:
                ours.recv(100)
    finally:
        selector.close()
        ours.close()
        theirs.close()


def test_a_process_allowed_one_core_never_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")  # pragma: no cover
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})  # the module eventloop reads
    loop = new_event_loop()
    try:
        assert loop._selector.poll_s == 0  # type: ignore[attr-defined]
    finally:
        loop.close()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    loop = new_event_loop()
    try:
        assert loop._selector.poll_s == eventloop.POLL_S  # type: ignore[attr-defined]
    finally:
        loop.close()


def _selector_of_the_running_loop() -> object:
    return asyncio.get_running_loop()._selector  # type: ignore[attr-defined]


def test_workers_and_commands_play_on_the_polling_loop() -> None:
    """A worker's matches and a command's (``bot check``, ``match``) run on it; a bot's
    pipes and the loop's timers work as on asyncio's own."""

    async def echo() -> tuple[object, bytes]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; sys.stdout.write(sys.stdin.readline())",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"ping\n")
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        await asyncio.sleep(0.001)  # a timer rings
        await proc.wait()
        return _selector_of_the_running_loop(), line

    with Worker() as worker:
        selector, line = worker._loop().run(echo())
    assert isinstance(selector, PollingSelector) and line == b"ping\n"
    selector, line = interrupts.run(echo())
    assert isinstance(selector, PollingSelector) and line == b"ping\n"
