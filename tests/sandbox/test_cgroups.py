"""Whole-tree limits: a cgroup per bot in the process sandbox.

The real tests run on the machine's own cgroups (v1 on the development and CI machines) and
need root; they skip without, except under CI (``CI=true``), where that is a failure. The
cgroup v2 file writes and the discovery of hierarchies are checked against fake folders in
``tmp_path``: the one stand-in, because no machine of this project has a v2 memory
controller to test on.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.cli.sandboxes import machine_checks
from referee.errors import OUTSIDE_KILL, REFEREE_KILL, InfrastructureError
from referee.sandbox import make_staging_root
from referee.sandbox import process as process_module
from referee.sandbox.base import Limits
from referee.sandbox.cgroups import (
    BotCgroup,
    CgroupSupport,
    Hierarchy,
    group_prefix,
    peak_memory_of,
    probe_cgroups,
    sweep_leftovers,
    unavailable,
)
from referee.sandbox.process import ProcessBotProcess, ProcessSandbox
from tests.conftest import run_uids
from tests.sandbox.bot_processes import (
    ACT,
    IS_ROOT,
    LINE_TIMEOUT_S,
    assert_nothing_left,
    bwrap_usable,
    greet,
    marker,
    reply,
    run,
    send,
    staged,
)

pytestmark = pytest.mark.slow

MIB = 1024 * 1024
SMALL = Limits(memory_mb=128, cpu_seconds=20, file_size_mb=4, pids=32, tmp_mb=16, cpus=0.5)


@pytest.fixture(params=["bwrap", "plain"])
def mode(request: pytest.FixtureRequest) -> str:
    """Each property is checked with and without bubblewrap (as in test_process.py)."""
    if request.param == "bwrap" and not bwrap_usable():
        pytest.skip("bubblewrap is not usable on this machine (under CI=true this fails instead)")
    return str(request.param)


@pytest.fixture(scope="module")
def staging() -> Iterator[Path]:
    """A staging root the sandbox users can enter (pytest's tmp_path is private to root)."""
    root = make_staging_root()
    yield root
    shutil.rmtree(root)


@pytest.fixture
def support() -> CgroupSupport:
    """The machine's cgroups; a skip where there are none (a failure under CI=true)."""
    found = ProcessSandbox(uid_range=run_uids()).cgroup_support()
    if not found.works:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but bots get no cgroup here: {found.reason}")
        pytest.skip(f"no cgroup for bots here ({found.reason}); under CI=true this fails")
    return found


def make_sandbox(mode: str, **options: object) -> ProcessSandbox:
    return ProcessSandbox(bwrap=(mode == "bwrap"), uid_range=run_uids(), **options)  # type: ignore[arg-type]


async def started(mode: str, name: str, staging: Path, limits: Limits) -> ProcessBotProcess:
    bot = await make_sandbox(mode, cgroups=True).start(staged(staging, name), limits)
    assert bot.cgroup is not None
    return bot


# --------------------------------------------------------------------------- memory


def test_shared_memory_is_killed_at_the_limit(
    support: CgroupSupport, mode: str, staging: Path
) -> None:
    """2 GiB of MAP_SHARED|MAP_ANONYMOUS under memory_mb=128: RLIMIT_DATA never sees it."""

    async def scenario() -> None:
        bot = await started(mode, "shared_memory", staging, SMALL)
        uid = bot.uid
        try:
            await greet(bot)
            await send(bot, ACT)
            ended = await bot.wait(LINE_TIMEOUT_S)
            assert ended is not None, "the bot still runs with its shared memory"
            assert ended.oom_killed and ended.signal == 9, ended
            assert ended.describe() == "killed at the memory limit"
            assert "killed at the memory limit" in ended.detail
            assert "oom_kill 1" in ended.detail, "the counter that says who killed it"
            stderr = await bot.stderr.read()
            assert b"SHARED: 128 MiB" not in stderr and b"no limit hit" not in stderr
        finally:
            info = await bot.cleanup()
        assert info.oom_killed
        assert_nothing_left(bot, uid)

    run(scenario())


def test_a_sigkill_from_outside_says_it_was_not_the_referees(
    support: CgroupSupport, mode: str, staging: Path
) -> None:
    """A SIGKILL the referee did not send, with no OOM kill counted, says so, with the
    counters of the bot's cgroup that rule the memory limit out."""

    async def scenario() -> str:
        bot = await started(mode, "polite", staging, SMALL)
        try:
            await greet(bot)
            os.kill(bot.pid, 9)
            ended = await bot.wait(LINE_TIMEOUT_S)
            assert ended is not None and ended.signal == 9 and not ended.oom_killed
            return ended.detail
        finally:
            await bot.cleanup()

    detail = run(scenario())
    assert OUTSIDE_KILL in detail and REFEREE_KILL not in detail
    assert "oom_kill 0" in detail


def test_memory_of_the_whole_tree_is_limited(
    support: CgroupSupport, mode: str, staging: Path
) -> None:
    """Four children of 48 MiB each, every one far below RLIMIT_DATA: 192 MiB > 128 MiB."""

    async def scenario() -> str:
        bot = await started(mode, "tree_memory", staging, SMALL)
        try:
            await greet(bot)
            await send(bot, ACT)
            report = await marker(bot, "TREE")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}, "the bot plays on"
            return report
        finally:
            await bot.cleanup()

    alive = int(run(scenario()).split()[1])
    assert alive < 4


