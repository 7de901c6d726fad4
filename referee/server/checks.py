"""The check queue: each stored upload checked as ``referee submit`` checks a bot, and entered.

:class:`Checker` runs ``[server] checks`` threads. Each claims the oldest queued upload
(:meth:`~referee.server.submissions.SubmissionBook.claim`), unpacks its stored bytes into a
private temporary folder (:func:`referee.server.archives.unpack_upload`: the staging
rules, the archive limits of ``[server]``), and hands that folder to
:func:`referee.submit.submit` with the upload's author as ``owner`` (the token decides the
author; a ``bot.toml``'s is ignored). The check therefore reads the bytes once, checks
them and enters exactly those, as the command does; checks side by side enter one at a
time (``enter_lock``), each against the file as the others left it. The report is what the
command prints, line by line, stored as the check goes so that the author watches it.

The checks run in this process's threads at its own CPU priority (never lowered, so an
honest bot under check does not miss its time limits), each in a worker slot borrowed from
the league's local pool (:mod:`referee.server.workers`). An
accepted bot is a ``[[bots]]`` entry in the league file: the running league reads the
file every ``[league] poll_seconds`` and takes it in at its next batch.

A compare upload (``mode`` ``compare`` or ``enter-if-better``,
:mod:`referee.server.submissions`) is checked the same way and not entered
(``submit(enter=False)``): once it passes, it stays ``checking`` and its comparison with
the author's current version of the entrant waits for a comparer
(:mod:`referee.server.compares`; ``on_compare`` wakes them). One with no current version
of the author's (a new entrant, or one retired) is refused with that sentence.

A refused upload's bytes are deleted once its verdict is stored (the report stays); an
accepted one's stay beside its row.

A failure on the server's side (an unreadable stored upload, a sandbox that does not
start) refuses the upload with the reason, so that the queue never stalls on one upload;
the author may upload again.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from referee.errors import RefereeError, Refused, UsageError
from referee.match.compliance import CheckReport, step_lines
from referee.sandbox import bot_sha256, read_bot
from referee.server.archives import ArchiveLimits, unpack_upload
from referee.server.submissions import Submission, SubmissionBook
from referee.server.workers import QueueThreads
from referee.submit import Submission as CheckedBot
from referee.submit import accepted_line, check_intro, submit
from referee.text import printable
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.league import league_roster

__all__ = ["Checker", "entered_bots"]


def entered_bots(tournament: Tournament) -> dict[tuple[str, str], tuple[str, int | None, str]]:
    """Every current entrant of the file by ``(author, files' sha256)``: what a check cut
    off by a stop may have entered already (see
    :meth:`~referee.server.submissions.SubmissionBook.recover`)."""
    found: dict[tuple[str, str], tuple[str, int | None, str]] = {}
    by_label = {bot.name: bot for bot in tournament.bots}
    if tournament.file.format == "league":
        for version in league_roster(tournament.file, tournament.path).active:
            bot = by_label.get(version.label)
            if bot is not None and version.entry.author and bot.sha256:
                found[(version.entry.author, bot.sha256)] = (
                    version.name,
                    version.version,
                    version.label,
                )
        return found
    for bot in tournament.bots:
        if bot.author and bot.sha256:
            found[(bot.author, bot.sha256)] = (bot.name, None, bot.name)
    return found


class Checker(QueueThreads[Submission]):
    """The threads that empty the check queue of the league file at ``path``."""

    def __init__(
        self,
        path: Path,
        results_dir: Path,
        *,
        threads: int,
        limits: ArchiveLimits,
        on_verdict: Callable[[Submission], None] | None = None,
        on_compare: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(results_dir, threads, "check")
        self.path = path
        self.limits = limits
        self.on_verdict = on_verdict
        self.on_compare = on_compare
        self.enter_lock = threading.Lock()

    def claim(self, book: SubmissionBook) -> Submission | None:
        return book.claim()

    def work(self, book: SubmissionBook, job: Submission) -> None:
        self.check(book, job)

    def check(self, book: SubmissionBook, upload: Submission) -> None:
        """Check ``upload`` and record the verdict (see the module docstring)."""
        lines: list[str] = []

        def say(text: str) -> None:
            lines.extend(printable(line) for line in text.splitlines())
            book.step(upload.id, "\n".join(lines))

        workdir = Path(tempfile.mkdtemp(prefix="referee-upload-"))
        try:
            verdict = self._check(book, upload, workdir, say)
        except (Refused, UsageError) as exc:
            lines.extend(printable(line) for line in str(exc).splitlines())
            verdict = "refused", {}
        except RefereeError as exc:  # the server's side: said, and the queue goes on
            lines.append(printable(f"the check could not run on the server: {exc}"))
            verdict = "refused", {}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        status, entered = verdict
        if status == "compare":
            book.to_compare(
                upload.id, "\n".join(lines), str(entered["entrant"]), str(entered["old"])
            )
            if self.on_compare is not None:
                self.on_compare()
            return
        book.finish(upload.id, status, "\n".join(lines), **entered)  # type: ignore[arg-type]
        if status == "refused":  # its report is kept; its bytes are not wanted again
            book.discard(upload.id)
        if self.on_verdict is not None:
            done = book.get(upload.id)
            if done is not None:
                self.on_verdict(done)

    def _check(
        self,
        book: SubmissionBook,
        upload: Submission,
        workdir: Path,
        say: Callable[[str], None],
    ) -> tuple[str, dict[str, object]]:
        bot = unpack_upload(book.path(upload.id), upload.filename, workdir, self.limits)
        _, files = read_bot(bot)
        book.read(upload.id, bot_sha256(files))
        tournament = load_tournament(self.path)

        def started(report: CheckReport) -> None:
            for line in check_intro(report, tournament):
                say(line)

        entered = submit(
            bot,
            tournament,
            name=upload.name,
            owner=upload.author,
            on_check=started,
            progress=lambda step: say(step_lines(step)[0]),
            enter_lock=self.enter_lock,
            enter=upload.mode == "enter",
        )
        if not entered.entered:
            return "compare", _compared(entered, say)
        say(accepted_line(entered, self.path.name))
        version = entered.version
        return "accepted", {
            "entrant": entered.name,
            "version": version.version if version else None,
            "label": version.label if version else entered.name,
        }


def _compared(checked: CheckedBot, say: Callable[[str], None]) -> dict[str, object]:
    """A compare upload that passed its check: what it is compared with, or refused."""
    current = checked.replaces
    if current is None:
        raise Refused(
            f"not compared: you have no version of {printable(checked.name)!r} in the league "
            "to compare it with; upload it without --compare to enter it"
        )
    say(
        printable(
            f"checked: the bot passed, and is not entered: it is compared with "
            f"{current.label}, your version of {checked.name} in the league, first"
        )
    )
    return {"entrant": checked.name, "old": current.label}
