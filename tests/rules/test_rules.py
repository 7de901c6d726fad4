"""Each preset's distinctive rule, the worked example of RULES.md §5, and the standings."""

from __future__ import annotations

import itertools
import random

import pytest

from referee.errors import IllegalMove
from referee.rules import GIVE, LEFTOVER, PLAY, Game, RuleSet
from referee.rules.simulate import play_random
from tests.rules.helpers import WORKED_DEAL, drive, events, finish_lowest, make_game, types


def test_worked_example_of_rules_section_5() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    assert game.pending == (PLAY, 2), "player 3 holds 7C and opens"
    drive(game, [(2, ["8H", "8D"]), (3, ["JC", "JS"]), (0, []), (1, ["KC", "KS"])])
    drive(game, [(2, []), (3, []), (0, [])])
    assert events(game)[-1] == {
        "type": "trick_end",
        "winner": 1,
        "reason": "all_passed",
        "leader": 1,
    }
    drive(game, [(1, ["7S"]), (2, ["10C"]), (3, ["QC"]), (0, ["AC"])])
    assert events(game)[-1] == {"type": "trick_end", "winner": 0, "reason": "top_card", "leader": 0}
    assert game.pending == (PLAY, 0)


def test_arschloch_reentry_after_a_pass() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    drive(game, [(2, ["8H", "8D"]), (3, []), (0, ["9C", "9S"]), (1, []), (2, [])])
    assert game.pending == (PLAY, 3), "a passer gets the turn again under pass_rule=reenter"
    drive(game, [(3, ["JC", "JS"])])
    assert events(game)[-1] == {"type": "played", "seat": 3, "cards": ["JC", "JS"]}


def test_top_card_counts_only_cards_still_held() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    # Kings are not the top card while anyone holds an ace.
    drive(game, [(2, ["8H", "8D"]), (3, ["JC", "JS"]), (0, []), (1, ["KC", "KS"])])
    assert types(game)[-1] == "played"
    drive(game, [(2, []), (3, []), (0, [])])
    # Now all four aces leave play; K becomes the top rank.
    drive(game, [(1, ["7S"]), (2, ["10C"]), (3, ["AH"])])
    assert events(game)[-1]["reason"] == "top_card"
    drive(game, [(3, ["AD"])])  # a single ace led: top card at once
    assert events(game)[-1] == {"type": "trick_end", "winner": 3, "reason": "top_card", "leader": 3}
    drive(game, [(3, ["7D"]), (0, ["AC"])])
    drive(game, [(0, ["AS"])])
    drive(game, [(0, ["9C"]), (1, ["10H"]), (2, ["QD"])])
    # With every ace gone, nobody holds a card above K: playing K ends the trick.
    drive(game, [(3, ["KD"])])
    assert events(game)[-1] == {"type": "trick_end", "winner": 3, "reason": "top_card", "leader": 3}


def test_high_ten_beats_the_ace() -> None:
    deal = (
        [
            ["7C", "AC", "8C", "9C", "JC", "QC", "KC", "9S", "8S", "JS"],
            ["10S", "7S", "QS", "KS", "AS", "7H", "8H", "9H", "JH", "QH"],
            ["10H", "KH", "AH", "7D", "8D", "9D", "JD", "QD", "KD", "AD"],
        ],
        ["10C", "10D"],
    )
    game = make_game("arschloch-high10", {1: deal})
    drive(game, [(0, ["AC"])])
    assert ["10S"] in game.legal_plays(1) and ["AS"] not in game.legal_plays(1)
    drive(game, [(1, ["10S"])])
    assert events(game)[-1] == {"type": "trick_end", "winner": 1, "reason": "top_card", "leader": 1}
    plain = make_game("arschloch", {1: deal})
    drive(plain, [(0, ["AC"])])
    assert events(plain)[-1]["reason"] == "top_card", "in plain arschloch the ace is the top"


