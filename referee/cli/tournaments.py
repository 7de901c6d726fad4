"""``referee tournament run|demo``, ``referee leaderboard``, ``referee verify`` and
``referee submit``: tournaments, their results, and entering a bot.

Exit codes besides the error tree's (:mod:`referee.cli.app`): 1 when a run finished but some
matches failed on the referee's side (run again to retry them), or ``verify`` found a
problem.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from referee.cli.app import friendly, main, say
from referee.cli.progress import Every, ProgressView
from referee.cli.tables import print_table
from referee.errors import UsageError
from referee.executors import Executor
from referee.executors.local import LocalExecutor, default_workers
from referee.executors.security import (
    DASK_PACKAGES,
    ClusterSecurity,
    check_cluster,
    load_cluster_security,
)
from referee.installation import install_hint
from referee.publish import FORMATS, Leaderboard, render, to_rich_table
from referee.ranking.intervals import MIN_SHARED_DEALS
from referee.resources import demo_tournament
from referee.runs.tournament import (
    PlayoffRound,
    PlayoffsOver,
    PreflightWarning,
    ResultStored,
    RunProgress,
    RunStarted,
    RunSummary,
    run_tournament,
)
from referee.text import printable
from referee.tournament.file import Tournament, load_tournament

if TYPE_CHECKING:
    from referee.executors.cluster import DaskExecutor
    from referee.match.compliance import CheckReport
    from referee.tournament.store import DealSecret
    from referee.verify.audit import ComparisonVerdict, Verification


# --------------------------------------------------------------------------- run

REPLACED_OVER_NEXT = (
    "over next after --replace: the deals the replaced tables shared with other tables are "
    "retired with them, and the tables played again are dealt fresh cards (no other table "
    'shares them under duplicate = "tables"), so the leaderboard\'s over next column, which '
    "weighs each bot against the next on the deals both played, has fewer shared deals to "
    f"go on; where fewer than {MIN_SHARED_DEALS} are left it shows no figure (--restart "
    "plays every table on shared deals again)"
)
"""What ``--replace`` does to the leaderboard's "over next" column, said with its summary."""


@main.group()
def tournament() -> None:
    """Run tournaments described by a TOML file (see docs/tournaments.md)."""


