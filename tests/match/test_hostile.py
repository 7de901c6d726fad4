"""Hostile bots against the real process sandbox: the right fault, a valid match, no leftovers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from referee.rules import replay
from referee.sandbox import Limits, load_bot, stage_bot
from referee.specs import TimeControl
from referee.stderrlog import MatchStderr, stderr_path
from tests.match.conftest import BOTS, IN_CI, sandbox_pids
from tests.match.hostile_cases import (
    CLOSE_TC,
    EXPECTED,
    POLITE,
    SECCOMP_BOTS,
    closed_stdout_fault,
    denied,
    idle_spinner_between_matches,
    seccomp_findings,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("bot", SECCOMP_BOTS)
def test_the_seccomp_filter_denies(play, sandbox, bot: str) -> None:  # type: ignore[no-untyped-def]
    """Each call fails as denied (the same bots without the filter: every one succeeds or
    fails otherwise, docs/sandboxes.md), and the bot plays its match on."""
    if not sandbox.seccomp_filter().works:
        why = sandbox.seccomp_filter().reason
        if IN_CI:
            pytest.fail(f"CI=true but the process sandbox has no seccomp filter: {why}")
        pytest.skip(f"no seccomp filter here ({why}); under CI=true this fails")
    played = play([BOTS / f"{bot}.py", POLITE, POLITE], target=3)
    found = seccomp_findings(played.stderr[0])
    assert found == {call: denied(call) for call in found}
    assert not any(s.fault for s in played.result.standings)
    replay(played.log)
    assert sandbox_pids() == []


@pytest.mark.parametrize(("bot", "kind"), sorted(EXPECTED.items()))
def test_hostile_bot(play, bot: str, kind: str | None) -> None:  # type: ignore[no-untyped-def]
    extra = {}
    if bot == "memory_bomb":  # allocating takes time: let the limit, not the clock, stop it
        extra = {
            "limits": Limits(memory_mb=256),
            "tc": TimeControl(move_ms=3000, bank_ms=3000, hello_ms=8000),
        }
    played = play([BOTS / f"{bot}.py", POLITE, POLITE], target=3, **extra)
    result = played.result
    seat0 = next(s for s in result.standings if s.seat == 0)
    if kind is None:
        assert seat0.fault is None, seat0.fault
        assert not any(s.forfeit for s in result.standings)
    else:
        assert seat0.fault is not None and seat0.fault.kind == kind, seat0.fault
        assert seat0.forfeit and seat0.place == 3
        faults = [line for line in played.log if line["type"] == "fault"]
        assert len(faults) == 1 and faults[0]["seat"] == 0
    # The others' match is complete and valid.
    assert played.log[-1]["type"] == "match_end"
    assert sorted(s.seat for s in result.standings) == [0, 1, 2]
    replay(played.log)
    assert sandbox_pids() == [], "a process of the match is still running"


def test_a_closed_stdout_is_a_crash_at_once(play) -> None:  # type: ignore[no-untyped-def]
    closed_stdout_fault(play([BOTS / "closes_stdout.py", POLITE, POLITE], target=3, tc=CLOSE_TC))


def test_the_worst_line_for_the_parser_at_hello_harms_only_its_sender(play) -> None:  # type: ignore[no-untyped-def]
    """The old parser spent 18 s on this line, and the three others timed out at hello."""
    played = play(
        [BOTS / "worst_hello.py", POLITE, POLITE, POLITE],
        target=3,
        tc=TimeControl(move_ms=1000, bank_ms=1000, hello_ms=5000),
    )
    bad, *others = played.sessions
    assert bad.fault is not None and bad.fault.kind == "protocol"
    assert bad.fault.detail == "reply nests arrays/objects 65 deep; the limit is 64"
    assert bad.fault.reply is not None and bad.fault.reply.startswith("[" * 65 + '"')
    assert "WORST: sending 65536 bytes" in played.stderr[0]
    assert all(s.ready_name == "polite" and s.fault is None for s in others)
    assert [s.seat for s in played.result.standings if s.forfeit] == [0]
    replay(played.log)


def test_a_flooding_bot_is_faulted_and_its_lines_are_not_kept(play) -> None:  # type: ignore[no-untyped-def]
    played = play([BOTS / "flood.py", POLITE, POLITE], target=3)
    flooder = played.sessions[0]
    assert "FLOOD: started" in played.stderr[0]
    fault = flooder.fault
    assert fault is not None and fault.kind == "protocol"
    assert "lines nobody asked for" in fault.detail or "a line nobody" in fault.detail
    assert fault.reply == '{"note":"nobody asked"}'
    assert flooder.channel.held_lines() == 0, "a line nobody asked for was kept"
    assert flooder.channel.unasked >= 1
    assert not any(s.fault for s in played.sessions[1:])
    assert played.log[-1]["type"] == "match_end"
    replay(played.log)


def test_fault_details_explain(play) -> None:  # type: ignore[no-untyped-def]
    played = play([BOTS / "wrong_id.py", POLITE, POLITE], target=3)
    fault = next(line for line in played.log if line["type"] == "fault")
    assert "does not match request id" in fault["detail"]
    assert fault["id"] is not None and fault["reply"] is not None
    played = play([BOTS / "exits_mid_match.py", POLITE, POLITE], target=3)
    fault = next(line for line in played.log if line["type"] == "fault")
    assert "exit" in fault["detail"] and "3" in fault["detail"], fault["detail"]
    played = play(
        [BOTS / "memory_bomb.py", POLITE, POLITE],
        target=3,
        limits=Limits(memory_mb=256),
        tc=TimeControl(move_ms=3000, bank_ms=3000, hello_ms=8000),
    )
    assert "MEMORY: no limit hit" not in played.stderr[0]
    assert "MemoryError" in played.stderr[0]


def test_shared_memory_is_killed_at_the_memory_limit(play, sandbox) -> None:  # type: ignore[no-untyped-def]
    """2 GiB of shared memory (not counted by RLIMIT_DATA): the bot's cgroup stops it, the
    match goes on for the others."""
    cgroups = sandbox.cgroup_support()
    if not cgroups.works:
        if IN_CI:
            pytest.fail(f"CI=true but bots get no cgroup here: {cgroups.reason}")
        pytest.skip(f"no cgroup for bots here ({cgroups.reason}); under CI=true this fails")
    played = play(
        [BOTS / "shared_memory.py", POLITE, POLITE],
        target=3,
        limits=Limits(memory_mb=128),
        tc=TimeControl(move_ms=3000, bank_ms=3000, hello_ms=8000),
    )
    fault = next(line for line in played.log if line["type"] == "fault")
    assert fault["seat"] == 0 and fault["kind"] == "crash"
    assert "killed at the memory limit" in fault["detail"], fault["detail"]
    assert "SHARED: no limit hit" not in played.stderr[0]
    assert played.log[-1]["type"] == "match_end"
    assert [s.forfeit for s in sorted(played.result.standings, key=lambda s: s.seat)] == [
        True,
        False,
        False,
    ]
    replay(played.log)
    assert sandbox_pids() == []


def test_stderr_is_capped(play, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    played = play([BOTS / "stderr_flood.py", POLITE, POLITE], target=3)
    assert len(played.stderr[0].encode()) <= 64 * 1024 + 100
    # Beside the log: the last 64 KiB of the 16 MiB flood, the rest counted, at its move.
    kept = MatchStderr.model_validate_json(stderr_path(tmp_path / "match-1.jsonl").read_bytes())
    flood = kept.seats[0]
    text = "".join(p.text for p in flood.pieces)
    assert flood.written == 16 * 1024 * 1024 and flood.cut == flood.written - 64 * 1024
    assert len(text.encode()) == 64 * 1024 and text.endswith("x\n")
    assert set(text.replace("FLOOD ", "").replace("\n", "")) == {"x"}
    first = (
        next(
            i
            for i, row in enumerate(played.log)
            if row.get("seat") == 0 and row["type"] in ("played", "passed", "leftover")
        )
        + 1
    )
    assert [p.line for p in flood.pieces] == [first]  # numbered from 1, the header
    assert [s.written for s in kept.seats[1:]] == [0, 0]


def test_network_is_unreachable(play) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 47123))
        server.listen()
        played = play([BOTS / "network.py", POLITE, POLITE], target=3)
    assert "NETWORK: blocked" in played.stderr[0], played.stderr[0]


def test_writes_outside_scratch_fail(play) -> None:  # type: ignore[no-untyped-def]
    played = play([BOTS / "write_outside.py", POLITE, POLITE], target=3)
    assert "WRITE-OUTSIDE: blocked" in played.stderr[0], played.stderr[0]
    assert "WRITE-TMP: ok" in played.stderr[0]


def test_other_bots_files_are_unreadable(play, staging: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    victim = stage_bot(load_bot(POLITE), staging)
    secret = victim.folder / (victim.single_file or "polite.py")
    folder = tmp_path / "reader"
    folder.mkdir()
    (folder / "read_other.py").write_text((BOTS / "read_other.py").read_text())
    (folder / "bot.toml").write_text(
        f'name = "reader"\ncommand = ["python3", "read_other.py", "{secret}"]\n'
    )
    played = play([folder, victim, POLITE], target=3)
    assert "READ-SECRETS: blocked" in played.stderr[0], played.stderr[0]


def test_signalling_the_parent_harms_nobody(play) -> None:  # type: ignore[no-untyped-def]
    played = play([BOTS / "signal_parent.py", POLITE, POLITE], target=3)
    assert "SIGNAL: still alive" in played.stderr[0]
    assert played.result.standings[0].fault is None


def test_an_idle_pooled_bot_is_frozen(sandbox, staging: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Its CPU time stands still while it waits in the pool, runs again once it is lent (so
    the first check can fail), and it plays the second match as well as the first."""
    if not sandbox.cgroup_support().freezer:
        why = sandbox.cgroup_support().reason
        if IN_CI:
            pytest.fail(f"CI=true but bots get no cgroup freezer here: {why}")
        pytest.skip(f"no cgroup freezer for bots here ({why}); under CI=true this fails")

    def pids(proc: Any) -> set[int]:
        return set(proc.cgroup.members())

    tc = TimeControl(move_ms=1000, bank_ms=2000, hello_ms=10000)
    idle, lent, faults = asyncio.run(
        idle_spinner_between_matches(sandbox, staging, tmp_path, pids, tc)
    )
    assert idle < 0.05, f"{idle:.2f} CPU seconds in one second idle"
    assert lent > 0.1, f"only {lent:.2f} CPU seconds in one second lent: does it spin?"
    assert faults == [None, None, None]
    assert sandbox_pids() == []
