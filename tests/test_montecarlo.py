"""The ``montecarlo`` sample bot, in-process: its simulator against the referee's engine,
its rollout policy against the ``heuristic`` bot it transcribes, what it infers about the
hidden hands, its clock, and whole matches driven through the engine.

Matches in the real process sandbox are in ``tests/match/test_montecarlo_matches.py``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.match.runner import EventTranslator
from referee.rules import GIVE, LEFTOVER, PLAY, PRESETS, Game, RuleSet

ROOT = Path(__file__).resolve().parents[1]
MC_DIR = ROOT / "sample_bots" / "montecarlo"
HEURISTIC_DIR = ROOT / "sample_bots" / "heuristic"


def _load(folder: Path, module: str, name: str) -> ModuleType:
    """``folder/module.py`` as ``name``, with ``folder`` importable for its own imports."""
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(name, folder / f"{module}.py")
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        return loaded
    finally:
        sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def mc() -> Iterator[ModuleType]:
    """The bot module; ``mc.Table``, ``mc.Rules``, ``mc.policy`` are the simulator's."""
    yield _load(MC_DIR, "bot", "montecarlo_bot_under_test")


@pytest.fixture(scope="module")
def heuristic() -> ModuleType:
    return _load(HEURISTIC_DIR, "bot", "heuristic_bot_under_test")


def table_of(mc: ModuleType, game: Game, dead: list[int] | None = None) -> Any:
    """The simulator's view of the engine's round in progress (every hand known)."""
    rules = mc.Rules(game.rules.as_protocol(), game.n)
    hands = [[len(game.hands[s][r]) for r in range(game.nranks)] for s in range(game.n)]
    return mc.Table(
        rules,
        hands,
        dead or [0] * game.nranks,
        turn=game.turn,
        last=game.last,
        top_rank=game.top_rank,
        top_count=game.top_count,
        passed=game.passed,
        place_of=game.place_of,
        next_top=game._next_top,
        next_bottom=game._next_bottom,
    )


STATE: tuple[str, ...] = (
    "turn",
    "last",
    "top_rank",
    "top_count",
    "passed",
    "place_of",
    "nheld",
    "hands",
)
STATE += ("held", "held_mask", "active", "next_top", "next_bottom")

