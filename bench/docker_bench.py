"""What the Docker sandbox costs: container start, a JSON round trip, kill + remove.

Run ``python -m bench.docker_bench`` (needs a Docker daemon and the bot image). Each
function prints its figures and returns them, so ``make bench`` can collect them.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
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


async def _round_trip_pipe(bot: BotSpec, count: int) -> list[float]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(bot.folder / "bot.py"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def write(data: bytes) -> None:
        stdin.write(data)
        await stdin.drain()

    try:
        assert await stdout.readline() == b"ready\n"
        return await _round_trips(write, stdout.readline, count)
    finally:
        stdin.close()
        await child.wait()


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
        pipe = asyncio.run(_round_trip_pipe(bot, count))
    ratio = statistics.median(docker) / statistics.median(pipe)
    print(f"round trip, docker attach     {_ms(docker)}")
    print(f"round trip, subprocess pipe   {_ms(pipe)}")
    print(f"attach / pipe                 {ratio:.2f}x")
    return {
        "round_trip_docker_ms": statistics.median(docker) * 1000,
        "round_trip_pipe_ms": statistics.median(pipe) * 1000,
        "round_trip_ratio": ratio,
    }


def main() -> dict[str, float]:
    print(f"Docker sandbox ({len(REQUEST)}-byte request lines)")
    figures = bench_start()
    figures.update(bench_round_trip())
    return figures


if __name__ == "__main__":
    main()
