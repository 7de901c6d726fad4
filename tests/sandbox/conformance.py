"""The contract every sandbox backend keeps, as checks any backend can be run through.

In the spirit of trio's ``check_two_way_stream``: one async function per property of the
:class:`~referee.sandbox.base.BotProcess` interface, each given a :class:`Backend` (how to
start the suite's bot there, and how to look for what is left of it). The backends run them
in tests/sandbox/test_conformance.py: the process sandbox with and without bubblewrap, the
Docker sandbox against the real engine, and :class:`~referee.testing.FakeSandbox`. A
property a backend cannot have is listed in :data:`NOT_APPLICABLE` (or by the backend's own
:meth:`Backend.not_applicable`) with the reason, and skipped saying so; nothing passes by
doing nothing.

The bot is tests/bots/conformance_bot.py, which does what each line tells it (``echo``,
``stderr``, ``exit``, ``signal``, ``close_stdout``, ``fork``, ``hog``); the fake backend
runs :func:`fake_bot`, the same commands as a handler. What the suite checks is the
backends' side only: how the lines, the streams, the end and the limits are seen.
"""

from __future__ import annotations

import abc
import asyncio
import json
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from referee.sandbox.base import BotProcess, DirectReader, ExitInfo, Limits
from referee.testing import CloseStdout, Exit, Handler, Replies, Stderr

LIMITS = Limits(memory_mb=256, cpu_seconds=20, file_size_mb=4, pids=32, tmp_mb=16)
MEMORY_LIMITS = Limits(memory_mb=128, cpu_seconds=20, file_size_mb=4, pids=32, tmp_mb=16)
HOG_MIB = 1024
"""Eight times :data:`MEMORY_LIMITS`: a bot holding that much is over its limit anywhere."""
LINE_TIMEOUT_S = 20.0
LONG_LINE = 300_000
"""Longer than a pipe, a Docker frame and the referee's stream buffer (64 KiB) together."""


class Backend(abc.ABC):
    """One backend under test, as the properties need it."""

    name: str

    @abc.abstractmethod
    async def start(self, limits: Limits = LIMITS) -> BotProcess:
        """Start the suite's bot (tests/bots/conformance_bot.py, or :func:`fake_bot`)."""

    @abc.abstractmethod
    async def survivors(self, bot: BotProcess) -> list[str]:
        """What still runs of ``bot``'s processes (children and daemons included)."""

    def not_applicable(self) -> dict[str, str]:
        """Properties this backend (on this machine) cannot have, and why."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - most backends hold nothing
        """Release what the backend holds (a Docker client's sandbox)."""


# --------------------------------------------------------------------------- the bot


def fake_bot() -> Handler:
    """The commands of tests/bots/conformance_bot.py, for :class:`~referee.testing.FakeSandbox`
    (``fork`` and ``hog`` have nothing to act on: no processes, no memory of its own)."""

    def handle(command: dict[str, Any]) -> Replies:
        if "echo" in command:
            return {"echo": command["echo"]}
        if "stderr" in command:
            return [Stderr(command["stderr"].encode() + b"\n"), {"stderr": len(command["stderr"])}]
        if "exit" in command:
            return Exit(command["exit"])
        if "signal" in command:
            return Exit(signal=command["signal"])
        if "close_stdout" in command:
            return [CloseStdout(), Stderr(b"closed\n")]
        raise AssertionError(f"the fake bot cannot {command}")

    return handle


def line(command: dict[str, Any]) -> bytes:
    return json.dumps(command).encode() + b"\n"


async def tell(bot: BotProcess, command: dict[str, Any]) -> None:
    await bot.write(line(command))


async def answer(bot: BotProcess) -> Any:
    got = await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S)
    assert got.endswith(b"\n"), f"no answer line from {bot.spec.name}: {got!r} {bot.notes}"
    return json.loads(got)


async def ended(bot: BotProcess) -> ExitInfo:
    info = await bot.wait(LINE_TIMEOUT_S)
    assert info is not None, f"{bot.spec.name} did not end"
    return info


async def started(backend: Backend, limits: Limits = LIMITS) -> BotProcess:
    """The bot, started and answering (so that it is past its interpreter's start-up)."""
    bot = await backend.start(limits)
    await tell(bot, {"echo": "up"})
    assert await answer(bot) == {"echo": "up"}
    return bot


# --------------------------------------------------------------------------- properties