games = st.tuples(
    st.sampled_from(sorted(PRESETS)),
    st.integers(min_value=3, max_value=6),
    st.integers(min_value=0, max_value=2**32),
    st.integers(min_value=0, max_value=2**32),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_the_simulator_follows_the_engine(
    mc: ModuleType, params: tuple[str, int, int, int]
) -> None:
    """Random matches: at every play the simulator lists the engine's legal moves, in the
    engine's order, and after the same move both are in the same state (turn, trick,
    passes, places, eliminations, the round's end and its places)."""
    preset, n, seed, choices = params
    game = Game(RuleSet.preset(preset, max_rounds=3).resolve(n), [f"p{i}" for i in range(n)], seed)
    rng = random.Random(choices)
    table = None
    while game.pending is not None:
        kind, seat = game.pending
        if kind == GIVE:
            game.give(seat, rng.sample(game.hand_names(seat), game.give_count))
            table = None
            continue
        if kind == LEFTOVER:
            take = game.codec.names[rng.choice(game.offer)]
            game.leftover(seat, take, rng.choice([*game.hand_names(seat), take]))
            table = None
            continue
        if table is None:
            table = table_of(mc, game)
        codes = list(game.legal_move_codes())
        assert table.legal() == codes
        code = rng.choice(codes)
        over = table.play(code)
        game.play_move(code)
        if over:
            places = [e for e in game.events if e[0] == "round_end"][-1].places
            assert table.place_of == [places.index(s) + 1 for s in range(n)]
            table = None
            continue
        again = table_of(mc, game)
        for name in STATE:
            assert getattr(table, name) == getattr(again, name), name


class _Driver:
    """Bots (kit ``Bot`` objects) playing a match through the engine, in-process."""

    def __init__(self, preset: str, n: int, seed: int, bots: list[Any], **overrides: Any) -> None:
        rules = RuleSet.preset(preset, **overrides).resolve(n)
        self.names = [f"p{i}" for i in range(n)]
        self.game = Game(rules, self.names, seed)
        self.bots = bots
        self.translator = EventTranslator(self.game)
        self.sent = 0
        self.requests = 0
        protocol = rules.as_protocol()
        time_control = {"move_ms": 1000, "bank_ms": 10_000, "hello_ms": 10_000}
        for seat, bot in enumerate(bots):
            bot.handle({"type": "hello", "id": 0, "protocol": 1, "time": time_control})
            bot.handle(
                {
                    "type": "match_start",
                    "match": f"m{seed}",
                    "seat": seat,
                    "players": self.names,
                    "rules": protocol,
                    "bank_ms": 10_000,
                }
            )

    def deliver(self) -> None:
        for event in self.game.events[self.sent :]:
            for target, data in self.translator.messages(event):
                message = json.loads(data)
                for seat in range(len(self.bots)) if target is None else (target,):
                    self.bots[seat].handle(message)
        self.sent = len(self.game.events)

    def act(self) -> dict[str, Any]:
        """The request the engine waits for, as the match runner words it."""
        game = self.game
        kind, seat = game.pending  # type: ignore[misc]
        self.requests += 1
        act: dict[str, Any] = {
            "type": "act",
            "id": self.requests,
            "hand": game.hand_names(seat),
            "counts": game.counts(),
        }
        if kind == PLAY:
            act.update(
                kind="play",
                trick=game.trick_info(),
                passed=game.passed_seats(),
                legal=game.legal_plays(seat),
                bank_ms=10_000,
            )
        elif kind == GIVE:
            act.update(kind="give", to=game.give_to, count=game.give_count)
        else:
            act.update(kind="leftover", offer=[game.codec.names[c] for c in game.offer])
        return act

    def answer(self, act: dict[str, Any], reply: dict[str, Any]) -> None:
        seat = self.game.pending[1]  # type: ignore[index]
        self.game.decide(act["kind"], seat, reply)


def test_the_rollout_policy_plays_as_the_heuristic_bot(
    mc: ModuleType, heuristic: ModuleType
) -> None:
    """Heuristic bots play; at each of their plays the policy, given the same view (the
    seat's hand and what it cannot see), chooses the same play. The bot breaks exact ties
    between two equally good plays by float rounding, so a few may differ."""
    agree = total = 0
    for preset in sorted(PRESETS):
        for n in (3, 4, 6):
            bots = [heuristic.HeuristicBot() for _ in range(n)]
            for bot in bots:
                bot.on_match_end = lambda *args: None
            driver = _Driver(preset, n, 7, bots, max_rounds=2)
            rules = mc.Rules(driver.game.rules.as_protocol(), n)
            while True:
                driver.deliver()
                if driver.game.pending is None:
                    break
                act = driver.act()
                seat = driver.game.pending[1]
                if act["kind"] == "play":
                    view = bots[seat].state
                    unseen = [view.unseen(rank) for rank in rules.ranks]
                    table = table_of(mc, driver.game)
                    table.unseen = [u + m for u, m in zip(unseen, table.hands[seat], strict=True)]
                    table.dealt = [b.dealt for b in bots]
                    expected = mc.policy(table)
                reply = bots[seat].handle(act)
                if act["kind"] == "play":
                    cards = reply["cards"]
                    played = rules.rank_of(cards[0]) << 3 | len(cards) if cards else 0
                    agree += played == expected
                    total += 1
                driver.answer(act, reply)
    assert total > 1000
    assert agree >= 0.995 * total, f"{total - agree} of {total} plays differ"


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("n", [3, 6])
def test_whole_matches_through_the_engine(mc: ModuleType, preset: str, n: int) -> None:
    """A short clock (a deal or two per search), safety net off: a bug raises here instead
    of becoming a safe move. Every reply is accepted by the engine (it raises otherwise)."""
    bots = [mc.MonteCarloBot() for _ in range(n)]
    for bot in bots:
        bot.safety_net = False
        bot.budget_ms = 1.0
        bot.min_search_ms = 0.0
    driver = _Driver(preset, n, 11, bots, max_rounds=3)
    kinds: set[str] = set()
    while True:
        driver.deliver()
        if driver.game.pending is None:
            break
        act = driver.act()
        kinds.add(act["kind"])
        driver.answer(act, bots[driver.game.pending[1]].handle(act))
    assert driver.game.round == 3
    assert "play" in kinds
    assert sum(bot.decisions for bot in bots) > 5  # searched, not only the heuristic's play


def _hello(bot: Any, move_ms: int = 1000) -> None:
    bot.handle(
        {"type": "hello", "id": 1, "protocol": 1, "time": {"move_ms": move_ms, "bank_ms": 0}}
    )


RULES = RuleSet.preset("arschloch").resolve(4).as_protocol()


def _start(bot: Any, hand: list[str], rnd: int = 1, move_ms: int = 1000) -> None:
    _hello(bot, move_ms)
    bot.handle(
        {
            "type": "match_start",
            "match": "t",
            "seat": 0,
            "players": ["me", "a", "b", "c"],
            "rules": RULES,
            "bank_ms": 0,
        }
    )
    roles = None if rnd == 1 else ["president", "vice_president", "vice_arschloch", "arschloch"]
    bot.handle(
        {
            "type": "round_start",
            "round": rnd,
            "dealer": 3,
            "hand": hand,
            "hand_sizes": [8, 8, 8, 8],
            "roles": roles,
            "scores": [0, 0, 0, 0],
            "leftovers": [],
        }
    )


LEAD = ["7C", "8H", "8D", "9S", "JC", "QH", "KD", "AS"]


def _lead(hand: list[str], rid: int = 5) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for card in hand:
        groups.setdefault(card[:-1], []).append(card)
    legal = [g[:k] for g in groups.values() for k in range(1, len(g) + 1)]
    return {
        "type": "act",
        "id": rid,
        "kind": "play",
        "hand": hand,
        "trick": {"leader": 0, "count": 0, "top": []},
        "passed": [],
        "legal": legal,
        "bank_ms": 0,
        "counts": [len(hand), 8, 8, 8],
    }


@pytest.mark.parametrize(("move_ms", "limit_ms"), [(50, 50), (1000, 150)])
def test_a_search_stops_inside_its_clock(mc: ModuleType, move_ms: int, limit_ms: int) -> None:
    """About 60 ms a decision, never more than 40 % of move_ms (20 ms at 50 ms)."""
    bot = mc.MonteCarloBot()
    _start(bot, LEAD, move_ms=move_ms)
    started = time.perf_counter()
    reply = bot.handle(_lead(LEAD))
    elapsed = (time.perf_counter() - started) * 1000
    assert reply["cards"] and set(reply["cards"]) <= set(LEAD)
    assert bot.decisions == 1 and bot.samples >= 2
    assert elapsed < limit_ms


def test_a_single_choice_is_answered_without_a_search(mc: ModuleType) -> None:
    bot = mc.MonteCarloBot()
    _start(bot, ["9S"])
    assert bot.handle(_lead(["9S"])) == {"id": 5, "cards": ["9S"]}
    assert bot.decisions == 0


def _exchange_as_president(bot: Any) -> None:
    """Round 2, seat 0 president: the arschloch (seat 3) hands over KC and QD."""
    _start(bot, ["7C", "8D", "9S", "10H", "JC", "QH", "AC", "AD"], rnd=2)
    bot.handle({"type": "exchanged", "from": 3, "to": 0, "count": 2})
    bot.handle({"type": "received", "from": 3, "cards": ["KC", "QD"]})


def test_deals_respect_the_counts_and_what_the_exchange_showed(mc: ModuleType) -> None:
    bot = mc.MonteCarloBot()
    _exchange_as_president(bot)
    hand = ["7C", "8D", "9S", "10H", "JC", "QH", "QD", "KC", "AC", "AD"]
    gave = bot.handle({"type": "act", "id": 3, "kind": "give", "hand": hand, "to": 3, "count": 2})
    assert sorted(gave["cards"]) == ["7C", "8D"]  # the two lowest singles cost least
    bot.handle({"type": "exchanged", "from": 0, "to": 3, "count": 2})
    bot.handle({"type": "played", "seat": 3, "cards": ["8C"]})
    bot.state.hand = [c for c in hand if c not in gave["cards"]]
    model = bot.know.model(bot.state)
    _, known, needs = model
    assert known[3] == [0, 1] and needs == [0, 8, 8, 5]  # 7 and 8 known; 8C played
    rules = bot.sim
    sampler = bot.sampler(model)
    for _ in range(200):
        hands, dead = sampler.draw()
        assert [sum(h) for h in hands] == [8, 8, 8, 7] and not any(dead)
        # Seat 3 kept nothing above a queen after giving its best, plus our 7 and 8.
        assert hands[3][0] >= 1 and hands[3][1] >= 1
        assert not any(hands[3][rules.index["K"] :])
        # Every card is somewhere once: in a hand or played (nothing lies face down here).
        total = [sum(h[r] for h in hands) for r in range(rules.nranks)]
        assert [t + (r == 1) for r, t in enumerate(total)] == [4] * rules.nranks


def test_give_and_leftover_match_the_heuristic_hand_value(
    mc: ModuleType, heuristic: ModuleType
) -> None:
    """Random hands: the same cards given back and the same leftover choice as the
    heuristic bot, whose hand value both use."""
    rng = random.Random(5)
    deck = [r + s for r in RULES["ranks"] for s in RULES["suits"]]
    for trial in range(40):
        cards = rng.sample(deck, 12)
        hand, offer = cards[:10], cards[10:]
        answers = []
        for bot in (mc.MonteCarloBot(), heuristic.HeuristicBot()):
            _start(bot, hand[:8], rnd=2)
            bot.handle({"type": "round_start", **_round(hand[:8], offer)})
            left = bot.handle(
                {"type": "act", "id": 2, "kind": "leftover", "hand": hand[:8], "offer": offer}
            )
            count = 1 + trial % 2
            give = bot.handle(
                {"type": "act", "id": 3, "kind": "give", "hand": hand, "to": 3, "count": count}
            )
            answers.append((left["take"], left["discard"], sorted(give["cards"])))
        assert answers[0] == answers[1], (hand, offer)


def _round(hand: list[str], leftovers: list[str]) -> dict[str, Any]:
    return {
        "round": 2,
        "dealer": 3,
        "hand": hand,
        "hand_sizes": [8, 8, 8, 8],
        "roles": ["president", "vice_president", "vice_arschloch", "arschloch"],
        "scores": [3, 2, 1, 0],
        "leftovers": leftovers,
    }


def test_with_little_time_it_plays_the_heuristic_choice_unsearched(mc: ModuleType) -> None:
    bot = mc.MonteCarloBot()
    _start(bot, LEAD, move_ms=10)  # 4 ms to think: not worth a search
    reply = bot.handle(_lead(LEAD))
    assert bot.decisions == 0
    assert sorted(reply["cards"]) == ["7C"]  # the heuristic leads its lowest single


def test_deals_explain_what_the_others_played(mc: ModuleType) -> None:
    """Seat 1 led a single nine. The heuristic leads its lowest group that is not a boss,
    so a hand holding a seven or an eight would have led that: explained deals hold
    neither, while plain random deals nearly always do."""
    bot = mc.MonteCarloBot()
    hand = ["7C", "7S", "8C", "10C", "10S", "JC", "QC", "KC"]
    _start(bot, hand)
    bot.handle({"type": "played", "seat": 1, "cards": ["9C"]})
    bot.handle({"type": "passed", "seat": 2})
    model = bot.know.model(bot.state)
    low = [bot.sim.index["7"], bot.sim.index["8"]]

    def share_with_low_cards(swaps: int) -> float:
        sampler = bot.sampler(model)
        sampler.tries = swaps
        hands = [sampler.draw()[0] for _ in range(300)]
        assert all(sum(h[1]) == 7 for h in hands)  # the nine is gone from seat 1
        return sum(1 for h in hands if any(h[1][r] for r in low)) / len(hands)

    assert share_with_low_cards(0) > 0.7
    assert share_with_low_cards(mc.EXPLAIN_SWAPS) < 0.25


def test_near_the_cpu_limit_it_stops_searching(mc: ModuleType, monkeypatch: Any) -> None:
    bot = mc.MonteCarloBot()
    _start(bot, LEAD)
    spent = time.process_time()
    monkeypatch.setattr(mc, "CPU_LIMIT", spent / 0.65)  # 65 % spent: half the usual time
    assert 0.4 < mc.cpu_share_left() <= 0.5
    monkeypatch.setattr(mc, "CPU_LIMIT", spent / 0.85)  # past 80 %: no search at all
    assert mc.cpu_share_left() == 0.0
    assert bot.handle(_lead(LEAD))["cards"] == ["7C"] and bot.decisions == 0
