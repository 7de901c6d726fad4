"""What the Docker sandbox costs: container start, a JSON round trip, kill + remove.

The round trip is measured every way a line can reach a container, beside the process
backend: the FIFOs the backend uses, the attach socket it used before (stdin and stdout both
through dockerd and containerd-shim), and ``docker exec`` streams (the same daemons).

Run ``python -m bench.docker_bench`` (needs a Docker daemon and the bot image). Each
function prints its figures and returns them, so ``make bench`` can collect them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bench import installed_bytecode, spawn_as_the_command
from referee.sandbox import ProcessSandbox, make_staging_root, remove_staging_root, stage_bot
from referee.sandbox.base import BotSpec, Limits
from referee.sandbox.docker import (
    DockerSandbox,
    _attach,
    _container_command,
    _open_attach,
    connect,
)
from referee.sandbox.stdout_fifo import StdoutFifo

ECHO_BOT = """\
import sys
print("ready", flush=True)
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
"""

REQUEST = (
    json.dumps(
        {"type": "act", "id": 1, "kind": "play", "hand": ["7C", "10H", "QD", "AS"] * 4}
    ).encode()
    + b"\n"
)


def _echo_bot(folder: Path) -> BotSpec:
    folder.chmod(0o755)
    (folder / "bot.py").write_text(ECHO_BOT)
    (folder / "bot.py").chmod(0o644)
    return BotSpec(
        name="bench-echo", folder=folder, command=("python3", "bot.py"), single_file="bot.py"
    )


def _us(seconds: list[float]) -> str:
    values = sorted(s * 1e6 for s in seconds)
    p90 = values[int(0.9 * (len(values) - 1))]
    return f"median {statistics.median(values):6.1f} µs   p90 {p90:6.1f} µs"


def _ms(seconds: list[float]) -> str:
    values = sorted(s * 1000 for s in seconds)
    p90 = values[int(0.9 * (len(values) - 1))]
    return f"median {statistics.median(values):7.2f} ms   p90 {p90:7.2f} ms   (n={len(values)})"


def _run(make: Callable[[], Coroutine[Any, Any, dict[str, float]]]) -> dict[str, float]:
    return asyncio.run(make())


async def _start_and_remove(bot: BotSpec, runs: int) -> dict[str, float]:
    sandbox = DockerSandbox(client=connect())
    to_line: list[float] = []
    to_gone: list[float] = []
    try:
        for _ in range(runs):
            started = time.perf_counter()
            process = await sandbox.start(bot, Limits())
            assert await process.stdout.readline() == b"ready\n"
            to_line.append(time.perf_counter() - started)
            started = time.perf_counter()
            await process.cleanup()
            to_gone.append(time.perf_counter() - started)
    finally:
        await sandbox.aclose()
    print(f"create+start to first line   {_ms(to_line)}")
    print(f"kill+remove                   {_ms(to_gone)}")
    return {
        "start_to_first_line_ms": statistics.median(to_line) * 1000,
        "kill_remove_ms": statistics.median(to_gone) * 1000,
    }


async def _round_trips(write: Any, readline: Any, count: int) -> list[float]:
    times: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        await write(REQUEST)
        assert await readline() == REQUEST
        times.append(time.perf_counter() - started)
    return times


class _Pipe:
    """One way of talking to the echo bot: ``write`` and ``readline``, and how to stop it."""

    def __init__(self, write: Any, readline: Any, stop: Callable[[], Coroutine[Any, Any, Any]]):
        self.write = write
        self.readline = readline
        self.stop = stop


async def _fifo_pipe(sandbox: DockerSandbox, bot: BotSpec) -> _Pipe:
    """The Docker backend as it is: stdin and stdout through FIFOs."""
    process = await sandbox.start(bot, Limits())
    assert await process.stdout.readline() == b"ready\n"
    return _Pipe(process.write, process.stdout.readline, process.cleanup)


def _own(raw: Any) -> socket.socket:
    """The SDK's hijacked HTTP socket as a non-blocking socket of our own."""
    inner = raw._sock
    sock = socket.socket(fileno=os.dup(inner.fileno()))
    raw.close()
    inner.close()
    sock.setblocking(False)
    return sock


