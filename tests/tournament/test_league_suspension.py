"""Hostile: an entrant that faults in every league match is suspended (in this process,
with fake bots through the real worker, match runner, store and league loop).

Seven bots at tables of four, ``suspend_after = 3``: ``crash`` raises a KeyError (its
traceback on stderr) at the first request of every match. It is suspended after three
forfeits, never seated again, its rating kept and shown suspended on the leaderboard and
the site, whose bot page explains its fault (with its stderr, unless ``[publish] stderr =
"private"``, which leaves no stderr anywhere in the site). ``referee league reinstate``
and a new version each seat it again. A bot the referee's side fails (the kernel's OOM
killer above the bot's own limit, the referee's own kill, a lost worker) is never
suspended for it; a clean match between forfeits starts the count again; and the count is
the same whatever order the results arrive in and however often the league is restarted.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import REFEREE_KILL, UNCOUNTED_KILL, own_fault
from referee.executors import AttemptEvent, MatchFailed, MatchStarted, MatchTask
from referee.publish.league import league_board, render_league
from referee.publish.league_site import publish_league
from referee.ranking.incremental import check_league
from referee.ranking.ratings import make_environment
from referee.runs.league import (
    EntrantReinstated,
    EntrantsChanged,
    EntrantSuspended,
    LeagueEvent,
    LeagueWaiting,
    run_league,
)
from referee.sandbox.base import ExitInfo
from referee.testing import Exit, InProcessExecutor, Stderr, lowest_bot, polite_bot
from referee.tournament.file import load_tournament
from referee.tournament.league import LeagueLedger
from referee.tournament.store import Store
from tests.tournament.league_field import SECRET, Clock, Reversed, Watched, results, write

FIELD = tuple(f"b{i}" for i in range(6))
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/bot/crash.py", line 12, in <module>\n'
    "    strategy = STRATEGIES[kind]\n"
    "KeyError: 'lg'\n"
)


def crashing(name: str, *, clean: Callable[[str], bool] = lambda match: False) -> Any:
    """Polite, but raises a KeyError at the first request of a match (unless ``clean``
    says its match id is one it plays through)."""
    inner = polite_bot(name)
    state = {"match": ""}

    def handle(msg: dict[str, Any]) -> Any:
        if msg.get("type") == "match_start":
            state["match"] = msg["match"]
        if msg.get("type") == "act" and not clean(state["match"]):
            return [Stderr(TRACEBACK.encode()), Exit(1)]
        return inner(msg)

    return handle


def ends(name: str, info: ExitInfo) -> Any:
    """Polite, but its process ends as ``info`` says at the first request of a match."""
    inner = polite_bot(name)

    def handle(msg: dict[str, Any]) -> Any:
        if msg.get("type") == "act":
            return Exit(info=info)
        return inner(msg)

    return handle


def handlers(odd: dict[str, Callable[[], Any]]) -> dict[str, Callable[[], Any]]:
    field = {
        name: (lambda name=name, i=i: (polite_bot if i % 2 else lowest_bot)(name))
        for i, name in enumerate((*FIELD, "crash#2"))
    }
    return {**field, **odd}


CRASH = {"crash": lambda: crashing("crash")}


def league(folder: Path, odd: str = "crash", knobs: str = "suspend_after = 3") -> Path:
    return write(folder, (*FIELD, odd), f"placement = 1\n{knobs}")


def play(
    path: Path, executor: Any, batches: int, clock: Clock, events: list[LeagueEvent] | None = None
) -> list[LeagueEvent]:
    seen: list[LeagueEvent] = [] if events is None else events
    run_league(
        path, executor, batches=batches, deal_secret=SECRET, clock=clock, on_event=seen.append
    )
    return seen


def seated(path: Path, label: str) -> list[int]:
    """The batches ``label`` was planned a seat in."""
    with Store(results(path)) as store:
        rows = store.connection.execute(
            "SELECT batch FROM league_seats WHERE label = ? ORDER BY batch", (label,)
        )
        return [int(batch) for (batch,) in rows]


def suspended(events: Sequence[LeagueEvent]) -> list[EntrantSuspended]:
    return [e for e in events if isinstance(e, EntrantSuspended)]


@pytest.fixture(scope="module")
def suspension(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = league(tmp_path_factory.mktemp("league"))
    clock = Clock()
    events = play(path, InProcessExecutor(handlers(CRASH)), 6, clock)
    with Store(results(path)) as store:
        ledger = LeagueLedger(store)
        rating = ledger.entrants()["crash"]
    return {"path": path, "clock": clock, "events": events, "rating": rating}


def test_a_bot_that_crashes_in_every_match_is_suspended_after_n(suspension: dict[str, Any]) -> None:
    path, events = suspension["path"], suspension["events"]
    [event] = suspended(events)
    assert event.label == "crash" and event.forfeits == 3 and event.kind == "crash"
    assert "exited while a request was outstanding" in event.why and "exit code 1" in event.why
    batches = seated(path, "crash")
    assert batches and all(batch < event.batch for batch in batches)  # never seated after
    assert max(batches) == event.batch - 1
    with Store(results(path)) as store:
        ledger = LeagueLedger(store)
        faults = ledger.entrants()["crash"].faults
        [held] = ledger.suspended(ledger.next_batch()).values()
        played = store.connection.execute(
            "SELECT MAX(batch) FROM league_batches WHERE settled IS NOT NULL"
        ).fetchone()[0]
    assert faults == {"crash": 4}  # its one table: four rotations, all forfeited
    assert held.label == "crash" and held.since == event.batch and held.lifted is None
    assert played > event.batch  # the league went on without it
    line = [e for e in events if isinstance(e, EntrantSuspended)]
    assert line == [event]


def test_its_rating_is_kept_and_shown_suspended(suspension: dict[str, Any]) -> None:
    path = suspension["path"]
    board = league_board(load_tournament(path))
    assert "crash" not in [e.label for e in (*board.entries, *board.unrated, *board.retired)]
    [entry] = board.suspended
    kept = suspension["rating"]
    assert (entry.mu, entry.sigma) == (kept.mu, kept.sigma) and entry.matches == 4
    assert entry.suspended is not None and entry.suspended_why is not None
    assert entry.suspended_why.startswith("3 forfeits of its own in a row, the last: crash at act")
    data = json.loads(render_league(board, "json"))
    assert (
        data["suspended"][0]["name"] == "crash"
        and data["suspended"][0]["suspended_batch"] == entry.suspended
    )
    out = CliRunner().invoke(main, ["leaderboard", str(path)])
    assert out.exit_code == 0, out.output
    assert f"suspended from batch {entry.suspended}" in out.output
    csv = render_league(board, "csv").splitlines()
    assert '"suspended","suspended_batch","suspended_why"' in csv[0]
    assert any(row.startswith('"","crash"') and '"yes"' in row for row in csv)


def test_its_bot_page_explains_the_fault_and_shows_its_stderr(
    suspension: dict[str, Any], tmp_path: Path
) -> None:
    path = suspension["path"]
    site = tmp_path / "site"
    publish_league(load_tournament(path), site)
    page = (site / "bots" / "crash.html").read_text()
    assert "suspended from batch" in page and 'id="suspended"' in page
    assert 'id="faults"' in page and "4 faults of 1 kind" in page
    assert "What went wrong, as bot check tells it" in page
    assert (
        "problem: crash at act" in page
        and "hint: the bot exited while it was asked something" in page
    )
    assert "KeyError: &#39;lg&#39;" in page and "Traceback (most recent call last)" in page
    assert 'class="replay-link" href="../matches/' in page and ".html#L" in page
    index = (site / "index.html").read_text()
    assert 'id="suspended"' in index and "1 suspended" in index
    assert list(site.glob("matches/*.stderr.js"))


def test_with_stderr_private_no_stderr_is_published_anywhere(
    suspension: dict[str, Any], tmp_path: Path
) -> None:
    path = suspension["path"]
    private = path.with_name("private.toml")
    private.write_text(
        path.read_text().replace("[league]", '[publish]\nstderr = "private"\n\n[league]')
    )
    spec = load_tournament(private)
    site = tmp_path / "site"
    publish_league(load_tournament(path), site)  # published with stderr first...
    assert list(site.glob("**/*.stderr.js"))
    publish_league(spec, site, results_dir=results(path))  # ...then made private
    assert not list(site.glob("**/*.stderr.js"))
    for file in site.rglob("*"):
        if file.is_file():
            text = file.read_bytes()
            assert b"Traceback" not in text and b"KeyError" not in text, file
    page = (site / "bots" / "crash.html").read_text()
    assert "Kept private: this competition publishes no bot" in page
    assert "problem: crash at act" in page  # the fault is still explained
    match = next(site.glob("matches/*.html")).read_text()
    assert "stderr is kept private in this competition" in match


def test_a_bad_stderr_setting_is_refused_in_one_line(tmp_path: Path) -> None:
    path = league(tmp_path)
    path.write_text(path.read_text() + '\n[publish]\nstderr = "authors"\n')
    out = CliRunner().invoke(main, ["leaderboard", str(path)])
    assert out.exit_code == 2
    assert f"{path}: publish.stderr: got 'authors'; allowed: 'public' or 'private'" in out.output
    path.write_text(
        path.read_text()
        .replace('stderr = "authors"', 'stderr = "private"')
        .replace("suspend_after = 3", "suspend_after = 0")
    )
    out = CliRunner().invoke(main, ["leaderboard", str(path)])
    assert out.exit_code == 2 and "league.suspend_after: got 0; allowed: 1 to 10000" in out.output


def test_reinstate_seats_it_again_and_counts_afresh(tmp_path: Path) -> None:
    path = league(tmp_path)
    clock = Clock()
    [first] = suspended(play(path, InProcessExecutor(handlers(CRASH)), 4, clock))
    unknown = CliRunner().invoke(main, ["league", "reinstate", str(path), "nobody"])
    assert unknown.exit_code == 2 and "'nobody' is not an entrant of the league" in unknown.output
    not_held = CliRunner().invoke(main, ["league", "reinstate", str(path), "b1"])
    assert not_held.exit_code == 2
    assert "'b1' is not suspended, nothing to reinstate (suspended now: crash)" in not_held.output
    done = CliRunner().invoke(main, ["league", "reinstate", str(path), "crash"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith(
        f"reinstated: crash is seated again from the league's next batch (suspended from "
        f"batch {first.batch} after 3 forfeits of its own in a row; the last: crash at act"
    )
    assert (
        "reinstated, seated again from the next batch"
        in CliRunner().invoke(main, ["leaderboard", str(path)]).output
    )
    events = play(path, InProcessExecutor(handlers(CRASH)), 6, clock)
    [back] = [e for e in events if isinstance(e, EntrantReinstated)]
    assert back.label == "crash"
    [again] = suspended(events)
    after = [b for b in seated(path, "crash") if b >= back.batch]
    assert after and again.batch == after[0] + 1  # its next table: three new forfeits
    assert again.forfeits == 3
    with Store(results(path)) as store:
        history = LeagueLedger(store).suspensions("crash")
    assert [(s.since, s.lifted) for s in history] == [
        (first.batch, back.batch),
        (again.batch, None),
    ]


def test_a_new_version_lifts_the_suspension(tmp_path: Path) -> None:
    path = league(tmp_path)
    clock = Clock()
    [held] = suspended(play(path, InProcessExecutor(handlers(CRASH)), 4, clock))
    (path.parent / "crash-v2.py").write_text("# crash, fixed\n")
    with path.open("a") as handle:
        handle.write('\n[[bots]]\npath = "crash-v2.py"\nname = "crash"\n')
    events = play(path, InProcessExecutor(handlers(CRASH)), 4, clock)
    [change] = [e for e in events if isinstance(e, EntrantsChanged)]
    assert change.joined == ("crash#2",) and change.left == (("crash", "replaced by crash#2"),)
    assert seated(path, "crash#2") and not suspended(events)
    with Store(results(path)) as store:
        [lifted] = LeagueLedger(store).suspensions("crash")
    assert lifted.since == held.batch and lifted.lifted == change.batch
    assert lifted.lifted_why == "replaced by crash#2"
    board = league_board(load_tournament(path))
    assert not board.suspended and [e.label for e in board.retired] == ["crash"]


def test_a_clean_match_between_forfeits_starts_the_count_again(tmp_path: Path) -> None:
    """A clean match (the first rotation of each table), then three forfeits, over and
    over: its last results at the end of a batch are three forfeits, never four, so it is
    never suspended at ``suspend_after = 4``, and it is at 3. Forfeits in a row count
    across batches: eight (two tables) suspend it at 6, after its second table."""
    path = league(tmp_path / "four", knobs="suspend_after = 4")
    sometimes = {"crash": lambda: crashing("crash", clean=lambda match: match.endswith("/r0"))}
    events = play(path, InProcessExecutor(handlers(sometimes)), 8, Clock())
    assert not suspended(events)
    assert len(seated(path, "crash")) >= 3  # seated in batch after batch
    with Store(results(path)) as store:
        entrant = LeagueLedger(store).entrants()["crash"]
    assert entrant.faults["crash"] == 3 * entrant.matches // 4
    three = league(tmp_path / "three", knobs="suspend_after = 3")  # the same bot, N = 3
    [held] = suspended(play(three, InProcessExecutor(handlers(sometimes)), 8, Clock()))
    assert held.batch == seated(three, "crash")[0] + 1
    six = league(tmp_path / "six", knobs="suspend_after = 6")
    [held] = suspended(play(six, InProcessExecutor(handlers(CRASH)), 8, Clock()))
    assert held.forfeits == 6 and held.batch == seated(six, "crash")[1] + 1


@pytest.mark.parametrize(
    ("how", "info"),
    [
        (
            "outside_oom",
            ExitInfo(
                returncode=-9,
                signal=9,
                outside_oom=True,
                detail="SIGKILL: killed by the kernel's out-of-memory killer within its own limit",
            ),
        ),
        (
            "the referee's kill",
            ExitInfo(returncode=-9, signal=9, detail=f"SIGKILL: {REFEREE_KILL}"),
        ),
    ],
)
def test_a_bot_failed_on_the_referees_side_is_never_suspended(
    tmp_path: Path, how: str, info: ExitInfo
) -> None:
    path = league(tmp_path, "victim", knobs="suspend_after = 1")
    executor = InProcessExecutor(handlers({"victim": lambda: ends("victim", info)}))
    events = play(path, executor, 5, Clock())
    assert not suspended(events)
    batches = seated(path, "victim")
    assert len(batches) >= 2  # seated again and again
    with Store(results(path)) as store:
        ledger = LeagueLedger(store)
        assert not ledger.suspended(ledger.next_batch())
        faults = ledger.entrants()["victim"].faults
    if how == "outside_oom":  # an InfrastructureError: the match failed, no result at all
        assert any(isinstance(e, MatchFailed) and "out-of-memory killer" in e.error for e in events)
        assert faults == {}
    else:  # a forfeit on the record, but not one of its own
        assert faults["crash"] >= 2


class LostWorker(Watched):
    """Every match of ``victim`` is lost with its worker, as the local pool reports one
    whose process died (a failed attempt, never a result)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = InProcessExecutor(handlers({"victim": lambda: polite_bot("victim")}))

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        kept = []
        for task in tasks:
            if "victim" in task.spec.table:
                on_event(MatchStarted(task.spec.key, 1))
                on_event(
                    MatchFailed(task.spec.key, "the worker process died (exit code -9)", 1, True)
                )
            else:
                kept.append(task)
        self.inner.run(kept, on_event)