async def round_trip(backend: Backend) -> None:
    """Lines written come back in order; a line longer than every buffer on the way too."""
    bot = await started(backend)
    try:
        for n in range(5):
            await tell(bot, {"echo": n})
            assert await answer(bot) == {"echo": n}
        long = {"echo": "x" * LONG_LINE}
        writing = asyncio.create_task(tell(bot, long))
        back = await asyncio.wait_for(bot.stdout.readexactly(len(line(long))), LINE_TIMEOUT_S)
        await writing
        assert json.loads(back) == long
    finally:
        await bot.cleanup()


async def partial_lines(backend: Backend) -> None:
    """A line written in pieces is one line; several lines in one write are several."""
    bot = await started(backend)
    try:
        data = line({"echo": "in pieces"})
        for piece in (data[:3], data[3:11], data[11:]):
            await bot.write(piece)
            await asyncio.sleep(0.05)  # each piece its own write on the way
        assert await answer(bot) == {"echo": "in pieces"}
        await bot.write(b"".join(line({"echo": n}) for n in range(3)))
        assert [await answer(bot) for _ in range(3)] == [{"echo": n} for n in range(3)]
    finally:
        await bot.cleanup()


async def stderr_capture(backend: Backend) -> None:
    """What the bot writes to stderr arrives on ``stderr``, never on ``stdout``."""
    bot = await started(backend)
    try:
        for text in ("a note", "another"):
            await tell(bot, {"stderr": text})
            assert await answer(bot) == {"stderr": len(text)}
            got = await asyncio.wait_for(bot.stderr.readline(), LINE_TIMEOUT_S)
            assert got == text.encode() + b"\n"
        await bot.close_stdin()
        assert await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S) == b""
    finally:
        await bot.cleanup()


async def exit_info(backend: Backend) -> None:
    """End of stdin: the bot exits 0; an exit status is reported as such; both are what
    cleanup returns, every time it is called."""
    bot = await started(backend)
    try:
        await bot.close_stdin()
        info = await ended(bot)
        assert (info.returncode, info.signal, info.oom_killed) == (0, None, False), info
        assert await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S) == b""
    finally:
        cleaned = await bot.cleanup()
    assert cleaned == info
    bot = await started(backend)
    try:
        await tell(bot, {"exit": 3})
        info = await ended(bot)
        assert (info.returncode, info.signal) == (3, None), info
        assert info.describe() == "exit code 3"
    finally:
        cleaned = await bot.cleanup()
    assert cleaned == info and await bot.cleanup() == cleaned


async def killed_by_signal(backend: Backend) -> None:
    """A bot killed by a signal is reported with it; one the referee kills, as SIGKILL by
    the referee. ``kill`` is idempotent and never raises."""
    bot = await started(backend)
    try:
        await tell(bot, {"signal": int(signal.SIGTERM)})
        info = await ended(bot)
        assert info.signal == signal.SIGTERM and not info.oom_killed, info
        assert info.describe() == f"killed by signal {int(signal.SIGTERM)}"
        assert "killed by the referee" not in info.detail
    finally:
        await bot.cleanup()
    bot = await started(backend)
    try:
        assert await bot.wait(0.2) is None  # it waits for its next line
        await bot.kill()
        await bot.kill()
        info = await ended(bot)
        assert info.signal == signal.SIGKILL and "killed by the referee" in info.detail, info
        assert await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S) == b""
    finally:
        cleaned = await bot.cleanup()
    assert cleaned == info


async def kill_takes_the_tree(backend: Backend) -> None:
    """After ``kill``, nothing of the bot runs: not its children, not a ``setsid`` daemon
    (which leaves the bot's process group and session)."""
    bot = await started(backend)
    try:
        await tell(bot, {"fork": 3})
        assert await answer(bot) == {"forked": 3}
        before = await backend.survivors(bot)
        assert len(before) >= 5, f"the check must see the bot's tree to be worth anything: {before}"
        await bot.kill()
        await ended(bot)
        assert await backend.survivors(bot) == []
    finally:
        await bot.cleanup()


