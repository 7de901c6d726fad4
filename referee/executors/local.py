"""The local executor: ``N`` worker processes on this machine, one match per task.

Each task runs :func:`referee.executors.play_task` in a ``ProcessPoolExecutor`` worker
started with ``spawn``: a clean interpreter that inherits no SQLite connection, no lock and
no threads from the coordinator. A worker keeps its bot processes between matches (like
cutechess), but never for another seat rotation of a deal they have played, so no process
can carry knowledge from one rotation of a deal to the next; they stop when the worker
exits.

A worker that dies (killed, out of memory, a crash in C code) breaks the whole pool in
``concurrent.futures``: every match in flight fails with ``BrokenProcessPool``. The pool is
then rebuilt and those matches go to the back of the queue, each at most ``max_attempts``
times in all.

Used as a context manager, the executor keeps its pool (and the workers' bot processes)
from one ``run`` to the next: play-off rounds are small, and each would otherwise pay for
starting the workers and their bots again.

Workers end with the coordinator, even when it is killed with SIGKILL (otherwise a
``ProcessPoolExecutor`` worker waits forever for work from a dead coordinator):
``PR_SET_PDEATHSIG`` signals them, and an idle worker exits at once while a busy one first
finishes its match, which its time control bounds, so its bots are stopped the normal way.
Workers ignore Ctrl-C for the same reason: the coordinator handles it and waits for the
matches in progress. Cancelling a match half-way instead can interrupt a bot's start-up and
leave a sandbox process behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import multiprocessing.util
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from referee.errors import UsageError
from referee.executors import (
    Event,
    MatchFailed,
    MatchFinished,
    MatchStarted,
    MatchTask,
    TaskOutcome,
    close_reused,
    enable_reuse,
    play_task,
)
from referee.results import MatchResult

__all__ = ["DEFAULT_ATTEMPTS", "LocalExecutor", "default_workers"]

DEFAULT_ATTEMPTS = 3
_PR_SET_PDEATHSIG = 1
_ORPHAN_SIGNAL = signal.SIGHUP
_ORPHAN_GRACE_S = 600.0


def default_workers() -> int:
    """One worker per core."""
    return os.cpu_count() or 1


class LocalExecutor:
    """Runs match tasks in ``workers`` local processes; see the module docstring."""

    def __init__(self, workers: int | None = None, *, max_attempts: int = DEFAULT_ATTEMPTS) -> None:
        if workers is not None and workers < 1:
            raise UsageError(f"--workers must be at least 1, not {workers}")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.workers = workers or default_workers()
        self.max_attempts = max_attempts
        self._kept: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalExecutor:
        """Keep one pool for every ``run`` until the ``with`` block ends."""
        self._kept = self._new_pool()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._kept is not None:
            self._kept.shutdown(wait=True, cancel_futures=True)
            self._kept = None

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[Event], None]) -> None:
        """Play every task; return when each has finished or failed for good."""
        queue = deque(tasks)
        attempts: dict[str, int] = {}
        in_flight: dict[Future[TaskOutcome], MatchTask] = {}
        pool = self._kept or self._new_pool()
        try:
            while queue or in_flight:
                while queue and len(in_flight) <= self.workers:
                    task = queue.popleft()
                    try:
                        future = pool.submit(_play_in_worker, task)
                    except BrokenProcessPool:
                        queue.appendleft(task)
                        pool = self._replace(pool)
                        continue
                    attempts[task.spec.key] = attempts.get(task.spec.key, 0) + 1
                    on_event(MatchStarted(task.spec.key, attempts[task.spec.key]))
                    in_flight[future] = task
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                broken = False
                for future in done:
                    task = in_flight.pop(future)
                    key = task.spec.key
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        broken = True
                        outcome = TaskOutcome(
                            "infrastructure", error="a worker process died during the match"
                        )
                    if outcome.status == "done":
                        assert outcome.result is not None
                        on_event(MatchFinished(key, MatchResult.model_validate(outcome.result)))
                        continue
                    if outcome.status == "usage":
                        raise UsageError(outcome.error or "the match could not start")
                    error = outcome.error or outcome.status
                    final = outcome.status == "bug" or attempts[key] >= self.max_attempts
                    on_event(MatchFailed(key, error, attempts[key], final))
                    if not final:
                        queue.append(task)
                if broken:
                    pool = self._replace(pool)
        finally:
            if self._kept is None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(os.getpid(),),
        )

    def _replace(self, pool: ProcessPoolExecutor) -> ProcessPoolExecutor:
        """A fresh pool for a broken one (the broken pool has already stopped its workers)."""
        pool.shutdown(wait=True, cancel_futures=True)
        fresh = self._new_pool()
        if self._kept is not None:
            self._kept = fresh
        return fresh


_coordinator = 0
_in_match = threading.Event()


def _init_worker(coordinator: int) -> None:
    """Make this worker end with the coordinator (see the module docstring)."""
    global _coordinator
    _coordinator = coordinator
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(_ORPHAN_SIGNAL, _on_orphaned)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, _ORPHAN_SIGNAL)
    if os.getppid() != coordinator:  # the coordinator died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_coordinator, daemon=True).start()
    # Bots stay up between this worker's matches; they are stopped when the worker exits.
    enable_reuse()
    multiprocessing.util.Finalize(None, close_reused, exitpriority=10)


def _on_orphaned(signum: int, frame: object) -> None:
    if not _in_match.is_set():
        os._exit(1)


def _play_in_worker(task: MatchTask) -> TaskOutcome:
    """:func:`play_task`, then exit if the coordinator died meanwhile."""
    _in_match.set()
    try:
        return play_task(task)
    finally:
        _in_match.clear()
        if os.getppid() != _coordinator:
            os._exit(1)


def _watch_coordinator() -> None:
    """For systems without ``PR_SET_PDEATHSIG``, and a match that would not end: poll."""
    while os.getppid() == _coordinator:
        time.sleep(1.0)
    deadline = time.monotonic() + _ORPHAN_GRACE_S
    while _in_match.is_set() and time.monotonic() < deadline:
        time.sleep(0.5)
    os._exit(1)
