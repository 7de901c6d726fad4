"""``make bench``: every benchmark, figures printed side by side with their targets.

The machines are shared and noisy, so each figure that has a target is a ratio measured in
the same run (or a best-of-N), never a bare wall-clock threshold. Docker figures are skipped
with a note when no daemon answers.
"""

from __future__ import annotations

import sys


def main() -> int:
    from bench import (
        cluster_bench,
        collusion_bench,
        compare_bench,
        engine_bench,
        estimator_bench,
        league_bench,
        league_bound,
        match_bench,
        montecarlo_bench,
        near_twin_bench,
        parser_bench,
        publish_bench,
        ranking_bench,
        tournament_bench,
    )

    print("=" * 72)
    engine_bench.run()
    print("=" * 72)
    parser_bench.run()
    print("=" * 72)
    match_bench.run()
    print("=" * 72)
    try:
        from referee.sandbox.docker import docker_status
    except ImportError as exc:
        print(f"Docker benchmarks skipped: {exc}")
    else:
        ok, why = docker_status()
        if ok:
            from bench import docker_bench

            docker_bench.main([])
        else:
            print(f"Docker benchmarks skipped: {why}")
    print("=" * 72)
    tournament_bench.main()
    print("=" * 72)
    cluster_bench.run()
    print("=" * 72)
    publish_bench.run()
    print("=" * 72)
    ranking_bench.main([])
    print("=" * 72)
    # Estimators beside the published one, as ranking_bench's 4 seeds (docs/performance.md's: 16).
    estimator_bench.main(["--seeds", "4"])
    print("=" * 72)
    # Its defaults: 32 runs each way, 4,000 simulated runs (an hour on 2 quiet cores).
    compare_bench.main([])
    print("=" * 72)
    # Error rates at exactly D0 and D1 on near-twin pools of real deals (a few minutes).
    near_twin_bench.main([])
    print("=" * 72)
    collusion_bench.run()
    print("=" * 72)
    # 200 bots to 300 matches each, and the coordinator on 1,000 entrants; `python -m
    # bench.league_bench --bots 1000 --budget 800` is the full simulation.
    league_bench.run()
    print("=" * 72)
    # What any design could gain there: the oracle bound and designs on a calibrated
    # surrogate (needs numpy and scipy; skipped with a note without them).
    league_bound.main([])
    print("=" * 72)
    # A quick look (12 deals); `python -m bench.montecarlo_bench` plays the 400 matches
    # that measure the score target.
    montecarlo_bench.main(["--matches", "48"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
