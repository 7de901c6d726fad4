"""The process sandbox against real processes, real rlimits and real bubblewrap.

What every backend does (lines, stderr, exits, signals, the kill of a whole tree, writes
after the end, closed stdout, a memory limit, freezing) is the conformance suite's
(test_conformance.py); here is what only this backend does: its view from inside, rlimits,
uids, bubblewrap's mounts and isolation, seccomp. Most are checked in both modes: ``bwrap`` (the default when bubblewrap works)
and ``plain`` (rlimits, scratch folder and, as root, a dropped uid). Tests that need
bubblewrap skip when it is unusable, except under CI (``CI=true``), where that is a failure.
Tests about the dropped uid need root and skip otherwise. Every test checks that its bots
left no process behind; a module fixture sweeps the uid range as a last resort.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import referee.sandbox
from referee.errors import REFEREE_KILL, UNCOUNTED_KILL, InfrastructureError, UsageError, own_fault
from referee.sandbox import (
    get_sandbox,
    load_bot,
    make_staging_root,
    remove_staging_root,
)
from referee.sandbox import process as process_module
from referee.sandbox.process import (
    SANDBOX_PATH,
    BwrapStatus,
    ProcessBotProcess,
    ProcessSandbox,
    UidPool,
    pids_of_uid,
)
from tests.conftest import run_uids
from tests.sandbox.bot_processes import (
    ACT,
    IS_ROOT,
    LIMITS,
    LINE_TIMEOUT_S,
    TEST_UIDS,
    assert_nothing_left,
    bwrap_here,
    bwrap_usable,
    greet,
    live_processes,
    make_sandbox,
    marker,
    markers,
    needs_root,
    proc_status,
    reply,
    run,
    script,
    send,
    staged,
    unleased,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def staging() -> Iterator[Path]:
    """A staging root the sandbox users can enter (pytest's tmp_path is private to root)."""
    root = make_staging_root()
    yield root
    remove_staging_root(root)


# --------------------------------------------------------------------------- basics


def test_cleanup_removes_the_scratch_folder(staging: Path) -> None:
    """Without bubblewrap's tmpfs the bot's TMPDIR is a folder of the host: gone with it.

    (Lines, exits, kills and limits common to every backend: test_conformance.py.)"""
    spec = staged(staging, "polite")

    async def scenario() -> Path | None:
        bot = await make_sandbox("plain").start(spec, LIMITS)
        try:
            await greet(bot)
            assert bot.scratch is not None and bot.scratch.is_dir()
            return bot.scratch
        finally:
            await bot.cleanup()

    scratch = run(scenario())
    assert scratch is not None and not scratch.exists()


def test_inside_view(mode: str, staging: Path) -> None:
    """Clean environment, cwd at the bot, a non-root uid (as root), the rlimits applied."""
    spec = script(
        staging,
        """
        import json, os, resource, sys
        names = ["DATA", "CPU", "FSIZE", "NOFILE", "CORE", "NPROC"]
        limits = {n: resource.getrlimit(getattr(resource, "RLIMIT_" + n)) for n in names}
        print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                          "env": dict(os.environ), "cwd": os.getcwd(), "limits": limits,
                          "exe": os.path.realpath(sys.executable), "files": os.listdir(".")}))
        """,
    )

    async def scenario() -> dict[str, Any]:
        bot = await make_sandbox(mode).start(spec, LIMITS)
        try:
            return await reply(bot)
        finally:
            await bot.cleanup()

    seen = run(scenario())
    tmp = "/tmp" if mode == "bwrap" else seen["env"]["TMPDIR"]
    cwd = {"PWD": "/bot"} if mode == "bwrap" else {}  # bubblewrap sets PWD after --chdir
    assert seen["env"] == cwd | {
        "PATH": SANDBOX_PATH,
        "LANG": "C.UTF-8",
        "TMPDIR": tmp,
        "HOME": tmp,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    assert seen["files"] == ["probe.py"]
    assert seen["cwd"] == ("/bot" if mode == "bwrap" else str(spec.folder))
    assert not seen["exe"].startswith(sys.prefix), "bots must not run the referee's venv"
    mib = 1024 * 1024
    assert seen["limits"]["DATA"] == [256 * mib] * 2
    assert seen["limits"]["CPU"] == [20, 21]
    assert seen["limits"]["FSIZE"] == [4 * mib] * 2
    assert seen["limits"]["NOFILE"] == [LIMITS.open_files] * 2
    assert seen["limits"]["CORE"] == [0, 0]
    if IS_ROOT:
        assert seen["uid"] in run_uids() and seen["gid"] == seen["uid"]
        assert seen["groups"] in ([], [seen["gid"]])
        extra = 2 if mode == "bwrap" else 0
        assert seen["limits"]["NPROC"] == [LIMITS.pids + extra] * 2


def test_a_bot_inherits_no_descriptor_but_its_stdio(mode: str, staging: Path) -> None:
    """Nothing the referee holds open reaches the bot, an inheritable descriptor included
    (a worker's pool sentinel is one: a bot holding it kept a killed worker alive to its
    pool, and a bot may read or write whatever it inherits)."""
    spec = script(
        staging,
        """
        import json, os
        seen = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                seen[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                pass  # the listing's own descriptor, closed by now
        print(json.dumps(seen))
        """,
    )
    held_r, held_w = os.pipe()
    os.set_inheritable(held_r, True)
    os.set_inheritable(held_w, True)

    async def scenario() -> dict[str, str]:
        bot = await make_sandbox(mode).start(spec, LIMITS)
        try:
            return await reply(bot)
        finally:
            await bot.cleanup()

    try:
        seen = run(scenario())
    finally:
        os.close(held_r)
        os.close(held_w)
    assert set(seen) == {"0", "1", "2"}, seen


def test_rlimits_without_prlimit(staging: Path) -> None:
    """Where prlimit is missing, the same limits come from a preexec function."""
    spec = script(staging, "import resource; print(resource.getrlimit(resource.RLIMIT_DATA))")
    sandbox = make_sandbox("plain")
    sandbox._prlimit = None

    async def scenario() -> bytes:
        bot = await sandbox.start(spec, LIMITS)
        try:
            return await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S)
        finally:
            await bot.cleanup()

    assert run(scenario()).strip() == str((256 << 20, 256 << 20)).encode()


@needs_root
def test_concurrent_bots_get_distinct_uids(staging: Path) -> None:
    spec = staged(staging, "polite")

    async def scenario() -> None:
        first_sandbox, second_sandbox = make_sandbox("plain"), make_sandbox("plain")
        bots = [await sandbox.start(spec, LIMITS) for sandbox in (first_sandbox, second_sandbox)]
        uids = [bot.uid for bot in bots]
        assert None not in uids and len(set(uids)) == 2
        # Another referee process would use its own pool: the lock files keep them apart.
        other = UidPool().acquire()
        try:
            assert other.uid not in uids
        finally:
            other.release()
        for bot in bots:
            await greet(bot)
            await bot.cleanup()
            assert_nothing_left(bot, bot.uid)

    run(scenario())


@needs_root
def test_a_kill_after_cleanup_spares_the_next_bot_of_its_uid(staging: Path) -> None:
    """A bot's uid goes to the next bot once it is cleaned up: killing the old bot again
    (kill is idempotent) must not send that next bot a SIGKILL it would read as a crash."""
    spec = staged(staging, "polite")

    async def scenario() -> None:
        first = await make_sandbox("plain").start(spec, LIMITS)
        await greet(first)
        await first.cleanup()
        assert first.uid is not None
        only = range(first.uid, first.uid + 1)
        second = await ProcessSandbox(bwrap=False, uid_range=only).start(spec, LIMITS)
        try:
            assert second.uid == first.uid
            await greet(second)
            await first.kill()
            assert await second.wait(0.3) is None, "the next bot of the uid was killed"
        finally:
            await second.cleanup()

    run(scenario())


def test_uid_pool_exhaustion_is_an_infrastructure_error(tmp_path: Path) -> None:
    pool = UidPool(range(TEST_UIDS.stop - 1, TEST_UIDS.stop), lock_dir=tmp_path / "locks")
    lease = pool.acquire()
    try:
        with pytest.raises(InfrastructureError, match="no free sandbox uid"):
            pool.acquire()
    finally:
        lease.release()
    pool.acquire().release()


def _exit_main_thread_only() -> subprocess.Popen[bytes]:
    """A process whose main thread has exited while another thread runs: a zombie leader."""
    code = (
        "import ctypes, threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,)).start()\n"
        "ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: this thread only\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_zombie_leader_whose_threads_run_is_alive_and_a_dead_zombie_is_not() -> None:
    """The uid sweep kills a process whose main thread exited while others run (it shows
    as a zombie), and ignores a zombie with no thread left (it holds only a pid)."""
    leader = _exit_main_thread_only()
    dead = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            states = {pid: proc_status(str(pid)) for pid in (leader.pid, dead.pid)}
            if all(s is not None and s["State"].startswith("Z") for s in states.values()):
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"the processes never became zombies: {states}")
        mine = pids_of_uid(os.geteuid())
        assert leader.pid in mine
        assert dead.pid not in mine
    finally:
        leader.kill()
        leader.wait()
        dead.wait()


@needs_root
def test_a_uid_held_only_by_a_dead_zombie_is_lent_last(tmp_path: Path) -> None:
    """Where pid 1 reaps late, zombies of finished bots must not use up the uid range: a uid
    whose only process is a dead zombie is lent, after every uid with none."""
    first = TEST_UIDS.stop - 2
    zombie = subprocess.Popen(["true"], user=first, group=first)
    try:
        deadline = time.monotonic() + 10
        while (status := proc_status(str(zombie.pid))) is None or not status["State"].startswith(
            "Z"
        ):
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.02)
        pool = UidPool(range(first, first + 2), lock_dir=tmp_path / "locks")
        clean = pool.acquire()
        try:
            assert clean.uid == first + 1
            held = pool.acquire()
            assert held.uid == first
            held.release()
        finally:
            clean.release()
    finally:
        zombie.wait()


