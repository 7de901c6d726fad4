"""The Docker sandbox backend: one locked-down container per bot process.

Each bot runs in a fresh container of the bot runtime image (:data:`IMAGE_NAME` unless the
backend or the bot names another) with no network, a read-only root, a small ``/tmp`` tmpfs,
an unprivileged user, every capability dropped, ``no-new-privileges``, a seccomp profile of
our own (Docker's default allowlist less what :mod:`referee.sandbox.seccomp` denies, see
:mod:`referee.sandbox.docker_seccomp`), memory = memory+swap, a pids limit, a CPU quota and
rlimits. The bot's folder (or its one file) is bind-mounted
read-only at ``/bot``, the working directory, through the mount API: the volume string form
(``host:container:ro``) breaks on a file name with ``:`` or ``,``.

A bot naming an image the backend was not given as allowed is refused before anything is
created (loading a tournament refuses it earlier, with the setting that allows it): any
image on the host would otherwise do, including private ones holding credentials.

The bot's stdin, stdout and stderr are FIFOs mounted into the container that only the bot's
processes hold (:mod:`referee.sandbox.stdout_fifo`): the kernel carries each line as
through a pipe, with no daemon in the way. Through the attach socket a request crossed
dockerd and containerd-shim, and a round trip cost 2 to 7 times the process backend's
(``bench/docker_bench.py`` measures the attach socket, ``docker exec`` streams and the FIFOs
side by side); and stderr, coming the long way, arrived after a reply written later on the
stdout FIFO. A FIFO also shows a closed stdout at once: docker-init keeps a copy of the
container's own stdout, and the attach stream could not say that stdout alone was closed,
so a bot that closed it looked silent until its time bank ran out; now it is a crash at
once. Closing stdin closes the FIFO's write end, so the bot sees end of file.

The container's attach socket stays, for the container's own stdout and stderr (what the
shim says before it hands over to the bot, docker-init's complaints: kept as notes, the
first 4 KiB of each) and for its end, which is the end of that stream. It is opened
*before* the container starts so nothing is lost, and handed to an asyncio socket transport
(``loop.create_connection(..., sock=...)``). Docker multiplexes the two streams on it in
frames (an 8-byte header: stream type, three zero bytes, a big-endian payload length);
:class:`_FrameDemux`, the one hand-written part, splits them into two
:class:`asyncio.StreamReader` as bytes arrive, and a full reader pauses the transport's
reading; a task drains both into the notes.

Every blocking Docker SDK call runs in a worker thread. A container is removed when its
:class:`DockerBotProcess` is cleaned up, also when the cleanup is cancelled; containers
orphaned by a crashed referee carry the label :data:`LABEL` and are removed by
:func:`remove_leftovers` when a backend first connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import re
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from referee.errors import REFEREE_KILL, InfrastructureError, UsageError
from referee.sandbox.base import BotProcess, BotSpec, ExitInfo, Limits, Sandbox, bot_environment
from referee.sandbox.cgroups import peak_memory_of
from referee.sandbox.daemon import (
    LABEL,
    LABEL_BOT,
    LABEL_MATCH,
    LABEL_RUN,
    RUN_ENV,
    connect,
    docker_sdk,
    owner_labels,
    remove_leftovers,
)
from referee.sandbox.docker_seccomp import profile_json
from referee.sandbox.image import IMAGE_NAME, allowed_images, image_reference
from referee.sandbox.staging import give_tree
from referee.sandbox.stdout_fifo import (
    INSIDE_PATH,
    STDERR_INSIDE_PATH,
    STDIN_INSIDE_PATH,
    FifoWriter,
    StdoutFifo,
)

__all__ = [
    "IMAGE_NAME",
    "LABEL",
    "LABEL_RUN",
    "RUN_ENV",
    "DockerBotProcess",
    "DockerSandbox",
    "connect",
    "docker_status",
    "owner_labels",
    "remove_leftovers",
]

_BUILD_HINT = (
    "run `referee sandbox build-image` (or `referee sandbox build-image --offline` "
    "on a machine without a registry)"
)
_BOT_DIR = "/bot"
_NOBODY = 65534  # the uid and gid every container runs as
_STREAM_LIMIT = 2**16  # the same buffer limit as asyncio's subprocess pipes
_KILL_GRACE_S = 10.0

_T = TypeVar("_T")

_SIGNALS = {int(sig): sig for sig in signal.Signals}
_SIGNAL_REASONS = {
    signal.SIGXCPU: "the CPU time limit",
    signal.SIGXFSZ: "the file size limit",
    signal.SIGSEGV: "a segmentation fault",
    signal.SIGABRT: "an abort",
}


def _require_image(client: Any, image: str) -> None:
    docker = docker_sdk()
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise UsageError(f"the Docker image {image} is missing: {_BUILD_HINT}") from exc


def docker_status(image: str = IMAGE_NAME) -> tuple[bool, str]:
    """Whether the Docker backend is usable here, and one line saying why (not)."""
    try:
        client = connect(timeout=10.0)
    except UsageError as exc:
        return False, str(exc)
    try:
        version = client.version().get("Version", "?")
        _require_image(client, image)
    except UsageError as exc:
        return False, f"Docker {version}, but {exc}"
    finally:
        client.close()
    return True, f"Docker {version} answers; image {image} present"


class _ReaderGate(asyncio.ReadTransport):
    """What a :class:`asyncio.StreamReader` sees as its transport: a switch on the socket's.

    A reader calls ``pause_reading`` above twice its limit and ``resume_reading`` once
    drained. Both streams come over one socket, so its transport reads only while neither
    reader is full: an unread stream applies backpressure to the bot (like a full pipe)
    instead of filling the referee's memory.
    """

    def __init__(self, changed: Callable[[], None]) -> None:
        super().__init__()
        self._reading = True
        self._changed = changed

    def pause_reading(self) -> None:
        self._reading = False
        self._changed()

    def resume_reading(self) -> None:
        self._reading = True
        self._changed()

    def is_reading(self) -> bool:
        return self._reading


class _FrameDemux:
    """Splits Docker's multiplexed attach stream into stdout and stderr, incrementally.

    Payload bytes are forwarded as soon as they arrive; a frame is never waited for whole.
    Stream type 1 is stdout, 2 stderr; anything else (3 is the daemon's own error text) goes
    to stderr too and is noted.
    """

    HEADER_SIZE = 8

    def __init__(
        self,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        note: Callable[[str], None],
    ) -> None:
        self._readers = {1: stdout, 2: stderr}
        self._stderr = stderr
        self._note = note
        self._header = bytearray()
        self._target: asyncio.StreamReader | None = None
        self._remaining = 0

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self._remaining == 0:
                need = self.HEADER_SIZE - len(self._header)
                self._header += view[:need]
                view = view[need:]
                if len(self._header) < self.HEADER_SIZE:
                    return
                self._start_frame(bytes(self._header))
                self._header.clear()
                continue
            chunk = view[: self._remaining]
            view = view[len(chunk) :]
            self._remaining -= len(chunk)
            assert self._target is not None
            self._target.feed_data(bytes(chunk))

    def _start_frame(self, header: bytes) -> None:
        kind = header[0]
        self._remaining = int.from_bytes(header[4:8], "big")
        self._target = self._readers.get(kind)
        if self._target is None:
            self._note(f"docker sent a frame of stream type {kind}; passed on as stderr")
            self._target = self._stderr

    def feed_eof(self) -> None:
        if self._header or self._remaining:
            self._note("the attach stream ended inside a frame")
        for reader in self._readers.values():
            reader.feed_eof()


class _AttachProtocol(asyncio.Protocol):
    """The container's attach socket (its stdout and stderr), driven by an asyncio transport.

    Received bytes go through :class:`_FrameDemux` into :attr:`stdout` and :attr:`stderr`.
    The end of the stream is the end of the container (docker-init holds the container's
    stdout and stderr until then), so :attr:`ended` is set then, with the reason in
    :attr:`end_reason`.
    """

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.stdout = asyncio.StreamReader(limit=_STREAM_LIMIT)
        self.stderr = asyncio.StreamReader(limit=_STREAM_LIMIT)
        self.ended = asyncio.Event()
        self.end_reason = ""
        self._gates = (_ReaderGate(self._gates_changed), _ReaderGate(self._gates_changed))
        self.stdout.set_transport(self._gates[0])
        self.stderr.set_transport(self._gates[1])
        self._demux = _FrameDemux(self.stdout, self.stderr, self.notes.append)
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._demux.feed(data)

    def eof_received(self) -> bool:
        self._end("the bot's container has ended")
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None:
            self._end("the bot's container has ended")
        else:
            self.notes.append(f"attach socket failed: {exc}")
            self._end(f"lost the bot's container: {exc}")

    def _gates_changed(self) -> None:
        if self._transport is None:
            return
        if all(gate.is_reading() for gate in self._gates):
            self._transport.resume_reading()
        else:
            self._transport.pause_reading()

    def _end(self, reason: str) -> None:
        if self.ended.is_set():
            return
        self.end_reason = reason
        self._demux.feed_eof()
        self.ended.set()

    def abort(self) -> None:
        """Close the socket now; the readers see end of file."""
        if self._transport is not None:
            self._transport.abort()
        self._end("the attach socket is closed")


_NOTE_BYTES = 4096


async def _drain_into_notes(attach: _AttachProtocol) -> None:
    """Read the container's own stdout and stderr to their end (so that neither fills and
    stops the stream whose end is the container's); their first 4 KiB are notes."""

    async def drain(reader: asyncio.StreamReader, name: str) -> None:
        kept = bytearray()
        while chunk := await reader.read(_STREAM_LIMIT):
            kept += chunk[: _NOTE_BYTES - len(kept)]
        if kept:
            text = kept.decode("utf-8", errors="replace").strip()
            attach.notes.append(f"the container's {name} said: {text}")

    await asyncio.gather(drain(attach.stdout, "stdout"), drain(attach.stderr, "stderr"))


async def _open_attach(sock: socket.socket) -> _AttachProtocol:
    """The attach socket handed to an asyncio transport (which now owns and closes it)."""
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(_AttachProtocol, sock=sock)
    return protocol


class DockerBotProcess(BotProcess):
    """A bot running in a container: stdin and stdout through FIFOs, stderr over the
    container's attach socket (see the module docstring)."""

    def __init__(
        self,
        spec: BotSpec,
        container: Any,
        attach: _AttachProtocol,
        fifo: StdoutFifo,
        streams: tuple[asyncio.StreamReader, asyncio.StreamReader],
        run_blocking: Callable[..., Any],
        on_removed: Callable[[DockerBotProcess], None],
    ) -> None:
        stdout, stderr = streams
        super().__init__(spec=spec, stdout=stdout, stderr=stderr, notes=attach.notes)
        self._fifo = fifo
        self._drain = asyncio.ensure_future(_drain_into_notes(attach))
        self.container = container
        self._attach = attach
        self._run_blocking = run_blocking
        self._on_removed = on_removed
        self._stdin: asyncio.Future[FifoWriter | None] | None = None
        self._stdin_closed = False
        self._paused = False
        self._killed = False
        self._removed = False
        self._exit: ExitInfo | None = None

    @property
    def container_id(self) -> str:
        return str(self.container.id)

    def open_stdin(self) -> None:
        """Begin waiting for the bot's side of the stdin FIFO (once its container started)."""
        self._stdin = asyncio.ensure_future(self._fifo.open_writer(self._attach.ended))
        self._stdin.add_done_callback(self._stdin_opened)

    def _stdin_opened(self, opening: asyncio.Future[FifoWriter | None]) -> None:
        if opening.cancelled() or opening.exception() is not None:
            if not opening.cancelled():
                self.notes.append(f"cannot open the bot's stdin: {opening.exception()}")
            return
        writer = opening.result()
        if writer is not None and self._stdin_closed:
            writer.close()  # closed before the bot was there: it reads end of file at once

    async def _writer(self) -> FifoWriter:
        if self._stdin_closed:
            raise ConnectionError("the bot's stdin is closed")
        if self._attach.ended.is_set():
            raise ConnectionError(self._attach.end_reason)
        assert self._stdin is not None, "open_stdin() comes first"
        try:
            writer = await asyncio.shield(self._stdin)
        except OSError as exc:
            raise ConnectionError(f"cannot open the bot's stdin: {exc}") from None
        if writer is None:
            raise ConnectionError(f"{self._attach.end_reason} before it opened its stdin")
        return writer

    async def write(self, data: bytes) -> None:
        await (await self._writer()).send(data)

    async def close_stdin(self) -> None:
        if self._stdin_closed:
            return
        self._stdin_closed = True
        opening = self._stdin
        if opening is not None and opening.done() and not opening.cancelled():
            writer = None if opening.exception() is not None else opening.result()
            if writer is not None:
                writer.close()

    async def freeze(self) -> None:
        """``docker pause``: the daemon freezes the container's cgroup. Never raises."""
        if self._paused or self._killed or self._removed or self._exit is not None:
            return
        await self._pause(True)

    async def thaw(self) -> None:
        """``docker unpause``, when paused. Never raises."""
        if self._paused:
            await self._pause(False)

    async def _pause(self, pause: bool) -> None:
        docker = docker_sdk()
        call = self.container.pause if pause else self.container.unpause
        try:
            await self._run_blocking(call)
        except (docker.errors.DockerException, OSError) as exc:
            self.notes.append(f"docker {'pause' if pause else 'unpause'} failed: {exc}")
            return
        self._paused = pause

    async def kill(self) -> None:
        if self._killed or self._removed or self._exit is not None:
            return
        await self.thaw()  # the daemon refuses to kill a paused container
        self._killed = True
        docker = docker_sdk()
        try:
            await self._run_blocking(self.container.kill)
        except docker.errors.APIError as exc:
            # 409: it had already stopped; 404: already removed. Both mean "dead".
            if exc.status_code not in (404, 409):
                self.notes.append(f"docker kill failed: {exc}")
                self._killed = False
        except (docker.errors.DockerException, OSError) as exc:
            self.notes.append(f"docker kill failed: {exc}")
            self._killed = False

    async def _state(self) -> dict[str, Any] | None:
        """The container's ``State`` from the daemon, ``None`` when it cannot be read."""
        docker = docker_sdk()
        try:
            await self._run_blocking(self.container.reload)
        except (docker.errors.DockerException, OSError) as exc:
            self.notes.append(f"docker inspect failed: {exc}")
            return None
        state: dict[str, Any] = self.container.attrs.get("State", {})
        return state

    def _exit_info(self, state: dict[str, Any]) -> ExitInfo:
        code = int(state.get("ExitCode", -1))
        # docker-init (PID 1) passes a child's death by signal N on as exit status 128 + N.
        sig = code - 128 if code - 128 in _SIGNALS else None
        if state.get("OOMKilled"):
            return ExitInfo(returncode=code, signal=sig, oom_killed=True, detail="memory limit")
        if sig is None:
            return ExitInfo(returncode=code, detail=str(state.get("Error", "")))
        signum = _SIGNALS[sig]
        if signum == signal.SIGKILL and self._killed:
            reason = REFEREE_KILL
        else:
            reason = _SIGNAL_REASONS.get(signum, "")
        detail = f"{signum.name}: {reason}" if reason else signum.name
        return ExitInfo(returncode=code, signal=sig, detail=f"{detail} (exit status {code})")

    async def wait(self, timeout: float | None = None) -> ExitInfo | None:
        if self._exit is not None:
            return self._exit
        deadline = None if timeout is None else time.monotonic() + timeout
        ended = self._attach.ended
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            # The attach stream ends when the container's init exits; poll the daemon as well
            # in case nobody reads the streams (reading is then paused by backpressure).
            slice_s = 0.25 if remaining is None else min(0.25, remaining)
            if not ended.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ended.wait(), slice_s)
            state = await self._state()
            if state is None:
                return None
            if not state.get("Running", False) and state.get("Status") != "created":
                self._exit = self._exit_info(state)
                return self._exit
            if remaining is not None and remaining <= 0:
                return None
            if ended.is_set():
                await asyncio.sleep(min(0.02, remaining or 0.02))

    async def peak_memory(self) -> int | None:
        """The container's highest memory use, read from its cgroup where this host shows
        it (a daemon on this machine), else the daemon's ``max_usage`` (cgroup v1 only).

        The daemon's figure costs up to a second (its statistics come once a second, even
        "one-shot"); the kernel's counter is the same number, read at once.
        """
        docker = docker_sdk()
        if self._removed or self._exit is not None:
            return None
        state = await self._state()
        pid = state.get("Pid") if state is not None else None
        if isinstance(pid, int) and pid > 0:
            peak = peak_memory_of(pid, self.container_id)
            if peak is not None:
                return peak

        def read() -> Any:
            return self.container.stats(stream=False, one_shot=True)

        try:
            stats = await self._run_blocking(read)
        except (docker.errors.DockerException, OSError, ValueError):
            return None
        peak = stats.get("memory_stats", {}).get("max_usage") if isinstance(stats, dict) else None
        return peak if isinstance(peak, int) and peak > 0 else None

    async def cleanup(self) -> ExitInfo:
        loop = asyncio.get_running_loop()
        try:
            info = await self.wait(0)
            if info is None:
                await self.kill()
                info = await self.wait(_KILL_GRACE_S)
            if info is None:
                info = ExitInfo(returncode=None, detail="state unknown: the daemon did not say")
            return info
        finally:
            # Its readers end now: the drain takes what is left into the notes, and ends.
            self._attach.abort()
            if self._stdin is not None:
                self._stdin.cancel()
            self._fifo.close()
            if not self._removed:
                self._removed = True
                # Submitted before the next await: it runs even if we are cancelled meanwhile.
                removal = loop.run_in_executor(None, self._remove_container)
                await asyncio.shield(removal)

    def _remove_container(self) -> None:
        docker = docker_sdk()
        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except (docker.errors.DockerException, OSError) as exc:
            self.notes.append(f"docker rm failed (removed at the next start): {exc}")
        finally:
            self._on_removed(self)