def test_a_bot_whose_worker_is_lost_is_never_suspended(tmp_path: Path) -> None:
    path = league(tmp_path, "victim", knobs="suspend_after = 1")
    events = play(path, LostWorker(), 8, Clock())
    assert not suspended(events) and len(seated(path, "victim")) >= 2


def test_the_count_is_the_same_in_any_arrival_order_and_across_restarts(tmp_path: Path) -> None:
    whole = league(tmp_path / "whole")
    reference = suspended(play(whole, InProcessExecutor(handlers(CRASH)), 6, Clock()))
    reversed_path = league(tmp_path / "reversed")

    class Crashing(Reversed):
        def __init__(self) -> None:
            super().__init__()
            self.inner = InProcessExecutor(handlers(CRASH))

    assert suspended(play(reversed_path, Crashing(), 6, Clock())) == reference
    restarted = league(tmp_path / "restarted")
    clock, events = Clock(), list[Any]()
    for _ in range(6):  # a new run for every batch
        play(restarted, InProcessExecutor(handlers(CRASH)), 1, clock, events)
    assert suspended(events) == reference
    with Store(results(whole)) as a, Store(results(restarted)) as b:
        assert LeagueLedger(a).suspensions() == LeagueLedger(b).suspensions()


@pytest.mark.parametrize(
    ("kind", "detail", "own"),
    [
        ("crash", "the bot exited while a request was outstanding (exit code 1)", True),
        ("timeout", "no reply within 1000 ms (move_ms + bank left)", True),
        ("illegal", "7C is not in your hand", True),
        ("protocol", "reply is not valid JSON", True),
        (
            "crash",
            f"the bot exited while a request was outstanding (SIGKILL: {REFEREE_KILL})",
            False,
        ),
        ("crash", f"the bot closed its stdin or exited (SIGKILL: {UNCOUNTED_KILL})", False),
        ("left", "the person left the match", False),
        (None, None, False),
    ],
)
def test_own_fault_is_the_bots_doing_only(kind: str | None, detail: str | None, own: bool) -> None:
    assert own_fault(kind, detail) is own