@needs_root
def test_unreachable_bot_folder_is_a_usage_error(tmp_path: Path) -> None:
    """pytest's tmp_path is private to root: a dropped uid could not read a bot there."""
    (tmp_path / "bot.py").write_text("print('hi')\n")
    spec = load_bot(tmp_path / "bot.py")
    with pytest.raises(UsageError, match="out of reach of the sandbox user"):
        run(make_sandbox("plain").start(spec, LIMITS))


def test_each_sandbox_warns_once_without_bubblewrap(
    caplog: pytest.LogCaptureFixture, staging: Path
) -> None:
    """Once per sandbox (a process keeps one for its life), however often it is asked."""
    spec = staged(staging, "polite")

    async def starts(sandbox: ProcessSandbox) -> None:
        for _ in range(2):
            bot = await sandbox.start(spec, LIMITS)
            await greet(bot)
            await bot.cleanup()

    with caplog.at_level(logging.WARNING, logger="referee.sandbox.process"):
        for bwrap_path in (None, "/nonexistent/bwrap"):
            sandbox = make_sandbox("auto", bwrap_path=bwrap_path)
            for _ in range(3):
                assert "NO network isolation" in sandbox.describe()
            run(starts(sandbox))
    warnings = [r.getMessage() for r in caplog.records if "WITHOUT bubblewrap" in r.getMessage()]
    assert len(warnings) == 2, warnings
    assert "no network" in warnings[0] and "bwrap is not installed" in warnings[0]
    assert "bwrap probe failed" in warnings[1] and "/nonexistent/bwrap" in warnings[1]


