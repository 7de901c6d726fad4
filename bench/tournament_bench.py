"""What a tournament run costs: throughput by worker count, coordinator footprint, fairness.

Run ``python -m bench.tournament_bench`` (process sandbox, nothing else needed). Each
function prints its figures and returns them, so ``make bench`` can collect them:

* :func:`throughput` — a 200-match tournament of 4 instant bots with 1 and 2 workers, in
  turn: matches per second and the ratio (target: 2 workers >= 1.7x one worker on 2 cores),
  and the time to the first finished match.
* :func:`footprint` — the coordinator's RSS and open file descriptors before and after a
  run (no growth beyond a few MB, no descriptor leak).
* :func:`fairness` — bots that think for half of ``move_ms`` before every answer, with more
  workers than cores: how many requests, how many timeouts (target: none).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import installed_bytecode, spawn_as_the_command
from referee.executors.base import MatchFinished
from referee.executors.local import LocalExecutor
from referee.runs.tournament import run_tournament
from referee.tournament.file import load_tournament

REPO = Path(__file__).resolve().parents[1]
POLITE = REPO / "tests" / "bots" / "polite.py"

THINKER = """\
import json, sys, time

THINK_S = {think_s!r}

for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        reply = {{"type": "ready", "name": "thinker"}}
    elif msg.get("type") == "act":
        time.sleep(THINK_S)
        hand = msg.get("hand") or []
        if msg["kind"] == "give":
            reply = {{"cards": hand[: msg["count"]]}}
        elif msg["kind"] == "leftover":
            reply = {{"take": msg["offer"][0], "discard": hand[0]}}
        else:
            reply = {{"cards": (msg.get("legal") or [[]])[0]}}
    elif msg.get("type") == "bye":
        break
    else:
        continue
    reply["id"] = msg["id"]
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


@contextmanager
def _tournament(
    *, deals: int, bot_source: str | None = None, move_ms: int = 1000, bank_ms: int = 5000
) -> Iterator[Path]:
    """A temporary tournament of 4 bots at one table of 4 (``deals`` x 4 matches)."""
    folder = Path(tempfile.mkdtemp(prefix="referee-bench-"))
    try:
        entries = []
        for name in ("north", "east", "south", "west"):
            bot = folder / f"{name}.py"
            if bot_source is None:
                shutil.copy(POLITE, bot)
            else:
                bot.write_text(bot_source)
            entries.append(f'[[bots]]\npath = "{bot.name}"\n')
        path = folder / "bench.toml"
        path.write_text(
            'name = "bench"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 4\n'
            f"deals = {deals}\nseed = 1\n[time]\nmove_ms = {move_ms}\nbank_ms = {bank_ms}\n"
            'hello_ms = 10000\n[sandbox]\nbackend = "process"\n\n' + "\n".join(entries)
        )
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(path: Path, workers: int) -> float:
    """Play the whole tournament from scratch; returns the seconds it took."""
    return _run_timed(path, workers)[0]


def _run_timed(path: Path, workers: int) -> tuple[float, float]:
    """Play the whole tournament from scratch: the seconds it took, and the seconds to its
    first finished match (what an organiser waits before the first result)."""
    first: list[float] = []

    def on_event(event: object) -> None:
        if isinstance(event, MatchFinished) and not first:
            first.append(time.monotonic() - started)

    started = time.monotonic()
    executor = LocalExecutor(workers)
    summary = run_tournament(load_tournament(path), executor, restart=True, on_event=on_event)
    elapsed = time.monotonic() - started
    if summary.failed or summary.done != summary.total:
        raise RuntimeError(f"bench run incomplete: {summary}")
    return elapsed, first[0]


