"""Play-offs: extra matches where the order at the top of the leaderboard is not yet sure.

``playoff = { top = K, until = 0.95, budget = N }`` in the tournament file. When the
scheduled matches are all played, the coordinator asks :func:`plan_round` for a play-off
round, plays it, and asks again, until every adjacent pair among the first ``K`` of the
leaderboard is ordered with confidence ``until``
(:func:`referee.ranking.intervals.order_confidence`:
the two bots compared on the deals both played) or ``N`` play-off matches have been
scheduled.

A round seats the bots of each uncertain pair together: walking down the leaderboard, the
first uncertain pair not yet covered opens a table of the ``k`` bots from its upper one down
(``k`` consecutive places, moved up at the bottom of the leaderboard), which also covers the
next ``k - 2`` pairs. Each such table plays whole deals, each in every seat rotation
(duplicate play, balanced seating continuing the table's cycle,
:mod:`referee.tournament.seating`), so
both bots of a pair hold the same hands against the same opponents: the most direct
evidence there is on their order. A round's tables play one deal each while few matches
are played; as results pile up, a round grows to about one match for every
:data:`ROUND_SHARE` already played (the same number of deals at each of its tables). A
single new deal moves a well-measured order very little, and every round re-rates every
match, so rounds of fixed size would make a long play-off cost the square of its length;
growing rounds keep the number of rounds logarithmic in the budget, and overshoot the point
where the order became sure by at most one round (an eighth). Deals are added deal by deal,
table by table in leaderboard order, while the budget allows a whole deal.

Every decision depends only on the finished matches (a round is planned when all earlier
matches are done, from results that are deterministic) and on the tournament file, so the
same tournament plays the same play-offs whatever the worker count. The matches of a planned
round are stored at once with stable keys (``po/<round>/...``, :func:`referee.tournament.scheduler.
playoff_deal`), and a planned round is never planned again: a run killed mid-round resumes
that round's remaining matches, then goes on as the uninterrupted run would have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from referee.ranking.intervals import OrderConfidence, adjacent_confidences, deal_scores
from referee.ranking.ratings import Rater, make_environment, rate
from referee.specs import (
    PLAYOFF_PREFIX,
    RANK_AFTER_PLAYOFFS,
    MatchSpec,
    PlayoffSettings,
    RankRule,
    RatingSettings,
    StoredMatch,
    deal_key,
    playoff_round,
)
from referee.tournament.scheduler import Duplicate, playoff_deals

if TYPE_CHECKING:
    from referee.rules import ResolvedRules

__all__ = [
    "PlayoffPlan",
    "PlayoffState",
    "identical",
    "plan_round",
    "playoff_rounds",
    "uncertain_pairs",
]

ROUND_SHARE = 8
"""A play-off round plays about one match for every ``ROUND_SHARE`` matches already played
(and at least one deal at each of its tables)."""

PlayoffState = Literal["settled", "budget", "open"]
"""``settled``: every adjacent pair of the top is ordered with the confidence asked for;
``budget``: the budget cannot pay for another deal; ``open``: more play-offs are due."""


@dataclass(frozen=True)
class PlayoffPlan:
    """What :func:`plan_round` decided: the uncertain pairs, and the round's matches."""

    round: int
    state: PlayoffState
    uncertain: tuple[OrderConfidence, ...]
    specs: tuple[MatchSpec, ...]
    spent: int
    """Play-off matches scheduled before this round."""


def uncertain_pairs(
    matches: Sequence[StoredMatch],
    entrants: Sequence[str],
    settings: PlayoffSettings,
    ratings: RatingSettings,
    rules: ResolvedRules | None = None,
    fingerprints: Mapping[str, str] | None = None,
    *,
    rater: Rater | None = None,
    after_playoffs: RankRule = RANK_AFTER_PLAYOFFS,
) -> tuple[list[str], list[OrderConfidence]]:
    """The leaderboard order (rated bots) and the adjacent pairs of its top not yet sure.

    The order is the leaderboard's, under the tournament's recorded rule ``after_playoffs``
    once play-off matches are among ``matches`` (:func:`referee.ranking.ratings.rank_rule`).
    With ``rater`` (the play-off loop's own) the ratings go on from its last replay; the
    order is the same either way. A pair of byte-identical entrants (the same
    ``fingerprints``, entrant to SHA-256 of its files) is never uncertain: no number of
    matches can order two copies of one program, and a play-off for them would spend the
    whole budget on nothing.
    """
    env = make_environment(ratings, rules)
    rated = (rater.rate if rater is not None else rate)(
        matches, entrants, env=env, after_playoffs=after_playoffs
    )
    order = [r.name for r in rated if r.rated]
    top = order[: settings.top]
    pairs = adjacent_confidences(top, deal_scores(matches), resamples=ratings.resamples)
    return order, [
        pair
        for pair in pairs
        if not pair.significant(settings.until) and not identical(pair, fingerprints)
    ]


