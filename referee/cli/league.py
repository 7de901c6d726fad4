"""``referee league run|retire|reinstate|check``: a league that never stops.

``referee leaderboard``, ``referee publish`` and ``referee submit`` work on a league too
(they see ``format = "league"`` in the file); these are what only a league has. Exit codes
are the error tree's (:mod:`referee.cli.app`); ``check`` exits 1 when the stored ratings or
records are not what a replay of the stored results gives.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console

from referee.cli.app import friendly, main, say
from referee.cli.progress import ProgressView
from referee.cli.tournaments import _executor, _read_secret, _Where, executor_options
from referee.clock import WallClock
from referee.errors import RefereeError, UsageError
from referee.executors.local import LocalExecutor
from referee.executors.slots import SLOTS, WorkerSlots
from referee.runs.league import (
    BatchPlanned,
    BatchSettled,
    EntrantReinstated,
    EntrantsChanged,
    EntrantSuspended,
    FileProblem,
    LeagueStarted,
    LeagueWaiting,
    run_league,
)
from referee.text import printable
from referee.tournament.file import Tournament, load_tournament


@main.group()
def league() -> None:
    """Run a league: tables drawn by matchmaking, batch by batch, until stopped; entrants
    added, updated and retired while it runs (see docs/tournaments.md)."""


@league.command("run")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="Worker processes (default: one per core).",
)
@executor_options
@click.option(
    "--batches",
    type=click.IntRange(1, None),
    default=None,
    help="Stop after this many batches (default: run until stopped with Ctrl-C or SIGTERM).",
)
@click.option(
    "--publish",
    "site",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Publish the league's site into this folder as it runs (see --every).",
)
@click.option(
    "--every",
    type=click.FloatRange(0.1, 10_080),
    default=10.0,
    show_default=True,
    help="With --publish: minutes between publications (after the batch that ends them).",
)
@click.option("--restart", is_flag=True, help="Discard the stored results and start over.")
@click.option(
    "--deal-secret-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Deal with this secret (hex) instead of a fresh one: to reproduce a league.",
)
@click.option(
    "--overcommit-memory",
    is_flag=True,
    help="Run the workers asked for even when the bots' memory limits together exceed the "
    "memory here.",
)
@friendly
def run(
    file: Path,
    workers: int | None,
    executor_kind: str | None,
    cluster: str | None,
    cluster_security: Path | None,
    insecure_cluster: bool,
    batches: int | None,
    site: Path | None,
    every: float,
    restart: bool,
    deal_secret_file: Path | None,
    overcommit_memory: bool,
) -> None:
    """Run the league FILE until stopped (Ctrl-C, SIGTERM, or --batches), resuming where it
    stopped.

    Each batch's tables are drawn from the stored ratings (placement for new entrants,
    then matchmaking), stored, played, and their results folded into the ratings as they
    arrive. Entrants submitted (referee submit BOT --to FILE) or retired (referee league
    retire FILE NAME) meanwhile join or leave at the next batch: the file is read again
    every [league] poll_seconds. referee leaderboard FILE shows the league at any time.
    """
    spec = load_tournament(file)
    secret = _read_secret(deal_secret_file) if deal_secret_file is not None else None
    where = _Where.of(spec, executor_kind, cluster, cluster_security, insecure_cluster)
    clock: WallClock = time.time  # the run's wall time, the site's time of publication too
    publisher = _Publisher(spec, site, every, clock) if site is not None else None
    view = _LeagueView(spec.name, publisher, file)
    try:
        with _executor(spec, workers, where, overcommit_memory) as (executor, count):
            if isinstance(executor, LocalExecutor):  # a server here borrows its checks' slots
                executor.lender = WorkerSlots(spec.results_dir / SLOTS)
            view.workers = count
            run_league(
                file,
                executor,
                on_event=view.update,
                batches=batches,
                restart=restart,
                deal_secret=secret,
                clock=clock,
            )
    finally:
        view.finish(spec.results_dir)
    if publisher is not None:
        publisher.publish()


@league.command("retire")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("name")
@friendly
def retire(file: Path, name: str) -> None:
    """Take the entrant NAME out of the league FILE: it leaves at the next batch of the
    running league (its results stay counted for its opponents, its rating is kept and
    shown apart). Submitting it again brings it back as a new version."""
    from referee.tournament.file import append_retirement

    version = append_retirement(file, name)
    click.echo(
        printable(
            f"retired: {version.label} (version {version.version} of {name}) leaves the league "
            f"at its next batch; an entry with retired = true was appended to {file}"
        )
    )


@league.command("reinstate")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("name")
@friendly
def reinstate(file: Path, name: str) -> None:
    """Seat the suspended entrant NAME of the league FILE again, from the league's next
    batch (the running league takes it within [league] poll_seconds; a stopped one when it
    runs again). Its forfeits in a row are counted afresh. Submitting a new version lifts
    a suspension too."""
    from referee.runs.league import reinstate as ask

    suspension = ask(file, name)
    click.echo(
        printable(
            f"reinstated: {suspension.label} is seated again from the league's next batch "
            f"(suspended from batch {suspension.since} after {suspension.forfeits} forfeits "
            f"of its own in a row; the last: {suspension.why})"
        )
    )


@league.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@friendly
def check(file: Path) -> None:
    """Replay every stored result of the league FILE in key order and compare it with the
    ratings and records the league stored as it went.

    The settled ratings and every record must be exactly the replay's (exit code 1
    otherwise); the live ratings may drift from it only by the order in which the results
    of the batch still open arrived, which is reported. It reads every match: its cost
    grows with the league, unlike the leaderboard's. It may run while the league plays.
    """
    from referee.ranking.incremental import check_league
    from referee.ranking.ratings import make_environment
    from referee.tournament.league import LeagueLedger
    from referee.tournament.store import DATABASE, Store

    spec = load_tournament(file)
    folder = spec.results_dir
    if not (folder / DATABASE).exists():
        raise UsageError(
            f"no results yet for {spec.name} ({folder} has none); "
            f"run: referee league run {spec.path}"
        )
    env = make_environment(spec.file.ratings, spec.rules)
    started = time.perf_counter()
    with Store(folder, readonly=True) as store, store.snapshot():
        found = check_league(LeagueLedger(store, readonly=True), env)
    seconds = time.perf_counter() - started
    out = Console(highlight=False, soft_wrap=True)
    out.print(
        f"replayed {found.matches} results of {found.entrants} versions in key order "
        f"({found.settled_batches} settled batches) in {seconds:.1f} s",
        markup=False,
    )
    if found.drift:
        out.print(
            f"drift: {len(found.drift)} live ratings differ from the replay by at most "
            f"{found.largest:.4f} ({found.open_matches} results of the open batch, rated in "
            "the order they arrived; settling the batch rates them in key order)"
            + ("; the live ranking orders some entrants otherwise" if found.order_changed else ""),
            markup=False,
        )
        for d in sorted(found.drift, key=lambda d: -d.size)[:10]:
            out.print(
                printable(
                    f"  {d.label}: live {d.mu:.4f} ± {d.sigma:.4f}, replay "
                    f"{d.replay_mu:.4f} ± {d.replay_sigma:.4f}"
                ),
                markup=False,
            )
    else:
        out.print("drift: none (every live rating is the replay's)", markup=False)
    for problem in found.problems[:50]:
        out.print(printable(f"FAIL {problem}"), markup=False)
    if found.problems:
        raise SystemExit(1)
    out.print("ok: the settled ratings and every record are the replay's", markup=False)


class _Publisher:
    """Publishes the league's site every ``every`` minutes, after a batch is settled."""

    def __init__(self, spec: Tournament, out: Path, every: float, clock: WallClock) -> None:
        from referee.publish.league_site import check_league_target

        check_league_target(out, spec.results_dir)  # refused now, not after a batch
        self.spec = spec
        self.clock = clock
        self.out = out
        self.every_s = every * 60
        self.last = float("-inf")

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every_s

    def publish(self) -> None:
        from referee.publish.league_site import publish_league

        self.last = time.monotonic()
        try:
            report = publish_league(self.spec, self.out, clock=self.clock)
        except RefereeError as exc:  # the league goes on; the next publication tries again
            say(f"warning: the site was not published: {exc}")
            return
        first, last = report.batches
        if last <= first:  # nothing settled since the last publication: nothing new said
            say(
                f"site: no batch settled since it was last published; {report.bots} bot "
                f"pages rewritten ({report.index})"
            )
            return
        say(
            f"site: {report.matches} new matches published, {report.bots} bot pages, "
            f"{report.written / 1024:.0f} KiB ({report.index})"
        )


