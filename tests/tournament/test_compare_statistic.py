"""``referee compare --statistic``: what a deal is scored by, its default per rules, and that
a results folder keeps its own (resumed, verified, old and hostile folders).

The runs use :class:`referee.testing.InProcessExecutor` (fake bots, the real coordinator,
runner, store and logs), at tables of 3.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.cli.compare import _test_settings
from referee.errors import UsageError
from referee.ranking.sprt import PairedDeals, Sprt
from referee.ranking.statistics import (
    HYPOTHESES,
    default_statistic,
    round_places,
    version_score,
)
from referee.rules import RuleSet
from referee.runs.comparison import run_comparison, stored_settings
from referee.specs import MatchSpec, StoredMatch, StoredSeat
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.model import CompareSettings, Statistic
from referee.tournament.rounds import load_rounds
from referee.tournament.store import Store
from referee.verify.audit import verify_results

from .compare_field import compare_field
from .test_compare import careless_bot

SECRET = b"s" * 32


# ------------------------------------------------------------------------ the statistic


def _match(version: str, rotation: int, place: int, *, forfeit: bool = False) -> StoredMatch:
    """A match of deal 0 at a table of 3 with ``version`` in seat 0 at ``place``."""
    spec = MatchSpec(
        key=f"cmp/d00000/{'new' if version == 'new' else 'old'}/r{rotation}",
        table=(version, "x", "y"),
        deal=0,
        rotation=rotation,
        deal_seed=1,
        match_seed=1,
        deal_id="cmp/d00000",
    )
    others = [p for p in (1, 2, 3) if p != place]
    seats = (
        StoredSeat(0, version, place, 0, forfeit, "crash" if forfeit else None, None),
        StoredSeat(1, "x", others[0], 0, False, None, None),
        StoredSeat(2, "y", others[1], 0, False, None, None),
    )
    return StoredMatch(spec, tuple(sorted(seats, key=lambda st: st.place)))


def test_a_round_score_is_the_mean_place_of_the_rounds_each_half_played() -> None:
    """NEW's half plays 2 rounds (1st, 3rd: mean 0.5), OLD's 3 (2nd, 2nd, 3rd: mean 1/3):
    each over its own rounds, whatever the final places say."""
    pairs = PairedDeals("new", "old", 1, statistic="round-score")
    pairs.add(_match("new", 0, 3), ((0, 1, 2), (1, 2, 0)))
    pairs.add(_match("old", 0, 1), ((1, 0, 2), (2, 0, 1), (1, 2, 0)))
    assert pairs.observations() == [pytest.approx(0.5 - 1 / 3)]
    final = PairedDeals("new", "old", 1)
    final.add(_match("new", 0, 3))
    final.add(_match("old", 0, 1))
    assert final.observations() == [-1.0]


def test_a_forfeit_scores_nothing_in_any_round_and_rounds_are_needed() -> None:
    forfeit = _match("new", 0, 1, forfeit=True)
    assert version_score(forfeit, "new", "round-score", ((0, 1, 2), (0, 2, 1))) == 0.0
    with pytest.raises(ValueError, match="its rounds are needed"):
        version_score(forfeit, "new", "round-score")
    with pytest.raises(ValueError, match="does not seat all 3"):
        version_score(_match("new", 0, 1), "new", "round-score", ((0, 1),))


def test_the_rounds_come_from_the_logs_round_ends_and_a_bad_one_is_refused() -> None:
    lines: list[dict[str, Any]] = [
        {"type": "log"},
        {"type": "round_end", "places": [2, 0, 1]},
        {"type": "played"},
        {"type": "round_end", "places": [0, 1, 2]},
    ]
    assert round_places(lines, 3) == ((2, 0, 1), (0, 1, 2))
    for bad in ([2, 2, 1], [0, 1], "012", None):
        with pytest.raises(ValueError, match=r"places are not seats 0\.\.2"):
            round_places([{"type": "round_end", "places": bad}], 3)
    with pytest.raises(ValueError, match="no round_end"):
        round_places([{"type": "log"}], 3)


@pytest.mark.parametrize(
    ("preset", "overrides", "expected"),
    [
        ("arschloch", {}, "round-score"),  # to 15 points
        ("arschloch", {"max_rounds": 1}, "final-score"),
        ("arschloch", {"target": None, "rounds": 1}, "final-score"),
        ("arschloch", {"target": 2}, "final-score"),  # the round's winner gets 2 at 3 seats
        ("arschloch", {"target": 3}, "round-score"),
        ("president-es", {}, "round-score"),  # 5 rounds
        ("trou-du-cul", {}, "round-score"),
    ],
)
def test_the_default_statistic_follows_the_rules(
    preset: str, overrides: dict[str, Any], expected: Statistic
) -> None:
    rules = RuleSet.preset(preset, **overrides).resolve(3)
    assert default_statistic(rules, 3) == expected


@pytest.mark.parametrize(
    ("args", "statistic"),
    [
        ({}, "round-score"),
        ({"max_rounds": 1}, "final-score"),
        ({"statistic": "final-score"}, "final-score"),
        ({"max_rounds": 1, "statistic": "round-score"}, "round-score"),
    ],
)
def test_the_command_takes_the_statistic_given_or_the_rules_default_with_its_test(
    args: dict[str, Any], statistic: Statistic
) -> None:
    settings = _settings(None, **args)
    d0, d1 = HYPOTHESES[statistic]
    assert settings == CompareSettings(statistic=statistic, d0=d0, d1=d1, alpha=0.05, beta=0.05)
    given = _settings(None, **args, hypotheses=(0.0, 0.03), alpha=0.1)
    assert (given.d1, given.alpha, given.beta) == (0.03, 0.1, 0.05)


def test_an_unknown_statistic_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(main, ["compare", "@heuristic", "@lowest", "--statistic", "mean"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'mean' is not one of 'final-score', 'round-score'" in result.output


# ------------------------------------------------------------------------------- the runs


def _settings(folder: Path | None, **given: Any) -> CompareSettings:
    settings: CompareSettings = _test_settings(
        folder,
        "arschloch",
        given.get("max_rounds"),
        3,
        given.get("statistic"),
        given.get("hypotheses"),
        given.get("alpha"),
        given.get("beta"),
    )
    return settings


def _comparison(
    folder: Path,
    test: CompareSettings | None,
    *,
    new: Callable[[], Any] = lowest_bot,
    max_rounds: int = 3,
    max_deals: int = 40,
) -> Any:
    """NEW against the careless bot, 3 rounds a match (``test``: the ``[compare]`` written;
    ``None``: a folder as written before the section existed)."""
    tournament = compare_field(
        folder,
        ("new", "old", "f1", "f2", "f3"),
        max_rounds=max_rounds,
        max_deals=max_deals,
        test=test,
    )
    handlers = {"new": new, "old": careless_bot, "f1": lowest_bot, "f2": polite_bot}
    handlers["f3"] = lowest_bot
    sprt = Sprt() if test is None else Sprt(test.d0 or 0.0, test.d1 or 0.02)
    return run_comparison(
        tournament,
        InProcessExecutor(handlers),
        sprt,
        max_deals=max_deals,
        results_dir=folder / "results",
        batch=3,
        deal_secret=SECRET,
    )


ROUND_SCORE = CompareSettings(statistic="round-score", d0=0.0, d1=0.016, alpha=0.05, beta=0.05)


@pytest.fixture(scope="module")
def scored_by_rounds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    folder = tmp_path_factory.mktemp("rounds")
    return folder, _comparison(folder, ROUND_SCORE)


def test_a_round_score_comparison_keeps_every_rounds_and_decides(
    scored_by_rounds: tuple[Path, Any],
) -> None:
    folder, summary = scored_by_rounds
    assert summary.state.decision == "H1" and summary.spoiled == 0
    with Store(folder / "results", readonly=True) as store:
        kept = load_rounds(store)
        assert set(kept) == store.done_keys()
        assert all(1 <= len(rounds) <= 3 for rounds in kept.values())
    assert stored_settings(folder / "results") == ROUND_SCORE


def test_a_resumed_comparison_keeps_its_statistic_and_refuses_another(
    scored_by_rounds: tuple[Path, Any],
) -> None:
    folder, summary = scored_by_rounds
    results = folder / "results"
    assert _settings(results, max_rounds=1) == ROUND_SCORE, "not the one-round default"
    with pytest.raises(UsageError, match="run with statistic round-score, not statistic final"):
        _settings(results, statistic="final-score")
    with pytest.raises(UsageError, match=r"run with d1 0\.016, not d1 0\.03"):
        _settings(results, hypotheses=(0.0, 0.03))
    again = _comparison(folder, ROUND_SCORE)
    assert again.state == summary.state and again.matches == summary.matches
    with pytest.raises(UsageError, match="statistic round-score, not statistic final-score"):
        _comparison(folder, CompareSettings(d0=0.0, d1=0.016, alpha=0.05, beta=0.05))


def test_verify_recomputes_the_verdict_with_the_stored_statistic(
    scored_by_rounds: tuple[Path, Any], tmp_path: Path
) -> None:
    folder, summary = scored_by_rounds
    found = verify_results(folder / "results")
    assert found.ok, found.problems
    assert found.comparison is not None and found.comparison.statistic == "round-score"
    assert found.comparison.state == summary.state and not found.comparison.assumed
    result = CliRunner().invoke(main, ["verify", str(folder / "results")])
    assert result.exit_code == 0, result.output
    assert "H1 accepted after" in result.output and "scored by round-score" in result.output


def test_verify_names_kept_rounds_that_are_not_the_logs(
    scored_by_rounds: tuple[Path, Any], tmp_path: Path
) -> None:
    source = scored_by_rounds[0] / "results"
    copy = tmp_path / "results"
    copy.mkdir(mode=0o700)
    with (
        sqlite3.connect(source / "results.sqlite") as db,
        sqlite3.connect(copy / "results.sqlite") as out,
    ):
        db.backup(out)
    (copy / "logs").symlink_to(source / "logs")
    key = "cmp/d00000/new/r0"
    with sqlite3.connect(copy / "results.sqlite") as db:
        (text,) = db.execute(
            "SELECT places FROM match_rounds WHERE match_key = ?", (key,)
        ).fetchone()
        rounds = json.loads(text)
        db.execute(
            "UPDATE match_rounds SET places = ? WHERE match_key = ?",
            (json.dumps([rounds[0][::-1], *rounds[1:]]), key),
        )
    found = verify_results(copy)
    assert f"{key}: the rounds kept for the comparison differ from the log's" in found.problems


def test_an_old_folder_without_a_statistic_resumes_and_verifies_as_final_score(
    tmp_path: Path,
) -> None:
    summary = _comparison(tmp_path, None)
    results = tmp_path / "results"
    assert stored_settings(results) == CompareSettings()
    d0, d1 = HYPOTHESES["final-score"]
    expected = CompareSettings(statistic="final-score", d0=d0, d1=d1, alpha=0.05, beta=0.05)
    assert _settings(results) == expected, "final-score, though the rules' default is rounds"
    with pytest.raises(UsageError, match="statistic final-score, not statistic round-score"):
        _settings(results, statistic="round-score")
    found = verify_results(results)
    assert found.ok and found.comparison is not None
    assert (found.comparison.statistic, found.comparison.assumed) == ("final-score", True)
    assert found.comparison.state == summary.state
    again = _comparison(tmp_path, expected)
    assert again.state == summary.state and again.matches == summary.matches
    assert stored_settings(results) == expected, "recorded once resumed"


def test_one_round_scores_alike_both_ways(tmp_path: Path) -> None:
    """One round a match: its standings are that round's order, so both statistics give
    the same observations."""
    final = _comparison(tmp_path / "f", None, new=polite_bot, max_rounds=1, max_deals=6)
    rounds = _comparison(
        tmp_path / "r",
        CompareSettings(statistic="round-score", d0=0.0, d1=0.02),
        new=polite_bot,
        max_rounds=1,
        max_deals=6,
    )
    assert final.state.deals == rounds.state.deals == 6
    assert rounds.state == final.state


# ---------------------------------------------------------------------- hostile folders


def _spoil_plan(results: Path, change: Callable[[str], str]) -> None:
    with sqlite3.connect(results / "results.sqlite") as db:
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'plan'").fetchone()
        plan = json.loads(text)
        plan["file"] = change(plan["file"])
        db.execute("UPDATE meta SET value = ? WHERE key = 'plan'", (json.dumps(plan),))


def test_a_folder_whose_stored_statistic_is_garbage_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    _comparison(tmp_path, ROUND_SCORE, max_deals=2)
    results = tmp_path / "results"
    _spoil_plan(results, lambda text: text.replace('"round-score"', '"median\\u0000"'))
    with pytest.raises(UsageError, match=r"compare.statistic.*final-score.*round-score"):
        stored_settings(results)
    args = ["compare", "@heuristic", "@lowest", "--results", str(results)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "compare.statistic" in result.output
    with pytest.raises(UsageError, match=r"compare\.statistic"):
        verify_results(results)


def test_garbage_in_the_kept_rounds_is_refused_in_one_line(tmp_path: Path) -> None:
    _comparison(tmp_path, ROUND_SCORE, max_deals=2)
    results = tmp_path / "results"
    with sqlite3.connect(results / "results.sqlite") as db:
        db.execute("UPDATE match_rounds SET places = '[[0, \"x\"]]' WHERE rowid = 1")
    with (
        Store(results, readonly=True) as store,
        pytest.raises(UsageError, match=r"the rounds stored for 'cmp/.*' cannot be read"),
    ):
        load_rounds(store)