def test_trou_du_cul_equal_rank_skips_and_pass_is_out() -> None:
    hands = [
        ["3C", "4C", "5C", "6C", "7C"],
        ["3S", "4S", "5S", "6S", "7S"],
        ["3H", "4H", "5H", "6H", "7H"],
        ["3D", "4D", "5D", "6D", "7D"],
    ]
    game = make_game("trou-du-cul", {1: (hands, [])}, ranks=["3", "4", "5", "6", "7"])
    # QH is not dealt (rank not in play): the lowest dealt card, 3C, leads.
    assert game.pending == (PLAY, 0)
    drive(game, [(0, ["3C"]), (1, ["3S"])])
    assert events(game)[-1] == {"type": "skipped", "seat": 2}
    assert game.pending == (PLAY, 3)
    drive(game, [(3, ["4D"]), (0, [])])
    assert game.passed_seats() == [0]
    drive(game, [(1, ["5S"]), (2, ["6H"])])  # the skipped player comes back later
    drive(game, [(3, []), (1, [])])
    # Seat 0 passed earlier and is out of the trick: it is not asked again.
    assert events(game)[-1] == {
        "type": "trick_end",
        "winner": 2,
        "reason": "all_passed",
        "leader": 2,
    }
    assert game.passed_seats() == []


def test_president_es_equal_rank_and_automatic_lowest_return() -> None:
    ranks = ["2", "3", "4", "5", "6"]
    hands = [
        ["2O", "3O", "4O", "5O", "6O"],
        ["2C", "3C", "4C", "5C", "6C"],
        ["2E", "3E", "4E", "5E", "6E"],
        ["2B", "3B", "4B", "5B", "6B"],
    ]
    game = make_game("president-es", {1: (hands, []), 2: (hands, [])}, ranks=ranks)
    assert game.pending == (PLAY, 0), "2O leads round 1"
    drive(game, [(0, ["2O"]), (1, ["2C"])])
    assert events(game)[-1] == {"type": "skipped", "seat": 2}
    # Finish round 1 and check round 2's exchange is automatic both ways.
    while game.round == 1:
        kind, seat = game.pending
        assert kind == PLAY
        moves = game.legal_plays(seat)
        game.play(seat, moves[0] if moves[0] else [])
    ex = [e for e in events(game) if e["type"] == "exchange"]
    assert [len(e["cards"]) for e in ex] == [2, 2, 1, 1]
    last, first = ex[0]["from"], ex[0]["to"]
    assert ex[1] == {"type": "exchange", "from": first, "to": last, "cards": ex[1]["cards"]}
    assert game.pending is None or game.pending[0] != GIVE
    first_hand_before = sorted(hands[first] + ex[0]["cards"], key=lambda c: ranks.index(c[:-1]))
    rank_of = [c[:-1] for c in ex[1]["cards"]]
    assert rank_of == [c[:-1] for c in first_hand_before[:2]], "lowest cards go back"


def test_exchange_counts_at_three_and_four_players() -> None:
    for n, want in ((3, [1, 1]), (4, [2, 2, 1, 1]), (6, [2, 2, 1, 1])):
        game = Game(RuleSet.preset("arschloch").resolve(n), [f"p{i}" for i in range(n)], 7)
        while game.round < 2 or (game.pending and game.pending[0] != PLAY):
            _step_lowest(game)
        ex = [e for e in events(game) if e["type"] == "exchange"]
        assert [len(e["cards"]) for e in ex] == want, n
    game = Game(RuleSet.preset("trou-du-cul").resolve(3), ["a", "b", "c"], 3)
    while game.round < 2 or (game.pending and game.pending[0] != PLAY):
        _step_lowest(game)
    assert [len(e["cards"]) for e in events(game) if e["type"] == "exchange"] == [2, 2]


def _step_lowest(game: Game) -> None:
    assert game.pending is not None
    kind, seat = game.pending
    names = game.codec.names
    if kind == PLAY:
        moves = game.legal_plays(seat)
        game.play(seat, moves[0] if game.last < 0 else [])
    elif kind == GIVE:
        game.give(seat, [names[c] for c in game.hand(seat)[: game.give_count]])
    else:
        game.leftover(seat, names[game.offer[0]], names[game.hand(seat)[0]])