_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")


class DockerSandbox(Sandbox):
    """Runs each bot in its own container (see the module docstring for the confinement).

    ``image`` is the default runtime image; a bot's ``BotSpec.image`` overrides it when it
    is ``image``, the referee's bot image or one of ``allowed_images``, and is refused
    (``UsageError``) otherwise. ``match_id`` only labels the containers. ``client`` is an
    existing ``docker.DockerClient``; without one the backend connects from the environment
    on the first :meth:`start`, checks the image and removes orphaned containers.
    """

    name = "docker"

    def __init__(
        self,
        image: str = IMAGE_NAME,
        *,
        allowed_images: Iterable[str] = (),
        match_id: str = "",
        client: Any | None = None,
    ) -> None:
        docker_sdk()
        self.image = image
        self.allowed_images = _allowed(image, allowed_images)
        self.match_id = match_id
        self._client = client
        self._own_client = client is None
        self._checked_images: set[str] = set()
        self._live: dict[int, DockerBotProcess] = {}  # by id(): BotProcess is unhashable
        self._connect_lock = asyncio.Lock()
        self._seccomp = profile_json()

    def describe(self) -> str:
        return (
            f"docker ({self.image}): no network, read-only root, non-root user, no "
            "capabilities, seccomp (Docker's default less io_uring, ptrace, vsock/netlink/"
            "AF_ALG sockets, file locks, inotify), memory/pids/CPU limits, /tmp tmpfs"
        )

    async def _run_blocking(self, func: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        return await asyncio.to_thread(func, *args, **kwargs)

    async def _ready_client(self, image: str) -> Any:
        async with self._connect_lock:
            if self._client is None:
                self._client = await self._run_blocking(connect)
                await self._run_blocking(remove_leftovers, self._client, orphans_only=True)
            if image not in self._checked_images:
                await self._run_blocking(_require_image, self._client, image)
                self._checked_images.add(image)
        return self._client

    async def prepare(self) -> None:
        """Connect, remove orphaned containers and check the image, now."""
        await self._ready_client(self.image)

    async def start(self, bot: BotSpec, limits: Limits) -> BotProcess:
        image = bot.image or self.image
        if image_reference(image) not in self.allowed_images:
            raise UsageError(
                f"bot {bot.name!r} names the Docker image {image!r}, which this sandbox does "
                f"not allow (allowed: {', '.join(sorted(self.allowed_images))})"
            )
        client = await self._ready_client(image)
        docker = docker_sdk()
        try:
            # The container's user (nobody) uses them; the folder keeps them ours alone.
            fifo = StdoutFifo.create(anyone=True, stdio=True)
        except OSError as exc:
            raise InfrastructureError(f"cannot make {bot.name!r}'s stdio FIFOs: {exc}") from exc
        options = self._create_options(bot, limits, image, fifo)
        creating = asyncio.ensure_future(self._run_blocking(client.containers.create, **options))
        try:
            container = await asyncio.shield(creating)
        except asyncio.CancelledError:
            fifo.close()
            # The worker thread creates the container anyway: wait for it and remove it.
            with contextlib.suppress(docker.errors.DockerException, OSError):
                await self._run_blocking(_force_remove, await creating)
            raise
        except docker.errors.ImageNotFound as exc:
            fifo.close()
            self._checked_images.discard(image)
            raise UsageError(f"the Docker image {image} is missing: {_BUILD_HINT}") from exc
        except (docker.errors.DockerException, OSError) as exc:
            fifo.close()
            raise InfrastructureError(f"docker could not create {bot.name!r}: {exc}") from exc
        process: DockerBotProcess | None = None
        started = False
        try:
            sock = await self._run_blocking(_attach, container)
            attach = await _open_attach(sock)
            streams = (
                await fifo.open_reader(_STREAM_LIMIT),
                await fifo.open_reader(_STREAM_LIMIT, "stderr"),
            )
            process = DockerBotProcess(
                bot, container, attach, fifo, streams, self._run_blocking, self._forget
            )
            self._live[id(process)] = process
            await self._run_blocking(container.start)
            process.open_stdin()
            started = True
            return process
        except (docker.errors.DockerException, OSError) as exc:
            raise InfrastructureError(f"docker could not start {bot.name!r}: {exc}") from exc
        finally:
            if not started:
                if process is not None:
                    await process.cleanup()
                else:
                    fifo.close()
                    removal = asyncio.get_running_loop().run_in_executor(
                        None, _force_remove, container
                    )
                    await asyncio.shield(removal)

    def _forget(self, process: DockerBotProcess) -> None:
        self._live.pop(id(process), None)

    def _create_options(
        self, bot: BotSpec, limits: Limits, image: str, fifo: StdoutFifo
    ) -> dict[str, Any]:
        docker = docker_sdk()
        ulimit = docker.types.Ulimit
        folder = bot.folder.resolve()
        if bot.single_file:
            source, target = folder / bot.single_file, posixpath.join(_BOT_DIR, bot.single_file)
        else:
            source, target = folder, _BOT_DIR
        if bot.writable:
            give_tree(folder, _NOBODY, _NOBODY)
        mount = docker.types.Mount(target, str(source), type="bind", read_only=not bot.writable)
        stdout = docker.types.Mount(INSIDE_PATH, str(fifo.path), type="bind", read_only=True)
        assert fifo.stdin_path is not None and fifo.stderr_path is not None
        stdin = docker.types.Mount(
            STDIN_INSIDE_PATH, str(fifo.stdin_path), type="bind", read_only=True
        )
        stderr = docker.types.Mount(
            STDERR_INSIDE_PATH, str(fifo.stderr_path), type="bind", read_only=True
        )
        memory = f"{limits.memory_mb}m"
        file_size = limits.file_size_mb << 20
        return {
            "image": image,
            "command": [*fifo.shim(), *_container_command(bot)],
            "name": f"referee-{_NAME_UNSAFE.sub('-', bot.name)[:40]}-{uuid.uuid4().hex[:8]}",
            "stdin_open": False,
            "tty": False,
            "network_mode": "none",
            "ipc_mode": "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"size={limits.tmp_mb}m,mode=1777,nosuid,nodev"},
            "user": f"{_NOBODY}:{_NOBODY}",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges", f"seccomp={self._seccomp}"],
            "mem_limit": memory,
            "memswap_limit": memory,
            "oom_score_adj": 1000,
            "pids_limit": limits.pids,
            "nano_cpus": int(limits.cpus * 1e9),
            "ulimits": [
                ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                ulimit(name="fsize", soft=file_size, hard=file_size),
                ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds),
                ulimit(name="core", soft=0, hard=0),
            ],
            "init": True,
            "log_config": docker.types.LogConfig(type="none"),
            "labels": {
                **owner_labels(),
                LABEL_MATCH: self.match_id,
                LABEL_BOT: bot.name,
            },
            "working_dir": _BOT_DIR,
            "mounts": [mount, stdout, stderr, stdin],
            "environment": bot_environment(),
        }

    async def aclose(self) -> None:
        """Clean up every bot this backend still runs, then close the client."""
        for process in list(self._live.values()):
            await process.cleanup()
        if self._client is not None and self._own_client:
            await self._run_blocking(self._client.close)
            self._client = None


