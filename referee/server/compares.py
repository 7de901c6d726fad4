"""The comparisons of ``--compare`` uploads: is the new version better than the current one?

:class:`Comparer` runs ``[server] compares`` threads. Each claims the oldest waiting
comparison (:meth:`~referee.server.submissions.SubmissionBook.claim_comparison`: the
upload's check passed, and it was not entered) and plays it as ``referee compare NEW OLD``
plays (:func:`referee.runs.comparison.run_comparison` on
:func:`referee.tournament.quick.compare_tournament`), on the league's terms:

- **NEW** is the upload's stored bytes, unpacked again (their files' SHA-256 must be the
  one the check read), **OLD** the author's version of the entrant in the league when the
  check passed;
- **the field** is the league's entrants of other authors that are seated now (not
  suspended, not retired), the ``2 * (table_size - 1)`` best by the league's leaderboard
  (its ranked entrants in rank order, then the unrated by label, then those the league has
  not taken in yet in file order), and never fewer than ``table_size - 1``: a league with
  fewer fails the comparison with that sentence;
- **the rules** are the league file's whole rules table (overrides included), its table
  size, clock, memory limit, sandbox backend and images; the test is ``referee compare``'s
  default for those rules (:func:`~referee.runs.comparison.default_test`);
- **its own folder**, ``compares/<id>/`` in the league's results folder: ``bots/`` holds
  copies of NEW, OLD and the field made when it first starts (so a version the league
  retires meanwhile does not end a comparison under way), ``results/`` its store and
  match logs. The run core deals its matches from a secret of that folder's own, made
  fresh with it: never the league's deals;
- **its budget**: at most the deals left of the author's ``[server]
  compare_deals_per_day`` (:meth:`~referee.server.submissions.SubmissionBook.
  compare_budget`), fixed when it first starts; it stops undecided there;
- **one worker process** of its own (the local executor), whatever the league's executor,
  in a worker slot borrowed from the league's local pool for as long as it plays
  (:mod:`referee.server.workers`): ``[server] compares`` is the share of the league's
  slots the organiser gives to comparisons.

After every deal the test's progress line (as ``referee compare`` prints it) is stored;
at the end its verdict line, the decision and the deals played (what the budget counts).
A comparison that cannot be played (too small a field, no memory for one worker, a
sandbox that does not start) ends ``failed`` with the reason; either way the upload is
then ``compared`` (or, for ``--enter-if-better`` and "H1 accepted", back in the queue to
be entered: ``on_queued`` wakes the check queue).

Stopping: at the server's stop, a comparison is ended at its next event (``Terminated``
raised in its listener: the run core stops its worker as for Ctrl-C) and left ``running``,
which the next start puts back to ``waiting``
(:meth:`~referee.server.submissions.SubmissionBook.recover`): it resumes from its folder,
on its own cards.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

from referee.errors import RefereeError, UsageError
from referee.interrupts import Terminated
from referee.publish.league import league_board
from referee.ranking.sprt import Sprt
from referee.runs.comparison import (
    ComparisonEvent,
    ComparisonSummary,
    SprtProgress,
    default_test,
    progress_line,
    run_comparison,
    verdict_line,
)
from referee.sandbox import BotSpec, bot_sha256, read_bot, read_bot_files
from referee.sandbox.staging import MANIFEST, write_bot_folder
from referee.server.archives import ArchiveLimits, unpack_upload
from referee.server.submissions import Comparison, SubmissionBook
from referee.server.workers import QueueThreads
from referee.text import printable
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.league import league_roster, version_label
from referee.tournament.quick import compare_tournament
from referee.tournament.store import Store

__all__ = ["COMPARES", "Comparer", "field_size", "league_field"]

COMPARES = "compares"
"""The folder of the comparisons, in the league's results folder."""

_BOTS, _RESULTS = "bots", "results"
_BATCH = 2
"""Deals stored at a time: twice the one worker (:func:`~referee.runs.comparison.
run_comparison` says why)."""


def field_size(table_size: int) -> int:
    """How many field bots a comparison takes, at most: twice the seats beside NEW's."""
    return 2 * (table_size - 1)


def league_field(tournament: Tournament, author: str) -> list[str]:
    """The labels of the field a comparison of ``author``'s takes (see the module
    docstring), best first; maybe fewer than ``table_size - 1`` (the caller refuses)."""
    seated = {bot.name: bot for bot in tournament.bots}
    roster = league_roster(tournament.file, tournament.path)
    others = [
        v.label
        for v in roster.active
        if v.label in seated and author not in (v.entry.author, seated[v.label].author)
    ]
    try:
        board = league_board(tournament)
    except UsageError:  # no results yet: the file's order
        order = others
    else:
        ranked = [e.label for e in (*board.entries, *board.unrated)]
        held = {e.label for e in board.suspended}
        order = [label for label in ranked if label in others]
        order += [label for label in others if label not in order and label not in held]
    return order[: field_size(tournament.file.table_size)]


