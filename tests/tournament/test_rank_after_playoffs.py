"""The rank after play-offs: by mu, not by mu - 3 sigma (referee.ranking.ratings.rank_rule).

Play-offs seat some entrants far more often than others; their sigmas shrink, and
``mu - 3 sigma`` would rank them up for having been played. These tests build that case by
hand, and check the ties, the unrated and every format's words.
"""

from __future__ import annotations

import json

from referee.publish import Leaderboard, to_json, to_markdown
from referee.ranking.ratings import EntrantRating, rank_key, rank_rule, rate
from referee.ranking.standings import RankingInput, standings
from referee.specs import MatchSpec, StoredMatch, StoredSeat


def _match(key: str, order: list[str]) -> StoredMatch:
    """A match of ``order`` (first place first), seated in that order."""
    spec = MatchSpec(key=key, table=tuple(order), deal=0, rotation=0, deal_seed=1, match_seed=1)
    seats = tuple(StoredSeat(i, name, i + 1, 0, False, None, None) for i, name in enumerate(order))
    return StoredMatch(spec, seats)


def _played_off(prefix: str = "po/000/t") -> list[StoredMatch]:
    """``y`` wins both its scheduled matches, ``x`` one of two; then ``x`` plays 30 more matches
    (keys under ``prefix``) against ``m`` and ``n``, winning a third of them: its sigma
    shrinks far below ``y``'s, and its mu ends below ``y``'s."""
    scheduled = [
        _match("rr/a/d000/r0", ["y", "m", "n"]),
        _match("rr/b/d000/r0", ["x", "m", "n"]),
        _match("rr/c/d000/r0", ["y", "n", "m"]),
        _match("rr/d/d000/r0", ["n", "m", "x"]),
    ]
    cycle = (["x", "m", "n"], ["m", "x", "n"], ["m", "n", "x"])
    extra = [_match(f"{prefix}/d{i:03d}/r0", cycle[i % 3]) for i in range(30)]
    return scheduled + extra


def test_after_play_offs_a_lower_mu_is_not_ranked_up_by_a_smaller_sigma() -> None:
    matches = _played_off()
    ratings = {r.name: r for r in rate(matches, ["m", "n", "x", "y"])}
    x, y = ratings["x"], ratings["y"]
    # The case: x played more (smaller sigma), y has the higher mu, and x the higher
    # conservative score, so mu - 3 sigma alone would put x above y.
    assert x.matches > y.matches and x.sigma < y.sigma
    assert y.mu > x.mu and x.score > y.score
    order = [r.name for r in rate(matches, ["m", "n", "x", "y"])]
    assert order.index("y") < order.index("x")
    assert rank_rule(matches) == "mu"
    assert [r.name for r in rate(matches, ["m", "n", "x", "y"])] == sorted(
        ratings, key=lambda n: -ratings[n].mu
    )


def test_without_play_offs_the_rank_is_still_mu_minus_3_sigma() -> None:
    matches = _played_off(prefix="rr/extra")  # the same results, all scheduled
    assert rank_rule(matches) == "conservative"
    order = [r.name for r in rate(matches, ["m", "n", "x", "y"])]
    scores = {r.name: r.score for r in rate(matches, ["m", "n", "x", "y"])}
    assert order == sorted(scores, key=lambda n: -scores[n])
    assert order.index("x") < order.index("y")


def test_ties_in_mu_go_to_the_surer_rating_then_by_name() -> None:
    rated = [
        EntrantRating("b", 25.0, 2.0, matches=3),
        EntrantRating("a", 25.0, 2.0, matches=3),
        EntrantRating("c", 25.0, 1.0, matches=9),
        EntrantRating("d", 26.0, 5.0, matches=1),
    ]
    assert [r.name for r in sorted(rated, key=rank_key("mu"))] == ["d", "c", "a", "b"]
    assert [r.name for r in sorted(rated, key=rank_key("conservative"))] == ["c", "a", "b", "d"]
    # A two-seat play-off match that is a draw: equal ratings, ordered by name.
    draw = _match("po/000/t/d000/r0", ["q", "p"])
    drawn = StoredMatch(
        draw.spec, tuple(StoredSeat(s.seat, s.name, 1, 0, False, None, None) for s in draw.seats)
    )
    tied = rate([drawn], ["q", "p"])
    assert (tied[0].mu, tied[0].sigma) == (tied[1].mu, tied[1].sigma)
    assert [r.name for r in tied] == ["p", "q"]


def test_the_unrated_stay_last_by_name_after_play_offs() -> None:
    ratings = rate(_played_off(), ["zed", "m", "n", "x", "y", "idle"])
    assert [r.name for r in ratings][-2:] == ["idle", "zed"]
    assert [r.rated for r in ratings] == [True] * 4 + [False] * 2


def test_every_format_says_what_the_rank_is_by() -> None:
    entrants = ("m", "n", "x", "y")
    after = Leaderboard("t", "arschloch", standings(RankingInput(tuple(_played_off()), entrants)))
    before = Leaderboard(
        "t", "arschloch", standings(RankingInput(tuple(_played_off("rr/extra")), entrants))
    )
    data, old = json.loads(to_json(after)), json.loads(to_json(before))
    assert (data["ranked_by"], old["ranked_by"]) == ("mu", "conservative")
    assert data["notes"][0].startswith("Rank: TrueSkill mu over every match")
    assert old["notes"][0].startswith("Rank: TrueSkill score, mu - 3 sigma")
    assert [e["name"] for e in data["entries"]].index("y") < [
        e["name"] for e in data["entries"]
    ].index("x")
    assert "after play-offs the rank is by mu" in to_markdown(after)