def test_required_bubblewrap_missing(staging: Path) -> None:
    sandbox = make_sandbox("bwrap", bwrap_path=None)
    assert sandbox.bwrap_status() == BwrapStatus(None, False, False, "bwrap is not installed")
    with pytest.raises(InfrastructureError, match="bwrap is not installed"):
        run(sandbox.start(staged(staging, "polite"), LIMITS))
    assert "bubblewrap is required but unusable" in sandbox.describe()


def test_a_sandbox_probes_bubblewrap_once_and_keeps_what_it_found(bwrap_only: None) -> None:
    sandbox = make_sandbox("bwrap")
    found = sandbox.bwrap_status()
    assert found == bwrap_here() and found.works
    assert sandbox.bwrap_status() is found


def test_get_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(get_sandbox("process"), ProcessSandbox)
    with pytest.raises(UsageError, match="unknown sandbox 'nope'"):
        get_sandbox("nope")
    # As if the docker extra were missing (also when another test imported the module).
    monkeypatch.setitem(sys.modules, "referee.sandbox.docker", None)
    monkeypatch.delattr(referee.sandbox, "docker", raising=False)
    with pytest.raises(UsageError, match="pip install"):
        get_sandbox("docker")
    assert isinstance(get_sandbox("auto"), ProcessSandbox)


# --------------------------------------------------------------------------- ending


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("child_holds_stdout", "CHILD"),
        ("endless_line", None),
        ("infinite_loop", "LOOP"),
    ],
)
def test_kill_leaves_no_process(mode: str, staging: Path, name: str, word: str | None) -> None:
    """Hostile bots on the way to their kill (a forked tree and a setsid daemon are the
    conformance suite's: test_conformance.py)."""
    if mode == "plain" and not IS_ROOT and name == "child_holds_stdout":
        pytest.skip(
            "needs root: without bubblewrap, only the dedicated uid that root drops to finds "
            "processes that left the bot's group (CI runs as root)"
        )
    spec = staged(staging, name)

    async def scenario() -> None:
        bot = await make_sandbox(mode).start(spec, LIMITS)
        uid = bot.uid
        try:
            await greet(bot)
            await send(bot, ACT)
            await check_trick(bot, uid)
        finally:
            await bot.cleanup()
        assert_nothing_left(bot, uid)

    async def check_trick(bot: ProcessBotProcess, uid: int | None) -> None:
        if word is None:
            await bot.stdout.readexactly(1 << 20)
            return
        await marker(bot, word)
        if name == "child_holds_stdout":
            assert await bot.wait(LINE_TIMEOUT_S) is not None, "the bot itself has exited"
            if mode == "bwrap":
                # bwrap follows the bot; its pid namespace takes the child with it.
                assert await asyncio.wait_for(bot.stdout.read(), LINE_TIMEOUT_S) == b""
            elif IS_ROOT:
                assert live_processes(uid=uid), "the child should outlive its parent"

    run(scenario())


