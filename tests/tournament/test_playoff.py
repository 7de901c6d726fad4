"""Play-off planning: which pairs are uncertain, which tables they get, when it stops.

Results come from a toy model (strength plus seeded noise per match), so these tests are
fast and exact; the real runs with play-offs are in test_run.py.
"""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from referee.ranking.intervals import deal_scores, order_confidence
from referee.ranking.playoff import ROUND_SHARE, plan_round, uncertain_pairs
from referee.ranking.ratings import Rater
from referee.specs import (
    MatchSpec,
    PlayoffSettings,
    RatingSettings,
    StoredMatch,
    StoredSeat,
    deal_key,
    playoff_round,
)
from referee.tournament.scheduler import round_robin

SECRET = bytes(range(32))
STRENGTH = {"a": 3.0, "b": 3.0, "c": 1.5, "d": 0.0, "e": -3.0}
"""``a`` and ``b`` are twins; ``c`` and ``d`` are close; ``e`` is far below."""


LADDER = {"p": 4.5, "q": 3.0, "r": 1.5, "s": 0.0, "t": -1.5}
"""No twins: neighbours 1.5 apart."""


def _play(spec: MatchSpec) -> StoredMatch:
    seed = int.from_bytes(hashlib.sha256(spec.key.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    strength = {**STRENGTH, **LADDER}
    perf = {name: strength[name] + rng.gauss(0, 2) for name in spec.table}
    ranked = sorted(spec.table, key=lambda n: -perf[n])
    seats = tuple(
        StoredSeat(spec.table.index(n), n, place, 0, False, None, None)
        for place, n in enumerate(ranked, start=1)
    )
    return StoredMatch(spec, seats)


def _plan(
    round_no: int,
    specs: list[MatchSpec],
    matches: list[StoredMatch],
    field: dict[str, float] = STRENGTH,
    rater: Rater | None = None,
    **settings: float,
):
    return plan_round(
        round_no,
        matches,
        specs,
        list(field),
        settings=PlayoffSettings(**{"top": 5, "until": 0.95, "budget": 300, **settings}),
        ratings=RatingSettings(resamples=200),
        rules=None,
        table_size=3,
        seed=4,
        secret=SECRET,
        rater=rater,
    )


def _until_over(
    field: dict[str, float] = STRENGTH, rater: Rater | None = None, **settings: float
) -> tuple[list[MatchSpec], list[StoredMatch], list]:
    specs = round_robin(list(field), 3, 2, seed=4, secret=SECRET)
    matches = [_play(s) for s in specs]
    plans = []
    for round_no in range(200):
        plan = _plan(round_no, specs, matches, field, rater, **settings)
        plans.append(plan)
        if not plan.specs:
            break
        specs += plan.specs
        matches += [_play(s) for s in plan.specs]
    return specs, matches, plans


def test_an_early_round_seats_each_uncertain_pair_at_one_table_for_one_deal() -> None:
    specs = round_robin(list(STRENGTH), 3, 2, seed=4, secret=SECRET)
    matches = [_play(s) for s in specs]
    plan = _plan(0, specs, matches)
    assert plan.state == "open" and plan.spent == 0 and plan.uncertain
    tables = {frozenset(s.table) for s in plan.specs}
    for pair in plan.uncertain:
        assert any({pair.upper, pair.lower} <= t for t in tables)
    deals = {deal_key(s.key) for s in plan.specs}
    assert len(plan.specs) == 3 * len(deals) == 3 * len(tables)  # one deal per table
    assert all(playoff_round(s.key) == 0 for s in plan.specs)
    # Each table's play-off deal continues its seating cycle after its 2 scheduled deals.
    assert {s.deal for s in plan.specs} == {2}
    assert plan == _plan(0, specs, list(reversed(matches)))  # results, not their order


def test_play_offs_stop_when_the_top_is_ordered_with_the_confidence_asked() -> None:
    """Without twins, the order of the top 3 gets settled."""
    _, matches, plans = _until_over(LADDER, top=3, until=0.9)
    last = plans[-1]
    assert last.state == "settled" and not last.specs and not last.uncertain
    assert 0 < last.spent < 300
    order, uncertain = uncertain_pairs(
        matches,
        list(LADDER),
        PlayoffSettings(top=3, until=0.9, budget=300),
        RatingSettings(resamples=200),
    )
    assert not uncertain
    for upper, lower in itertools.pairwise(order[:3]):
        assert order_confidence(deal_scores(matches), upper, lower, resamples=200).significant(0.9)


def test_the_loops_rater_plans_the_same_rounds_and_rates_each_result_once() -> None:
    """A rater kept across rounds (as the coordinator keeps one) changes no plan; it rates
    each result once over the whole play-off, where fresh replays rate them every round."""
    specs, matches, plans = _until_over(top=2, budget=31)
    rater = Rater()
    again, _, with_rater = _until_over(rater=rater, top=2, budget=31)
    assert len(plans) == 5 and with_rater == plans and again == specs
    assert rater.steps == len(matches)


def test_play_offs_stop_at_the_budget_when_twins_cannot_be_ordered() -> None:
    specs, _, plans = _until_over(top=2, budget=31)
    last = plans[-1]
    assert last.state == "budget" and not last.specs
    assert {last.uncertain[0].upper, last.uncertain[0].lower} == {"a", "b"}
    played = [s for s in specs if playoff_round(s.key) is not None]
    assert len(played) == last.spent == 30  # whole deals only: 31 cannot pay for an 11th
    assert all({"a", "b"} <= set(s.table) for s in played)


@pytest.mark.parametrize("budget", [3, 9])
def test_a_round_never_goes_over_the_budget(budget: int) -> None:
    specs = round_robin(list(STRENGTH), 3, 2, seed=4, secret=SECRET)
    plan = _plan(0, specs, [_play(s) for s in specs], budget=budget, until=0.99)
    assert 0 < len(plan.specs) <= budget and len(plan.specs) % 3 == 0


def test_rounds_grow_with_the_matches_played_and_keep_each_tables_deals_in_sequence() -> None:
    """With many matches played, a round plays several deals at each table: about one match
    per ROUND_SHARE played, the same number of deals everywhere, numbered on from the
    table's last deal, every key new."""
    specs = round_robin(list(STRENGTH), 3, 24, seed=4, secret=SECRET)  # 10 tables x 24 x 3
    matches = [_play(s) for s in specs]
    plan = _plan(0, specs, matches, until=0.999, budget=10_000)
    tables: dict[frozenset[str], list[int]] = {}
    for spec in plan.specs:
        tables.setdefault(frozenset(spec.table), []).append(spec.deal)
    per_table = {len(set(deals)) for deals in tables.values()}
    assert len(per_table) == 1
    deals = per_table.pop()
    assert deals == len(matches) // (ROUND_SHARE * 3 * len(tables)) > 1
    for played in tables.values():
        assert sorted(set(played)) == list(range(24, 24 + deals))  # after the 24 scheduled
        assert len(played) == 3 * deals  # every rotation of every deal
    assert len({s.key for s in plan.specs} | {s.key for s in specs}) == len(specs) + len(plan.specs)
    # A budget that ends mid-round keeps whole deals and fills the tables in turn.
    cut = _plan(0, specs, matches, until=0.999, budget=3 * (len(tables) + 1))
    assert len(cut.specs) == 3 * (len(tables) + 1)
    counts = [sum(frozenset(s.table) == t for s in cut.specs) // 3 for t in tables]
    assert sorted(counts) == [1] * (len(tables) - 1) + [2]


def test_byte_identical_entrants_are_never_played_off() -> None:
    """The twins of the test above, known to be byte-identical: no round is spent on them,
    and the leaderboard says the play-offs are settled, not open."""
    from referee.ranking.standings import RankingInput, standings

    specs = round_robin(list(STRENGTH), 3, 6, seed=4, secret=SECRET)
    matches = [_play(s) for s in specs]
    fingerprints = {name: name for name in STRENGTH} | {"a": "same", "b": "same"}
    settings = PlayoffSettings(top=2, until=0.95, budget=31)
    common = {
        "settings": settings,
        "ratings": RatingSettings(resamples=200),
        "rules": None,
        "table_size": 3,
        "seed": 4,
        "secret": SECRET,
    }
    blind = plan_round(0, matches, specs, list(STRENGTH), **common)  # type: ignore[arg-type]
    assert blind.specs and {blind.uncertain[0].upper, blind.uncertain[0].lower} == {"a", "b"}
    plan = plan_round(
        0,
        matches,
        specs,
        list(STRENGTH),
        fingerprints=fingerprints,
        **common,  # type: ignore[arg-type]
    )
    assert plan.state == "settled" and not plan.specs and not plan.uncertain
    board = standings(
        RankingInput(
            tuple(matches),
            tuple(STRENGTH),
            playoff=settings,
            table_size=3,
            ratings=RatingSettings(resamples=200),
            fingerprints=fingerprints,
        )
    )
    assert board.playoff is not None and board.playoff.state == "settled"
    assert board.twins == (("a", "b"),)
