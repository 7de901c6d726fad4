"""The interface every sandbox backend implements.

A backend starts one bot program confined by :class:`Limits` and hands back a
:class:`BotProcess`: an asyncio byte-stream pair plus a way to kill the whole process tree
and to learn how it ended. The match runner only ever talks to this interface, so the
process backend (rlimits + bubblewrap) and the Docker backend are interchangeable.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import SupportsIndex

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` inside every sandbox: ``python3`` is the system's interpreter, never the referee's."""


def bot_environment(tmp: str = "/tmp") -> dict[str, str]:
    """The whole environment a bot (or its build) sees, the same in every sandbox: nothing
    is inherited from the referee, and nothing changes how a runtime buffers its output
    (no ``PYTHONUNBUFFERED``), so a bot that never flushes fails ``bot check`` wherever it
    runs. ``tmp`` is the scratch folder (``/tmp`` inside a mount namespace)."""
    return {
        "PATH": SANDBOX_PATH,
        "LANG": "C.UTF-8",
        "TMPDIR": tmp,
        "HOME": tmp,
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@dataclass(frozen=True)
class Limits:
    """Resource limits for one bot process (or container)."""

    memory_mb: int = 512
    cpu_seconds: int = 600
    file_size_mb: int = 16
    open_files: int = 256
    pids: int = 64
    tmp_mb: int = 64
    cpus: float = 1.0

    def describe(self) -> str:
        """The limits in one line, as commands print them before running a bot."""
        cpus = f"{self.cpus:g} CPU" + ("" if self.cpus == 1 else "s")
        return (
            f"memory {self.memory_mb} MiB, {self.pids} processes, {cpus}, "
            f"{self.cpu_seconds} CPU seconds, scratch {self.tmp_mb} MiB, "
            f"files up to {self.file_size_mb} MiB, {self.open_files} open files"
        )


@dataclass(frozen=True)
class BotSpec:
    """A bot ready to start: its files live in ``folder``; ``command`` runs inside it.

    ``command`` is an argv list; a relative program path is resolved against ``folder``
    (``["python3", "bot.py"]`` runs the system's ``python3`` on ``folder/bot.py``).
    ``single_file`` names the one file of a single-file bot (the sandbox then exposes only
    that file).
    """

    name: str
    folder: Path
    command: tuple[str, ...]
    version: str | None = None
    image: str | None = None
    author: str | None = None
    """Who wrote the bot (``author`` in its ``bot.toml``, or given by the tournament file)."""
    single_file: str | None = None
    sha256: str = ""
    build: tuple[str, ...] = ()
    """The build command of its ``bot.toml`` (``build = ["make"]``), run once per version
    before it plays (:mod:`referee.sandbox.build`); empty once built, or when it has none."""
    writable: bool = False
    """Mount ``folder`` writable for this process (a build's, never a bot's that plays)."""


@dataclass(frozen=True)
class ExitInfo:
    """How a bot process ended.

    ``oom_killed``: the kernel killed it at its own memory limit (the bot's fault).
    ``outside_oom``: the kernel's out-of-memory killer killed it while its own group was
    within its limit, because memory ran out above it (the machine, the referee's cgroup):
    the referee's failure, never the bot's (see :mod:`referee.sandbox.budget`).
    """

    returncode: int | None
    signal: int | None = None
    oom_killed: bool = False
    detail: str = ""
    outside_oom: bool = False

    def describe(self) -> str:
        """A short phrase for fault details, e.g. ``exit code 3`` or ``killed by signal 9``."""
        if self.oom_killed:
            return "killed at the memory limit"
        if self.outside_oom:
            return "killed by the kernel for memory outside its own limit"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        if self.returncode is None:
            return "still running"
        return f"exit code {self.returncode}"


class DirectReader(asyncio.StreamReader):
    """A stream reader whose bytes can go straight to their consumer.

    Once :meth:`divert` names a consumer, every chunk the transport feeds is handed to it
    at once, inside the transport's callback, instead of waiting in the buffer for a task
    to read it; reads then see only the end of the stream (or its error). That is one turn
    of the event loop fewer per line: the channel frames a bot's reply as it comes and
    wakes the match directly, and the referee's CPU per request falls (how much:
    docs/performance.md). Backends give a bot's stdout and stderr as
    these; other readers are read the ordinary way. What was buffered before the divert
    goes to the consumer first, so bytes keep their order. Nothing is buffered once
    diverted, so the reader never pauses its transport: the consumer must keep what it
    needs, bounded.
    """

    _consumer: Callable[[bytes], None] | None = None

    def divert(self, consumer: Callable[[bytes], None]) -> None:
        """Hand every chunk from now on (and what is buffered) to ``consumer``."""
        self._consumer = consumer
        # The base class's own buffer and flow control (stable since asyncio began).
        buffered = bytes(self._buffer)  # type: ignore[attr-defined]
        if buffered:
            self._buffer.clear()  # type: ignore[attr-defined]
            self._maybe_resume_transport()  # type: ignore[attr-defined]
            consumer(buffered)

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        consumer = self._consumer
        if consumer is None:
            super().feed_data(data)
        elif data:
            consumer(bytes(data))


@dataclass
class BotProcess(abc.ABC):
    """A running bot. ``stdout`` and ``stderr`` are asyncio stream readers of raw bytes
    (a backend gives :class:`DirectReader` ones: see there why)."""

    spec: BotSpec
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    notes: list[str] = field(default_factory=list)

    @abc.abstractmethod
    async def write(self, data: bytes) -> None:
        """Write bytes to the bot's stdin; raises ``ConnectionError`` if the bot is gone."""

    @abc.abstractmethod
    async def close_stdin(self) -> None:
        """Half-close stdin (end of file for the bot). Never raises."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """Kill the whole process tree (or container). Idempotent, never raises."""

    @abc.abstractmethod
    async def wait(self, timeout: float | None = None) -> ExitInfo | None:
        """Wait for the bot to end; ``None`` if it is still running after ``timeout``."""

    @abc.abstractmethod
    async def cleanup(self) -> ExitInfo:
        """Kill if needed, reap everything, free scratch space; returns how it ended."""

    async def freeze(self) -> None:  # noqa: B027 - optional, a no-op where unsupported
        """Stop the bot's every process until :meth:`thaw` (it waits in a pool meanwhile).

        A frozen bot uses no CPU: it can neither slow the other bots of the machine nor
        think ahead. Only done between matches, so no clock runs meanwhile. Never raises;
        a no-op where the backend (or this machine) cannot freeze.
        """

    async def thaw(self) -> None:  # noqa: B027 - optional, a no-op where unsupported
        """Let a frozen bot run again; returns once it does. Never raises."""

    async def peak_memory(self) -> int | None:
        """The most memory the bot has used so far, in bytes, counted as its limit is.

        ``None`` when the backend (or this machine) does not measure it: a report then says
        so rather than guess. Read it before :meth:`cleanup`, which frees the counters.
        """
        return None


class Sandbox(abc.ABC):
    """A backend that can start bots."""

    name: str = "base"

    @abc.abstractmethod
    async def start(self, bot: BotSpec, limits: Limits) -> BotProcess:
        """Start ``bot`` confined by ``limits``; raises ``InfrastructureError`` on our failure."""

    def describe(self) -> str:
        """One line on what this backend isolates (shown to the user once)."""
        return self.name

    async def prepare(self) -> None:  # noqa: B027 - optional, most backends need nothing
        """Do now what the first :meth:`start` would do once (probes, connecting), so that a
        worker can do it before its first match is handed to it. Raises what that start
        would raise; a backend whose first start does nothing special does nothing."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release backend-wide resources (e.g. a Docker client)."""