def executor_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--executor``, ``--cluster``, ``--cluster-security`` and ``--insecure-cluster``, as
    every command that runs matches has them (the command then takes ``executor_kind``,
    ``cluster``, ``cluster_security`` and ``insecure_cluster``, for :meth:`_Where.of`; the
    rule they obey is :func:`referee.executors.security.check_cluster`)."""
    command = click.option(
        "--insecure-cluster",
        is_flag=True,
        help="Accept a plain tcp:// --cluster address, with no encryption and no "
        "authentication: anyone who reaches it can run code on every worker (said again "
        "when the run starts). Refused otherwise.",
    )(command)
    command = click.option(
        "--cluster-security",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help="The TLS files this coordinator connects to --cluster with: a TOML file of "
        "ca-file, cert and key (see docs/cluster.md). Overrides the file's "
        "executor.security.",
    )(command)
    command = click.option(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="The Dask scheduler to run on, e.g. tls://10.0.0.5:8786 with --cluster-security "
        "(implies --executor dask). With --executor dask and no address, a local cluster of "
        "--workers processes is started, with TLS certificates of its own.",
    )(command)
    return click.option(
        "--executor",
        "executor_kind",
        type=click.Choice(["local", "dask"]),
        default=None,
        help="Where the matches run: worker processes here (local, the default) or a Dask "
        "cluster (dask; see --cluster). Overrides the file's executor.kind.",
    )(command)


@tournament.command("run")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="Worker processes (default: one per core).",
)
@click.option("--restart", is_flag=True, help="Discard the stored results and start over.")
@click.option(
    "--replace",
    "replace",
    multiple=True,
    metavar="NAME",
    help="The entrant NAME's files changed: retire its old version's results (kept, counted "
    "in no rating), keep every other result, and play its tables again on fresh cards "
    "(repeatable).",
)
@click.option(
    "--deal-secret-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Deal with this secret (hex) instead of a fresh one: to reproduce a published run.",
)
@click.option(
    "--beacon",
    default=None,
    help="The public value revealed after entries closed, from the source and in the form "
    "declared with 'referee tournament commit' (required by the first run then; recorded).",
)
@click.option(
    "--overcommit-memory",
    is_flag=True,
    help="Run the workers asked for even when the bots' memory limits together exceed the "
    "memory here (a bot the kernel then kills outside its own limit is not blamed: its "
    "match is played again).",
)
@executor_options
@friendly
def run(
    file: Path,
    workers: int | None,
    restart: bool,
    replace: tuple[str, ...],
    deal_secret_file: Path | None,
    beacon: str | None,
    overcommit_memory: bool,
    executor_kind: str | None,
    cluster: str | None,
    cluster_security: Path | None,
    insecure_cluster: bool,
) -> None:
    """Play every match of the tournament FILE not yet played, then print the leaderboard.

    Results are stored as they arrive in NAME.results/ next to FILE; run the same command
    again after an interruption and it resumes where it stopped. The deals come from a
    secret kept there: its SHA-256 is shown now (or was, by referee tournament commit), the
    secret itself once every match is played (referee verify checks every deal with it).
    Every result is chained as it is stored; the chain's head is printed when the run ends
    (or stops): publish it too. Fewer workers run than asked for when their bots' memory
    limits would not fit in the memory here (it is said). A bot whose files changed is
    refused, unless --replace NAME plays its tables again with the new files (its old
    results are kept, retired) and keeps every other result.
    """
    spec = load_tournament(file)
    if spec.file.format == "league":
        raise UsageError(
            f"{file} is a league, which never ends: run it with referee league run {file}"
        )
    secret = _read_secret(deal_secret_file) if deal_secret_file is not None else None
    value = _beacon(beacon) if beacon is not None else None
    summary = _run(
        spec,
        workers=workers,
        restart=restart,
        replace=replace,
        deal_secret=secret,
        beacon=value,
        overcommit=overcommit_memory,
        where=_Where.of(spec, executor_kind, cluster, cluster_security, insecure_cluster),
    )
    _print_board(_leaderboard(spec, summary.results_dir))
    _finish(summary)


@tournament.command("demo")
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="Worker processes (default: one per core).",
)
@click.option(
    "--publish",
    "site",
    is_flag=True,
    help="Also publish the site (in the demo's folder) and print its index.html.",
)
@friendly
def demo(workers: int | None, site: bool) -> None:
    """Run tournaments/demo.toml (the sample bots) from scratch and print the leaderboard.

    Results go to a new folder under the system's temporary directory (named at the end), so
    the checkout (or the installation) stays clean and two demos never share one; --publish
    writes the site there.
    """
    spec = load_tournament(demo_tournament())
    folder = Path(tempfile.mkdtemp(prefix="referee-demo-")) / f"{spec.name}.results"
    summary = _run(spec, workers=workers, restart=True, results_dir=folder)
    _print_board(_leaderboard(spec, folder))
    if site:
        from referee.cli.publish import write_site

        write_site(spec, folder.parent / "site", folder)
    _finish(summary)


@tournament.command("commit")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--beacon-source",
    required=True,
    help="Where the beacon will come from, in words anyone can follow to look it up: a "
    "beacon's round, or a rule naming one value (e.g. 'drand quicknet round 12345678, "
    "randomness'; 'the first NIST beacon pulse after 2026-05-01 12:00 UTC, outputValue').",
)
@click.option(
    "--beacon-form",
    required=True,
    help="How the beacon is written: hex:N (N bytes as 2N hex digits; drand's randomness is "
    "hex:32, a NIST pulse's outputValue hex:64) or numbers:N (N whole numbers, a lottery "
    "draw; sorted).",
)
@click.option("--restart", is_flag=True, help="Discard stored results and commit anew.")
@friendly
def commit(file: Path, beacon_source: str, beacon_form: str, restart: bool) -> None:
    """Commit to the deal secret of the tournament FILE, and to its beacon, before entries
    close.

    Draws the secret and keeps it in NAME.results/ (nothing is played); prints its
    commitment, which binds the secret and where the beacon will come from and how it is
    written, and the tournament file's SHA-256: publish them all now. When entries have
    closed, run the tournament with --beacon VALUE, the value that source gives (nobody
    knows it now): the cards then depend on it, and no other value or spelling is
    accepted, so a secret picked after seeing the entries would gain nothing. referee
    verify checks it all.
    """
    from referee.runs.tournament import commit_tournament
    from referee.tournament.chain import log_digest
    from referee.tournament.deals import BeaconDeclaration

    try:
        declared = BeaconDeclaration.parse(beacon_source, beacon_form)
    except ValueError as exc:
        raise UsageError(f"commit: {exc}") from None
    spec = load_tournament(file)
    secret = commit_tournament(spec, declared, restart=restart)
    click.echo(f"deal secret committed: sha256 {secret.commitment}")
    click.echo(printable(f"beacon: {declared.source}"))
    click.echo(f"beacon form: {declared.form} ({declared.describe()})")
    click.echo(f"tournament file: sha256 {log_digest(spec.source.encode('utf-8'))}")
    click.echo(
        "publish all four lines now (the commitment binds the beacon's source and form); when "
        f"entries close, run: referee tournament run {printable(str(file))} --beacon VALUE "
        "(the value the source gives)"
    )


def _beacon(text: str) -> str:
    from referee.tournament.deals import parse_beacon

    try:
        return parse_beacon(text)
    except ValueError as exc:
        raise UsageError(f"--beacon: {exc}") from None


def _read_secret(path: Path) -> bytes:
    from referee.tournament.deals import parse_secret

    try:
        return parse_secret(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the deal secret file {path}: {exc}") from None
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None


@dataclass(frozen=True)
class _Where:
    """Which executor runs the matches: the command line's choice, else the file's (each of
    the cluster's address and its security file on its own; ``insecure`` only from the
    command line, where the organiser types it for each run). A Dask cluster is held to
    :func:`~referee.executors.security.check_cluster` here, before any command starts
    anything (and again by the executor itself)."""

    kind: str = "local"
    cluster: str | None = None
    security: ClusterSecurity | None = None
    insecure: bool = False

    @classmethod
    def of(
        cls,
        spec: Tournament,
        kind: str | None,
        cluster: str | None,
        security: Path | None = None,
        insecure: bool = False,
    ) -> _Where:
        chosen = spec.file.executor
        flags = [
            flag
            for flag, given in (
                ("--cluster-security", security is not None),
                ("--insecure-cluster", insecure),
            )
            if given
        ]
        if kind == "local":
            if cluster is not None:
                raise UsageError("--cluster names a Dask scheduler: it goes with --executor dask")
            if flags:
                raise UsageError(f"{flags[0]} is for a Dask cluster: it goes with --executor dask")
            return cls()
        if kind is None and cluster is None and chosen.kind != "dask":
            if flags:
                raise UsageError(f"{flags[0]} is for a Dask cluster: it goes with --cluster")
            return cls()
        if security is None and chosen.security is not None:
            security = spec.path.parent / chosen.security
        address = cluster if cluster is not None else chosen.cluster
        files = load_cluster_security(security) if security is not None else None
        check_cluster(address, files, insecure)  # refused before anything starts
        return cls("dask", address, files, insecure)


def _run(
    spec: Tournament,
    *,
    workers: int | None,
    restart: bool,
    results_dir: Path | None = None,
    deal_secret: bytes | None = None,
    beacon: str | None = None,
    overcommit: bool = False,
    where: _Where = _Where(),
    replace: tuple[str, ...] = (),
) -> RunSummary:
    with (
        _executor(spec, workers, where, overcommit) as (executor, connected),
        _ProgressView(spec.name, connected) as view,
    ):
        return run_tournament(
            spec,
            executor,
            restart=restart,
            results_dir=results_dir,
            on_event=view.update,
            deal_secret=deal_secret,
            beacon=beacon,
            replace=replace,
        )


@contextlib.contextmanager
def _executor(
    spec: Tournament, workers: int | None, where: _Where, overcommit: bool
) -> Iterator[tuple[Executor, Callable[[], int]]]:
    """The executor ``where`` names, and how many workers it has (asked as the run goes)."""
    if where.kind == "dask":
        with _dask_executor(spec, where, workers, overcommit) as cluster:
            yield cluster, cluster.connected
        return
    local = LocalExecutor.within_memory(
        workers,
        seats=spec.file.table_size,
        limits=spec.limits,
        own_cgroup=_bots_in_own_cgroup(spec),
        overcommit=overcommit,
    )
    for note in local.memory.notes if local.memory is not None else ():
        say(note)
    yield local, lambda: local.workers


@contextlib.contextmanager
def _dask_executor(
    spec: Tournament, where: _Where, workers: int | None, overcommit: bool
) -> Iterator[DaskExecutor]:
    """The Dask executor, connected (or its local cluster started), saying where it is.

    A local cluster is sized to the memory here as the local pool is; a remote cluster's
    workers are on other machines, which the organiser sizes (see docs/cluster.md).
    """
    try:
        from referee.executors.cluster import DaskExecutor
    except ImportError as exc:
        raise UsageError(
            f"the dask executor needs Dask distributed ({exc}); "
            f"{install_hint(DASK_PACKAGES, extra='dask')}"
        ) from None
    idle: int | None = None
    if where.cluster is None:
        from referee.sandbox.budget import plan_workers, read_budget

        plan = plan_workers(
            workers or default_workers(),
            seats=spec.file.table_size,
            memory_mb=spec.limits.memory_mb,
            budget=read_budget(own_cgroup=_bots_in_own_cgroup(spec)),
            overcommit=overcommit,
        )
        for note in plan.notes:
            say(note)
        workers, idle = plan.workers, plan.idle
        say(
            f"starting a local Dask cluster of {workers} workers on this machine, on loopback "
            "with TLS certificates of its own (to try the cluster executor; give --cluster "
            "the address of a running scheduler to use real machines)"
        )
    executor = DaskExecutor(
        where.cluster,
        security=where.security,
        insecure=where.insecure,
        workers=workers,
        idle_bots=idle,
    )
    for note in executor.notes:
        say(note)
    with executor:
        dashboard = executor.dashboard or "off"
        say(f"Dask scheduler {executor.scheduler_address}, dashboard {dashboard}")
        yield executor


def _bots_in_own_cgroup(spec: Tournament) -> bool:
    """True when the tournament's bots run in the referee's own cgroup tree (the process
    sandbox), so its cgroup's memory limit bounds them too; Docker's containers do not."""
    from referee.sandbox import get_sandbox

    backend = spec.file.sandbox.backend
    if backend == "auto":
        return get_sandbox(backend, images=spec.images).name == "process"
    return backend == "process"


def _finish(summary: RunSummary) -> None:
    say(
        f"{summary.done}/{summary.total} matches done ({summary.played} played in this run, "
        f"{summary.faults} faults); results in {summary.results_dir}"
    )
    if summary.chain_head is not None:
        say(f"results chain: {summary.chain_results} results, head {summary.chain_head}")
    if summary.failed:
        say(
            f"referee: {summary.failed} matches failed on the referee's side; "
            "run the same command again to retry them"
        )
        raise SystemExit(1)


class _ProgressView(ProgressView):
    """A live progress bar on a terminal; a line every tenth of the run otherwise. The
    results chain's head is said as the run starts (the plan chained), then once when it
    ends (:func:`_finish`), or here when it stops early (an interruption, an error): every
    head said is one to publish, and none is repeated with each progress line."""

    def __init__(self, name: str, workers: Callable[[], int]) -> None:
        super().__init__()
        self.name = name
        self.workers = workers
        """How many workers there are now (a cluster's count changes as they come and go)."""
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("faults {task.fields[faults]}"),
            TextColumn("workers {task.fields[workers]}"),
            console=self.console,
            disable=not self.live,
            transient=False,
        )
        self.display = self.progress
        self.task: TaskID | None = None
        self.started_at = time.monotonic()
        self.every = Every()
        self.in_playoffs = False
        self.chain: ResultStored | None = None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        super().__exit__(exc_type, exc, tb)
        if exc_type is not None and self.chain is not None:
            self.say(f"results chain: {self.chain.results} results, head {self.chain.head}")

    def show(self, event: object) -> None:
        if isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, PlayoffRound | PlayoffsOver):
            self._playoff(event)
        elif isinstance(event, ResultStored):
            self.chain = event
        elif isinstance(event, RunProgress):
            self._counts(event)
        elif isinstance(event, PreflightWarning):
            for line in event.lines:
                self.say(line)

    def _started(self, event: RunStarted) -> None:
        self.started(sandbox=event.sandbox, limits=event.limits, warnings=event.warnings)
        for line in event.replaced:
            self.say(line)
        if event.replaced:
            self.say(REPLACED_OVER_NEXT)
        beacon = ""
        if event.beacon is not None:
            beacon = f", beacon {event.beacon!r} ({event.beacon_source}) mixed in"
        self.say(
            f"deals: secret, committed to sha256 {event.commitment}{beacon} "
            "(the secret is published when every match is played)"
        )
        results, head = event.chain
        if head is not None:
            # The head before any result of this run: it pins the plan and every result
            # stored before: one to publish as the run starts.
            self.say(f"results chain: {results} results so far, head {head}")
        self.say(
            f"{self.name}: {event.total} matches, {event.done} already done, "
            f"{event.to_play} to play with {self.workers()} workers"
        )
        self.started_at = time.monotonic()
        self.task = self.progress.add_task(
            self.name,
            total=event.total,
            completed=event.done,
            rate="",
            faults=0,
            workers=self.workers(),
        )
        self.every = Every.tenth(event.to_play)

    def _counts(self, counts: RunProgress) -> None:
        """The coordinator's counts on the bar, and a line every tenth of the run."""
        rate = counts.played / max(time.monotonic() - self.started_at, 1e-9)
        if self.task is not None:
            self.progress.update(
                self.task,
                total=counts.total,
                completed=counts.done,
                rate=f"{rate:.1f}/s",
                faults=counts.faults,
                workers=self.workers(),
            )
        quiet = self.live or self.in_playoffs
        if not quiet and (self.every.due(counts.played) or counts.done == counts.total):
            self.say(f"{counts.done}/{counts.total} matches, {rate:.1f}/s, {counts.faults} faults")

    def _playoff(self, event: PlayoffRound | PlayoffsOver) -> None:
        """A line per play-off round (the pairs it is for), and one when they are over."""
        pairs = ", ".join(
            f"{printable(upper)} over {printable(lower)} {confidence:.2f} ({deals} deals)"
            for upper, lower, confidence, deals in event.uncertain
        )
        if isinstance(event, PlayoffsOver):
            why = "the top is ordered" if event.state == "settled" else "the budget is spent"
            still = f"; still uncertain: {pairs}" if pairs else ""
            self.say(
                f"play-offs over after {event.rounds} rounds, {event.matches} matches: {why}{still}"
            )
            return
        self.in_playoffs = True  # a line per round from now on, not per tenth of the run
        self.say(
            f"play-offs round {event.round + 1}: {event.to_play} matches "
            f"({event.spent}/{event.budget} of the budget)" + (f" for {pairs}" if pairs else "")
        )


