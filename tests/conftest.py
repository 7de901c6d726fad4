"""Suite-wide set-up and checks: this run's own uids and containers, and nothing left of them.

Several test runs, tournaments and referees may share this machine. A test run therefore
claims, before any test starts, a block of sandbox uids of its own (``REFEREE_SANDBOX_UIDS``,
locked for the whole session) and a run id that labels every container it creates
(``REFEREE_RUN_ID``); both are inherited by the worker processes the tests start. The checks
below and in the tests look only at those: another run's bots are never this run's business.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Above the sandbox's default range (61000-61999), which referees outside the tests use: a
# tournament running beside the tests never lends its bots one of a test run's uids.
_UID_BASE = 62000
_UID_BLOCK = 50
_UID_BLOCKS = 40
_held_lock: int | None = None


def _claim_uid_block() -> range:
    """Lock the first free block of sandbox uids for this session (kept until it exits)."""
    global _held_lock
    folder = Path(tempfile.gettempdir()) / "referee-test-uid-blocks"
    folder.mkdir(mode=0o700, exist_ok=True)
    for block in range(_UID_BLOCKS):
        fd = os.open(folder / str(block), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _held_lock = fd
        start = _UID_BASE + block * _UID_BLOCK
        return range(start, start + _UID_BLOCK)
    raise RuntimeError(f"all {_UID_BLOCKS} blocks of test uids are taken by other test runs")


# The slow lane: every test that starts real bot processes, containers, tournaments or the
# command line in a subprocess. `pytest -m "not slow"` runs the rest (the engine, the
# protocol, the match runner on the in-memory sandbox, scheduling, ratings, the store)
# quickly. Each module says so itself (`pytestmark = pytest.mark.slow`, or the mark on a
# test); a test that needs Docker or bubblewrap is slow by definition, and one marked so
# without `slow` stops the collection here rather than slip into the quick lane.
_SLOW_BY_NATURE = ("docker", "bwrap")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [
        item.nodeid
        for item in items
        if any(item.get_closest_marker(m) for m in _SLOW_BY_NATURE)
        and item.get_closest_marker("slow") is None
    ]
    if unmarked:
        shown = "\n  ".join(unmarked[:10])
        raise pytest.UsageError(
            f"{len(unmarked)} test(s) marked docker or bwrap but not slow; mark the module "
            f"`pytestmark = [pytest.mark.slow, ...]` (or the test):\n  {shown}"
        )


def pytest_configure(config: pytest.Config) -> None:
    # A shell without job control starts a background command (`.ci/run &`, `nohup make
    # test &`) with SIGINT ignored, and an ignored signal stays ignored through fork and
    # exec: every referee the tests start, and then stop with Ctrl-C, would ignore it too.
    # The tests ask what Ctrl-C does, so their processes get Python's default handler back
    # (a handler, unlike SIG_IGN, is reset to the default in an exec'd child).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if "REFEREE_SANDBOX_UIDS" not in os.environ:
        uids = _claim_uid_block()
        os.environ["REFEREE_SANDBOX_UIDS"] = f"{uids.start}-{uids.stop - 1}"
    os.environ.setdefault("REFEREE_RUN_ID", f"pytest-{os.getpid()}-{secrets.token_hex(4)}")


def run_uids() -> range:
    """The sandbox uids this test run lends to bots."""
    first, _, last = os.environ["REFEREE_SANDBOX_UIDS"].partition("-")
    return range(int(first), int(last) + 1)


def sandbox_pids() -> list[int]:
    """Live processes running under one of this run's sandbox uids."""
    uids = run_uids()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("State", "").startswith("Z"):
            continue  # a zombie waiting for init to reap it: nothing runs
        if int(fields.get("Uid", "-1").split()[0]) in uids:
            found.append(int(entry.name))
    return found


def run_containers() -> list[str] | None:
    """Ids of the containers this test run created (``None`` without a docker client)."""
    if shutil.which("docker") is None:
        return None
    out = subprocess.run(
        [
            "docker",
            "ps",
            "-a",
            "-q",
            "--filter",
            f"label=org.arschloch-referee.run={os.environ['REFEREE_RUN_ID']}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return out.stdout.split() if out.returncode == 0 else None


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """After the whole suite: no bot process of this run's uids, no container of this run."""
    yield
    deadline = time.monotonic() + 10
    while sandbox_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sandbox_pids() == [], "bot processes outlived the test suite"
    left = run_containers()
    assert not left, f"containers of this test run outlived the suite: {left}"


def require_docker() -> Any:
    """A Docker client with the bot image; a skip here, a failure under CI (``CI=true``)."""
    strict = os.environ.get("CI") == "true"

    def unusable(why: str) -> None:
        if strict:
            pytest.fail(f"CI=true but {why}")
        pytest.skip(f"{why}; under CI=true this fails")

    try:
        from referee.sandbox.docker import IMAGE_NAME, connect
    except ImportError as exc:
        unusable(f"the docker SDK is not installed ({exc})")
    from referee.errors import UsageError

    try:
        client = connect(timeout=30.0)
    except UsageError as exc:
        unusable(f"Docker is not usable on this machine ({exc})")
    import docker

    try:
        client.images.get(IMAGE_NAME)
    except docker.errors.ImageNotFound:
        client.close()
        unusable(f"{IMAGE_NAME} is missing: python -m referee.sandbox.image --offline")
    return client


PRIVATE_SECRET = "hunter2-do-not-print"


@pytest.fixture(scope="session")
def private_image() -> Iterator[str]:
    """A local image no bot may use unless allowed: the bot image plus a secret file.

    It stands for an organiser's private image with credentials baked in; a refused bot
    must never get to run in it (nothing from inside it may be printed).
    """
    import io
    import tarfile

    from referee.sandbox.docker import IMAGE_NAME

    client = require_docker()
    tag = f"referee-test-private:{os.environ['REFEREE_RUN_ID'].lower()}"
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (
            ("Dockerfile", f"FROM {IMAGE_NAME}\nCOPY secret /secret\n".encode()),
            ("secret", PRIVATE_SECRET.encode() + b"\n"),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    client.images.build(fileobj=context, custom_context=True, tag=tag, pull=False, rm=True)
    try:
        yield tag
    finally:
        client.images.remove(tag, force=True)
        client.close()
