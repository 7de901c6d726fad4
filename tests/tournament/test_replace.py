"""Updating one entrant: ``referee tournament run FILE --replace NAME``.

A round robin of six fake bots at tables of three (so each deal is shared by two disjoint
tables, and the opponents of a replaced bot saw its tables' cards) is played in this
process; then one bot's files change and it is replaced. Only its tables are played again,
each on cards that none of its players has met in any stored match; the leaderboard counts
every kept match once; an interrupted replacement resumes; ``verify`` passes, and fails when
a retired result is counted again or a replay is deleted; the site shows the old version in
the bot's history; and a ``--replace`` that cannot mean anything is refused in one line.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.matchlog import read_log
from referee.publish.site import publish_site
from referee.publish.source import leaderboard, load_results
from referee.runs.tournament import RunStarted, run_tournament
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.replacement import replay_key, scheduled_key
from referee.tournament.store import Store
from referee.verify import verify_results, verify_site
from tests.tournament.verify_field import StopsAfter

NAMES = ("ann", "bob", "cat", "dan", "eve", "fay")
HANDLERS = {
    name: (lambda name=name, i=i: (polite_bot if i % 2 else lowest_bot)(name))
    for i, name in enumerate(NAMES)
}
TABLES, MINE = 20, 10  # C(6, 3) tables; those of one bot: C(5, 2)
TOTAL = TABLES * 3


def write(folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        (folder / f"{name}.py").write_text("# played in memory by the tests\n")
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\n'
        f"deals = 1\nseed = 5\n{extra}\n"
        + "\n".join(f'[[bots]]\npath = "{name}.py"\n' for name in NAMES)
    )
    return path


def change(path: Path, name: str, text: str = "# version 2\n") -> Tournament:
    (path.parent / f"{name}.py").write_text(text)
    return load_tournament(path)


def replace(path: Path, *names: str, executor: object = None) -> list[RunStarted]:
    started: list[RunStarted] = []
    run_tournament(
        load_tournament(path),
        executor or InProcessExecutor(HANDLERS),  # type: ignore[arg-type]
        replace=names,
        on_event=lambda e: started.append(e) if isinstance(e, RunStarted) else None,
    )
    return started


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished round robin, before any replacement."""
    path = write(tmp_path_factory.mktemp("replace"))
    summary = run_tournament(load_tournament(path), InProcessExecutor(HANDLERS))
    assert summary.done == summary.total == TOTAL
    return path


