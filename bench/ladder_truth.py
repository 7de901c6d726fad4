"""The ground truth of the ranking benchmark: the ladder's true order, from one long run.

``python -m bench.ladder_truth [--format to-15] [--deals 60] [--workers 2]`` plays a
balanced duplicate round robin of the ladder (:mod:`bench.ladder`: every 4-bot table,
``deals`` deals each, every seat rotation; with a multiple of 6 deals every table is exactly
balanced) in one of its formats and writes ``bench/ladder_truth.json`` (``to-15``) or
``bench/ladder_truth_one_round.json``: each rung's mean normalised finishing score with its
bootstrap interval, the true order (by that mean), and how sure each adjacent pair of the order is.
The benchmark (:mod:`bench.ranking_bench`) measures every ranking against that order, so
the file is kept in the repository and this script is how it was made; it takes several
minutes, and is run again only when the ladder, the rules or the sample bot change.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.ladder import DEFAULT_FORMAT, FORMATS, LADDER, RULES, TABLE_SIZE, play_all
from referee.ranking.intervals import adjacent_confidences, deal_scores, score_intervals
from referee.ranking.ratings import make_environment, rate
from referee.tournament.scheduler import round_robin

TRUTHS = {
    "to-15": Path(__file__).with_name("ladder_truth.json"),
    "one-round": Path(__file__).with_name("ladder_truth_one_round.json"),
}
"""The truth file of each format of :data:`bench.ladder.FORMATS`."""
SEED = 1
SECRET = hashlib.sha256(b"arschloch-referee ladder truth").digest()


def load_truth(fmt: str = DEFAULT_FORMAT) -> dict[str, Any]:
    """The stored ground truth of format ``fmt`` (see the module docstring)."""
    return dict(json.loads(TRUTHS[fmt].read_text(encoding="utf-8")))


def measure(deals: int, workers: int, fmt: str = DEFAULT_FORMAT) -> dict[str, Any]:
    """Play the long round robin and summarise it as the truth file holds it."""
    names = sorted(LADDER)
    specs = round_robin(names, TABLE_SIZE, deals, SEED, SECRET)
    started = time.monotonic()

    def progress(done: int) -> None:
        if done % 1000 == 0 or done == len(specs):
            rate_now = done / (time.monotonic() - started)
            print(f"  {done}/{len(specs)} matches, {rate_now:.0f}/s", file=sys.stderr)

    matches = play_all(specs, LADDER, workers=workers, progress=progress, fmt=fmt)
    by_deal = deal_scores(matches)
    intervals = score_intervals(by_deal, level=0.95, resamples=2000)
    order = sorted(names, key=lambda n: -intervals[n].mean)
    adjacent = adjacent_confidences(order, by_deal, resamples=2000)
    trueskill_order = [r.name for r in rate(matches, names, env=make_environment())]
    neighbours = shared = 0
    for match in matches:
        places = sorted(seat.place for seat in match.seats)
        neighbours += len(places) - 1
        shared += sum(a == b for a, b in itertools.pairwise(places))
    return {
        "generated_by": f"python -m bench.ladder_truth --format {fmt} --deals {deals} "
        f"--workers {workers}",
        "rules": RULES,
        "format": fmt,
        "overrides": FORMATS[fmt],
        "table_size": TABLE_SIZE,
        "seed": SEED,
        "deals": deals,
        "matches": len(matches),
        "seconds": round(time.monotonic() - started),
        "rungs": [
            {
                "name": name,
                "rate": LADDER[name],
                "mean": round(intervals[name].mean, 5),
                "low": round(intervals[name].low, 5),
                "high": round(intervals[name].high, 5),
                "matches": intervals[name].matches,
            }
            for name in order
        ],
        "order": order,
        "adjacent": [
            {"upper": c.upper, "lower": c.lower, "confidence": c.confidence, "deals": c.deals}
            for c in adjacent
        ],
        "trueskill_order": trueskill_order,
        "shared_places": round(shared / neighbours, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=sorted(FORMATS), default=DEFAULT_FORMAT)
    parser.add_argument("--deals", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    truth = measure(args.deals, args.workers, args.format)
    path = TRUTHS[args.format]
    path.write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}: order {' > '.join(truth['order'])}")
    for pair in truth["adjacent"]:
        print(f"  {pair['upper']} over {pair['lower']}: {pair['confidence']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
