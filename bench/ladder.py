"""A ladder of reference bots of known order, played in-process for the ranking benchmarks.

Each rung is the heuristic sample bot (``sample_bots/heuristic``) diluted with random legal
moves: before each play it picks a uniformly random legal play (a pass included, where one
is allowed) with the rung's probability, and otherwise plays as the heuristic bot would.
More dilution is weaker; how much weaker is measured, not assumed
(:mod:`bench.ladder_truth`).

Why in-process: the benchmarks play tens of thousands of matches, and what they measure
(how well a schedule and a rating recover a known order) depends only on the decisions the
bots make. So :func:`play` drives the engine directly and hands each bot the very messages
the match runner would send (built by the runner's own
:class:`~referee.match.runner.EventTranslator`),
as parsed JSON, skipping the sandbox, the clock and the framing: about twice the speed of the
runner with :class:`~referee.testing.FakeSandbox`, and the same games. Every bot's random
choices are seeded from the match key and its seat, so a match is a pure function of its
spec: the same spec gives the same result in any process. With ``seeded`` they are seeded
as the referee seeds them since protocol 1.2 instead: from ``match_start``'s ``seed``
(:func:`referee.match.runner.bot_seed` of the match seed and the seat), the same for a seat
wherever the same cards are dealt to it, which is what ``referee compare`` pairs on
(:mod:`bench.compare_bench`); a name in ``own_draws`` then mixes its own name in, a copy
with draws of its own.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import multiprocessing
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from referee.match.runner import EventTranslator, bot_seed
from referee.rules import GIVE, PLAY, Game, ResolvedRules, RuleSet
from referee.specs import MatchSpec, StoredMatch, StoredSeat

REPO = Path(__file__).resolve().parents[1]
HEURISTIC = REPO / "sample_bots" / "heuristic"

RULES = "arschloch"
TABLE_SIZE = 4

FORMATS: dict[str, dict[str, Any]] = {
    "to-15": {},
    "one-round": {"target": None, "rounds": 1},
}
"""How long a ladder match is: changes to the ``arschloch`` preset. ``to-15`` is the preset
itself (a match ends when a player reaches 15 points: 5 to 9 rounds on the ladder, 6.3 on
average);
``one-round`` plays a single round. They differ in what duplicate deals can cancel: the
cards of every round of a deal are the same in each rotation, but from the second round on
each rotation's exchange depends on who won the last, so only the first round of a longer
match is really duplicated."""
DEFAULT_FORMAT = "to-15"

LADDER: dict[str, float] = {
    f"h{round(100 * r):02d}": r for r in (0.0, 0.04, 0.08, 0.12, 0.16, 0.2, 0.24, 0.28)
}
"""Rung name -> probability of a random play instead of the heuristic's."""


