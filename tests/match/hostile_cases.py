"""What the hostile test bots do and what the referee must make of it, shared by the
process sandbox's matches (``test_hostile.py``) and Docker's (``test_docker_matches.py``):
the fault each bot earns, the seccomp probes and their answers, a closed stdout's fault,
and an idle pooled bot's CPU time."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.match.runner import play_match
from referee.matchlog import read_log
from referee.protocol.seats import SessionPool, seated
from referee.rules import RuleSet, replay
from referee.sandbox import Limits, load_bot, stage_bot
from referee.specs import TimeControl
from tests.match.conftest import BOTS

POLITE = BOTS / "polite.py"


# bot file -> expected fault kind of seat 0 (None: no fault)
EXPECTED = {
    "never_answers": "timeout",
    "infinite_loop": "timeout",
    "ignores_sigterm": None,
    "fork_many": None,
    "setsid_daemon": None,
    "memory_bomb": "crash",
    "tree_memory": None,
    "endless_line": "protocol",
    "stderr_flood": None,
    "garbage": "protocol",
    "invalid_utf8": "protocol",
    "deep_json": "protocol",
    "wrong_id": "protocol",
    "unsolicited": "protocol",
    "flood": "protocol",
    "worst_hello": "protocol",
    "exits_mid_match": "crash",
    # Also under bubblewrap, whose processes never hold the bot's stdout (a FIFO).
    "closes_stdout": "crash",
    "child_holds_stdout": "crash",
    "trickle": None,
    "not_held": "illegal",
    "pass_lead": "illegal",
    "same_card_twice": "illegal",
    "network": None,
    "write_outside": None,
    "signal_parent": None,
}


# Bots that try what the seccomp filter denies (referee/sandbox/seccomp.py); each plays on.
SECCOMP_BOTS = (
    "af_alg",
    "file_locks",
    "inotify",
    "io_uring",
    "keyctl",
    "netlink",
    "perf_event",
    "ptrace",
    "userfaultfd",
    "vsock",
)


def seccomp_findings(stderr: str) -> dict[str, str]:
    """A probe bot's ``SECCOMP <call>: <result>`` lines, checked to be all it made."""
    found: dict[str, str] = {}
    done = None
    for line in stderr.splitlines():
        if line.startswith("SECCOMP-DONE: "):
            done = line.removeprefix("SECCOMP-DONE: ")
        elif line.startswith("SECCOMP "):
            call, _, result = line.removeprefix("SECCOMP ").rpartition(": ")
            found[call] = result
    if done is not None and done.startswith("skipped"):
        pytest.skip(f"the probes know x86_64's system call numbers only ({done})")
    assert found and done == str(len(found)), stderr
    return found


def denied(call: str, i386: str = "ENOSYS") -> str:
    """What a denied call answers: EPERM, and ``i386`` through the 32-bit i386 entry (the
    process sandbox's filter: ENOSYS for any call there; Docker's profile: EPERM)."""
    return i386 if call.endswith("via i386") else "EPERM"


CLOSE_TC = TimeControl(move_ms=2000, bank_ms=8000, hello_ms=10000)


def closed_stdout_fault(played: Any) -> Any:
    """The fault of a bot that closed its stdout at its first request, charged a small part
    of its time: it is seen at the close, not when the move time and bank run out."""
    fault = next(s.fault for s in played.result.standings if s.seat == 0)
    assert fault is not None and fault.kind == "crash", fault
    assert "closed its stdout" in fault.detail, fault.detail
    assert "STDOUT: closing" in played.stderr[0]
    budget = CLOSE_TC.move_ms + CLOSE_TC.bank_ms
    assert fault.elapsed_ms is not None and fault.elapsed_ms < budget // 10, fault
    return fault


def cpu_seconds(pids: set[int]) -> float:
    """User and system CPU time of these processes, their threads included (/proc/<pid>/stat)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


async def idle_spinner_between_matches(
    sandbox: Any, staging: Path, tmp_path: Path, pids: Callable[[Any], set[int]], tc: TimeControl
) -> tuple[float, float, list[Any]]:
    """Two pooled matches of a bot that spins the CPU all the time: its CPU seconds over one
    second idle in the pool, and over one second lent again, and the second match's faults."""
    specs = [stage_bot(load_bot(p), staging) for p in (BOTS / "spins_when_idle.py", POLITE, POLITE)]
    rules = RuleSet.preset("arschloch", target=3).resolve(3)
    pool = SessionPool(sandbox, Limits(), tc)
    try:
        async with seated(specs, pool=pool, deal_key="deal-1") as table:
            await play_match(table, rules, 1, match_id="idle-1", log_path=tmp_path / "m1.jsonl")
        spinner = table.bots[0]
        start = cpu_seconds(pids(spinner.channel.proc))
        await asyncio.sleep(1.0)
        idle = cpu_seconds(pids(spinner.channel.proc)) - start
        async with seated(specs, pool=pool, deal_key="deal-2") as again:
            assert again.bots[0] is spinner, "the pool started a fresh process"
            start = cpu_seconds(pids(spinner.channel.proc))
            await asyncio.sleep(1.0)
            lent = cpu_seconds(pids(spinner.channel.proc)) - start
            log = tmp_path / "m2.jsonl"
            result = await play_match(again, rules, 2, match_id="idle-2", log_path=log)
    finally:
        await pool.aclose()
    replay(read_log(tmp_path / "m2.jsonl"))
    return idle, lent, [s.fault for s in result.standings]
