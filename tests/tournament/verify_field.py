"""The field of the verify tests (``test_verify.py``, ``test_beacon.py``): eight in-memory
bots, their tournament file, and an executor that stops part-way, as a killed run would."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from referee.executors.base import AttemptEvent, Executor, MatchTask, SandboxPlan
from referee.testing import InProcessExecutor, lowest_bot, polite_bot

NAMES = ("ann", "bob", "cat", "dan", "eve", "fay", "gus", "hal")


HANDLERS = {
    name: (lambda name=name, i=i: (polite_bot if i % 2 else lowest_bot)(name))
    for i, name in enumerate(NAMES)
}


def write(folder: Path, *, bots: Sequence[str] = NAMES, extra: str = "", deals: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in bots:
        (folder / f"{name}.py").write_text("# played in memory by the tests\n")
        entries.append(f'[[bots]]\npath = "{name}.py"\n')
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 4\n'
        f"deals = {deals}\nseed = 11\n{extra}\n" + "\n".join(entries)
    )
    return path


class StopsAfter(Executor):
    """Plays the first ``count`` tasks it is given and stops, as a killed run would."""

    max_attempts = 1

    def __init__(self, count: int) -> None:
        self.inner, self.count = InProcessExecutor(HANDLERS), count

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        return self.inner.prepare(backend, images)

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        self.inner.run(tasks[: self.count], on_event)
