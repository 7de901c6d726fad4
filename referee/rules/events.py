"""What the engine says happened: one named tuple per kind of event, declared once.

Each event kind is a :class:`~typing.NamedTuple` whose first field ``type`` is its name in
the match log and the protocol (``"played"``, ``"trick_end"``, ...), so events of different
kinds never compare equal, and ``ev.seat`` reads as what it is wherever the event is used.
Cards are the engine's card ids (:mod:`.cards`); :meth:`log` gives the match log's JSON
object, with card names. The match runner turns most events into the protocol message of
the same shape (a public event); the few that differ by seat are listed in
:mod:`referee.match.runner`.

The engine creates events on its hot path with ``tuple.__new__(Played, (...))``, which skips
the generated ``__new__`` (about half the cost per event: docs/performance.md); the
arguments are the fields in order, ``type`` first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, TypeAlias

from referee.errors import FaultKind

__all__ = [
    "Deal",
    "Eliminated",
    "Event",
    "Exchange",
    "Fault",
    "Finished",
    "Leftover",
    "MatchEnd",
    "Passed",
    "Played",
    "RoundEnd",
    "Skipped",
    "TrickEnd",
]

Cards: TypeAlias = tuple[int, ...]
Names: TypeAlias = Sequence[str]


def _names(cards: Sequence[int], names: Names) -> list[str]:
    return [names[c] for c in cards]


class Deal(NamedTuple):
    """A round is dealt: every seat's hand, and the leftover cards (face up or not)."""

    type: Literal["deal"]
    round: int
    dealer: int
    hands: tuple[Cards, ...]
    leftovers: Cards

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "round": self.round,
            "dealer": self.dealer,
            "hands": [_names(h, names) for h in self.hands],
            "leftovers": _names(self.leftovers, names),
        }


class Leftover(NamedTuple):
    """A seat took a face-up leftover and discarded a card (the discard is private)."""

    type: Literal["leftover"]
    seat: int
    take: int
    discard: int

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "seat": self.seat,
            "take": names[self.take],
            "discard": names[self.discard],
        }


class Exchange(NamedTuple):
    """Cards went from one seat to another in the exchange (one line per direction)."""

    type: Literal["exchange"]
    giver: int
    to: int
    cards: Cards

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "from": self.giver,
            "to": self.to,
            "cards": _names(self.cards, names),
        }


class Played(NamedTuple):
    """A seat played cards."""

    type: Literal["played"]
    seat: int
    cards: Cards

    def log(self, names: Names) -> dict[str, Any]:
        return {"type": self.type, "seat": self.seat, "cards": [names[c] for c in self.cards]}


class Passed(NamedTuple):
    """A seat passed."""

    type: Literal["passed"]
    seat: int

    def log(self, names: Names) -> dict[str, Any]:
        return {"type": self.type, "seat": self.seat}


class Skipped(NamedTuple):
    """A seat lost its turn to an equal-rank play (``equal_rank = skip_next``)."""

    type: Literal["skipped"]
    seat: int

    def log(self, names: Names) -> dict[str, Any]:
        return {"type": self.type, "seat": self.seat}


class TrickEnd(NamedTuple):
    """A trick is over: who won it, why, and who leads the next one."""

    type: Literal["trick_end"]
    winner: int
    reason: Literal["all_passed", "top_card"]
    leader: int

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "winner": self.winner,
            "reason": self.reason,
            "leader": self.leader,
        }


class Finished(NamedTuple):
    """A seat emptied its hand and took a place."""

    type: Literal["finished"]
    seat: int
    place: int

    def log(self, names: Names) -> dict[str, Any]:
        return {"type": self.type, "seat": self.seat, "place": self.place}


class Eliminated(NamedTuple):
    """A seat held only ``no_finish_on`` ranks: out at the lowest free place."""

    type: Literal["eliminated"]
    seat: int
    place: int
    cards: Cards

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "seat": self.seat,
            "place": self.place,
            "cards": _names(self.cards, names),
        }


class Fault(NamedTuple):
    """A seat forfeited; ``id``, ``reply`` and ``elapsed_ms`` are for the log only."""

    type: Literal["fault"]
    seat: int
    kind: FaultKind
    detail: str
    id: int | None
    reply: str | None
    elapsed_ms: int | None

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "seat": self.seat,
            "kind": self.kind,
            "detail": self.detail,
            "id": self.id,
            "reply": self.reply,
            "elapsed_ms": self.elapsed_ms,
        }


class RoundEnd(NamedTuple):
    """A round is over: seats in place order, this round's points and the totals, by seat."""

    type: Literal["round_end"]
    places: list[int]
    points: list[int]
    scores: list[int]

    def log(self, names: Names) -> dict[str, Any]:
        return {
            "type": self.type,
            "places": self.places,
            "points": self.points,
            "scores": self.scores,
        }


class MatchEnd(NamedTuple):
    """The match is over: one standing per seat, best first."""

    type: Literal["match_end"]
    standings: list[dict[str, Any]]

    def log(self, names: Names) -> dict[str, Any]:
        return {"type": self.type, "standings": self.standings}


Event: TypeAlias = (
    Deal
    | Leftover
    | Exchange
    | Played
    | Passed
    | Skipped
    | TrickEnd
    | Finished
    | Eliminated
    | Fault
    | RoundEnd
    | MatchEnd
)
