"""The sequential test of ``referee compare``: the LLR, the bounds, the interval, decisions."""

from __future__ import annotations

import math
import random

import pytest

from referee.ranking.sprt import MIN_DEALS, MIN_DIFFERING, Sprt, bounds, interval, llr


def test_the_llr_matches_a_hand_computed_value() -> None:
    xs = [0.05, -0.02, 0.10, 0.00, 0.03, 0.04, -0.01]
    n, mean = 7, 0.027142857142857
    squares = sum((x - mean) ** 2 for x in xs)
    assert squares == pytest.approx(0.0103428571)  # 0.0155 - 7 * mean ** 2
    s2 = squares / (n - 5)  # the sample variance scaled by (n - 1) / (n - 5)
    by_hand = n * (0.02 - 0.0) * (2 * mean - 0.0 - 0.02) / (2 * s2)
    # 7 * 0.02 * 0.0342857 / 0.0103428571 = 0.0048 / 0.0103428571
    assert llr(xs, 0.0, 0.02) == pytest.approx(by_hand) == pytest.approx(0.464088, abs=1e-5)
    assert llr(xs, 0.02, 0.0) == pytest.approx(-by_hand)
    assert llr(xs[:5], 0.0, 0.02) == 0.0  # too few to weigh
    assert llr(xs[:1], 0.0, 0.02) == 0.0


def test_the_bounds_are_walds() -> None:
    low, high = bounds(0.05, 0.05)
    assert low == pytest.approx(math.log(0.05 / 0.95)) == pytest.approx(-2.944, abs=1e-3)
    assert high == pytest.approx(-low)
    with pytest.raises(ValueError):
        bounds(0, 0.05)
    with pytest.raises(ValueError, match="D1"):
        Sprt(d0=0.02, d1=0.0)


def test_the_interval_is_students() -> None:
    xs = [0.05, -0.02, 0.10, 0.00, 0.03]
    mean, low, high = interval(xs)
    sd = math.sqrt(sum((x - 0.032) ** 2 for x in xs) / 4)
    assert (mean, high - mean) == pytest.approx((0.032, 2.776 * sd / math.sqrt(5)))
    assert low == pytest.approx(2 * mean - high)
    assert interval([0.1])[1] == -math.inf


def test_a_clear_difference_accepts_h1_and_none_accepts_h0() -> None:
    rnd = random.Random(1)
    better = [rnd.gauss(0.05, 0.1) for _ in range(400)]
    same = [rnd.gauss(0.0, 0.1) for _ in range(400)]
    test = Sprt()
    h1 = test.first_decision(better)
    assert h1.decision == "H1" and h1.llr >= h1.bounds[1] and h1.deals < 400
    h0 = test.first_decision(same)
    assert h0.decision == "H0" and h0.llr <= h0.bounds[0]
    assert test.first_decision(better[: MIN_DEALS - 1]).decision == "undecided"


def test_the_first_decision_is_the_one_of_the_deal_it_was_taken_at() -> None:
    rnd = random.Random(2)
    xs = [rnd.gauss(0.04, 0.1) for _ in range(300)]
    test = Sprt()
    first = test.first_decision(xs)
    assert first.decided and first == test.state(xs[: first.deals])
    assert not any(test.state(xs[:n]).decided for n in range(1, first.deals))


@pytest.mark.parametrize("seed", range(3))
def test_error_rates_stay_near_alpha_and_beta_on_simulated_observations(seed: int) -> None:
    """At D0 the test accepts H1 in about alpha of runs; at D1 it accepts H0 in about beta."""
    rnd = random.Random(seed)
    test = Sprt(alpha=0.1, beta=0.1)
    runs = 200
    false_h1 = sum(
        test.first_decision([rnd.gauss(0.0, 0.1) for _ in range(3000)]).decision == "H1"
        for _ in range(runs)
    )
    false_h0 = sum(
        test.first_decision([rnd.gauss(0.02, 0.1) for _ in range(3000)]).decision == "H0"
        for _ in range(runs)
    )
    assert false_h1 <= 0.1 * runs * 1.6 and false_h0 <= 0.1 * runs * 1.6


def test_a_zero_inflated_sequence_waits_for_enough_deals_that_differ() -> None:
    """Mostly 0 with a few small values: the LLR alone is past the lower bound at
    MIN_DEALS, but fewer than MIN_DIFFERING deals that differ never decide."""
    few = [0.0] * (MIN_DEALS - 3) + [1 / 12, -1 / 12, -1 / 12]
    assert llr(few, 0.0, 0.02) <= bounds(0.05, 0.05)[0]
    test = Sprt()
    assert test.state(few).decision == "undecided" and test.state(few).differing == 3
    longer = few * 10  # 30 deals that differ among 200
    first = test.first_decision(longer)
    assert first.decision == "H0" and first.differing == MIN_DIFFERING
    assert sum(x != 0 for x in longer[: first.deals]) == MIN_DIFFERING


def test_identical_observations_decide_by_their_own_bound() -> None:
    test = Sprt()
    needed = test.identical_deals(0.0)
    assert needed == math.ceil(math.log(0.05) / math.log(1 - 0.02))
    assert test.first_decision([0.0] * (needed - 1)).decision == "undecided"
    state = test.first_decision([0.0] * 400)
    assert (state.decision, state.deals, state.identical, state.differing) == (
        "H0",
        needed,
        True,
        0,
    )
    assert state.llr == -math.inf
    assert llr([0.5] * 10, 0.0, 0.02) == math.inf


def test_the_decision_does_not_depend_on_the_order_of_arrival() -> None:
    """The verdict reads observations in deal order; the same deals handed over as a
    generator or a list give the same state."""
    rnd = random.Random(4)
    xs = [0.0 if rnd.random() < 0.8 else rnd.gauss(0.1, 0.2) for _ in range(600)]
    test = Sprt()
    assert test.first_decision(iter(xs)) == test.first_decision(xs)
