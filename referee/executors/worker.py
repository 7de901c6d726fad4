"""What a worker does with a task: a :class:`Worker` plays it, keeping bots between tasks.

A :class:`Worker` owns what a worker keeps from one task to the next: its event loop (an
:class:`asyncio.Runner`), one sandbox backend per backend name and image list (bubblewrap
is probed once), the engine's memo (:class:`~referee.rules.engine.EngineMemo`: card codecs,
legal moves, encoded events, shared by its matches), and, when it reuses bots, one
:class:`~referee.protocol.seats.SessionPool` per sandbox, time control and limits. Nothing
of it is process-wide: whoever needs a worker makes one and closes it.

* Each process of the local pool makes one when it starts (:mod:`referee.executors.local`):
  its bots then stay up between its matches, within the rules of the pool (never two
  rotations of one deal on a process, a fault ends the process), and stop when it exits.
  A task that names the match likely to come next (``MatchTask.next_up``) has the bots that
  match would have to start started while it plays (``SessionPool.warm``), so a container's
  start is hidden behind a match instead of delaying the next one.
* :func:`play_task` plays one task with a short-lived worker of its own (a task played in
  the coordinator): its bots start and stop with the match.

:meth:`Worker.play` never raises for a match that went wrong: the blame decides the outcome
(a bot fault is a result; our own ``InfrastructureError`` is retried by the executor; a
``UsageError`` stops the run; an unexpected exception is a bug, recorded with its
traceback). The bots are seated the one way (:func:`~referee.protocol.seats.seated`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from referee import interrupts
from referee.errors import InfrastructureError, UsageError
from referee.eventloop import new_event_loop
from referee.executors.base import MatchTask, TaskOutcome
from referee.match.runner import play_match
from referee.protocol.seats import SessionPool, seated
from referee.results import MatchResult
from referee.rules.engine import EngineMemo
from referee.sandbox import Limits, Sandbox, get_sandbox
from referee.specs import TimeControl
from referee.stderrlog import stderr_path

__all__ = ["PARTIAL_SUFFIX", "SandboxFactory", "Worker", "play_task"]

PARTIAL_SUFFIX = ".part"
"""A match log being written; renamed to its final name only when the match is complete."""

SandboxFactory = Callable[[str, tuple[str, ...]], Sandbox]
"""Makes the backend a task names: ``(sandbox name, allowed images) -> Sandbox``."""

_PoolKey = tuple[str, tuple[str, ...], TimeControl, Limits]


def _named_sandbox(name: str, images: tuple[str, ...]) -> Sandbox:
    return get_sandbox(name, images=images)


class Worker:
    """Plays match tasks one after the other; owns its loop, sandboxes and bot pools.

    ``reuse`` keeps bots running between the tasks (a worker process of a pool), at most
    ``idle_cap`` idle bot processes in all (the memory budget decides it:
    :func:`referee.sandbox.budget.plan_workers`; ``None`` keeps a table's worth).
    ``sandboxes`` makes the backend a task names (default: :func:`referee.sandbox.get_sandbox`;
    tests hand in their fake). A context manager: :meth:`close` at the end.
    """

    def __init__(
        self,
        *,
        reuse: bool = False,
        idle_cap: int | None = None,
        sandboxes: SandboxFactory | None = None,
    ) -> None:
        self.reuse = reuse
        self.idle_cap = idle_cap
        self._make_sandbox = sandboxes or _named_sandbox
        self._runner: asyncio.Runner | None = None
        self._sandboxes: dict[tuple[str, tuple[str, ...]], Sandbox] = {}
        self._pools: dict[_PoolKey, SessionPool] = {}
        self.memo = EngineMemo()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what it keeps ---------------------------------------------------------------------

    def sandbox(self, name: str, images: tuple[str, ...] = ()) -> Sandbox:
        """The worker's backend ``name`` allowing ``images``, made on first use."""
        if (name, images) not in self._sandboxes:
            self._sandboxes[name, images] = self._make_sandbox(name, images)
        return self._sandboxes[name, images]

    def prepare(self, name: str, images: tuple[str, ...] = ()) -> None:
        """Make backend ``name`` now and have it probe what it probes at its first start
        (:meth:`Sandbox.prepare`), before any task: a worker does it while the coordinator
        stages and schedules. A failure is left for the first task to meet and report."""
        with contextlib.suppress(UsageError, InfrastructureError, OSError):
            self._loop().run(self.sandbox(name, images).prepare())

    def pool(self, task: MatchTask) -> SessionPool:
        """The pool of bots kept for tasks with this task's sandbox, time control and limits."""
        key = (task.sandbox, task.images, task.time_control, task.limits)
        if key not in self._pools:
            self._pools[key] = SessionPool(
                self.sandbox(task.sandbox, task.images),
                task.limits,
                task.time_control,
                max_idle_total=self.idle_cap,
            )
        return self._pools[key]

    def _loop(self) -> asyncio.Runner:
        if self._runner is None:
            self._runner = asyncio.Runner(loop_factory=new_event_loop)
        return self._runner

    # -- a task ----------------------------------------------------------------------------

    def play(
        self,
        task: MatchTask,
        *,
        on_start: Callable[[asyncio.Task[Any]], None] | None = None,
        before_deal: Callable[[], Awaitable[None]] | None = None,
    ) -> TaskOutcome:
        """Play one match on this worker's loop; never raises for a match that went wrong.

        The log (and the bots' stderr beside it, :mod:`referee.stderrlog`) is written to a
        private ``.part`` file and renamed to ``task.log_path`` only when the match is
        complete, so an attempt that dies (or a worker that outlives a killed coordinator)
        never mixes its lines into another attempt's log. SIGTERM (or
        :func:`referee.interrupts.cancel_main_task`) cancels the match; its seating stops
        its bots; so does cancelling the task that ``on_start`` is handed when the match
        starts (from another thread: through its loop's ``call_soon_threadsafe``).
        ``before_deal`` is awaited once the bots are seated, before any card is dealt: an
        ``InfrastructureError`` from it ends the attempt there (a cluster's claim).
        """
        final = Path(task.log_path)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(
            prefix=final.stem + ".", suffix=PARTIAL_SUFFIX, dir=final.parent
        )
        os.close(fd)
        partial = Path(name)
        try:
            result = interrupts.run(self._match(task, partial, on_start, before_deal), self._loop())
            os.replace(stderr_path(partial), stderr_path(final))
            os.replace(partial, final)
        except InfrastructureError as exc:
            return TaskOutcome("infrastructure", error=str(exc))
        except UsageError as exc:
            return TaskOutcome("usage", error=str(exc))
        except Exception:  # a bug of ours: recorded with its traceback, the run goes on
            return TaskOutcome("bug", error=traceback.format_exc())
        finally:
            partial.unlink(missing_ok=True)
            stderr_path(partial).unlink(missing_ok=True)
        return TaskOutcome(
            "done", result=result.model_copy(update={"log": str(final)}).model_dump(mode="json")
        )

    async def _match(
        self,
        task: MatchTask,
        log_path: Path,
        on_start: Callable[[asyncio.Task[Any]], None] | None = None,
        before_deal: Callable[[], Awaitable[None]] | None = None,
    ) -> MatchResult:
        if on_start is not None:
            current = asyncio.current_task()
            assert current is not None
            on_start(current)
        pool = self.pool(task) if self.reuse else None
        if pool is not None:
            seating = seated(task.bots, pool=pool, deal_key=task.spec.deal_id)
        else:
            seating = seated(
                task.bots,
                sandbox=self.sandbox(task.sandbox, task.images),
                time_control=task.time_control,
                limits=task.limits,
            )
        async with seating as table:
            if before_deal is not None:
                await before_deal()  # may refuse the match: no card is dealt yet
            if pool is not None and task.next_up is not None:
                # Started while this match plays: the next match finds them greeted.
                pool.warm(task.next_up.bots, task.next_up.deal_id)
            return await play_match(
                table,
                task.rules,
                task.spec.match_seed,
                match_id=task.spec.key,
                log_path=log_path,
                memo=self.memo,
            )

    # -- the end ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every pooled bot, then anything the backends still run; close the loop.

        Called when the worker is done (a pool's process at exit, or after its SIGTERM);
        closing again does nothing. Not while a task plays (it runs on the same loop).
        """
        runner, self._runner = self._runner, None
        pools = list(self._pools.values())
        sandboxes = list(self._sandboxes.values())
        self._pools.clear()
        self._sandboxes.clear()
        if runner is None:
            return
        for pool in pools:
            with contextlib.suppress(Exception):
                runner.run(pool.aclose())
        for sandbox in sandboxes:
            with contextlib.suppress(Exception):
                runner.run(sandbox.aclose())
        runner.close()


def play_task(task: MatchTask) -> TaskOutcome:
    """Play one task on a worker of its own (its bots start and stop with the match)."""
    with Worker() as worker:
        return worker.play(task)