async def _socket_pipe(container: Any, sock: socket.socket) -> _Pipe:
    """A multiplexed Docker stream (attach or exec) over the referee's frame demultiplexer."""
    attach = await _open_attach(sock)
    transport = attach._transport
    assert transport is not None

    async def write(data: bytes) -> None:
        transport.write(data)

    async def stop() -> None:
        attach.abort()
        await asyncio.to_thread(container.remove, force=True)

    assert await attach.stdout.readline() == b"ready\n"
    return _Pipe(write, attach.stdout.readline, stop)


async def _attach_pipe(sandbox: DockerSandbox, bot: BotSpec) -> _Pipe:
    """Stdin and stdout over the container's attach socket (the backend until this one):
    the same container, every hardening flag, without the FIFOs."""
    client = await sandbox._ready_client(sandbox.image)
    fifo = StdoutFifo.create(anyone=True, stdio=True)
    options = sandbox._create_options(bot, Limits(), sandbox.image, fifo)
    fifo.close()
    options.update(command=_container_command(bot), stdin_open=True, mounts=options["mounts"][:1])
    container = await asyncio.to_thread(client.containers.create, **options)

    def attach() -> socket.socket:
        return _own(container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1}))

    sock = await asyncio.to_thread(attach)
    await asyncio.to_thread(container.start)
    return await _socket_pipe(container, sock)


async def _exec_pipe(sandbox: DockerSandbox, bot: BotSpec) -> _Pipe:
    """The bot started by ``docker exec`` in a hardened container that only sleeps, its
    stdin and stdout over the exec stream."""
    client = await sandbox._ready_client(sandbox.image)
    fifo = StdoutFifo.create(anyone=True, stdio=True)
    options = sandbox._create_options(bot, Limits(), sandbox.image, fifo)
    fifo.close()
    options.update(command=["sleep", "infinity"], mounts=options["mounts"][:1])
    container = await asyncio.to_thread(client.containers.create, **options)
    await asyncio.to_thread(container.start)

    def exec_stream() -> socket.socket:
        exec_id = client.api.exec_create(
            container.id,
            _container_command(bot),
            stdin=True,
            user="65534:65534",
            workdir="/bot",
            environment=options["environment"],
        )["Id"]
        return _own(client.api.exec_start(exec_id, socket=True))

    return await _socket_pipe(container, await asyncio.to_thread(exec_stream))


async def _process_pipe(bot: BotSpec, staging: Path) -> _Pipe:
    """The same bot in the process backend (bubblewrap when installed)."""
    process = await ProcessSandbox().start(stage_bot(bot, staging), Limits())
    assert await process.stdout.readline() == b"ready\n"
    return _Pipe(process.write, process.stdout.readline, process.cleanup)


async def _round_trip_options(bot: BotSpec, rounds: int, count: int) -> dict[str, list[float]]:
    """Every way at once, taking turns ``rounds`` times, ``count`` round trips a turn."""
    sandbox = DockerSandbox(client=connect())
    staging = make_staging_root()
    pipes: dict[str, _Pipe] = {}
    try:
        pipes["process backend"] = await _process_pipe(bot, staging)
        pipes["docker, FIFOs"] = await _fifo_pipe(sandbox, bot)
        pipes["docker, attach"] = await _attach_pipe(sandbox, bot)
        pipes["docker, exec"] = await _exec_pipe(sandbox, bot)
        times: dict[str, list[float]] = {name: [] for name in pipes}
        for _ in range(rounds):
            for name, pipe in pipes.items():
                times[name] += await _round_trips(pipe.write, pipe.readline, count)
        return times
    finally:
        for pipe in pipes.values():
            await pipe.stop()
        await sandbox.aclose()
        remove_staging_root(staging)


def bench_start(runs: int = 10) -> dict[str, float]:
    """Container create + start until the bot's first line, then kill + remove."""
    with tempfile.TemporaryDirectory() as folder:
        bot = _echo_bot(Path(folder))
        return _run(lambda: _start_and_remove(bot, runs))


def bench_round_trip(rounds: int = 8, count: int = 250) -> dict[str, float]:
    """One JSON request line and its echo, every way a line can reach a container, beside
    the process backend: all started at once, taking turns so that each sees the same load."""
    with tempfile.TemporaryDirectory() as folder:
        bot = _echo_bot(Path(folder))
        times = asyncio.run(_round_trip_options(bot, rounds, count))
    floor = statistics.median(times["process backend"])
    figures: dict[str, float] = {}
    print(f"round trips, {rounds} turns of {count} each, every way in turn:")
    for name, seconds in times.items():
        ratio = statistics.median(seconds) / floor
        print(f"  {name:18} {_us(seconds)}   {ratio:5.2f}x the process backend")
        figures[f"round_trip_{name.split()[-1].lower()}_us"] = statistics.median(seconds) * 1e6
        figures[f"round_trip_{name.split()[-1].lower()}_ratio"] = ratio
    print("  (the backend uses the FIFOs; target <= 1.5x)")
    figures["round_trip_ratio"] = figures["round_trip_fifos_ratio"]
    return figures


