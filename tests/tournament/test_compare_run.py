"""``referee compare`` with real bot processes: what the pairs share, read back from the logs;
that no process sees a deal twice; the command's JSON; a run killed and resumed.

The witness bot (``tests/bots/deal_witness.py``) writes, at every ``match_start``, a token of
its process, the match, its seat and the seed it got to stderr, which the referee keeps
beside each match log; it plays with a generator seeded from that seed.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from referee.executors.local import LocalExecutor
from referee.matchlog import read_log
from referee.ranking.sprt import MIN_DEALS, Sprt
from referee.runs.comparison import run_comparison
from referee.sandbox import load_bot
from referee.specs import TimeControl
from referee.tournament.quick import compare_tournament

from .conftest import MARKER, REFEREE, TEST_BOTS, leftover_processes, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

WITNESS = TEST_BOTS / "deal_witness.py"
DEALS = 5


@pytest.fixture(scope="module")
def witnessed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A comparison of two witness versions against three witness field bots, 5 deals of
    one-round matches at tables of 4, on two workers that keep their bot processes."""
    folder = tmp_path_factory.mktemp("witnessed")
    paths = []
    for name, strategy in [
        ("new", "random"),
        ("old", "first"),
        ("fa", "random"),
        ("fb", "random"),
        ("fc", "random"),
    ]:
        path = folder / f"{name}{MARKER}.py"
        path.write_text(
            WITNESS.read_text().replace('STRATEGY = "random"', f'STRATEGY = "{strategy}"')
        )
        paths.append(path)
    bots = [load_bot(str(path)) for path in paths]
    tournament = compare_tournament(
        bots[0],
        bots[1],
        bots[2:],
        [str(p) for p in paths],
        preset="arschloch",
        max_rounds=1,
        table_size=4,
        deals=DEALS,
        time_control=TimeControl(),
        backend="process",
        memory_mb=256,
        images=(),
        folder=folder,
    )
    with LocalExecutor(2) as executor:
        summary = run_comparison(
            tournament,
            executor,
            Sprt(),
            max_deals=DEALS,
            results_dir=folder / "results",
            batch=4,
        )
    assert summary.matches == DEALS * 8 and summary.failed == 0
    return folder / "results"


def _witnessed(results: Path) -> dict[str, dict[int, tuple[str, int]]]:
    """By match: each seat's (process token, seed), from the witness lines on stderr."""
    found: dict[str, dict[int, tuple[str, int]]] = defaultdict(dict)
    for path in (results / "logs").glob("*.stderr.json"):
        for seat in json.loads(path.read_text())["seats"]:
            for piece in seat["pieces"]:
                for line in piece["text"].splitlines():
                    _, process, match, number, seed = line.split()
                    assert int(number) == seat["seat"]
                    found[match][seat["seat"]] = (process, int(seed))
    return found


def test_the_halves_of_a_pair_share_cards_seats_field_and_seeds(witnessed: Path) -> None:
    seen = _witnessed(witnessed)
    assert len(seen) == DEALS * 8
    for deal in range(DEALS):
        for rotation in range(4):
            new_key, old_key = (f"cmp/d{deal:05d}/{half}/r{rotation}" for half in ("new", "old"))
            new_log = read_log(witnessed / "logs" / f"{new_key.replace('/', '_')}.jsonl")
            old_log = read_log(witnessed / "logs" / f"{old_key.replace('/', '_')}.jsonl")
            assert new_log[0]["seed"] == old_log[0]["seed"], "the same deal seed"
            assert new_log[1]["type"] == "deal" and new_log[1]["hands"] == old_log[1]["hands"]
            new_players, old_players = new_log[0]["players"], old_log[0]["players"]
            seat = next(s for s, name in enumerate(new_players) if name.startswith("new"))
            assert old_players[seat].startswith("old")
            assert new_players[:seat] + new_players[seat + 1 :] == (
                old_players[:seat] + old_players[seat + 1 :]
            ), "the same field bots in the same seats"
            new_seeds = [seen[new_key][s][1] for s in range(4)]
            assert new_seeds == [seen[old_key][s][1] for s in range(4)], "the same seeds"
            assert len(set(new_seeds)) == 4, "a seed of its own for every seat"


def test_no_process_sees_a_deal_twice(witnessed: Path) -> None:
    deals_of: dict[str, list[str]] = defaultdict(list)
    for match, seats in _witnessed(witnessed).items():
        for process, _ in seats.values():
            deals_of[process].append(match.rsplit("/", 2)[0])
    assert all(len(deals) == len(set(deals)) for deals in deals_of.values())
    assert max(len(deals) for deals in deals_of.values()) > 1, "processes were kept and reused"


COMMAND = [
    "compare",
    "@heuristic",
    "@random",
    "--field",
    "@lowest",
    "--field",
    "@lowest",
    "--field",
    "@random",
    "--max-rounds",
    "1",
    "--statistic",
    "final-score",
    "--max-matches",
    "320",
    "--seed",
    "7",
    "--workers",
    "2",
    "--json",
]


def _compare(results: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(REFEREE), *COMMAND, "--results", str(results)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _compare(tmp_path_factory.mktemp("uninterrupted") / "results")


def test_a_clearly_better_bot_reaches_h1_and_the_json_says_so(
    uninterrupted: dict[str, Any],
) -> None:
    data = uninterrupted
    assert data["decision"] == "H1"
    assert data["llr"] >= data["bounds"][1] and data["bounds"][0] == -data["bounds"][1]
    low, high = data["interval"]
    assert 0 < low < data["difference"] < high
    assert MIN_DEALS <= data["deals"] < 40 and data["matches"] >= 8 * data["deals"]
    assert (data["new"], data["old"]) == ("heuristic", "random")
    assert data["field"] == ["lowest#1", "lowest#2", "random#2"]
    assert data["sprt"] == {"d0": 0.0, "d1": 0.02, "alpha": 0.05, "beta": 0.05}
    assert (data["faults"], data["failed"], data["spoiled"]) == (0, 0, 0)


def _done(results: Path) -> int:
    try:
        with sqlite3.connect(f"file:{results / 'results.sqlite'}?mode=ro", uri=True) as db:
            return int(
                db.execute("SELECT COUNT(*) FROM matches WHERE status = 'done'").fetchone()[0]
            )
    except sqlite3.Error:
        return 0


def test_a_run_killed_and_resumed_gives_the_same_verdict(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    results = tmp_path / "results"
    runner = subprocess.Popen(
        [str(REFEREE), *COMMAND, "--results", str(results)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: _done(results) >= 20, 120, "20 matches to finish")
    finally:
        runner.kill()
        runner.communicate(timeout=30)
    assert _done(results) < uninterrupted["matches"], "the run must be cut half-way"
    wait_for(lambda: not leftover_processes(), 20, "the killed run's workers and bots to end")
    resumed = _compare(results)
    verdict = ("decision", "llr", "bounds", "difference", "interval", "deals", "matches")
    assert {k: resumed[k] for k in verdict} == {k: uninterrupted[k] for k in verdict}
    shutil.rmtree(results)
