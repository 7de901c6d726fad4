"""What publishing costs: a 2,000-match tournament's site against playing 100 of its matches.

Run ``python -m bench.publish_bench``. One tournament file, three results folders, measured
side by side in one run:

* 2,000 matches (5 instant bots, 4 per table, 100 deals) played in this process with in-memory bots
  (:class:`referee.testing.InProcessExecutor`: the real engine, match runner, coordinator,
  store and logs; one bot faults in every tenth match), then published into a new folder:
  the whole of ``referee publish`` (read the store, rate, bootstrap, check for collusion,
  write every page and replay, copying the logs): the *full* publication;
* 100 matches of the same tournament (5 deals) played through the real process sandbox,
  with the default workers, as ``referee tournament run`` plays them;
* publishing again while the tournament plays (:mod:`referee.publish.reuse`): the same
  tournament with 105 deals played in memory to 1,900 matches and published, then 100 more
  (to 2,000, still being played) and published again into the same folder: the
  *republication*, which copies the match files of the 1,900 and makes those of the 100
  (and still rates every match, and writes the leaderboard, match list and bot pages whole,
  and removes the old site once the new one is in place). For comparison, the same results
  are then published once more into that folder with nothing reused (``--no-reuse``).
  The ranking of those results alone is timed too, in one process (a publication splits it
  in two: :func:`referee.ranking.standings.standings_meanwhile`).

Targets: publishing the 2,000 takes less time than playing the 100, and so does
republishing after 100 new matches. The leaderboard page stays under 1 MB whatever the
number of matches (the replays load per match): its size is printed for both sites.

:func:`run` (``make bench``) measures the default rules (``arschloch`` to 15 points, as a
tournament on the defaults plays), then matches cut to 3 points: instant bots in 2 to 3
rounds are the worst case for the comparison, since publishing a match costs about the same
whatever its length while playing it costs in proportion. The machine's load is printed
with each: the figures move with it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import installed_bytecode, spawn_as_the_command
from referee.executors.local import LocalExecutor
from referee.publish.site import SiteReport, publish_site
from referee.publish.source import load_results, ranking_input
from referee.ranking.standings import standings
from referee.runs.tournament import run_tournament
from referee.testing import Handler, InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.file import load_tournament

REPO = Path(__file__).resolve().parents[1]
POLITE = REPO / "tests" / "bots" / "polite.py"
BOTS = ("north", "east", "south", "west", "centre")
MB = 1024 * 1024


def _write(folder: Path, deals: int, rules: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in BOTS:
        shutil.copy(POLITE, folder / f"{name}.py")
        entries.append(f'[[bots]]\npath = "{name}.py"\n')
    path = folder / "pub.toml"
    path.write_text(
        f'name = "pub"\nrules = {rules}\ntable_size = 4\n'
        f"deals = {deals}\nseed = 1\n[time]\nmove_ms = 1000\nbank_ms = 5000\n"
        'hello_ms = 10000\n[sandbox]\nbackend = "process"\n\n' + "\n".join(entries)
    )
    return path


def _sometimes_faulty(name: str) -> Callable[[], Handler]:
    """A bot that plays like ``polite`` and sends garbage in every tenth match it starts."""
    starts = itertools.count(1)

    def factory() -> Handler:
        inner = polite_bot(name)
        faulty = next(starts) % 10 == 0

        def handle(msg: dict[str, Any]) -> dict[str, Any] | bytes | None:
            if faulty and msg.get("type") == "act" and msg["id"] > 6:
                return b"I play the seven\n"
            return inner(msg)

        return handle

    return factory


def _handlers() -> dict[str, Callable[[], Handler]]:
    return {
        "north": lambda: polite_bot("north"),
        "east": lambda: lowest_bot("east"),
        "south": lambda: polite_bot("south"),
        "west": lambda: lowest_bot("west"),
        "centre": _sometimes_faulty("centre"),
    }


def _publish(path: Path, out: Path, *, reuse: bool = True) -> tuple[float, SiteReport]:
    started = time.monotonic()
    report = publish_site(load_results(load_tournament(path)), out, reuse=reuse)
    return time.monotonic() - started, report


def _play_in_memory(path: Path, count: int | None, *, restart: bool = False) -> None:
    """Play ``count`` more matches of the tournament at ``path`` here (the rest: ``None``)."""
    executor = InProcessExecutor(_handlers(), stop_after=count)
    run_tournament(load_tournament(path), executor, restart=restart)


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


def _describe(label: str, seconds: float, report: SiteReport) -> None:
    """One line: how long, how large the leaderboard page, the site and its largest page."""
    name, size = report.largest
    print(
        f"publish: {label}: {seconds:5.1f} s for {report.matches} matches "
        f"({report.replays} replays, {report.bots} bots); leaderboard page "
        f"{report.index_bytes / 1024:.0f} KiB, site {report.total_bytes / MB:.1f} MiB, "
        f"largest page {name} {size / 1024:.0f} KiB"
    )


def main(matches: int = 2000, played: int = 100, rules: str = '"arschloch"') -> dict[str, float]:
    print(installed_bytecode())
    folder = Path(tempfile.mkdtemp(prefix="referee-publish-bench-"))
    figures: dict[str, float] = {}
    try:
        big = _write(folder / "big", deals=matches // 20, rules=rules)
        growing = _write(folder / "growing", deals=(matches + played) // 20, rules=rules)
        started = time.monotonic()
        _play_in_memory(big, None, restart=True)
        _play_in_memory(growing, matches - played, restart=True)
        print(f"publish: rules {rules}; {_load()}")
        print(
            f"publish: {2 * matches - played} matches played in memory to publish: "
            f"{time.monotonic() - started:.1f} s (not part of the comparison)"
        )
        before_s, before = _publish(growing, folder / "growing-site")
        _describe(f"{matches - played} matches, still being played", before_s, before)
        _play_in_memory(growing, played)
        small = _write(folder / "small", deals=played // 20, rules=rules)
        started = time.monotonic()
        summary = run_tournament(load_tournament(small), LocalExecutor(None), restart=True)
        figures["play_s"] = time.monotonic() - started
        if summary.done != played or summary.failed:
            raise RuntimeError(f"bench run incomplete: {summary}")
        print(
            f"publish: {played} matches played through the process sandbox: "
            f"{figures['play_s']:5.1f} s"
        )
        figures["publish_s"], report = _publish(big, folder / "big-site")
        _describe(f"{matches} matches", figures["publish_s"], report)
        figures["index_kib"] = report.index_bytes / 1024
        figures["republish_s"], again = _publish(growing, folder / "growing-site")
        _describe(
            f"again after {played} more ({again.reused} match files copied, "
            f"{len(again.rendered)} made)",
            figures["republish_s"],
            again,
        )
        figures["whole_again_s"], whole = _publish(growing, folder / "growing-site", reuse=False)
        _describe(
            f"the same again with nothing reused ({len(whole.rendered)} made)",
            figures["whole_again_s"],
            whole,
        )
        small_s, small_report = _publish(small, folder / "small-site")
        _describe(f"{played} matches", small_s, small_report)
        stored = load_results(load_tournament(growing))
        started = time.monotonic()
        standings(ranking_input(stored))
        figures["rank_s"] = time.monotonic() - started
        print(
            f"publish: the ranking of those {matches} alone (TrueSkill, bootstrap, collusion; "
            f"all of it in one process): {figures['rank_s']:.1f} s (a publication computes "
            "the ratings in another process, and the score intervals in whichever is free "
            "first)"
        )
        figures["ratio"] = figures["publish_s"] / figures["play_s"]
        figures["republish_ratio"] = figures["republish_s"] / figures["play_s"]
        figures["whole_again_ratio"] = figures["whole_again_s"] / figures["play_s"]
        print(
            f"publish: publishing {matches} / playing {played} = {figures['ratio']:.2f} "
            f"(target < 1); leaderboard page {figures['index_kib']:.0f} KiB at {matches} "
            f"matches, {small_report.index_bytes / 1024:.0f} KiB at {played} (target < 1024)"
        )
        print(
            f"publish: republishing {matches} after {played} new / playing {played} = "
            f"{figures['republish_ratio']:.2f} (target < 1); with nothing reused "
            f"{figures['whole_again_ratio']:.2f}; {_load()}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figures


def run() -> None:
    main()
    main(rules='{ preset = "arschloch", target = 3 }')


if __name__ == "__main__":
    spawn_as_the_command()
    run()