@needs_root
def test_process_limit_stops_a_fork_storm(mode: str, staging: Path) -> None:
    spec = staged(staging, "fork_many")

    async def scenario() -> str:
        bot = await make_sandbox(mode).start(spec, dataclasses.replace(LIMITS, pids=16))
        try:
            await greet(bot)
            await send(bot, ACT)
            report = await marker(bot, "FORK")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            return report
        finally:
            await bot.cleanup()

    report = run(scenario())
    started = int(report.split()[1])
    assert started < 16 and "Resource temporarily unavailable" in report


# --------------------------------------------------------------------------- the bots


def _first_line_check(name: str, line: bytes) -> None:
    """What each protocol-breaking bot writes at its first ``act`` (the runner's inputs)."""
    if name == "garbage":
        assert line == b"this is not json at all\n"
    elif name == "invalid_utf8":
        with pytest.raises(UnicodeDecodeError):
            line.decode("utf-8")
    elif name == "deep_json":
        assert len(line) < 65536 and line.startswith(b"[[[[")
        with pytest.raises(RecursionError):
            json.loads(line)
    else:
        expected = {
            "wrong_id": {"id": 1002, "cards": ["7C"]},
            "unsolicited": {"id": 2, "cards": ["7C"]},
            "same_card_twice": {"id": 2, "cards": ["7C", "7C"]},
            "pass_lead": {"id": 2, "cards": []},
            "trickle": {"id": 2, "cards": ["7C"]},
            "polite": {"id": 2, "cards": ["7C"]},
        }
        if name == "not_held":
            cards = json.loads(line)["cards"]
            assert len(cards) == 1 and cards[0] not in ACT["hand"]
        else:
            assert json.loads(line) == expected[name]


@pytest.mark.parametrize(
    "name",
    [
        "polite",
        "garbage",
        "invalid_utf8",
        "deep_json",
        "wrong_id",
        "unsolicited",
        "same_card_twice",
        "pass_lead",
        "not_held",
        "trickle",
    ],
)
def test_protocol_breaking_bots(name: str, staging: Path) -> None:
    spec = staged(staging, name)

    async def scenario() -> None:
        bot = await make_sandbox("bwrap" if bwrap_usable() else "plain").start(spec, LIMITS)
        try:
            await greet(bot)
            await send(bot, ACT)
            line = await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S)
            _first_line_check(name, line)
            if name == "unsolicited":
                assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            await send(bot, {"type": "bye"})
            ended = await bot.wait(LINE_TIMEOUT_S)
            assert ended is not None and ended.returncode == 0
        finally:
            await bot.cleanup()

    run(scenario())


def test_silent_and_flooding_bots(mode: str, staging: Path) -> None:
    silent, flood = staged(staging, "never_answers"), staged(staging, "stderr_flood")

    async def scenario() -> None:
        sandbox = make_sandbox(mode)
        quiet = await sandbox.start(silent, LIMITS)
        loud = await sandbox.start(flood, LIMITS)
        try:
            await greet(quiet)
            await greet(loud)
            await send(quiet, ACT)
            await send(loud, ACT)
            drained = asyncio.create_task(loud.stderr.read())
            assert await reply(loud) == {"id": 2, "cards": ["7C"]}
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(quiet.stdout.readline(), 0.5)
            await loud.close_stdin()
            assert await loud.wait(LINE_TIMEOUT_S) is not None
            assert len(await drained) == 16 * 1024 * 1024
        finally:
            await quiet.cleanup()
            await loud.cleanup()

    run(scenario())


# --------------------------------------------------------------------------- limits


def test_memory_bomb_stopped_by_data_limit(mode: str, staging: Path) -> None:
    spec = staged(staging, "memory_bomb")

    async def scenario() -> tuple[int | None, bytes]:
        bot = await make_sandbox(mode).start(spec, dataclasses.replace(LIMITS, memory_mb=128))
        try:
            await greet(bot)
            await send(bot, ACT)
            ended = await bot.wait(LINE_TIMEOUT_S)
            assert ended is not None
            return ended.returncode, await bot.stderr.read()
        finally:
            await bot.cleanup()

    returncode, stderr = run(scenario())
    assert returncode == 1
    assert b"MemoryError" in stderr
    assert b"MEMORY: 128 MiB" not in stderr and b"no limit hit" not in stderr


def test_cpu_loop_killed_by_cpu_limit(mode: str, staging: Path) -> None:
    spec = staged(staging, "infinite_loop")

    async def scenario() -> None:
        bot = await make_sandbox(mode).start(spec, dataclasses.replace(LIMITS, cpu_seconds=1))
        try:
            await greet(bot)
            await send(bot, ACT)
            ended = await bot.wait(LINE_TIMEOUT_S)
            assert ended is not None
            assert ended.signal == signal.SIGXCPU
            assert "CPU time limit" in ended.detail
            assert ended.describe() == f"killed by signal {int(signal.SIGXCPU)}"
        finally:
            await bot.cleanup()

    run(scenario())


