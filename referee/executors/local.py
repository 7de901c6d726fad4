"""The local executor: ``N`` worker processes on this machine, one match per task.

Each task runs :func:`referee.executors.worker.play_task` in a ``ProcessPoolExecutor`` worker
started with ``spawn``: a clean interpreter that inherits no SQLite connection, no lock and
no threads from the coordinator. A worker keeps its bot processes between matches (like
cutechess), but never for another seat rotation of a deal they have played, so no process
can carry knowledge from one rotation of a deal to the next; they stop when the worker
exits.

A worker that dies (killed, out of memory, a crash in C code) breaks the whole pool in
``concurrent.futures``: every match in flight fails with ``BrokenProcessPool``. The pool is
then rebuilt and those matches go to the back of the queue, each at most ``max_attempts``
times in all.

Memory: :meth:`LocalExecutor.within_memory` sizes the pool so that every bot's memory
limit that can be alive at once (each worker's table and the idle bots it keeps) fits in
the memory this machine, or the referee's cgroup, really has
(:mod:`referee.sandbox.budget`); workers lower their ``oom_score_adj`` where they may.

Used as a context manager, the executor keeps its pool (and the workers' bot processes)
from one ``run`` to the next: play-off rounds are small, and each would otherwise pay for
starting the workers and their bots again.

Lending: the coordinator hands out as many matches as there are workers and one more (the
next waits in the pool's queue); with a ``lender`` (:mod:`referee.executors.slots`), one
fewer than the workers for each slot a server's check or comparison holds now, counted
before each hand-out, never fewer than one. A match under way is never cut short for a
slot.

Start-up off the critical path: :meth:`LocalExecutor.prepare` (the coordinator calls it
before it stages the bots and schedules the matches) starts the pool's processes at once,
and each, in its initializer, imports the referee and has the sandbox probe what it probes
at its first start (:meth:`referee.sandbox.base.Sandbox.prepare`): about half a second a
worker that used to come after the scheduling. The next ``run`` (or ``with`` block) takes
that pool.

Stopping: a worker stops its bots and exits when it gets SIGTERM, when the coordinator
asks (it sets a shared event when its run ends early: Ctrl-C, SIGTERM, a usage error), and
when the coordinator dies, even by SIGKILL (``PR_SET_PDEATHSIG`` signals the worker; a
thread polls the parent where that is missing); otherwise a ``ProcessPoolExecutor`` worker
waits forever for work from a dead coordinator. A worker in a match cancels it: the match's
cleanup removes its containers and kills its processes, including those still starting
(:func:`referee.protocol.seats.seated` stops a bot interrupted while greeted), and then the
bots kept for reuse. Workers ignore Ctrl-C itself: a terminal sends it to the whole process
group, and the coordinator decides.

In each worker process the pool's initializer (:func:`_init_worker`) builds one
:class:`_PoolProcess`: the process's :class:`~referee.executors.worker.Worker` (its event
loop, sandboxes and kept bots) and its stop state, with the signal handlers and the watch
thread as its bound methods. The function each task runs, :func:`_play_in_worker`, finds it
in :data:`_THIS_PROCESS`, the one slot of process state here: ``concurrent.futures`` keeps
nothing of an initializer but its effects, and a task is pickled in the coordinator, where
the worker does not exist, so nothing can hand the object over (a ``functools.partial``
would be pickled with the task, a fresh copy each time). A process has exactly one worker:
the slot is filled once, by the initializer, and never replaced.
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
from multiprocessing.synchronize import Event as EventType
from types import FrameType

from referee import interrupts
from referee.errors import UsageError
from referee.executors.base import (
    DEFAULT_ATTEMPTS,
    AttemptEvent,
    Attempts,
    Executor,
    MatchTask,
    RunsHere,
    SandboxPlan,
    TaskOutcome,
)
from referee.executors.slots import WorkerSlots
from referee.executors.worker import Worker
from referee.sandbox import Limits
from referee.sandbox.budget import (
    MemoryBudget,
    MemoryPlan,
    plan_workers,
    protect_referee,
    read_budget,
)

__all__ = ["DEFAULT_ATTEMPTS", "LocalExecutor", "default_workers"]

_PR_SET_PDEATHSIG = 1
_ORPHAN_SIGNAL = signal.SIGHUP
_STOP_GRACE_S = 60.0


def default_workers() -> int:
    """One worker per core."""
    return os.cpu_count() or 1


class LocalExecutor(RunsHere, Executor):
    """Runs match tasks in ``workers`` local processes; see the module docstring."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        max_attempts: int = DEFAULT_ATTEMPTS,
        idle_bots: int | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise UsageError(f"--workers must be at least 1, not {workers}")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.workers = workers or default_workers()
        self.max_attempts = max_attempts
        self.idle_bots = idle_bots
        """Idle bot processes each worker keeps between matches (``None``: a table's worth)."""
        self.memory: MemoryPlan | None = None
        """How :meth:`within_memory` sized this executor (``None`` when it did not)."""
        self.lender: WorkerSlots | None = None
        """Slots this pool lends to a server's checks (:mod:`referee.executors.slots`):
        each one borrowed is a match fewer at once, never fewer than one."""
        self._context = multiprocessing.get_context("spawn")
        self._kept: tuple[ProcessPoolExecutor, EventType] | None = None
        self._early: tuple[ProcessPoolExecutor, EventType] | None = None

    @classmethod
    def within_memory(
        cls,
        workers: int | None,
        *,
        seats: int,
        limits: Limits,
        own_cgroup: bool,
        overcommit: bool = False,
        budget: MemoryBudget | None = None,
        max_attempts: int = DEFAULT_ATTEMPTS,
    ) -> LocalExecutor:
        """An executor whose workers' bots fit in the memory really there.

        ``workers`` (default: one per core) is lowered, and the idle bot processes each
        worker keeps are capped, so that every memory limit that can be alive at once fits
        in ``budget`` (default: :func:`~referee.sandbox.budget.read_budget` of this
        machine, ``own_cgroup`` when the bots run in the referee's cgroup tree); see
        :func:`~referee.sandbox.budget.plan_workers`, whose notes end up in
        :attr:`memory`. ``UsageError`` when not even one worker fits (unless ``overcommit``).
        """
        wanted = workers or default_workers()
        if wanted < 1:
            raise UsageError(f"--workers must be at least 1, not {wanted}")
        plan = plan_workers(
            wanted,
            seats=seats,
            memory_mb=limits.memory_mb,
            budget=budget or read_budget(own_cgroup=own_cgroup),
            overcommit=overcommit,
        )
        executor = cls(plan.workers, max_attempts=max_attempts, idle_bots=plan.idle)
        executor.memory = plan
        return executor

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        """The backend found here; the workers start now, and probe it (module docstring)."""
        plan = super().prepare(backend, images)
        if self._kept is None and self._early is None:
            stop = self._context.Event()
            self._early = (self._new_pool(stop, (plan.name, images)), stop)
            self._spawn(self._early[0])
        return plan

    def release_prepared(self) -> None:
        """Stop the workers :meth:`prepare` started when no run will take them (the run was
        refused while it prepared): left alone, they would die half-started with the
        coordinator, each printing a traceback."""
        if self._early is not None:
            (pool, stop), self._early = self._early, None
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> LocalExecutor:
        """Keep one pool for every ``run`` until the ``with`` block ends."""
        if self._early is not None:
            self._kept, self._early = self._early, None
        else:
            stop = self._context.Event()
            self._kept = (self._new_pool(stop), stop)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._kept is not None:
            pool, stop = self._kept
            self._kept = None
            if exc[0] is not None:
                stop.set()  # ended by an error or an interruption: stop the matches too
            pool.shutdown(wait=True, cancel_futures=True)

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        """Play every task; return when each has finished or failed for good."""
        queue = deque(tasks)
        attempts = Attempts(self.max_attempts, on_event)
        in_flight: dict[Future[TaskOutcome], MatchTask] = {}
        if self._kept is not None:
            pool, stop = self._kept
        elif self._early is not None:
            (pool, stop), self._early = self._early, None
        else:
            stop = self._context.Event()
            pool = self._new_pool(stop)
        try:
            while queue or in_flight:
                room = self._room()
                while queue and len(in_flight) < room:
                    task = queue.popleft()
                    number = attempts.next(task)
                    # The workers take tasks in turn: this one's worker likely gets the
                    # task `workers` places on next (it starts those bots meanwhile).
                    after = queue[self.workers - 1] if len(queue) >= self.workers else None
                    try:
                        future = pool.submit(
                            _play_in_worker, task.attempt(number).followed_by(after)
                        )
                    except BrokenProcessPool:
                        queue.appendleft(task)
                        pool = self._replace(pool, stop)
                        continue
                    attempts.started(task, number)
                    in_flight[future] = task
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                broken = False
                for future in done:
                    task = in_flight.pop(future)
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        broken = True
                        outcome = TaskOutcome(
                            "infrastructure", error="a worker process died during the match"
                        )
                    if attempts.settle(task, outcome):
                        queue.append(task)
                if broken:
                    pool = self._replace(pool, stop)
        except BaseException:
            stop.set()  # the matches in progress are cancelled; their bots stopped
            raise
        finally:
            if self._kept is None or stop.is_set():
                pool.shutdown(wait=True, cancel_futures=True)

    def _room(self) -> int:
        """How many matches may be handed out at once now: every worker's and one more (the
        next task waits in the pool's queue, so a worker that finishes starts at once),
        less a match for each slot a server borrowed; never fewer than one."""
        lent = self.lender.borrowed() if self.lender is not None else 0
        if lent == 0:
            return self.workers + 1
        return max(1, self.workers - lent)

    def _new_pool(
        self, stop: EventType, sandbox: tuple[str, tuple[str, ...]] | None = None
    ) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=self._context,
            initializer=_init_worker,
            initargs=(os.getpid(), stop, self.idle_bots, sandbox),
        )

    def _spawn(self, pool: ProcessPoolExecutor) -> None:
        """Start every process of ``pool`` now (``concurrent.futures`` starts them as tasks
        come): one no-op each, which each worker takes as soon as its initializer is done."""
        for _ in range(self.workers):
            pool.submit(_nothing)

    def _replace(self, pool: ProcessPoolExecutor, stop: EventType) -> ProcessPoolExecutor:
        """A fresh pool for a broken one (the broken pool has already stopped its workers)."""
        pool.shutdown(wait=True, cancel_futures=True)
        fresh = self._new_pool(stop)
        if self._kept is not None:
            self._kept = (fresh, stop)
        return fresh


