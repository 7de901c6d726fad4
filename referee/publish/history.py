"""The rating history as a chart: each bot's conservative score after every match.

The history is the standings' (:class:`referee.ranking.history.RatingHistory`, recorded
while the ratings are computed), so the last point of each line is the score the
leaderboard shows. The chart is computed when the site is published, as coordinates for an
SVG the template draws: no script is needed to see it. Its size does not grow with the
tournament: each line keeps at most :data:`MAX_POINTS` points (the last score in each of
that many equal slices of the matches), so the leaderboard page stays small with any number
of matches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from referee.ranking.history import RatingHistory

__all__ = [
    "MAX_POINTS",
    "PALETTE",
    "HistoryChart",
    "Series",
    "history_chart",
]

MAX_POINTS = 300
WIDTH, HEIGHT = 900, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 16, 14, 34

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
    "#393b79",
    "#ad494a",
    "#637939",
    "#e6550d",
    "#7b4173",
    "#3182bd",
    "#31a354",
    "#843c39",
    "#de9ed6",
    "#636363",
)
"""Twenty colours that stay apart on white; past twenty, lines are dashed as well."""
_DASHES = ("", "6 3", "2 3", "8 3 2 3")


@dataclass(frozen=True)
class Series:
    """One bot's line: its points as SVG coordinates, and where its last point is."""

    name: str
    index: int
    color: str
    dash: str
    points: str
    last_x: float
    last_y: float
    score: float


@dataclass(frozen=True)
class HistoryChart:
    """The chart's series (in leaderboard order), axes and size."""

    width: int
    height: int
    matches: int
    series: tuple[Series, ...]
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    plot: tuple[float, float, float, float]
    """The plotting area: left, top, right, bottom."""


def _thin(points: list[tuple[int, float]], total: int) -> list[tuple[int, float]]:
    """At most :data:`MAX_POINTS` points: the last of each slice, and the very first."""
    if len(points) <= MAX_POINTS:
        return points
    slices: dict[int, tuple[int, float]] = {}
    for x, y in points[1:]:
        slices[x * (MAX_POINTS - 1) // max(total, 1)] = (x, y)
    return [points[0], *slices.values()]


def _ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values covering ``low`` to ``high`` (steps of 1, 2 or 5 times 10^k)."""
    span = max(high - low, 1e-9)
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def history_chart(history: RatingHistory, names: Sequence[str]) -> HistoryChart:
    """The chart of every bot in ``names`` (leaderboard order)."""
    total = history.matches
    kept = {name: _thin(history.line(name), total) for name in names}
    values = [y for series in kept.values() for _, y in series] or [0.0]
    low, high = min(values), max(values)
    pad = max((high - low) * 0.05, 0.5)
    low, high = low - pad, high + pad
    left, top, right, bottom = _LEFT, _TOP, WIDTH - _RIGHT, HEIGHT - _BOTTOM

    def sx(x: float) -> float:
        return round(left + (right - left) * x / max(total, 1), 1)

    def sy(y: float) -> float:
        return round(bottom - (bottom - top) * (y - low) / (high - low), 1)

    series = []
    for i, name in enumerate(names):
        line = kept[name] or [(0, 0.0)]
        series.append(
            Series(
                name=name,
                index=i,
                color=PALETTE[i % len(PALETTE)],
                dash=_DASHES[(i // len(PALETTE)) % len(_DASHES)],
                points=" ".join(f"{sx(x)},{sy(y)}" for x, y in line),
                last_x=sx(line[-1][0]),
                last_y=sy(line[-1][1]),
                score=line[-1][1],
            )
        )
    x_ticks = tuple(
        (sx(x), f"{x:g}") for x in _ticks(0, max(total, 1)) if x <= total and x == int(x)
    )
    y_ticks = tuple((sy(y), f"{y:g}") for y in _ticks(low, high))
    return HistoryChart(
        WIDTH, HEIGHT, total, tuple(series), x_ticks, y_ticks, (left, top, right, bottom)
    )
