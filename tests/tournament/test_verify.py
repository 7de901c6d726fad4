"""``referee verify`` against a tampered results folder: every change it must catch.

A second red team found that verify passed a deleted match, a match marked failed, two
seats' names swapped, bots swapped in the stored tables (the last bot then ranked first),
added faults, and a log made up from the stored seed. Each is done here to a finished
tournament, played in this process with fake bots, and verify must name it. The results
chain and the plan it binds are checked here too; the beacon in ``test_beacon.py``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.executors.base import (
    AttemptEvent,
    Executor,
    MatchFailed,
    MatchStarted,
    MatchTask,
    SandboxPlan,
)
from referee.matchlog import read_log
from referee.runs.tournament import ResultStored, run_tournament
from referee.testing import InProcessExecutor, polite_bot
from referee.tournament import chain
from referee.tournament.deals import redeal_seed
from referee.tournament.file import load_tournament
from referee.tournament.store import Store
from referee.verify.audit import verify_results
from tests.tournament.verify_field import HANDLERS, NAMES, StopsAfter, write


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A finished round robin of 8 bots at 4 (deals shared by pairs of disjoint tables),
    and every results-chain head printed during its run."""
    path = write(tmp_path_factory.mktemp("verify"))
    heads: list[str] = []
    summary = run_tournament(
        load_tournament(path),
        InProcessExecutor(HANDLERS),
        on_event=lambda e: heads.append(e.head) if isinstance(e, ResultStored) else None,
    )
    assert summary.done == summary.total == 70 * 4 and not summary.failed
    assert summary.chain_head == heads[-1] and summary.chain_results == 280
    return path, heads


def copy(finished: tuple[Path, list[str]], tmp_path: Path) -> Path:
    results = tmp_path / "t.results"
    shutil.copytree(finished[0].parent / "t.results", results)
    return results


