"""What the Docker sandbox costs: container start, a JSON round trip, kill + remove.

Run ``python -m bench.docker_bench`` (needs a Docker daemon and the bot image). Each
function prints its figures and returns them, so ``make bench`` can collect them.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from referee.sandbox.base import BotSpec, Limits
from referee.sandbox.docker import DockerSandbox, connect

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


async def _round_trip_docker(bot: BotSpec, count: int) -> list[float]:
    sandbox = DockerSandbox(client=connect())
    try:
        process = await sandbox.start(bot, Limits())
        assert await process.stdout.readline() == b"ready\n"
        return await _round_trips(process.write, process.stdout.readline, count)
    finally:
        await sandbox.aclose()


async def _round_trip_process(bot: BotSpec, count: int) -> list[float]:
    """The same bot in the process backend (bubblewrap when installed)."""
    from referee.sandbox import ProcessSandbox, make_staging_root, remove_staging_root, stage_bot

    staging = make_staging_root()
    process = await ProcessSandbox().start(stage_bot(bot, staging), Limits())
    try:
        assert await process.stdout.readline() == b"ready\n"
        return await _round_trips(process.write, process.stdout.readline, count)
    finally:
        await process.cleanup()
        remove_staging_root(staging)


def bench_start(runs: int = 10) -> dict[str, float]:
    """Container create + start until the bot's first line, then kill + remove."""
    with tempfile.TemporaryDirectory() as folder:
        bot = _echo_bot(Path(folder))
        return _run(lambda: _start_and_remove(bot, runs))


def bench_round_trip(count: int = 2000) -> dict[str, float]:
    """One JSON request line and its echo: the attach socket vs a plain subprocess pipe."""
    with tempfile.TemporaryDirectory() as folder:
        bot = _echo_bot(Path(folder))
        docker = asyncio.run(_round_trip_docker(bot, count))
        pipe = asyncio.run(_round_trip_process(bot, count))
    ratio = statistics.median(docker) / statistics.median(pipe)
    print(f"round trip, docker attach     {_ms(docker)}")
    print(f"round trip, process backend   {_ms(pipe)}")
    print(f"attach / process              {ratio:.2f}x   (target ≤ 1.5x)")
    return {
        "round_trip_docker_ms": statistics.median(docker) * 1000,
        "round_trip_pipe_ms": statistics.median(pipe) * 1000,
        "round_trip_ratio": ratio,
    }


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


def main() -> dict[str, float]:
    print(f"Docker sandbox ({len(REQUEST)}-byte request lines)")
    figures = bench_start()
    figures.update(bench_round_trip())
    figures.update(bench_reuse())
    return figures


if __name__ == "__main__":
    main()
