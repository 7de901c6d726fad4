"""Stopping the referee mid-match: SIGTERM and Ctrl-C stop every bot and remove the staging
folders before the command exits (143, 130); after SIGKILL, the next start removes the
containers the dead referee left, and a tournament's workers stop their bots themselves.

Each scenario runs the real command in a subprocess with a bot that sleeps through its
first request, so the match is certainly in progress when the signal arrives. Containers
are found by their owner label (the referee's pid) or by a run id of the scenario's own;
bot processes by this test run's sandbox uids (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_docker, sandbox_pids

ROOT = Path(__file__).resolve().parent.parent
BOTS = ROOT / "tests" / "bots"
SLEEPS = BOTS / "sleeps.py"
POLITE = BOTS / "polite.py"
LABEL = "org.arschloch-referee"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)
    return value


@pytest.fixture
def tmpdir_for_bots() -> Iterator[Path]:
    """A TMPDIR for the referee (its staging folders go there) that bot uids may enter."""
    folder = Path(tempfile.mkdtemp(prefix="referee-interrupt-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def staging_folders(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.glob("referee-bots-*"))


def start_play(sandbox: str, tmpdir: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "referee",
            "play",
            str(SLEEPS),
            str(POLITE),
            str(POLITE),
            "--sandbox",
            sandbox,
            "--move-ms",
            "600000",
            "--bank-ms",
            "0",
            "--log",
            str(tmpdir / "match.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir), **env},
    )


def stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str]:
    """Send ``signum``; the exit code and stderr (the process is killed if it hangs)."""
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


def containers(client: Any, label: str) -> list[str]:
    """Ids of the referee's containers with ``label`` (listed without inspecting each: one
    may be removed while we look)."""
    found = client.api.containers(all=True, filters={"label": [LABEL, label]})
    return sorted(entry["Id"] for entry in found)


def remove(client: Any, ids: list[str]) -> None:
    import docker

    for container in ids:
        with contextlib.suppress(docker.errors.NotFound):
            client.api.remove_container(container, force=True)


def owner_label(pid: int) -> str:
    return f"{LABEL}.owner={socket.gethostname()}/{pid}"


@pytest.fixture
def docker_client() -> Iterator[Any]:
    client = require_docker()
    yield client
    client.close()


# --------------------------------------------------------------------------- play


@pytest.mark.docker
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_play_in_docker_stops_its_containers_on_a_signal(
    docker_client: Any, tmpdir_for_bots: Path, signum: int, code: int
) -> None:
    referee = start_play("docker", tmpdir_for_bots)
    mine = owner_label(referee.pid)
    try:
        wait_for(lambda: len(containers(docker_client, mine)) == 3, 60, "the three containers")
        time.sleep(1.0)  # the match is on: the sleeper holds its first request
        assert staging_folders(tmpdir_for_bots)
        returncode, err = stop(referee, signum)
        left = containers(docker_client, mine)  # read before the cleanup below
    finally:
        remove(docker_client, containers(docker_client, mine))  # whatever happened
    assert returncode == code, err
    assert left == [], "the referee left containers behind"
    assert staging_folders(tmpdir_for_bots) == []
    last = err.strip().splitlines()[-1]
    assert last.startswith("referee: ") and "every bot was stopped" in last
    assert "Traceback" not in err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_play_in_the_process_sandbox_stops_its_bots_on_a_signal(
    tmpdir_for_bots: Path, signum: int, code: int
) -> None:
    assert sandbox_pids() == []
    referee = start_play("process", tmpdir_for_bots)
    try:
        wait_for(lambda: len(sandbox_pids()) >= 3, 60, "the three bots to start")
        time.sleep(1.0)
        returncode, err = stop(referee, signum)
    finally:
        if referee.poll() is None:
            referee.kill()
    assert returncode == code, err
    wait_for(lambda: sandbox_pids() == [], 5, "no bot process of this run")
    assert staging_folders(tmpdir_for_bots) == []
    assert "every bot was stopped" in err and "Traceback" not in err


@pytest.mark.docker
def test_after_sigkill_the_next_start_removes_the_dead_referees_containers(
    docker_client: Any, tmpdir_for_bots: Path
) -> None:
    import asyncio

    from referee.sandbox import BotSpec, Limits
    from referee.sandbox.docker import DockerSandbox

    referee = start_play("docker", tmpdir_for_bots)
    dead = owner_label(referee.pid)
    live_sandbox = DockerSandbox()
    bot_folder = tmpdir_for_bots / "alive"
    bot_folder.mkdir(mode=0o755)
    shutil.copy(SLEEPS, bot_folder / "sleeps.py")
    (bot_folder / "sleeps.py").chmod(0o644)
    sleeper = BotSpec("alive", bot_folder, ("python3", "sleeps.py"), single_file="sleeps.py")
    loop = asyncio.new_event_loop()
    try:
        wait_for(lambda: len(containers(docker_client, dead)) == 3, 60, "the three containers")
        time.sleep(1.0)
        referee.kill()
        referee.communicate(timeout=30)
        assert len(containers(docker_client, dead)) == 3  # left behind, as SIGKILL allows
        # A live referee's container (this process's) must survive the sweep.
        live = loop.run_until_complete(live_sandbox.start(sleeper, Limits(memory_mb=128)))
        alive = owner_label(os.getpid())
        assert len(containers(docker_client, alive)) == 1

        async def next_start() -> None:
            sandbox = DockerSandbox()
            process = await sandbox.start(sleeper, Limits(memory_mb=128))
            await process.cleanup()
            await sandbox.aclose()

        loop.run_until_complete(next_start())
        assert containers(docker_client, dead) == []
        assert len(containers(docker_client, alive)) == 1
        loop.run_until_complete(live.cleanup())
        loop.run_until_complete(live_sandbox.aclose())
    finally:
        loop.close()
        if referee.poll() is None:
            referee.kill()
        remove(docker_client, containers(docker_client, dead))


# --------------------------------------------------------------------------- bot check


@pytest.mark.docker
def test_bot_check_in_docker_removes_every_container_on_ctrl_c(
    docker_client: Any, tmpdir_for_bots: Path
) -> None:
    """Stopped while a step waits on the bot's container, the opponents of the largest table
    running beside it in the process sandbox: the container is removed and every opponent
    stopped before the command exits."""
    referee = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "referee",
            "bot",
            "check",
            str(SLEEPS),
            "--sandbox",
            "docker",
            "--move-ms",
            "600000",
            "--bank-ms",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir_for_bots)},
    )
    mine = owner_label(referee.pid)
    try:
        # The bot's one container; the 5 opponents of the largest table, as processes.
        wait_for(lambda: len(containers(docker_client, mine)) >= 1, 60, "the container")
        wait_for(lambda: len(sandbox_pids()) >= 5, 60, "the opponents")
        time.sleep(1.0)
        returncode, err = stop(referee, signal.SIGINT)
        left = containers(docker_client, mine)
    finally:
        remove(docker_client, containers(docker_client, mine))  # whatever happened
    assert returncode == 130, err
    assert left == [], "the check left containers behind"
    wait_for(lambda: sandbox_pids() == [], 5, "no opponent's process left")
    assert staging_folders(tmpdir_for_bots) == []
    assert "Traceback" not in err


# --------------------------------------------------------------------------- tournament


def write_docker_tournament(folder: Path) -> Path:
    (folder / "bots").mkdir(parents=True)
    for bot in (SLEEPS, POLITE):
        shutil.copy(bot, folder / "bots" / bot.name)
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\n'
        "deals = 2\nseed = 1\nallow_twins = true\n\n[time]\nmove_ms = 600000\nbank_ms = 0\nhello_ms = 60000\n\n"
        '[sandbox]\nbackend = "docker"\nmemory_mb = 128\n\n'
        '[[bots]]\npath = "bots/sleeps.py"\n\n'
        '[[bots]]\npath = "bots/polite.py"\nname = "polite-1"\n\n'
        '[[bots]]\npath = "bots/polite.py"\nname = "polite-2"\n'
    )
    return path


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.docker
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_tournament_leaves_no_container_or_worker(
    docker_client: Any, tmpdir_for_bots: Path, signum: int
) -> None:
    path = write_docker_tournament(tmpdir_for_bots / "tournament")
    run_id = f"{os.environ['REFEREE_RUN_ID']}-{signum}"
    mine = f"{LABEL}.run={run_id}"
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee", "tournament", "run", str(path), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir_for_bots), "REFEREE_RUN_ID": run_id},
    )
    workers: list[int] = []
    try:
        wait_for(lambda: len(containers(docker_client, mine)) >= 6, 90, "two matches' containers")
        time.sleep(1.0)
        workers = [pid for pid in children(referee.pid) if alive(pid)]
        assert len(workers) >= 2
        returncode, err = stop(referee, signum)
        # SIGKILL gives the workers no word: they notice the coordinator is gone.
        wait_for(lambda: not any(alive(pid) for pid in workers), 60, "the workers to exit")
        left = containers(docker_client, mine)
    finally:
        if referee.poll() is None:
            referee.kill()
        remove(docker_client, containers(docker_client, mine))
    assert left == []
    if signum == signal.SIGTERM:
        assert returncode == 143, err
        assert "every bot was stopped" in err and "Traceback" not in err
        assert staging_folders(tmpdir_for_bots) == []


def _finish_quickly(folder: str) -> None:
    """A spawned process's target: a cleanup registered as a pool registers its own, an
    interpreter exit hook, then :func:`interrupts.skip_teardown`."""
    import atexit
    import multiprocessing.util
    from pathlib import Path

    from referee import interrupts

    def cleaned() -> None:
        (Path(folder) / "cleaned").write_text("yes")

    def torn_down() -> None:
        (Path(folder) / "torn-down").write_text("yes")

    multiprocessing.util.Finalize(None, cleaned, exitpriority=10)
    atexit.register(torn_down)
    interrupts.skip_teardown()
    print("said before the exit", flush=False)


def test_a_process_that_skips_teardown_runs_its_cleanups_first(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The pool's cleanups (a worker stopping its bots) still run, what was printed is
    flushed, and the exit is 0; only the interpreter's own teardown (its exit hooks among
    it) is skipped."""
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(
        target=_finish_quickly, args=(str(tmp_path),)
    )
    process.start()
    process.join(30)
    assert process.exitcode == 0
    assert (tmp_path / "cleaned").read_text() == "yes"
    assert not (tmp_path / "torn-down").exists()
    assert "said before the exit" in capfd.readouterr().out


