"""``referee serve FILE``: the web app under uvicorn, the check queue, the league, the site.

:func:`serve` runs, in one process group:

- the web app (:mod:`referee.server.app`) under uvicorn, on ``host:port`` (loopback by
  default), with the read deadlines of :mod:`referee.server.guard` in front of it;
- the check queue (:class:`~referee.server.checks.Checker`) and the comparisons of
  ``--compare`` uploads (:class:`~referee.server.compares.Comparer`), after
  :meth:`~referee.server.submissions.SubmissionBook.recover` has put back every check and
  comparison a stop cut off;
- unless ``league=False``, the league itself as a child process (``referee league run
  FILE`` with the executor options given): the league stays the only writer of its store,
  as it is when run alone, and takes in the entries the checks append to its file at its
  next batch. A league that stops by itself (an error in its file) is said in one line and
  the server goes on serving;
- the publisher: a thread that brings the published site (``site``, served under
  ``/site/``) up to date when the league's store changed, at most every ``every_s``.

SIGTERM and Ctrl-C stop uvicorn (which finishes the requests it has), then the checks (a
check cut off is checked again at the next start) and the comparisons (resumed at the next
start), then the league (SIGTERM: it stores
what it has, as when run alone). Started again, everything goes on where it stopped: the
queue from the server's database, the league from its store.
"""

from __future__ import annotations

import ctypes
import dataclasses
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.errors import RefereeError, UsageError
from referee.server.app import make_app
from referee.server.archives import ArchiveLimits
from referee.server.checks import Checker, entered_bots
from referee.server.compares import Comparer
from referee.server.guard import guarded_config
from referee.server.state import ServerState, changes_key
from referee.server.submissions import Submission, SubmissionBook
from referee.text import printable
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.model import PublishSettings

__all__ = ["ServeOptions", "private_stderr", "serve"]

_LEAGUE_STOP_S = 60.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ServeOptions:
    """How ``referee serve`` was asked to run."""

    host: str = "127.0.0.1"
    port: int = 8000
    league: bool = True
    league_args: Sequence[str] = ()
    """Options handed to ``referee league run`` (``--workers``, the executor's)."""
    site: Path | None = None
    every_s: float = 10.0
    forwarded_allow_ips: str | None = None
    log_level: str = "warning"


def private_stderr(tournament: Tournament) -> Tournament:
    """``tournament`` as the server publishes it: no stderr on the public pages unless the
    file sets ``[publish] stderr`` itself."""
    if "stderr" in tournament.file.publish.model_fields_set:
        return tournament
    publish = PublishSettings(stderr="private")
    return dataclasses.replace(
        tournament, file=tournament.file.model_copy(update={"publish": publish})
    )


def serve(path: Path, options: ServeOptions, say: Callable[[str], None]) -> None:
    """Serve the league file at ``path`` until SIGTERM or Ctrl-C (see the module docstring)."""
    tournament = load_tournament(path)
    if tournament.file.format == "compare":
        raise UsageError(f"{path} is a comparison's file: serve a league or a tournament")
    if tournament.file.format != "league":
        say(
            f"{tournament.name} is a tournament: it takes entries until it is run (referee "
            "tournament run), and serves its site once it is published there"
        )
        options = dataclasses.replace(options, league=False)
    settings = tournament.file.server
    results_dir = tournament.results_dir
    with SubmissionBook(results_dir) as book:
        again = book.recover(entered_bots(tournament))
    if again:
        say(f"checks: {again} cut off by the last stop, checked again from their stored bytes")
    limits = ArchiveLimits(
        max_files=settings.archive_files,
        max_depth=settings.archive_depth,
        max_bytes=int(settings.archive_mb * 1024 * 1024),
        max_member_bytes=int(settings.archive_mb * 1024 * 1024),
    )
    checker = Checker(
        path,
        results_dir,
        threads=settings.checks,
        limits=limits,
        on_verdict=lambda done: say(_verdict_line(done)),
    )
    comparer = Comparer(
        path,
        results_dir,
        threads=settings.compares,
        limits=limits,
        deals_per_day=settings.compare_deals_per_day,
        on_queued=checker.notify,
    )
    checker.on_compare = comparer.notify
    state = ServerState(
        path, results_dir, settings, checker=checker, comparer=comparer, site=options.site
    )
    config = guarded_config(
        make_app(state),
        options.host,
        options.port,
        header_seconds=settings.header_seconds,
        body_seconds=settings.body_seconds,
        chunk_seconds=min(settings.header_seconds, settings.body_seconds),
        log_level=options.log_level,
        proxy_headers=options.forwarded_allow_ips is not None,
        forwarded_allow_ips=options.forwarded_allow_ips or "",
    )
    import uvicorn

    server = uvicorn.Server(config)
    league = _League(path, options.league_args, say) if options.league else None
    publisher = (
        _Publisher(path, options.site, results_dir, options.every_s, say)
        if options.site is not None and tournament.file.format == "league"
        else None
    )
    if league is not None:  # first: its child is forked before any thread here starts
        league.start()
    checker.start()
    comparer.start()
    if publisher is not None:
        publisher.start()
    try:
        server.run()
    finally:
        comparer.stopping.set()  # a comparison ends at its next event, beside the checks
        checker.stop()
        comparer.stop()
        if publisher is not None:
            publisher.stop()
        if league is not None:
            league.stop()


