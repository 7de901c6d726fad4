"""Building games with fixed deals and driving them with scripted decisions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from referee.rules import GIVE, LEFTOVER, PLAY, Game, RuleSet

Deal = tuple[Sequence[Sequence[str]], Sequence[str]]


def make_game(
    preset: str,
    deals: dict[int, Deal],
    players: int | None = None,
    seed: int = 0,
    **overrides: Any,
) -> Game:
    """A game whose round ``r`` deals ``deals[r]`` (hands by seat, leftovers)."""
    n = players or len(next(iter(deals.values()))[0])
    rules = RuleSet.preset(preset, **overrides).resolve(n)
    holder: dict[str, Game] = {}

    def source(round_no: int, dealer: int) -> tuple[list[list[int]], list[int]] | None:
        ids = holder["game"].codec.ids if "game" in holder else _ids(rules)
        if round_no not in deals:
            return None  # later rounds: the seeded shuffle
        hands, leftovers = deals[round_no]
        return [[ids[c] for c in h] for h in hands], [ids[c] for c in leftovers]

    game = Game(rules, [f"p{i}" for i in range(n)], seed, deals=source)
    holder["game"] = game
    return game


def _ids(rules: Any) -> dict[str, int]:
    from referee.rules.cards import DECKS, CardCodec

    return dict(CardCodec(DECKS[rules.deck], rules.ranks).ids)


def events(game: Game, since: int = 0) -> list[dict[str, Any]]:
    """The game's events from index ``since`` as log dicts."""
    return [game.event_dict(e) for e in game.events[since:]]


def types(game: Game, since: int = 0) -> list[str]:
    return [e[0] for e in game.events[since:]]


def drive(game: Game, script: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Apply ``(seat, cards)`` decisions in order; each must be what the game awaits."""
    for seat, cards in script:
        assert game.pending is not None, f"game over before {seat} {cards}"
        kind, want = game.pending
        assert want == seat, f"expected seat {want} to {kind}, script has {seat} {cards}"
        if kind == PLAY:
            game.play(seat, list(cards))
        elif kind == GIVE:
            game.give(seat, list(cards))
        else:
            assert kind == LEFTOVER
            game.leftover(seat, cards[0], cards[1])


def finish_lowest(game: Game, limit: int = 100_000) -> None:
    """Play on with every seat making its lowest legal play (passing when following)."""
    for _ in range(limit):
        if game.pending is None:
            return
        kind, seat = game.pending
        names = game.codec.names
        if kind == PLAY:
            moves = game.legal_plays(seat)
            game.play(seat, moves[-1] if game.last >= 0 else moves[0])
        elif kind == GIVE:
            game.give(seat, [names[c] for c in game.hand(seat)[: game.give_count]])
        else:
            take = names[game.offer[0]]
            game.leftover(seat, take, names[game.hand(seat)[0]])
    raise AssertionError("game did not end")


# The deal of RULES.md section 5's worked example: four hands, no leftovers.
WORKED_DEAL: tuple[list[list[str]], list[str]] = (
    [
        ["AC", "AS", "9C", "9S", "10S", "QS", "KH", "7H"],
        ["KC", "KS", "7S", "8C", "9H", "10H", "JH", "QH"],
        ["7C", "8H", "8D", "10C", "9D", "10D", "JD", "QD"],
        ["JC", "JS", "QC", "7D", "8S", "KD", "AH", "AD"],
    ],
    [],
)
