"""Test helpers shipped with the package: scripted bots, an in-memory sandbox, a fake clock.

:class:`FakeSandbox` starts no process: each bot is a Python callable that receives every
message the referee writes (as a dict) and returns its reply (a dict, raw bytes, or None
for no reply). It makes match-runner tests fast and exact; the real sandboxes have their
own integration tests. :class:`InProcessExecutor` plays a whole tournament's matches that way,
in this process, through the real coordinator and store.

:class:`FakeClock` is virtual time, in the spirit of trio's ``MockClock`` with autojump: a
match seated on it (``seated(..., clock=clock)``) and run on its loop (``clock.run(...)``)
waits out every timeout (a bot that never answers, ``hello_ms``, a bank spent) in no time
at all, with the same verdicts as on the real clock.
"""

from __future__ import annotations

import asyncio
import json
import selectors
import signal as signals
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from referee.clock import Alarm
from referee.errors import REFEREE_KILL
from referee.executors.base import Executor
from referee.sandbox.base import BotProcess, BotSpec, DirectReader, ExitInfo, Limits, Sandbox

if TYPE_CHECKING:
    from referee.executors.base import AttemptEvent, MatchTask, SandboxPlan


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
    info: ExitInfo | None = None
    """How it ended, whole, when given (``code`` and ``signal`` are ignored then): the
    kernel's OOM killer acting above its own limit (``outside_oom``), the referee's kill."""


Reply: TypeAlias = dict[str, Any] | bytes | Stderr | CloseStdout | Exit
Replies: TypeAlias = Reply | Sequence[Reply] | None
Handler = Callable[[dict[str, Any]], Replies]
_T = TypeVar("_T")