def test_exchange_gives_the_best_and_the_receiver_chooses() -> None:
    game = Game(RuleSet.preset("arschloch").resolve(4), ["a", "b", "c", "d"], 11)
    while game.round < 2:
        _step_lowest(game)
    ex = events(game)
    deal = next(e for e in ex if e["type"] == "deal" and e["round"] == 2)
    first_ex = next(e for e in ex if e["type"] == "exchange")
    giver_hand = deal["hands"][first_ex["from"]]
    order = game.rules.ranks
    best = sorted(giver_hand, key=lambda c: (order.index(c[:-1]), "CSHD".index(c[-1])))[-2:]
    assert first_ex["cards"] == best
    assert game.pending == (GIVE, first_ex["to"]), "the president picks what to give back"
    with pytest.raises(IllegalMove, match="wrong count"):
        game.give(first_ex["to"], [game.hand_names(first_ex["to"])[0]])
    receiver = first_ex["to"]
    foreign = [c for c in game.hand_names(first_ex["from"]) if c not in game.hand_names(receiver)]
    with pytest.raises(IllegalMove, match="not in your hand"):
        game.give(receiver, foreign[:2])
    mine = game.hand_names(receiver)
    with pytest.raises(IllegalMove, match="twice"):
        game.give(receiver, [mine[0], mine[0]])


def test_only_aces_eliminates_first_lowest_then_the_place_above() -> None:
    hands = [
        ["7C", "8C", "AC", "AS"],
        ["7S", "9C", "AH", "AD"],
        ["7H", "8S", "9S", "9H"],
        ["7D", "8H", "8D", "9D"],
    ]
    game = make_game("arschloch", {1: (hands, [])}, ranks=["7", "8", "9", "A"])
    drive(game, [(0, ["7C"]), (1, ["9C"]), (2, []), (3, []), (0, [])])
    assert events(game)[-1]["winner"] == 1
    drive(game, [(1, ["7S"])])
    assert events(game)[-1] == {"type": "eliminated", "seat": 1, "place": 4, "cards": ["AH", "AD"]}
    drive(game, [(2, ["8S"]), (3, ["9D"]), (0, []), (2, [])])
    assert events(game)[-1] == {
        "type": "trick_end",
        "winner": 3,
        "reason": "all_passed",
        "leader": 3,
    }
    drive(game, [(3, ["7D"]), (0, ["8C"])])
    assert events(game)[-1] == {"type": "eliminated", "seat": 0, "place": 3, "cards": ["AC", "AS"]}
    finish_lowest(game)
    first_round = next(e for e in events(game) if e["type"] == "round_end")
    assert first_round["places"][2:] == [0, 1]


def test_leftovers_are_taken_by_places_three_and_four() -> None:
    game = Game(RuleSet.preset("arschloch").resolve(5), [f"p{i}" for i in range(5)], 5)
    while game.round < 2:
        _step_lowest(game)
    prev = game.prev_places
    assert prev is not None
    deal2 = events(game)[-1]
    assert deal2["type"] == "deal" and len(deal2["leftovers"]) == 2
    assert game.pending == (LEFTOVER, prev[2])
    offer = list(game.offer)
    take = game.codec.names[offer[-1]]
    game.leftover(prev[2], take, take)  # the taken card may be the discarded one
    assert game.pending == (LEFTOVER, prev[3])
    assert len(game.offer) == 1
    with pytest.raises(IllegalMove, match="not an offered leftover"):
        game.leftover(prev[3], take, take)
    other = game.codec.names[game.offer[0]]
    discard = game.hand_names(prev[3])[0]
    game.leftover(prev[3], other, discard)
    logged = [e for e in events(game) if e["type"] == "leftover"]
    assert [e["seat"] for e in logged] == [prev[2], prev[3]]
    assert other in game.hand_names(prev[3]) and discard not in game.hand_names(prev[3])
    assert not any(e["type"] == "leftover" for e in events(game)[: events(game).index(deal2)])


def test_leftovers_at_three_players_only_third_place() -> None:
    game = Game(RuleSet.preset("arschloch").resolve(3), ["a", "b", "c"], 2)
    while game.round < 2:
        _step_lowest(game)
    assert game.prev_places is not None
    assert game.pending == (LEFTOVER, game.prev_places[2])
    _step_lowest(game)
    assert game.pending is not None and game.pending[0] != LEFTOVER


