"""The hostile bots and the sample bots again, each bot in its own Docker container."""

from __future__ import annotations

import pytest

from referee.rules import replay
from referee.sandbox import Limits
from referee.specs import TimeControl
from tests.match.conftest import BOTS, SAMPLES, referee_containers
from tests.match.test_hostile import EXPECTED, SECCOMP_BOTS, denied, seccomp_findings

pytestmark = pytest.mark.docker
POLITE = BOTS / "polite.py"

# Where Docker differs from the process sandbox, and why.
DOCKER_EXPECTED = {
    **EXPECTED,
    # docker-init (tini) keeps a copy of stdout, as bubblewrap does: no end of file shows.
    "closes_stdout": "timeout",
    # Its parent is the container's init, which passes the SIGTERM on to the bot itself:
    # the bot kills itself (a crash); the referee and the other bots are untouched.
    "signal_parent": "crash",
}
DOCKER_TC = TimeControl(move_ms=1500, bank_ms=1500, hello_ms=20_000)


@pytest.mark.parametrize(("bot", "kind"), sorted(DOCKER_EXPECTED.items()))
def test_hostile_bot_in_docker(play_docker, bot: str, kind: str | None) -> None:  # type: ignore[no-untyped-def]
    extra = {}
    if bot == "memory_bomb":
        extra = {"limits": Limits(memory_mb=128), "tc": TimeControl(move_ms=5000, bank_ms=5000, hello_ms=20_000)}
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
    bots = sorted(p for p in SAMPLES.iterdir() if (p / "bot.toml").exists())
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