@pytest.mark.skipif(not IS_ROOT, reason="a bot without its own uid leaves host /dev/shm files")
def test_host_dev_shm_counts_without_bubblewrap(support: CgroupSupport, staging: Path) -> None:
    """Without bubblewrap /dev/shm is the host's: the cgroup still counts what is written,
    so the bot is killed at the limit (or its write fails), never beyond."""

    async def scenario() -> tuple[bytes, bool]:
        bot = await started("plain", "dev_shm", staging, SMALL)
        uid = bot.uid
        try:
            await greet(bot)
            await send(bot, ACT)
            report = await asyncio.wait_for(bot.stderr.readline(), LINE_TIMEOUT_S)
            ended = await bot.wait(LINE_TIMEOUT_S) if not report else None
            return report, ended is not None and ended.oom_killed
        finally:
            await bot.cleanup()
            assert not [e for e in os.scandir("/dev/shm") if e.stat().st_uid == uid]

    report, oom_killed = run(scenario())
    if report:
        written = int(report.split()[1])
        assert written < SMALL.memory_mb and b"no limit hit" not in report, report
    else:
        assert oom_killed, "the bot died without a report, but not at the memory limit"


# --------------------------------------------------------------------------- the group


def test_limits_are_written_and_the_group_removed(
    support: CgroupSupport, mode: str, staging: Path
) -> None:
    async def scenario() -> None:
        bot = await started(mode, "polite", staging, SMALL)
        assert bot.cgroup is not None
        folders = bot.cgroup.folders
        try:
            await greet(bot)
            by_controller = dict(
                zip((h.controller for h in support.hierarchies), folders, strict=True)
            )
            for folder in folders:
                assert bot.pid in bot.cgroup.members()
                assert folder.name.startswith(group_prefix())
            bwrap_processes = 2 if mode == "bwrap" else 0
            if support.version == 1:
                memory = by_controller["memory"]
                assert int((memory / "memory.limit_in_bytes").read_text()) == 128 * MIB
                if support.swap_accounting:
                    memsw = memory / "memory.memsw.limit_in_bytes"
                    assert int(memsw.read_text()) == 128 * MIB
                if "pids" in by_controller:
                    pids_max = (by_controller["pids"] / "pids.max").read_text()
                    assert int(pids_max) == SMALL.pids + bwrap_processes
                if "cpu" in by_controller and not bot.cgroup.notes:
                    quota = (by_controller["cpu"] / "cpu.cfs_quota_us").read_text()
                    assert int(quota) == 50_000
            else:
                unified = folders[0]
                assert int((unified / "memory.max").read_text()) == 128 * MIB
                assert int((unified / "pids.max").read_text()) == SMALL.pids + bwrap_processes
            if bot.uid is not None:
                # Every process of the bot's uid is in its group: none ran outside it.
                uid_pids = set(process_module.pids_of_uid(bot.uid))
                assert uid_pids and uid_pids <= bot.cgroup.members()
        finally:
            await bot.cleanup()
        assert not any(folder.exists() for folder in folders)

    run(scenario())


def test_without_cgroups_bots_start_outside_any_group(staging: Path) -> None:
    async def scenario() -> None:
        bot = await make_sandbox("plain", cgroups=False).start(staged(staging, "polite"), SMALL)
        try:
            assert bot.cgroup is None
            await greet(bot)
        finally:
            await bot.cleanup()

    run(scenario())