def identical(pair: OrderConfidence, fingerprints: Mapping[str, str] | None) -> bool:
    """Whether the two bots of ``pair`` are byte-identical (see :func:`uncertain_pairs`)."""
    if not fingerprints:
        return False
    upper, lower = fingerprints.get(pair.upper), fingerprints.get(pair.lower)
    return bool(upper) and upper == lower


def plan_round(
    round_no: int,
    matches: Sequence[StoredMatch],
    specs: Sequence[MatchSpec],
    entrants: Sequence[str],
    *,
    settings: PlayoffSettings,
    ratings: RatingSettings,
    rules: ResolvedRules | None,
    table_size: int,
    seed: int,
    secret: bytes,
    duplicate: Duplicate = "tables",
    authors: Mapping[str, str] | None = None,
    rater: Rater | None = None,
    fingerprints: Mapping[str, str] | None = None,
    after_playoffs: RankRule = RANK_AFTER_PLAYOFFS,
) -> PlayoffPlan:
    """Plan play-off round ``round_no`` from the finished ``matches``.

    ``specs`` are every match scheduled so far (they say how much of the budget is spent
    and how many deals each table has played); new deals are dealt with ``secret``, shared
    as ``duplicate`` says (:func:`referee.tournament.scheduler.deal_tables`). With
    ``authors`` (kept apart), no table seats two entrants of one author. ``rater``: the
    loop's own :class:`~referee.ranking.ratings.Rater`, kept from round to round so that
    each round rates only the results new since the last (without one, every round
    replays every result; the plan is the same). ``fingerprints`` (entrant to SHA-256)
    name byte-identical entrants, whose pair is never played off. ``after_playoffs`` is the
    tournament's recorded rank after play-offs (:func:`uncertain_pairs`): the tables are
    seated by the leaderboard's order.
    """
    spent = sum(spec.key.startswith(PLAYOFF_PREFIX) for spec in specs)
    order, uncertain = uncertain_pairs(
        matches,
        entrants,
        settings,
        ratings,
        rules,
        fingerprints,
        rater=rater,
        after_playoffs=after_playoffs,
    )
    if not uncertain:
        return PlayoffPlan(round_no, "settled", (), (), spent)
    left = settings.budget - spent
    # (Fewer rated bots than a table only before any match: nothing to seat them with.)
    if left < table_size or len(order) < table_size:
        return PlayoffPlan(round_no, "budget", tuple(uncertain), (), spent)
    played: dict[tuple[str, ...], set[str]] = {}
    for spec in specs:  # a table's deals so far: where its seating cycle goes on
        played.setdefault(tuple(sorted(spec.table)), set()).add(deal_key(spec.key))
    tables = _tables(order, uncertain, table_size, authors)
    if not tables:
        return PlayoffPlan(round_no, "budget", tuple(uncertain), (), spent)
    deals = max(1, len(matches) // (ROUND_SHARE * table_size * len(tables)))
    affordable = left // table_size  # whole table deals (every rotation) only
    chosen = [
        (table, len(played.get(table, ())) + extra) for extra in range(deals) for table in tables
    ][:affordable]
    new = playoff_deals(round_no, chosen, seed, secret, duplicate=duplicate, authors=authors)
    return PlayoffPlan(round_no, "open", tuple(uncertain), tuple(new), spent)


def _tables(
    order: Sequence[str],
    uncertain: Sequence[OrderConfidence],
    k: int,
    authors: Mapping[str, str] | None = None,
) -> list[tuple[str, ...]]:
    """Tables of ``k`` consecutive places covering every uncertain pair (module docstring).

    With ``authors`` kept apart, a place whose author already sits at the table is passed
    over for the next place down (then up), and a pair of one author is never seated.
    """
    position = {name: i for i, name in enumerate(order)}
    owner = authors.get if authors else None
    covered_to = -1  # pairs (i, i + 1) with i <= covered_to sit at a table already
    tables = []
    for pair in uncertain:
        i = position[pair.upper]
        if i <= covered_to:
            continue
        start = max(0, min(i, len(order) - k))
        if owner is None:
            tables.append(tuple(sorted(order[start : start + k])))
            covered_to = start + k - 2
            continue
        if owner(pair.upper, pair.upper) == owner(pair.lower, pair.lower):
            continue
        candidates = [*order[start:], *reversed(order[:start])]
        table: list[str] = []
        for name in [pair.upper, pair.lower, *candidates]:
            if (
                len(table) < k
                and name not in table
                and all(owner(name, name) != owner(other, other) for other in table)
            ):
                table.append(name)
        if len(table) == k:
            tables.append(tuple(sorted(table)))
            covered_to = max(position[name] for name in table) - 1
    return tables


def playoff_rounds(specs: Sequence[MatchSpec]) -> int:
    """How many play-off rounds ``specs`` hold."""
    rounds = {playoff_round(spec.key) for spec in specs}
    rounds.discard(None)
    return len(rounds)