# --------------------------------------------------------------------------- leaderboard


def _leaderboard(spec: Tournament, results_dir: Path | None = None) -> Leaderboard:
    from referee.publish.source import leaderboard, load_results

    return leaderboard(load_results(spec, results_dir))


LEAGUE_DROPS = ("last played", "mu ± sigma", "avg place")
"""The league table's columns left out first on a narrow terminal."""

BOARD_DROPS = ("mu ± sigma", "played")
"""The leaderboard's columns left out first on a narrow terminal (the rank, the score, the
interval, the order over the next bot and the forfeits stay)."""


def _print_board(board: Leaderboard) -> None:
    print_table(to_rich_table(board), drop=BOARD_DROPS)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table (terminal), md (Markdown), json, or csv.",
)
@friendly
def leaderboard(file: Path, fmt: str) -> None:
    """Print the leaderboard of the tournament FILE from its stored results.

    Ratings are TrueSkill, replayed over the finished matches in key order, ranked by
    mu - 3 sigma, with each bot's mean finishing score and its bootstrap interval; ≈ marks
    a bot whose order over the next one is not significant. It may be called while the
    tournament runs.
    """
    spec = load_tournament(file)
    if spec.file.format == "league":  # its stored ratings: no replay
        from referee.publish.league import league_board, league_rich_table, render_league

        league = league_board(spec)
        if fmt == "table":
            print_table(league_rich_table(league), drop=LEAGUE_DROPS)
        else:
            click.echo(render_league(league, fmt), nl=False)
        return
    board = _leaderboard(spec)
    if fmt == "table":
        _print_board(board)
    else:
        click.echo(render(board, fmt), nl=False)


