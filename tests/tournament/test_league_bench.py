"""The league benchmark, small: its Bradley-Terry fit orders what it should, its three
ways of choosing tables run end to end, read three ways, on a tiny budget, and the bound's
pieces (bench/league_bound.py) hold when numpy and scipy are there."""

from __future__ import annotations

import math

from bench import league_bench
from referee.tournament.model import LeagueSettings


def test_bradley_terry_orders_by_wins_and_warm_starts_to_the_same_fit() -> None:
    names = ["a", "b", "c"]
    pairs = {("a", "b"): [8, 2], ("b", "c"): [7, 3], ("a", "c"): [9, 1]}
    fit = league_bench.bradley_terry(pairs, names, iterations=400)
    assert fit["a"] > fit["b"] > fit["c"]
    assert math.isclose(sum(fit.values()), 0.0, abs_tol=1e-9)  # centred
    again = league_bench.bradley_terry(pairs, names, start=fit, iterations=5)
    assert all(math.isclose(again[n], fit[n], abs_tol=1e-6) for n in names)
    # All wins or all losses: finite, thanks to the half win and half loss of the prior.
    lopsided = league_bench.bradley_terry({("a", "b"): [10, 0]}, ["a", "b"], iterations=200)
    assert all(math.isfinite(v) for v in lopsided.values())
    assert lopsided["a"] > lopsided["b"]


def test_oracle_tables_are_disjoint_seat_the_least_played_and_stay_near_in_the_truth() -> None:
    rates = league_bench.field_of(32, 0)
    league = league_bench.League(rates, "oracle", 0, settings=league_bench.bench_settings(128))
    for _ in range(3):
        tables = league.tables()
        seated = [name for table in tables for name in table]
        assert len(seated) == len(set(seated)) == 4 * len(tables) == 4 * league.settings.batch
        least = min(league.standings[n].matches for n in rates)
        assert all(league.standings[n].matches <= least + 4 for n in seated)
        # Opponents come from within the window around each table's first bot (nearest
        # the window when it has too few free): far closer than random tables of 4 of 32,
        # whose ranks span 18.6 on average.
        window = len(rates) // league_bench.ORACLE_WINDOW
        spans = [
            max(league.true_rank[n] for n in t) - min(league.true_rank[n] for n in t)
            for t in tables
        ]
        assert sum(spans) / len(spans) <= window + 4, spans
        assert sum(span <= 2 * window for span in spans) >= len(spans) - 1, spans
        league.play_batch(workers=1)


def test_the_simulation_runs_every_arm_and_reads_every_order(capsys) -> None:
    scenario = league_bench.Scenario(newcomers=1, join=2.0)
    ok = league_bench.simulation(16, 1, 6, 1, check=2.0, scenario=scenario)
    out = capsys.readouterr().out
    assert not ok  # a tiny budget reaches no tau of 0.9
    for how in league_bench.ORDERS:
        for arm in league_bench.ARMS:
            assert f"seed 0, {how}, {league_bench.ARM_LABELS[arm]}: at " in out
    for target in ("(a) matchmaking", "(b) matchmaking", "(c) matchmaking"):
        assert target in out
    assert "(c) matchmaking" in out and "NOT MEASURED" in out


def test_a_newcomer_s_median_error_counts_only_once_it_holds() -> None:
    curve = league_bench.median_curve([[0.5, 0.05, 0.3, 0.05, 0.05], [0.4, 0.2, 0.1, 0.0]])
    assert curve == [0.45, 0.125, 0.2, 0.025, 0.05]  # the last: one series followed that long
    assert league_bench.batches_to(curve, 0.1, hold=1) == 4  # the dip at batch 2 is not held
    assert league_bench.batches_to(curve, 0.01, hold=1) is None


def test_newcomers_arrive_apart_seated_as_they_join_and_the_cut_is_counted() -> None:
    rates = league_bench.field_of(16, 0)
    fresh = league_bench.newcomers_of(16, 2, 0)
    assert sorted(fresh) == ["q000", "q001"] and all(0 <= r <= 1 for r in fresh.values())
    arrivals = league_bench.arrivals_of(rates, fresh, 2.0)
    assert arrivals["q001"] - arrivals["q000"] == league_bench.STAGGER
    league = league_bench.League(
        {**rates, **fresh},
        "matchmaking",
        0,
        settings=LeagueSettings(batch=3),
        arrivals={"q000": 1},
    )
    league.play_batch(workers=1)
    assert "q000" not in league.ratings and league.errors == {}
    league.play_batch(workers=1)  # it joins and is placed at once
    assert league.standings["q000"].matches == 4 and len(league.errors["q000"]) == 1
    run = league_bench.Run(shares=[(1.0, 1.0), (0.5, 1.0)])
    assert run.cut(1) == 0.0 and run.cut(2) == 0.25


def test_the_bound_s_information_and_a_surrogate_design() -> None:
    import numpy as np  # the dev extra's, for bench/league_bound.py

    from bench import league_bound

    equal = league_bound.table_information(np.zeros(4))
    assert np.allclose(equal.sum(1), 0.0)  # a shift of every strength changes nothing
    assert math.isclose(equal[0, 0], 0.4792, abs_tol=1e-4)  # docs/performance.md's figure
    apart = league_bound.table_information(np.array([1.0, 0.0, 0.0, -1.0]))
    assert apart[0, 0] < equal[0, 0]  # a lopsided table tells less
    rates = league_bench.field_of(16, 0)
    dilution = np.array([rates[n] for n in sorted(rates)])
    coef = np.array([0.0, 0.0, -1.5, 0.75])
    for design in league_bound.DESIGNS:
        points = league_bound.play_design(design, dilution, coef, 0, budget=20, check=5)
        assert len(points) >= 3 and all(-1 <= tau <= 1 for _, tau in points)