class _League:
    """The league as a child process, stopped with SIGTERM as when it runs alone."""

    def __init__(self, path: Path, args: Sequence[str], say: Callable[[str], None]) -> None:
        self.command = [sys.executable, "-m", "referee", "league", "run", str(path), *args]
        self.say = say
        self.process: subprocess.Popen[bytes] | None = None
        self.stopping = threading.Event()

    def start(self) -> None:
        """Start the league; it is sent SIGTERM if this process dies first (even killed
        with SIGKILL), so that no league outlives its server and holds the store's lock."""
        self.process = subprocess.Popen(
            self.command, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        threading.Thread(target=self._watch, name="league-watch", daemon=True).start()

    def _watch(self) -> None:
        """Say in one line when the league ends before :meth:`stop` asked it to (its own
        lines above say why); the server goes on taking uploads for the next start."""
        assert self.process is not None
        code = self.process.wait()
        if not self.stopping.is_set():
            how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
            self.say(
                f"the league stopped by itself ({how}): uploads are still checked and "
                "entered, but no match is played until the same command is run again"
            )

    def stop(self) -> None:
        self.stopping.set()
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(_LEAGUE_STOP_S)
        except subprocess.TimeoutExpired:
            self.say("the league did not stop within a minute of SIGTERM: killed")
            process.kill()
            process.wait()


class _Publisher:
    """Publishes the league's site when its store changed, at most every ``every_s``."""

    def __init__(
        self,
        path: Path,
        out: Path,
        results_dir: Path,
        every_s: float,
        say: Callable[[str], None],
    ) -> None:
        from referee.publish.league_site import check_league_target

        check_league_target(out, results_dir)  # refused now, not at the first batch
        self.path = path
        self.out = out
        self.results_dir = results_dir
        self.every_s = every_s
        self.say = say
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="publisher", daemon=True)
        self.seen: object = None
        self.warned = False

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)

    def _loop(self) -> None:
        from referee.publish.league import league_board
        from referee.publish.league_site import publish_league

        while not self.stopping.wait(self.every_s):
            key = changes_key(self.path, self.results_dir)
            if key == self.seen or key[1] is None:  # unchanged, or no store yet
                continue
            try:
                tournament = private_stderr(load_tournament(self.path))
                if league_board(tournament, self.results_dir).batches == 0:
                    continue  # nothing settled yet: no site to show
                publish_league(tournament, self.out, self.results_dir)
            except RefereeError as exc:
                if not self.warned:
                    self.say(f"warning: the site was not published: {exc}")
                    self.warned = True
                continue
            self.seen = key
            self.warned = False


def _verdict_line(done: Submission) -> str:
    """What the server's terminal says of a check that ended."""
    if done.status == "accepted":
        return f"submission {done.id} of {done.author}: accepted as {done.label}"
    lines = done.report.splitlines()
    said = next((line for line in lines if "refused" in line), lines[-1] if lines else "refused")
    return printable(f"submission {done.id} of {done.author}: {said.strip()}")


def _die_with_parent() -> None:
    """In the league's child, before it runs: SIGTERM when the server dies
    (``PR_SET_PDEATHSIG``). It runs before any thread of the server is started."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