def test_file_size_limit(mode: str, staging: Path) -> None:
    spec = script(
        staging,
        """
        import os
        path = os.path.join(os.environ["TMPDIR"], "big")
        with open(path, "wb") as handle:
            handle.write(b"x" * (1 << 20))
            try:
                handle.write(b"x" * (2 << 20))
                handle.flush()
                print("FSIZE: open", flush=True)
            except OSError as exc:
                print("FSIZE: " + (exc.strerror or str(exc)), flush=True)
        """,
    )

    async def scenario() -> bytes:
        limits = dataclasses.replace(LIMITS, file_size_mb=2, tmp_mb=8)
        bot = await make_sandbox(mode).start(spec, limits)
        try:
            return await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S)
        finally:
            await bot.cleanup()

    assert run(scenario()).strip() == b"FSIZE: File too large"


def test_private_tmp_is_size_limited(bwrap_only: None, staging: Path) -> None:
    spec = script(
        staging,
        """
        import os
        written = 0
        try:
            for index in range(64):
                with open("/tmp/part%d" % index, "wb") as handle:
                    handle.write(b"x" * (1 << 20))
                written += 1
        except OSError as exc:
            print("TMP: %d MiB, %s" % (written, exc.strerror), flush=True)
        """,
    )

    async def scenario() -> bytes:
        bot = await make_sandbox("bwrap").start(spec, dataclasses.replace(LIMITS, tmp_mb=4))
        try:
            return await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S)
        finally:
            await bot.cleanup()

    assert run(scenario()).strip() in (
        b"TMP: 3 MiB, No space left on device",
        b"TMP: 4 MiB, No space left on device",
    )


def test_dev_is_read_only_and_dev_shm_small(bwrap_only: None, staging: Path) -> None:
    """/dev was a tmpfs as large as the host allows (384 MiB went to /dev/shm, 128 MiB to
    /dev); now /dev is read-only and /dev/shm a tmpfs of min(tmp_mb, 16) MiB."""
    spec = staged(staging, "dev_shm")

    async def scenario(tmp_mb: int) -> list[str]:
        limits = dataclasses.replace(LIMITS, tmp_mb=tmp_mb)
        bot = await make_sandbox("bwrap", cgroups=False).start(spec, limits)
        try:
            await greet(bot)
            await send(bot, ACT)
            lines = await markers(bot, "", "DEV: ")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            return lines
        finally:
            await bot.cleanup()

    assert run(scenario(64)) == [
        "SHM: 16 MiB, No space left on device",
        "DEV: Read-only file system",
    ]
    assert run(scenario(4))[0] == "SHM: 4 MiB, No space left on device"


def test_no_nested_user_namespaces_under_bubblewrap(bwrap_only: None, staging: Path) -> None:
    """``--disable-userns``: inside a user namespace of its own a bot is root again."""
    if not bwrap_here().disables_userns:
        pytest.skip("this bubblewrap has no --disable-userns (0.8 and later have)")
    spec = staged(staging, "nested_userns")

    async def scenario() -> str:
        bot = await make_sandbox("bwrap").start(spec, LIMITS)
        try:
            await greet(bot)
            await send(bot, ACT)
            verdict = await marker(bot, "USERNS")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            return verdict
        finally:
            await bot.cleanup()

    assert run(scenario()) == "No space left on device"  # user.max_user_namespaces is 1


# --------------------------------------------------------------------------- isolation


def test_no_network_under_bubblewrap(bwrap_only: None, staging: Path) -> None:
    verdict, connected = _network_scenario("bwrap", staging)
    assert verdict == "blocked"
    assert not connected


def test_network_is_open_without_bubblewrap(staging: Path) -> None:
    """The documented gap of the plain mode (and proof that the check above can fail)."""
    verdict, connected = _network_scenario("plain", staging)
    assert verdict == "open"
    assert connected


def _network_scenario(mode: str, staging: Path) -> tuple[str, bool]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        spec = staged(staging, "network", str(listener.getsockname()[1]))

        async def scenario() -> str:
            bot = await make_sandbox(mode).start(spec, LIMITS)
            try:
                await greet(bot)
                await send(bot, ACT)
                verdict = await marker(bot, "NETWORK")
                assert await reply(bot) == {"id": 2, "cards": ["7C"]}
                return verdict
            finally:
                await bot.cleanup()

        verdict = run(scenario())
        try:
            listener.accept()[0].close()
        except BlockingIOError:
            return verdict, False
        return verdict, True