def bench_reuse(matches: int = 20) -> dict[str, float]:
    """A sequence of short matches of 4 instant bots: containers reused vs one per match."""
    from referee.match.runner import play_match
    from referee.protocol.seats import SessionPool, seated
    from referee.rules import RuleSet
    from referee.sandbox import load_bot, make_staging_root, remove_staging_root, stage_bot
    from referee.specs import TimeControl

    polite = Path(__file__).resolve().parent.parent / "tests" / "bots" / "polite.py"
    staging = make_staging_root()
    bots = [stage_bot(load_bot(polite), staging) for _ in range(4)]
    rules = RuleSet.preset("arschloch", target=3).resolve(4)
    tc = TimeControl(move_ms=2000, bank_ms=10_000, hello_ms=30_000)

    async def pooled() -> float:
        sandbox = DockerSandbox(client=connect())
        pool = SessionPool(sandbox, Limits(), tc)
        start = time.perf_counter()
        for i in range(matches):
            async with seated(bots, pool=pool, deal_key=f"deal-{i}") as table:
                await play_match(table, rules, i, match_id=f"reuse-{i}")
        await pool.aclose()
        elapsed = time.perf_counter() - start
        await sandbox.aclose()
        return elapsed

    async def fresh() -> float:
        sandbox = DockerSandbox(client=connect())
        start = time.perf_counter()
        for i in range(matches):
            async with seated(bots, sandbox=sandbox, time_control=tc) as table:
                await play_match(table, rules, i, match_id=f"fresh-{i}")
        elapsed = time.perf_counter() - start
        await sandbox.aclose()
        return elapsed

    try:
        with_reuse = asyncio.run(pooled())
        without = asyncio.run(fresh())
    finally:
        remove_staging_root(staging)
    print(f"{matches} matches, containers reused  {with_reuse:7.2f} s")
    print(f"{matches} matches, fresh containers   {without:7.2f} s")
    print(f"reuse speed-up                {without / with_reuse:.1f}x   (target ≥ 3x)")
    return {"reuse_s": with_reuse, "fresh_s": without, "reuse_speedup": without / with_reuse}