def _allowed(image: str, extra: Iterable[str]) -> frozenset[str]:
    """The referee's bot image, the backend's default ``image`` and ``extra``, as references."""
    return allowed_images([image, *extra])


def _container_command(bot: BotSpec) -> list[str]:
    """``bot.command`` for inside the container: a program in the bot's folder gets ``/bot/``."""
    program, *args = bot.command
    local = (
        program == bot.single_file
        if bot.single_file
        else "/" not in program and (bot.folder / program).is_file()
    )
    if local and not posixpath.isabs(program):
        program = posixpath.join(_BOT_DIR, program)
    return [program, *args]


def _attach(container: Any) -> socket.socket:
    """Open the container's attach socket (before start) as a socket we own.

    The SDK hands out the HTTP connection's socket wrapped in ``SocketIO``; we duplicate its
    descriptor and close the SDK's wrapper and socket (left to the garbage collector, each
    socket was an unclosed-socket ``ResourceWarning``), so the socket's life is ours alone.
    Nothing can be buffered yet: the container has not run.
    """
    raw = container.attach_socket(params={"stdout": 1, "stderr": 1, "stream": 1})
    inner = getattr(raw, "_sock", None)
    if not isinstance(inner, socket.socket):
        raw.close()
        raise UsageError(
            "the docker backend needs a local or plain-TCP daemon socket "
            "(DOCKER_HOST over TLS or SSH is not supported)"
        )
    sock = socket.socket(fileno=os.dup(inner.fileno()))
    raw.close()
    inner.close()
    sock.setblocking(False)
    return sock


def _force_remove(container: Any) -> None:
    docker = docker_sdk()
    with contextlib.suppress(docker.errors.NotFound):
        container.remove(force=True)
