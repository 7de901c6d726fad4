"""``referee play BOTS --matches N``: N matches of the bots, then a short table.

Thin, like every command: :func:`referee.tournament.quick.quick_tournament` makes the one
table's tournament, :func:`referee.runs.tournament.run_tournament` plays it on local workers
into a results folder (resumable: the same command with the same ``--results`` goes on
where it stopped), and :func:`referee.ranking.tally.tally` makes the table from the stored
matches. Progress goes to stderr (a bar on a terminal, a line every tenth otherwise); the
table, or its JSON, to stdout.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import tempfile
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from referee.cli.app import check_memory, say
from referee.cli.progress import Every, ProgressView
from referee.cli.tables import print_table
from referee.cli.tally import tally_table
from referee.errors import UsageError
from referee.executors.local import LocalExecutor
from referee.protocol.session import distinct_names
from referee.ranking.tally import Tally, tally
from referee.runs.tournament import RunProgress, RunStarted, RunSummary, run_tournament
from referee.sandbox import Limits, get_sandbox
from referee.specs import StoredFault, TimeControl
from referee.text import printable
from referee.tournament.file import Tournament
from referee.tournament.quick import quick_tournament
from referee.tournament.scheduler import DUPLICATE_MODES, Duplicate
from referee.tournament.store import Store

__all__ = ["MAX_MATCHES", "Series", "play_matches", "series_options"]

F = TypeVar("F", bound=Callable[..., Any])

MAX_MATCHES = 100_000
"""The most matches one ``play --matches`` plays (a tournament file holds more)."""


@dataclass(frozen=True)
class Series:
    """What ``play`` was given for several matches (``matches`` is ``None`` for one)."""

    matches: int | None = None
    workers: int | None = None
    results: Path | None = None
    restart: bool = False
    duplicate: Duplicate = "tables"

    def check(self, *, human_seat: int | None, log_path: str | None) -> None:
        """Refuse options of one match with ``--matches``, and its options without it."""
        if self.matches is not None:
            if human_seat is not None:
                raise UsageError("--human and --matches do not go together: you play one match")
            if log_path is not None:
                raise UsageError(
                    "--log and --matches do not go together: every match keeps its log in "
                    "the results folder (--results DIR)"
                )
            if self.restart and self.results is None:
                raise UsageError("--restart discards the results in --results DIR; name it")
            return
        given = {
            "--workers": self.workers is not None,
            "--results": self.results is not None,
            "--restart": self.restart,
            "--duplicate": self.duplicate != "tables",
        }
        for option, used in given.items():
            if used:
                raise UsageError(f"{option} needs --matches N: it is about several matches")


def series_options(command: F) -> F:
    """``--matches``, ``--workers``, ``--results``, ``--restart`` and ``--duplicate``,
    handed to the command as one ``series`` (a :class:`Series`)."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        matches: int | None,
        workers: int | None,
        results_dir: Path | None,
        restart: bool,
        duplicate: Duplicate,
        **kwargs: Any,
    ) -> Any:
        series = Series(matches, workers, results_dir, restart, duplicate)
        return command(*args, series=series, **kwargs)

    options = [
        click.option(
            "--matches",
            default=None,
            type=click.IntRange(1, MAX_MATCHES),
            metavar="N",
            help="Play N matches instead of one, on balanced seating (N rounded up to a "
            "multiple of the number of bots: whole seat rotations), each on its own cards, "
            "and print a table: each bot's mean score with its 95% interval, places, faults.",
        ),
        click.option(
            "--workers",
            default=None,
            type=click.IntRange(1, 1024),
            help="With --matches: worker processes (default: one per core).",
        ),
        click.option(
            "--results",
            "results_dir",
            default=None,
            type=click.Path(file_okay=False, path_type=Path),
            help="With --matches: keep the results and a log of every match in this folder; "
            "the same command again resumes there (default: a new folder under the temp "
            "folder, named when it starts).",
        ),
        click.option(
            "--restart",
            is_flag=True,
            help="With --results: discard the results stored there first (after a bot changed).",
        ),
        click.option(
            "--duplicate",
            default="tables",
            type=click.Choice(DUPLICATE_MODES),
            show_default=True,
            help="With --matches: tables deals every match its own cards, so no bot meets the "
            "same cards twice, as in a tournament; rotations plays the seat rotations of a "
            "deal on the same cards (less card luck, but each bot sees every hand of the "
            "deal: trusted bots only).",
        ),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return typing.cast(F, decorated)


def play_matches(
    specs: Sequence[Any],
    given: Sequence[str],
    series: Series,
    preset: str,
    max_rounds: int | None,
    seed: int | None,
    sandbox_name: str,
    images: tuple[str, ...],
    time_control: TimeControl,
    *,
    memory_mb: int,
    as_json: bool,
) -> None:
    """Play the matches of ``specs`` (as the user named them: ``given``) with ``play``'s
    settings, print the table; exit code 1 when a match failed on our side."""
    assert series.matches is not None
    names = distinct_names([spec.name for spec in specs])
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise UsageError(
            f"two seats would both be called {printable(twice)!r} (a bot taking several seats "
            "is numbered name#1, name#2, ...); rename one of the bots"
        )
    bots = [dataclasses.replace(spec, name=name) for spec, name in zip(specs, names, strict=True)]
    folder = series.results or Path(tempfile.mkdtemp(prefix="referee-play-"))
    _check_folder_name(folder)
    tournament = quick_tournament(
        bots,
        given,
        preset=preset,
        max_rounds=max_rounds,
        matches=series.matches,
        seed=seed or 0,
        duplicate=series.duplicate,
        time_control=time_control,
        backend=sandbox_name,
        memory_mb=memory_mb,
        images=images,
        folder=folder,
    )
    sandbox = get_sandbox(sandbox_name, images=images)
    check_memory(sandbox, len(bots), memory_mb, fix="lower --memory-mb")
    executor = LocalExecutor.within_memory(
        series.workers,
        seats=len(bots),
        limits=Limits(memory_mb=memory_mb),
        own_cgroup=sandbox.name == "process",
    )
    for note in executor.memory.notes if executor.memory is not None else ():
        say(note)
    _say_what_is_dealt(series, seed)
    plan = _plan_text(series, tournament.file.deals, len(bots))
    with _Progress(executor.workers, plan, folder) as view:
        summary = run_tournament(
            tournament,
            executor,
            restart=series.restart,
            results_dir=folder,
            on_event=view.update,
            deal_secret=_seeded_secret(seed) if seed is not None else None,
        )
    _report(tournament, folder, summary, as_json)


def _report(tournament: Tournament, folder: Path, summary: RunSummary, as_json: bool) -> None:
    """The table of the scheduled matches (a reused ``--results`` folder may hold more),
    or its JSON; exit code 1 when a match failed on our side."""
    deals, seats = tournament.file.deals, tournament.file.table_size
    with Store(folder, readonly=True) as store:
        played = [m for m in store.completed() if m.spec.deal < deals]
        counted = {m.spec.key for m in played}
        faults = [f for f in store.fault_reports() if f.key in counted]
        logs = {f.key: store.log_path(f.key) for f in faults}
    table = tally(
        played,
        tournament.entrants,
        rules=tournament.rules.name,
        table_size=seats,
        scheduled=deals * seats,
    )
    if as_json:
        data = {
            **table.as_dict(),
            "duplicate": tournament.file.duplicate,
            "results": str(folder),
            "failed": summary.failed,
        }
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        print_table(tally_table(table))
        _print_first_faults(table, faults, logs)
        say(f"match logs in {folder / 'logs'} (referee replay LOG); results in {folder}")
    if summary.failed:
        say(
            f"referee: {summary.failed} matches failed on the referee's side; run the same "
            f"command with --results {folder} to retry them"
        )
        raise SystemExit(1)


def _print_first_faults(
    table: Tally, faults: Sequence[StoredFault], logs: Mapping[str, Path]
) -> None:
    """Under the table, each bot's first fault (in key order) explained in full, as a single
    ``play`` and ``bot check`` explain one: the request, the line, the hint, the stderr,
    and the match's log to replay."""
    from referee.explain import explain_fault, stored_fault_info

    first: dict[str, StoredFault] = {}
    for fault in faults:
        first.setdefault(fault.name, fault)
    console = Console(highlight=False, soft_wrap=True)
    for bot in table.bots:
        if bot.name not in first:
            continue
        fault = first[bot.name]
        kinds = ", ".join(f"{kind} {n}" for kind, n in bot.faults.items())
        console.print(
            printable(
                f"{bot.name}: its first of {bot.forfeits} forfeits ({kinds}), in match "
                f"{fault.key}, seat {fault.seat}:"
            ),
            markup=False,
        )
        for line in explain_fault(stored_fault_info(fault), fault.stderr):
            console.print("  " + line, markup=False)
        log = printable(str(logs[fault.key]))
        console.print(f"  match log: {log}  (referee replay {log})", markup=False)


def _check_folder_name(folder: Path) -> None:
    """The results store records where each log lives, as UTF-8 text: a folder whose name
    is not (its bytes kept as surrogates) is refused before anything runs."""
    try:
        str(folder.absolute()).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"--results {printable(str(folder))}: the folder's path is not UTF-8 text; "
            "choose another folder"
        ) from None