def bench_warm(
    deals: int = 4, sandbox_name: str = "docker", think_ms: float = 0.0
) -> dict[str, float]:
    """From "match scheduled" to its first request, with and without warm starts.

    One worker's matches as a tournament with ``duplicate = "rotations"`` deals them: the
    4 seat rotations of each deal in turn, so that every other match needs 4 fresh
    processes (no process plays two rotations of a deal; the pool keeps a table's worth
    idle). The warm pool is told each time which match comes next and starts those bots
    while the current one plays; the plain pool starts them when the match comes. The two
    take turns, a deal each, so that both see the same load.
    """
    from bench.tournament_bench import THINKER
    from referee.match.runner import play_match
    from referee.protocol.seats import SessionPool, seated
    from referee.rules import RuleSet
    from referee.sandbox import get_sandbox, load_bot
    from referee.specs import TimeControl

    staging = make_staging_root()
    source = staging / "thinker.py"
    source.write_text(THINKER.format(think_s=think_ms / 1000))
    bots = [stage_bot(load_bot(source), staging) for _ in range(4)]
    rules = RuleSet.preset("arschloch").resolve(4)
    tc = TimeControl(move_ms=2000, bank_ms=10_000, hello_ms=30_000)
    schedule = [
        (tuple(bots[(r + i) % 4] for i in range(4)), f"deal-{d}")
        for d in range(deals)
        for r in range(4)
    ]

    played: list[float] = []

    async def one_deal(pool: SessionPool, deal: int, warm: bool, waits: list[float]) -> None:
        for n in range(4 * deal, 4 * deal + 4):
            table_bots, deal_key = schedule[n]
            scheduled = time.perf_counter()
            async with seated(table_bots, pool=pool, deal_key=deal_key) as table:
                waits.append(time.perf_counter() - scheduled)
                if warm and n + 1 < len(schedule):
                    pool.warm(*schedule[n + 1])
                result = await play_match(table, rules, n, match_id=f"warm-{n}")
                played.append(result.duration_s)

    async def both() -> tuple[list[float], list[float], int, int]:
        sandbox = get_sandbox(sandbox_name)
        cold = SessionPool(sandbox, Limits(), tc, max_idle_total=4)
        warm = SessionPool(sandbox, Limits(), tc, max_idle_total=4)
        cold_waits: list[float] = []
        warm_waits: list[float] = []
        try:
            for deal in range(deals):
                await one_deal(cold, deal, False, cold_waits)
                await one_deal(warm, deal, True, warm_waits)
        finally:
            await cold.aclose()
            await warm.aclose()
            await sandbox.aclose()
        return cold_waits, warm_waits, cold.started, warm.warmed

    try:
        cold, warm, started, warmed = asyncio.run(both())
    finally:
        remove_staging_root(staging)
    print(
        f"match scheduled -> first request, {sandbox_name}, bots answering after "
        f"{think_ms:g} ms, matches of {statistics.median(played):.2f} s (median), "
        f"{len(cold)} each way (rotations of {deals} deals; {started} starts, {warmed} of "
        "them ahead when warm):"
    )
    print(f"  without warm starts  {_ms(cold)}   total {sum(cold):6.2f} s")
    print(f"  with warm starts     {_ms(warm)}   total {sum(warm):6.2f} s")
    key = f"{sandbox_name}_think_{think_ms:g}ms"
    return {
        f"{key}_scheduled_to_request_cold_ms": statistics.median(cold) * 1000,
        f"{key}_scheduled_to_request_warm_ms": statistics.median(warm) * 1000,
        f"{key}_scheduled_to_request_cold_total_s": sum(cold),
        f"{key}_scheduled_to_request_warm_total_s": sum(warm),
    }


HELLO = (
    json.dumps(
        {
            "type": "hello",
            "id": 1,
            "protocol": "1.2",
            "seat": 0,
            "name": "bench",
            "time": {"move_ms": 1000, "bank_ms": 10000},
        }
    ).encode()
    + b"\n"
)
BYE = json.dumps({"type": "bye"}).encode() + b"\n"


def _cpu_of(pid: int) -> float:
    """CPU seconds of process ``pid`` and of the children it reaped (0 when gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _pids_running(match: Callable[[str], bool]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if match(command):
                found.append(int(entry.name))
    return found


def _is_shim_of(container_id: str, command: str) -> bool:
    return "containerd-shim" in command and container_id in command


def _daemons_cpu(daemons: list[int]) -> float:
    return sum(_cpu_of(pid) for pid in daemons)


def _container_cpu(pid: int) -> float | None:
    """CPU seconds used in the cgroup of the container whose init is ``pid``."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            usage = Path("/sys/fs/cgroup/cpuacct") / group.lstrip("/") / "cpuacct.usage"
            with contextlib.suppress(OSError, ValueError):
                return int(usage.read_text()) / 1e9
        if controllers == "":
            stat = Path("/sys/fs/cgroup") / group.lstrip("/") / "cpu.stat"
            with contextlib.suppress(OSError, ValueError, StopIteration):
                text = stat.read_text().splitlines()
                return int(next(x for x in text if x.startswith("usage_usec")).split()[1]) / 1e6
    return None


