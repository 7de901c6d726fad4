"""The threads of a server queue: each claims the next job from the server's database and
works it, until the server stops.

:class:`QueueThreads` is what the check queue (:class:`~referee.server.checks.Checker`)
and the comparisons (:class:`~referee.server.compares.Comparer`) share: ``threads``
daemon threads, each with a :class:`~referee.server.submissions.SubmissionBook` (one
database connection) of its own, claiming a job in one transaction (so two threads never
work one job), and waiting on a condition that :meth:`QueueThreads.notify` wakes (and, in
case a wake-up is missed, polling every second). While it works a job, a thread borrows a
worker slot of the league's local pool (:mod:`referee.executors.slots`), so that the
league plays a match fewer at once: checks and comparisons are a share of the league's
slots while they run, not processes beside all of them. A job ended by ``Terminated``
(the server stops) ends the thread: what it was doing is left for the next start to
resume.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Generic, TypeVar

from referee.executors.slots import SLOTS, WorkerSlots
from referee.interrupts import Terminated
from referee.server.submissions import SubmissionBook

__all__ = ["QueueThreads"]

Job = TypeVar("Job")

_POLL_S = 1.0


class QueueThreads(Generic[Job]):
    """``threads`` threads named ``<name>-<n>`` that work the jobs :meth:`claim` hands out."""

    def __init__(self, results_dir: Path, threads: int, name: str) -> None:
        self.results_dir = results_dir
        self.slots = WorkerSlots(results_dir / SLOTS)
        self.wake = threading.Condition()
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._loop, args=(f"{name}-{n}",), name=f"{name}-{n}")
            for n in range(threads)
        ]
        for thread in self.threads:
            thread.daemon = True

    def claim(self, book: SubmissionBook) -> Job | None:
        """The next job, now this thread's (``None``: none waits)."""
        raise NotImplementedError

    def work(self, book: SubmissionBook, job: Job) -> None:
        """Work ``job`` to its end and record it."""
        raise NotImplementedError

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def notify(self) -> None:
        """A job may be waiting."""
        with self.wake:
            self.wake.notify_all()

    def stop(self, timeout: float = 30.0) -> None:
        """Take no more jobs; a job under way is given ``timeout`` to end."""
        self.stopping.set()
        self.notify()
        for thread in self.threads:
            if thread.is_alive():
                thread.join(timeout)

    def _loop(self, slot: str) -> None:
        with SubmissionBook(self.results_dir) as book:
            while not self.stopping.is_set():
                job = self.claim(book)
                if job is None:
                    with self.wake:
                        self.wake.wait(_POLL_S)
                    continue
                try:
                    with self.slots.borrow(slot):  # the league plays a match fewer meanwhile
                        self.work(book, job)
                except Terminated:  # the server stops: resumed at its next start
                    return