async def write_after_exit(backend: Backend) -> None:
    """Once the bot has ended, a write raises ``ConnectionError``; closing and killing
    never raise."""
    bot = await started(backend)
    try:
        await tell(bot, {"exit": 0})
        await ended(bot)
        with pytest.raises(ConnectionError):
            await tell(bot, {"echo": "anyone?"})
        await bot.close_stdin()
        await bot.kill()
    finally:
        await bot.cleanup()
    bot = await started(backend)
    try:
        await bot.kill()
        await ended(bot)
        with pytest.raises(ConnectionError):
            await tell(bot, {"echo": "anyone?"})
    finally:
        await bot.cleanup()


async def closed_stdout(backend: Backend) -> None:
    """A bot that closes its stdout is seen at end of file at once, while it runs on."""
    bot = await started(backend)
    try:
        await tell(bot, {"close_stdout": 1})
        assert await asyncio.wait_for(bot.stderr.readline(), LINE_TIMEOUT_S) == b"closed\n"
        assert await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S) == b""
        assert await bot.wait(0) is None, "the bot runs on"
    finally:
        await bot.cleanup()


async def direct_streams(backend: Backend) -> None:
    """stdout and stderr are :class:`~referee.sandbox.base.DirectReader` ones (the channel
    takes a reply in the transport's callback, a turn of the loop sooner): diverted, a
    reply comes to the consumer whole and in order, and the stream still ends for a read."""
    bot = await started(backend)
    try:
        assert isinstance(bot.stdout, DirectReader), type(bot.stdout)
        assert isinstance(bot.stderr, DirectReader), type(bot.stderr)
        got = bytearray()
        came = asyncio.Event()

        def take(chunk: bytes) -> None:
            got.extend(chunk)
            if got.count(b"\n") == 2:
                came.set()

        bot.stdout.divert(take)
        await tell(bot, {"echo": 1})
        await tell(bot, {"echo": "x" * LONG_LINE})
        await asyncio.wait_for(came.wait(), LINE_TIMEOUT_S)
        assert got == line({"echo": 1}) + line({"echo": "x" * LONG_LINE})
        await bot.close_stdin()
        assert await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S) == b""
    finally:
        await bot.cleanup()


async def memory_limit(backend: Backend) -> None:
    """A bot holding far more memory than its limit dies of it (never gets there)."""
    bot = await started(backend, MEMORY_LIMITS)
    try:
        await tell(bot, {"hog": HOG_MIB})
        info = await ended(bot)
        said = await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S)
        assert b"held" not in said, said
        assert info.oom_killed or info.returncode not in (0, None), info
    finally:
        await bot.cleanup()


async def freeze_and_thaw(backend: Backend) -> None:
    """A frozen bot handles nothing until thawed, then answers what it was sent; freezing
    and thawing twice changes nothing; a frozen bot can be killed."""
    bot = await started(backend)
    try:
        await bot.freeze()
        await bot.freeze()
        await tell(bot, {"echo": "while frozen"})
        reading = asyncio.ensure_future(bot.stdout.readline())
        done, _ = await asyncio.wait({reading}, timeout=0.5)
        assert not done, "a frozen bot answered"  # a negative: a slow machine cannot fail it
        await bot.thaw()
        await bot.thaw()
        assert json.loads(await asyncio.wait_for(reading, LINE_TIMEOUT_S)) == {
            "echo": "while frozen"
        }
        await bot.freeze()
        await bot.kill()
        info = await ended(bot)
        assert info.signal == signal.SIGKILL, info
    finally:
        await bot.cleanup()


Property = Callable[[Backend], Awaitable[None]]

PROPERTIES: dict[str, Property] = {
    "round trip": round_trip,
    "partial lines": partial_lines,
    "stderr capture": stderr_capture,
    "exit info": exit_info,
    "killed by a signal": killed_by_signal,
    "kill takes the tree": kill_takes_the_tree,
    "write after exit": write_after_exit,
    "closed stdout": closed_stdout,
    "direct streams": direct_streams,
    "memory limit": memory_limit,
    "freeze and thaw": freeze_and_thaw,
}
"""Every property of the contract, by the name the test ids and the table use."""

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("fake", "kill takes the tree"): (
        "a fake bot is a handler in the referee's process: it has no processes to fork, so "
        "kill ends the bot itself (checked by 'killed by a signal' and 'write after exit')"
    ),
    ("fake", "memory limit"): (
        "a fake bot has no memory of its own (its handler runs in the referee's process), "
        "so there is no limit to hold it to"
    ),
}
"""``(backend, property) -> why it does not apply``; machine-dependent ones come from
:meth:`Backend.not_applicable`."""
