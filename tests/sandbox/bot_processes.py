"""Driving one bot process of the process sandbox by hand, for the tests of several
packages (the sandbox's own, the cluster's hostile workers, memory): the test bots staged,
lines written and read with a bound, stderr markers, and what is left of a bot afterwards.

The fixtures that go with them (``mode``, ``bwrap_only``, the uid sweep) are
``tests/sandbox/conftest.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import functools
import json
import os
import textwrap
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from referee.sandbox import load_bot, stage_bot
from referee.sandbox.base import BotSpec, Limits
from referee.sandbox.process import (
    BwrapStatus,
    ProcessBotProcess,
    ProcessSandbox,
    UidPool,
    probe_bwrap,
)
from tests.conftest import run_uids

T = TypeVar("T")

BOTS = Path(__file__).resolve().parents[1] / "bots"
IS_ROOT = os.geteuid() == 0
LIMITS = Limits(memory_mb=256, cpu_seconds=20, file_size_mb=4, pids=32, tmp_mb=16)
LINE_TIMEOUT_S = 15.0
HELLO = {"type": "hello", "id": 1, "protocol": 1, "time": {"move_ms": 1000, "bank_ms": 5000}}
ACT: dict[str, Any] = {
    "type": "act",
    "id": 2,
    "kind": "play",
    "hand": ["7C", "8H", "AS"],
    "trick": {"leader": 0, "count": 0, "top": []},
    "passed": [],
    "legal": [["7C"], ["8H"], ["AS"]],
    "bank_ms": 5000,
}

TEST_UIDS = run_uids()  # this test run's own block (tests/conftest.py)

needs_root = pytest.mark.skipif(not IS_ROOT, reason="dropping to a bot uid needs root")


def run(coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
    """Run one scenario on a fresh event loop, bounded in time."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


@functools.cache  # this test run's one probe (the sandboxes under test probe their own)
def bwrap_here() -> BwrapStatus:
    """Bubblewrap on this machine, for the bots' user."""
    return probe_bwrap(UidPool() if IS_ROOT else None)


def bwrap_usable() -> bool:
    status = bwrap_here()
    if status.works:
        return True
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but bubblewrap is unusable: {status.reason}")
    return False


def make_sandbox(mode: str, **options: Any) -> ProcessSandbox:
    """``bwrap`` or ``plain``; ``auto`` uses bubblewrap when it works (the default)."""
    bwrap = None if mode == "auto" else mode == "bwrap"
    return ProcessSandbox(bwrap=bwrap, uid_range=TEST_UIDS, **options)


# --------------------------------------------------------------------------- processes


def proc_status(pid: str) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            text = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def _pgid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[2])
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def live_processes(
    *, uid: int | None = None, pgid: int | None = None, uids: range = range(0)
) -> list[str]:
    """Non-zombie processes running as ``uid`` (or one of ``uids``) or in group ``pgid``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        fields = proc_status(pid)
        if fields is None or fields.get("State", "").startswith("Z"):
            continue
        ids = {int(part) for part in fields.get("Uid", "").split()}
        if (
            (uid is not None and uid in ids)
            or (pgid is not None and _pgid(pid) == pgid)
            or any(each in uids for each in ids)
        ):
            found.append(f"{pid} {fields.get('Name')} uid={sorted(ids)}")
    return found


@contextlib.contextmanager
def unleased(uid: int) -> Iterator[bool]:
    """Hold ``uid``'s lease lock while checking it; ``False`` if another referee leased it.

    Test runs may overlap (ours, the match runner's): a uid we released may already run
    someone else's bot, which is theirs to check.
    """
    path = UidPool().lock_dir / str(uid)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def assert_nothing_left(bot: ProcessBotProcess, uid: int | None) -> None:
    """No process of this bot is left: not in its process group, not under its uid."""
    assert not live_processes(pgid=bot.pid), f"processes of {bot.spec.name} left in its group"
    if uid is None:
        return
    with unleased(uid) as ours:
        left = live_processes(uid=uid) if ours else []
    assert not left, f"processes of bot {bot.spec.name} left under uid {uid}: {left}"


# --------------------------------------------------------------------------- bots


def staged(root: Path, name: str, *args: str) -> BotSpec:
    """The hostile bot ``tests/bots/<name>.py`` staged under ``root``, with extra argv."""
    spec = stage_bot(load_bot(BOTS / f"{name}.py"), root)
    return dataclasses.replace(spec, command=spec.command + args)


def script(root: Path, code: str, name: str = "probe") -> BotSpec:
    """A single-file bot that runs ``code`` (to probe the sandbox from inside)."""
    source = root / f"{name}-source"
    source.mkdir(exist_ok=True)
    (source / f"{name}.py").write_text(textwrap.dedent(code))
    return stage_bot(load_bot(source / f"{name}.py"), root)


async def send(bot: ProcessBotProcess, message: dict[str, Any]) -> None:
    await bot.write(json.dumps(message).encode() + b"\n")


async def reply(bot: ProcessBotProcess) -> dict[str, Any]:
    line = await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S)
    assert line.endswith(b"\n"), f"no reply line from {bot.spec.name}: {line!r}"
    decoded: dict[str, Any] = json.loads(line)
    return decoded


async def greet(bot: ProcessBotProcess) -> None:
    await send(bot, HELLO)
    assert (await reply(bot))["type"] == "ready"


async def marker(bot: ProcessBotProcess, word: str) -> str:
    """Read the bot's stderr up to the line ``<word>: ...``; returns what follows."""
    seen: list[bytes] = []
    while True:
        line = await asyncio.wait_for(bot.stderr.readline(), LINE_TIMEOUT_S)
        assert line, f"stderr ended before {word}: {b''.join(seen)[-2000:]!r}"
        seen.append(line)
        text = line.decode(errors="replace").rstrip("\n")
        if text.startswith(word + ": "):
            return text[len(word) + 2 :]


async def markers(bot: ProcessBotProcess, prefix: str, until: str) -> list[str]:
    """The bot's stderr lines starting with ``prefix``, up to one starting with ``until``."""
    lines: list[str] = []
    while True:
        line = await asyncio.wait_for(bot.stderr.readline(), LINE_TIMEOUT_S)
        assert line, f"stderr ended before {until!r}: {lines}"
        text = line.decode(errors="replace").rstrip("\n")
        if text.startswith(prefix):
            lines.append(text)
        if text.startswith(until):
            return lines
