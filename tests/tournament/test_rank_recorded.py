"""The rank after play-offs is the folder's own: recorded in its plan, kept by a resumed run,
and what ``referee verify`` and publishing rank by (``referee.tournament.model.Plan``).

A folder stored before the rule was recorded has a plan without ``rank_after_playoffs``: it
was played off and published by ``mu - 3 sigma``, and keeps that rule. Such a folder is made
here as the old referee made it: the same run, with ``Tournament.plan`` giving a plan that
records nothing (so its play-offs are planned, and its plan chained, without the rule).
Tournaments are played in this process with in-memory bots (a second or so each).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.executors.base import AttemptEvent, Executor, MatchTask, SandboxPlan
from referee.publish.leaderboard import Leaderboard
from referee.publish.site import publish_site
from referee.publish.source import leaderboard, load_results
from referee.ranking.standings import RankingInput, standings
from referee.runs.tournament import kept_plan, run_tournament
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.model import Plan
from referee.tournament.store import Store
from referee.verify import verify_site
from referee.verify.audit import verify_results
from tests.tournament.test_rank_after_playoffs import _played_off

SECRET = bytes.fromhex("5e" * 32)
"""The deal secret of every run here: the same cards every time."""

NAMES = ("b0", "b1", "b2", "b3", "b4")
HANDLERS = {
    name: (lambda name=name, i=i: (polite_bot if i % 2 else lowest_bot)(name))
    for i, name in enumerate(NAMES)
}


def _write(folder: Path) -> Path:
    """Five bots (distinct files, so none are twins), four at a table, one deal, play-offs
    for the top 3 (20 scheduled matches, at most 16 play-off matches). Dealt with
    :data:`SECRET`, the order by mu and the order by mu - 3 sigma differ, both played as the
    old referee did (:func:`old_folder`) and as this one does (the tests check it)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in NAMES:
        (folder / f"{name}.py").write_text(f"# {name}: played in memory by the tests\n")
        entries.append(f'[[bots]]\npath = "{name}.py"\nname = "{name}"\n')
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 4\n'
        "deals = 1\nseed = 8\nplayoff = { top = 3, until = 0.99, budget = 16 }\n\n"
        + "\n".join(entries)
    )
    return path


class _Cut(Executor):
    """Plays the first ``count`` tasks of the whole run, then stops, as a killed run would."""

    max_attempts = 1

    def __init__(self, count: int) -> None:
        self.inner, self.left = InProcessExecutor(HANDLERS), count

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        return self.inner.prepare(backend, images)

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        played, self.left = tasks[: self.left], max(0, self.left - len(tasks))
        self.inner.run(played, on_event)


def _stored_plan(results: Path) -> dict[str, object]:
    with sqlite3.connect(results / "results.sqlite") as db:
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'plan'").fetchone()
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


def _set_stored_rank(results: Path, value: object) -> None:
    data = _stored_plan(results)
    data["rank_after_playoffs"] = value
    with sqlite3.connect(results / "results.sqlite") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'plan'", (json.dumps(data),))


