"""Every backend through the one contract (tests/sandbox/conformance.py).

The backends: the process sandbox with bubblewrap and without, the Docker sandbox on the
real engine, and the in-memory :class:`~referee.testing.FakeSandbox`. Bubblewrap and Docker
skip where this machine lacks them, except under CI (``CI=true``), where that is a failure.
A property that does not apply to a backend (the table gives the reason) is not a test at all.
What only one backend does (bubblewrap's mounts, uid leases, Docker's hardening flags and
images) is tested in that backend's own file.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.sandbox import load_bot, make_staging_root, remove_staging_root, stage_bot
from referee.sandbox.base import BotProcess, BotSpec, Limits
from referee.sandbox.process import ProcessBotProcess, ProcessSandbox
from referee.testing import FakeSandbox, spec
from tests.conftest import require_docker, run_uids
from tests.sandbox.bot_processes import (
    IS_ROOT,
    bwrap_usable,
    live_processes,
    unleased,
)
from tests.sandbox.conformance import (
    LIMITS,
    NOT_APPLICABLE,
    PROPERTIES,
    Backend,
    fake_bot,
)

BOT = Path(__file__).resolve().parents[1] / "bots" / "conformance_bot.py"


class ProcessBackend(Backend):
    """The process sandbox, with or without bubblewrap, cgroups where the machine has them."""

    def __init__(self, staged: BotSpec, *, bwrap: bool) -> None:
        self.name = "process-bwrap" if bwrap else "process-plain"
        self.sandbox = ProcessSandbox(bwrap=bwrap, uid_range=run_uids())
        self.staged = staged

    async def start(self, limits: Limits = LIMITS) -> BotProcess:
        return await self.sandbox.start(self.staged, limits)

    async def survivors(self, bot: BotProcess) -> list[str]:
        """Live processes of the bot's uid (its own while leased), group and cgroup."""
        assert isinstance(bot, ProcessBotProcess) and bot.uid is not None
        with unleased(bot.uid) as ours:
            assert not ours, "the bot's uid is still leased to it until cleanup"
        found = set(live_processes(uid=bot.uid, pgid=bot.pid))
        if bot.cgroup is not None:
            found.update(f"{pid} (in its cgroup)" for pid in bot.cgroup.members())
        return sorted(found)

    def not_applicable(self) -> dict[str, str]:
        why = {}
        if not IS_ROOT:
            why["kill takes the tree"] = (
                "needs root: only the uid of its own that root drops a bot to finds a setsid "
                "daemon outside its process group (CI runs as root)"
            )
        cgroups = self.sandbox.cgroup_support()
        if not cgroups.freezer:
            why["freeze and thaw"] = (
                f"no cgroup freezer for bots here ({cgroups.describe()}): freeze is then a "
                "no-op, as BotProcess.freeze says"
            )
        return why


class DockerBackend(Backend):
    """The Docker sandbox on the real engine, with the bot image."""

    name = "docker"

    def __init__(self, staged: BotSpec, client: Any) -> None:
        from referee.sandbox.docker import DockerSandbox

        self.sandbox = DockerSandbox(client=client, match_id="conformance")
        self.staged = staged

    async def start(self, limits: Limits = LIMITS) -> BotProcess:
        return await self.sandbox.start(self.staged, limits)

    async def survivors(self, bot: BotProcess) -> list[str]:
        """The container's processes while it runs (its pid namespace holds them all)."""
        from referee.sandbox.docker import DockerBotProcess

        assert isinstance(bot, DockerBotProcess)
        container = bot.container

        def top() -> list[str]:
            container.reload()
            if container.status != "running":
                return []
            return [" ".join(row) for row in container.top()["Processes"]]

        return await asyncio.to_thread(top)

    async def aclose(self) -> None:
        await self.sandbox.aclose()


class FakeBackend(Backend):
    """:class:`~referee.testing.FakeSandbox` running :func:`conformance.fake_bot`."""

    name = "fake"

    def __init__(self) -> None:
        self.sandbox = FakeSandbox({"conformance": fake_bot})

    async def start(self, limits: Limits = LIMITS) -> BotProcess:
        return await self.sandbox.start(spec("conformance"), limits)

    async def survivors(self, bot: BotProcess) -> list[str]:
        raise AssertionError("a fake bot has no processes (see NOT_APPLICABLE)")


@pytest.fixture(scope="module")
def staged() -> Iterator[BotSpec]:
    """The suite's bot, staged where the sandbox users (and the Docker daemon) can read it."""
    root = make_staging_root()
    yield stage_bot(load_bot(BOT), root)
    remove_staging_root(root)


@pytest.fixture(scope="module")
def docker_client() -> Iterator[Any]:
    client = require_docker()
    yield client
    client.close()


def _our_containers(client: Any) -> list[str]:
    from referee.sandbox.daemon import LABEL, LABEL_OWNER, owner_labels

    filters = {"label": [LABEL, f"{LABEL_OWNER}={owner_labels()[LABEL_OWNER]}"]}
    return [c.name for c in client.containers.list(all=True, filters=filters)]


_MARKS = {
    "process-bwrap": [pytest.mark.slow, pytest.mark.bwrap],
    "process-plain": [pytest.mark.slow],
    "docker": [pytest.mark.slow, pytest.mark.docker],
    "fake": [],
}
CASES = [
    pytest.param(backend, prop, marks=marks, id=f"{backend}-{prop}")
    for backend, marks in _MARKS.items()
    for prop in PROPERTIES
    if (backend, prop) not in NOT_APPLICABLE  # not a test at all: the table says why
]


@pytest.fixture
def make_backend(
    request: pytest.FixtureRequest, staged: BotSpec
) -> Iterator[Callable[[], Backend]]:
    """How to build the backend under test (inside the test's own event loop)."""
    name = request.param
    if name == "fake":
        yield FakeBackend
    elif name == "docker":
        client = request.getfixturevalue("docker_client")
        yield lambda: DockerBackend(staged, client)
        left = _our_containers(client)
        assert not left, f"containers left after the test: {left}"
    else:
        if name == "process-bwrap" and not bwrap_usable():
            pytest.skip("bubblewrap is not usable here (under CI=true this fails instead)")
        yield lambda: ProcessBackend(staged, bwrap=name == "process-bwrap")


@pytest.mark.parametrize(("make_backend", "prop"), CASES, indirect=["make_backend"])
def test_the_contract(make_backend: Callable[[], Backend], prop: str) -> None:
    backend = make_backend()
    why = backend.not_applicable().get(prop)  # what this machine lacks (never under CI)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {prop} cannot be checked on {backend.name}: {why}")
        pytest.skip(f"not checkable here on {backend.name}: {why}")

    async def scenario() -> None:
        try:
            await PROPERTIES[prop](backend)
        finally:
            await backend.aclose()

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_the_table_names_only_properties_and_backends_that_exist() -> None:
    backends = {"process-bwrap", "process-plain", "docker", "fake"}
    assert {name for name, _ in NOT_APPLICABLE} <= backends
    assert {prop for _, prop in NOT_APPLICABLE} <= set(PROPERTIES)
    assert os.path.isfile(BOT)
