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
import signal as signals
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from referee.sandbox.base import BotProcess, BotSpec, ExitInfo, Limits, Sandbox

if TYPE_CHECKING:
    from referee.executors.base import AttemptEvent, MatchTask



@dataclass(frozen=True)
class Stderr:
    """A fake bot's reply part: ``data`` written to its stderr."""

    data: bytes


@dataclass(frozen=True)
class CloseStdout:
    """A fake bot's reply part: it closes its stdout (the referee reads end of file) and
    runs on, reading what it is sent; what it writes to stdout afterwards goes nowhere."""


@dataclass(frozen=True)
class Exit:
    """A fake bot's reply part: it ends, with exit status ``code``, or killed by ``signal``
    (then ``code`` is ignored, and the return code is ``-signal`` as for a process)."""

    code: int = 0
    signal: int | None = None


Reply: TypeAlias = dict[str, Any] | bytes | Stderr | CloseStdout | Exit
Replies: TypeAlias = Reply | Sequence[Reply] | None
Handler = Callable[[dict[str, Any]], Replies]

__all__ = [
    "CloseStdout",
    "Exit",
    "FakeBotProcess",
    "FakeSandbox",
    "Handler",
    "InProcessExecutor",
    "Replies",
    "Reply",
    "Stderr",
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

    def handle(msg: dict[str, Any]) -> Replies:
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
    """An in-memory bot: written lines go to a handler; its replies come back on stdout.

    A line is handled once its newline has been written, however the writes cut it. While
    frozen (:meth:`freeze`) the bot handles nothing: lines written meanwhile wait for
    :meth:`thaw`. ``received`` holds every message handled, in order.
    """

    def __init__(self, spec: BotSpec, handler: Handler) -> None:
        super().__init__(spec=spec, stdout=asyncio.StreamReader(), stderr=asyncio.StreamReader())
        self.handler = handler
        self.received: list[dict[str, Any]] = []
        self.frozen = False
        self._buf = b""
        self._stdout_open = True
        self._exit: ExitInfo | None = None
        self._done = asyncio.Event()

    async def write(self, data: bytes) -> None:
        """Hand every complete line to the handler; ``BrokenPipeError`` once the bot ended."""
        if self._exit is not None:
            raise BrokenPipeError(f"fake bot {self.spec.name!r} is gone")
        self._buf += data
        if not self.frozen:
            self._handle_lines()

    def _handle_lines(self) -> None:
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            if self._exit is not None:
                return  # the bot ended on an earlier line: the rest is never read
            msg = json.loads(line)
            self.received.append(msg)
            out = self.handler(msg)
            for part in out if isinstance(out, list | tuple) else (out,):
                self._act(part)
            if msg.get("type") == "bye":
                self._end(ExitInfo(returncode=0))

    def _act(self, part: Reply | None) -> None:
        if part is None or self._exit is not None:
            return
        if isinstance(part, Stderr):
            self.stderr.feed_data(part.data)
        elif isinstance(part, CloseStdout):
            if self._stdout_open:
                self._stdout_open = False
                self.stdout.feed_eof()
        elif isinstance(part, Exit):
            if part.signal is None:
                self._end(ExitInfo(returncode=part.code))
            else:
                name = signals.Signals(part.signal).name
                self._end(ExitInfo(returncode=-part.signal, signal=part.signal, detail=name))
        elif self._stdout_open:
            self.stdout.feed_data(part if isinstance(part, bytes) else _json_line(part))

    def _end(self, info: ExitInfo) -> None:
        if self._exit is None:
            self._exit = info
            if self._stdout_open:
                self._stdout_open = False
                self.stdout.feed_eof()
            self.stderr.feed_eof()
            self._done.set()

    async def close_stdin(self) -> None:
        """End of file for the bot, which then ends with exit status 0. Never raises."""
        self._end(ExitInfo(returncode=0))

    async def kill(self) -> None:
        """End the bot as SIGKILL would (it has no processes, so nothing else to kill)."""
        self.frozen = False
        self._end(ExitInfo(returncode=-9, signal=9, detail="SIGKILL: killed by the referee"))

    async def freeze(self) -> None:
        """Stop handling lines until :meth:`thaw`. Never raises."""
        if self._exit is None:
            self.frozen = True

    async def thaw(self) -> None:
        """Handle the lines written while frozen, and go on. Never raises."""
        if self.frozen:
            self.frozen = False
            if self._exit is None:
                self._handle_lines()

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


def _json_line(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode() + b"\n"


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
