"""The ``montecarlo`` sample bot in the real process sandbox: every preset at 3 and 6 seats,
on a clock with no bank, so a single slow reply would be a timeout fault."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from referee.rules import PRESETS, RuleSet, replay
from referee.sandbox import Limits
from referee.specs import TimeControl
from tests.match.conftest import SAMPLES, sandbox_pids

pytestmark = pytest.mark.slow

MC = SAMPLES / "montecarlo"
OTHERS = [SAMPLES / name for name in ("heuristic", "lowest", "random", "heuristic", "lowest")]
# 250 ms a request and no bank: the bot aims at 60 ms, so this leaves the machine's
# hiccups room while any reply over the limit still fails the match.
CLOCK = TimeControl(move_ms=250, bank_ms=0, hello_ms=10_000)


def _asked(log: list[dict[str, Any]], seat: int, choose: bool) -> Counter[str]:
    """The give and leftover requests the seat answered, read from a match log."""
    asked: Counter[str] = Counter()
    previous: dict[str, Any] = {}
    for line in log:
        if line["type"] == "leftover" and line["seat"] == seat:
            asked["leftover"] += 1
        # A give request: the seat received cards first, then gave some back by choice.
        if (
            choose
            and line["type"] == "exchange"
            and previous.get("type") == "exchange"
            and previous["to"] == seat
            and line["from"] == seat
        ):
            asked["give"] += 1
        previous = line
    return asked


def test_montecarlo_plays_every_preset_at_3_and_6_seats(play) -> None:  # type: ignore[no-untyped-def]
    asked: Counter[str] = Counter()
    for k, preset in enumerate(sorted(PRESETS)):
        for n in (3, 6):
            seat = k % n
            table = OTHERS[: n - 1]
            table.insert(seat, MC)
            played = play(table, preset=preset, seed=100 + k, tc=CLOCK, max_rounds=3)
            faults = [(s.seat, s.fault) for s in played.result.standings if s.fault is not None]
            assert not faults, (preset, n, faults, played.stderr[seat])
            assert played.result.rounds == 3
            replay(played.log)
            choose = RuleSet.preset(preset).return_choice == "choose"
            asked += _asked(played.log, seat, choose)
    # Over these matches the bot was asked for both kinds of exchange decision, too.
    assert asked["give"] > 0 and asked["leftover"] > 0, asked
    assert sandbox_pids() == []


def test_montecarlo_near_its_cpu_limit_stops_searching_instead_of_crashing(play) -> None:  # type: ignore[no-untyped-def]
    """4 CPU seconds for a whole 52-card match, which its searches alone would overrun."""
    table = [MC, SAMPLES / "heuristic", SAMPLES / "heuristic", SAMPLES / "lowest"]
    played = play(table, preset="arschloch-52", seed=5, limits=Limits(cpu_seconds=4))
    faults = [(s.seat, s.fault) for s in played.result.standings if s.fault is not None]
    assert not faults, faults
    assert sandbox_pids() == []