@functools.cache
def _heuristic_class() -> type:
    """The sample bot's ``HeuristicBot`` (its folder holds its own copy of the bot kit)."""
    sys.path.insert(0, str(HEURISTIC))
    try:
        spec = importlib.util.spec_from_file_location("ladder_heuristic", HEURISTIC / "bot.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HEURISTIC))
    return module.HeuristicBot  # type: ignore[no-any-return]


def diluted_bot(rate: float, seed: str) -> Any:
    """A heuristic bot that plays a random legal play with probability ``rate``."""
    base = _heuristic_class()

    class Diluted(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.dilution = random.Random(seed)

        def on_play(self, state: Any) -> Any:
            if rate and self.dilution.random() < rate:
                return self.dilution.choice(state.legal)
            return super().on_play(state)

        def on_match_end(self, state: Any, msg: Any) -> None:
            pass  # the sample bot logs its result to stderr; nobody reads it here

    return Diluted()


@functools.cache
def rules(table_size: int = TABLE_SIZE, fmt: str = DEFAULT_FORMAT) -> ResolvedRules:
    """The rules of a ladder match of ``fmt`` (one of :data:`FORMATS`)."""
    return RuleSet.preset(RULES).with_overrides(**FORMATS[fmt]).resolve(table_size)


def play(
    spec: MatchSpec,
    rates: dict[str, float],
    fmt: str = DEFAULT_FORMAT,
    *,
    seeded: bool = False,
    own_draws: frozenset[str] = frozenset(),
) -> StoredMatch:
    """Play ``spec`` among ladder bots (``rates`` by name) in format ``fmt``; the result as
    the store keeps it (``seeded``, ``own_draws``: the module docstring)."""
    return play_rounds(spec, rates, fmt, seeded=seeded, own_draws=own_draws)[0]


def play_rounds(
    spec: MatchSpec,
    rates: dict[str, float],
    fmt: str = DEFAULT_FORMAT,
    *,
    seeded: bool = False,
    own_draws: frozenset[str] = frozenset(),
) -> tuple[StoredMatch, tuple[tuple[int, ...], ...]]:
    """:func:`play`, and the seats of every round in the order they finished it."""
    table = spec.table
    game = Game(rules(len(table), fmt), list(table), spec.match_seed)
    seeds = [bot_seed(spec.match_seed, seat) for seat in range(len(table))]

    def draws(seat: int, name: str) -> str:
        if not seeded:
            return f"{spec.key}:{seat}"
        return f"{seeds[seat]}:{name}" if name in own_draws else str(seeds[seat])

    bots = [diluted_bot(rates[name], draws(seat, name)) for seat, name in enumerate(table)]
    translator = EventTranslator(game)
    protocol_rules = game.rules.as_protocol()
    for seat, bot in enumerate(bots):
        start = {
            "type": "match_start",
            "match": spec.key,
            "seat": seat,
            "players": list(table),
            "rules": protocol_rules,
            "bank_ms": 10_000,
        }
        bot.handle({**start, "seed": seeds[seat]} if seeded else start)
    sent = 0
    request = 0
    while True:
        events = game.events
        for event in events[sent:]:
            for target, data in translator.messages(event):
                message = json.loads(data)
                for seat in range(len(bots)) if target is None else (target,):
                    bots[seat].handle(message)
        sent = len(events)
        pending = game.pending
        if pending is None:
            break
        kind, seat = pending
        request += 1
        act: dict[str, Any] = {"type": "act", "id": request, "hand": game.hand_names(seat)}
        if kind is PLAY:
            act.update(
                kind="play",
                trick=game.trick_info(),
                passed=game.passed_seats(),
                legal=game.legal_plays(seat),
                bank_ms=10_000,
            )
            game.play(seat, bots[seat].handle(act)["cards"])
        elif kind == GIVE:
            act.update(kind="give", to=game.give_to, count=game.give_count)
            game.give(seat, bots[seat].handle(act)["cards"])
        else:
            act.update(kind="leftover", offer=[game.codec.names[c] for c in game.offer])
            reply = bots[seat].handle(act)
            game.leftover(seat, reply["take"], reply["discard"])
    standings = sorted(game.standings or [], key=lambda st: (st["place"], st["seat"]))
    seats = tuple(
        StoredSeat(st["seat"], table[st["seat"]], st["place"], st["score"], False, None, None)
        for st in standings
    )
    rounds = tuple(tuple(event.places) for event in game.events if event.type == "round_end")
    return StoredMatch(spec, seats), rounds


def play_all(
    specs: Sequence[MatchSpec],
    rates: dict[str, float],
    *,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    fmt: str = DEFAULT_FORMAT,
) -> list[StoredMatch]:
    """Play every spec in format ``fmt``, on ``workers`` processes; results in the order of
    ``specs``."""
    results: list[StoredMatch] = []
    for result in _play_stream(specs, rates, workers, fmt):
        results.append(result)
        if progress is not None:
            progress(len(results))
    return results


def _play_stream(
    specs: Sequence[MatchSpec], rates: dict[str, float], workers: int, fmt: str
) -> Iterator[StoredMatch]:
    if workers <= 1 or len(specs) < 8:
        for spec in specs:
            yield play(spec, rates, fmt)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        yield from pool.imap(_play_packed, ((spec, rates, fmt) for spec in specs), chunksize=8)


def _play_packed(packed: tuple[MatchSpec, dict[str, float], str]) -> StoredMatch:
    return play(*packed)
