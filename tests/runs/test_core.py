"""The run core (:mod:`referee.runs.core`) with a planner of a test's own, and its one clock.

A gauntlet (one entrant against each other entrant once) is a planner of a few hooks: the
core stages, deals, plays, records and reveals for it. Every wall time a run stores comes
from the clock it was given: a pinned clock leaves no other time in the store.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.errors import UsageError
from referee.results import MatchResult
from referee.runs.core import Planner, Round, Run, play
from referee.runs.tournament import enter_field, run_tournament
from referee.specs import MatchSpec
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.deals import deal_seed
from referee.tournament.file import load_tournament

SECRET = bytes(range(32))
NAMES = ("hero", "b1", "b2", "b3", "b4")


def handlers() -> dict[str, Callable[[], Any]]:
    return {
        name: functools.partial(polite_bot if i % 2 else lowest_bot, name)
        for i, name in enumerate(NAMES)
    }


def write(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        (folder / f"{name}.py").write_text(f"# {name}, played in memory by the tests\n")
    path = folder / "g.toml"
    path.write_text(
        'name = "g"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\nseed = 7\n'
        + "".join(f'[[bots]]\npath = "{n}.py"\nname = "{n}"\n' for n in NAMES)
    )
    return path


class Gauntlet(Planner):
    """``candidate`` against each other entrant once: the others two at a time, at tables
    of three, one match a table on cards of its own."""

    def __init__(self, candidate: str) -> None:
        self.candidate = candidate
        self.planned = False
        self.met: list[tuple[str, ...]] = []

    def prepare(self, run: Run) -> None:
        enter_field(run)

    def next_round(self, run: Run) -> Round | None:
        if self.planned:
            return None
        self.planned = True
        others = [name for name in run.tournament.entrants if name != self.candidate]
        k = run.tournament.file.table_size - 1
        specs = []
        for n in range(0, len(others), k):
            key = f"gx/t{n // k}/r0"
            seed = deal_seed(run.secret.key, "gauntlet", run.tournament.file.seed, key)
            table = (self.candidate, *others[n : n + k])
            specs.append(
                MatchSpec(key=key, table=table, deal=0, rotation=0, deal_seed=seed, match_seed=seed)
            )
        run.store.add_matches(specs, run.secret)
        return run.round(specs)

    def on_result(self, run: Run, spec: MatchSpec, result: MatchResult) -> None:
        self.met.append(spec.table[1:])

    def finished(self, run: Run) -> bool:
        return run.store.done_keys() >= set(run.store.specs())


def test_a_gauntlet_is_a_planner_of_a_few_hooks(tmp_path: Path) -> None:
    path = write(tmp_path)
    tournament = load_tournament(path)
    events: list[Any] = []
    gauntlet = Gauntlet("hero")
    run = play(
        gauntlet,
        tournament,
        InProcessExecutor(handlers()),
        tournament.results_dir,
        deal_secret=SECRET,
        on_event=events.append,
    )
    assert sorted(name for table in gauntlet.met for name in table) == ["b1", "b2", "b3", "b4"]
    assert run.summary.played == run.summary.total == 2 and run.summary.failed == 0
    assert run.summary.chain_results == 2 and run.summary.chain_head is not None
    with sqlite3.connect(tournament.results_dir / "results.sqlite") as db:
        seats = db.execute("SELECT name FROM results WHERE match_key LIKE 'gx/%'").fetchall()
        revealed = db.execute("SELECT revealed FROM deal_secrets").fetchall()
    assert sorted(name for (name,) in seats) == sorted(["hero", "hero", *NAMES[1:]])
    assert [r is not None for (r,) in revealed] == [True]  # every match done: revealed
    assert not any(tournament.results_dir.glob("logs/*.partial*"))


def test_every_time_a_run_stores_is_its_clocks(tmp_path: Path) -> None:
    """A tournament, then a replacement of one entrant, on a pinned clock: the secret's
    draw and reveal, each match's start and finish and the replacement carry its times."""
    path = write(tmp_path)
    ticks = iter(range(1_000_000_000, 1_000_100_000))

    def clock() -> float:
        return float(next(ticks))

    run_tournament(
        load_tournament(path), InProcessExecutor(handlers()), deal_secret=SECRET, clock=clock
    )
    (tmp_path / "b2.py").write_text("# b2, a new version\n")
    run_tournament(
        load_tournament(path), InProcessExecutor(handlers()), replace=["b2"], clock=clock
    )
    with sqlite3.connect(tmp_path / "g.results" / "results.sqlite") as db:
        stamps = [
            *db.execute("SELECT created FROM deal_secrets"),
            *db.execute("SELECT revealed FROM deal_secrets"),
            *db.execute("SELECT started FROM matches"),
            *db.execute("SELECT finished FROM matches"),
            *db.execute("SELECT created FROM replacements"),
        ]
        replaced = db.execute("SELECT COUNT(*) FROM replacements").fetchone()[0]
    assert replaced == 1 and len(stamps) > 20
    assert all(1_000_000_000 <= at < 1_000_100_000 for (at,) in stamps), stamps


class Recording(InProcessExecutor):
    """The in-process executor, noting each step of its lifecycle the run takes."""

    def __init__(self) -> None:
        super().__init__(handlers())
        self.steps: list[str] = []

    def prepare(self, backend: str, images: tuple[str, ...]) -> Any:
        self.steps.append("prepare")
        return super().prepare(backend, images)

    def run(self, tasks: Any, on_event: Any) -> None:
        self.steps.append("run")
        super().run(tasks, on_event)

    def __enter__(self) -> Recording:
        self.steps.append("enter")
        return self

    def __exit__(self, *exc: object) -> None:
        self.steps.append("exit")

    def release_prepared(self) -> None:
        self.steps.append("release")


def test_the_run_keeps_the_executor_for_its_rounds_or_releases_it_when_refused(
    tmp_path: Path,
) -> None:
    path = write(tmp_path)
    played = Recording()
    run_tournament(load_tournament(path), played, deal_secret=SECRET)
    assert played.steps == ["prepare", "enter", "run", "exit"]
    path.write_text(path.read_text().replace("seed = 7", "seed = 8"))  # other settings
    refused = Recording()
    with pytest.raises(UsageError):
        run_tournament(load_tournament(path), refused)
    assert refused.steps == ["prepare", "release"]
