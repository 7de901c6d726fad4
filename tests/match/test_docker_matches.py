"""The hostile bots and the sample bots again, each bot in its own Docker container."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from typing import Any

import pytest

from referee.rules import replay
from referee.sandbox import Limits
from referee.specs import TimeControl
from tests.match.conftest import BOTS, SAMPLES, referee_containers
from tests.match.hostile_cases import (
    CLOSE_TC,
    EXPECTED,
    SECCOMP_BOTS,
    closed_stdout_fault,
    denied,
    idle_spinner_between_matches,
    seccomp_findings,
)

pytestmark = [pytest.mark.slow, pytest.mark.docker]
POLITE = BOTS / "polite.py"

# Where Docker differs from the process sandbox, and why.
DOCKER_EXPECTED = {
    **EXPECTED,
    # Its parent is the container's init, which passes the SIGTERM on to the bot itself:
    # the bot kills itself (a crash); the referee and the other bots are untouched.
    "signal_parent": "crash",
}
DOCKER_TC = TimeControl(move_ms=1500, bank_ms=1500, hello_ms=20_000)


@pytest.mark.parametrize(("bot", "kind"), sorted(DOCKER_EXPECTED.items()))
def test_hostile_bot_in_docker(play_docker, bot: str, kind: str | None) -> None:  # type: ignore[no-untyped-def]
    extra = {}
    if bot == "memory_bomb":
        extra = {
            "limits": Limits(memory_mb=128),
            "tc": TimeControl(move_ms=5000, bank_ms=5000, hello_ms=20_000),
        }
    played = play_docker(
        [BOTS / f"{bot}.py", POLITE, POLITE], target=2, tc=extra.pop("tc", DOCKER_TC), **extra
    )
    seat0 = next(s for s in played.result.standings if s.seat == 0)
    if kind is None:
        assert seat0.fault is None, seat0.fault
    else:
        assert seat0.fault is not None and seat0.fault.kind == kind, seat0.fault
        assert seat0.forfeit
    if bot == "memory_bomb":
        assert seat0.fault is not None and "memory limit" in seat0.fault.detail, seat0.fault
    if bot == "network":
        assert "NETWORK: blocked" in played.stderr[0]
    if bot == "write_outside":
        assert "WRITE-OUTSIDE: blocked" in played.stderr[0]
    assert played.log[-1]["type"] == "match_end"
    replay(played.log)
    assert referee_containers() == []


def test_every_sample_bot_plays_a_match_in_docker(play_docker) -> None:  # type: ignore[no-untyped-def]
    # The compiled samples play in Docker once built: tests/test_compiled_samples.py.
    bots = sorted(
        p
        for p in SAMPLES.iterdir()
        if (p / "bot.toml").exists() and "build" not in tomllib.loads((p / "bot.toml").read_text())
    )
    played = play_docker(bots, preset="arschloch", seed=3, tc=DOCKER_TC)
    assert [s.fault for s in played.result.standings] == [None] * len(bots), played.stderr
    replay(played.log)
    assert referee_containers() == []


@pytest.mark.parametrize("bot", SECCOMP_BOTS)
def test_the_seccomp_profile_denies(play_docker, bot: str) -> None:  # type: ignore[no-untyped-def]
    """Docker's default profile let io_uring, ptrace, AF_VSOCK and AF_NETLINK sockets, every
    file lock and inotify through (Docker 20.10); ours denies them, as the process
    sandbox's filter does, and the bot plays its match on."""
    played = play_docker([BOTS / f"{bot}.py", POLITE, POLITE], target=2, tc=DOCKER_TC)
    found = seccomp_findings(played.stderr[0])
    assert found == {call: denied(call, i386="EPERM") for call in found}
    assert not any(s.fault for s in played.result.standings)
    replay(played.log)
    assert referee_containers() == []


def test_a_closed_stdout_is_a_crash_at_once_in_docker(play_docker) -> None:  # type: ignore[no-untyped-def]
    """docker-init holds a copy of the container's stdout; the bot's own is a FIFO."""
    tc = CLOSE_TC.model_copy(update={"hello_ms": DOCKER_TC.hello_ms})
    closed_stdout_fault(play_docker([BOTS / "closes_stdout.py", POLITE, POLITE], target=2, tc=tc))
    assert referee_containers() == []


def container_pids(proc: Any) -> set[int]:
    """The host pids of one container's processes: those whose cgroup names its id."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if proc.container_id in (entry / "cgroup").read_text():
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


def test_an_idle_pooled_container_is_paused(docker_sandbox, staging: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``docker pause`` between matches: no CPU while idle, the second match played."""
    idle, lent, faults = asyncio.run(
        idle_spinner_between_matches(docker_sandbox, staging, tmp_path, container_pids, DOCKER_TC)
    )
    assert idle < 0.05, f"{idle:.2f} CPU seconds in one second idle"
    assert lent > 0.1, f"only {lent:.2f} CPU seconds in one second lent: does it spin?"
    assert faults == [None, None, None]
    assert referee_containers() == []
