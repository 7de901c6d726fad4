"""``referee compare``: the pairs it schedules, the observations it takes, and its runs.

The runs here use :class:`referee.testing.InProcessExecutor` (fake bots, the real
coordinator, runner and store); the command with real bots is in
``tests/tournament/test_compare_run.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.executors import MatchTask
from referee.ranking.sprt import MIN_DEALS, PairedDeals, Sprt
from referee.rules import RuleSet
from referee.runs.comparison import SprtProgress, run_comparison
from referee.sandbox import Limits
from referee.specs import MatchSpec, StoredMatch, StoredSeat, TimeControl
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.deals import deal_seed
from referee.tournament.scheduler import compare, compare_deal
from referee.tournament.store import Store
from referee.verify.audit import verify_results

from .compare_field import compare_field
from .conftest import write_bot

SECRET = b"c" * 32


# ---------------------------------------------------------------------------- the pairs


def test_a_deal_is_both_versions_in_every_rotation_on_one_deal() -> None:
    specs = compare_deal("new", "old", ["a", "b", "c", "d"], 4, 7, 3, SECRET)
    assert [s.key for s in specs] == [
        *(f"cmp/d00007/new/r{r}" for r in range(4)),
        *(f"cmp/d00007/old/r{r}" for r in range(4)),
    ]
    new, old = specs[:4], specs[4:]
    cards = deal_seed(SECRET, "deal", 3, "cmp/d00007")
    assert {(s.deal_id, s.deal_seed, s.match_seed, s.deal) for s in specs} == {
        ("cmp/d00007", cards, cards, 7)
    }
    for a, b in zip(new, old, strict=True):
        assert a.rotation == b.rotation
        assert [x if x != "new" else "old" for x in a.table] == list(b.table)
    assert sorted(new[0].table) == sorted(new[1].table) and "new" in new[0].table
    seats_of_new = {s.table.index("new") for s in new}
    assert seats_of_new == {0, 1, 2, 3}, "every seat once"


def test_the_field_is_drawn_per_deal_and_evenly() -> None:
    field = [f"f{i}" for i in range(6)]
    specs = compare("new", "old", field, 4, 120, 0, SECRET)
    drawn: dict[str, int] = dict.fromkeys(field, 0)
    for spec in specs:
        if spec.key.endswith("/new/r0"):
            for name in spec.table:
                if name != "new":
                    drawn[name] += 1
    assert sum(drawn.values()) == 120 * 3
    assert all(40 <= count <= 80 for count in drawn.values()), drawn
    assert compare("new", "old", field, 4, 5, 0, SECRET, first_deal=3) == specs[3 * 8 : 5 * 8]


@pytest.mark.parametrize("field", [["a"], ["a", "new"], ["a", "a"]])
def test_a_deal_needs_enough_field_bots_besides_the_versions(field: list[str]) -> None:
    with pytest.raises(ValueError, match="needs two versions and 2 field bots"):
        compare_deal("new", "old", field, 3, 0, 0, SECRET)


def test_an_attempt_of_a_compared_match_replays_its_own_cards() -> None:
    spec = compare_deal("new", "old", ["a", "b"], 3, 0, 0, SECRET)[0]
    rules = RuleSet.preset("arschloch").resolve(3)
    task = MatchTask(spec, (), rules, TimeControl(), Limits(), "process", "x", same_cards=True)
    assert task.attempt(3) is task and task.deal_attempt(3) == 0
    fresh = MatchTask(spec, (), rules, TimeControl(), Limits(), "process", "x", reseeds=(5, 6))
    assert fresh.attempt(3).spec.match_seed == 6 and fresh.deal_attempt(3) == 2


# ---------------------------------------------------------------------- the observations


def _match(deal: int, half: str, rotation: int, places: dict[str, int]) -> StoredMatch:
    key = f"cmp/d{deal:05d}/{half}/r{rotation}"
    table = tuple(places)
    spec = MatchSpec(
        key=key,
        table=table,
        deal=deal,
        rotation=rotation,
        deal_seed=1,
        match_seed=1,
        deal_id=f"cmp/d{deal:05d}",
    )
    seats = tuple(
        StoredSeat(seat, name, place, 0, False, None, None)
        for seat, (name, place) in enumerate(places.items())
    )
    return StoredMatch(spec, seats)


def test_a_deal_observes_the_mean_difference_over_its_rotations() -> None:
    pairs = PairedDeals("new", "old", 3)
    # NEW places 1, 2, 3 in the rotations; OLD 2, 2, 3: differences 0.5, 0, 0 -> 1/6.
    for rotation, (a, b) in enumerate([(1, 2), (2, 2), (3, 3)]):
        assert pairs.add(_match(0, "new", rotation, {"new": a, "x": 3, "y": 1})) is None
        last = pairs.add(_match(0, "old", rotation, {"old": b, "x": 1, "y": 3}))
    assert last == 0 and pairs.observations() == [pytest.approx(1 / 6)]


def test_a_forfeit_counts_at_the_last_place() -> None:
    pairs = PairedDeals("new", "old", 3)
    forfeit = _match(0, "new", 0, {"new": 1, "x": 2, "y": 3})
    seats = (
        forfeit.seats[0].__class__(0, "new", 1, 9, True, "timeout", "late"),
        *forfeit.seats[1:],
    )
    pairs.add(StoredMatch(forfeit.spec, seats))
    assert pairs.scores[0]["new", 0] == 0.0


def test_observations_stop_at_the_first_open_deal_and_skip_spoiled_ones() -> None:
    pairs = PairedDeals("new", "old", 3)

    def play(deal: int, difference: int) -> None:
        for rotation in range(3):
            pairs.add(_match(deal, "new", rotation, {"new": 1, "x": 2, "y": 3}))
            pairs.add(_match(deal, "old", rotation, {"old": 1 + difference, "x": 2, "y": 3}))

    play(0, 1)
    play(2, 2)
    assert pairs.observations() == [0.5] and pairs.settled() == 1
    pairs.fail(1)
    assert pairs.observations() == [0.5, 1.0] and pairs.settled() == 3


# ------------------------------------------------------------------------------- the runs


def careless_bot(name: str = "careless") -> Callable[[dict[str, Any]], Any]:
    """Leads its highest single, passes whenever it may: much weaker than ``lowest_bot``."""
    inner = polite_bot(name)

    def handle(msg: dict[str, Any]) -> Any:
        if msg.get("type") == "act" and msg["kind"] == "play":
            legal = msg["legal"]
            return {"id": msg["id"], "cards": [] if [] in legal else legal[-1]}
        return inner(msg)

    return handle


def _comparison(
    folder: Path,
    new: Callable[[], Any],
    old: Callable[[], Any],
    *,
    max_deals: int = 40,
    batch: int = 3,
    seen: list[SprtProgress] | None = None,
    test: Sprt | None = None,
) -> Any:
    tournament = compare_field(
        folder, ("new", "old", "f1", "f2", "f3"), max_rounds=3, max_deals=max_deals
    )
    handlers = {"new": new, "old": old, "f1": lowest_bot, "f2": polite_bot, "f3": lowest_bot}
    progress = seen if seen is not None else []
    return run_comparison(
        tournament,
        InProcessExecutor(handlers),
        test or Sprt(),
        max_deals=max_deals,
        results_dir=folder / "results",
        batch=batch,
        deal_secret=SECRET,
        on_event=lambda event: isinstance(event, SprtProgress) and progress.append(event),  # type: ignore[arg-type, func-returns-value]
    )


def test_a_clearly_better_bot_reaches_h1_and_a_resumed_run_keeps_the_verdict(
    tmp_path: Path,
) -> None:
    seen: list[SprtProgress] = []
    summary = _comparison(tmp_path, lowest_bot, careless_bot, seen=seen)
    state = summary.state
    assert state.decision == "H1" and state.llr >= state.bounds[1]
    assert MIN_DEALS <= state.deals < 40 and state.low > 0
    assert summary.matches >= state.deals * 6 and summary.matches % 6 == 0
    assert summary.matches <= (state.deals + 3) * 6, "at most a batch past the decision"
    assert [p.state.deals for p in seen] == sorted(p.state.deals for p in seen)
    assert seen[-1].state == state
    again = _comparison(tmp_path, lowest_bot, careless_bot)
    assert again.state == state and again.matches == summary.matches


def test_verify_checks_a_comparison_up_to_the_deal_it_reached(tmp_path: Path) -> None:
    summary = _comparison(tmp_path, lowest_bot, careless_bot)
    found = verify_results(tmp_path / "results")
    assert found.ok, found.problems
    assert found.scheduled == summary.matches < 40 * 6


def test_twins_are_never_found_better(tmp_path: Path) -> None:
    """Two copies of one program on the same cards and seeds play the same games: every
    observation is 0, and the test accepts H0 once that many identical deals rule out D1
    (:meth:`Sprt.identical_deals`; a D1 of 0.1 keeps the run short: 29 deals, not 149)."""
    test = Sprt(d1=0.1)
    summary = _comparison(tmp_path, lowest_bot, lowest_bot, max_deals=200, test=test)
    assert summary.state.decision == "H0" and summary.state.identical
    assert summary.state.deals == test.identical_deals(0.0) > MIN_DEALS
    assert summary.state.difference == 0


def test_the_verdict_does_not_depend_on_the_batch(tmp_path: Path) -> None:
    one = _comparison(tmp_path / "one", lowest_bot, careless_bot, batch=1)
    five = _comparison(tmp_path / "five", lowest_bot, careless_bot, batch=5)
    assert one.state == five.state
    assert one.matches == one.state.deals * 6 <= five.matches


def test_the_limit_leaves_the_test_undecided(tmp_path: Path) -> None:
    summary = _comparison(tmp_path, lowest_bot, careless_bot, max_deals=MIN_DEALS - 1)
    assert summary.state.decision == "undecided" and summary.state.deals == MIN_DEALS - 1
    with Store(tmp_path / "results", readonly=True) as store:
        assert len(store.done_keys()) == (MIN_DEALS - 1) * 6
        assert store.deal_secrets()[0].revealed is not None, "every match done: revealed"


# --------------------------------------------------------------------- the command's refusals


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sprt", "0.02,0"], "D0 must be below D1"),
        (["--sprt", "x"], "give two numbers, D0,D1"),
        (["--sprt", "0,nan"], "D0 must be below D1"),
        (["--alpha", "0.7"], "0.7 is not in the range"),
        (["--max-matches", "7"], "a deal is 8 matches (both versions in 4 seat rotations)"),
        (["--field", "@lowest", "--field", "@random"], "needs at least 3 field bots"),
        (["--table-size", "3", "--field", "@lowest"], "at tables of 3 needs at least 2 field"),
        (["--restart"], "--restart discards the results in --results DIR; name it"),
    ],
)
def test_the_command_refuses_bad_settings_in_one_line(args: list[str], says: str) -> None:
    result = CliRunner().invoke(main, ["compare", "@heuristic", "@lowest", *args])
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output


def test_the_command_names_the_versions_apart_from_the_field(tmp_path: Path) -> None:
    from referee.cli.compare import _named_bots

    mine = write_bot(tmp_path, "heuristic", "first")
    bots = _named_bots([str(mine), "@heuristic", "@heuristic", "@heuristic", "@lowest"], 4, ())
    assert [b.name for b in bots] == [
        "heuristic-new",
        "heuristic-old",
        "heuristic#1",
        "heuristic#2",
        "lowest",
    ]
    bots = _named_bots(["@heuristic", "@lowest", "@heuristic", "@lowest", "@random"], 4, ())
    assert [b.name for b in bots] == ["heuristic", "lowest", "heuristic#2", "lowest#2", "random"]


def test_a_results_folder_of_another_comparison_is_refused_as_such(tmp_path: Path) -> None:
    with Store(tmp_path / "r") as store:
        store.check_settings({"format": "compare", "baseline": "v6", "field": ["a", "b"]})
        store.check_settings({"format": "compare", "baseline": "v6", "field": ["a", "b"]})
        with pytest.raises(
            UsageError,
            match=r"baseline changed \(these are the results of "
            r"another comparison: give another --results\)",
        ):
            store.check_settings({"format": "compare", "baseline": "v5", "field": ["a", "b"]})


def test_identical_play_is_said_so_and_the_json_stays_valid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two programs that score the same on every deal: no infinite LLR on screen or in the
    JSON; the progress line gives the most deals the run can still take."""
    import json
    from types import SimpleNamespace

    from referee.cli.compare import _report
    from referee.runs.comparison import progress_line

    test = Sprt()
    state = test.first_decision([0.0] * 400)
    progress = SimpleNamespace(
        state=state, matches=state.deals * 8, faults=0, spoiled=0, spoiled_by=(), limit=500
    )
    line = progress_line(progress)  # type: ignore[arg-type]
    assert f"{state.deals} deals (at most {500 - state.deals} more)" in line
    assert f"identical play on all {state.deals} deals" in line and "LLR" not in line
    summary = SimpleNamespace(
        state=state,
        matches=state.deals * 8,
        faults=0,
        spoiled=0,
        spoiled_by=(),
        capped=None,
        failed=0,
        results_dir=Path("r"),
    )
    f = SimpleNamespace(candidate="new", baseline="old", compare=None)
    tournament = SimpleNamespace(file=f, entrants=["new", "old", "a", "b", "c"])
    _report(summary, tournament, test, 4000, as_json=False)
    out = capsys.readouterr().out
    assert f"H0 accepted: identical play on all {state.deals} deals" in out
    assert "LLR -" not in out and "-inf" not in out
    _report(summary, tournament, test, 4000, as_json=True)
    data = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert (data["decision"], data["llr"], data["identical"], data["differing"]) == (
        "H0",
        None,
        True,
        0,
    )
