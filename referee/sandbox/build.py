"""A bot's build step: run once per version and toolchain, inside the sandbox it plays in.

A folder bot may name a build command in its ``bot.toml`` (``build = ["make"]``). Before a
bot with one plays, checks or is entered, :class:`Builder` turns its **sources** (the files
read, whose :func:`~referee.sandbox.staging.bot_sha256` stays the version's identity) into a
**built bundle** (the sources plus what the build wrote), and every later step stages that
bundle: the bytes that play are the bytes checked, whatever a compiler would make of the
same sources the next time.

How a build runs:

- the sources are written into a fresh folder under a staging root, which the sandbox mounts
  **writable** as ``/bot`` for this one process (:attr:`BotSpec.writable`: the process
  sandbox hands the tree to the build's own uid, Docker to ``nobody``); the rest of the file
  system is read-only, ``/tmp`` is a scratch of the build's own, there is no network, and
  the environment is the bot's (``referee/sandbox/process.py``, ``docker.py``);
- :class:`BuildLimits` confine it: memory, processes, CPU seconds (per process, as the
  kernel counts them), wall seconds (the whole build), the bytes it may leave in its folder
  (a file larger than that stops at the kernel's file-size limit; the total is watched while
  it runs and read again after it) and the output kept (the tail, with the cut counted);
- a build that exits non-zero, runs past a limit, or leaves what a bot may not hold (a
  symlink, too many files, a ``command`` that is not there) is refused with
  :class:`BuildFailed`: the reason, the first line that looks like an error, and the tail of
  the compiler's output;
- after it, the folder is read back the way every bot is read (``read_bot_files``: no
  symlink followed, bounded) and the build's processes are gone (the sandbox's cleanup).

The cache (:func:`build_cache_dir`) keeps each built bundle under a key of the sources'
SHA-256, the build command, the sandbox and the **toolchain** (:func:`toolchain_id`: the
Docker image's id, or the compilers on the process sandbox's ``PATH``), so a second
``bot check`` or a resumed tournament reuses it and a new compiler builds again. An
``flock`` per key makes concurrent builders of one key build once. A failed build is not
cached: its next attempt runs it again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from referee.errors import InfrastructureError, UsageError
from referee.sandbox.base import SANDBOX_PATH, BotProcess, BotSpec, Limits, Sandbox
from referee.sandbox.staging import (
    MAX_BOT_FILES,
    BotFile,
    bot_sha256,
    check_program_in,
    make_staging_root,
    read_bot_files,
    remove_staging_root,
    write_bot_folder,
)
from referee.specs import IMAGE_NAME
from referee.text import printable, safe_name

__all__ = [
    "BuildFailed",
    "BuildLimits",
    "Builder",
    "Built",
    "build_cache_dir",
    "run_sync",
    "toolchain_id",
]

_T = TypeVar("_T")

COMPILERS = ("cc", "gcc", "c++", "g++", "make", "rustc", "javac", "java")
"""The programs whose identity makes the process sandbox's toolchain (:func:`toolchain_id`)."""

_WATCH_S = 0.2
_ERROR_LINE = re.compile(
    r"(?i)(\berror\b|error:|\bundefined reference\b|cannot find|not found|no such file)"
)


@dataclass(frozen=True)
class BuildLimits:
    """What one build may use (``[build]`` in a tournament file)."""

    cpu_seconds: int = 300
    wall_seconds: int = 600
    memory_mb: int = 2048
    disk_mb: int = 256
    pids: int = 128
    log_kb: int = 64

    def sandbox_limits(self) -> Limits:
        """The sandbox's :class:`Limits` of a build process."""
        return Limits(
            memory_mb=self.memory_mb,
            cpu_seconds=self.cpu_seconds,
            file_size_mb=self.disk_mb,
            open_files=1024,
            pids=self.pids,
            tmp_mb=self.disk_mb,
            cpus=1.0,
        )

    def describe(self) -> str:
        """The limits in one line."""
        return (
            f"{self.cpu_seconds} CPU seconds, {self.wall_seconds} s of wall time, memory "
            f"{self.memory_mb} MiB, {self.pids} processes, {self.disk_mb} MiB written, "
            f"the last {self.log_kb} KiB of output kept"
        )


