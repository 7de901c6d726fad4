"""The near-twin bench's tilt and floor: what its rows are measured against."""

from __future__ import annotations

import math
import random

from bench.near_twin_bench import Law, kl, tilt, wald_floor

POOL = [0.0] * 85 + [1 / 12] * 10 + [-1 / 12] * 3 + [1 / 4] * 2


def test_a_tilt_reaches_the_mean_asked_and_keeps_the_support() -> None:
    law = Law.of(POOL)
    for mean in (0.0, 0.02, -0.01):
        tilted = tilt(law, mean)
        assert math.isclose(tilted.mean, mean, abs_tol=1e-9)
        assert tilted.values == law.values and all(w > 0 for w in tilted.weights)
        assert math.isclose(sum(tilted.weights), 1.0)
    heavier = tilt(law, 0.02)
    assert heavier.weights[-1] > law.weights[-1], "a higher mean weighs the large gain more"


def test_draws_follow_the_law() -> None:
    law = Law.of(POOL)
    draws = law.draws(random.Random(1))
    seen = [next(draws) for _ in range(20_000)]
    assert abs(sum(x == 0 for x in seen) / len(seen) - 0.85) < 0.015
    assert set(seen) <= set(law.values)


def test_wald_floor_grows_as_the_laws_come_together() -> None:
    law = Law.of(POOL)
    d0 = tilt(law, 0.0)
    near, far = tilt(law, 0.01), tilt(law, 0.04)
    assert kl(d0, d0) == 0 and kl(d0, near) < kl(d0, far)
    assert wald_floor(d0, near, 0.05, 0.05) > wald_floor(d0, far, 0.05, 0.05) > 0
