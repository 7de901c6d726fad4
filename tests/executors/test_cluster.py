"""The Dask executor against a real cluster: a ``dask scheduler`` and ``dask worker``
processes on 127.0.0.1, started by the tests with TLS (docs/cluster.md's certificates,
``tests/executors/conftest.py``), each test owning its ports and processes.

What is checked (issue: "Scale out"): the leaderboard equals the local executor's on the
same file and secret; a worker killed mid-tournament still leaves every match stored
exactly once, the interrupted ones on fresh cards; a Docker tournament with no worker
offering Docker is refused with the reason; a changed bot is fetched again and an
unchanged one is not; a worker running another referee is refused; Ctrl-C leaves no bot
process on the workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import InfrastructureError, UsageError
from referee.executors import cluster as cluster_module
from referee.executors.base import MatchFailed, MatchStarted
from referee.executors.cluster import DaskExecutor
from referee.executors.local import LocalExecutor
from referee.publish import render
from referee.publish.source import leaderboard, load_results
from referee.runs.tournament import Event, ResultStored, run_tournament
from referee.sandbox.cgroups import sweep_leftovers
from referee.sandbox.process import ProcessSandbox
from referee.tournament.file import load_tournament
from tests.conftest import run_uids, sandbox_pids
from tests.executors.conftest import ClusterTLS, readme_certificate_commands
from tests.tournament.conftest import timeless, write_bot, write_tournament

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DASK = Path(sys.executable).with_name("dask")
REFEREE = Path(sys.executable).with_name("referee")
SECRET = bytes(range(32))
NAMES = ("ann", "bob", "cid", "dee", "eve")


@dataclass
class Cluster:
    """A scheduler and its workers, started here; stopped (all of them) at the end."""

    folder: Path
    tls: ClusterTLS
    scheduler: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    address: str = ""

    def start(self) -> Cluster:
        info = self.folder / "scheduler.json"
        self.scheduler = self._spawn(
            [
                str(DASK),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--protocol",
                "tls",
                *self.tls.flags,
                "--no-dashboard",
                "--scheduler-file",
                str(info),
            ],
            "scheduler",
        )
        scheduler = self.scheduler
        _until(lambda: _address_in(info) or scheduler.poll() is not None, 60, "its address")
        assert scheduler.poll() is None, "the scheduler did not start"
        self.address = _address_in(info)
        return self

    def add_worker(
        self, name: str, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """A single-threaded worker without a nanny: killing it kills the worker itself."""
        worker = self._spawn(
            [
                str(DASK),
                "worker",
                self.address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--name",
                name,
                *self.tls.flags,
                "--local-directory",
                str(self.folder / name),
                *extra,
            ],
            name,
            env,
        )
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, count: int) -> None:
        with self.client() as client:
            client.wait_for_workers(count, timeout=60)

    def client(self) -> Any:
        """A client of the tests' own, with the cluster's certificates."""
        from distributed import Client

        return Client(self.address, timeout=30, security=self.tls.client_security())

    def executor(self) -> DaskExecutor:
        return DaskExecutor(self.address, security=self.tls.security)

    def _spawn(
        self, argv: list[str], name: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        return subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, env=env
        )

    def stop(self) -> None:
        """The workers first, then the scheduler: a worker that closes its TLS connections
        while the scheduler goes away at the same moment may wait on them until killed."""
        for group in (self.workers, [self.scheduler]):
            for process in group:
                if process is not None and process.poll() is None:
                    process.terminate()
            for process in group:
                if process is None:
                    continue
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Wait until ``condition()`` holds, looking again every few milliseconds: for states
    of other processes (a file, a socket, a process) that no event announces."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.005)


def _address_in(info: Path) -> str:
    """The address in a scheduler file once it is complete JSON, else ""."""
    try:
        return str(json.loads(info.read_text())["address"])
    except (OSError, ValueError, KeyError):
        return ""


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP has taken effect)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def _tcp_table() -> list[tuple[str, str, int, int, str]]:
    """Established TCP sockets of this machine: local, remote, send queue, receive queue,
    inode (/proc/net/tcp and tcp6)."""
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] != "01":  # ESTABLISHED
                    continue
                tx, rx = (int(part, 16) for part in fields[4].split(":"))
                rows.append((fields[1], fields[2], tx, rx, fields[9]))
    return rows


def _all_sent_was_read(pid: int) -> bool:
    """Whether every byte process ``pid`` wrote to its TCP connections has been read by
    the process at the other end (its send queue empty, and the peer's receive queue)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    rows = _tcp_table()
    ours = [(local, remote, tx) for local, remote, tx, _, inode in rows if inode in inodes]
    queued = {(local, remote): rx for local, remote, _, rx, _ in rows}
    return all(tx == 0 and queued.get((remote, local), 0) == 0 for local, remote, tx in ours)


def _cluster(folder: Path, tls: ClusterTLS, workers: int = 2, *extra: str) -> Cluster:
    folder.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(folder, tls).start()
    for n in range(workers):
        cluster.add_worker(f"w{n}", *extra)
    cluster.wait_for_workers(workers)
    return cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, cluster_tls: ClusterTLS) -> Iterator[Cluster]:
    running = _cluster(tmp_path_factory.mktemp("cluster"), cluster_tls)
    try:
        yield running
    finally:
        running.stop()