class BuildFailed(UsageError):
    """A build that did not make a bot: its reason, first error line and output's tail."""

    def __init__(self, bot: str, reason: str, log: str = "", first_error: str = "") -> None:
        self.bot, self.reason, self.log, self.first_error = bot, reason, log, first_error
        lines = [f"the build of bot {bot!r} failed: {reason}"]
        if first_error:
            lines.append(f"first error: {first_error}")
        if log:
            lines += ["build output (the end):", *("  " + line for line in log.splitlines())]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Built:
    """A built bot: ``spec`` points at the built bundle (``build`` cleared, ``sha256`` the
    bundle's), ``files`` are its bytes; ``cached`` when the cache held it already."""

    spec: BotSpec
    files: tuple[BotFile, ...]
    cached: bool
    seconds: float
    log: str


def build_cache_dir() -> Path:
    """``$REFEREE_BUILD_CACHE``, else ``$XDG_CACHE_HOME/arschloch-referee/builds``, else
    ``~/.cache/arschloch-referee/builds``."""
    given = os.environ.get("REFEREE_BUILD_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arschloch-referee" / "builds"


@functools.cache
def _host_toolchain() -> str:
    """The process sandbox's toolchain: each of :data:`COMPILERS` found on its ``PATH``,
    as its resolved path, size and modification time (a package upgrade changes them)."""
    parts = []
    for name in COMPILERS:
        found = shutil.which(name, path=SANDBOX_PATH)
        if found is None:
            parts.append(f"{name}:-")
            continue
        real = os.path.realpath(found)
        try:
            info = os.stat(real)
        except OSError:
            parts.append(f"{name}:-")
            continue
        parts.append(f"{name}:{real}:{info.st_size}:{info.st_mtime_ns}")
    return "host:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def toolchain_id(sandbox: str, image: str | None = None) -> str:
    """What a build depends on besides its sources: the Docker image's id for ``docker``,
    the host's compilers (:data:`COMPILERS`) for ``process``."""
    if sandbox != "docker":
        return _host_toolchain()
    import docker

    from referee.sandbox.daemon import connect
    from referee.sandbox.image import image_reference

    reference = image_reference(image or IMAGE_NAME)
    client = connect()
    try:
        return f"image:{client.images.get(reference).id}"
    except docker.errors.ImageNotFound:
        raise UsageError(
            f"the Docker image {reference} is missing: build it with "
            "`referee sandbox build-image --offline`"
        ) from None
    except docker.errors.DockerException as exc:
        raise InfrastructureError(f"cannot ask Docker for the image {reference}: {exc}") from exc
    finally:
        client.close()


class _Tail:
    """The last ``limit`` bytes of a build's output, and how many came before them."""

    def __init__(self, limit: int) -> None:
        self.limit, self.data, self.cut = limit, bytearray(), 0

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        extra = len(self.data) - self.limit
        if extra > 0:
            del self.data[:extra]
            self.cut += extra

    def text(self) -> str:
        text = bytes(self.data).decode("utf-8", "replace").replace("\t", "    ")
        body = "\n".join(printable(line) for line in text.splitlines())
        if self.cut:
            return f"[{self.cut} earlier bytes cut]\n{body}"
        return body


def first_error(log: str) -> str:
    """The first line of ``log`` that looks like a compiler's error, else its last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("[") or "bytes cut]" not in line]
    for line in lines:
        if _ERROR_LINE.search(line):
            return line[:300]
    return lines[-1][:300] if lines else ""


def _folder_bytes(folder: Path) -> tuple[int, int]:
    """The bytes (as allocated) and entries under ``folder``, never following a symlink."""
    total = entries = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            entries += 1
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total, entries


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to the end: here when no event loop runs, else on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="referee-build") as pool:
        return pool.submit(asyncio.run, coro).result()


class Builder:
    """Builds bots in one sandbox (``sandbox``: its name; ``images``: those the run allows)
    within ``limits``, through the cache in ``cache_dir``; ``builds`` counts the builds it
    ran, ``hits`` the bundles it found built."""

    def __init__(
        self,
        sandbox: str,
        *,
        images: tuple[str, ...] = (),
        limits: BuildLimits = BuildLimits(),
        cache_dir: Path | None = None,
    ) -> None:
        self.sandbox, self.images, self.limits = sandbox, images, limits
        self.cache_dir = cache_dir if cache_dir is not None else build_cache_dir()
        self.builds = self.hits = 0

    def build(self, spec: BotSpec, files: tuple[BotFile, ...] | None = None) -> Built:
        """The built bundle of ``spec`` (its ``files`` when given, else read now)."""
        return run_sync(self.abuild(spec, files))

    def prepared(self, spec: BotSpec) -> BotSpec:
        """``spec`` itself when it has no build step, else its built bundle's spec."""
        return self.build(spec).spec if spec.build else spec

    async def abuild(self, spec: BotSpec, files: tuple[BotFile, ...] | None = None) -> Built:
        """:meth:`build` inside a running event loop."""
        if not spec.build:
            raise ValueError(f"bot {spec.name!r} has no build step")
        sources = files if files is not None else read_bot_files(spec)
        toolchain = await asyncio.to_thread(toolchain_id, self.sandbox, spec.image)
        key = _cache_key(bot_sha256(sources), spec, self.sandbox, toolchain)
        self.cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        entry = self.cache_dir / key
        lock_fd = os.open(self.cache_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, lock_fd, fcntl.LOCK_EX)
            hit = _read_entry(spec, entry)
            if hit is not None:
                self.hits += 1
                return hit
            started = time.monotonic()
            built, log = await self._run(spec, sources)
            seconds = time.monotonic() - started
            self.builds += 1
            sha = bot_sha256(built)
            _write_entry(entry, built, sha, log, seconds, toolchain)
            bundle = dataclasses.replace(
                spec, folder=entry / "bot", build=(), sha256=sha, single_file=None
            )
            return Built(bundle, built, False, seconds, log)
        finally:
            os.close(lock_fd)

    async def _run(
        self, spec: BotSpec, sources: tuple[BotFile, ...]
    ) -> tuple[tuple[BotFile, ...], str]:
        from referee.sandbox import get_sandbox

        sandbox = get_sandbox(self.sandbox, images=self.images)
        root = make_staging_root()
        try:
            folder = root / f"{safe_name(spec.name)}-build-{secrets.token_hex(8)}"
            write_bot_folder(sources, folder)
            job = dataclasses.replace(
                spec,
                folder=folder,
                command=spec.build,
                build=(),
                writable=True,
                single_file=None,
                sha256="",
            )
            log = await self._execute(sandbox, job)
            try:
                built = read_bot_files(
                    dataclasses.replace(job, writable=False),
                    max_bytes=self.limits.disk_mb << 20,
                    max_files=MAX_BOT_FILES,
                )
                check_program_in(dataclasses.replace(spec, folder=folder, build=()), built)
            except UsageError as exc:
                raise BuildFailed(spec.name, f"it left a bot that cannot run: {exc}", log) from None
            return built, log
        finally:
            await sandbox.aclose()
            remove_staging_root(root)

    async def _execute(self, sandbox: Sandbox, job: BotSpec) -> str:
        """Run the build in ``sandbox``; its output's tail, or :class:`BuildFailed`."""
        limits = self.limits
        tail = _Tail(limits.log_kb * 1024)
        process = await sandbox.start(job, limits.sandbox_limits())
        reason = ""
        try:
            await process.close_stdin()
            readers = [
                asyncio.ensure_future(_drain(process.stdout, tail)),
                asyncio.ensure_future(_drain(process.stderr, tail)),
            ]
            reason = await self._watch(process, job.folder)
            if reason:
                await process.kill()
            await asyncio.wait(readers, timeout=5)
            for reader in readers:
                reader.cancel()
        finally:
            ended = await process.cleanup()
        log = tail.text()
        if not reason:
            used, _ = await asyncio.to_thread(_folder_bytes, job.folder)
            if used > limits.disk_mb << 20:
                reason = f"it wrote more than its {limits.disk_mb} MiB"
            elif ended.signal == 24:  # SIGXCPU
                reason = f"it ran past its CPU limit ({limits.cpu_seconds} CPU seconds)"
            elif ended.signal == 25:  # SIGXFSZ
                reason = f"it wrote a file larger than its {limits.disk_mb} MiB"
            elif ended.oom_killed:
                reason = f"it ran out of its {limits.memory_mb} MiB of memory"
            elif ended.returncode != 0:
                reason = f"{printable(' '.join(job.command))} ended with {ended.describe()}"
                if ended.returncode == 127:
                    reason += self._missing_hint(job)
        if reason:
            raise BuildFailed(job.name, reason, log, first_error(log))
        return log

    def _missing_hint(self, job: BotSpec) -> str:
        """Exit code 127 is the shell's "command not found": say where compilers are."""
        if self.sandbox == "docker":
            return (
                f" (a program it runs is not in the image {job.image or IMAGE_NAME}: C, C++ "
                'and Rust bots name image = "arschloch-referee-bot-native", Java bots '
                '"arschloch-referee-bot-java" in their bot.toml)'
            )
        return " (a program it runs is not installed here: `referee doctor` says which are)"

    async def _watch(self, process: BotProcess, folder: Path) -> str:
        """Wait for the build to end; a reason to stop it when it passes a limit first."""
        limits = self.limits
        deadline = time.monotonic() + limits.wall_seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return f"it ran past its wall limit ({limits.wall_seconds} s)"
            if await process.wait(min(_WATCH_S, left)) is not None:
                return ""
            used, entries = await asyncio.to_thread(_folder_bytes, folder)
            if used > limits.disk_mb << 20:
                return f"it wrote more than its {limits.disk_mb} MiB"
            if entries > MAX_BOT_FILES:
                return f"it made more than {MAX_BOT_FILES} files and folders"


async def _drain(stream: asyncio.StreamReader, tail: _Tail) -> None:
    while chunk := await stream.read(65536):
        tail.add(chunk)


def _cache_key(sources: str, spec: BotSpec, sandbox: str, toolchain: str) -> str:
    parts = json.dumps([sources, list(spec.build), list(spec.command), sandbox, toolchain])
    return hashlib.sha256(parts.encode("utf-8")).hexdigest()[:40]


def _read_entry(spec: BotSpec, entry: Path) -> Built | None:
    """The cached bundle at ``entry``, or ``None`` when there is none (or it is damaged)."""
    bundle = entry / "bot"
    try:
        meta = json.loads((entry / "build.json").read_text("utf-8"))
        files = read_bot_files(dataclasses.replace(spec, folder=bundle, single_file=None, build=()))
    except (OSError, ValueError, UsageError):
        return None
    sha = bot_sha256(files)
    if sha != meta.get("sha256"):
        return None
    built = dataclasses.replace(spec, folder=bundle, build=(), sha256=sha, single_file=None)
    return Built(built, files, True, float(meta.get("seconds", 0)), str(meta.get("log", "")))


def _write_entry(
    entry: Path, files: tuple[BotFile, ...], sha: str, log: str, seconds: float, toolchain: str
) -> None:
    """Store a built bundle at ``entry``: written aside, then renamed into place."""
    partial = entry.with_name(f".{entry.name}.{secrets.token_hex(4)}")
    try:
        partial.mkdir(mode=0o755)
        write_bot_folder(files, partial / "bot")
        meta = {"sha256": sha, "seconds": seconds, "log": log, "toolchain": toolchain}
        (partial / "build.json").write_text(json.dumps(meta), "utf-8")
        shutil.rmtree(entry, ignore_errors=True)
        os.rename(partial, entry)
    except OSError as exc:
        raise InfrastructureError(f"cannot store the build in {entry}: {exc}") from exc
    finally:
        shutil.rmtree(partial, ignore_errors=True)
