"""Fixtures of the process sandbox's tests: each property in both modes, bubblewrap-only
properties, and a last-resort sweep of this run's bot uids after every module."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from referee.sandbox import process as process_module

# tests.sandbox.bot_processes is imported in the fixtures: it reads this run's uids, which
# tests/conftest.py claims once pytest is configured, after this file is loaded.


@pytest.fixture(params=["bwrap", "plain"])
def mode(request: pytest.FixtureRequest) -> str:
    """Each sandbox property is checked with and without bubblewrap."""
    from tests.sandbox.bot_processes import bwrap_usable

    if request.param == "bwrap" and not bwrap_usable():
        pytest.skip("bubblewrap is not usable on this machine (under CI=true this fails instead)")
    return str(request.param)


@pytest.fixture
def bwrap_only() -> None:
    """For properties only bubblewrap gives (network, file-system view)."""
    from tests.sandbox.bot_processes import bwrap_usable

    if not bwrap_usable():
        pytest.skip("bubblewrap is not usable on this machine (under CI=true this fails instead)")


@pytest.fixture(scope="module", autouse=True)
def sweep_uid_range() -> Iterator[None]:
    """Last resort after the module: fail loudly, and kill, if a test bot uid still runs."""
    from tests.sandbox.bot_processes import IS_ROOT, TEST_UIDS, live_processes, unleased

    yield
    if not IS_ROOT or not live_processes(uids=TEST_UIDS):
        return
    left = {}
    for uid in TEST_UIDS:
        if not live_processes(uid=uid):
            continue
        with unleased(uid) as ours:
            if ours:
                left[uid] = live_processes(uid=uid)
                asyncio.run(process_module.kill_uid(uid))
    assert not left, f"bot processes left after the module: {left}"
