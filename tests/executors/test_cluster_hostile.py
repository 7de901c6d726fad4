"""Attacks on the referee's local Dask cluster (issue 31): nobody but the run gets in.

Before TLS, the local cluster listened on ``tcp://127.0.0.1`` with no authentication, and
its workers run as the referee (root): any local user connected an ordinary Dask client and
ran code as root (``client.run``, ``run_on_scheduler``). Here the same attacks come

* from a second, unprivileged uid (one of this test run's own sandbox uids, leased as a
  bot's is), with the system's Python and a copy of Dask it can read: a client
  over plain TCP and over TLS with a CA and certificate of its own, bare connections to
  every nanny and worker, a worker of its own (which would be handed bundles and deals),
  Dask's HTTP pages (``tests/executors/cluster_attacker.py``);
* from a bot of the process sandbox without bubblewrap, which shares the machine's network:
  it finds the listening ports in ``/proc/net/tcp`` and speaks Dask to them
  (``tests/bots/cluster_client.py``).

Each attack is also made on a plain-TCP scheduler (what the local cluster was), where it
gets in: so a refusal below is the cluster's, never an attack that could not have worked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.executors.cluster import DaskExecutor
from referee.sandbox import make_staging_root, remove_staging_root
from referee.sandbox.process import UidPool
from tests.conftest import run_uids
from tests.sandbox.bot_processes import (
    ACT,
    LIMITS,
    greet,
    make_sandbox,
    markers,
    reply,
    send,
    staged,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ATTACKER = Path(__file__).with_name("cluster_attacker.py")
SYSTEM_PYTHON = Path("/usr/bin/python3")
IN_CI = os.environ.get("CI") == "true"


@contextlib.contextmanager
def plain_scheduler() -> Iterator[str]:
    """A scheduler on plain TCP, with no workers, in this process (running as the tests
    do): the control, where each attack gets in."""
    from distributed import LocalCluster

    control = LocalCluster(
        n_workers=0, processes=False, host="127.0.0.1", protocol="tcp://", dashboard_address=None
    )
    try:
        yield str(control.scheduler_address)
    finally:
        control.close()


def _listeners(executor: DaskExecutor) -> dict[str, Any]:
    """Every address the local cluster listens on (scheduler, workers, nannies), and the
    HTTP ports Dask opened beside them."""
    info = executor.client().scheduler_info()
    workers = info["workers"]
    members = sorted([*workers, *(w["nanny"] for w in workers.values() if w.get("nanny"))])
    http = [info["services"]["dashboard"]]
    http += [w["services"]["dashboard"] for w in workers.values() if "dashboard" in w["services"]]
    return {"scheduler": info["address"], "members": members, "http": http}


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


@pytest.fixture
def local_cluster() -> Iterator[DaskExecutor]:
    with DaskExecutor(workers=1) as executor:
        yield executor


@pytest.fixture
def stranger() -> Iterator[int]:
    """A uid of this test run's own block, leased as a bot's is: another local user."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true but the tests do not run as root: no second uid to attack from")
        pytest.skip("attacking as another uid needs root to become it (CI=true: fails)")
    lease = UidPool(run_uids()).acquire()
    try:
        yield lease.uid
    finally:
        lease.release()


