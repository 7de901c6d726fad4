"""The league of the league tests (``test_league.py``, and the league site's in
``tests/publish``): ten in-memory bots, their league file, a wall clock that moves five
seconds at every look, and a league played for some batches in this process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from referee.league import LeagueEvent, run_league
from referee.testing import InProcessExecutor, lowest_bot, polite_bot

NAMES = tuple(f"b{i}" for i in range(10))


SECRET = bytes(range(32))


def handlers(*labels: str) -> dict[str, Callable[[], Any]]:
    """Alternating polite and lowest fake bots, for every label given (and the league's)."""
    every = (*NAMES, "nova", "b3#2", *labels)
    return {
        label: (lambda label=label, i=i: (polite_bot if i % 2 else lowest_bot)(label))
        for i, label in enumerate(every)
    }


def write(folder: Path, names: Sequence[str] = NAMES, knobs: str = "placement = 1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.py").write_text(f"# {name}, played in memory by the tests\n")
    path = folder / "lg.toml"
    path.write_text(
        'name = "lg"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 4\n'
        f'format = "league"\nseed = 5\n[league]\npoll_seconds = 1\n{knobs}\n'
        + "".join(f'[[bots]]\npath = "{n}.py"\nname = "{n}"\n' for n in names)
    )
    return path


class Clock:
    """Wall time for the league: five seconds pass at every look."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 5
        return self.now


def play(
    path: Path, executor: Any = None, batches: int = 2, clock: Clock | None = None
) -> list[LeagueEvent]:
    events: list[LeagueEvent] = []
    run_league(
        path,
        executor or InProcessExecutor(handlers()),
        batches=batches,
        deal_secret=SECRET,
        clock=clock or Clock(),
        on_event=events.append,
    )
    return events