class _LeagueView(ProgressView):
    """A line per batch and per change of entrants, on stderr (a league has no end to show
    a bar towards)."""

    def __init__(self, name: str, publisher: _Publisher | None, file: Path) -> None:
        super().__init__()
        self.name = name
        self.file = file
        self.publisher = publisher
        self.workers: Callable[[], int] = lambda: 0
        self.started_at = time.monotonic()
        self.played = self.faults = self.batches = 0

    def show(self, event: object) -> None:
        if isinstance(event, LeagueStarted):
            self.started(sandbox=event.sandbox, limits=event.limits, warnings=event.warnings)
            self.say(f"deals: secret, committed to sha256 {event.commitment}")
            self.say(
                f"{self.name}: {event.entrants} entrants in the league, {event.settled} "
                f"batches settled so far; {self.workers()} workers"
            )
        elif isinstance(event, EntrantsChanged):
            joined = ", ".join(event.joined) or "nobody"
            left = ", ".join(f"{label} ({why})" for label, why in event.left) or "nobody"
            self.say(f"from batch {event.batch}: joining {joined}; leaving {left}")
        elif isinstance(event, EntrantSuspended):
            self.say(
                f"suspended from batch {event.batch}: {event.label}, after {event.forfeits} "
                f"forfeits of its own in a row; the last: {event.why} (a new version, or "
                f"referee league reinstate {self.file} {event.label}, seats it again)"
            )
        elif isinstance(event, EntrantReinstated):
            self.say(f"reinstated from batch {event.batch}: {event.label}")
        elif isinstance(event, FileProblem):
            self.say(f"warning: {event.message}")
        elif isinstance(event, LeagueWaiting):
            self.say(
                f"waiting: {event.entrants} entrants can play ({event.capped} at their cap"
                + (f", {event.suspended} more suspended" if event.suspended else "")
                + f"), a table needs {event.table_size}; the file is read again meanwhile"
            )
        elif isinstance(event, BatchPlanned):
            how = "resumed" if event.resumed else f"planned in {event.plan_ms:.1f} ms"
            self.say(
                f"batch {event.batch}: {event.tables} tables, {event.to_play} of "
                f"{event.matches} matches to play ({how}; {event.placement} placement)"
            )
        elif isinstance(event, BatchSettled):
            self._settled(event)

    def _settled(self, event: BatchSettled) -> None:
        self.played += event.played
        self.faults += event.faults
        self.batches += 1
        rate = self.played / max(time.monotonic() - self.started_at, 1e-9)
        self.say(
            f"batch {event.batch} settled: {event.played} results ({event.faults} faults"
            f"{f', {event.failed} failed' if event.failed else ''}) in {event.seconds:.1f} s; "
            f"{rate:.1f} matches/s; storing a result {event.store_ms:.1f} ms"
        )
        if self.publisher is not None and self.publisher.due():
            self.publisher.publish()

    def finish(self, results_dir: Path) -> None:
        say(
            f"{self.batches} batches settled in this run ({self.played} matches, "
            f"{self.faults} faults); results in {results_dir}"
        )