def _seeded_secret(seed: int) -> bytes:
    """The deal secret ``--seed`` stands for: the same seed deals the same cards."""
    return hashlib.sha256(b"referee play --matches --seed\0%d" % seed).digest()


def _plan_text(series: Series, deals: int, seats: int) -> str:
    """``8 matches (2 deals x 4 seat rotations; --matches 6 rounded up), each on its own
    cards``: what is played, said before it starts."""
    total = deals * seats
    rounded = f"; --matches {series.matches} rounded up" if total != series.matches else ""
    cards = "each on its own cards"
    if series.duplicate == "rotations":
        cards = "the rotations of a deal on the same cards"
    plural = "s" if deals != 1 else ""
    return f"{total} matches ({deals} deal{plural} x {seats} seat rotations{rounded}), {cards}"


def _say_what_is_dealt(series: Series, seed: int | None) -> None:
    if seed is not None:
        say(
            f"note: --seed {seed} makes the deals predictable: a bot that knows the "
            "seed can compute every hand. Leave it out for secret deals."
        )
    if series.duplicate == "rotations":
        say(
            "note: --duplicate rotations: every seat rotation of a deal is played on the same "
            "cards, so each bot sees each deal once per seat; for trusted bots only"
        )


class _Progress(ProgressView):
    """A bar on a terminal; a line every tenth of the matches otherwise (both on stderr)."""

    def __init__(self, workers: int, plan: str, folder: Path) -> None:
        super().__init__()
        self.workers = workers
        self.plan = plan
        self.folder = folder
        self.progress = Progress(
            TextColumn("matches"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("faults {task.fields[faults]}"),
            console=self.console,
            disable=not self.live,
        )
        self.display = self.progress
        self.task: TaskID | None = None
        self.every = Every()

    def show(self, event: object) -> None:
        if isinstance(event, RunStarted):
            self.started(sandbox=event.sandbox, limits=event.limits, warnings=event.warnings)
            done = f"{event.done} already done, " if event.done else ""
            workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
            self.say(f"{self.plan}: {done}{event.to_play} to play with {workers}")
            self.say(f"results in {self.folder}")
            self.task = self.progress.add_task(
                "", total=event.total, completed=event.done, faults=0
            )
            self.every = Every.tenth(event.to_play)
        elif isinstance(event, RunProgress):
            if self.task is not None:
                self.progress.update(self.task, completed=event.done, faults=event.faults)
            if not self.live and (self.every.due(event.played) or event.done == event.total):
                self.say(f"{event.done}/{event.total} matches, {event.faults} faults")