class Waited(Exception):
    """The league began to wait for entrants."""


def test_a_league_left_too_small_by_a_suspension_says_so_while_it_waits(tmp_path: Path) -> None:
    path = write(tmp_path, ("b0", "b1", "b2", "crash"), "placement = 1\nsuspend_after = 3")
    events: list[LeagueEvent] = []

    def wait(seconds: float) -> None:
        raise Waited

    with pytest.raises(Waited):
        run_league(
            path,
            InProcessExecutor(handlers(CRASH)),
            batches=3,
            deal_secret=SECRET,
            clock=Clock(),
            on_event=events.append,
            wait=wait,
        )
    [held] = suspended(events)
    [waiting] = [e for e in events if isinstance(e, LeagueWaiting)]
    assert (waiting.entrants, waiting.suspended, waiting.table_size) == (3, 1, 4)
    assert held.batch == 1


def test_league_check_finds_a_suspension_its_results_do_not_explain(
    suspension: dict[str, Any], tmp_path: Path
) -> None:
    spec = load_tournament(suspension["path"])
    env = make_environment(spec.file.ratings, spec.rules)
    copy = tmp_path / "copy.results"
    shutil.copytree(results(suspension["path"]), copy)
    with Store(copy) as store:
        ledger = LeagueLedger(store)
        assert not check_league(ledger, env).problems  # the real one is what its results say
        [real] = ledger.suspensions()
        ledger.suspend(dataclasses.replace(real, label="b0"))  # b0 never forfeited
        store.connection.execute(
            "UPDATE league_suspensions SET since = 0 WHERE label = 'crash'"
        )  # and crash played while "suspended"
        problems = check_league(ledger, env).problems
    assert any(
        p.startswith(f"b0: suspended from batch {real.since} after 3 forfeits") for p in problems
    )
    assert "crash: has results while it was suspended (from batch 0)" in problems