def sql(results: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    db = sqlite3.connect(results / "results.sqlite")
    for statement, args in statements:
        db.execute(statement, args)
    db.commit()
    db.close()


def keys(results: Path) -> list[str]:
    db = sqlite3.connect(results / "results.sqlite")
    found = sorted(k for (k,) in db.execute("SELECT key FROM matches"))
    db.close()
    return found


def test_an_honest_tournament_verifies_with_every_head_printed(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, heads = finished
    found = verify_results(path.parent / "t.results", heads=[heads[0], heads[99], heads[-1]])
    assert found.ok, found.problems
    assert (found.matches, found.scheduled, found.chain_results) == (280, 280, 280)
    result = CliRunner().invoke(main, ["verify", str(path), "--head", heads[-1]])
    assert result.exit_code == 0, result.output
    assert f"results chain: 280 results, head {heads[-1]}" in result.output
    file_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    assert (
        f"tournament file: the one given (sha256 {file_sha256}) is the one the results were "
        "played with"
    ) in result.output
    alone = CliRunner().invoke(main, ["verify", str(path.parent / "t.results")])
    assert alone.exit_code == 0, alone.output
    assert (
        f"tournament file: not given; checked against the plan stored with the results (file "
        f"sha256 {file_sha256}), which the results chain binds: compare that with the file as "
        "published, or give it with --file"
    ) in alone.output


def test_a_deleted_match_is_missing(finished: tuple[Path, list[str]], tmp_path: Path) -> None:
    results = copy(finished, tmp_path)
    key = keys(results)[7]
    sql(
        results,
        ("DELETE FROM chain WHERE match_key = ?", (key,)),
        ("DELETE FROM results WHERE match_key = ?", (key,)),
        ("DELETE FROM matches WHERE key = ?", (key,)),
    )
    problems = verify_results(results).problems
    assert f"{key}: scheduled, but not in the results" in problems


def test_a_match_marked_failed_is_not_played(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    results = copy(finished, tmp_path)
    key = keys(results)[3]
    sql(results, ("UPDATE matches SET status = 'failed' WHERE key = ?", (key,)))
    problems = verify_results(results).problems
    assert f"{key}: scheduled, but failed (not played to the end)" in problems


def test_two_seats_names_swapped_disagree_with_the_log(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    results = copy(finished, tmp_path)
    key = keys(results)[5]
    db = sqlite3.connect(results / "results.sqlite")
    (a, na), (b, nb) = db.execute(
        "SELECT seat, name FROM results WHERE match_key = ? ORDER BY seat LIMIT 2", (key,)
    ).fetchall()
    db.close()
    sql(
        results,
        ("UPDATE results SET name = ? WHERE match_key = ? AND seat = ?", (nb, key, a)),
        ("UPDATE results SET name = ? WHERE match_key = ? AND seat = ?", (na, key, b)),
    )
    problems = verify_results(results).problems
    assert any(p.startswith(key) and "stored standings" in p for p in problems)


def test_bots_swapped_in_a_stored_table_are_not_the_schedule(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    results = copy(finished, tmp_path)
    key = keys(results)[9]
    db = sqlite3.connect(results / "results.sqlite")
    (text,) = db.execute("SELECT spec FROM matches WHERE key = ?", (key,)).fetchone()
    db.close()
    spec = json.loads(text)
    spec["table"] = [spec["table"][1], spec["table"][0], *spec["table"][2:]]
    sql(results, ("UPDATE matches SET spec = ? WHERE key = ?", (json.dumps(spec), key)))
    problems = verify_results(results).problems
    assert any(p.startswith(f"{key}: stored at the table") for p in problems)


def test_an_added_fault_is_not_in_the_log(finished: tuple[Path, list[str]], tmp_path: Path) -> None:
    results = copy(finished, tmp_path)
    key = keys(results)[11]
    sql(
        results,
        (
            "UPDATE results SET fault_kind = 'timeout', fault_detail = 'slow' "
            "WHERE match_key = ? AND seat = 0",
            (key,),
        ),
    )
    problems = verify_results(results).problems
    assert f"{key}: the stored faults differ from the log's" in problems


def test_an_extra_match_is_not_in_the_schedule(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    results = copy(finished, tmp_path)
    key = keys(results)[0]
    db = sqlite3.connect(results / "results.sqlite")
    row = db.execute("SELECT spec, secret_id FROM matches WHERE key = ?", (key,)).fetchone()
    db.close()
    spec = json.loads(row[0])
    spec["key"] = key.replace("/d000/", "/d001/")
    sql(
        results,
        (
            "INSERT INTO matches (key, spec, secret_id) VALUES (?, ?, ?)",
            (spec["key"], json.dumps(spec), row[1]),
        ),
    )
    problems = verify_results(results).problems
    assert f"{spec['key']}: in the results, but not in the schedule" in problems


def test_a_log_made_up_from_the_stored_seed_breaks_the_chain_seen_during_the_run(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """The organiser replays a match with other decisions on its stored seed, stores what
    the new log says and rebuilds the whole chain: everything agrees, except the heads
    everyone saw while the tournament ran."""
    import asyncio

    from referee.match.runner import play_match
    from referee.protocol.seats import seated
    from referee.results import MatchResult
    from referee.testing import FakeSandbox, spec

    results = copy(finished, tmp_path)
    path, heads = finished
    with Store(results) as store:
        target = next(m for m in store.completed() if m.seats[0].name != m.spec.table[0])
        key = target.spec.key
        rules = load_tournament(path).rules
        swapped = {n: (lambda n=n: _passer(n)) for n in NAMES}  # other decisions
        log = store.log_path(key)
        before = log.read_bytes()

        async def go() -> MatchResult:
            bots = [spec(n) for n in target.spec.table]
            async with seated(bots, sandbox=FakeSandbox(swapped)) as table:
                return await play_match(
                    table, rules, target.spec.match_seed, match_id=key, log_path=log
                )

        result = asyncio.run(go())
    assert log.read_bytes() != before
    places = {st.seat: st for st in result.standings}
    rows = [(places[s].place, places[s].score, key, s) for s in places]
    sql(
        results,
        *(
            ("UPDATE results SET place = ?, score = ? WHERE match_key = ? AND seat = ?", r)
            for r in rows
        ),
    )
    _rebuild_chain(results)
    assert verify_results(results).ok  # the made-up log replays and the chain is whole...
    problems = verify_results(results, heads=[heads[-1]]).problems  # ...but not the one seen
    assert problems == [f"the head {heads[-1]} printed during the run is not in the chain"]


def _passer(name: str):  # type: ignore[no-untyped-def]
    """Passes whenever it may, else plays like ``polite``."""
    inner = polite_bot(name)

    def handle(msg):  # type: ignore[no-untyped-def]
        if msg.get("type") == "act" and msg["kind"] == "play" and [] in msg["legal"]:
            return {"id": msg["id"], "cards": []}
        return inner(msg)

    return handle


def _rebuild_chain(results: Path) -> None:
    """What a cheating organiser would do: recompute every link from the stored results."""
    db = sqlite3.connect(results / "results.sqlite")
    (commitment,) = db.execute("SELECT commitment FROM deal_secrets ORDER BY id").fetchone()
    links = db.execute("SELECT position, match_key, entry FROM chain ORDER BY position").fetchall()
    head = chain.genesis(commitment)
    for position, key, entry in links:
        if key is None:  # a plan link: kept as it is
            head = chain.next_head(head, entry)
            db.execute("UPDATE chain SET head = ? WHERE position = ?", (head, position))
            continue
        data = json.loads(entry)
        seats = db.execute(
            "SELECT seat, name, place, score, forfeit, fault_kind FROM results "
            "WHERE match_key = ? ORDER BY seat",
            (key,),
        ).fetchall()
        log = (results / "logs" / f"{key.replace('/', '_')}.jsonl").read_bytes()
        entry = chain.entry_text(
            key,
            data["attempt"],
            int(data["seed"]),
            chain.log_digest(log),
            [(s, n, p, sc, bool(f), k) for s, n, p, sc, f, k in seats],
        )
        head = chain.next_head(head, entry)
        db.execute(
            "UPDATE chain SET entry = ?, head = ? WHERE position = ?", (entry, head, position)
        )
    db.commit()
    db.close()


def test_a_changed_plan_is_caught_against_the_published_file(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    results = copy(finished, tmp_path)
    path, _ = finished
    published = load_tournament(path).plan()
    db = sqlite3.connect(results / "results.sqlite")
    (text,) = db.execute("SELECT value FROM meta WHERE key = 'plan'").fetchone()
    db.close()
    plan = json.loads(text)
    plan["file"] = plan["file"].replace("seed = 11", "seed = 12")
    sql(results, ("UPDATE meta SET value = ? WHERE key = 'plan'", (json.dumps(plan),)))
    found = verify_results(results, plan=published)
    assert (
        "the tournament file given is not the one the results were played with (the stored copy differs)"
        in found.problems
    )


def _stored_plan(results: Path) -> dict:  # type: ignore[type-arg]
    db = sqlite3.connect(results / "results.sqlite")
    (text,) = db.execute("SELECT value FROM meta WHERE key = 'plan'").fetchone()
    db.close()
    return json.loads(text)  # type: ignore[no-any-return]


def _store_plan(results: Path, plan: dict) -> None:  # type: ignore[type-arg]
    text = json.dumps(plan, ensure_ascii=False, sort_keys=True)
    sql(results, ("UPDATE meta SET value = ? WHERE key = 'plan'", (text,)))


def test_the_chain_starts_with_the_plan(finished: tuple[Path, list[str]]) -> None:
    path, _ = finished
    with Store(path.parent / "t.results") as store:
        first, *rest = store.chain()
        entrants = store.entrants()
    assert first.key is None and all(link.key is not None for link in rest)
    entry = json.loads(first.entry)
    assert entry["file"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry["entrants"] == {name: e.sha256 for name, e in entrants.items()}
    assert entry["settings"] == load_tournament(path).settings()


def test_a_changed_stored_plan_with_an_untouched_chain_fails_without_the_file(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """A plan edited after the run so the schedule fits the results (here only a comment,
    which changes no match): the chain's plan link is no longer the stored plan."""
    results = copy(finished, tmp_path)
    plan = _stored_plan(results)
    plan["file"] += "\n# seen to it afterwards\n"
    _store_plan(results, plan)
    assert verify_results(results).problems == [
        "results chain 1: the stored plan is not the one chained (they differ in the "
        "tournament file): it was changed afterwards"
    ]
    authors = copy(finished, tmp_path / "authors")
    plan = _stored_plan(authors)
    plan["authors"]["ann"] = plan["authors"]["bob"]  # one author: then never at one table
    _store_plan(authors, plan)
    problems = verify_results(authors).problems
    assert (
        "results chain 1: the stored plan is not the one chained (they differ in the entrants "
        "or their authors, the settings): it was changed afterwards"
    ) in problems


def test_a_changed_plan_chained_anew_misses_the_heads_seen(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """The organiser changes the plan and rebuilds the whole chain from it: it verifies on
    its own, but the head printed when the run started (and every later one) is gone."""
    results = copy(finished, tmp_path)
    _, heads = finished
    plan = _stored_plan(results)
    plan["file"] += "\n# seen to it afterwards\n"
    _store_plan(results, plan)
    with Store(results) as store:
        from referee.tournament.model import Plan

        entry = chain.plan_entry(
            Plan.from_json(json.dumps(plan), results),
            {n: e.sha256 for n, e in store.entrants().items()},
        )
    sql(results, ("UPDATE chain SET entry = ? WHERE position = 1", (entry,)))
    _rebuild_chain(results)
    assert verify_results(results).ok
    problems = verify_results(results, heads=[heads[0]]).problems
    assert problems == [f"the head {heads[0]} printed during the run is not in the chain"]


def test_a_chain_without_its_plan_link_fails(
    finished: tuple[Path, list[str]], tmp_path: Path
) -> None:
    results = copy(finished, tmp_path)
    sql(results, ("DELETE FROM chain WHERE match_key IS NULL", ()))
    _rebuild_chain(results)
    problems = verify_results(results).problems
    assert problems[-1].endswith("is a result before the plan")
    assert problems[-1].startswith("results chain 2: ")


def test_a_run_with_another_plan_chains_it_and_verifies(tmp_path: Path) -> None:
    path = write(tmp_path / "t", bots=NAMES[:5])
    run_tournament(load_tournament(path), InProcessExecutor(HANDLERS))
    run_tournament(load_tournament(path), InProcessExecutor(HANDLERS))  # the same plan
    path.write_text(path.read_text().replace("deals = 1", "deals = 2"))
    tournament = load_tournament(path)
    run_tournament(tournament, InProcessExecutor(HANDLERS))
    with Store(tournament.results_dir) as store:
        links = store.chain()
    plan_links = [link.position for link in links if link.key is None]
    assert plan_links == [1, 22]  # 20 results of the first plan, then the second
    found = verify_results(tournament.results_dir, plan=tournament.plan())
    assert found.ok, found.problems
    assert found.chain_results == 40


# -- fresh cards for every attempt that did not finish --------------------------------


class _FailsFirst(Executor):
    """Fails the first attempt of every ``every``-th task on our side, then plays it."""

    max_attempts = 3

    def __init__(self, every: int = 5) -> None:
        self.inner = InProcessExecutor(HANDLERS)
        self.every = every
        self.seeds: dict[str, list[int]] = {}

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        return self.inner.prepare(backend, images)

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        played: list[MatchTask] = []
        for i, task in enumerate(tasks):
            self.seeds[task.spec.key] = [task.spec.match_seed]
            if i % self.every == 0:
                on_event(MatchStarted(task.spec.key, 1))
                on_event(MatchFailed(task.spec.key, "a worker died", 1, False))
                retry = task.attempt(2)
                self.seeds[task.spec.key].append(retry.spec.match_seed)
                played.append(retry)
            else:
                played.append(task)
        self.inner.run(played, lambda e: on_event(_second(e, tasks, self.every)))


def _second(event: AttemptEvent, tasks: Sequence[MatchTask], every: int) -> AttemptEvent:
    from dataclasses import replace

    from referee.executors.base import MatchFinished

    retried = {t.spec.key for i, t in enumerate(tasks) if i % every == 0}
    if event.key in retried and isinstance(event, MatchStarted | MatchFinished):
        return replace(event, attempt=2)
    return event


def test_a_retried_match_gets_fresh_cards_and_verifies(tmp_path: Path) -> None:
    path = write(tmp_path / "t")
    executor = _FailsFirst()
    summary = run_tournament(load_tournament(path), executor)
    assert summary.done == summary.total and not summary.failed
    retried = [seeds for seeds in executor.seeds.values() if len(seeds) == 2]
    assert retried and all(first != second for first, second in retried)
    with Store(tmp_path / "t" / "t.results") as store:
        attempts = store.deal_attempts()
        secret = store.deal_secrets()[0]
        for key, seeds in executor.seeds.items():
            assert attempts[key] == len(seeds) - 1
            logged = read_log(store.log_path(key))[0]["seed"]
            assert logged == seeds[-1]
            if len(seeds) == 2:
                assert logged == redeal_seed(secret.key, 11, key, 1)
    assert verify_results(tmp_path / "t" / "t.results").ok


def test_a_match_started_by_a_killed_run_is_played_on_fresh_cards(tmp_path: Path) -> None:
    tournament = load_tournament(write(tmp_path / "t"))
    run_tournament(tournament, StopsAfter(10))
    with Store(tournament.results_dir) as store:
        pending = sorted(set(store.specs()) - store.done_keys())
        store.mark_running(pending[0])  # handed to a worker when the coordinator was killed
        secret = store.deal_secrets()[0]
    run_tournament(tournament, InProcessExecutor(HANDLERS))
    with Store(tournament.results_dir) as store:
        assert store.deal_attempts()[pending[0]] == 1 and store.deal_attempts()[pending[1]] == 0
        logged = read_log(store.log_path(pending[0]))[0]["seed"]
        assert logged == redeal_seed(secret.key, 11, pending[0], 1)
        assert logged != store.specs()[pending[0]].deal_seed
    assert verify_results(tournament.results_dir).ok