@pytest.fixture(scope="module")
def old_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tournament begun by the old referee (its plan records no rule), cut in its
    play-offs, and resumed to the end by this one."""
    path = _write(tmp_path_factory.mktemp("old"))
    results = path.parent / "t.results"
    mp = pytest.MonkeyPatch()
    made = Tournament.plan
    mp.setattr(
        Tournament, "plan", lambda self: dataclasses.replace(made(self), rank_after_playoffs=None)
    )
    try:
        cut = run_tournament(load_tournament(path), _Cut(22), restart=True, deal_secret=SECRET)
    finally:
        mp.undo()
    assert cut.done == 22 and "rank_after_playoffs" not in _stored_plan(results)
    summary = run_tournament(load_tournament(path), InProcessExecutor(HANDLERS), deal_secret=SECRET)
    assert summary.done == summary.total > 22 and not summary.failed
    return path


def _orders(board: Leaderboard) -> tuple[list[str], list[str]]:
    """The entries by mu and by mu - 3 sigma."""
    by_mu = [e.name for e in sorted(board.entries, key=lambda e: -e.mu)]
    return by_mu, [e.name for e in sorted(board.entries, key=lambda e: -e.score)]


def test_a_new_tournament_records_mu_and_ranks_by_it(tmp_path: Path) -> None:
    path = _write(tmp_path)
    plan = load_tournament(path).plan()
    assert (plan.rank_after_playoffs, plan.playoff_rank()) == ("mu", "mu")
    assert json.loads(plan.to_json())["rank_after_playoffs"] == "mu"
    again = Plan.from_json(plan.to_json(), tmp_path)
    assert again == plan and again.to_json() == plan.to_json()
    run_tournament(load_tournament(path), InProcessExecutor(HANDLERS), deal_secret=SECRET)
    assert _stored_plan(path.parent / "t.results")["rank_after_playoffs"] == "mu"
    stored = load_results(load_tournament(path))
    board = leaderboard(stored)
    by_mu, by_score = _orders(board)
    assert by_mu != by_score, "the case: the two rules order this field differently"
    assert board.ranked_by == "mu" and [e.name for e in board.entries] == by_mu
    assert verify_results(path.parent / "t.results").ok
    publish_site(stored, tmp_path / "site")
    published = verify_site(tmp_path / "site")  # its leaderboard re-derived by mu
    assert published.ok and published.leaderboard, published.problems
    # The standings take the recorded rule: the hand-made case of test_rank_after_playoffs,
    # where y has the higher mu and x, played more, the higher mu - 3 sigma.
    given = RankingInput(tuple(_played_off()), ("m", "n", "x", "y"))
    new = standings(given)
    old = standings(dataclasses.replace(given, after_playoffs="conservative"))
    assert (new.ranked_by, old.ranked_by) == ("mu", "conservative")
    names = [e.name for e in new.entries]
    assert names.index("y") < names.index("x")
    names = [e.name for e in old.entries]
    assert names.index("x") < names.index("y")


def test_an_old_folder_keeps_mu_minus_3_sigma_through_resume_verify_and_publishing(
    old_folder: Path, tmp_path: Path
) -> None:
    results = old_folder.parent / "t.results"
    assert "rank_after_playoffs" not in _stored_plan(results), "the resumed run kept the plan"
    with Store(results, readonly=True) as store:
        assert kept_plan(load_tournament(old_folder), store).rank_after_playoffs is None
    stored = load_results(load_tournament(old_folder))
    assert any(m.spec.key.startswith("po/") for m in stored.matches)
    board = leaderboard(stored)
    by_mu, by_score = _orders(board)
    assert by_mu != by_score, "the case: the two rules order this field differently"
    assert board.ranked_by == "conservative" and [e.name for e in board.entries] == by_score
    found = verify_results(results)
    assert found.ok, found.problems
    site = tmp_path / "site"
    publish_site(stored, site)
    assert json.loads((site / "leaderboard.json").read_text())["ranked_by"] == "conservative"
    published = verify_site(site)  # its leaderboard re-derived by mu - 3 sigma
    assert published.ok and published.leaderboard, published.problems
    # The rule is bound by the chained plan: a site that claims mu is not the one played.
    plan_file = site / "verification" / "plan.json"
    plan_file.write_text(
        plan_file.read_text().replace('"rank_after_playoffs": null', '"rank_after_playoffs": "mu"')
    )
    assert any("the stored plan is not the one chained" in p for p in verify_site(site).problems)


def test_a_changed_or_garbage_rule_is_caught(old_folder: Path, tmp_path: Path) -> None:
    results = tmp_path / "t.results"
    shutil.copytree(old_folder.parent / "t.results", results)
    _set_stored_rank(results, "mu")  # an old folder made to claim the new rule
    assert any(
        "the stored plan is not the one chained" in p for p in verify_results(results).problems
    )
    for garbage in ("median\u0000", None, 3, ["mu"]):
        _set_stored_rank(results, garbage)
        with pytest.raises(
            UsageError, match=r"rank_after_playoffs is .*, not 'mu' or 'conservative'"
        ):
            verify_results(results)
    result = CliRunner().invoke(main, ["verify", str(results)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "rank_after_playoffs is ['mu']" not in result.output  # shown short
    assert "rank_after_playoffs is a list of 1" in result.output
    # A resumed run reads the stored rule before it plays anything: refused in one line.
    path = _write(tmp_path)
    with pytest.raises(UsageError, match="rank_after_playoffs"):
        run_tournament(load_tournament(path), InProcessExecutor(HANDLERS), deal_secret=SECRET)
    # On a site, the field's values are checked as every field is.
    site = tmp_path / "site"
    publish_site(load_results(load_tournament(old_folder)), site)
    plan_file = site / "verification" / "plan.json"
    plan_file.write_text(
        plan_file.read_text().replace(
            '"rank_after_playoffs": null', '"rank_after_playoffs": "median"'
        )
    )
    with pytest.raises(
        UsageError, match=r"plan.json: not what referee publish writes: rank_after_playoffs"
    ):
        verify_site(site)
