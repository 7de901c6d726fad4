"""Secret, verifiable deals: no bot can recover a deal, anyone can check one afterwards.

Hostile: ``tests/bots/seed_oracle.py`` searches small seeds and every number in its match id
for the seed that deals it its own hand (it would then read every hand). It must find
nothing in a tournament or in a ``play`` without ``--seed``; with ``--seed`` (a predictable
deal, said so) it finds the seed, which shows the oracle works.

Where the oracle must find nothing the matches use the 52-card deck: with 32 cards, one of
its 20,000 guesses deals it its own 8-card hand by chance once in about 500 matches, which
is the oracle's luck, not a leak; with 13 cards of 52 that chance is below one in 10^7.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.executors.local import LocalExecutor
from referee.matchlog import read_log
from referee.runs.tournament import run_tournament
from referee.tournament.file import load_tournament
from referee.tournament.store import Store
from referee.verify.audit import verify_results

from .conftest import REFEREE, TEST_BOTS, write_tournament

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ORACLE = TEST_BOTS / "seed_oracle.py"
POLITE = TEST_BOTS / "polite.py"


def _add_oracle(path: Path) -> None:
    shutil.copy(ORACLE, path.parent / "bots" / "seed_oracle.py")
    with path.open("a") as f:
        f.write('\n[[bots]]\npath = "bots/seed_oracle.py"\n')


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament of three bots and the seed oracle, at tables of 4."""
    path = write_tournament(tmp_path_factory.mktemp("deals"), bots=3, table_size=4, deals=2)
    path.write_text(path.read_text().replace('"arschloch"', '"arschloch-52"', 1))
    _add_oracle(path)
    summary = run_tournament(load_tournament(path), LocalExecutor(2))
    assert summary.failed == 0 and summary.done == summary.total == 8
    return path


def _copy(finished: Path, tmp_path: Path) -> Path:
    """A private copy of the finished tournament's results folder, to tamper with."""
    results = tmp_path / "t.results"
    shutil.copytree(finished.parent / "t.results", results, ignore=shutil.ignore_patterns(".lock"))
    return results


def test_the_oracle_finds_no_hand_in_a_tournament(finished: Path) -> None:
    with Store(finished.parent / "t.results") as store:
        matches = store.completed()
    oracle_seats = [s for m in matches for s in m.seats if s.name == "seed_oracle"]
    assert len(oracle_seats) == 8
    assert [s.fault_kind for s in oracle_seats] == [None] * 8, "the oracle found a deal seed"