@pytest.fixture(scope="module")
def replaced(played: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tournament, ``cat`` replaced with new files and its tables played again."""
    path = tmp_path_factory.mktemp("replaced") / "t" / "t.toml"
    shutil.copytree(played.parent, path.parent)
    change(path, "cat")
    replace(path, "cat")
    return path


def results(path: Path) -> Path:
    return path.parent / "t.results"


def stored(path: Path) -> dict[str, tuple[tuple[str, ...], int | None, str]]:
    """Every stored match: its table, the replacement that retired it, and its status."""
    with Store(results(path)) as store:
        retired = store.retired()
        records = store.match_records()
        return {
            key: (spec.table, retired.get(key), records[key].status)
            for key, spec in store.specs().items()
        }


def first_hands(path: Path, key: str) -> frozenset[tuple[str, ...]]:
    """The cards of a match's first deal, whoever held them (a rotation holds the same)."""
    with Store(results(path)) as store:
        log = read_log(store.log_path(key))
    deal = next(line for line in log if line.get("type") == "deal")
    return frozenset(tuple(sorted(hand)) for hand in deal["hands"])


def sql(path: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    db = sqlite3.connect(results(path) / "results.sqlite")
    for statement, args in statements:
        db.execute(statement, args)
    db.commit()
    db.close()


# -- what a replacement plays ------------------------------------------------------------


def test_only_the_replaced_bots_tables_are_played_again(played: Path, replaced: Path) -> None:
    before, after = stored(played), stored(replaced)
    cat = {key for key, (table, _, _) in before.items() if "cat" in table}
    assert len(cat) == MINE * 3
    # Every other match is kept as it was; every match of cat's old version is retired.
    assert {key: r for key, r in after.items() if key in before and key not in cat} == {
        key: r for key, r in before.items() if key not in cat
    }
    assert {key for key, (_, retired, _) in after.items() if retired == 1} == cat
    # Each is played again, once, at the same table, and nothing else was added.
    replays = set(after) - set(before)
    assert replays == {replay_key(key, 1) for key in cat}
    for key in replays:
        table, retired, status = after[key]
        assert (table, retired, status) == (before[scheduled_key(key)][0], None, "done")
    with Store(results(played)) as old, Store(results(replaced)) as new:
        assert [m for m in old.completed() if m.spec.key not in cat] == [
            m for m in new.completed() if m.spec.key not in replays
        ]


def test_the_replays_are_dealt_cards_none_of_their_players_has_met(
    played: Path, replaced: Path
) -> None:
    """Every entrant's matches, retired ones included, each on cards of their own: the
    opponents of the replaced bot saw its old tables' cards, and (deals being shared by
    disjoint tables) other entrants saw them at other tables."""
    every = stored(replaced)
    held: dict[str, Counter[frozenset[tuple[str, ...]]]] = {name: Counter() for name in NAMES}
    with Store(results(replaced)) as store:
        specs = store.specs()
    for key, (table, _, _) in every.items():
        hands = first_hands(replaced, key)
        for name in table:
            held[name][hands] += 1
    for name, counts in held.items():
        assert max(counts.values()) == 1, f"{name} met the same cards twice"
    for key in (k for k in every if "/v1/" in k):
        old = specs[scheduled_key(key)]
        assert specs[key].deal_seed != old.deal_seed
        shared = [k for k, s in specs.items() if s.deal_id == old.deal_id and k != old.key]
        assert shared, "the old deal was shared with another table"
        assert first_hands(replaced, key) != first_hands(replaced, old.key)


def test_the_leaderboard_counts_every_kept_match_once(replaced: Path) -> None:
    board = leaderboard(load_results(load_tournament(replaced)))
    assert board.matches == TOTAL
    assert {e.name: e.matches for e in board.entries} == {name: MINE * 3 for name in NAMES}
    [version] = board.replaced
    assert (version.name, version.replacement, version.matches) == ("cat", 1, MINE * 3)
    data = board.as_dict()
    assert data["replaced"][0]["matches"] == MINE * 3
    assert any(note.startswith("Replaced: cat (replacement 1)") for note in data["notes"])


def test_a_replacement_verifies_and_chains_a_plan_link_before_its_replays(
    replaced: Path,
) -> None:
    found = verify_results(results(replaced))
    assert found.ok, found.problems
    assert found.retired == MINE * 3 and found.matches == TOTAL + MINE * 3
    with Store(results(replaced)) as store:
        links = store.chain()
    plans = [i for i, link in enumerate(links) if link.key is None]
    assert len(plans) == 2 and json.loads(links[plans[1]].entry)["replaced"][0][1] == "cat"
    assert all("/v1/" in (link.key or "") for link in links[plans[1] + 1 :])
    assert not any("/v1/" in (link.key or "") for link in links[: plans[1]])


# -- verify catches tampering ---------------------------------------------------------------


def _copy(path: Path, tmp_path: Path) -> Path:
    target = tmp_path / "t" / "t.toml"
    shutil.copytree(path.parent, target.parent)
    return target


def test_verify_fails_when_a_retired_result_counts_again(replaced: Path, tmp_path: Path) -> None:
    path = _copy(replaced, tmp_path)
    key = next(k for k, (_, retired, _) in stored(path).items() if retired == 1)
    sql(path, ("UPDATE matches SET retired = NULL WHERE key = ?", (key,)))
    found = verify_results(results(path))
    assert not found.ok
    assert any(
        f"{key}: played by 'cat' before its replacement 1, but still counted" in p
        for p in found.problems
    ), found.problems
    assert any(
        f"{replay_key(key, 1)}: in the results, but not in the schedule" in p
        for p in found.problems
    )


def test_verify_fails_when_a_kept_result_is_retired(replaced: Path, tmp_path: Path) -> None:
    path = _copy(replaced, tmp_path)
    key = next(
        k
        for k, (table, retired, _) in stored(path).items()
        if retired is None and "cat" not in table
    )
    sql(path, ("UPDATE matches SET retired = 1 WHERE key = ?", (key,)))
    found = verify_results(results(path))
    assert any(
        f"{key}: retired by replacement 1 of 'cat', who does not sit at it" in p
        for p in found.problems
    ), found.problems


def test_verify_fails_when_a_replay_is_deleted(replaced: Path, tmp_path: Path) -> None:
    path = _copy(replaced, tmp_path)
    key = next(k for k in stored(path) if "/v1/" in k)
    sql(
        path,
        ("DELETE FROM chain WHERE match_key = ?", (key,)),
        ("DELETE FROM results WHERE match_key = ?", (key,)),
        ("DELETE FROM matches WHERE key = ?", (key,)),
    )
    found = verify_results(results(path))
    assert any(
        f"{scheduled_key(key)}: retired by replacement 1, but its replay {key} is not in the "
        "results" in p
        for p in found.problems
    ), found.problems


def test_verify_fails_when_the_replacement_is_forgotten(replaced: Path, tmp_path: Path) -> None:
    """Removing the replacement and every trace of it in the store leaves the chain's plan
    link binding it."""
    path = _copy(replaced, tmp_path)
    sql(path, ("DELETE FROM replacements", ()), ("UPDATE matches SET retired = NULL", ()))
    found = verify_results(results(path))
    assert any("binds replacements other than the stored ones" in p for p in found.problems)


# -- resume, refusals, the other modes ------------------------------------------------------


def test_an_interrupted_replacement_resumes(played: Path, tmp_path: Path) -> None:
    path = _copy(played, tmp_path)
    change(path, "cat")
    first = replace(path, "cat", executor=StopsAfter(7))
    assert "made now" in first[0].replaced[0]
    replays = {k: status for k, (_, _, status) in stored(path).items() if "/v1/" in k}
    assert Counter(replays.values()) == {"done": 7, "pending": MINE * 3 - 7}
    # The same command again resumes it; so would a run without --replace.
    again = replace(path, "cat")
    assert "resumed" in again[0].replaced[0]
    every = stored(path)
    assert all(status == "done" for key, (_, _, status) in every.items() if "/v1/" in key)
    assert len(every) == TOTAL + MINE * 3
    with Store(results(path)) as store:
        assert [r.generation for r in store.replacements()] == [1]
        assert store.chain_head()[0] == TOTAL + MINE * 3  # each result chained once
    found = verify_results(results(path))
    assert found.ok, found.problems


def test_a_replacement_mid_tournament_retires_its_unplayed_matches_too(tmp_path: Path) -> None:
    """Replaced before its tables were all played: those still to play are retired too
    (what a replacement retires follows from the stored matches alone, played or not, so
    verify recomputes it) and played again like the others; the site and verify agree."""
    path = write(tmp_path / "t")
    run_tournament(load_tournament(path), StopsAfter(25))
    before = stored(path)
    unplayed = {
        k for k, (table, _, status) in before.items() if "cat" in table and status != "done"
    }
    assert unplayed and len(unplayed) < MINE * 3
    change(path, "cat")
    replace(path, "cat")
    after = stored(path)
    assert {k for k in unplayed if after[k][1] == 1} == unplayed
    assert all(after[replay_key(k, 1)][2] == "done" for k in unplayed)
    assert all(status == "done" for _, retired, status in after.values() if retired is None)
    found = verify_results(results(path))
    assert found.ok, found.problems
    assert found.retired == MINE * 3 - len(unplayed)
    site = tmp_path / "site"
    publish_site(load_results(load_tournament(path)), site)
    assert verify_site(site).ok


def test_a_replacement_without_a_change_or_of_nobody_is_refused(
    played: Path, tmp_path: Path
) -> None:
    path = _copy(played, tmp_path)
    with pytest.raises(
        UsageError,
        match=r"--replace 'zed': no entrant of the tournament has "
        r"that name \(its entrants: ann, bob, cat, dan, eve, fay\)",
    ):
        replace(path, "zed")
    with pytest.raises(UsageError) as hostile:
        replace(path, "\x1b[2J\u202ezed\n")
    assert "no entrant of the tournament" in str(hostile.value)
    assert not any(ch in str(hostile.value) for ch in "\x1b\u202e\n")
    with pytest.raises(
        UsageError,
        match=r"--replace 'cat': its files did not change since its "
        r"results were stored \(sha256 [0-9a-f]{12}…\): there is nothing",
    ):
        replace(path, "cat")
    change(path, "cat")
    with pytest.raises(
        UsageError,
        match="--replace keeps every other stored result and --restart discards them all",
    ):
        run_tournament(
            load_tournament(path), InProcessExecutor(HANDLERS), restart=True, replace=["cat"]
        )
    with pytest.raises(
        UsageError,
        match=r"'cat' changed since its results were stored .*"
        r"run with --replace cat to play its tables again",
    ):
        run_tournament(load_tournament(path), InProcessExecutor(HANDLERS), replace=())
    with pytest.raises(
        UsageError,
        match=r"; run with --restart to discard the stored results, "
        "or put the old files back$",
    ):  # a command without --replace
        run_tournament(load_tournament(path), InProcessExecutor(HANDLERS))
    assert verify_results(results(path)).ok  # nothing was changed by the refusals


def test_the_command_line_refuses_a_replace_in_one_line(played: Path, tmp_path: Path) -> None:
    path = _copy(played, tmp_path)
    result = CliRunner().invoke(main, ["tournament", "run", str(path), "--replace", "zed"])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "no entrant of the tournament" in result.output


@pytest.mark.parametrize(
    "extra",
    [
        'duplicate = "rotations"',
        "playoff = { top = 3, until = 0.95, budget = 30 }",
    ],
)
def test_replacements_in_other_modes_verify(tmp_path: Path, extra: str) -> None:
    """Rotations share a fresh deal per replayed table deal; play-off matches of the old
    version are retired, and the play-offs go on from the kept results. Two replacements,
    the second of a bot that shares tables with the first, replay the first's replays."""
    path = write(tmp_path / "t", extra)
    run_tournament(load_tournament(path), InProcessExecutor(HANDLERS))
    # (Few shared deals never settle an order: the play-offs spend their whole budget.)
    first, second = "cat", "dan"
    if "playoff" in extra:
        playoff = next(table for k, (table, _, _) in sorted(stored(path).items()) if k[:3] == "po/")
        first, second = playoff[:2]
    change(path, first)
    replace(path, first)
    change(path, second)
    replace(path, second)
    every = stored(path)
    both = [k for k, (table, _, _) in every.items() if "/v2/" in k and first in table]
    assert both and all(every[replay_key(k, 1)][1] == 2 for k in both)
    found = verify_results(results(path))
    assert found.ok, found.problems
    board = leaderboard(load_results(load_tournament(path)))
    assert [v.name for v in board.replaced] == [first, second]
    if "rotations" in extra:
        with Store(results(path)) as store:
            specs = store.specs()
        deals = Counter(specs[k].deal_id for k in every if "/v2/" in k)
        assert set(deals.values()) == {3}  # one new deal per replayed table deal
        assert board.matches == TOTAL
    else:
        with Store(results(path)) as store:
            retired = store.retired()
            assert any(k.startswith("po/") for k in retired)
            kept = [m for m in store.completed() if m.spec.key.startswith("po/")]
        assert all(m.spec.key not in retired for m in kept)


# -- publishing ------------------------------------------------------------------------------


def test_the_site_shows_the_old_version_in_the_bots_history_and_verifies(
    replaced: Path, tmp_path: Path
) -> None:
    tournament = load_tournament(replaced)
    stored_results = load_results(tournament)
    old = stored_results.replacements[0].old_sha256
    site = tmp_path / "site"
    publish_site(stored_results, site)
    page = (site / "bots" / "cat.html").read_text()
    history = page[page.index('<section id="history">') : page.index('<section id="matches">')]
    assert old in history and "replacement 1" in history
    assert history.count('<tr><td data-v="rr/') == MINE * 3  # its retired matches, listed
    other = (site / "bots" / "ann.html").read_text()
    assert old not in other and 'id="history"' in other  # ann's matches with the old cat
    listing = (site / "matches.html").read_text()
    assert listing.count("retired by replacement 1") == MINE * 3
    banners = [
        p for p in (site / "matches").glob("*.html") if "Retired by replacement 1" in p.read_text()
    ]
    assert len(banners) == MINE * 3 and all("_v1_" not in p.name for p in banners)
    found = verify_site(site)
    assert found.ok, found.problems
    assert found.leaderboard and found.retired == MINE * 3
    manifest = json.loads((site / "verification" / "manifest.json").read_text())
    assert sum(m["retired"] == 1 for m in manifest["matches"]) == MINE * 3


def test_a_site_with_a_retired_result_counted_again_fails(replaced: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    publish_site(load_results(load_tournament(replaced)), site)
    path = site / "verification" / "manifest.json"
    manifest = json.loads(path.read_text())
    entry = next(m for m in manifest["matches"] if m["retired"] == 1 and m["status"] == "done")
    entry["retired"] = None
    path.write_text(json.dumps(manifest))
    found = verify_site(site)
    assert any(
        f"{entry['key']}: played by 'cat' before its replacement 1" in p for p in found.problems
    ), found.problems
