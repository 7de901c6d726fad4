"""The collusion check on simulated round robins (:func:`bench.collusion_bench.round_robin`):
colluders are flagged, honest pairs are not, more often than the level says."""

from __future__ import annotations

import random

import pytest

from bench.collusion_bench import round_robin
from referee.ranking.collusion import (
    LEVEL,
    MIN_DEALS,
    collusion_check,
    t_tail,
)
from referee.specs import StoredMatch


@pytest.mark.parametrize(
    ("t", "df", "tail"),
    [
        (12.706, 1, 0.025),
        (4.303, 2, 0.025),
        (3.182, 3, 0.025),
        (1.812, 10, 0.05),
        (2.228, 10, 0.025),
        (3.169, 10, 0.005),
        (2.042, 30, 0.025),
        (1.962, 1000, 0.025),
        (0.0, 7, 0.5),
        (-1.812, 10, 0.95),
    ],
)
def test_the_t_tail_matches_the_printed_tables(t: float, df: int, tail: float) -> None:
    assert t_tail(t, df) == pytest.approx(tail, abs=2e-4)


def test_a_bot_that_always_lets_its_partner_win_is_flagged_and_no_honest_pair_is() -> None:
    check = collusion_check(round_robin(1, helps=("bot3", "bot1")))
    [flagged] = check.flagged
    assert (flagged.a, flagged.b) == ("bot1", "bot3")
    assert flagged.pattern == "a_gains" and flagged.a_excess > 0.2
    assert flagged.a_without is not None and flagged.a_with > flagged.a_without + 0.2
    assert flagged.describe() == "bot1 does better when bot3 is at its table"
    assert check.pairs[0] == flagged  # flagged first
    assert check.tested == len(check.pairs) == 10


def test_colluders_are_flagged_in_every_tournament() -> None:
    for seed in range(20):
        check = collusion_check(round_robin(seed, helps=("bot0", "bot4")))
        assert [(p.a, p.b) for p in check.flagged][:1] == [("bot0", "bot4")], seed


@pytest.mark.parametrize("level", [0.05, 0.01])
def test_honest_pairs_are_flagged_no_more_often_than_the_level(level: float) -> None:
    """150 honest tournaments, 1,500 pairs: the share flagged stays within three standard
    errors of the level (it is below it: the margin and Bonferroni are conservative)."""
    pairs = flagged = 0
    for seed in range(150):
        check = collusion_check(round_robin(seed, spread=1.0), level=level)
        pairs += check.tested
        flagged += len(check.flagged)
    assert pairs == 1500
    assert flagged / pairs <= level + 3 * (level * (1 - level) / pairs) ** 0.5


def test_a_weak_bot_raising_everyones_score_is_not_collusion() -> None:
    """Everybody scores more at a table with a hopeless bot: the plain difference is large,
    the excess (after the table's strengths) is not."""
    check = collusion_check(round_robin(3, strength={"bot0": -4.0}))
    with_weak = [p for p in check.pairs if p.a == "bot0"]
    assert len(with_weak) == 4
    for p in with_weak:
        assert p.b_without is not None and p.b_with - p.b_without > 0.1
        assert abs(p.b_excess) < 0.1
    assert check.flagged == ()


def test_few_shared_deals_are_never_flagged() -> None:
    check = collusion_check(round_robin(1, deals=2, helps=("bot3", "bot1")))
    pair = next(p for p in check.pairs if (p.a, p.b) == ("bot1", "bot3"))
    assert pair.deals == 6 < MIN_DEALS
    assert pair.p_value is not None and pair.p_value <= LEVEL  # out of line, but too few
    assert not pair.flagged and check.flagged == ()


def test_matches_are_grouped_by_deal_id_whatever_their_keys() -> None:
    matches = round_robin(2)
    check = collusion_check(matches)
    assert {p.deals for p in check.pairs} == {3 * 6}  # 3 shared tables, 6 deals each
    assert {p.matches for p in check.pairs} == {3 * 6 * 3}
    one_deal = [
        StoredMatch(m.spec.model_copy(update={"deal_id": f"d{m.spec.deal}"}), m.seats)
        for m in matches
    ]
    assert {p.deals for p in collusion_check(one_deal).pairs} == {6}


def test_the_check_is_deterministic_and_ignores_the_order_of_the_matches() -> None:
    matches = round_robin(4, helps=("bot2", "bot0"))
    shuffled = matches[:]
    random.Random(9).shuffle(shuffled)
    assert collusion_check(matches) == collusion_check(shuffled)


def test_pairs_are_named_in_the_given_order_and_carry_authors() -> None:
    check = collusion_check(
        round_robin(5),
        order=["bot4", "bot3", "bot2", "bot1", "bot0"],
        authors={"bot4": "ann", "bot3": "ann", "bot0": "bob"},
    )
    pair = next(p for p in check.pairs if {p.a, p.b} == {"bot3", "bot4"})
    assert (pair.a, pair.b, pair.a_author, pair.same_author) == ("bot4", "bot3", "ann", True)
    other = next(p for p in check.pairs if {p.a, p.b} == {"bot1", "bot0"})
    assert (other.a, other.a_author, other.b_author, other.same_author) == (
        "bot1",
        None,
        "bob",
        False,
    )
    data = check.as_dict()
    assert list(data) == ["level", "min_deals", "tested", "flagged", "pairs"]
    assert len(data["pairs"]) == 10 and data["pairs"][0]["a_author"] in (None, "ann", "bob")
