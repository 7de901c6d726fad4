"""A league that never stops (:mod:`referee.runs.league`), played in this process with fake bots.

Ten bots at tables of four: the league runs, takes a new bot and a new version of an old
one while it runs (the file is read again as results arrive), places them, retires the old
version, and after being killed mid-batch goes on with every result kept once and nothing
played twice; its stored ratings are exactly a replay of its results; the results of a
batch arriving in another order change no rating and no later choice; the leaderboard's
work does not grow with the matches; and what a league file may not say is refused in one
line.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.executors import AttemptEvent, MatchStarted, MatchTask
from referee.publish.league import read_board
from referee.ranking.incremental import check_league
from referee.ranking.ratings import make_environment
from referee.runs.league import BatchSettled, EntrantsChanged, LeagueEvent, run_league
from referee.testing import InProcessExecutor
from referee.tournament.file import append_retirement, load_tournament
from referee.tournament.league import LeagueLedger, batch_of
from referee.tournament.store import Store
from tests.tournament.league_field import (
    NAMES,
    SECRET,
    Clock,
    Reversed,
    Watched,
    handlers,
    play,
    results,
    write,
)


def stored(path: Path) -> tuple[dict[str, Any], int, Counter[str]]:
    """Every version's record, the chain's result links, and each label's stored seats."""
    with Store(results(path)) as store:
        entrants = LeagueLedger(store).entrants()
        links = [link.key for link in store.chain() if link.key is not None]
        assert len(links) == len(set(links)), "a result chained twice"
        seats = Counter(name for (name,) in store.connection.execute("SELECT name FROM results"))
        done = store.done_keys()
    assert set(links) == done
    return entrants, len(links), seats