async def _docker_lifecycle(bot: BotSpec, runs: int) -> dict[str, list[float]]:
    """One container of ``bot`` ``runs`` times, as the backend makes it, each phase timed."""
    sandbox = DockerSandbox(client=connect())
    client = await sandbox._ready_client(sandbox.image)
    daemons = _pids_running(lambda c: c.split(" ")[0].endswith(("dockerd", "containerd")))
    phases: dict[str, list[float]] = {}

    def note(name: str, value: float) -> None:
        phases.setdefault(name, []).append(value)

    try:
        for _ in range(runs):
            own, daemon = time.process_time(), _daemons_cpu(daemons)
            started = time.perf_counter()
            fifo = StdoutFifo.create(anyone=True, stdio=True)
            options = sandbox._create_options(bot, Limits(), sandbox.image, fifo)
            container = await asyncio.to_thread(client.containers.create, **options)
            created = time.perf_counter()
            note("create (dockerd)", created - started)
            attach = await _open_attach(await asyncio.to_thread(_attach, container))
            stdout = await fifo.open_reader(2**16)
            await fifo.open_reader(2**16, "stderr")
            await asyncio.to_thread(container.start)
            running = time.perf_counter()
            note("start (containerd, shim, runc)", running - created)
            writer = await fifo.open_writer(attach.ended)
            assert writer is not None
            await writer.send(HELLO)
            assert b'"ready"' in await stdout.readline()
            ready = time.perf_counter()
            note("hello -> ready (docker-init, sh, the bot's start)", ready - running)
            note("= start to ready", ready - started)
            container.reload()
            pid = container.attrs["State"]["Pid"]
            shim = _pids_running(functools.partial(_is_shim_of, container.id))
            note("cpu: dockerd + containerd, to ready", _daemons_cpu(daemons) - daemon)
            note("cpu: shim + runc, to ready", sum(_cpu_of(p) for p in shim))
            note("cpu: in the container, to ready", _container_cpu(pid) or 0.0)
            note("cpu: the referee, to ready", time.process_time() - own)
            own, daemon = time.process_time(), _daemons_cpu(daemons)
            stopping = time.perf_counter()
            await writer.send(BYE)
            writer.close()
            await attach.ended.wait()
            ended = time.perf_counter()
            note("bye -> exit (the end of its attach stream)", ended - stopping)
            attach.abort()
            fifo.close()
            await asyncio.to_thread(container.remove)
            note("remove", time.perf_counter() - ended)
            note("= bye to removed", time.perf_counter() - stopping)
            note("cpu: dockerd + containerd, bye to removed", _daemons_cpu(daemons) - daemon)
            note("cpu: the referee, bye to removed", time.process_time() - own)
    finally:
        await sandbox.aclose()
    return phases


async def _process_lifecycle(bot: BotSpec, runs: int) -> dict[str, list[float]]:
    sandbox = ProcessSandbox()
    await sandbox.prepare()
    phases: dict[str, list[float]] = {}
    try:
        for _ in range(runs):
            started = time.perf_counter()
            process = await sandbox.start(bot, Limits())
            await process.write(HELLO)
            assert b'"ready"' in await process.stdout.readline()
            stopping = time.perf_counter()
            phases.setdefault("= start to ready", []).append(stopping - started)
            await process.write(BYE)
            await process.close_stdin()
            await process.wait(5)
            await process.cleanup()
            phases.setdefault("= bye to removed", []).append(time.perf_counter() - stopping)
    finally:
        await sandbox.aclose()
    return phases


def bench_lifecycle(runs: int = 10) -> dict[str, float]:
    """Where a container's time goes, phase by phase, and whose CPU it is (the daemons',
    the shim's and runc's, the container's own, the referee's), for the ``heuristic``
    sample bot, one container at a time as bot check's steps need them; beside the process
    sandbox's start and stop of the same bot. The daemons' CPU includes any other client's
    work meanwhile (a shared daemon)."""
    from referee.resources import sample_bot
    from referee.sandbox import load_bot

    staging = make_staging_root()
    try:
        bot = stage_bot(load_bot(sample_bot("heuristic")), staging)
        docker = asyncio.run(_docker_lifecycle(bot, runs))
        process = asyncio.run(_process_lifecycle(bot, runs))
    finally:
        remove_staging_root(staging)
    load = os.getloadavg()[0]
    print(f"one bot's container, phase by phase ({runs} runs, medians; load {load:.1f}):")
    figures: dict[str, float] = {}
    for name, seconds in docker.items():
        print(f"  {name:52} {statistics.median(seconds) * 1000:6.0f} ms")
        figures[f"lifecycle_{name}_ms"] = statistics.median(seconds) * 1000
    cpu = sum(statistics.median(v) for k, v in docker.items() if k.startswith("cpu:"))
    print(f"  {'= CPU of one container, start to removed':52} {cpu * 1000:6.0f} ms")
    for name, seconds in process.items():
        print(f"  process sandbox {name:36} {statistics.median(seconds) * 1000:6.0f} ms")
        figures[f"lifecycle_process_{name}_ms"] = statistics.median(seconds) * 1000
    figures["lifecycle_cpu_ms"] = cpu * 1000
    return figures