def throughput(matches: int = 200, rounds: int = 3) -> dict[str, float]:
    """Matches per second with 1 and 2 workers (``rounds`` runs each, taking turns; the
    median), their ratio, and the time to the first finished match."""
    print(installed_bytecode())
    figures: dict[str, float] = {}
    runs: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
    with _tournament(deals=matches // 4) as path:
        for _ in range(rounds):
            for workers in (1, 2):
                before = os.times()
                elapsed, first = _run_timed(path, workers)
                after = os.times()
                # Workers, bots and their sandboxes are reaped children: their CPU time adds
                # up here once the pool has shut down.
                cpu = sum(
                    getattr(after, f) - getattr(before, f)
                    for f in ("user", "system", "children_user", "children_system")
                )
                runs[workers].append((elapsed, first, cpu))
    for workers, seen in runs.items():
        elapsed = statistics.median(e for e, _, _ in seen)
        first = statistics.median(f for _, f, _ in seen)
        busy = statistics.median(c / e for e, _, c in seen)
        figures[f"workers_{workers}_per_s"] = matches / elapsed
        figures[f"workers_{workers}_first_match_s"] = first
        print(
            f"throughput: {matches} matches, {workers} worker(s): {elapsed:6.1f} s, "
            f"{matches / elapsed:5.2f} matches/s, first match finished after {first:4.2f} s, "
            f"{busy:4.2f} cores busy (median of {rounds}: "
            + ", ".join(f"{e:.1f}" for e, _, _ in seen)
            + " s)"
        )
    figures["ratio"] = figures["workers_2_per_s"] / figures["workers_1_per_s"]
    pairs = sorted(one[0] / two[0] for one, two in zip(runs[1], runs[2], strict=True))
    print(
        f"throughput: 2 workers / 1 worker = {figures['ratio']:.2f}x (target >= 1.7x); "
        f"pair by pair {', '.join(f'{r:.2f}x' for r in pairs)}"
    )
    # A run pays a fixed start (worker interpreters, staging, bwrap probe, first bots):
    # the marginal rate, from a run four times longer, shows how the pool itself scales.
    marginal: dict[int, float] = {}
    with _tournament(deals=matches) as path:
        for workers in (1, 2):
            long_run = _run(path, workers)
            short_run = matches / figures[f"workers_{workers}_per_s"]
            marginal[workers] = (3 * matches) / (long_run - short_run)
            print(
                f"throughput: {4 * matches} matches, {workers} worker(s): {long_run:6.1f} s; "
                f"marginal {marginal[workers]:5.1f} matches/s"
            )
    figures["marginal_ratio"] = marginal[2] / marginal[1]
    print(f"throughput: marginal rate, 2 workers / 1 worker = {figures['marginal_ratio']:.2f}x")
    cold = {w: matches / figures[f"workers_{w}_per_s"] for w in (1, 2)}
    figures["ratio_started_before"] = _started_before(matches, rounds, cold)
    return figures


def _started_before(matches: int, rounds: int, cold: dict[int, float]) -> float:
    """The same runs with each pool's workers started (and their bots greeted, by a run
    before) outside the clock: the ratio without the fixed start, which bounds what any
    change other than a shorter start can reach; ``cold`` is each worker count's median
    run with the start (seconds), to print how much longer those take."""
    runs: dict[int, list[float]] = {1: [], 2: []}
    with _tournament(deals=matches // 4) as path:
        for _ in range(rounds):
            for workers in (1, 2):
                with LocalExecutor(workers) as executor:
                    run_tournament(load_tournament(path), executor, restart=True)
                    started = time.monotonic()
                    summary = run_tournament(load_tournament(path), executor, restart=True)
                    runs[workers].append(time.monotonic() - started)
                if summary.failed or summary.done != summary.total:
                    raise RuntimeError(f"bench run incomplete: {summary}")
    one, two = statistics.median(runs[1]), statistics.median(runs[2])
    pairs = sorted(a / b for a, b in zip(runs[1], runs[2], strict=True))
    print(
        f"throughput: workers started before the clock: 1 worker {matches / one:5.1f} "
        f"matches/s, 2 workers {matches / two:5.1f}: {one / two:.2f}x (pairs "
        + ", ".join(f"{r:.2f}x" for r in pairs)
        + f"); the runs that start their workers take {cold[1] - one:.2f} s longer with 1 worker,"
        f" {cold[2] - two:.2f} s with 2"
    )
    return one / two


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def footprint(runs: int = 3, matches: int = 100) -> dict[str, int]:
    """The coordinator's RSS and descriptors after a warm-up run and after ``runs`` more."""
    with _tournament(deals=matches // 4) as path:
        _run(path, 2)  # warm-up: imports, pools, caches
        rss_before, fds_before = _rss_kib(), _fds()
        for _ in range(runs):
            _run(path, 2)
        rss_after, fds_after = _rss_kib(), _fds()
    figures = {
        "rss_before_kib": rss_before,
        "rss_after_kib": rss_after,
        "fds_before": fds_before,
        "fds_after": fds_after,
    }
    print(
        f"footprint: after {runs} x {matches} matches the coordinator went from "
        f"{rss_before / 1024:.1f} to {rss_after / 1024:.1f} MiB RSS "
        f"({(rss_after - rss_before) / 1024:+.1f} MiB), {fds_before} to {fds_after} open fds"
    )
    return figures


def fairness(
    requests: int = 2000, move_ms: int = 100, workers: int | None = None
) -> dict[str, Any]:
    """Bots that sleep ``move_ms / 2`` before each answer, at more workers than cores.

    The bank is 0, so any reply later than ``move_ms`` (the referee or the machine too
    slow to serve a waiting bot) is a timeout.
    """
    workers = workers or 2 * (os.cpu_count() or 1)
    per_match = 35  # about right for this ruleset; the real count is read from the logs
    deals = max(1, requests // (4 * per_match))
    source = THINKER.format(think_s=move_ms / 2000)
    with _tournament(deals=deals, bot_source=source, move_ms=move_ms, bank_ms=0) as path:
        elapsed = _run(path, workers)
        results = path.parent / "bench.results"
        db = sqlite3.connect(results / "results.sqlite")
        timeouts = db.execute(
            "SELECT COUNT(*) FROM results WHERE fault_kind = 'timeout'"
        ).fetchone()[0]
        faults = db.execute("SELECT COUNT(*) FROM results WHERE fault_kind IS NOT NULL").fetchone()[
            0
        ]
        db.close()
        served = sum(_requests_in(log) for log in (results / "logs").glob("*.jsonl"))
    figures = {
        "requests": served,
        "timeouts": timeouts,
        "faults": faults,
        "workers": workers,
        "seconds": round(elapsed, 1),
    }
    print(
        f"fairness: {served} requests to bots thinking {move_ms // 2} of {move_ms} ms, "
        f"{workers} workers on {os.cpu_count()} cores, {elapsed:.0f} s: "
        f"{timeouts} timeouts, {faults} faults (target: 0)"
    )
    return figures


def _requests_in(log: Path) -> int:
    """Decisions a bot was asked for: plays and passes, leftovers, chosen give-backs."""
    count = 0.0
    with log.open(encoding="utf-8") as handle:
        rules = json.loads(handle.readline())["rules"]
        for line in handle:
            kind = json.loads(line)["type"]
            if kind in ("played", "passed", "leftover"):
                count += 1
            elif kind == "exchange" and rules["return_choice"] == "choose":
                count += 0.5  # one of the two directions of each exchange is a request
    return int(count)


def main() -> None:
    throughput()
    footprint()
    fairness()


if __name__ == "__main__":
    spawn_as_the_command()
    main()