def _copy_of(*names: str, to: Path) -> Path:
    """The installed files of ``names`` and of everything they require, copied to ``to``
    for anyone to read: the stranger's Dask (this environment may be under a 0700 home)."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    wanted = list(names)
    while wanted:
        name = canonicalize_name(wanted.pop())
        if name in seen:
            continue
        seen.add(name)
        found = distribution(name)
        for text in found.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
        for file in found.files or ():
            if ".." in file.parts:
                continue  # scripts and data outside site-packages
            target = to / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(str(found.locate_file(file))), target)
    for path in (to, *to.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return to


def _as(uid: int, argv: list[str], path: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--",
            str(SYSTEM_PYTHON),
            "-B",
            *argv,
        ],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": path, "HOME": str(cwd)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_another_local_user_gets_nothing_from_the_local_cluster(
    local_cluster: DaskExecutor, stranger: int
) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.fail(f"{SYSTEM_PYTHON} is missing: the attacker runs the system's Python")
    target = _listeners(local_cluster)
    # Root's folder, which the stranger can enter and read but not write: a marker there
    # was written by code that ran as root (on the scheduler or on a worker).
    folder = Path(tempfile.mkdtemp(prefix="referee-attack-"))
    try:
        os.chmod(folder, 0o755)
        path = str(_copy_of("distributed", "cryptography", to=folder / "site-packages"))
        with plain_scheduler() as control:
            plans = [
                {**target, "marker": str(folder / "owned")},
                {
                    "scheduler": control,
                    "members": [],
                    "http": [],
                    "marker": str(folder / "control"),
                },
            ]
            ran = _as(stranger, [str(ATTACKER), json.dumps(plans)], path, folder)
        assert ran.returncode == 0, ran.stderr[-3000:]
        report, controlled = json.loads(ran.stdout.strip().splitlines()[-1])

        # The control: an ordinary client of the stranger's runs code as root there, and
        # a worker of its own joins (it would be handed matches).
        assert controlled["uid"] == stranger != 0
        assert controlled["client plain"] == "ran code", controlled
        assert (folder / "control").read_text() == "0"
        assert controlled["worker plain"] == "joined", controlled

        # The local cluster: every port reached, every attempt refused, no code ran.
        assert sorted(report["reachable"]) == sorted([target["scheduler"], *target["members"]])
        attempts = {k: v for k, v in report.items() if k not in ("uid", "reachable")}
        assert not (folder / "owned").exists(), f"the stranger's code ran as root: {report}"
        http = {k: v for k, v in attempts.items() if k.startswith("http ")}
        rest = {k: v for k, v in attempts.items() if k not in http}
        assert len(rest) == 4 + 2 * len(target["members"]), rest
        assert all(v.startswith("refused: ") for v in rest.values()), rest
        assert local_cluster.connected() == 1, "the stranger's worker joined the cluster"
        # While a client with the run's own certificate is let in.
        from distributed import Client

        with Client(target["scheduler"], security=local_cluster.security, timeout=10) as ours:
            assert list(ours.run(os.getuid).values()) == [os.geteuid()]
        # Dask's pages (worker logs, call stacks, task names, metrics): none is served.
        assert len(http) == 2 * len(target["http"]) and set(http.values()) == {"HTTP 404"}, http
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_bot_without_bubblewrap_finds_the_cluster_and_gets_nothing(
    local_cluster: DaskExecutor,
) -> None:
    target = _listeners(local_cluster)
    ports = [_port(a) for a in [target["scheduler"], *target["members"]]]
    staging = make_staging_root()
    try:
        with plain_scheduler() as control:
            spec = staged(staging, "cluster_client", ",".join(map(str, [*ports, _port(control)])))

            async def scenario() -> list[str]:
                bot = await make_sandbox("plain").start(spec, LIMITS)
                try:
                    await greet(bot)
                    await send(bot, ACT)
                    lines = await markers(bot, "CLUSTER", "CLUSTER: done")
                    assert await reply(bot) == {"id": 2, "cards": ["7C"]}
                    return lines
                finally:
                    await bot.cleanup()

            lines = asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        remove_staging_root(staging)
    said = "\n".join(lines)
    # It found every port of the cluster in /proc/net/tcp and spoke to each.
    for port in ports:
        assert f"CLUSTER-PORT {port}: listed" in lines, said
        for way in ("plain", "tls"):
            talk = next(line for line in lines if line.startswith(f"CLUSTER-TALK {port} {way}: "))
            assert "refused (" in talk, said
    # The same words get the plain scheduler's handshake: the bot would have known.
    assert f"CLUSTER-TALK {_port(control)} plain: dask answered" in lines, said