def _timed_check(sandbox: str, source: Path | None) -> float:
    """Seconds for ``referee bot check @heuristic --sandbox SANDBOX`` as a user runs it (a
    fresh Python, the check's output discarded); ``source``: a referee checkout run instead
    of the installed one."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "referee", "bot", "check", "@heuristic", "--sandbox", sandbox]
    # Run from the checkout: `python -m` puts the working folder first on the path, ahead of
    # PYTHONPATH, so run from this repository it would find this referee, not the other.
    cwd = source if source is not None else None
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return elapsed


def bench_check_times(pairs: int = 5, before: Path | None = None) -> dict[str, list[float]]:
    """``referee bot check @heuristic`` in Docker beside the process sandbox, ``pairs``
    times, taking turns (each pair in the other order than the one before) so that both
    see the same load; with ``before``, a referee checkout (the code before a change) takes
    its turns in the same pairs. Prints each pair with the load; returns the seconds of
    every run, by variant (``docker``, ``process``, ``before, docker``, ...)."""
    variants: dict[str, tuple[str, Path | None]] = {}
    if before is not None:
        variants["before, docker"] = ("docker", before)
        variants["before, process"] = ("process", before)
    variants["docker"] = ("docker", None)
    variants["process"] = ("process", None)
    times: dict[str, list[float]] = {name: [] for name in variants}
    print(f"bot check @heuristic, {pairs} turns, Docker beside the process sandbox:")
    for turn in range(pairs):
        load = os.getloadavg()
        order = list(variants) if turn % 2 == 0 else list(reversed(variants))
        for name in order:
            times[name].append(_timed_check(*variants[name]))
        each = "  ".join(f"{name} {times[name][-1]:5.2f} s" for name in variants)
        print(f"  turn {turn + 1}  load {load[0]:4.1f} {load[1]:4.1f} {load[2]:4.1f}   {each}")
    return times


def bench_check(pairs: int = 5, before: Path | None = None) -> dict[str, float]:
    """:func:`bench_check_times`, then min / median / max of each variant and the ratio
    Docker / process (median of the pairs' ratios, their range, the ratio of the medians
    and each pair's; ``bench/check_bench.py`` runs only this)."""
    times = bench_check_times(pairs, before)
    figures: dict[str, float] = {}
    for name, seconds in times.items():
        print(
            f"  {name:16} min {min(seconds):5.2f} s   median {statistics.median(seconds):5.2f} s"
            f"   max {max(seconds):5.2f} s"
        )
        figures[f"check_{name.replace(', ', '_')}_s"] = statistics.median(seconds)
    for prefix in ["before, ", ""] if before is not None else [""]:
        docker, process = times[f"{prefix}docker"], times[f"{prefix}process"]
        ratios = [d / p for d, p in zip(docker, process, strict=True)]
        of_medians = statistics.median(docker) / statistics.median(process)
        print(
            f"  {prefix + 'docker / process':24} {statistics.median(ratios):4.2f}x (pairs "
            f"{min(ratios):4.2f}x to {max(ratios):4.2f}x; ratio of the medians "
            f"{of_medians:4.2f}x; target <= 1.5x)"
        )
        print(f"  {prefix + 'pairs':24} {' '.join(f'{r:4.2f}x' for r in ratios)}")
        figures[f"check_{prefix.replace(', ', '_')}ratio"] = statistics.median(ratios)
    print(f"  load at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return figures


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(prog="python -m bench.docker_bench", description=__doc__)
    parser.add_argument(
        "--check-only", action="store_true", help="only bot check, Docker beside process"
    )
    parser.add_argument("--pairs", type=int, default=5, help="bot check's turns (default 5)")
    parser.add_argument(
        "--before",
        type=Path,
        help="a referee checkout (e.g. `git archive main | tar -x -C DIR`) whose bot check "
        "takes its turns in the same pairs",
    )
    args = parser.parse_args(argv)
    print(installed_bytecode())
    if args.check_only:
        figures = bench_lifecycle()
        figures.update(bench_check(args.pairs, args.before))
        return figures
    print(f"Docker sandbox ({len(REQUEST)}-byte request lines)")
    figures = bench_start()
    figures.update(bench_round_trip())
    figures.update(bench_reuse())
    figures.update(bench_warm())
    figures.update(bench_warm(think_ms=5))
    figures.update(bench_lifecycle())
    figures.update(bench_check(args.pairs, args.before))
    return figures


if __name__ == "__main__":
    spawn_as_the_command()
    main()