def _fail_after_skipping(how: str) -> None:
    """A spawned process's target that skips teardown, then fails (``how``)."""
    from referee import interrupts

    interrupts.skip_teardown()
    if how == "raise":
        raise RuntimeError("a bug in the child")
    raise SystemExit(3)


@pytest.mark.parametrize(("how", "status"), [("raise", 1), ("exit", 3)])
def test_a_process_that_skips_teardown_and_fails_keeps_its_status_and_traceback(
    capfd: pytest.CaptureFixture[str], how: str, status: int
) -> None:
    """Skipping teardown never turns a failure into a clean exit."""
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(target=_fail_after_skipping, args=(how,))
    process.start()
    process.join(30)
    assert process.exitcode == status
    assert ("RuntimeError: a bug in the child" in capfd.readouterr().err) == (how == "raise")


_ENTRY = """\
import multiprocessing, os, pathlib, sys

if __name__ == "__mp_main__":  # what spawn does to a main script in each child
    pathlib.Path(sys.argv[1]).write_text("run again")

from referee.interrupts import children_skip_main

if __name__ == "__main__":
    if sys.argv[2] == "skip":
        children_skip_main()
    child = multiprocessing.get_context("spawn").Process(target=os.getpid)
    child.start()
    child.join(30)
    sys.exit(child.exitcode)
"""


@pytest.mark.parametrize("skip", [True, False])
def test_a_spawned_process_runs_the_command_script_again_only_when_not_told(
    tmp_path: Path, skip: bool
) -> None:
    """The ``referee`` script is not run again in the processes it spawns (it would import
    the whole command line in each); a script of the caller's own still is."""
    script = tmp_path / "entry"
    script.write_text(_ENTRY)
    marker = tmp_path / "marker"
    done = subprocess.run(
        [sys.executable, str(script), str(marker), "skip" if skip else "keep"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert marker.exists() is not skip


def test_the_console_script_enters_through_run() -> None:
    """The ``referee`` command's entry point is :func:`referee.cli.run`, which spares the
    processes it spawns the script."""
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "referee"]
    assert script.value == "referee.cli:run"