@pytest.fixture
def other_process() -> Iterator[subprocess.Popen[bytes]]:
    """A live process standing in for another referee."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_leftover_groups_of_dead_referees_are_swept(
    support: CgroupSupport, staging: Path, other_process: subprocess.Popen[bytes]
) -> None:
    """The next sandbox start removes groups of dead referees of its pid namespace, killing
    what still runs in them; groups of live referees and of other namespaces stay."""
    namespace = group_prefix().split("-")[1]
    dead, dead_busy = _dead_pid(), _dead_pid()
    names = {
        "dead": f"referee-{namespace}-{dead}-0a0a",
        "dead_busy": f"referee-{namespace}-{dead_busy}-0b0b",
        "live": f"referee-{namespace}-{other_process.pid}-0c0c",
        "other_namespace": f"referee-1-{dead}-0d0d",
    }
    made = [h.parent / name for h in support.hierarchies for name in names.values()]
    for folder in made:
        folder.mkdir()
    orphan = _start_in_group([h.parent / names["dead_busy"] for h in support.hierarchies])
    try:

        async def scenario() -> None:
            bot = await make_sandbox("plain", cgroups=True).start(staged(staging, "polite"), SMALL)
            await bot.cleanup()

        run(scenario())
        for hierarchy in support.hierarchies:
            assert not (hierarchy.parent / names["dead"]).exists()
            assert not (hierarchy.parent / names["dead_busy"]).exists()
            assert (hierarchy.parent / names["live"]).is_dir()
            assert (hierarchy.parent / names["other_namespace"]).is_dir()
        assert orphan.wait(LINE_TIMEOUT_S) == -9, "the orphan in a dead referee's group"
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()
        for folder in made:
            if folder.exists():
                folder.rmdir()


def _start_in_group(folders: list[Path]) -> subprocess.Popen[bytes]:
    """A process inside the given groups, as a bot of a dead referee would be."""
    group = BotCgroup(CgroupSupport(1), folders[0].name, tuple(folders))
    proc = subprocess.Popen([*group.enter_argv(), "sleep", "300"])
    deadline = time.monotonic() + LINE_TIMEOUT_S
    while proc.pid not in group.members():
        assert time.monotonic() < deadline and proc.poll() is None, "never joined the group"
        time.sleep(0.01)
    return proc


def test_sweep_leaves_this_referees_groups(support: CgroupSupport) -> None:
    group = BotCgroup.create(support, memory_bytes=64 * MIB, pids=8, cpus=1.0)
    try:
        removed = sweep_leftovers(support)
        assert group.name not in {path.name for path in removed}
        assert all(folder.is_dir() for folder in group.folders)
    finally:
        assert group.remove()


# --------------------------------------------------------------------------- reporting


def test_start_up_line_and_doctor_say_when_there_is_no_cgroup() -> None:
    gone = unavailable("no cgroup file system is mounted")
    line = ProcessSandbox(bwrap=False, cgroup_support=gone).describe()
    assert "no cgroup: memory is limited per process only (RLIMIT_DATA)" in line
    assert "shared memory and tmpfs are not counted" in line
    assert "no cgroup file system is mounted" in line
    with pytest.raises(InfrastructureError, match="cgroups are required but unusable"):
        ProcessSandbox(cgroups=True, cgroup_support=gone).cgroup_support()
    checks = machine_checks(ProcessSandbox(cgroup_support=gone))
    assert [name for name, _, _ in checks][:3] == ["process", "cgroups", "seccomp"]
    _, ok, why = checks[1]
    assert not ok and "per process only" in why
    # The command prints those lines, for the machine's own cgroups.
    result = CliRunner().invoke(main, ["doctor"])
    doctor_line = next(line for line in result.output.splitlines() if line.startswith("cgroups"))
    found = ProcessSandbox().cgroup_support()
    assert doctor_line.split()[1] == ("ok" if found.works else "NO")
    assert found.describe() in doctor_line


def test_start_up_line_names_the_cgroup() -> None:
    found = CgroupSupport(
        1, (Hierarchy("memory", Path("/x")),), swap_accounting=True, reason="cgroup v1 under /x"
    )
    line = ProcessSandbox(bwrap=False, cgroup_support=found).describe()
    assert "cgroup v1 (memory incl. shared memory and tmpfs, no swap" in line
    assert "no pids group" in line and "no CPU quota" in line
    if IS_ROOT:
        sandbox = ProcessSandbox(bwrap=False, cgroup_support=found)
        sandbox._setpriv = None
        assert "setpriv" in sandbox.describe()


# --------------------------------------------------------------------------- fakes


def _fake_kernel_mkdir(path: Path) -> None:
    """What the kernel does on mkdir in a v2 hierarchy, as far as the sandbox looks."""
    path.mkdir()
    for name, text in {
        "memory.max": "max\n",
        "memory.swap.max": "max\n",
        "memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n",
        "pids.max": "max\n",
        "cpu.max": "max 100000\n",
        "cgroup.procs": "",
        "cgroup.kill": "",
    }.items():
        (path / name).write_text(text)


def test_v2_group_files(tmp_path: Path) -> None:
    """The v2 writes, against a fake hierarchy (no v2 memory controller on these machines)."""
    parent = tmp_path / "referee.service"
    parent.mkdir()
    support = CgroupSupport(2, (Hierarchy("unified", parent),), swap_accounting=True, cpu=True)
    group = BotCgroup.create(
        support, memory_bytes=128 * MIB, pids=34, cpus=1.5, make_group=_fake_kernel_mkdir
    )
    (folder,) = group.folders
    assert folder.parent == parent and folder.name.startswith(group_prefix())
    assert (folder / "memory.max").read_text() == str(128 * MIB)
    assert (folder / "memory.swap.max").read_text() == "0"
    assert (folder / "pids.max").read_text() == "34"
    assert (folder / "cpu.max").read_text() == "150000 100000"
    assert group.oom_kills() == 1
    (folder / "pids.events").write_text("max 2\n")
    assert group.pids_refused() == 2
    assert group.kill_evidence() == (
        "memory.events max 3, memory.events oom 1, memory.events oom_kill 1, pids.events max 2"
    )
    argv = group.enter_argv()
    assert argv[-2:] == [str(folder / "cgroup.procs"), "--"]
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n")
    assert group.members() == {os.getpid()}
    for child in folder.iterdir():
        child.unlink()
    assert group.remove() and not folder.exists()


def test_v2_without_cpu_and_swap(tmp_path: Path) -> None:
    def bare_mkdir(path: Path) -> None:
        _fake_kernel_mkdir(path)
        (path / "memory.swap.max").unlink()  # a kernel without swap accounting

    support = CgroupSupport(2, (Hierarchy("unified", tmp_path),), cpu=False)
    group = BotCgroup.create(
        support, memory_bytes=64 * MIB, pids=8, cpus=1.0, make_group=bare_mkdir
    )
    (folder,) = group.folders
    assert not (folder / "memory.swap.max").exists()
    assert (folder / "cpu.max").read_text() == "max 100000\n"


def test_a_failed_limit_removes_the_group(tmp_path: Path) -> None:
    def read_only(path: Path) -> None:
        _fake_kernel_mkdir(path)
        (path / "pids.max").unlink()
        (path / "pids.max").mkdir()  # writing it fails

    support = CgroupSupport(2, (Hierarchy("unified", tmp_path),))
    with pytest.raises(InfrastructureError, match="cannot set up the bot's cgroup"):
        BotCgroup.create(support, memory_bytes=64 * MIB, pids=8, cpus=1.0, make_group=read_only)


def _fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc-self"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_discovery_prefers_v2_with_memory_and_pids(tmp_path: Path) -> None:
    unified = tmp_path / "sys fs cgroup"
    own = unified / "system.slice" / "referee.service"
    own.mkdir(parents=True)
    (own / "cgroup.subtree_control").write_text("cpu memory pids\n")
    escaped = str(unified).replace(" ", "\\040")
    proc = _fake_proc(
        tmp_path,
        f"30 23 0:26 / {escaped} rw - cgroup2 cgroup2 rw,nsdelegate\n",
        "0::/system.slice/referee.service\n",
    )
    found = probe_cgroups(proc)
    assert found.version == 2 and found.cpu and found.pids
    assert found.hierarchies == (Hierarchy("unified", own),)


def test_discovery_falls_back_to_v1(tmp_path: Path) -> None:
    """A hybrid machine: the unified hierarchy has no memory controller, v1 has."""
    unified, memory, pids = tmp_path / "unified", tmp_path / "memory", tmp_path / "pids"
    # The memory hierarchy is mounted from /job (a container's view): group /job/7 is at 7.
    (memory / "7").mkdir(parents=True)
    (memory / "7" / "memory.memsw.limit_in_bytes").write_text("9223372036854771712\n")
    pids.mkdir()
    unified.mkdir()
    (unified / "cgroup.subtree_control").write_text("")
    mountinfo = "\n".join(
        [
            f"41 31 0:38 / {unified} rw,relatime - cgroup2 cgroup2 rw",
            f"35 31 0:32 /job {memory} rw,relatime - cgroup cgroup rw,memory",
            f"39 31 0:36 / {pids} rw,relatime - cgroup cgroup rw,pids",
            f"40 31 0:37 / {tmp_path / 'systemd'} rw - cgroup cgroup rw,name=systemd",
        ]
    )
    proc = _fake_proc(tmp_path, mountinfo, "9:name=systemd:/\n8:pids:/\n4:memory:/job/7\n0::/\n")
    found = probe_cgroups(proc)
    assert found.version == 1 and found.swap_accounting and found.pids and not found.cpu
    assert found.hierarchies == (Hierarchy("memory", memory / "7"), Hierarchy("pids", pids))
    assert list((memory / "7").iterdir()) == [memory / "7" / "memory.memsw.limit_in_bytes"]


@pytest.mark.parametrize("version", [1, 2])
def test_a_containers_peak_memory_is_read_from_its_own_group(tmp_path: Path, version: int) -> None:
    """The group of another process (a container's init, by its pid): its counter, and only
    when the group is the one named (a pid from another pid namespace is someone else)."""
    root = tmp_path / ("memory" if version == 1 else "unified")
    group = root / "docker" / "c0ffee"
    group.mkdir(parents=True)
    counter = "memory.max_usage_in_bytes" if version == 1 else "memory.peak"
    (group / counter).write_text("123456789\n")
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "4242").mkdir()
    if version == 1:
        mount = f"35 31 0:32 / {root} rw,relatime - cgroup cgroup rw,memory"
        (proc / "4242" / "cgroup").write_text("8:pids:/docker/c0ffee\n4:memory:/docker/c0ffee\n")
    else:
        mount = f"30 23 0:26 / {root} rw - cgroup2 cgroup2 rw,nsdelegate"
        (proc / "4242" / "cgroup").write_text("0::/docker/c0ffee\n")
    (proc / "self" / "mountinfo").write_text(mount + "\n")
    assert peak_memory_of(4242, "c0ffee", proc) == 123456789
    assert peak_memory_of(4242, "decaf", proc) is None, "another container's group"
    assert peak_memory_of(4243, "c0ffee", proc) is None, "no such process"
    (group / counter).unlink()
    assert peak_memory_of(4242, "c0ffee", proc) is None, "a kernel without the counter"


def test_discovery_without_a_memory_hierarchy(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = _fake_proc(tmp_path, f"39 31 0:36 / {pids} rw - cgroup cgroup rw,pids\n", "8:pids:/\n")
    found = probe_cgroups(proc)
    assert not found.works and found.reason == "no cgroup memory controller is mounted"
    assert "per process only" in found.describe()


def test_discovery_says_why_v2_is_unusable(tmp_path: Path) -> None:
    """Pure v2 whose group does not enable memory and pids for its children."""
    unified = tmp_path / "unified"
    (unified / "user.slice").mkdir(parents=True)
    (unified / "user.slice" / "cgroup.subtree_control").write_text("cpu\n")
    proc = _fake_proc(
        tmp_path, f"30 23 0:26 / {unified} rw - cgroup2 cgroup2 rw\n", "0::/user.slice\n"
    )
    found = probe_cgroups(proc)
    assert not found.works
    assert found.reason == (
        f"cgroup v2: memory and pids are not enabled in {unified}/user.slice/cgroup.subtree_control"
    )


@pytest.mark.parametrize(
    ("files", "own_limit"),
    [
        # Killed at its own limit: the high-water mark is at the limit (memsw refused first).
        ({"memory.max_usage_in_bytes": 128 * MIB, "memory.failcnt": 0}, True),
        # Killed at a parent's 100 MiB: the mark stopped there, far from its own 512 MiB.
        ({"memory.max_usage_in_bytes": 100 * MIB + 256 * 1024, "memory.failcnt": 0}, False),
    ],
)
def test_v1_tells_its_own_limit_from_one_above(
    tmp_path: Path, files: dict[str, int], own_limit: bool
) -> None:
    """The counters as measured on kernel 6.18, in a fake group folder."""
    folder = tmp_path / "referee-1-2-ab"
    folder.mkdir()
    limit = 128 * MIB if own_limit else 512 * MIB
    for name, value in {
        **files,
        "memory.limit_in_bytes": limit,
        "memory.memsw.limit_in_bytes": limit,
        "memory.memsw.max_usage_in_bytes": files["memory.max_usage_in_bytes"],
    }.items():
        (folder / name).write_text(f"{value}\n")
    (folder / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    group = BotCgroup(CgroupSupport(1, (Hierarchy("memory", tmp_path),)), folder.name, (folder,))
    assert group.oom_kills() == 1
    assert group.hit_limit() is own_limit


def test_v2_tells_its_own_limit_from_one_above(tmp_path: Path) -> None:
    folder = tmp_path / "referee-1-2-cd"
    folder.mkdir()
    group = BotCgroup(CgroupSupport(2, (Hierarchy("unified", tmp_path),)), folder.name, (folder,))
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n")
    assert group.oom_kills() == 1 and not group.hit_limit()
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n")
    assert group.hit_limit()
