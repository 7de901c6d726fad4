"""The compiled kits: build times (cold and cached) and the referee's cost per request.

``python -m bench.build_bench``:

1. each compiled kit's sample bot (``@c-lowest``, ``@cpp-lowest``, ``@rust-lowest``,
   ``@java-lowest``) built in each sandbox here, cold (an empty build cache) and again from
   the cache, by :class:`referee.sandbox.build.Builder`, the run's own builder;
2. the referee's own CPU per request (this process: the loop, the engine, the log) in one
   long match of four C++ samples beside one of four Python ``lowest`` samples, taking
   turns, in the process sandbox: the referee's cost should not depend on the bots'
   language;
3. the size of each of the referee's bot images.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from referee.match.runner import play_match
from referee.protocol.seats import seated
from referee.rules import RuleSet
from referee.sandbox import load_bot, make_staging_root, remove_staging_root, stage_files
from referee.sandbox.base import BotSpec
from referee.sandbox.build import Builder
from referee.specs import TimeControl

KITS = ("c", "cpp", "rust", "java")


def _sandboxes() -> list[str]:
    found = ["process"]
    try:
        from referee.sandbox.docker import docker_status
    except ImportError:
        return found
    ok, why = docker_status()
    if ok:
        found.append("docker")
    else:
        print(f"  (Docker skipped: {why})")
    return found


def build_times(sandboxes: list[str]) -> None:
    print("build of each kit's sample: cold (empty cache) and cached, seconds")
    for sandbox in sandboxes:
        for kit in KITS:
            spec = load_bot(f"@{kit}-lowest")
            with tempfile.TemporaryDirectory() as cache:
                builder = Builder(sandbox, cache_dir=Path(cache))
                start = time.perf_counter()
                builder.build(spec)
                cold = time.perf_counter() - start
                start = time.perf_counter()
                again = builder.build(spec)
                cached = time.perf_counter() - start
            assert again.cached
            print(f"  {sandbox:8} {kit:5} cold {cold:6.2f} s   cached {cached * 1000:7.1f} ms")


async def _match(bots: list[BotSpec], staging: Path, sandbox: str) -> tuple[float, int]:
    """The referee's CPU seconds of one long match of ``bots``, and its requests."""
    from referee.sandbox import get_sandbox

    backend = get_sandbox(sandbox)
    rules = RuleSet.preset("arschloch", target=150, max_rounds=150).resolve(len(bots))
    tc = TimeControl(move_ms=2000, bank_ms=10_000, hello_ms=20_000)
    log = staging / f"bench-{time.monotonic_ns()}.jsonl"
    try:
        async with seated(bots, sandbox=backend, time_control=tc) as table:
            cpu = time.process_time()
            result = await play_match(table, rules, 1, match_id="bench", log_path=log)
            cpu = time.process_time() - cpu
    finally:
        await backend.aclose()
    assert not any(s.forfeit for s in result.standings)
    lines = log.read_text().splitlines()
    requests = sum(1 for line in lines if '"type":"played"' in line or '"type":"passed"' in line)
    requests += sum(1 for line in lines if '"type":"leftover"' in line)
    requests += sum(1 for line in lines if '"type":"exchange"' in line) // 2
    return cpu, requests


def per_request(turns: int = 3) -> None:
    print("the referee's own CPU per request, 4 seats, process sandbox (median of turns)")
    staging = make_staging_root()
    try:
        built = Builder("process").build(load_bot("@cpp-lowest"))
        cpp = [stage_files(built.spec, built.files, staging) for _ in range(4)]
        python_spec = load_bot("@lowest")
        from referee.sandbox import stage_bot

        python = [stage_bot(python_spec, staging) for _ in range(4)]
        samples: dict[str, list[float]] = {"cpp-lowest": [], "lowest (Python)": []}
        for _ in range(turns):
            for name, bots in (("cpp-lowest", cpp), ("lowest (Python)", python)):
                cpu, requests = asyncio.run(_match(bots, staging, "process"))
                samples[name].append(cpu / max(requests, 1))
        medians = {name: statistics.median(values) for name, values in samples.items()}
        for name, value in medians.items():
            spread = ", ".join(f"{v * 1e6:.1f}" for v in samples[name])
            print(f"  {name:16} {value * 1e6:7.1f} µs per request  (turns: {spread})")
        ratio = medians["cpp-lowest"] / medians["lowest (Python)"]
        print(f"  C++ / Python      {ratio:7.2f}x")
    finally:
        remove_staging_root(staging)


def image_sizes() -> None:
    try:
        from referee.sandbox.daemon import connect
        from referee.sandbox.image import FAMILIES
    except ImportError:
        return
    print("the referee's bot images")
    client = connect()
    try:
        for kind in FAMILIES:
            try:
                size = client.images.get(kind.tag).attrs["Size"]
            except Exception as exc:
                print(f"  {kind.tag:40} missing ({type(exc).__name__})")
                continue
            print(f"  {kind.tag:40} {size / 1e6:7.0f} MB  ({', '.join(kind.languages)})")
    finally:
        client.close()


def run() -> None:
    sandboxes = _sandboxes()
    build_times(sandboxes)
    per_request()
    if "docker" in sandboxes:
        image_sizes()


if __name__ == "__main__":
    run()
    sys.exit(0)
