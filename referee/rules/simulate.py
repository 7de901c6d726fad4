"""Simulated players inside the engine, for demos, property tests and benchmarks."""

from __future__ import annotations

import random
from collections.abc import Sequence

from referee.rules.engine import GIVE, PLAY, EngineMemo, Game
from referee.rules.ruleset import ResolvedRules


def play_random(
    rules: ResolvedRules,
    players: Sequence[str],
    seed: int,
    rng: random.Random,
    *,
    memo: EngineMemo | None = None,
) -> Game:
    """A whole match where every seat makes uniformly random legal decisions (``memo``: the
    engine's, when the caller plays many)."""
    game = Game(rules, players, seed, memo=memo)
    rnd = rng.random
    codes = game.legal_move_codes
    play_move = game.play_move
    while True:
        pending = game.pending
        if pending is None:
            return game
        kind, seat = pending
        if kind is PLAY:
            moves = codes()
            play_move(moves[int(rnd() * len(moves))])
        elif kind == GIVE:
            hand = game.hand(seat)
            game.give(seat, [game.codec.names[c] for c in rng.sample(hand, game.give_count)])
        else:
            take = rng.choice(game.offer)
            hand = [*game.hand(seat), take]
            game.leftover(seat, game.codec.names[take], game.codec.names[rng.choice(hand)])
