"""The Dask executor beside the local one: one 200-match tournament, side by side.

Run ``python -m bench.cluster_bench`` (process sandbox and Dask distributed; nothing else).
A local Dask cluster of 2 single-threaded worker processes (started once, as an organiser's
cluster would be) and the local executor with 2 workers play the same tournament in turn,
``rounds`` times each, interleaved so that the machine's noise falls on both. Printed:

* matches per second of each, and the cluster over local (target: at least 0.8x);
* what travels per match: the task (a match spec and the bundles' names) and the result
  (the result, its log and the bots' stderr); and the bots' bundles, once per run;
* the coordinator's own time per stored result (taking it off the cluster, writing its log,
  committing it): how many workers one coordinator can feed, at the match length measured.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from bench import installed_bytecode, spawn_as_the_command
from bench.tournament_bench import _tournament
from referee.executors.cluster import DaskExecutor
from referee.executors.local import LocalExecutor
from referee.runs.tournament import run_tournament
from referee.tournament.file import load_tournament


def _timed(path: Path, executor: LocalExecutor | DaskExecutor) -> float:
    started = time.monotonic()
    summary = run_tournament(load_tournament(path), executor, restart=True)
    elapsed = time.monotonic() - started
    if summary.failed or summary.done != summary.total:
        raise RuntimeError(f"bench run incomplete: {summary}")
    return elapsed


def run(matches: int = 200, rounds: int = 3, workers: int = 2) -> dict[str, float]:
    """Both executors, ``rounds`` runs each, interleaved; the figures, printed."""
    print(installed_bytecode())
    local_s: list[float] = []
    cluster_s: list[float] = []
    with _tournament(deals=matches // 4) as path:
        started = time.monotonic()
        with DaskExecutor(None, workers=workers) as cluster:
            start_s = time.monotonic() - started
            for _ in range(rounds):
                local_s.append(_timed(path, LocalExecutor(workers)))
                before = cluster.stats.results
                cluster_s.append(_timed(path, cluster))
                assert cluster.stats.results - before == matches
            stats = cluster.stats
    local_rate = matches / statistics.median(local_s)
    cluster_rate = matches / statistics.median(cluster_s)
    results = stats.results
    per_result_ms = 1000 * stats.coordinator_seconds / results
    match_s = workers / cluster_rate  # a worker's time per match, as measured here
    figures = {
        "local_per_s": local_rate,
        "cluster_per_s": cluster_rate,
        "ratio": cluster_rate / local_rate,
        "cluster_start_s": start_s,
        "task_bytes": stats.task_bytes,
        "result_bytes": stats.result_bytes / results,
        "bundle_bytes_per_run": stats.bundle_bytes_scattered,
        "bundles_scattered": stats.bundles_scattered,
        "bundle_bytes_fetched": stats.bundle_bytes_fetched,
        "coordinator_ms_per_result": per_result_ms,
        "workers_fed": match_s / (per_result_ms / 1000),
    }
    print(
        f"cluster: {matches} matches x {rounds} runs each, {workers} workers, interleaved; "
        f"local cluster started once in {start_s:.1f} s"
    )
    print(
        f"cluster: local executor {local_rate:5.1f} matches/s (runs "
        f"{', '.join(f'{s:.1f}' for s in local_s)} s), Dask {cluster_rate:5.1f} matches/s "
        f"(runs {', '.join(f'{s:.1f}' for s in cluster_s)} s)"
    )
    print(f"cluster: Dask / local = {figures['ratio']:.2f}x (target >= 0.8x)")
    print(
        f"cluster: per match {figures['task_bytes']:.0f} bytes out (the task) and "
        f"{figures['result_bytes']:.0f} bytes back (log and stderr); bots: "
        f"{stats.bundles_scattered} bundles, {stats.bundle_bytes_scattered} bytes sent once "
        f"for all {rounds} runs, {stats.bundle_bytes_fetched} bytes fetched by workers in all"
    )
    print(
        f"cluster: the coordinator spends {per_result_ms:.2f} ms per stored result; with "
        f"matches of {match_s:.2f} s a worker (these instant bots), one coordinator feeds "
        f"about {figures['workers_fed']:.0f} workers"
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    run(rounds=int(args[0]) if args else 3)
    return 0


if __name__ == "__main__":
    spawn_as_the_command()
    sys.exit(main())
