"""Running tournaments for real: determinism across worker counts, resume after SIGKILL,
a worker killed mid-match, refusal of changed bots, and the demo.

All matches use the process sandbox and instant deterministic bots (see conftest), so the
same tournament must give the same leaderboard however it was run.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.executors import MatchFailed
from referee.executors.local import LocalExecutor
from referee.runs.tournament import PlayoffRound, PlayoffsOver, run_tournament
from referee.tournament.file import load_tournament
from referee.verify.audit import verify_results

from .conftest import MARKER, REFEREE, leftover_processes, timeless, wait_for, write_tournament

TEST_SECRET = bytes.fromhex("5e" * 32)

BOTS, TABLE = 5, 3
TOTAL = 10 * TABLE  # C(5, 3) tables x 1 deal x 3 rotations

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _board(path: Path) -> dict[str, Any]:
    """The leaderboard as `referee leaderboard --format json` gives it, without its dates."""
    from referee.cli.tournaments import _leaderboard

    return timeless(_leaderboard(load_tournament(path)).as_dict())


def _db(path: Path) -> Path:
    return path.parent / "t.results" / "results.sqlite"


def _query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    db = _db(path)
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return []
    finally:
        conn.close()


def _done(path: Path) -> int:
    rows = _query(path, "SELECT COUNT(*) FROM matches WHERE status = 'done'")
    return rows[0][0] if rows else 0


def _results(path: Path) -> dict[str, tuple[int, tuple[Any, ...]]]:
    """Every stored match: its deal attempt and its seats (seat, name, place, score, forfeit)."""
    attempts = dict(_query(path, "SELECT key, deal_attempt FROM matches WHERE status = 'done'"))
    seats: dict[str, list[Any]] = {}
    rows = _query(
        path,
        "SELECT match_key, seat, name, place, score, forfeit FROM results ORDER BY match_key, seat",
    )
    for key, *seat in rows:
        seats.setdefault(key, []).append(tuple(seat))
    return {key: (attempts[key], tuple(seats[key])) for key in attempts}


def _assert_like_the_reference(path: Path, reference: Path) -> int:
    """Every match on its scheduled deal as in the uninterrupted run, the others on fresh
    cards, everything verified; returns how many were dealt afresh."""
    got, want = _results(path), _results(reference)
    assert set(got) == set(want)
    fresh = {key for key, (attempt, _) in got.items() if attempt > 0}
    for key in set(got) - fresh:
        assert got[key] == want[key], key
    found = verify_results(path.parent / "t.results")
    assert found.ok, found.problems
    return len(fresh)


def _assert_complete_once(path: Path) -> None:
    """Every scheduled key done, with exactly one row per seat."""
    assert _query(path, "SELECT status, COUNT(*) FROM matches GROUP BY status") == [("done", TOTAL)]
    per_key = _query(
        path, "SELECT match_key, COUNT(*), COUNT(DISTINCT seat) FROM results GROUP BY match_key"
    )
    assert len(per_key) == TOTAL
    assert {(n, d) for _, n, d in per_key} == {(TABLE, TABLE)}
    logs = path.parent / "t.results" / "logs"
    assert len(list(logs.glob("*.jsonl"))) == TOTAL
    assert not list(logs.glob("*.part")), "a partial log of an interrupted attempt was left"
    stored = [Path(p) for (p,) in _query(path, "SELECT log_path FROM matches")]
    assert all(p.parent == logs and p.is_file() for p in stored)


def _secret_file(path: Path) -> Path:
    """The test deal secret as a file beside the tournament (as a published one would be)."""
    file = path.parent / "deal-secret.hex"
    file.write_text(TEST_SECRET.hex() + "\n")
    return file


def _start_runner(path: Path, workers: int = 2) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            str(REFEREE),
            "tournament",
            "run",
            str(path),
            "--workers",
            str(workers),
            "--deal-secret-file",
            str(_secret_file(path)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REFEREE_TEST_MARKER": MARKER},
    )


def _workers_of(pid: int) -> list[int]:
    """The pool's worker processes (``spawn_main``) among the children of ``pid``."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    workers = []
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            workers.append(child)
    return workers


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tournament file of an uninterrupted run with two workers."""
    return write_tournament(tmp_path_factory.mktemp("reference"), bots=BOTS, table_size=TABLE)


@pytest.fixture(scope="module")
def reference(reference_run: Path) -> dict[str, Any]:
    """The leaderboard of an uninterrupted run with two workers."""
    path = reference_run
    summary = run_tournament(load_tournament(path), LocalExecutor(2), deal_secret=TEST_SECRET)
    errors = _query(path, "SELECT key, error FROM matches WHERE status != 'done' LIMIT 3")
    assert (summary.total, summary.done, summary.played, summary.failed) == (
        TOTAL,
        TOTAL,
        TOTAL,
        0,
    ), errors
    _assert_complete_once(path)
    board = _board(path)
    assert board["matches"] == TOTAL
    assert len({e["mu"] for e in board["entries"]}) > 1  # the bots really differ
    return board


def test_one_worker_gives_the_same_leaderboard_as_two(
    tmp_path: Path, reference: dict[str, Any]
) -> None:
    path = write_tournament(tmp_path, bots=BOTS, table_size=TABLE)
    secret = _secret_file(path)
    args = ["tournament", "run", str(path), "--workers", "1", "--deal-secret-file", str(secret)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert _board(path) == reference
    again = CliRunner().invoke(main, ["leaderboard", str(path), "--format", "json"])
    assert again.exit_code == 0
    assert timeless(json.loads(again.output)) == reference


def test_resume_after_sigkill_plays_what_was_cut_on_fresh_cards(
    tmp_path: Path, reference: dict[str, Any], reference_run: Path
) -> None:
    path = write_tournament(tmp_path, bots=BOTS, table_size=TABLE)
    runner = _start_runner(path)
    try:
        wait_for(lambda: _done(path) >= 8, 60, "8 matches to finish")
    finally:
        runner.kill()
        runner.communicate(timeout=30)
    done = _done(path)
    assert 8 <= done < TOTAL, "the run must be cut half-way"
    wait_for(lambda: not leftover_processes(), 20, "the killed run's workers and bots to end")

    resumed = subprocess.run(
        [str(REFEREE), "tournament", "run", str(path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{TOTAL} matches, {done} already done, {TOTAL - done} to play" in resumed.stderr
    _assert_complete_once(path)
    if _assert_like_the_reference(path, reference_run) == 0:  # nothing was under way
        assert _board(path) == reference


def test_a_worker_killed_mid_match_is_retried_on_fresh_cards(
    tmp_path: Path, reference: dict[str, Any], reference_run: Path
) -> None:
    path = write_tournament(tmp_path, bots=BOTS, table_size=TABLE)
    runner = _start_runner(path)
    try:
        wait_for(lambda: _done(path) >= 3, 60, "3 matches to finish")
        workers = _workers_of(runner.pid)
        assert workers, "no pool worker found"
        os.kill(workers[0], signal.SIGKILL)
        _, err = runner.communicate(timeout=150)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 0, err
    assert "will be retried (attempt 1): a worker process died during the match" in err
    _assert_complete_once(path)
    attempts = [n for (n,) in _query(path, "SELECT attempts FROM matches")]
    assert max(attempts) == 2 and attempts.count(1) >= TOTAL - 3
    retried = {k for (k,) in _query(path, "SELECT key FROM matches WHERE attempts = 2")}
    dealt = {k for (k,) in _query(path, "SELECT key FROM matches WHERE deal_attempt = 1")}
    assert retried == dealt  # each retry on fresh cards
    assert _assert_like_the_reference(path, reference_run) == len(retried)


def test_a_changed_bot_is_refused_unless_restart(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=3, table_size=3)
    runner = CliRunner()
    assert runner.invoke(main, ["tournament", "run", str(path), "--workers", "1"]).exit_code == 0
    again = runner.invoke(main, ["tournament", "run", str(path), "--workers", "1"])
    assert again.exit_code == 0 and "3 matches, 3 already done, 0 to play" in again.output

    bot = tmp_path / "bots" / f"{MARKER}-a.py"
    bot.write_text(bot.read_text() + "\n# changed\n")
    refused = runner.invoke(main, ["tournament", "run", str(path)])
    assert refused.exit_code == 2
    assert f"'{MARKER}-a' changed since its results were stored" in refused.output
    assert "--restart" in refused.output

    restarted = runner.invoke(main, ["tournament", "run", str(path), "--restart", "--workers", "1"])
    assert restarted.exit_code == 0, restarted.output
    assert "3 matches, 0 already done, 3 to play" in restarted.output


def test_changed_settings_are_refused(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=3, table_size=3)
    t = load_tournament(path)
    run_tournament(t, LocalExecutor(1))
    path.write_text(path.read_text().replace("seed = 7", "seed = 8"))
    with pytest.raises(UsageError, match=r"other settings \(seed changed\)"):
        run_tournament(load_tournament(path), LocalExecutor(1))


def test_a_refused_run_stops_the_workers_it_started_while_preparing(tmp_path: Path) -> None:
    """prepare() starts the workers before the stored settings are checked: a refusal
    stops them (left alone they die half-started with the command, each with a traceback)."""
    import multiprocessing

    path = write_tournament(tmp_path, bots=3, table_size=3)
    run_tournament(load_tournament(path), LocalExecutor(1))
    path.write_text(path.read_text().replace("seed = 7", "seed = 8"))
    before = set(multiprocessing.active_children())
    with pytest.raises(UsageError, match="other settings"):
        run_tournament(load_tournament(path), LocalExecutor(2))
    assert not set(multiprocessing.active_children()) - before

    refused = subprocess.run(
        [str(REFEREE), "tournament", "run", str(path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert "other settings (seed changed)" in refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr


@pytest.mark.parametrize("junk", [b"not a database at all", b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_damaged_results_database_is_a_clear_error(tmp_path: Path, junk: bytes) -> None:
    path = write_tournament(tmp_path, bots=3, table_size=3)
    _db(path).parent.mkdir()
    _db(path).write_bytes(junk)
    runner = CliRunner()
    for args in (["tournament", "run", str(path)], ["leaderboard", str(path)]):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, result.output
        assert "cannot be read as a results database" in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    assert _db(path).read_bytes() == junk  # nothing lost: the file is left as it was
    restarted = runner.invoke(main, ["tournament", "run", str(path), "--restart"])
    assert restarted.exit_code == 0, restarted.output


def test_leaderboard_before_any_run_says_what_to_do(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    result = CliRunner().invoke(main, ["leaderboard", str(path)])
    assert result.exit_code == 2
    assert "no results yet" in result.output and "referee tournament run" in result.output


def test_tournament_demo_runs_the_sample_bots() -> None:
    result = subprocess.run(
        [str(REFEREE), "tournament", "demo", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for name in ("heuristic", "lowest", "random", "js-lowest"):
        assert name in result.stdout
    assert "24/24 matches done" in result.stderr


# --------------------------------------------------------------------------- play-offs

PLAYOFF_NAMES = ("a", "b", "c", "d")  # fixed names: the keys, so the deals, do not vary
SCHEDULED = 4 * 2 * 3  # C(4, 3) tables x 2 deals x 3 rotations
SETTLES = "playoff = { top = 3, until = 0.75, budget = 60 }"
RUNS_OUT = "playoff = { top = 4, until = 0.95, budget = 30 }"


def _playoff_tournament(folder: Path, playoff: str) -> Path:
    return write_tournament(
        folder, bots=4, table_size=3, deals=2, extra=playoff, names=PLAYOFF_NAMES
    )


def _playoffs_done(path: Path) -> int:
    rows = _query(path, "SELECT COUNT(*) FROM matches WHERE status = 'done' AND key LIKE 'po/%'")
    return rows[0][0] if rows else 0


def test_play_offs_stop_when_the_top_is_ordered_with_the_confidence_asked(tmp_path: Path) -> None:
    path = _playoff_tournament(tmp_path, SETTLES)
    events: list[Any] = []
    summary = run_tournament(
        load_tournament(path), LocalExecutor(2), deal_secret=TEST_SECRET, on_event=events.append
    )
    failures = [e for e in events if isinstance(e, MatchFailed)]
    assert not failures, failures[:3]
    [over] = [e for e in events if isinstance(e, PlayoffsOver)]
    assert over.state == "settled" and not over.uncertain and 0 < over.matches < 60
    rounds = [e for e in events if isinstance(e, PlayoffRound)]
    assert [r.round for r in rounds] == list(range(over.rounds))
    assert all(r.uncertain and r.to_play == r.matches for r in rounds)
    assert (summary.total, summary.done) == (SCHEDULED + over.matches,) * 2
    board = _board(path)
    assert board["playoff"] == {
        "top": 3,
        "until": 0.75,
        "budget": 60,
        "matches": over.matches,
        "rounds": over.rounds,
        "state": "settled",
    }
    for entry in board["entries"][:2]:
        assert entry["over_next"]["confidence"] >= 0.75 and entry["over_next"]["deals"] >= 8
    assert sum(e["playoff_matches"] for e in board["entries"]) == 3 * over.matches
    # After play-offs the rank is by mu (ratings.rank_rule), and verify recomputes it so.
    assert board["ranked_by"] == "mu"
    mus = [e["mu"] for e in board["entries"]]
    assert mus == sorted(mus, reverse=True)
    # Complete only now: the secret is revealed, and play-off deals verify like any other.
    assert board["deals"] == [
        {
            "commitment": hashlib.sha256(TEST_SECRET).hexdigest(),
            "secret": TEST_SECRET.hex(),
            "beacon_source": None,
            "beacon": None,
        }
    ]
    found = verify_results(path.parent / "t.results")
    assert found.ok, found.problems
    assert found.matches == SCHEDULED + over.matches


def test_play_offs_stop_at_the_budget_and_resume_after_sigkill(tmp_path: Path) -> None:
    """Killed in the play-offs and resumed with 2 workers, a run ends as one played in one
    go on 1 worker would, but for the matches cut by the kill: those are played on fresh
    cards, and the rounds planned after them follow from their results. Everything
    verifies (the rounds are planned again from the stored results)."""
    reference = _playoff_tournament(tmp_path / "reference", RUNS_OUT)
    run_tournament(load_tournament(reference), LocalExecutor(1), deal_secret=TEST_SECRET)
    expected = _board(reference)
    assert expected["playoff"]["state"] == "budget" and expected["playoff"]["matches"] == 30
    schedule = _query(reference, "SELECT key, spec FROM matches ORDER BY key")

    path = _playoff_tournament(tmp_path / "killed", RUNS_OUT)
    runner = _start_runner(path)
    try:
        wait_for(lambda: _playoffs_done(path) >= 3, 90, "3 play-off matches to finish")
    finally:
        runner.kill()
        runner.communicate(timeout=30)
    assert 3 <= _playoffs_done(path) < 30, "the run must be cut in the play-offs"
    wait_for(lambda: not leftover_processes(), 20, "the killed run's workers and bots to end")

    resumed = subprocess.run(
        [str(REFEREE), "tournament", "run", str(path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert resumed.returncode == 0, resumed.stderr
    rounds = expected["playoff"]["rounds"]
    assert f"play-offs over after {rounds} rounds, 30 matches: the budget is spent" in (
        resumed.stderr
    )
    found = verify_results(path.parent / "t.results")
    assert found.ok, found.problems
    fresh = _query(path, "SELECT key FROM matches WHERE deal_attempt > 0")
    stored = _query(path, "SELECT key, spec FROM matches ORDER BY key")
    if not fresh:  # the kill cut no match: everything as in one go
        assert stored == schedule
        assert _board(path) == expected
    else:  # what was planned before the cut is as in one go
        first = min(key for (key,) in fresh)
        assert [row for row in stored if row[0] < first] == [
            row for row in schedule if row[0] < first
        ]


def test_the_progress_view_shows_the_coordinators_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The view keeps no counts of its own: it prints what RunProgress says, a line a
    tenth of the run, and a failure when the executor reports one."""
    from referee.cli.tournaments import _ProgressView
    from referee.runs.tournament import RunProgress, RunStarted

    with _ProgressView("t", lambda: 2) as view:
        view.update(RunStarted(20, 0, 20, "process sandbox", "ab" * 32, "limits"))
        for n in range(1, 21):
            view.update(RunProgress(20, n, n, n // 4, 0))
        view.update(MatchFailed("rr/x/d000/r0", "boom\nsandbox down", 3, True))
        view.update(RunProgress(21, 21, 20, 5, 1))
    err = capsys.readouterr().err
    assert "t: 20 matches, 0 already done, 20 to play with 2 workers" in err
    assert "2/20 matches" in err and "20/20 matches" in err and "5 faults" in err
    assert "1/20 matches" not in err  # a line per tenth, not per match
    assert "match rr/x/d000/r0 failed: sandbox down" in err
    assert "21/21 matches" in err


def test_the_workers_start_while_the_coordinator_stages_and_schedules(tmp_path: Path) -> None:
    """prepare() starts the pool's processes (each probes its sandbox before any task);
    the run plays on them and stops them, as it stops a pool it starts itself."""
    import multiprocessing

    path = write_tournament(tmp_path, bots=4, table_size=3)
    executor = LocalExecutor(2)
    before = set(multiprocessing.active_children())
    executor.prepare("process", ())
    spawned = set(multiprocessing.active_children()) - before
    assert len(spawned) == 2, "both workers started before any task"
    summary = run_tournament(load_tournament(path), executor)
    assert summary.done == summary.total == 12 and not summary.failed
    assert not (set(multiprocessing.active_children()) & spawned), "the run stopped them"
