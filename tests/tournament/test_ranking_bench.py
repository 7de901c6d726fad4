"""The ranking benchmark's ladder, small: bots of known order come out in that order.

The ladder bots are the heuristic sample bot diluted with random plays, played in-process
(bench/ladder.py); far apart in strength, a short balanced round robin must order them, and
the benchmark's three ways of playing them must run end to end on a tiny budget.
"""

from __future__ import annotations

import math

from bench import ranking_bench
from bench.ladder import play, play_all
from referee.ranking.intervals import adjacent_confidences, deal_scores
from referee.tournament.scheduler import round_robin

FAR = {"r000": 0.0, "r035": 0.35, "r070": 0.7, "r100": 1.0}
"""Rung name -> share of random plays: each rung far weaker than the one before."""
ORDER = ["r000", "r035", "r070", "r100"]


def test_a_ladder_of_four_bots_far_apart_comes_out_in_order_after_a_short_run() -> None:
    specs = round_robin(ORDER, 4, 8, seed=1, secret=ranking_bench.SECRET)
    matches = play_all(specs, FAR)
    assert len(matches) == 32
    order = ranking_bench.published_order(matches, ORDER)
    assert order == ORDER
    assert ranking_bench.kendall_tau(order, ORDER) == 1.0
    assert ranking_bench.kendall_tau(list(reversed(order)), ORDER) == -1.0
    pairs = adjacent_confidences(order, deal_scores(matches))
    assert all(pair.significant(0.95) for pair in pairs), pairs


def test_a_ladder_match_is_a_pure_function_of_its_spec() -> None:
    spec = round_robin(ORDER, 4, 1, seed=2, secret=ranking_bench.SECRET)[1]
    assert play(spec, FAR) == play(spec, FAR)
    assert sorted(seat.place for seat in play(spec, FAR).seats)[0] == 1


def test_the_benchmark_runs_end_to_end_on_a_tiny_budget() -> None:
    results = ranking_bench.run(
        1,
        1,
        rates=FAR,
        truth=ORDER,
        a_levels=(4, 8),
        deals=2,
        budget_per_bot=4,
        balanced_deals=2,
        start_deals=1,
        total_per_bot=12,
        with_twins=False,
    )
    rows = results.rows
    assert results.bots == 4 and rows["b"].levels == (4.0, 8.0)
    assert list(rows) == ["a", "b", "c", "b2", "c2"]
    for row in rows.values():
        assert all(-1.0 <= row.curve.at(level) <= 1.0 for level in row.levels)
    assert rows["c"].curve.runs[0][0] == (4.0, rows["b"].curve.at(4.0))  # (c) starts where (b) does
    # Four bots at four: the balanced design is the one table, so (b2) is (b), deal for deal.
    assert rows["b2"].curve.runs == rows["b"].curve.runs
    for key in ("c", "c2"):
        assert rows[key].states[0] in ("settled", "budget")
    assert rows["c2"].curve.runs[0][-1][0] <= 12  # never over the total asked for
    assert math.isnan(results.a.error(4))  # one seed: no standard error
    text = "\n".join(results.lines())
    assert "(a) random tables" in text and "target (c) <= half of (a)" in text
    assert "target (c2) <= half of (a)" in text
    assert text.startswith("ranking, matches to 15 points")


def test_both_formats_run_and_a_one_round_match_is_one_round() -> None:
    spec = round_robin(ORDER, 4, 1, seed=2, secret=ranking_bench.SECRET)[0]
    rounds = sum(seat.score for seat in play(spec, FAR, "one-round").seats)
    assert rounds == 0 + 1 + 2 + 3  # "below" scoring: one round gives 3, 2, 1 and 0 points
    assert sum(seat.score for seat in play(spec, FAR).seats) >= 15  # someone reached 15
    results = ranking_bench.run(
        1,
        1,
        fmt="one-round",
        rates=FAR,
        truth=ORDER,
        rows=("b", "c"),
        deals=2,
        budget_per_bot=8,
        with_twins=False,
    )
    assert results.rows["c"].levels == (4.0, 12.0)  # the plan's levels below the budget, and it
    assert "one-round matches" in results.lines()[0]


def test_the_benchmark_measures_only_the_rows_asked_for() -> None:
    results = ranking_bench.run(
        1, 1, rates=FAR, truth=ORDER, rows=("b2",), balanced_deals=1, with_twins=False
    )
    assert list(results.rows) == ["b2"] and results.rows["b2"].levels == (4.0,)
    assert "(b2) (b) on balanced tables: 4: " in "\n".join(results.lines())


def test_the_duplicate_check_compares_shared_deals_with_fresh_cards() -> None:
    results = ranking_bench.run(
        2, 1, fmt="one-round", rates=FAR, truth=ORDER, rows=("dup",), with_twins=False
    )
    assert not results.rows and results.duplicates is not None
    dup = results.duplicates
    assert len(dup.duplicate) == len(dup.rotations) == len(dup.fresh) == 2
    assert all(len(run) == 3 for run in results.duplicates.duplicate)  # 3 neighbour pairs
    assert "less variance" in "\n".join(results.lines())
