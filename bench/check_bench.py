"""``referee bot check @heuristic`` in Docker beside the process sandbox (issue 35).

Each turn runs the command once in each sandbox as a user runs it (a fresh Python, the
output discarded), the order alternating from turn to turn so that both see the same load;
with ``--before DIR`` a referee checkout (the code before a change, e.g. ``git archive
a2c2e56 | tar -x -C DIR``) takes its turns in the same pairs. Printed: every turn, the
median of each, the ratio of the medians and every pair's ratio, against the target of
1.5x. Needs a Docker daemon and the bot image.

Run ``python -m bench.check_bench [--pairs 5] [--before DIR]``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench import installed_bytecode, spawn_as_the_command

TARGET = 1.5


def ratios(docker: list[float], process: list[float]) -> tuple[float, list[float]]:
    """The ratio of the medians, and each pair's ratio (Docker / process), in turn order."""
    pairs = [d / p for d, p in zip(docker, process, strict=True)]
    return statistics.median(docker) / statistics.median(process), pairs


def run(pairs: int = 5, before: Path | None = None) -> dict[str, float]:
    """Time the check ``pairs`` turns each way (see the module docstring); the figures."""
    from bench.docker_bench import bench_check_times

    times = bench_check_times(pairs, before)
    figures: dict[str, float] = {}
    for prefix in ["before, ", ""] if before is not None else [""]:
        docker, process = times[f"{prefix}docker"], times[f"{prefix}process"]
        of_medians, each = ratios(docker, process)
        label = prefix or "now, "
        print(
            f"  {label}median docker {statistics.median(docker):5.2f} s, process "
            f"{statistics.median(process):5.2f} s: ratio of medians {of_medians:4.2f}x "
            f"(target <= {TARGET}x)"
        )
        print(f"  {label}pairs: {' '.join(f'{r:4.2f}x' for r in each)}")
        key = prefix.replace(", ", "_")
        figures[f"check_{key}ratio_of_medians"] = of_medians
    return figures


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(prog="python -m bench.check_bench", description=__doc__)
    parser.add_argument("--pairs", type=int, default=5, help="turns each way (default 5)")
    parser.add_argument("--before", type=Path, help="a referee checkout taking turns too")
    args = parser.parse_args(argv)
    print(installed_bytecode())
    return run(args.pairs, args.before)


if __name__ == "__main__":
    spawn_as_the_command()
    main()