# --------------------------------------------------------------------------- verify


@main.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option(
    "--commitment",
    "commitments",
    multiple=True,
    help="A deal commitment published before the run (repeatable): every stored match must "
    "be dealt by a secret whose commitment is given.",
)
@click.option(
    "--beacon",
    "beacons",
    multiple=True,
    help="The beacon value, as you looked it up from the source declared with the "
    "commitment (repeatable: one per committed secret, oldest first); it must be the one "
    "the deals were made with.",
)
@click.option(
    "--head",
    "heads",
    multiple=True,
    help="A results-chain head printed during the run (repeatable); each must be in the chain.",
)
@click.option(
    "--file",
    "tournament_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The tournament file as published: the results must have been played with it.",
)
@click.option(
    "--require-pages",
    is_flag=True,
    help="Fail (exit code 1) unless a site's pages were rendered again and compared: a site "
    "rendered by another referee version, or one without its file list, then fails instead "
    "of having its data verified alone.",
)
@friendly
def verify(
    results: Path,
    commitments: tuple[str, ...],
    beacons: tuple[str, ...],
    heads: tuple[str, ...],
    tournament_file: Path | None,
    require_pages: bool,
) -> None:
    """Check a tournament from its RESULTS folder, its .toml file, or a published site.

    RESULTS is the organiser's results folder (NAME.results), the tournament's .toml file,
    or a folder written by referee publish (anyone can check that: it carries the plan, the
    deals, a manifest of every match, the results chain and every log). The schedule is
    recomputed from the tournament plan stored with the results, which the results chain
    binds (and checked against --file, or the .toml given); every scheduled match must be
    there and played, at its table, on its deal. Every deal is re-derived from the deal
    secret (and its beacon: --beacon checks it against the value you looked up), every
    log replayed through the engine and compared with the stored results (players, places,
    scores, forfeits, faults), and the results chain recomputed; a site's leaderboard is
    derived again from its logs and compared with its leaderboard.json, and every page,
    replay, script and style it holds is rendered again from the verified data and
    compared (a file the site does not list, or one missing, fails). Exit code 0 when all
    agree, 1 when something does not (each problem is listed) or when a site published
    mid-run cannot be fully checked yet. A site whose pages could not be compared (rendered
    by another referee version) says so on a line of its own; --require-pages makes that
    exit code 1.
    """
    from referee.verify import verify_folder

    folder = results
    plan = None
    if results.suffix == ".toml" and results.is_file():
        loaded = load_tournament(results)
        if loaded.file.format == "league":
            raise UsageError(
                f"{results} is a league: its tables are drawn as it runs and its deal secret "
                "is revealed only when it ends; check its ratings with referee league check "
                f"{results}"
            )
        folder, plan = loaded.results_dir, loaded.plan()
    if tournament_file is not None:
        plan = load_tournament(tournament_file).plan()
    for value in beacons:
        _beacon(value)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with Progress(
        TextColumn("verifying"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # off a terminal it would only leave a blank line
    ) as progress:
        task = progress.add_task("verify", total=None)
        found = verify_folder(
            folder,
            plan=plan,
            commitments=commitments,
            beacons=beacons,
            heads=heads,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
        )
    _report(found, require_pages=require_pages)


def _report(found: Verification, *, require_pages: bool = False) -> None:
    """What verify found, one line each; exit code 1 unless everything agrees (nor, with
    ``require_pages``, unless a site's pages were compared)."""
    out = Console(highlight=False, soft_wrap=True)
    for secret in found.secrets:
        out.print(printable(_secret_line(secret, found.dealt.get(secret.id, 0))), markup=False)
    if found.unrevealed:
        out.print(
            f"{found.unrevealed} matches were dealt by a secret not revealed yet (the "
            "tournament is not finished): checked with the organiser's copy",
            markup=False,
        )
    if found.plan_given:
        out.print(
            f"tournament file: the one given (sha256 {found.file_sha256}) is the one the "
            "results were played with",
            markup=False,
        )
    else:
        out.print(
            f"tournament file: not given; checked against the plan stored with the results "
            f"(file sha256 {found.file_sha256}), which the results chain binds: compare that "
            "with the file as published, or give it with --file",
            markup=False,
        )
    if found.chain_head is not None:
        out.print(
            f"results chain: {found.chain_results} results, head {found.chain_head}",
            markup=False,
        )
    if found.comparison is not None:
        out.print(printable(_comparison_line(found.comparison)), markup=False)
    if found.problems or found.incomplete:
        for problem in found.problems[:50]:
            out.print(f"FAIL {printable(problem)}", markup=False)
        if len(found.problems) > 50:
            out.print(f"… and {len(found.problems) - 50} more", markup=False)
        for why in found.incomplete:
            out.print(f"NOT FULLY CHECKED: {printable(why)}", markup=False)
        raise SystemExit(1)
    extra = found.matches - found.retired - found.scheduled
    playoffs = f", {extra} of them play-offs" if extra > 0 else ""
    if found.retired or found.replacements:
        count = len(found.replacements)
        playoffs += (
            f", {found.retired} retired by {count} replacement{'s' * (count != 1)} of an "
            "entrant's files (checked, counted in no rating)"
        )
    if found.source == "site" and found.pages_note:
        # Never a quiet ok: whoever reads only the first words still sees the pages were
        # not checked, and a script can ask for them with --require-pages.
        why = found.pages_note.removeprefix("not compared: ")
        out.print(f"PAGES NOT COMPARED: {printable(why)}", markup=False)
        if require_pages:
            raise SystemExit(1)
    if found.spoiled:
        who = ", ".join(f"{printable(name)} {count}" for name, count in found.spoiled.items())
        out.print(
            f"comparison: deals spoiled by faults that are not the versions' own ({who}): "
            "left out of its test, as the comparison left them out",
            markup=False,
        )
    board = ", and the leaderboard is the one its logs give" if found.leaderboard else ""
    what = "the published site" if found.source == "site" else "the results"
    out.print(
        f"ok: {found.matches} matches of {what} verified{playoffs}: the schedule is the "
        "plan's, every deal is the secret's, every log replays, every stored result is its "
        f"log's, the results chain holds them all{board}{_pages_text(found)}",
        markup=False,
    )


def _comparison_line(verdict: ComparisonVerdict) -> str:
    """``comparison: H1 after 23 deals, scored by round-score (D0 0, D1 0.015, …)``."""
    test, state = verdict.test, verdict.state
    what = {"H1": "H1 accepted", "H0": "H0 accepted"}.get(state.decision, "undecided")
    assumed = " (none recorded: the defaults)" if verdict.assumed else ""
    interval = "" if not math.isfinite(state.low) else f" [{state.low:+.3f}, {state.high:+.3f}]"
    return (
        f"comparison, recomputed from the logs: {what} after {state.deals} deals, scored by "
        f"{verdict.statistic}, D0 {test.d0:g}, D1 {test.d1:g}, alpha {test.alpha:g}, beta "
        f"{test.beta:g}{assumed}: difference {state.difference:+.3f}{interval}, LLR "
        f"{state.llr:.2f}"
    )


def _pages_text(found: Verification) -> str:
    """What verify said of a site's pages, for the end of its ok line."""
    if found.source != "site":
        return ""
    parts = []
    if found.pages:
        parts.append(
            f"its {found.pages} pages, replays, leaderboards, scripts and styles are what the "
            "verified data renders"
        )
    if found.pages_note:
        parts.append(f"its pages are {found.pages_note}")
    if found.unverified:
        parts.append(f"not verified: {', '.join(found.unverified)}")
    if found.host_files:
        parts.append(f"added by the host, not checked: {', '.join(found.host_files)}")
    return "".join(f"; {printable(part)}" for part in parts)


def _secret_line(secret: DealSecret, dealt: int) -> str:
    """``deal secret 1: commitment sha256 … (revealed; …; dealt 280 matches)``."""
    parts = ["revealed" if secret.revealed is not None else "NOT revealed yet"]
    if secret.declared is None:
        parts.append("drawn when its first run started")
    else:
        parts.append(
            f"committed to before its run, the beacon declared: {secret.declared.source} "
            f"({secret.declared.form})"
        )
    if secret.beacon is not None:
        parts.append(f"beacon {secret.beacon!r} mixed in")
    parts.append(f"dealt {dealt} matches")
    return f"deal secret {secret.id}: commitment sha256 {secret.commitment} ({'; '.join(parts)})"


# --------------------------------------------------------------------------- submit


@main.command()
@click.argument("bot")
@click.option(
    "--to",
    "file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The tournament file to enter the bot in.",
)
@click.option("--name", default=None, help="Display name (default: the bot's own name).")
@click.option(
    "--author",
    default=None,
    help="Who wrote the bot (default: the author in its bot.toml, else the bot itself); "
    "entrants of one author are limited and kept apart as the file's [authors] says.",
)
@friendly
def submit(bot: str, file: Path, name: str | None, author: str | None) -> None:
    """Check BOT as referee bot check would for the tournament FILE, and enter it.

    BOT is a .py file, an executable, a folder with bot.toml, or a sample bot (@heuristic).
    Its files are read once: exactly those bytes are checked (the handshake, short matches
    of the tournament's rules at its table size against the sample bots, two matches on one
    process: a few seconds) and copied into bots/ next to FILE, and a [[bots]] entry is
    appended to FILE. Exit
    code 1 when the bot is refused (the reason and bot check's diagnostics are shown), 2
    for a usage error (a path that does not exist, a name already taken).
    """
    from referee import submit as submitting
    from referee.match.compliance import step_lines

    spec = load_tournament(file)

    def started(report: CheckReport) -> None:
        for line in submitting.check_intro(report, spec):
            say(line)

    entered = submitting.submit(
        bot,
        spec,
        name=name,
        author=author,
        on_check=started,
        progress=lambda step: say(step_lines(step)[0]),  # a refusal shows the problem
    )
    click.echo(submitting.accepted_line(entered, file))
