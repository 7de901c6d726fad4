"""The pure game: decks and cards, rulesets and presets, the engine, log replay."""

from referee.rules.cards import DECKS, CardCodec, Deck
from referee.rules.engine import GIVE, LEFTOVER, PLAY, Game, roles_for
from referee.rules.replay import replay
from referee.rules.ruleset import PRESETS, ResolvedRules, RuleSet, preset_names

__all__ = [
    "DECKS",
    "GIVE",
    "LEFTOVER",
    "PLAY",
    "PRESETS",
    "CardCodec",
    "Deck",
    "Game",
    "ResolvedRules",
    "RuleSet",
    "preset_names",
    "replay",
    "roles_for",
]
