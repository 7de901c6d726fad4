"""Bootstrap intervals and order confidence: whole deals resampled, paired, deterministic."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.ranking.intervals import (
    MIN_SHARED_DEALS,
    deal_scores,
    normalised_score,
    order_confidence,
    score_intervals,
)
from referee.specs import MatchSpec, StoredMatch, StoredSeat


def _match(key: str, places: dict[str, int], forfeits: frozenset[str] = frozenset()) -> StoredMatch:
    table = tuple(places)
    spec = MatchSpec(key=key, table=table, deal=0, rotation=0, deal_seed=1, match_seed=1)
    seats = tuple(
        StoredSeat(i, n, places[n], 0, n in forfeits, "crash" if n in forfeits else None, None)
        for i, n in enumerate(table)
    )
    return StoredMatch(spec, seats)


def test_the_normalised_score_is_one_for_first_and_zero_for_last() -> None:
    assert [normalised_score(p, 4) for p in (1, 2, 3, 4)] == [1.0, 2 / 3, 1 / 3, 0.0]
    assert normalised_score(2, 3) == 0.5
    both_forfeit = _match("d/r0", {"a": 1, "b": 2, "c": 3}, frozenset({"b", "c"}))
    [deal] = deal_scores([both_forfeit])
    assert deal.totals == {"a": (1.0, 1), "b": (0.5, 1), "c": (0.5, 1)}


def test_the_bootstrap_resamples_whole_deals_never_single_rotations() -> None:
    """``a`` wins every rotation of two deals and is last in every rotation of two others.

    Resampling deals can only give means that are multiples of 1/4 (4 deals drawn); if
    rotations were drawn one by one (16 of them) most resamples would fall in between.
    """
    matches = []
    for deal, a_place in enumerate((1, 3, 1, 3)):
        for r in range(4):
            others = {"b": 2, "c": 4 - a_place} if a_place == 1 else {"b": 1, "c": 2}
            matches.append(_match(f"rr/t/d{deal:03d}/r{r}", {"a": a_place, **others}))
    deals = deal_scores(matches)
    assert [d.key for d in deals] == [f"rr/t/d{i:03d}" for i in range(4)]
    assert deals[0].totals["a"] == (4.0, 4)
    interval = score_intervals(deals, level=0.9)["a"]
    assert interval.mean == 0.5 and interval.matches == 16 and interval.deals == 4
    assert interval.low in (0.0, 0.25) and interval.high in (0.75, 1.0)
    assert interval.low < 0.5 < interval.high


def test_intervals_are_deterministic_and_ignore_the_storage_order() -> None:
    rng = random.Random(3)
    matches = []
    for deal in range(12):
        for r in range(3):
            places = rng.sample([1, 2, 3], 3)
            matches.append(_match(f"rr/t/d{deal:03d}/r{r}", dict(zip("abc", places, strict=True))))
    first = score_intervals(deal_scores(matches))
    rng.shuffle(matches)
    assert score_intervals(deal_scores(matches)) == first
    assert order_confidence(deal_scores(matches), "a", "b") == order_confidence(
        deal_scores(list(reversed(matches))), "a", "b"
    )
    narrow = score_intervals(deal_scores(matches), level=0.5)["a"]
    assert first["a"].low <= narrow.low <= narrow.high <= first["a"].high


def test_order_confidence_compares_two_bots_on_the_deals_both_played() -> None:
    """``a`` beats ``b`` in every shared deal; deals without both do not count, however
    they went (``b`` wins a lot against others there)."""
    matches = []
    for deal in range(10):
        for r in range(3):
            matches.append(_match(f"rr/ab/d{deal:03d}/r{r}", {"a": 1, "b": 2, "c": 3}))
            matches.append(_match(f"rr/bd/d{deal:03d}/r{r}", {"b": 1, "d": 2, "e": 3}))
            matches.append(_match(f"rr/ae/d{deal:03d}/r{r}", {"a": 3, "d": 1, "e": 2}))
    deals = deal_scores(matches)
    sure = order_confidence(deals, "a", "b")
    assert (sure.confidence, sure.deals) == (1.0, 10) and sure.significant(0.95)
    reverse = order_confidence(deals, "b", "a")
    assert reverse.confidence == 0.0 and not reverse.significant(0.95)
    # b's mean over all its matches is higher than a's: the paired comparison is not that.
    intervals = score_intervals(deals)
    assert intervals["b"].mean > intervals["a"].mean
    nothing_shared = order_confidence(deals, "c", "d")
    assert (nothing_shared.confidence, nothing_shared.deals) == (0.5, 0)


def test_a_handful_of_shared_deals_is_never_significant() -> None:
    matches = [
        _match(f"rr/ab/d{deal:03d}/r0", {"a": 1, "b": 2, "c": 3})
        for deal in range(MIN_SHARED_DEALS - 1)
    ]
    few = order_confidence(deal_scores(matches), "a", "b")
    assert few.confidence == 1.0 and not few.significant(0.95)
    matches.append(_match(f"rr/ab/d{MIN_SHARED_DEALS:03d}/r0", {"a": 1, "b": 2, "c": 3}))
    assert order_confidence(deal_scores(matches), "a", "b").significant(0.95)


@pytest.mark.parametrize("shared", [0.0, 0.5])
def test_equal_bots_get_a_confidence_near_one_half(shared: float) -> None:
    rng = random.Random(int(shared * 10) + 1)
    matches = []
    for deal in range(60):
        for r in range(3):
            if rng.random() < shared:
                places = {"a": 1, "b": 1, "c": 3}
            else:
                places = dict(zip("abc", rng.sample([1, 2, 3], 3), strict=True))
            matches.append(_match(f"rr/t/d{deal:03d}/r{r}", places))
    pair = order_confidence(deal_scores(matches), "a", "b")
    assert 0.05 < pair.confidence < 0.95 and not pair.significant(0.95)


def _reference_means(
    sums: list[float], counts: list[int], resamples: int, name: str
) -> list[float]:
    """The bootstrap as first written (every count drawn and added): the published figures'
    definition, which the faster path must give to the last bit."""
    import hashlib
    import random

    digest = hashlib.sha256(b"referee-bootstrap\0" + name.encode("utf-8")).digest()
    rnd = random.Random(int.from_bytes(digest[:8], "big")).random
    n = len(sums)
    means = []
    for _ in range(resamples):
        drawn = [int(rnd() * n) for _ in range(n)]
        means.append(sum(sums[i] for i in drawn) / sum(counts[i] for i in drawn))
    return means


@given(
    st.lists(
        st.tuples(st.floats(-5, 9, allow_nan=False), st.integers(1, 6)), min_size=1, max_size=40
    ),
    st.booleans(),
    st.text(max_size=8),
)
@settings(max_examples=150, deadline=None)
def test_the_bootstrap_draws_exactly_as_first_defined(
    units: list[tuple[float, int]], same_count: bool, name: str
) -> None:
    """Equal counts take a shorter path; every mean is still the same float."""
    from referee.ranking.intervals import _resampled_means

    sums = [s for s, _ in units]
    counts = [units[0][1]] * len(units) if same_count else [c for _, c in units]
    assert _resampled_means(sums, counts, 50, name) == _reference_means(sums, counts, 50, name)