class _PoolProcess:
    """One process of the local pool: its :class:`Worker` and how it stops (module docstring).

    ``coordinator`` is the pid of the process that made the pool; ``stop`` the event it sets
    when its run ends early.
    """

    def __init__(self, coordinator: int, stop: EventType, idle_bots: int | None) -> None:
        self.coordinator = coordinator
        self.stop = stop
        # Bots stay up between this worker's matches; they are stopped when the worker exits.
        self.worker = Worker(reuse=True, idle_cap=idle_bots)
        self.in_match = threading.Event()
        self.stopping = threading.Event()
        self.exiting = threading.Event()

    def start(self) -> None:
        """Stop the bots and exit when told to; let the kernel's OOM killer take bots first
        (:func:`referee.sandbox.budget.protect_referee`)."""
        protect_referee()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self.on_stop)
        signal.signal(_ORPHAN_SIGNAL, self.on_stop)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, _ORPHAN_SIGNAL)
        if os.getppid() != self.coordinator:  # the coordinator died before prctl took effect
            os._exit(1)
        threading.Thread(target=self.watch_coordinator, daemon=True).start()
        multiprocessing.util.Finalize(None, self.worker.close, exitpriority=10)
        interrupts.skip_teardown()

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM, or the coordinator is gone: stop this worker's bots, then exit.

        In a match, its task is cancelled and :meth:`play` exits once the match has cleaned
        up. Idle, the bots kept for reuse are stopped here and the worker exits at once: an
        exception raised from here could be swallowed by the pool's own code (it catches
        everything while it sends a result back), leaving the worker waiting for work forever.
        """
        if self.exiting.is_set():
            return
        self.stopping.set()
        if interrupts.cancel_main_task() or self.in_match.is_set():
            return
        self.exiting.set()
        self.worker.close()
        os._exit(128 + signum)

    def play(self, task: MatchTask) -> TaskOutcome:
        """:meth:`Worker.play`, then exit if this worker was told to stop meanwhile."""
        self.in_match.set()
        try:
            return self.worker.play(task)
        finally:
            # Checked before the match flag is cleared: a stop from then on is handled as idle.
            if self.stopping.is_set() or os.getppid() != self.coordinator:
                self.exiting.set()
                self.worker.close()
                os._exit(1)
            self.in_match.clear()

    def watch_coordinator(self) -> None:
        """Turn a stop request, or the coordinator's death, into SIGTERM; exit if it hangs.

        The death is noticed here too on systems without ``PR_SET_PDEATHSIG``. SIGTERM is
        repeated each second, for a stop that arrives just as a match ends.
        """
        while os.getppid() == self.coordinator and not self.stop.wait(1.0):
            pass
        deadline = time.monotonic() + _STOP_GRACE_S
        while time.monotonic() < deadline:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)
        os._exit(1)


class _WorkerSlot:
    """Where a pool process keeps its one :class:`_PoolProcess` (see the module docstring):
    filled once by :func:`_init_worker`, read by every task the process runs."""

    __slots__ = ("_process",)

    def __init__(self) -> None:
        self._process: _PoolProcess | None = None

    def fill(self, process: _PoolProcess) -> None:
        if self._process is not None:
            raise RuntimeError("this process is a worker already: a process has exactly one")
        self._process = process

    def get(self) -> _PoolProcess:
        if self._process is None:
            raise RuntimeError("not a process of the local pool (its initializer did not run)")
        return self._process


_THIS_PROCESS = _WorkerSlot()


def _init_worker(
    coordinator: int,
    stop: EventType,
    idle_bots: int | None = None,
    sandbox: tuple[str, tuple[str, ...]] | None = None,
) -> None:
    """The pool's initializer: this process's worker, which stops its bots and exits when
    told to (see the module docstring) and keeps at most ``idle_bots`` idle bot processes;
    with ``sandbox`` (backend name, images), that backend made and probed before any task."""
    process = _PoolProcess(coordinator, stop, idle_bots)
    _THIS_PROCESS.fill(process)
    process.start()
    if sandbox is not None:
        process.worker.prepare(*sandbox)


def _nothing() -> None:
    """What :meth:`LocalExecutor._spawn` submits: only the start of a process counts."""


def _play_in_worker(task: MatchTask) -> TaskOutcome:
    """What the pool runs for each task: this process's worker plays it."""
    return _THIS_PROCESS.get().play(task)