class Comparer(QueueThreads[Comparison]):
    """The threads that play the waiting comparisons of the league file at ``path``."""

    def __init__(
        self,
        path: Path,
        results_dir: Path,
        *,
        threads: int,
        limits: ArchiveLimits,
        deals_per_day: int,
        on_queued: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(results_dir, threads, "compare")
        self.path = path
        self.limits = limits
        self.deals_per_day = deals_per_day
        self.on_queued = on_queued

    def claim(self, book: SubmissionBook) -> Comparison | None:
        return book.claim_comparison()

    def work(self, book: SubmissionBook, job: Comparison) -> None:
        self.compare(book, job)

    def compare(self, book: SubmissionBook, job: Comparison) -> None:
        """Play ``job`` and record its verdict (see the module docstring)."""
        try:
            summary, names, test = self._play(book, job)
        except RefereeError as exc:
            line = printable(f"the comparison could not be played: {exc}")
            queued = book.finish_comparison(job.id, "failed", line)
        else:
            verdict = verdict_line(summary, names[0], names[1], test)
            if summary.failed:
                verdict += (
                    f"; {summary.failed} matches failed on the referee's side (their deals "
                    "are left out)"
                )
            queued = book.finish_comparison(
                job.id,
                "done",
                printable(verdict),
                decision=summary.state.decision if summary.capped is None else "undecided",
                deals=_deals_played(summary.results_dir),
                matches=summary.matches,
            )
        if queued and self.on_queued is not None:
            self.on_queued()

    def _play(
        self, book: SubmissionBook, job: Comparison
    ) -> tuple[ComparisonSummary, tuple[str, str], Sprt]:
        from referee.executors.local import LocalExecutor

        league = load_tournament(self.path)
        folder = self.results_dir / COMPARES / job.id
        if not (folder / _BOTS).is_dir():
            job = self._prepare(book, job, league, folder)
        bots = _named_bots(job, league, folder / _BOTS)
        f = league.file
        settings, test = default_test(league.rules, f.table_size)
        tournament = compare_tournament(
            bots[0],
            bots[1],
            bots[2:],
            [str(bot.folder / (bot.single_file or "")) for bot in bots],
            preset="",
            max_rounds=None,
            rules=f.rules,
            table_size=f.table_size,
            deals=job.max_deals,
            time_control=league.time_control,
            backend=f.sandbox.backend,
            memory_mb=f.sandbox.memory_mb,
            images=f.sandbox.images,
            folder=folder,
            test=settings,
        )
        executor = LocalExecutor.within_memory(
            1,
            seats=f.table_size,
            limits=league.limits,
            own_cgroup=f.sandbox.backend == "process",
        )

        def listen(event: ComparisonEvent) -> None:
            if self.stopping.is_set():
                raise Terminated
            if isinstance(event, SprtProgress):
                book.compare_step(job.id, event.state.deals, event.matches, progress_line(event))

        summary = run_comparison(
            tournament,
            executor,
            test,
            max_deals=job.max_deals,
            results_dir=folder / _RESULTS,
            batch=_BATCH,
            on_event=listen,
        )
        return summary, (bots[0].name, bots[1].name), test

    def _prepare(
        self, book: SubmissionBook, job: Comparison, league: Tournament, folder: Path
    ) -> Comparison:
        """A comparison's first start: its field chosen, its budget fixed (both recorded),
        and copies of NEW (the stored upload, unpacked again), OLD and the field made in
        ``folder`` (renamed into place after the record, so a folder with copies always
        has its record). ``UsageError`` when it cannot be played."""
        k = league.file.table_size
        field = league_field(league, job.author)
        if len(field) < k - 1:
            raise UsageError(
                f"the league has {len(field)} entrants of other authors seated now; a "
                f"comparison at tables of {k} needs {k - 1} besides your two versions"
            )
        left, wait = book.compare_budget(job.author, self.deals_per_day)
        if left < 1:
            raise UsageError(
                f"the day's {self.deals_per_day} deals of comparisons are spent "
                f"([server] compare_deals_per_day); more in {int(wait) + 1} s"
            )
        shutil.rmtree(folder, ignore_errors=True)
        staging = folder / "upload"
        staging.mkdir(parents=True)
        upload = book.get(job.id)
        assert upload is not None  # a comparison's upload is never deleted
        new = unpack_upload(book.path(job.id), upload.filename, staging, self.limits)
        new_spec, files = read_bot(new)
        if bot_sha256(files) != upload.bot_sha256:
            raise UsageError("the stored upload is not the one checked; upload it again")
        sources = [new_spec, _seated(league, job.old), *(_seated(league, x) for x in field)]
        copies = folder / f"{_BOTS}.new"
        copies.mkdir()
        for n, spec in enumerate(sources):
            write_bot_folder(read_bot_files(spec), copies / _copy_name(n))
        shutil.rmtree(staging)
        book.plan_comparison(job.id, field, left)
        copies.rename(folder / _BOTS)
        planned = book.comparison(job.id)
        assert planned is not None
        return planned


def _copy_name(n: int) -> str:
    """The folder of the ``n``-th bot's copy: NEW, OLD, then the field in order."""
    return ("new", "old")[n] if n < 2 else f"field-{n - 2}"


def _named_bots(job: Comparison, league: Tournament, copies: Path) -> list[BotSpec]:
    """NEW, OLD and the field, read from their copies, under the names they play as: OLD
    and the field their labels, NEW the label it would be entered under now."""
    latest = league_roster(league.file, league.path).latest(job.entrant)
    labels = [
        version_label(job.entrant, (latest.version if latest else 1) + 1),
        job.old,
        *job.field_bots,
    ]
    return [_read_copy(copies / _copy_name(n), label) for n, label in enumerate(labels)]


def _seated(league: Tournament, label: str) -> BotSpec:
    found = next((bot for bot in league.bots if bot.name == label), None)
    if found is None:
        raise UsageError(f"{label} is no longer in the league")
    return found


def _read_copy(folder: Path, label: str) -> BotSpec:
    """The bot copied into ``folder`` (a folder bot, or the one file of a single-file
    bot) as ``label``."""
    path = folder if (folder / MANIFEST).exists() else next(folder.iterdir())
    spec, _ = read_bot(path)
    return dataclasses.replace(spec, name=label)


def _deals_played(results_dir: Path) -> int:
    """The deals a comparison's folder holds matches of (what its budget counts)."""
    with Store(results_dir, readonly=True) as store:
        return len({spec.deal for spec in store.specs().values()})
