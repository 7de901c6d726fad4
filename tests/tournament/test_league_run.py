"""``referee league run`` with real bots in the process sandbox (slow: real processes).

Six deterministic bots at tables of three, short matches (``target = 3``): the league runs
on two local workers, takes a new version submitted with ``referee submit`` while it runs
(its leaderboard read meanwhile), is killed with SIGKILL in the middle of a batch, and run
again goes on with every result kept once and publishes its site; ``referee league check``
then finds the stored ratings to be the replay's. The same league runs on a local Dask
cluster.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from .conftest import MARKER, REFEREE, STRATEGIES, TEST_BOTS, wait_for, write_bot

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def write_league(folder: Path, bots: int = 6) -> Path:
    (folder / "bots").mkdir(parents=True, exist_ok=True)
    entries = []
    for i in range(bots):
        name = f"{MARKER}-{chr(ord('a') + i)}"
        write_bot(folder / "bots", name, STRATEGIES[i % len(STRATEGIES)])
        entries.append(f'[[bots]]\npath = "bots/{name}.py"\nname = "p{i}"\n')
    path = folder / "lg.toml"
    path.write_text(
        'name = "lg"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\n'
        'format = "league"\nseed = 3\n[league]\nplacement = 1\npoll_seconds = 1\n'
        "[time]\nmove_ms = 2000\nbank_ms = 5000\nhello_ms = 10000\n"
        '[sandbox]\nbackend = "process"\nmemory_mb = 256\n\n' + "\n".join(entries)
    )
    return path


def done(path: Path) -> int:
    database = path.parent / "lg.results" / "results.sqlite"
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as db:
            return int(
                db.execute("SELECT COUNT(*) FROM matches WHERE status = 'done'").fetchone()[0]
            )
    except sqlite3.OperationalError:
        return 0


def referee(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REFEREE), *args], cwd=cwd, capture_output=True, text=True, timeout=180
    )


def test_a_league_takes_a_new_version_is_killed_and_goes_on(tmp_path: Path) -> None:
    path = write_league(tmp_path)
    league = subprocess.Popen(
        [str(REFEREE), "league", "run", str(path), "--workers", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: done(path) >= 6, 90, "the league's first batch")
        entered = referee(
            "submit", str(TEST_BOTS / "polite.py"), "--to", str(path), "--name", "p2", cwd=tmp_path
        )
        assert entered.returncode == 0, entered.stdout + entered.stderr
        assert "version 2 of p2" in entered.stdout and "p2#2" in entered.stdout
        with sqlite3.connect(path.parent / "lg.results" / "results.sqlite", timeout=5) as db:

            def joined() -> bool:
                rows = db.execute("SELECT label FROM league_entrants WHERE label = 'p2#2'")
                return rows.fetchone() is not None

            wait_for(joined, 60, "the new version to be taken in")
        count = done(path)
        wait_for(lambda: done(path) >= count + 2, 60, "more results")
        live = referee("leaderboard", str(path), "--format", "json", cwd=tmp_path)
        assert live.returncode == 0, live.stderr  # read while the league writes
        assert '"matches": ' in live.stdout and '"p2#2"' in live.stdout
    finally:
        os.kill(league.pid, signal.SIGKILL)  # the coordinator only: its workers follow it
        league.communicate(timeout=60)
    assert league.returncode == -signal.SIGKILL
    site = tmp_path / "site"
    again = referee(
        "league",
        "run",
        str(path),
        "--batches",
        "2",
        "--workers",
        "2",
        "--publish",
        str(site),
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert "batches settled in this run" in again.stderr
    assert (site / "index.html").is_file() and list((site / "matches").glob("*.html"))
    check = referee("league", "check", str(path), cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok: the settled ratings and every record are the replay's" in check.stdout
    with sqlite3.connect(path.parent / "lg.results" / "results.sqlite") as db:
        keys = [k for (k,) in db.execute("SELECT match_key FROM chain WHERE match_key IS NOT NULL")]
        assert len(keys) == len(set(keys)) == done(path)
        left = db.execute(
            "SELECT retired, retired_why FROM league_entrants WHERE label = 'p2'"
        ).fetchone()
        assert left[1] == "replaced by p2#2"
        played = db.execute("SELECT matches FROM league_entrants WHERE label = 'p2#2'").fetchone()[
            0
        ]
        assert played > 0
    board = referee("leaderboard", str(path), "--format", "csv", cwd=tmp_path)
    assert board.returncode == 0, board.stderr
    assert '"p2#2","p2","2"' in board.stdout and '"replaced by p2#2"' in board.stdout


def test_a_league_runs_on_a_local_dask_cluster(tmp_path: Path) -> None:
    path = write_league(tmp_path)
    run = referee(
        "league",
        "run",
        str(path),
        "--executor",
        "dask",
        "--workers",
        "2",
        "--batches",
        "1",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "batch 0 settled: 6 results" in run.stderr
    check = referee("league", "check", str(path), cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_bot_that_passes_submit_and_crashes_in_every_league_match_is_suspended(
    tmp_path: Path,
) -> None:
    """Hostile, with real processes: ``league_crash`` behaves in submit's check (a full
    match included) and raises a KeyError in every league match; at ``suspend_after = 2``
    it is suspended after its first table, never seated again, shown suspended, and its
    page explains the fault with the traceback (none of it with stderr private)."""
    path = write_league(tmp_path, bots=4)
    path.write_text(
        path.read_text().replace("poll_seconds = 1\n", "poll_seconds = 1\nsuspend_after = 2\n")
    )
    entered = referee("submit", str(TEST_BOTS / "league_crash.py"), "--to", str(path), cwd=tmp_path)
    assert entered.returncode == 0, entered.stdout + entered.stderr
    assert "ok    a full match of arschloch at 3 seats: played to the end" in entered.stderr
    site = tmp_path / "site"
    run = referee(
        "league",
        "run",
        str(path),
        "--batches",
        "4",
        "--workers",
        "2",
        "--publish",
        str(site),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    line = next(text for text in run.stderr.splitlines() if text.startswith("suspended from batch"))
    assert "league_crash, after 2 forfeits of its own in a row; the last: crash at act" in line
    assert "the bot exited while a request was outstanding (exit code 1)" in line
    since = int(line.split()[3].rstrip(":"))
    with sqlite3.connect(path.parent / "lg.results" / "results.sqlite") as db:
        batches = [
            b for (b,) in db.execute("SELECT batch FROM league_seats WHERE label = 'league_crash'")
        ]
        last = db.execute(
            "SELECT MAX(batch) FROM league_batches WHERE settled IS NOT NULL"
        ).fetchone()[0]
    assert batches == [since - 1] and last > since  # seated once, not after
    board = referee("leaderboard", str(path), cwd=tmp_path)
    assert board.returncode == 0 and f"league_crash is suspended from batch {since}" in board.stdout
    page = (site / "bots" / "league-crash.html").read_text()
    assert (
        f"suspended from batch {since}" in page and "What went wrong, as bot check tells it" in page
    )
    assert "Traceback (most recent call last)" in page and "KeyError: &#39;lg&#39;" in page
    private = tmp_path / "private"
    path.write_text(path.read_text() + '\n[publish]\nstderr = "private"\n')
    published = referee("publish", str(path), "--out", str(private), cwd=tmp_path)
    assert published.returncode == 0, published.stderr
    assert not list(private.glob("**/*.stderr.js"))
    for file in private.rglob("*"):
        assert not file.is_file() or b"KeyError" not in file.read_bytes(), file
    assert "Kept private" in (private / "bots" / "league-crash.html").read_text()
    again = referee("publish", str(path), "--out", str(private), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith(  # nothing new: not said to be published
        "nothing new to publish: no batch settled since the site was last published; "
    )


def _most_at_once(path: Path) -> int:
    """The most matches of the league's store that were out at once (handed out and not
    yet stored)."""
    database = path.parent / "lg.results" / "results.sqlite"
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        spans = db.execute("SELECT started, finished FROM matches WHERE status = 'done'").fetchall()
    edges = sorted([(s, 1) for s, _ in spans] + [(f, -1) for _, f in spans])
    out = most = 0
    for _, step in edges:
        out += step
        most = max(most, out)
    return most


def test_a_league_plays_a_match_fewer_for_a_slot_a_server_borrowed(tmp_path: Path) -> None:
    """``league run`` on the local pool lends slots (referee/executors/slots.py): with
    one held for the whole run, 2 workers play one match at a time; without, more."""
    from referee.executors.slots import SLOTS, WorkerSlots

    lent = write_league(tmp_path / "lent")
    with WorkerSlots(lent.parent / "lg.results" / SLOTS).borrow("check-0"):
        run = referee(
            "league", "run", str(lent), "--workers", "2", "--batches", "2", cwd=lent.parent
        )
    assert run.returncode == 0, run.stderr
    free = write_league(tmp_path / "free")
    again = referee("league", "run", str(free), "--workers", "2", "--batches", "2", cwd=free.parent)
    assert again.returncode == 0, again.stderr
    assert done(lent) == done(free) > 2
    assert _most_at_once(lent) == 1 and _most_at_once(free) > 1