# --------------------------------------------------------------------------- the story


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A league that takes a new bot and a new version of b3 while it runs, then is killed
    in the middle of a batch and started again."""
    path = write(tmp_path_factory.mktemp("league"))
    clock = Clock()
    first = play(path, batches=2, clock=clock)

    def submit_two() -> None:
        (path.parent / "nova.py").write_text("# a newcomer\n")
        (path.parent / "b3-v2.py").write_text("# b3, second version\n")
        with path.open("a") as handle:
            handle.write('\n[[bots]]\npath = "nova.py"\nname = "nova"\n')
            handle.write('\n[[bots]]\npath = "b3-v2.py"\nname = "b3"\n')

    running = Watched(after=3, then=submit_two)
    second = play(path, running, batches=5, clock=clock)

    def kill() -> None:
        raise KeyboardInterrupt

    killed = Watched(after=13, then=kill)
    with pytest.raises(KeyboardInterrupt):
        play(path, killed, batches=5, clock=clock)
    with Store(results(path)) as store:
        open_batch = LeagueLedger(store).last_batch()
        done_before = store.done_keys()
    resumed = Watched()
    third = play(path, resumed, batches=2, clock=clock)
    return {
        "path": path,
        "first": first,
        "second": second,
        "third": third,
        "killed": killed,
        "resumed": resumed,
        "open": open_batch,
        "done_before": done_before,
    }


def test_the_league_plays_batches_of_disjoint_tables(story: dict[str, Any]) -> None:
    settled = [e for e in story["first"] if isinstance(e, BatchSettled)]
    assert [e.batch for e in settled] == [0, 1]
    assert all(e.played == 8 and e.failed == 0 for e in settled)  # 2 tables x 4 rotations
    with Store(results(story["path"])) as store:
        for batch in range(2):
            specs = [spec for spec, _, _ in LeagueLedger(store).batch_matches(batch)]
            tables = {spec.key.rsplit("/r", 1)[0]: set(spec.table) for spec in specs}
            seated = [label for table in tables.values() for label in table]
            assert len(seated) == len(set(seated)) == 8
            for table_id, bots in tables.items():  # every seat rotation of one table deal
                mine = sorted(s.rotation for s in specs if s.key.startswith(table_id + "/"))
                assert mine == [0, 1, 2, 3] and all(
                    set(s.table) == bots for s in specs if s.key.startswith(table_id + "/")
                )
            # A deal goes to disjoint tables: no bot meets the same cards twice.
            by_deal: dict[str, list[set[str]]] = {}
            for spec in specs:
                by_deal.setdefault(spec.deal_id, []).append(set(spec.table))
            for tables_of_deal in by_deal.values():
                assert len(tables_of_deal) == len({frozenset(t) for t in tables_of_deal})


def test_a_new_bot_and_a_new_version_are_taken_in_while_it_runs(story: dict[str, Any]) -> None:
    changed = [e for e in story["second"] if isinstance(e, EntrantsChanged)]
    assert len(changed) == 1
    change = changed[0]
    assert change.batch == 3  # picked up during batch 2, effective at the next one
    assert set(change.joined) == {"nova", "b3#2"}
    assert change.left == (("b3", "replaced by b3#2"),)
    entrants, _, seats = stored(story["path"])
    assert entrants["b3"].retired == 3 and entrants["b3"].retired_why == "replaced by b3#2"
    assert entrants["b3#2"].joined == entrants["nova"].joined == 3
    with Store(results(story["path"])) as store:
        for spec in store.specs().values():
            batch = batch_of(spec.key) or 0
            if "b3" in spec.table:
                assert batch < 3  # the old version never sits again
            if {"nova", "b3#2"} & set(spec.table):
                assert batch >= 3
    # Both were placed, then played on: the old version's results are all kept.
    assert entrants["nova"].placement >= 1 and entrants["b3#2"].placement >= 1
    assert seats["nova"] >= 8 and seats["b3#2"] >= 8
    assert seats["b3"] == entrants["b3"].matches > 0


def test_a_killed_league_resumes_its_batch_keeping_every_result_once(story: dict[str, Any]) -> None:
    open_batch = story["open"]
    assert open_batch is not None and open_batch.settled is None  # killed mid-batch
    resumed = story["resumed"].given
    left = 8 - sum(batch_of(key) == open_batch.batch for key in story["done_before"])
    assert 0 < left < 8
    assert [batch_of(key) for key in resumed[: left + 1]] == [open_batch.batch] * left + [
        open_batch.batch + 1
    ]
    assert not set(resumed) & story["done_before"]  # nothing played twice
    entrants, chained, seats = stored(story["path"])
    assert chained * 4 == sum(seats.values())
    assert all(e.matches == seats[label] for label, e in entrants.items())
    settled = [e for e in story["third"] if isinstance(e, BatchSettled)]
    assert settled[0].batch == open_batch.batch


def test_a_match_cut_off_by_the_kill_is_played_again_on_fresh_cards(tmp_path: Path) -> None:
    path = write(tmp_path)
    play(path, batches=1)
    first: list[str] = []

    class Killed(Watched):
        def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
            on_event(MatchStarted(tasks[0].spec.key, 1))  # the league marks it running
            first.append(tasks[0].spec.key)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        play(path, Killed(), batches=1)
    cut = first[0]
    with Store(results(path)) as store:
        scheduled = store.specs()[cut]
        assert store.match_records()[cut].status == "running"
    seen: dict[str, MatchTask] = {}

    class Seen(Watched):
        def order(self, tasks: Sequence[MatchTask]) -> Sequence[MatchTask]:
            seen.update({task.spec.key: task for task in tasks})
            return tasks

    play(path, Seen(), batches=1)
    again = seen[cut]
    assert again.first_attempt == 1
    assert again.spec.match_seed != scheduled.match_seed  # its bots saw the first cards
    assert all(task.first_attempt == 0 for key, task in seen.items() if key != cut)


def test_the_stored_ratings_are_a_full_replay_of_the_results(story: dict[str, Any]) -> None:
    with Store(results(story["path"])) as store:
        found = check_league(LeagueLedger(store), make_environment())
        entrants = LeagueLedger(store).entrants()
    assert found.problems == ()
    assert found.drift == () and found.open_matches == 0
    assert found.matches == sum(e.matches for e in entrants.values()) // 4
    assert all((e.mu, e.sigma) == (e.settled_mu, e.settled_sigma) for e in entrants.values())


def test_a_tampered_rating_is_reported_by_the_check(story: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(results(story["path"]), copy)
    with sqlite3.connect(copy / "results.sqlite") as db:
        db.execute(
            "UPDATE league_entrants SET settled_mu = settled_mu + 0.5, matches = matches + 1 WHERE label = 'b1'"
        )
    with Store(copy) as store:
        found = check_league(LeagueLedger(store), make_environment())
    assert any(p.startswith("b1: settled rating") for p in found.problems)
    assert any(p.startswith("b1: matches stored as") for p in found.problems)


def test_results_arriving_in_another_order_change_no_rating_and_no_choice(tmp_path: Path) -> None:
    """Each table's results arrive last rotation first: every table is rated again when
    settled, and the league plans, keys and rates exactly as the one that got them in order."""
    runs = {}
    for name, executor in (("ordered", Watched()), ("reversed", Reversed())):
        path = write(tmp_path / name)
        events = play(path, executor, batches=4)
        again = [e.rated_again for e in events if isinstance(e, BatchSettled)]
        with Store(results(path)) as store:
            ledger = LeagueLedger(store)
            runs[name] = (
                sorted(store.specs()),
                {
                    label: (e.settled_mu, e.settled_sigma, e.mu, e.sigma)
                    for label, e in ledger.entrants().items()
                },
                again,
            )
    assert runs["ordered"][0] == runs["reversed"][0]
    assert runs["ordered"][1] == runs["reversed"][1]
    assert runs["ordered"][2] == [0, 0, 0, 0] and runs["reversed"][2] == [2, 2, 2, 2]


def test_the_leaderboard_does_the_same_work_after_many_more_matches(tmp_path: Path) -> None:
    """Count the work, not the time: the SQLite instructions the board runs, and TrueSkill."""
    work = {}
    for batches in (1, 6):
        path = write(tmp_path / f"b{batches}")
        play(path, batches=batches)
        tournament = load_tournament(path)
        steps = Counter[str]()
        with Store(results(path), readonly=True) as store:
            store.connection.set_progress_handler(lambda steps=steps: steps.update(["vm"]), 1)  # type: ignore[misc]
            board = read_board(tournament, LeagueLedger(store, readonly=True), store)
            store.connection.set_progress_handler(None, 1)
        assert board.matches == batches * 8
        work[batches] = steps["vm"]
    assert work[1] == work[6] > 0


def test_a_retired_entrant_leaves_at_the_next_batch(tmp_path: Path) -> None:
    path = write(tmp_path)
    play(path, batches=1)
    version = append_retirement(path, "b7")
    assert version.label == "b7"
    events = play(path, batches=2)
    change = next(e for e in events if isinstance(e, EntrantsChanged))
    assert change.left == (("b7", "retired"),) and change.batch == 1
    with Store(results(path)) as store:
        assert all(
            "b7" not in spec.table
            for key, spec in store.specs().items()
            if (batch_of(key) or 0) >= 1
        )
    with pytest.raises(UsageError, match="already retired"):
        append_retirement(path, "b7")
    with pytest.raises(UsageError, match="is not an entrant"):
        append_retirement(path, "nobody")
    board = CliRunner().invoke(main, ["leaderboard", str(path), "--format", "csv"])
    assert board.exit_code == 0, board.output
    assert '"b7","b7","1"' in board.output and '"yes","1","retired"' in board.output


def test_an_entrant_changed_in_place_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path)
    play(path, batches=1)
    (tmp_path / "b2.py").write_text("# changed behind the league's back\n")
    with pytest.raises(UsageError) as caught:
        play(path, batches=1)
    message = str(caught.value)
    assert "'b2' changed since it joined the league" in message
    assert "referee submit" in message and "\n" not in message


def test_a_league_too_small_for_a_table_waits_for_entrants(tmp_path: Path) -> None:
    path = write(tmp_path, NAMES[:3])
    waited: list[float] = []

    def wait(seconds: float) -> None:
        waited.append(seconds)
        if len(waited) == 2:
            (tmp_path / "late.py").write_text("# the fourth\n")
            with path.open("a") as handle:
                handle.write('\n[[bots]]\npath = "late.py"\nname = "late"\n')

    events: list[LeagueEvent] = []
    run_league(
        path,
        InProcessExecutor(handlers("late")),
        batches=1,
        deal_secret=SECRET,
        clock=Clock(),
        wait=wait,
        on_event=events.append,
    )
    assert waited == [1.0, 1.0]
    assert sum(isinstance(e, BatchSettled) for e in events) == 1


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ('[[bots]]\npath = "x.py"\n', "bots[3]: name: required in a league"),
        ('[[bots]]\npath = "x.py"\nname = "x#2"\n', "ends in '#' and a number"),
        (
            '[[bots]]\npath = "x.py"\nname = "x"\nretired = true\n',
            "has no version in the league before",
        ),
        ("deals = 2\n", 'deals: not allowed when format = "league"'),
        ('tables = "balanced"\n', 'tables: not allowed when format = "league"'),
        ("playoff = { top = 2, budget = 10 }\n", 'playoff: not allowed when format = "league"'),
    ],
)
def test_what_a_league_file_may_not_say_is_refused(
    tmp_path: Path, change: str, expected: str
) -> None:
    path = write(tmp_path, NAMES[:3])
    text = path.read_text()
    if change.startswith("[[bots]]"):
        text += change
    else:
        text = text.replace('format = "league"\n', f'format = "league"\n{change}')
    path.write_text(text)
    (tmp_path / "x.py").write_text("#\n")
    with pytest.raises(UsageError) as caught:
        load_tournament(path)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("placement = -1", "league.placement: got -1; allowed: 0 to 100"),
        ("max_share = 0.5", "league.max_share: got 0.5; allowed: 1 to 1000"),
        ("fair_share = 0", "league.fair_share: got 0; allowed: above 0, up to 1"),
        ('window_minutes = "hour"', "league.window_minutes: got 'hour' (text)"),
        ("batch = 1.5", "league.batch: got 1.5; use a whole number"),
        ("newcomers = 2", "unknown key 'league.newcomers'"),
    ],
)
def test_odd_league_settings_are_refused_by_name(
    tmp_path: Path, setting: str, expected: str
) -> None:
    path = write(tmp_path, NAMES[:3])
    path.write_text(path.read_text().replace("placement = 1\n", f"{setting}\n"))
    with pytest.raises(UsageError) as caught:
        load_tournament(path)
    assert expected in str(caught.value)


def test_league_keys_are_refused_outside_a_league(tmp_path: Path) -> None:
    path = write(tmp_path, NAMES[:4])
    path.write_text(path.read_text().replace('format = "league"', 'format = "round-robin"'))
    with pytest.raises(UsageError, match='league: only allowed when format = "league"'):
        load_tournament(path)
    text = path.read_text().replace("[league]\npoll_seconds = 1\nplacement = 1\n", "")
    path.write_text(text + "retired = true\n")
    with pytest.raises(UsageError, match="retired: only a league"):
        load_tournament(path)


def test_the_commands_know_a_league(tmp_path: Path) -> None:
    path = write(tmp_path)
    runner = CliRunner()
    none_yet = runner.invoke(main, ["leaderboard", str(path)])
    assert none_yet.exit_code == 2 and "referee league run" in none_yet.output
    play(path, batches=1)
    board = runner.invoke(main, ["leaderboard", str(path), "--format", "json"])
    assert board.exit_code == 0, board.output
    assert '"batches": 1' in board.output and '"matches": 8' in board.output
    check = runner.invoke(main, ["league", "check", str(path)])
    assert check.exit_code == 0, check.output
    assert "ok: the settled ratings and every record are the replay's" in check.output
    refused = runner.invoke(main, ["tournament", "run", str(path)])
    assert refused.exit_code == 2 and "referee league run" in refused.output
    verify = runner.invoke(main, ["verify", str(path)])
    assert verify.exit_code == 2 and "referee league check" in verify.output
    retire = runner.invoke(main, ["league", "retire", str(path), "b1"])
    assert retire.exit_code == 0 and "retired: b1" in retire.output
    started = [e for e in play(path, Watched(), batches=1) if isinstance(e, MatchStarted)]
    assert started


# --------------------------------------------------------------------------- submit


def passing_check(staged: Any, sandbox: Any, ruleset: Any, seats: int, **kw: Any) -> Any:
    """Stands in for bot check's steps (the slow tests run them for real)."""
    from referee.match.compliance import CheckReport, Step

    return CheckReport(
        staged.name,
        str(staged.folder),
        sandbox.name,
        kw["time_control"],
        kw["limits"],
        steps=[Step("handshake")],
    )


