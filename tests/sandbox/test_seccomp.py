"""The seccomp denials as data: the libseccomp program and the Docker profile built from them.

What the denials do to real bots is in the hostile suite (``tests/match/test_hostile.py``,
``tests/match/test_docker_matches.py``); these are the quick checks of how they are built.
"""

from __future__ import annotations

import json
import os
import random
import sys

import pytest

from referee.sandbox.docker_seccomp import ALLOWED, allowed_blocks, profile_json
from referee.sandbox.seccomp import DENIALS, LOCK_COMMANDS, compile_filter, denied_syscalls

FCNTL_DENIED = next(d.values for d in DENIALS if d.syscall == "fcntl")


def _covered(blocks: list[tuple[int, int]], n: int) -> int:
    return sum(1 for mask, value in blocks if n & mask == value)


@pytest.mark.parametrize("denied", [FCNTL_DENIED, frozenset({16, 38, 40}), frozenset({0})])
def test_the_allowed_blocks_hold_every_number_but_the_denied_once(denied: frozenset[int]) -> None:
    blocks = allowed_blocks(denied)
    rng = random.Random(7)
    samples = [*range(4200), *(rng.randrange(1 << 32) for _ in range(2000)), (1 << 32) - 1]
    for n in samples:
        assert _covered(blocks, n) == (0 if n in denied else 1), n
    assert len(blocks) <= 32 * len(denied)


def test_the_blocks_compare_the_low_32_bits_only() -> None:
    """The kernel reads fcntl's command as an int: upper bits change nothing."""
    blocks = allowed_blocks(FCNTL_DENIED)
    for cmd in (37, 1, 1030):
        assert _covered(blocks, cmd) == _covered(blocks, ((1 << 32) | cmd) & 0xFFFFFFFF)
    assert all(mask <= 0xFFFFFFFF for mask, _ in blocks)


def test_the_lock_commands_are_all_denied() -> None:
    assert LOCK_COMMANDS <= FCNTL_DENIED
    assert {1024, 1025, 1026} <= FCNTL_DENIED  # leases and directory notices


def test_the_docker_profile_allows_nothing_denied() -> None:
    profile = json.loads(profile_json("x86_64"))
    unconditional = {
        name
        for rule in profile["syscalls"]
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args")
        for name in rule["names"]
    }
    limited = {d.syscall for d in DENIALS if d.arg is not None}
    assert not unconditional & (denied_syscalls() | limited)
    assert {"socketcall", "fcntl64"}.isdisjoint(unconditional)  # 32-bit ways around
    assert "read" in unconditional and "write" in unconditional
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO" and profile["defaultErrnoRet"] == 1
    assert profile["architectures"][0] == "SCMP_ARCH_X86_64"
    for rule in profile["syscalls"]:
        if rule["names"] in (["socket"], ["socketpair"], ["fcntl"]):
            (arg,) = rule["args"]
            assert arg["op"] == "SCMP_CMP_MASKED_EQ" and arg["value"] <= 0xFFFFFFFF
    # Docker's own list has them: they are allowed here only through the rules above.
    assert {"fcntl", "socketpair", "flock", "io_uring_setup"} <= ALLOWED


def test_without_libseccomp_the_filter_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyseccomp", None)
    found = compile_filter()
    assert not found.works and not found.program
    assert "pyseccomp" in found.reason
    assert found.describe().startswith("NO seccomp filter (")


def test_the_filter_compiles_here() -> None:
    found = compile_filter()
    if not found.works:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but there is no seccomp filter: {found.reason}")
        pytest.skip(f"no libseccomp here: {found.reason}; under CI=true this fails")
    assert found.program and len(found.program) % 8 == 0  # struct sock_filter records
