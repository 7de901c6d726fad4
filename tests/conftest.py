"""Suite-wide checks: nothing the tests started may outlive the test session."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest


def _referee_containers() -> list[str] | None:
    if shutil.which("docker") is None:
        return None
    out = subprocess.run(
        ["docker", "ps", "-a", "-q", "--filter", "label=org.arschloch-referee"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return out.stdout.split() if out.returncode == 0 else None


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """After the whole suite: no container with the referee's label, no bot process."""
    yield
    from tests.match.conftest import sandbox_pids

    deadline = time.monotonic() + 10
    while sandbox_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sandbox_pids() == [], "bot processes outlived the test suite"
    left = _referee_containers()
    assert not left, f"containers with the referee's label outlived the suite: {left}"