def test_submitting_under_a_taken_name_enters_a_new_version(tmp_path: Path) -> None:
    from referee.errors import Refused
    from referee.submit import submit

    path = write(tmp_path / "league")
    bot = tmp_path / "b3-next.py"
    bot.write_text("# b3, rewritten\n")
    entered = submit(bot, load_tournament(path), name="b3", check=passing_check)
    assert entered.version is not None
    assert (entered.version.label, entered.version.version) == ("b3#2", 2)
    league = load_tournament(path)
    assert "b3#2" in league.entrants and "b3" not in league.entrants
    assert path.read_text().count('name = "b3"') == 2
    with pytest.raises(Refused, match="a new version must change something"):
        submit(bot, load_tournament(path), name="b3", check=passing_check)
    with pytest.raises(UsageError, match="looks like 'b3'"):
        submit(tmp_path / "b3-next.py", load_tournament(path), name="B3", check=passing_check)
    append_retirement(path, "b4")
    back = tmp_path / "b4-back.py"
    back.write_text("# b4, back\n")
    returned = submit(back, load_tournament(path), name="b4", check=passing_check)
    assert returned.version is not None and returned.version.label == "b4#2"
    assert "b4#2" in load_tournament(path).entrants


def test_an_entrant_written_while_the_league_starts_is_taken_in(tmp_path: Path) -> None:
    """A server enters a bot between the league's reading of its file and its start: the
    first poll reads the file again, rather than taking its new stat for the one read."""
    path = write(tmp_path)

    class EnteredMeanwhile(InProcessExecutor):
        def prepare(self, backend: str, images: tuple[str, ...]) -> Any:
            (tmp_path / "late.py").write_text("# entered while the league started\n")
            with path.open("a") as handle:
                handle.write('\n[[bots]]\npath = "late.py"\nname = "late"\n')
            return super().prepare(backend, images)

    events: list[LeagueEvent] = []
    run_league(
        path,
        EnteredMeanwhile(handlers("late")),
        batches=3,
        deal_secret=SECRET,
        clock=Clock(),
        on_event=events.append,
    )
    joined = [e for e in events if isinstance(e, EntrantsChanged) and "late" in e.joined]
    assert joined, [type(e).__name__ for e in events]
