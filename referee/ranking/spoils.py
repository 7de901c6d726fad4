"""Which deals of ``referee compare`` are evidence about the two versions, and which are spoiled.

A paired deal weighs NEW against OLD on the same cards against the same field: what makes
it evidence is that the only difference between its two halves is the version. A fault
that is not the versions' own breaks that, whichever half it falls in:

* **a field bot's fault**, of any kind (a timeout, a crash, an illegal play, a protocol
  fault): the field bot forfeits and drops to the last place, which moves the versions'
  places in that half only. It says something about the field bot, nothing about NEW or
  OLD;
* **a version's fault that is not its own doing** (:func:`referee.errors.own_fault`): a
  crash whose process the referee had killed (:data:`~referee.errors.REFEREE_KILL`), or a
  ``SIGKILL`` no memory counter explains (:data:`~referee.errors.UNCOUNTED_KILL`).

Such a deal is *spoiled* (:func:`spoilers` names who spoiled it): it gives no observation,
and the comparison deals a new deal in its place (the next deal number, on its own fresh
cards), counted against ``--max-matches`` like every deal played. A version's own fault
(a crash, a timeout, an illegal play of NEW or OLD) is evidence about it and counts, as a
forfeit at the last place, unless the same deal is spoiled by one of the above.

**A broken field cannot use up the run.** :func:`first_cap` reads the deals in deal order,
as the test does (:meth:`referee.ranking.sprt.Sprt.first_decision`), and finds the first
deal, from the :data:`MIN_DEALS`-th on, after which a field bot has spoiled more than
:data:`SHARE` of the deals so far; the comparison stops there, naming the bot, unless the
test decided first. Reading in deal order, only over deals whose every match is in (or
failed on the referee's side), keeps the stop where it is whatever the number of workers,
the order matches finish in, or an interruption.

Deal numbers are what keeps the replacements deterministic: deal ``d``'s cards, seats and
field come from the comparison's seed and secret and ``d`` alone
(:func:`referee.tournament.scheduler.compare_deal`), and which deals are spoiled comes from
their stored results; so the same seed deals the same deals, and the same results spoil
the same ones, in any run.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.errors import own_fault
from referee.ranking.sprt import PairedDeals
from referee.specs import StoredMatch
from referee.text import printable

__all__ = [
    "MIN_DEALS",
    "REFEREE_SIDE",
    "SHARE",
    "SpoilCap",
    "first_cap",
    "observations_through",
    "shown",
    "spoil",
    "spoiled_counts",
    "spoilers",
]

MIN_DEALS = 8
"""Deals read before a field bot's share of spoiled deals can stop a comparison: with fewer,
one unlucky timeout is already a quarter."""

SHARE = 0.25
"""A field bot that spoils more than this share of the deals read stops the comparison."""

REFEREE_SIDE = ""
"""Who spoiled a deal where a version's fault was not its own doing: no bot's name (a name
is never empty); :func:`shown` says it in words."""


def shown(name: str) -> str:
    """A spoiler as a person reads it: the bot's name, or "the referee's side"."""
    return "the referee's side" if name == REFEREE_SIDE else printable(name)


def spoilers(match: StoredMatch, versions: tuple[str, str]) -> tuple[str, ...]:
    """Who spoiled ``match``'s deal (see the module docstring), in seat order: each field bot
    with a fault, and :data:`REFEREE_SIDE` for a version's fault not of its own doing;
    empty when the match is evidence."""
    found: list[str] = []
    for seat in sorted(match.seats, key=lambda s: s.seat):
        if seat.fault_kind is None:
            continue
        if seat.name not in versions:
            found.append(seat.name)
        elif not own_fault(seat.fault_kind, seat.fault_detail):
            found.append(REFEREE_SIDE)
    return tuple(dict.fromkeys(found))


def spoil(deals: PairedDeals, match: StoredMatch) -> tuple[str, ...]:
    """Mark ``match``'s deal spoiled in ``deals`` by whoever :func:`spoilers` names; returns
    them. The match must be counted by ``deals.add`` as well (the deal is read once all of
    its matches are in)."""
    names = spoilers(match, (deals.new, deals.old))
    for name in names:
        deals.spoil(match.spec.deal, name)
    return names


def spoiled_counts(deals: PairedDeals) -> dict[str, int]:
    """How many deals each spoiler spoiled, by :func:`shown` name, sorted by name."""
    counts: dict[str, int] = {}
    for names in deals.spoiled_by.values():
        for name in names:
            counts[shown(name)] = counts.get(shown(name), 0) + 1
    return dict(sorted(counts.items()))


@dataclass(frozen=True)
class SpoilCap:
    """A comparison stopped by a field bot that spoiled too many deals: ``name`` spoiled
    ``spoiled`` of deals 0 to ``deal`` (``deals`` of them); ``example`` is one of its faults
    (the match key, then the fault's kind and text), when known."""

    name: str
    spoiled: int
    deals: int
    deal: int
    example: str = ""

    def message(self) -> str:
        """The reason in one line, for the verdict and the JSON."""
        example = f" (e.g. {printable(self.example)})" if self.example else ""
        return (
            f"stopped: field bot {printable(self.name)} spoiled {self.spoiled} of the first "
            f"{self.deals} deals, more than {SHARE:.0%}, with its faults{example}; a field "
            "bot's faults are no evidence about the two versions: fix it or leave it out "
            "of --field"
        )


def first_cap(
    deals: PairedDeals,
    failed: set[int] | frozenset[int] = frozenset(),
    examples: dict[str, str] | None = None,
) -> SpoilCap | None:
    """The first deal, in deal order, after which a field bot has spoiled more than
    :data:`SHARE` of the deals so far (counting from :data:`MIN_DEALS` deals), or ``None``.

    Deals are read from 0 while each is complete (all its matches in) or in ``failed``
    (failed on the referee's side for good in this run): a deal whose matches are still
    out could still be spoiled by another bot. ``examples`` gives a fault of each bot for
    the message.
    """
    counts: dict[str, int] = {}
    deal = 0
    while deals.complete(deal) or deal in failed:
        for name in sorted(deals.spoiled_by.get(deal, ())):
            if name != REFEREE_SIDE:
                counts[name] = counts.get(name, 0) + 1
        read = deal + 1
        if read >= MIN_DEALS:
            worst = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            if worst and worst[0][1] > SHARE * read:
                name, count = worst[0]
                return SpoilCap(name, count, read, deal, (examples or {}).get(name, ""))
        deal += 1
    return None


def observations_through(deals: PairedDeals, last: int) -> list[float]:
    """The observations of deals 0 to ``last`` (each read by :func:`first_cap`), in deal
    order, spoiled deals left out: what the test had read when the cap stopped it."""
    return [deals.observation(d) for d in range(last + 1) if d not in deals.spoiled]