def test_the_oracle_finds_a_predictable_seed_and_nothing_without_one(tmp_path: Path) -> None:
    """The control: with --seed the deal is predictable and the oracle proves it."""
    base = [
        str(REFEREE),
        "play",
        str(ORACLE),
        str(POLITE),
        str(POLITE),
        "--sandbox",
        "process",
        "--json",
        "--max-rounds",
        "1",
    ]
    predictable = subprocess.run(
        [*base, "--seed", "4711", "--log", str(tmp_path / "a.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert predictable.returncode == 0, predictable.stderr
    standings = json.loads(predictable.stdout)["standings"]
    oracle = next(s for s in standings if s["seat"] == 0)
    assert oracle["fault"]["kind"] == "illegal", "the oracle should find seed 4711"

    secret = subprocess.run(
        [*base, "--rules", "arschloch-52", "--log", str(tmp_path / "b.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert secret.returncode == 0, secret.stderr
    result = json.loads(secret.stdout)
    assert all(s["fault"] is None for s in result["standings"])
    assert isinstance(result["seed"], int) and result["seed"].bit_length() > 64
    assert str(result["seed"]) not in result["match"]


def test_play_with_a_seed_says_the_deal_is_predictable(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "play",
            *(str(POLITE),) * 3,
            *("--sandbox", "process", "--seed", "3", "--max-rounds", "1"),
            *("--log", str(tmp_path / "x.jsonl")),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "--seed 3 makes the deal predictable" in result.output


def test_the_secret_is_committed_then_revealed(finished: Path) -> None:
    with Store(finished.parent / "t.results") as store:
        secrets = store.deal_secrets()
    assert len(secrets) == 1
    secret = secrets[0]
    assert len(secret.secret) == 32 and secret.revealed is not None
    assert secret.commitment == hashlib.sha256(secret.secret).hexdigest()
    board = CliRunner().invoke(main, ["leaderboard", str(finished), "--format", "json"])
    assert json.loads(board.output)["deals"] == [
        {
            "commitment": secret.commitment,
            "secret": secret.secret.hex(),
            "beacon_source": None,
            "beacon": None,
        }
    ]
    assert (finished.parent / "t.results").stat().st_mode & 0o777 == 0o700


def test_a_run_shows_the_commitment_first_and_the_secret_once_complete(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=3, table_size=3)
    with Store(load_tournament(path).results_dir) as store:
        secret = store.deal_secret()  # as if a run had started and been interrupted
    result = CliRunner().invoke(main, ["tournament", "run", str(path), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert f"committed to sha256 {secret.commitment}" in result.output
    assert secret.secret.hex() in result.output  # revealed at the end: every match is done
    with Store(load_tournament(path).results_dir) as store:
        store.deal_secret()  # nothing to reveal after a reveal: a new secret is made
        board_secrets = store.deal_secrets()
    assert len(board_secrets) == 2 and board_secrets[1].revealed is None
    md = CliRunner().invoke(main, ["leaderboard", str(path), "--format", "md"])
    assert "secret not revealed yet" in md.output


def test_an_extended_tournament_deals_new_matches_with_a_new_secret(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=3, table_size=3, deals=1)
    run_tournament(load_tournament(path), LocalExecutor(1))
    path.write_text(path.read_text().replace("deals = 1", "deals = 2"))
    run_tournament(load_tournament(path), LocalExecutor(1))
    with Store(load_tournament(path).results_dir) as store:
        secrets = store.deal_secrets()
        used = store.secret_of()
    assert len(secrets) == 2 and all(s.revealed is not None for s in secrets)
    assert sorted(used.values()) == [1, 1, 1, 2, 2, 2]  # a revealed secret never deals again
    assert verify_results(load_tournament(path).results_dir).ok


def test_verify_confirms_a_finished_tournament(finished: Path) -> None:
    result = CliRunner().invoke(main, ["verify", str(finished)])
    assert result.exit_code == 0, result.output
    assert "ok: 8 matches of the results verified" in result.output
    with Store(finished.parent / "t.results") as store:
        commitment = store.deal_secrets()[0].commitment
    good = CliRunner().invoke(
        main, ["verify", str(finished.parent / "t.results"), "--commitment", commitment]
    )
    assert good.exit_code == 0, good.output
    wrong = CliRunner().invoke(main, ["verify", str(finished), "--commitment", "00" * 32])
    assert wrong.exit_code == 1 and "is none of this tournament's" in wrong.output


def _first_log(results: Path) -> Path:
    return sorted((results / "logs").glob("*.jsonl"))[0]


def test_verify_detects_a_changed_deal(finished: Path, tmp_path: Path) -> None:
    results = _copy(finished, tmp_path)
    log = _first_log(results)
    lines = read_log(log)
    deal = next(line for line in lines if line["type"] == "deal")
    a, b = deal["hands"][0][0], deal["hands"][1][0]
    deal["hands"][0][0], deal["hands"][1][0] = b, a  # swap one card between two hands
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = verify_results(results)
    assert not found.ok and "does not replay" in found.problems[0]
    assert found.problems[0].startswith(lines[0]["match"])


def test_verify_detects_a_changed_seed_and_a_changed_result(finished: Path, tmp_path: Path) -> None:
    results = _copy(finished, tmp_path)
    log = _first_log(results)
    lines = read_log(log)
    lines[0]["seed"] += 1
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = sqlite3.connect(results / "results.sqlite")
    key = sorted(k for (k,) in db.execute("SELECT key FROM matches"))[-1]
    db.execute("UPDATE results SET place = 5 - place WHERE match_key = ?", (key,))
    db.commit()
    db.close()
    problems = verify_results(results).problems
    assert any("another seed than the secret gives" in p for p in problems)
    assert any(
        p.startswith(key) and "stored standings (names, places, scores or forfeits) differ" in p
        for p in problems
    )


def test_verify_refuses_a_folder_without_results(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["verify", str(tmp_path)])
    assert result.exit_code == 2 and "is neither a tournament's results folder" in result.output
