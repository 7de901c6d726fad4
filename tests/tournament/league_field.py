"""The league of the league tests (``test_league.py``, and the league site's in
``tests/publish``): ten in-memory bots, their league file, a wall clock that moves five
seconds at every look, executors that watch or reorder what they are given, and a league
played for some batches in this process."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from referee.executors import AttemptEvent, Executor, MatchFinished, MatchTask
from referee.runs.league import LeagueEvent, run_league
from referee.testing import InProcessExecutor, lowest_bot, polite_bot

NAMES = tuple(f"b{i}" for i in range(10))


SECRET = bytes(range(32))


def handlers(*labels: str) -> dict[str, Callable[[], Any]]:
    """Alternating polite and lowest fake bots, for every label given (and the league's)."""
    every = (*NAMES, "nova", "b3#2", *labels)
    return {
        label: functools.partial(polite_bot if i % 2 else lowest_bot, label)
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


class Watched(Executor):
    """An in-process executor that records what it was given and can act after a number of
    results: ``then`` runs after the ``after``-th result it reports (then it runs no more)."""

    max_attempts = 1

    def __init__(self, after: int = -1, then: Callable[[], None] = lambda: None) -> None:
        self.inner = InProcessExecutor(handlers())
        self.after = after
        self.then = then
        self.given: list[str] = []
        self.finished = 0

    def prepare(self, backend: str, images: tuple[str, ...]) -> Any:
        return self.inner.prepare(backend, images)

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        self.given += [task.spec.key for task in tasks]

        def report(event: AttemptEvent) -> None:
            on_event(event)
            if isinstance(event, MatchFinished):
                self.finished += 1
                if self.finished == self.after:
                    self.then()

        self.inner.run(self.order(tasks), report)

    def order(self, tasks: Sequence[MatchTask]) -> Sequence[MatchTask]:
        return tasks


class Reversed(Watched):
    """Plays a batch's tasks in reverse: every table's results arrive last rotation first."""

    def order(self, tasks: Sequence[MatchTask]) -> Sequence[MatchTask]:
        return list(reversed(tasks))


def results(path: Path) -> Path:
    return path.parent / "lg.results"