__all__ = [
    "CloseStdout",
    "Exit",
    "FakeBotProcess",
    "FakeClock",
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

    return BotSpec(name=name, folder=Path("/nonexistent"), command=("fake",))


class FakeBotProcess(BotProcess):
    """An in-memory bot: written lines go to a handler; its replies come back on stdout.

    A line is handled once its newline has been written, however the writes cut it. While
    frozen (:meth:`freeze`) the bot handles nothing: lines written meanwhile wait for
    :meth:`thaw`. ``received`` holds every message handled, in order. What the bot writes
    (and the ends of its streams) reaches the referee in the event loop's next turn, in
    order, as a pipe's bytes would: never inside the referee's own write, so a reply the
    handler made late on the fake clock comes after the request's deadline has fired.
    """

    def __init__(self, spec: BotSpec, handler: Handler) -> None:
        super().__init__(spec=spec, stdout=DirectReader(), stderr=DirectReader())
        self.handler = handler
        self.received: list[dict[str, Any]] = []
        self.frozen = False
        self._buf = b""
        self._stdout_open = True
        self._exit: ExitInfo | None = None
        self._done = asyncio.Event()

    @property
    def ended(self) -> ExitInfo | None:
        """How the fake bot ended, ``None`` while it runs (read without awaiting, so from
        outside the loop that runs it)."""
        return self._exit

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
            self._deliver(self.stderr.feed_data, part.data)
        elif isinstance(part, CloseStdout):
            if self._stdout_open:
                self._stdout_open = False
                self._deliver(self.stdout.feed_eof)
        elif isinstance(part, Exit):
            if part.info is not None:
                self._end(part.info)
            elif part.signal is None:
                self._end(ExitInfo(returncode=part.code))
            else:
                name = signals.Signals(part.signal).name
                self._end(ExitInfo(returncode=-part.signal, signal=part.signal, detail=name))
        elif self._stdout_open:
            data = part if isinstance(part, bytes) else _json_line(part)
            self._deliver(self.stdout.feed_data, data)

    def _deliver(self, feed: Callable[..., None], *data: bytes) -> None:
        asyncio.get_running_loop().call_soon(feed, *data)

    def _end(self, info: ExitInfo) -> None:
        if self._exit is None:
            self._exit = info
            if self._stdout_open:
                self._stdout_open = False
                self._deliver(self.stdout.feed_eof)
            self._deliver(self.stderr.feed_eof)
            self._done.set()

    async def close_stdin(self) -> None:
        """End of file for the bot, which then ends with exit status 0. Never raises."""
        self._end(ExitInfo(returncode=0))

    async def kill(self) -> None:
        """End the bot as SIGKILL would (it has no processes, so nothing else to kill)."""
        self.frozen = False
        self._end(ExitInfo(returncode=-9, signal=9, detail=f"SIGKILL: {REFEREE_KILL}"))

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

    def __init__(self, handlers: Mapping[str, Callable[[], Handler]]) -> None:
        self.handlers = handlers
        self.started: list[FakeBotProcess] = []

    async def start(self, bot: BotSpec, limits: Limits) -> FakeBotProcess:
        proc = FakeBotProcess(bot, self.handlers[bot.name]())
        self.started.append(proc)
        return proc


class InProcessExecutor(Executor):
    """An executor (:class:`referee.executors.base.Executor`) that plays every task here, one
    after the other, with fake bots: ``handlers`` maps an entrant's name to its handler
    factory. The matches are real (engine, match runner, logs, the worker's own
    :class:`~referee.executors.worker.Worker`); only the bots are not. A task that fails on
    our side is a final :class:`~referee.executors.base.MatchFailed` (one attempt each), a
    ``UsageError`` stops the run, and a bug is raised here, with the worker's traceback,
    rather than recorded: a test must not pass over it. With ``stop_after``, it plays that
    many of the tasks it is given and stops, as a run killed part-way would (the tournament
    is left unfinished, to resume)."""

    max_attempts = 1

    def __init__(
        self, handlers: Mapping[str, Callable[[], Handler]], *, stop_after: int | None = None
    ) -> None:
        self.handlers = handlers
        self.stop_after = stop_after

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        """The fake sandbox stands in for whatever backend the tournament names."""
        from referee.executors.base import SandboxPlan

        name = "process" if backend == "auto" else backend
        return SandboxPlan(name, "fake bots in the referee's own process (referee.testing)")

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        from referee.errors import UsageError
        from referee.executors.base import MatchFailed, MatchFinished, MatchStarted
        from referee.executors.worker import Worker
        from referee.results import MatchResult

        sandbox = FakeSandbox(self.handlers)
        with Worker(sandboxes=lambda name, images: sandbox) as worker:
            for task in tasks[: self.stop_after]:
                key = task.spec.key
                on_event(MatchStarted(key, 1))
                outcome = worker.play(task)
                sandbox.started.clear()
                if outcome.status == "done":
                    assert outcome.result is not None
                    on_event(MatchFinished(key, MatchResult.model_validate(outcome.result)))
                elif outcome.status == "usage":
                    raise UsageError(outcome.error or "the match could not start")
                elif outcome.status == "bug":
                    raise AssertionError(f"match {key} hit a bug in the referee:\n{outcome.error}")
                else:
                    on_event(MatchFailed(key, outcome.error or outcome.status, 1, True))


class FakeClock:
    """Virtual time for tests, in the spirit of trio's ``MockClock`` with autojump.

    Time stands still while anything can run, and jumps to the next timer (a request's
    budget, ``hello_ms``, a sleep) as soon as every task is waiting: a bot that never
    answers times out at once, after exactly its budget of virtual time. :meth:`advance`
    moves time by hand, as a bot or the referee that blocks the loop would (``time.sleep``
    in a handler becomes ``clock.advance``).

    asyncio's own timeouts read the loop's clock (:mod:`referee.clock`), so the fake clock
    comes with its own event loop, whose ``time()`` is the fake time and whose selector does
    the jumping: run the test's coroutine with :meth:`run` (or a ``Runner`` made with
    ``loop_factory=clock.new_event_loop``) and seat it on the same clock. Its
    :meth:`timeout`, :meth:`sleep` and :meth:`alarm` refuse to run on another loop. Before
    jumping it polls the real file descriptors once, so a pipe that is ready is served
    first; it never waits for threads or real processes, which would see time jump past
    them: it is for the in-memory sandbox, not the real ones.
    """

    def __init__(self, start: float = 0.0, *, autojump: bool = True) -> None:
        self._now = start
        self.autojump = autojump
        """Jump to the next timer when every task waits (else only :meth:`advance` moves)."""

    def monotonic(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass now (never backwards)."""
        if seconds < 0:
            raise ValueError(f"time does not go backwards: advance({seconds})")
        self._now += seconds

    def timeout(self, delay: float | None) -> asyncio.Timeout:
        self._on_own_loop()
        return asyncio.timeout(delay)

    async def sleep(self, seconds: float) -> None:
        self._on_own_loop()
        await asyncio.sleep(seconds)

    def alarm(self) -> Alarm:
        self._on_own_loop()
        return Alarm()

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        """An event loop running on this clock (a ``loop_factory`` for ``asyncio.Runner``)."""
        return _FakeClockLoop(self)

    def run(self, main: Coroutine[Any, Any, _T]) -> _T:
        """Run ``main`` to its end on a fresh loop of this clock, as :func:`asyncio.run`."""
        with asyncio.Runner(loop_factory=self.new_event_loop) as runner:
            return runner.run(main)

    def _on_own_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if not (isinstance(loop, _FakeClockLoop) and loop.fake_clock is self):
            raise RuntimeError(
                "this FakeClock's waits run on its own event loop: run the coroutine with "
                "clock.run(...) (asyncio's timeouts read the loop's time)"
            )

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now!r})"


class _JumpingSelector(selectors.DefaultSelector):
    """The fake clock's selector: where the loop would wait for its next timer, it polls
    the real descriptors once and, when none is ready, moves the clock to that timer."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.fake_clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        # ``timeout`` is the loop's time to its next timer: None when there is none (then
        # only real I/O can wake the loop), 0 when something is ready to run.
        if timeout is None or timeout <= 0 or not self.fake_clock.autojump:
            return super().select(timeout)
        ready = super().select(0)
        if not ready:
            self.fake_clock.advance(timeout)
        return ready


class _FakeClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose time is a :class:`FakeClock`'s."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(_JumpingSelector(clock))
        self.fake_clock = clock

    def time(self) -> float:
        return self.fake_clock.monotonic()
