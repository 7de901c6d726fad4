"""Decks and cards.

A card is written as its rank token followed by one suit letter (``"7C"``, ``"10H"``,
``"12B"``). Inside the engine a card is an ``int``: ``rank_index * 4 + suit_index``, where
``rank_index`` is the card's position in the ruleset's rank order (low to high) and
``suit_index`` its suit's position in the deck's suit order. So comparing two ints compares
rank first, then suit order, which is exactly the tie order RULES.md uses.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

DeckName = Literal["skat32", "french52", "spanish40"]


@dataclass(frozen=True)
class Deck:
    """A named deck: its suits (in the deck's suit order) and rank tokens (natural order)."""

    name: str
    suits: tuple[str, ...]
    ranks: tuple[str, ...]
    suit_names: tuple[str, ...]
    suit_symbols: tuple[str, ...]

    def cards(self) -> list[str]:
        """Every card of the deck as a string, ranks in natural order, then suits."""
        return [r + s for r in self.ranks for s in self.suits]


DECKS: dict[str, Deck] = {
    "skat32": Deck(
        "skat32",
        ("C", "S", "H", "D"),
        ("7", "8", "9", "10", "J", "Q", "K", "A"),
        ("clubs", "spades", "hearts", "diamonds"),
        ("♣", "♠", "♥", "♦"),
    ),
    "french52": Deck(
        "french52",
        ("C", "S", "H", "D"),
        ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"),
        ("clubs", "spades", "hearts", "diamonds"),
        ("♣", "♠", "♥", "♦"),
    ),
    "spanish40": Deck(
        "spanish40",
        ("O", "C", "E", "B"),
        ("1", "2", "3", "4", "5", "6", "7", "10", "11", "12"),
        ("oros", "copas", "espadas", "bastos"),
        ("🪙", "🏆", "🗡", "🪵"),
    ),
}


def split_card(card: str) -> tuple[str, str]:
    """Split ``"10H"`` into ``("10", "H")``; no validation against a deck."""
    return card[:-1], card[-1:]


ENCODED_CAP: Final = 50_000
"""At most this many encodings are kept per codec (:meth:`CardCodec.encodings`)."""


class CardCodec:
    """Maps card strings to the engine's ints and back, for one rank order and deck.

    The mapping never changes once built (``names`` is a tuple, ``ids`` a read-only view),
    so one codec may serve every game of its deck and rank order. The one thing that grows
    is :meth:`encodings`, a memo of lines made from these names.
    """

    __slots__ = ("_encoded", "deck", "ids", "names", "nranks", "rank_names")

    def __init__(self, deck: Deck, ranks: list[str] | tuple[str, ...]) -> None:
        self.deck = deck
        self.rank_names: tuple[str, ...] = tuple(ranks)
        self.nranks = len(ranks)
        self.names: tuple[str, ...] = tuple(r + s for r in ranks for s in deck.suits)
        self.ids: Mapping[str, int] = MappingProxyType(
            {name: i for i, name in enumerate(self.names)}
        )
        self._encoded: dict[Hashable, bytes] = {}

    def encodings(self) -> dict[Hashable, bytes]:
        """A memo for whoever encodes values that read the same in every game of this codec.

        The match runner keeps its encoded public events here (a play, a pass, a trick's
        end: their line depends on the event and on these card names alone), so a worker
        encodes each once for all its matches. A value stored must be a function of its key
        and of this codec's deck and rank order only: that is what makes sharing the codec
        between games right. Emptied when it holds more than :data:`ENCODED_CAP` entries
        (looked up once per match, so a long-running worker's memo stays bounded).
        """
        if len(self._encoded) > ENCODED_CAP:
            self._encoded.clear()
        return self._encoded

    def rank_of(self, card_id: int) -> int:
        """The rank index (0 = lowest) of a card id."""
        return card_id >> 2

    def name(self, card_id: int) -> str:
        """The card string of an id."""
        return self.names[card_id]

    def pretty(self, card_id: int) -> str:
        """A card for people: rank token and suit symbol, e.g. ``10♥``."""
        return self.rank_names[card_id >> 2] + self.deck.suit_symbols[card_id & 3]
