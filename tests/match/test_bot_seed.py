"""``match_start``'s ``seed`` (protocol 1.2): a seed for the bot's own random choices.

It is the same for a seat wherever the same cards are dealt to it, differs from seat to
seat, and tells nothing of the cards: the seed oracle (``tests/bots/seed_oracle.py``), which
finds a deal seed hidden in the ``seed`` it is given, finds nothing in the one the referee
sends (the tournament and ``play`` runs of ``tests/tournament/test_deals.py`` run it for
real).
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from referee.match.runner import bot_seed, play_match
from referee.protocol import messages as m
from referee.protocol.seats import seated
from referee.rules import Game, RuleSet
from referee.testing import FakeSandbox, polite_bot, spec
from referee.tournament.deals import deal_seed

ORACLE = Path(__file__).resolve().parents[1] / "bots" / "seed_oracle.py"


def test_the_seed_is_per_seat_repeatable_and_not_the_match_seed() -> None:
    match_seed = deal_seed(b"s" * 32, "deal", 0, "cmp/d00000")
    seeds = [bot_seed(match_seed, seat) for seat in range(6)]
    assert seeds == [bot_seed(match_seed, seat) for seat in range(6)]
    assert len(set(seeds)) == 6
    assert all(0 <= s < m.SEED_LIMIT for s in seeds)
    assert match_seed not in seeds and all(s != match_seed % m.SEED_LIMIT for s in seeds)
    assert bot_seed(match_seed + 1, 0) != seeds[0]
    assert bot_seed(0, 0) != bot_seed(0, 1)  # small match seeds (play --seed) too


def test_every_seat_gets_its_seed_in_match_start() -> None:
    seen: list[dict[str, Any]] = []

    def recording() -> Any:
        polite = polite_bot("polite")

        def handle(msg: dict[str, Any]) -> Any:
            seen.append(msg)
            return polite(msg)

        return handle

    sandbox = FakeSandbox({"polite": recording})
    rules = RuleSet.preset("arschloch", max_rounds=1).resolve(3)

    async def go() -> None:
        async with seated([spec("polite")] * 3, sandbox=sandbox) as table:
            await play_match(table, rules, 4711, match_id="m")

    asyncio.run(go())
    starts = {msg["seat"]: msg["seed"] for msg in seen if msg["type"] == "match_start"}
    assert starts == {seat: bot_seed(4711, seat) for seat in range(3)}


def _oracle() -> ModuleType:
    loaded = importlib.util.spec_from_file_location("seed_oracle_under_test", ORACLE)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    module.SMALL_SEEDS = 0  # type: ignore[attr-defined]  # only what it derives from the match: the search under test
    return module


def test_the_oracle_finds_a_deal_seed_hidden_in_the_seed_and_nothing_in_the_real_one() -> None:
    """The control shows the oracle would see a leak; the real seed has none."""
    oracle = _oracle()
    rules = RuleSet.preset("arschloch-52").resolve(4)
    protocol_rules = rules.as_protocol()
    found_leak = found_real = 0
    for deal in range(20):
        match_seed = deal_seed(b"k" * 32, "deal", 0, f"cmp/d{deal:05d}")
        game = Game(rules, ["a", "b", "c", "d"], match_seed)
        for seat in range(4):
            hand = game.hand_names(seat)
            state = {"players": list("abcd"), "seat": seat, "match": "cmp/d00001/new/r0"}
            state["rules"] = protocol_rules
            leaked = oracle.search({**state, "seed": match_seed ^ seat}, hand)
            found_leak += leaked == match_seed
            real = oracle.search({**state, "seed": bot_seed(match_seed, seat)}, hand)
            found_real += real is not None
    assert (found_leak, found_real) == (80, 0)
