"""Invalid rulesets are refused when built; illegal decisions raise a typed, explained error."""

from __future__ import annotations

import pytest

from referee.errors import IllegalMove, RefereeError, RulesError
from referee.rules import PRESETS, Game, RuleSet
from tests.rules.helpers import WORKED_DEAL, drive, make_game


def test_presets_resolve_at_every_table_size() -> None:
    for name in PRESETS:
        for n in range(3, 7):
            rules = RuleSet.preset(name).resolve(n)
            data = rules.as_protocol()
            assert data["name"] == name and data["max_rounds"] == 100
            assert isinstance(data["exchange"], list)


def test_resolved_rules_match_the_protocol_example() -> None:
    data = RuleSet.preset("arschloch").resolve(4).as_protocol()
    expected = {
        "name": "arschloch",
        "deck": "skat32",
        "suits": ["C", "S", "H", "D"],
        "ranks": ["7", "8", "9", "10", "J", "Q", "K", "A"],
        "deal": "equal",
        "pass_rule": "reenter",
        "equal_rank": "forbidden",
        "top_card_ends_trick": True,
        "no_finish_on": ["A"],
        "start_card": "7C",
        "exchange": [2, 1],
        "return_choice": "choose",
        "leftovers": "swap",
        "scoring": "below",
        "target": 15,
        "rounds": None,
        "max_rounds": 100,
        "tie_break": "shared",
    }
    assert {k: data[k] for k in expected} == expected
    assert RuleSet.preset("arschloch").resolve(3).exchange == [1]
    assert RuleSet.preset("president-es").resolve(4).scoring == [2, 1, -1, -2]


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: RuleSet.preset("skat"), "unknown preset 'skat' (allowed: arschloch"),
        (
            lambda: RuleSet.preset("arschloch", ranks=["7", "8", "1"]),
            "'1' is not a rank of the skat32",
        ),
        (
            lambda: RuleSet.preset("arschloch").resolve(7),
            "table size 7 is not allowed (allowed: 3 to 6)",
        ),
        (lambda: RuleSet.preset("arschloch").resolve(2), "table size 2"),
        (lambda: RuleSet.preset("arschloch", exchange=[0]), "every count must be at least 1"),
        (lambda: RuleSet.preset("arschloch", target=0), "rules.target"),
        (
            lambda: RuleSet.preset("arschloch", deal="some"),
            "rules.deal: got 'some'; allowed: 'equal' or 'all'",
        ),
        (lambda: RuleSet.preset("arschloch", colour="red"), "unknown parameter 'colour'"),
        (lambda: RuleSet.preset("arschloch", no_finish_on=["2"]), "no_finish_on: '2'"),
        (lambda: RuleSet.preset("arschloch", start_card="7X"), "start_card: '7X'"),
        (lambda: RuleSet.preset("arschloch", max_rounds=0), "rules.max_rounds"),
        (
            lambda: RuleSet.preset("trou-du-cul", scoring=[3, 2, 1]).resolve(4),
            "no points for 4 players",
        ),
        (lambda: RuleSet.preset("arschloch", exchange=[6]).resolve(6), "cannot be exchanged"),
    ],
)
def test_invalid_rules_are_refused_with_the_field(build, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RulesError) as err:
        build()
    assert needle in str(err.value)


def test_overrides_make_a_custom_ruleset() -> None:
    rules = RuleSet.preset("arschloch", target=10, exchange=[3, 1]).resolve(4)
    assert rules.target == 10 and rules.exchange == [3, 1]
    assert RuleSet.preset("arschloch", exchange=[3, 1]).resolve(3).exchange == [3]


@pytest.mark.parametrize(
    ("cards", "reason"),
    [
        ([], "passing while leading"),
        (["7X"], "'7X' is not a card of this deck"),
        (["QH"], "QH is not in your hand"),
        (["8H", "8H"], "plays 8H twice"),
        (["8H", "10C"], "mixed ranks: 8H and 10C"),
        ("8H", "must be a list"),
        ([7], "is not a card"),
    ],
)
def test_illegal_leads_say_why(cards, reason) -> None:  # type: ignore[no-untyped-def]
    game = make_game("arschloch", {1: WORKED_DEAL})
    before = len(game.events)
    with pytest.raises(IllegalMove) as err:
        game.play(2, cards)
    assert reason in err.value.reason
    assert len(game.events) == before and game.pending == ("play", 2)


def test_illegal_follows_say_why() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    drive(game, [(2, ["8H", "8D"])])
    with pytest.raises(IllegalMove, match="wrong count: the trick needs 2"):
        game.play(3, ["QC"])
    drive(game, [(3, ["JC", "JS"])])
    with pytest.raises(IllegalMove, match="rank too low: 9 does not beat J"):
        game.play(0, ["9C", "9S"])


def test_forbidden_finish_is_refused() -> None:
    # A two-rank deck: 8 cards, 2 each.
    game = make_game(
        "arschloch",
        {1: ([["7C", "AC"], ["7S", "AS"], ["7H", "AH"], ["7D", "AD"]], [])},
        ranks=["7", "A"],
    )
    drive(game, [(0, ["7C"])])
    # Seat 0 now holds only an ace: eliminated at once, so it is never asked to finish on it.
    assert game.event_dict(game.events[-1])["type"] == "eliminated"
    # The check itself, on a state where a lone ace is held:
    game.nheld[1] = 1
    game.hands[1] = [[], [game.codec.ids["AS"]]]
    game.turn = 1
    game.pending = ("play", 1)
    with pytest.raises(IllegalMove, match="forbidden finish: you may not go out on A"):
        game.check_play(1, ["AS"])


def test_equal_rank_is_refused_unless_skip_next() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    drive(game, [(2, ["7C"])])
    with pytest.raises(IllegalMove, match="does not beat 7"):
        game.play(3, ["7D"])


def test_wrong_seat_is_a_programming_error() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    with pytest.raises(RefereeError, match="not expecting play from seat 0"):
        game.play(0, ["AC"])


def test_game_needs_three_to_six_players() -> None:
    rules = RuleSet.preset("arschloch").resolve(4)
    with pytest.raises(RefereeError):
        Game(rules, ["a", "b"], 1)