def test_cannot_write_outside_scratch(mode: str, staging: Path) -> None:
    if mode == "plain" and not IS_ROOT:
        pytest.skip("without bubblewrap the bot's own uid owns its files")
    spec = staged(staging, "write_outside")

    async def scenario() -> list[str]:
        bot = await make_sandbox(mode).start(spec, LIMITS)
        try:
            await greet(bot)
            await send(bot, ACT)
            lines = await markers(bot, "WRITE", "WRITE-TMP: ")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            return lines
        finally:
            await bot.cleanup()

    lines = run(scenario())
    assert "WRITE-OUTSIDE: blocked" in lines, lines
    assert "WRITE-TMP: ok" in lines, lines
    assert len([line for line in lines if " denied " in line]) == 5, lines
    assert sorted(os.listdir(spec.folder)) == ["write_outside.py"]


@needs_root
def test_files_left_in_shared_tmp_folders_are_removed(staging: Path) -> None:
    """Without bubblewrap a bot can write to /tmp, /var/tmp and /dev/shm; cleanup sweeps."""
    spec = script(
        staging,
        """
        import os
        for folder in ("/tmp", "/var/tmp", "/dev/shm"):
            os.makedirs(os.path.join(folder, "referee-leftover-%d" % os.getpid(), "sub"))
            with open(os.path.join(folder, "referee-leftover-file-%d" % os.getpid()), "w"):
                pass
        print("done", flush=True)
        """,
    )

    async def scenario() -> int | None:
        bot = await make_sandbox("plain").start(spec, LIMITS)
        uid = bot.uid
        try:
            assert await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S) == b"done\n"
        finally:
            await bot.cleanup()
        return uid

    uid = run(scenario())
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        left = [
            entry.path
            for entry in os.scandir(folder)
            if entry.stat(follow_symlinks=False).st_uid == uid
        ]
        assert not left


def test_cannot_read_secrets_or_other_bots(mode: str, staging: Path) -> None:
    if mode == "plain" and not IS_ROOT:
        pytest.skip("without bubblewrap or a dropped uid the bot reads what the referee reads")
    other = staged(staging, "polite")
    secret = other.folder / "polite.py"
    # Without bubblewrap the staged copies are world-readable by design (0644); what keeps
    # them apart is the unlistable staging root, so the plain bot does not get the path.
    extra = (str(secret), str(other.folder)) if mode == "bwrap" else ()
    spec = staged(staging, "read_other", *extra)

    async def scenario() -> list[str]:
        bot = await make_sandbox(mode).start(spec, LIMITS)
        try:
            await greet(bot)
            await send(bot, ACT)
            lines = await markers(bot, "READ", "READ-SECRETS: ")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            return lines
        finally:
            await bot.cleanup()

    lines = run(scenario())
    assert lines[-1] == "READ-SECRETS: blocked", lines
    assert any(line.startswith("READ: /etc/shadow denied") for line in lines)
    assert any(line.startswith("READ: /root denied") for line in lines)
    if mode == "bwrap":
        assert any(line.startswith(f"READ: {secret} denied") for line in lines)
    else:
        assert any(line.startswith(f"READ: {staging} denied") for line in lines)


