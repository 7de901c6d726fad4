"""How strong is the ``montecarlo`` sample bot, and how fast does it answer?

``python -m bench.montecarlo_bench [--matches 400] [--workers 1] [--rules arschloch]``
plays ``montecarlo`` against three ``heuristic`` bots at 4-player tables, as a tournament
would: the scheduler's round robin of the one table
(:func:`referee.tournament.scheduler.round_robin`),
so every deal is played in all 4 seat rotations and the base order of each deal cycles
through the balanced seatings of :mod:`referee.tournament.seating`. The bots run in the process
sandbox with the default time control, and processes are reused between matches through a
:class:`~referee.protocol.seats.SessionPool` (never within one deal's rotations), like a worker.

Figures, with their targets (issue 13):

* the **mean normalised finishing score** of ``montecarlo`` (``(k - place) / (k - 1)``,
  :func:`referee.ranking.intervals.normalised_score`; par 0.5) with its 95 % bootstrap interval
  over deals (:func:`referee.ranking.intervals.score_intervals`): target at least 0.57;
* its **reply times as the referee timed them** (from writing a request to reading the
  reply line, the figure charged against ``move_ms``): median and 99th percentile over
  every request, and over the plays that offered a choice (more than one legal entry), the
  ones the bot searches: target median under 100 ms.

``--matches`` is rounded up to whole deals (4 matches each); ``make bench`` runs 48 to show
the figures in a few minutes, which is too few to settle the score target (its interval is
about +-0.08 wide there): the target is measured with the default 400. ``--workers`` plays
that many matches at once in this process's event loop; keep 1 on a shared machine, since
the bots' reply times are the thing measured.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.match.runner import play_match
from referee.protocol.seats import SessionPool, seated
from referee.protocol.session import BotSession
from referee.ranking.intervals import deal_scores, score_intervals
from referee.results import MatchResult
from referee.rules import PRESETS, RuleSet
from referee.sandbox import (
    BotSpec,
    Limits,
    ProcessSandbox,
    load_bot,
    make_staging_root,
    remove_staging_root,
    stage_bot,
)
from referee.specs import MatchSpec, StoredMatch, StoredSeat, TimeControl, deal_key
from referee.tournament.scheduler import round_robin

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_bots"
CANDIDATE = "montecarlo"
OPPONENTS = ("heuristic-1", "heuristic-2", "heuristic-3")
TABLE_SIZE = 4
SECRET = hashlib.sha256(b"arschloch-referee montecarlo bench").digest()
SEED = 13
TARGET_SCORE = 0.57
TARGET_MEDIAN_MS = 100.0


@dataclass
class Reply:
    """One request to the candidate, as the referee timed it."""

    kind: str
    elapsed_ms: int
    choices: int  # legal entries of a play request (0 for give and leftover)


@dataclass
class Outcome:
    """Everything the bench keeps: the stored matches and the candidate's replies."""

    matches: list[StoredMatch] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    seconds: float = 0.0