def _board(path: Path, results: Path | None = None) -> dict[str, Any]:
    """The leaderboard as published JSON, without what the clock measured."""
    board = leaderboard(load_results(load_tournament(path), results))
    return timeless(json.loads(render(board, "json")))


def _query(results: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(results / "results.sqlite") as db:
        return db.execute(sql).fetchall()


def test_the_leaderboard_equals_the_local_executors(tmp_path: Path, cluster: Cluster) -> None:
    """Play-offs included: each round is planned from the stored results, alike."""
    path = write_tournament(
        tmp_path / "t",
        bots=5,
        table_size=3,
        deals=2,
        names=NAMES,
        extra="playoff = { top = 3, until = 0.75, budget = 24 }",
    )
    tournament = load_tournament(path)
    with cluster.executor() as executor:
        summary = run_tournament(tournament, executor, deal_secret=SECRET)
        stats = executor.stats
    assert (summary.done, summary.failed) == (summary.total, 0)
    local = run_tournament(
        tournament, LocalExecutor(2), deal_secret=SECRET, results_dir=tmp_path / "local"
    )
    assert (local.done, local.failed) == (summary.total, 0)
    assert _board(path) == _board(path, tmp_path / "local")
    board = _board(path)
    assert board["playoff"]["matches"] > 0, "no play-off round was played"
    # Each bot was sent once: never with a match (tasks name bundles by their hash).
    assert stats.bundles_scattered == 5
    assert stats.results == summary.total


def _sweep_as_the_next_referee() -> None:
    """What a killed worker left: a bot whose start the kill cut inside bubblewrap's own
    setup may outlive it (its parent-death signal is armed late there). The next referee on
    the machine sweeps what dead referees left, as a restarted worker does."""
    sweep_leftovers(ProcessSandbox(uid_range=run_uids()).cgroup_support())


def _kill_in_a_claimed_match(cluster: Cluster, worker: int, done: threading.Event) -> str:
    """SIGKILL ``cluster.workers[worker]`` while it plays a match whose cards are dealt (its
    claim is set); return that attempt's claim, or "" if ``done`` came first.

    It waits on the claim itself (a :class:`distributed.Event` the worker sets before it
    deals) of a task the scheduler has given that worker, then freezes the worker (SIGSTOP)
    so that it cannot finish the match, and waits until the worker is stopped and every
    byte it sent before has been read at the other end (its sockets' queues, in
    /proc/net/tcp): a result sent just before the freeze has then reached the scheduler.
    Only a task the scheduler still sees on that worker is unfinished; without the freeze,
    a kill after "some results" may hit a worker between matches, and nothing would be
    played again.
    """
    from distributed import Event as Claim

    process = cluster.workers[worker]
    with cluster.client() as client:
        workers = client.scheduler_info()["workers"]
        address = next(a for a, info in workers.items() if info["name"] == f"w{worker}")

        def given() -> list[str]:
            keys = map(str, client.processing(workers=[address]).get(address, ()))
            return [k for k in keys if k.startswith("referee-")]

        while not done.is_set():
            tasks = given()
            if not tasks:
                done.wait(0.05)  # nothing given to the worker yet: look again, or stop
                continue
            # The task it plays sets its claim as it deals; one still queued times out.
            claimed = next((k for k in tasks if Claim(k, client=client).wait(timeout=0.5)), "")
            if not claimed:
                continue
            process.send_signal(signal.SIGSTOP)
            _until(lambda: _stopped(process.pid), 10, f"w{worker} to stop")
            _until(lambda: _all_sent_was_read(process.pid), 10, f"what w{worker} sent")
            if claimed in given():
                process.kill()  # mid-match, with whatever it holds
                return claimed
            process.send_signal(signal.SIGCONT)
    return ""


def test_a_worker_killed_mid_tournament_loses_nothing_and_deals_fresh_cards(
    tmp_path: Path, cluster_tls: ClusterTLS
) -> None:
    own = _cluster(tmp_path / "cluster", cluster_tls)
    done = threading.Event()
    try:
        path = write_tournament(
            tmp_path / "t",
            bots=5,
            table_size=3,
            deals=2,
            names=NAMES,
            time_section="move_ms = 2000\nbank_ms = 8000\nhello_ms = 10000",
        )
        killed: list[str] = []
        killer = threading.Thread(
            target=lambda: killed.append(_kill_in_a_claimed_match(own, 0, done)), daemon=True
        )
        with own.executor() as executor:
            killer.start()
            summary = run_tournament(load_tournament(path), executor, deal_secret=SECRET)
        done.set()
        killer.join(60)
        assert killed and killed[0], "worker w0 was never seen in a match with its cards dealt"
        _sweep_as_the_next_referee()
        results = path.parent / "t.results"
        assert (summary.done, summary.failed) == (summary.total, 0)
        per_key = _query(
            results, "SELECT match_key, COUNT(*), COUNT(DISTINCT seat) FROM results GROUP BY 1"
        )
        assert len(per_key) == summary.total
        assert {(n, d) for _, n, d in per_key} == {(3, 3)}  # every match stored exactly once
        assert _query(results, "SELECT COUNT(*) FROM matches WHERE status != 'done'") == [(0,)]
        # The match the lost worker was playing was played again, on fresh cards.
        match_key = killed[0].split("-", 2)[2].rsplit("-a", 1)[0]
        retried = dict(_query(results, "SELECT key, deal_attempt FROM matches WHERE attempts > 1"))
        assert match_key in retried, f"{match_key} was not played again: {retried}"
        for key, deal_attempt in retried.items():
            assert deal_attempt >= 1, f"{key} was replayed on the cards its bots had seen"
    finally:
        done.set()
        if own.workers[0].poll() is None:
            own.workers[0].send_signal(signal.SIGCONT)
        own.stop()


def test_a_bundle_lost_with_its_only_worker_fails_the_fetch_at_once(
    tmp_path: Path, cluster_tls: ClusterTLS
) -> None:
    """Scattered bytes cannot be computed again: Dask marks them lost at once, and the
    fetch says so instead of waiting out its timeout (it waited 2 x 120 s: a worker lost
    early in a run stalled every match that needed a bot it held)."""
    from distributed import Variable

    own = _cluster(tmp_path / "cluster", cluster_tls)
    try:
        with own.client() as client:
            workers = {info["name"]: a for a, info in client.scheduler_info()["workers"].items()}
            key = "referee-bundle-test-only-on-w0"
            held = client.scatter({key: b"bot bytes"}, workers=[workers["w0"]], hash=False)[key]
            Variable(key, client=client).set(held)
            assert list(client.who_has([held])[key]) == [workers["w0"]]
            own.workers[0].kill()
            own.workers[0].wait()
            fetch = client.submit(cluster_module._fetch, key, workers=[workers["w1"]], pure=False)
            error = fetch.exception(timeout=200)
        assert isinstance(error, InfrastructureError), error
        assert f"cannot fetch {key} from the cluster: lost (its only copy was on a worker" in str(
            error
        )
    finally:
        own.stop()


def test_a_worker_lost_as_the_run_starts_takes_no_bot_and_no_match_with_it(
    tmp_path: Path, cluster_tls: ClusterTLS
) -> None:
    """Killed at the first start, w0 takes with it the bundles scattered to it alone: the
    matches that needed them fail their fetch, and each retry finds its bundles scattered
    again (the coordinator asks the scheduler who holds them). Nothing fails for good."""
    own = _cluster(tmp_path / "cluster", cluster_tls)
    try:
        path = write_tournament(tmp_path / "t", bots=5, table_size=3, names=NAMES)
        failed: list[MatchFailed] = []

        def watch(event: Event) -> None:
            if isinstance(event, MatchStarted) and own.workers[0].poll() is None:
                own.workers[0].kill()
                own.workers[0].wait()
            if isinstance(event, MatchFailed):
                failed.append(event)

        with own.executor() as executor:
            summary = run_tournament(
                load_tournament(path), executor, deal_secret=SECRET, on_event=watch
            )
        assert own.workers[0].poll() is not None
        assert (summary.done, summary.failed) == (summary.total, 0), failed
        assert not [f for f in failed if f.final]
        results = path.parent / "t.results"
        assert _query(results, "SELECT COUNT(*) FROM matches WHERE status != 'done'") == [(0,)]
        fetches = [f.error for f in failed if "cannot fetch" in f.error]
        assert all("from the cluster: lost (its only copy" in e for e in fetches), fetches
        _sweep_as_the_next_referee()
    finally:
        own.stop()


def test_a_docker_tournament_without_a_docker_worker_is_refused_with_the_reason(
    tmp_path: Path, cluster: Cluster
) -> None:
    path = write_tournament(tmp_path / "t", bots=4, table_size=3, extra="", names=NAMES)
    path.write_text(path.read_text().replace('backend = "process"', 'backend = "docker"'))
    with (
        cluster.executor() as executor,
        pytest.raises(UsageError, match=r"no worker .* offers the 'docker' resource") as refused,
    ):
        run_tournament(load_tournament(path), executor)
    assert "--resources docker=1" in str(refused.value)
    assert not (path.parent / "t.results" / "logs").exists() or not list(
        (path.parent / "t.results" / "logs").iterdir()
    )


def test_a_changed_bot_is_sent_again_and_an_unchanged_one_is_not(
    tmp_path: Path, cluster: Cluster
) -> None:
    path = write_tournament(tmp_path / "t", bots=4, table_size=3, names=NAMES)
    with cluster.executor() as executor:
        run_tournament(load_tournament(path), executor)
        before = executor.fetches()
        changed = sorted((path.parent / "bots").glob("*.py"))[0]
        changed.write_text(changed.read_text() + "\n# version 2\n")
        run_tournament(load_tournament(path), executor, restart=True)
        after = executor.fetches()
    fetched_before = {name for found in before.values() for name in found}
    new = {
        name
        for address, found in after.items()
        for name, count in found.items()
        if count > before.get(address, {}).get(name, 0)
    }
    assert len(new) == 1, f"expected only the changed bot's bundle to travel again: {new}"
    assert new.isdisjoint(fetched_before)  # a new hash, never a bundle fetched before
    assert all(count == 1 for found in after.values() for count in found.values())


def test_a_worker_or_a_coordinator_with_a_certificate_of_another_ca_is_refused(
    tmp_path: Path, cluster: Cluster
) -> None:
    """Someone without a member's key starts a worker with a CA and certificate of their own
    (docs/cluster.md's commands, run again): the scheduler ends it at the handshake, so it is
    never handed a task, a bundle or a deal. A coordinator with those files is told so."""
    made = subprocess.run(
        ["sh", "-e"],
        input=readme_certificate_commands(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    stranger = ClusterTLS(tmp_path / "cluster-tls")
    log = tmp_path / "stranger.log"
    with log.open("wb") as out:
        worker = subprocess.run(
            [
                str(DASK),
                "worker",
                cluster.address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--name",
                "stranger",
                "--death-timeout",
                "2",
                "--local-directory",
                str(tmp_path / "stranger"),
                *stranger.flags,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=60,
        )
    assert worker.returncode != 0, log.read_text()
    with cluster.client() as client:
        names = {info["name"] for info in client.scheduler_info()["workers"].values()}
    assert names == {"w0", "w1"}
    assert cluster.scheduler is not None and cluster.scheduler.poll() is None
    scheduler_log = (cluster.folder / "scheduler.log").read_text()
    assert "TLS handshake failed" in scheduler_log
    with pytest.raises(UsageError, match="cannot reach the Dask scheduler at tls://") as refused:
        DaskExecutor(cluster.address, security=stranger.security).client()
    assert f"that the ca-file and cert of {stranger.file} are the cluster's" in str(refused.value)


def test_a_worker_running_another_referee_is_refused(
    tmp_path: Path, cluster_tls: ClusterTLS
) -> None:
    other = tmp_path / "other_referee.py"
    other.write_text("import referee\nreferee.__version__ = '0.0.0-another'\n")
    own = _cluster(tmp_path / "cluster", cluster_tls, 1, "--preload", str(other))
    try:
        path = write_tournament(tmp_path / "t", bots=4, table_size=3, names=NAMES)
        with (
            own.executor() as executor,
            pytest.raises(UsageError, match="workers run another referee") as refused,
        ):
            run_tournament(load_tournament(path), executor)
        assert "referee 0.0.0-another (here " in str(refused.value)
    finally:
        own.stop()


def _described() -> list[str]:
    """Each bot process left: its command line and the chain of its parents."""
    found = []
    for pid in sandbox_pids():
        chain: list[str] = []
        current = pid
        while current > 1 and len(chain) < 6:
            try:
                cmd = Path(f"/proc/{current}/cmdline").read_bytes().replace(b"\0", b" ")
                stat = Path(f"/proc/{current}/stat").read_text()
            except OSError:
                break
            state = stat.rsplit(")", 1)[1].split()[0]
            chain.append(f"{current}[{state}]:{cmd[:60].decode(errors='replace')}")
            current = int(stat.rsplit(")", 1)[1].split()[1])
        found.append(" <- ".join(chain))
    return found


def test_ctrl_c_leaves_no_bot_process_on_the_workers(tmp_path: Path, cluster: Cluster) -> None:
    path = write_tournament(tmp_path / "t", bots=5, table_size=3, deals=3, names=NAMES)
    for bot in (path.parent / "bots").glob("*.py"):
        write_bot(bot.parent, bot.stem, "first")
    runner = subprocess.Popen(
        [
            str(REFEREE),
            "tournament",
            "run",
            str(path),
            "--cluster",
            cluster.address,
            "--cluster-security",
            str(cluster.tls.file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    playing = threading.Event()

    def read() -> None:
        assert runner.stderr is not None
        for line in runner.stderr:
            lines.append(line)
            if "to play with" in line:
                playing.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert playing.wait(60), "".join(lines)
        _until(sandbox_pids, 30, "a bot to start on the cluster")  # a match is being played
        runner.send_signal(signal.SIGINT)
        runner.wait(timeout=90)
        reader.join(10)
        assert runner.returncode == 130, "".join(lines)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    deadline = time.monotonic() + 30
    while sandbox_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_pids() == [], f"bot processes outlived the stopped run: {_described()}"
    # The workers are fine and the run resumes where it stopped.
    with cluster.executor() as executor:
        summary = run_tournament(load_tournament(path), executor)
    assert (summary.done, summary.failed) == (summary.total, 0)


def test_the_command_line_starts_a_local_cluster_and_says_so(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "t", bots=4, table_size=3, names=NAMES)
    result = CliRunner().invoke(
        main, ["tournament", "run", str(path), "--executor", "dask", "--workers", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "starting a local Dask cluster of 2 workers on this machine" in result.output
    assert "on loopback with TLS certificates of its own" in result.output
    assert re.search(r"Dask scheduler tls://127\.0\.0\.1:\d+, dashboard off", result.output)
    assert "12/12 matches done" in result.output


def test_a_cluster_address_with_the_local_executor_or_nobody_there_is_one_line(
    tmp_path: Path,
) -> None:
    path = write_tournament(tmp_path / "t", bots=4, table_size=3, names=NAMES)
    both = CliRunner().invoke(
        main, ["tournament", "run", str(path), "--executor", "local", "--cluster", "tcp://x:1"]
    )
    assert both.exit_code == 2
    assert "--cluster names a Dask scheduler: it goes with --executor dask" in both.output
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(
        UsageError, match=rf"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:{port}"
    ):
        DaskExecutor(f"tcp://127.0.0.1:{port}", insecure=True, connect_timeout_s=2).client()


def test_a_worker_whose_docker_does_not_answer_is_named_and_gets_no_match(
    tmp_path: Path, cluster_tls: ClusterTLS
) -> None:
    """It offers the docker resource but its probe fails: named once, and with no other
    Docker worker the run is refused before any match (its tasks would only fail)."""
    cluster = Cluster(tmp_path / "cluster", cluster_tls)
    cluster.folder.mkdir()
    cluster.start()
    try:
        broken = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
        cluster.add_worker("w0", "--resources", "docker=1", env=broken)
        cluster.wait_for_workers(1)
        path = write_tournament(tmp_path / "t", bots=4, table_size=3, names=NAMES)
        path.write_text(path.read_text().replace('backend = "process"', 'backend = "docker"'))
        with (
            cluster.executor() as executor,
            pytest.raises(
                UsageError, match="no worker of the cluster can run the docker sandbox"
            ) as refused,
        ):
            run_tournament(load_tournament(path), executor)
        assert re.search(
            r"worker tls://127\.0\.0\.1:\d+ takes no docker matches", str(refused.value)
        )
    finally:
        cluster.stop()


def test_a_lost_scheduler_ends_the_run_in_one_line_and_a_new_run_resumes(
    tmp_path: Path, cluster_tls: ClusterTLS
) -> None:
    own = _cluster(tmp_path / "cluster", cluster_tls)
    path = write_tournament(tmp_path / "t", bots=5, table_size=3, deals=3, names=NAMES)
    stored = 0

    def watch(event: Event) -> None:
        nonlocal stored
        if isinstance(event, ResultStored):
            stored += 1
            if stored == 5 and own.scheduler is not None:
                own.scheduler.kill()

    try:
        with (
            own.executor() as executor,
            pytest.raises(InfrastructureError, match="lost the Dask scheduler at tls://") as lost,
        ):
            run_tournament(load_tournament(path), executor, on_event=watch)
        assert "run the same command again to resume" in str(lost.value)
    finally:
        own.stop()
    results = path.parent / "t.results"
    kept = _query(results, "SELECT COUNT(*) FROM matches WHERE status = 'done'")[0][0]
    assert kept >= 5
    summary = run_tournament(load_tournament(path), LocalExecutor(2))
    assert (summary.done, summary.failed) == (summary.total, 0)
    assert summary.played == summary.total - kept  # nothing stored was played again