def test_start_card_in_the_leftovers_lowest_dealt_card_leads() -> None:
    hands = [
        ["8C", "9C", "10C", "JC", "QC", "KC", "AC", "8S", "9S", "10S"],
        ["7S", "JS", "QS", "KS", "AS", "8H", "9H", "10H", "JH", "QH"],
        ["KH", "AH", "7D", "8D", "9D", "10D", "JD", "QD", "KD", "AD"],
    ]
    game = make_game("arschloch", {1: (hands, ["7C", "7H"])})
    assert game.pending == (PLAY, 1), "7S is the lowest dealt card"


def test_below_points_and_target_15() -> None:
    rules = RuleSet.preset("arschloch").resolve(4)
    game = play_random(rules, ["a", "b", "c", "d"], 3, random.Random(3))
    ends = [e for e in events(game) if e["type"] == "round_end"]
    for e in ends:
        for i, seat in enumerate(e["places"]):
            assert e["points"][seat] == 3 - i
    assert max(ends[-1]["scores"]) >= 15
    assert all(max(e["scores"]) < 15 for e in ends[:-1])


def test_five_rounds_and_last_round_tie_break() -> None:
    rules = RuleSet.preset("president-es").resolve(4)
    seen_tie = False
    for seed in range(60):
        game = play_random(rules, ["a", "b", "c", "d"], seed, random.Random(seed))
        assert game.round == 5
        last = [e for e in events(game) if e["type"] == "round_end"][-1]
        st = game.standings
        assert st is not None
        assert sorted(s["place"] for s in st) == [1, 2, 3, 4]
        for a, b in itertools.pairwise(st):
            assert a["score"] >= b["score"]
            if a["score"] == b["score"]:
                seen_tie = True
                assert last["places"].index(a["seat"]) < last["places"].index(b["seat"])
    assert seen_tie


def test_shared_places_on_tied_scores() -> None:
    game = Game(RuleSet.preset("arschloch").resolve(4), ["a", "b", "c", "d"], 0)
    game.scores[:] = [15, 9, 9, 4]
    game.last_places = [0, 2, 1, 3]
    game._match_end()
    assert game.standings is not None
    assert [(s["seat"], s["place"]) for s in game.standings] == [(0, 1), (1, 2), (2, 2), (3, 4)]


def test_forfeits_rank_last_earliest_lowest() -> None:
    rules = RuleSet.preset("arschloch").resolve(4)
    game = Game(rules, ["a", "b", "c", "d"], 4)
    game.forfeit(2, "timeout", "too slow")
    _step_lowest(game)
    game.forfeit(0, "crash", "exit code 1")
    finish_lowest(game)
    st = game.standings
    assert st is not None
    assert [(s["seat"], s["place"], s["forfeit"]) for s in st][-2:] == [(0, 3, True), (2, 4, True)]
    faults = [e for e in events(game) if e["type"] == "fault"]
    assert [f["seat"] for f in faults] == [2, 0]


def test_fallback_seat_leads_its_lowest_single_and_passes_otherwise() -> None:
    game = make_game("arschloch", {1: WORKED_DEAL})
    game.forfeit(2, "illegal", "bad play")
    assert events(game)[-2]["type"] == "fault"
    assert events(game)[-1] == {"type": "played", "seat": 2, "cards": ["7C"]}
    drive(game, [(3, ["8S"]), (0, ["9C"]), (1, ["10H"])])
    assert events(game)[-1] == {"type": "passed", "seat": 2}


def test_games_sharing_an_engine_memo_play_as_games_on_their_own() -> None:
    """The memo only shares work: games of every preset and table size, played in turn
    with one memo, give exactly the events each gives with a memo of its own, and a game
    given none keeps its memo to itself."""
    from referee.rules.engine import EngineMemo

    shared = EngineMemo()
    for n, preset in itertools.product((3, 4, 6), ("arschloch", "arschloch-52", "president-es")):
        rules = RuleSet.preset(preset, max_rounds=3).resolve(n)
        players = [f"p{i}" for i in range(n)]
        for seed in (1, 2):
            alone = play_random(rules, players, seed, random.Random(seed))
            together = play_random(rules, players, seed, random.Random(seed), memo=shared)
            assert events(together) == events(alone)
            assert together.memo is shared and alone.memo is not shared
    assert shared.lead and any(shared.follow) and any(shared.played)