_DOOMED_REFEREE = """
import asyncio, sys
from pathlib import Path
from referee.sandbox import load_bot, stage_bot
from referee.sandbox.base import Limits
from referee.sandbox.process import ProcessSandbox

async def main():
    spec = stage_bot(load_bot(Path(sys.argv[1])), Path(sys.argv[2]))
    uids = range(int(sys.argv[4]), int(sys.argv[5]))
    bot = await ProcessSandbox(bwrap=sys.argv[3] == "bwrap", uid_range=uids).start(spec, Limits())
    print(bot.uid, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@needs_root
def test_a_bot_dies_with_its_referee_killed_by_sigkill(
    mode: str, staging: Path, tmp_path: Path
) -> None:
    """A referee SIGKILLed (the OOM killer, a lost worker) takes its bot along, in both
    modes, even a bot that never reads, writes or exits: setpriv arms the parent-death
    signal before anything of the bot runs (without bubblewrap, nothing else did)."""
    deaf = tmp_path / "deaf.py"
    deaf.write_text("import time\nwhile True:\n    time.sleep(3600)\n")
    referee = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _DOOMED_REFEREE,
            str(deaf),
            str(staging),
            mode,
            str(TEST_UIDS.start),
            str(TEST_UIDS.stop),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert referee.stdout is not None
        uid = int(referee.stdout.readline())
        time.sleep(0.3)  # the bot sleeps, deaf to the end of its input
        assert live_processes(uid=uid), "the bot did not start"
    finally:
        referee.kill()
        referee.wait()
    deadline = time.monotonic() + 10
    with unleased(uid) as ours:
        assert ours, "the dead referee's uid lease was not released"
        while live_processes(uid=uid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = live_processes(uid=uid)
        if left:
            asyncio.run(process_module.kill_uid(uid))
    assert not left, f"the bot outlived its referee: {left}"


@needs_root
def test_a_start_whose_referee_is_gone_stops_before_the_bot() -> None:
    """The check after the arming: a start whose parent is no longer the referee (it died
    before setpriv armed the signal) stops there, with nothing of the bot run."""
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "setpriv (util-linux) is part of the test machine"
    marker_file = Path(f"/tmp/referee-test-started-{os.getpid()}")
    argv = [
        *process_module._setpriv_argv(setpriv, None),
        *process_module._oom_first_argv(parent=1),  # we are not init: "the referee is gone"
        "touch",
        str(marker_file),
    ]
    done = subprocess.run(argv, capture_output=True, timeout=30)
    assert done.returncode == 125, done
    assert not marker_file.exists(), "the bot's command ran without its referee"
    argv[argv.index("1")] = str(os.getpid())  # the same start, its referee alive
    done = subprocess.run(argv, capture_output=True, timeout=30)
    try:
        assert done.returncode == 0, done
        assert marker_file.exists()
    finally:
        marker_file.unlink(missing_ok=True)


def test_bot_cannot_signal_the_referee_or_other_bots(mode: str, staging: Path) -> None:
    if mode == "plain" and not IS_ROOT:
        pytest.skip("a bot under the referee's own uid and pid namespace can kill it")
    spec = staged(staging, "signal_parent", "--kill-all")
    victim_spec = staged(staging, "polite")

    async def scenario() -> list[str]:
        sandbox = make_sandbox(mode)
        victim = await sandbox.start(victim_spec, LIMITS)
        bot = await sandbox.start(spec, LIMITS)
        try:
            await greet(victim)
            await greet(bot)
            await send(bot, ACT)
            lines = await markers(bot, "SIGNAL: ", "SIGNAL: still alive")
            assert await reply(bot) == {"id": 2, "cards": ["7C"]}
            await send(victim, ACT)
            assert await reply(victim) == {"id": 2, "cards": ["7C"]}
            return lines
        finally:
            await bot.cleanup()
            await victim.cleanup()

    lines = run(scenario())
    assert any(line.startswith("SIGNAL: kill(-1, SIGKILL)") for line in lines), lines
    if mode == "plain":
        parent_lines = [line for line in lines if "kill(parent" in line]
        assert parent_lines and all("denied" in line for line in parent_lines), lines
        return
    # Under bubblewrap the parent is the namespace's init, which ignores these signals.
    assert any("kill(parent 1," in line for line in lines), lines


def test_resource_module_matches_prlimit_names() -> None:
    """prlimit is driven by name; every resource we limit must have one."""
    limits = process_module._rlimits(LIMITS, nproc=7)
    assert set(limits) <= set(process_module._PRLIMIT_NAMES)
    assert limits[resource.RLIMIT_NPROC] == (7, 7)


def _zombies_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        uids = {int(u) for u in fields.get("Uid", "").split()}
        if fields.get("State", "").startswith("Z") and uid in uids:
            found.append(int(entry.name))
    return found


@needs_root
def test_no_zombie_keeps_a_bot_uid_busy(bwrap_only: None, staging: Path) -> None:
    """A bot killed mid-run leaves no zombie under its uid (bubblewrap's pid-1 helper,
    orphaned when its parent dies first, is reaped by the referee, not left to pid 1)."""
    spec = script(staging, "import time\nprint('up', flush=True)\ntime.sleep(600)\n")

    async def scenario() -> list[tuple[int, list[int]]]:
        sandbox = make_sandbox("bwrap")
        seen = []
        for _ in range(5):
            bot = await sandbox.start(spec, LIMITS)
            assert await asyncio.wait_for(bot.stdout.readline(), LINE_TIMEOUT_S) == b"up\n"
            uid = bot.uid
            assert uid is not None
            await bot.cleanup()
            seen.append((uid, _zombies_of(uid)))
        return seen

    for uid, zombies in run(scenario()):
        assert zombies == [], f"zombies left under uid {uid}: {zombies}"


# --------------------------------------------------------------------------- seccomp

# Two copies of one bot, started from one staged file as a pool starts them: the sender
# takes an OFD read lock on byte 0 of that file, the receiver asks who would block a
# write lock there. That was the covert channel between the seat rotations of a deal.
LOCK_CHANNEL = """
import fcntl, errno, os, struct, sys
fd = os.open(os.path.abspath(sys.argv[0]), os.O_RDONLY)
lock = struct.pack("hh4xqqi4x", fcntl.F_RDLCK if sys.argv[1] == "send" else fcntl.F_WRLCK,
                   os.SEEK_SET, 0, 1, 0)
