"""The rating history: its last points are the leaderboard's scores; its size is bounded."""

from __future__ import annotations

import random

from referee.publish.history import MAX_POINTS, history_chart
from referee.ranking.history import RatingHistory, rating_history
from referee.ranking.ratings import rate
from referee.specs import MatchSpec, StoredMatch, StoredSeat


def _matches(count: int, names: list[str]) -> list[StoredMatch]:
    rng = random.Random(3)
    out = []
    for i in range(count):
        table = rng.sample(names, 4)
        places = rng.sample(range(1, 5), 4)
        spec = MatchSpec(
            key=f"rr/t/d{i:05d}/r0",
            table=tuple(table),
            deal=i,
            rotation=0,
            deal_seed=1,
            match_seed=1,
        )
        seats = tuple(
            StoredSeat(s, name, places[s], 0, s == 3, "crash" if s == 3 else None, None)
            for s, name in enumerate(table)
        )
        out.append(StoredMatch(spec, tuple(sorted(seats, key=lambda x: x.place))))
    return out


def test_each_line_ends_at_the_rated_score_and_keeps_a_bounded_number_of_points() -> None:
    names = [f"bot{i}" for i in range(5)]
    matches = _matches(500, names)  # about 400 matches per bot: the lines are thinned
    history = RatingHistory()
    rated = rate(matches, names, observe=history)
    ranked = [r.name for r in rated]
    scores = {r.name: r.score for r in rated}
    alone = rating_history(matches, names)
    assert alone.points == history.points  # the same replay, watched or on its own
    chart = history_chart(history, ranked)
    assert chart.matches == 500
    assert [s.name for s in chart.series] == ranked
    for series in chart.series:
        assert abs(series.score - scores[series.name]) < 1e-9
        assert MAX_POINTS // 2 < len(series.points.split()) <= MAX_POINTS + 1
    left, top, right, bottom = chart.plot
    for series in chart.series:
        xs = [float(p.split(",")[0]) for p in series.points.split()]
        ys = [float(p.split(",")[1]) for p in series.points.split()]
        assert xs == sorted(xs) and xs[0] == left and xs[-1] <= right
        assert all(top <= y <= bottom for y in ys)


def test_twenty_bots_get_twenty_different_lines() -> None:
    names = [f"bot{i}" for i in range(24)]
    chart = history_chart(rating_history(_matches(60, names), names), names)
    styles = [(s.color, s.dash) for s in chart.series]
    assert len(set(styles[:20])) == 20 and len(set(styles)) == 24
