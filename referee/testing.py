"""Test helpers shipped with the package: scripted bots and an in-memory sandbox.

:class:`FakeSandbox` starts no process: each bot is a Python callable that receives every
message the referee writes (as a dict) and returns its reply (a dict, raw bytes, or None
for no reply). It makes match-runner tests fast and exact; the real sandboxes have their
own integration tests. :class:`InProcessExecutor` plays a whole tournament's matches that way,
in this process, through the real coordinator and store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.sandbox.base import BotProcess, BotSpec, ExitInfo, Limits, Sandbox

if TYPE_CHECKING:
    from referee.executors.base import AttemptEvent, MatchTask

Handler = Callable[[dict[str, Any]], dict[str, Any] | bytes | None]

__all__ = [
    "FakeBotProcess",
    "FakeSandbox",
    "Handler",
    "InProcessExecutor",
    "lowest_bot",
    "polite_bot",
    "spec",
]


def polite_bot(name: str = "polite") -> Handler:
    """Answers instantly: the first legal play, the first cards, the first leftover."""

    def handle(msg: dict[str, Any]) -> dict[str, Any] | None:
        if msg.get("type") == "hello":
            return {"id": msg["id"], "type": "ready", "name": name}
        if msg.get("type") != "act":
            return None
        hand = msg["hand"]
        if msg["kind"] == "play":
            return {"id": msg["id"], "cards": msg["legal"][0]}
        if msg["kind"] == "give":
            return {"id": msg["id"], "cards": hand[: msg["count"]]}
        return {"id": msg["id"], "take": msg["offer"][0], "discard": hand[0]}

    return handle


def lowest_bot(name: str = "lowest") -> Handler:
    """Leads its lowest play, follows with the lowest play that beats, never passes first."""
    inner = polite_bot(name)

    def handle(msg: dict[str, Any]) -> dict[str, Any] | bytes | None:
        if msg.get("type") == "act" and msg["kind"] == "play":
            legal = [p for p in msg["legal"] if p] or [[]]
            return {"id": msg["id"], "cards": legal[0]}
        return inner(msg)

    return handle


def spec(name: str) -> BotSpec:
    """A BotSpec for a fake bot (nothing on disk)."""
    from pathlib import Path

    return BotSpec(name=name, folder=Path("/nonexistent"), command=("fake",))


class FakeBotProcess(BotProcess):
    """An in-memory bot: written lines go to a handler; its replies come back on stdout."""

    def __init__(self, spec: BotSpec, handler: Handler) -> None:
        super().__init__(spec=spec, stdout=asyncio.StreamReader(), stderr=asyncio.StreamReader())
        self.handler = handler
        self.received: list[dict[str, Any]] = []
        self._buf = b""
        self._exit: ExitInfo | None = None
        self._done = asyncio.Event()

    async def write(self, data: bytes) -> None:
        if self._exit is not None:
            raise BrokenPipeError("fake bot is gone")
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            msg = json.loads(line)
            self.received.append(msg)
            out = self.handler(msg)
            if isinstance(out, dict):
                self.stdout.feed_data(json.dumps(out).encode() + b"\n")
            elif isinstance(out, bytes):
                self.stdout.feed_data(out)
            if msg.get("type") == "bye":
                self._end(0)

    def _end(self, code: int) -> None:
        if self._exit is None:
            self._exit = ExitInfo(returncode=code)
            self.stdout.feed_eof()
            self.stderr.feed_eof()
            self._done.set()

    async def close_stdin(self) -> None:
        self._end(0)

    async def kill(self) -> None:
        if self._exit is None:
            self._exit = ExitInfo(returncode=-9, signal=9, detail="SIGKILL: killed by the referee")
            self.stdout.feed_eof()
            self.stderr.feed_eof()
            self._done.set()

    async def wait(self, timeout: float | None = None) -> ExitInfo | None:
        try:
            async with asyncio.timeout(timeout):
                await self._done.wait()
        except TimeoutError:
            return None
        return self._exit

    async def cleanup(self) -> ExitInfo:
        await self.kill()
        assert self._exit is not None
        return self._exit


class FakeSandbox(Sandbox):
    """Starts fake bots: ``handlers`` maps a BotSpec name to its handler factory."""

    name = "fake"

    def __init__(self, handlers: dict[str, Callable[[], Handler]]) -> None:
        self.handlers = handlers
        self.started: list[FakeBotProcess] = []

    async def start(self, bot: BotSpec, limits: Limits) -> FakeBotProcess:
        proc = FakeBotProcess(bot, self.handlers[bot.name]())
        self.started.append(proc)
        return proc


class InProcessExecutor:
    """An executor (:class:`referee.executors.base.Executor`) that plays every task here, one
    after the other, with fake bots: ``handlers`` maps an entrant's name to its handler
    factory. The matches are real (engine, match runner, logs); only the bots are not."""

    max_attempts = 1

    def __init__(self, handlers: dict[str, Callable[[], Handler]]) -> None:
        self.handlers = handlers

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        from referee.executors.base import MatchFinished, MatchStarted
        from referee.match.runner import play_match

        sandbox = FakeSandbox(self.handlers)
        with asyncio.Runner() as runner:
            for task in tasks:
                key = task.spec.key
                on_event(MatchStarted(key, 1))
                result = runner.run(
                    play_match(
                        sandbox,
                        task.bots,
                        task.rules,
                        task.spec.match_seed,
                        match_id=key,
                        time_control=task.time_control,
                        limits=task.limits,
                        log_path=Path(task.log_path),
                        deal_key=task.spec.deal_id,
                    )
                )
                sandbox.started.clear()
                on_event(MatchFinished(key, result))