def schedule(matches: int) -> list[MatchSpec]:
    """The round robin of the one table, cut to whole deals covering ``matches``."""
    deals = max(1, -(-matches // TABLE_SIZE))
    return round_robin([CANDIDATE, *OPPONENTS], TABLE_SIZE, deals, SEED, SECRET)


def _choices(request: bytes, kind: str) -> int:
    if kind != "play":
        return 0
    legal = json.loads(request).get("legal") or []
    return len(legal)


def _timed(session: BotSession, sink: list[Reply]) -> Callable[[], None]:
    """Record the referee's own timing of each of ``session``'s requests; returns the undo.

    The wrapper sits on the session instance for one match only: the figure is exactly the
    ``elapsed`` the match runner charges against ``move_ms``.
    """
    original = session.request

    async def request(
        data: bytes, request_id: int, kind: str, budget_ms: int
    ) -> tuple[Any, bytes, int]:
        reply, raw, elapsed = await original(data, request_id, kind, budget_ms)
        sink.append(Reply(kind, elapsed, _choices(data, kind)))
        return reply, raw, elapsed

    session.request = request  # type: ignore[method-assign]
    return lambda: vars(session).pop("request", None)


def _stored(spec: MatchSpec, result: MatchResult) -> StoredMatch:
    seats = tuple(
        StoredSeat(
            st.seat,
            spec.table[st.seat],
            st.place,
            st.score,
            st.forfeit,
            st.fault.kind if st.fault else None,
            st.fault.detail if st.fault else None,
        )
        for st in sorted(result.standings, key=lambda s: (s.place, s.seat))
    )
    return StoredMatch(spec, seats)


async def _play_all(
    specs: Sequence[MatchSpec],
    bots: dict[str, BotSpec],
    preset: str,
    workers: int,
    progress: Callable[[int], None],
) -> Outcome:
    outcome = Outcome()
    rules = RuleSet.preset(preset).resolve(TABLE_SIZE)
    sandbox = ProcessSandbox()
    pool = SessionPool(sandbox, Limits(), TimeControl())
    gate = asyncio.Semaphore(max(1, workers))

    async def one(spec: MatchSpec) -> None:
        seat = spec.table.index(CANDIDATE)
        table = [bots[name] for name in spec.table]
        async with gate, seated(table, pool=pool, deal_key=deal_key(spec.key)) as seats:
            undo = _timed(seats.bots[seat], outcome.replies)
            try:
                result = await play_match(seats, rules, spec.match_seed, match_id=spec.key)
            finally:
                undo()
        outcome.matches.append(_stored(spec, result))
        for st in result.standings:
            if st.fault is not None:
                outcome.faults.append(f"{spec.key} {spec.table[st.seat]}: {st.fault.detail}")
        progress(len(outcome.matches))

    started = time.monotonic()
    try:
        await asyncio.gather(*(one(spec) for spec in specs))
    finally:
        await pool.aclose()
        await sandbox.aclose()
    outcome.seconds = time.monotonic() - started
    return outcome


def run(
    matches: int, workers: int = 1, preset: str = "arschloch", progress: bool = True
) -> dict[str, float]:
    """Play the bench, print its figures, and return them by name."""
    specs = schedule(matches)
    staging = make_staging_root()
    try:
        heuristic = stage_bot(load_bot(SAMPLES / "heuristic"), staging)
        bots = {CANDIDATE: stage_bot(load_bot(SAMPLES / CANDIDATE), staging)}
        bots.update({name: heuristic for name in OPPONENTS})

        def report(done: int) -> None:
            if progress and (done % 20 == 0 or done == len(specs)):
                print(f"  {done}/{len(specs)} matches", file=sys.stderr, flush=True)

        outcome = asyncio.run(_play_all(specs, bots, preset, workers, report))
    finally:
        remove_staging_root(staging)
    return _report(outcome, preset, workers, ProcessSandbox().describe())


def _percentile(values: Sequence[int], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return float(ordered[min(len(ordered) - 1, int(share * len(ordered)))])


def _report(outcome: Outcome, preset: str, workers: int, sandbox: str) -> dict[str, float]:
    intervals = score_intervals(deal_scores(outcome.matches))
    mc = intervals[CANDIDATE]
    others = [intervals[name].mean for name in OPPONENTS]
    every = [r.elapsed_ms for r in outcome.replies]
    searched = [r.elapsed_ms for r in outcome.replies if r.choices > 1]
    median = statistics.median(every) if every else float("nan")
    median_searched = statistics.median(searched) if searched else float("nan")
    met_score = "met" if mc.mean >= TARGET_SCORE else "NOT MET"
    met_time = "met" if median < TARGET_MEDIAN_MS else "NOT MET"
    print(
        f"montecarlo vs 3 x heuristic: {preset}, {TABLE_SIZE} players, {mc.matches} matches "
        f"({mc.deals} deals x {TABLE_SIZE} seat rotations, balanced seating), "
        f"{workers} at a time, {outcome.seconds:.0f} s"
    )
    print(f"  {sandbox}")
    print(
        f"  mean normalised finishing score {mc.mean:.3f}, 95% interval "
        f"{mc.low:.3f}-{mc.high:.3f} (bootstrap over deals; par 0.5; "
        f"target >= {TARGET_SCORE}: {met_score})"
    )
    print(f"  the heuristic seats: {', '.join(f'{s:.3f}' for s in others)}")
    print(
        f"  replies timed by the referee: {len(every)} requests, median {median:.0f} ms, "
        f"p99 {_percentile(every, 0.99):.0f} ms, max {max(every, default=0)} ms "
        f"(target median < {TARGET_MEDIAN_MS:.0f} ms: {met_time})"
    )
    print(
        f"  plays with a choice (searched): {len(searched)}, median {median_searched:.0f} ms, "
        f"p99 {_percentile(searched, 0.99):.0f} ms"
    )
    print(f"  faults: {len(outcome.faults)}")
    for line in outcome.faults[:10]:
        print(f"    {line}")
    return {
        "score": mc.mean,
        "score_low": mc.low,
        "score_high": mc.high,
        "median_ms": median,
        "p99_ms": _percentile(every, 0.99),
        "searched_median_ms": median_searched,
        "faults": float(len(outcome.faults)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=400, help="matches (whole deals of 4)")
    parser.add_argument("--workers", type=int, default=1, help="matches played at once")
    parser.add_argument("--rules", default="arschloch", choices=sorted(PRESETS), help="preset")
    args = parser.parse_args(argv)
    if args.matches < 1 or args.workers < 1:
        parser.error("--matches and --workers must be at least 1")
    run(args.matches, args.workers, args.rules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