try:
    if sys.argv[1] == "send":
        fcntl.fcntl(fd, 37, lock)  # F_OFD_SETLK
        result = "locked"
    else:
        kind = struct.unpack("hh4xqqi4x", fcntl.fcntl(fd, 36, lock))[0]  # F_OFD_GETLK
        result = "saw a lock" if kind == fcntl.F_RDLCK else "saw nothing"
except OSError as exc:
    result = errno.errorcode[exc.errno]
print(result, flush=True)
sys.stdin.read()
"""


def _lock_channel(staging: Path, **options: Any) -> tuple[str, str]:
    spec = script(staging, LOCK_CHANNEL, "lock_channel")
    sender, receiver = (
        dataclasses.replace(spec, command=(*spec.command, role)) for role in ("send", "recv")
    )

    async def scenario() -> tuple[str, str]:
        sandbox = make_sandbox("bwrap", **options)
        first = await sandbox.start(sender, LIMITS)
        try:
            sent = await asyncio.wait_for(first.stdout.readline(), LINE_TIMEOUT_S)
            second = await sandbox.start(receiver, LIMITS)
            try:
                seen = await asyncio.wait_for(second.stdout.readline(), LINE_TIMEOUT_S)
            finally:
                await second.cleanup()
        finally:
            await first.cleanup()
        return sent.decode().strip(), seen.decode().strip()

    return run(scenario())


def test_two_copies_learn_nothing_through_file_locks(bwrap_only: None, staging: Path) -> None:
    """Under the filter neither copy can take or test a lock; without it the channel works
    (so this test can tell the two apart)."""
    if os.environ.get("CI") != "true" and not make_sandbox("bwrap").seccomp_filter().works:
        pytest.skip("libseccomp is not usable here; under CI=true this fails")
    assert _lock_channel(staging, seccomp=True) == ("EPERM", "EPERM")
    assert _lock_channel(staging, seccomp=False) == ("locked", "saw a lock")


def test_describe_says_whether_the_filter_is_on(bwrap_only: None) -> None:
    assert "seccomp filter (EPERM for io_uring" in make_sandbox("bwrap", seccomp=True).describe()
    off = make_sandbox("bwrap", seccomp=False).describe()
    assert "NO seccomp filter (disabled by configuration)" in off
    assert "no seccomp filter (it needs bubblewrap)" in make_sandbox("plain").describe()


def test_without_libseccomp_bots_run_unfiltered_with_one_warning(
    bwrap_only: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    staging: Path,
) -> None:
    # As if pyseccomp could not find libseccomp.so.2 (it raises at import then).
    monkeypatch.setitem(sys.modules, "pyseccomp", None)
    spec = staged(staging, "polite")

    async def scenario(sandbox: ProcessSandbox) -> list[str]:
        notes = []
        for _ in range(2):
            bot = await sandbox.start(spec, LIMITS)
            try:
                await greet(bot)
                notes += bot.notes
            finally:
                await bot.cleanup()
        return notes

    sandbox = make_sandbox("bwrap")
    assert "NO seccomp filter (the pyseccomp package is not installed" in sandbox.describe()
    with caplog.at_level(logging.WARNING, logger="referee.sandbox.process"):
        notes = run(scenario(sandbox))
    warnings = [r.getMessage() for r in caplog.records if "seccomp" in r.getMessage()]
    assert len(warnings) == 1 and "WITHOUT a seccomp filter" in warnings[0], warnings
    assert not any("seccomp" in note for note in notes)
    with pytest.raises(InfrastructureError, match="seccomp filter is required but unusable"):
        run(make_sandbox("bwrap", seccomp=True).start(spec, LIMITS))


def test_a_sigkill_no_memory_counter_explains_says_so(mode: str, staging: Path) -> None:
    """Without cgroups, a SIGKILL from outside the referee may be the kernel's out-of-memory
    killer acting for memory above the bot, or the bot's own: its exit says that nothing
    here can tell (and a league never suspends a bot for it, ``errors.own_fault``). With a
    cgroup whose counter says no OOM kill, the same SIGKILL is the bot's own."""
    spec = staged(staging, "conformance_bot")

    async def scenario(cgroups: bool | None) -> tuple[str, bool]:
        bot = await make_sandbox(mode, cgroups=cgroups).start(spec, LIMITS)
        try:
            await send(bot, {"signal": signal.SIGKILL})
            info = await bot.wait(LINE_TIMEOUT_S)
            assert info is not None and info.signal == signal.SIGKILL, info
            return info.detail, bot.cgroup is not None
        finally:
            await bot.cleanup()

    detail, counted = run(scenario(False))
    assert not counted and UNCOUNTED_KILL in detail
    assert not own_fault("crash", f"the bot exited while a request was outstanding ({detail})")
    detail, counted = run(scenario(None))
    if counted:  # cgroups here: the counter says it was not the kernel
        assert UNCOUNTED_KILL not in detail and REFEREE_KILL not in detail
        assert own_fault("crash", f"the bot exited while a request was outstanding ({detail})")
