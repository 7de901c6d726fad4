"""What a compared version scores in one match: the statistic of ``referee compare``.

A comparison (:mod:`referee.runs.comparison`) pairs each match of NEW with OLD's on the
same cards, seats and field (:class:`~referee.ranking.sprt.PairedDeals`); the statistic
says what each half scores, in ``[0, 1]``:

* ``final-score``: the normalised finishing score of the match's standings,
  ``(k - place) / (k - 1)`` (:func:`~referee.ranking.intervals.normalised_score`, a forfeit
  at the last place as the ratings see it, :func:`~referee.ranking.ratings.rating_places`);
* ``round-score``: the mean over the rounds the match played of the same normalised score
  of the place the version took in each round (the order the seats finished it, the
  match log's ``round_end`` ``places``, :func:`round_places`). A version that forfeited
  scores 0 in every round, as it does under ``final-score``.

**The two halves of a pair may play different numbers of rounds** (a match to 15 points
ends when anyone reaches 15, and the versions' play changes who gets there when): each half
is scored by the mean over the rounds *it* played, so a half of 9 rounds and one of 6 are
on one scale, each round counted once. Truncating both to the rounds the shorter one
played would throw away rounds and favour whichever version makes matches longer; summing
instead of averaging would score the match's length rather than the play.

**Why rounds.** A match to 15 points is 5 to 9 rounds, and its final standings keep only
who reached 15 first: the places of every round carry the same play with less luck,
so the difference of round scores is steadier for the same deals. Its unit is another
one, though: the differences are smaller (the places of the rounds before anyone leads
are nearer even), so the test's hypotheses come with the statistic
(:data:`HYPOTHESES`), chosen on the ladder so that a change the final score calls D1 is
D1 here too (docs/performance.md, "Is my new version better?").

**One round.** A match of one round has one place per seat, and its standings are that
round's order (the round's points are distinct for distinct places under every preset's
scoring, so no place is shared, and a forfeit is last in both): the two statistics are
the same number, and a comparison of one-round matches keeps ``final-score``, which needs
no log read (:func:`default_statistic`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

from referee.ranking.intervals import normalised_score
from referee.ranking.ratings import rating_places
from referee.rules import ResolvedRules
from referee.specs import StoredMatch
from referee.tournament.model import Statistic
from referee.tournament.rounds import RoundPlaces

__all__ = [
    "HYPOTHESES",
    "STATISTICS",
    "RoundPlaces",
    "Statistic",
    "default_statistic",
    "one_round",
    "round_places",
    "version_score",
]

STATISTICS: tuple[Statistic, ...] = get_args(Statistic)

HYPOTHESES: dict[Statistic, tuple[float, float]] = {
    "final-score": (0.0, 0.02),
    "round-score": (0.0, 0.016),
}
"""The test's default D0 and D1 in each statistic's units: ``final-score``'s D1 0.02, and
the round score's difference that goes with it on the ladder (the module docstring)."""


def one_round(rules: ResolvedRules, table_size: int) -> bool:
    """Whether every match under ``rules`` at tables of ``table_size`` is one round: one
    round allowed (``rounds`` or ``max_rounds`` 1), or a ``target`` that the first round's
    winner always reaches."""
    if rules.rounds == 1 or rules.max_rounds == 1:
        return True
    if rules.target is None:
        return False
    best = table_size - 1 if rules.scoring == "below" else max(rules.scoring)
    return best >= rules.target


def default_statistic(rules: ResolvedRules, table_size: int) -> Statistic:
    """``round-score`` for matches of more than one round, ``final-score`` for one round
    (where the two are the same number: the module docstring)."""
    return "final-score" if one_round(rules, table_size) else "round-score"


def round_places(lines: Sequence[Mapping[str, Any]], table_size: int) -> RoundPlaces:
    """The rounds of a match log (its parsed lines): every ``round_end``'s ``places``.

    Raises ``ValueError`` when a round's places are not every seat of ``table_size`` once,
    or the log has no round at all (a log cut short is no evidence of a round score).
    """
    rounds: list[tuple[int, ...]] = []
    seats = list(range(table_size))
    for line in lines:
        if line.get("type") != "round_end":
            continue
        places = line.get("places")
        if not isinstance(places, list) or sorted(places) != seats:
            raise ValueError(f"round {len(rounds) + 1}: places are not seats 0..{seats[-1]}")
        rounds.append(tuple(int(seat) for seat in places))
    if not rounds:
        raise ValueError("the log has no round_end line")
    return tuple(rounds)


def version_score(
    match: StoredMatch, version: str, statistic: Statistic, rounds: RoundPlaces | None = None
) -> float:
    """What ``version`` scores in ``match`` under ``statistic`` (the module docstring);
    ``round-score`` needs the match's ``rounds``. Raises ``ValueError`` when ``version``
    has no seat, or when the rounds are missing or do not fit the table."""
    k = len(match.seats)
    seat = next((st for st in match.seats if st.name == version), None)
    if seat is None:
        raise ValueError(f"match {match.spec.key} seats no {version}")
    if statistic == "final-score":
        return normalised_score(dict(rating_places(match))[version], k)
    if rounds is None:
        raise ValueError(f"match {match.spec.key}: its rounds are needed for round-score")
    if not rounds:
        raise ValueError(f"match {match.spec.key}: no round to score")
    if seat.forfeit:
        return 0.0
    total = 0.0
    for number, places in enumerate(rounds, start=1):
        if len(places) != k or seat.seat not in places:
            raise ValueError(f"match {match.spec.key}: round {number} does not seat all {k}")
        total += normalised_score(places.index(seat.seat) + 1, k)
    return total / len(rounds)
