"""What runs in a worker process: one task played, and bots kept between its tasks.

:func:`play_task` plays a :class:`~referee.executors.base.MatchTask` and never raises for a
match that went wrong: the blame decides the outcome (a bot fault is a result; our own
``InfrastructureError`` is retried by the executor; a ``UsageError`` stops the run; an
unexpected exception is a bug, recorded with its traceback). A worker process turns on bot
reuse (:func:`enable_reuse`): its bots then stay up between its matches, within the rules of
:class:`~referee.protocol.session.SessionPool`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import traceback
from pathlib import Path

from referee import interrupts
from referee.errors import InfrastructureError, UsageError
from referee.executors.base import MatchTask, TaskOutcome
from referee.match.runner import play_match
from referee.protocol.session import SessionPool
from referee.sandbox import Limits, Sandbox, get_sandbox
from referee.specs import TimeControl

__all__ = ["PARTIAL_SUFFIX", "close_reused", "enable_reuse", "play_task"]

PARTIAL_SUFFIX = ".part"
"""A match log being written; renamed to its final name only when the match is complete."""

_sandboxes: dict[tuple[str, tuple[str, ...]], Sandbox] = {}


def _sandbox(name: str, images: tuple[str, ...] = ()) -> Sandbox:
    """One sandbox backend per worker process (bubblewrap is probed once)."""
    if (name, images) not in _sandboxes:
        _sandboxes[name, images] = get_sandbox(name, images=images)
    return _sandboxes[name, images]


class _Reuse:
    """Bot process reuse inside one worker process: an event loop and pools that outlive a task.

    Off by default (a task played in the coordinator starts and stops its own bots); a
    worker turns it on with :func:`enable_reuse`. The pools follow :class:`SessionPool`'s
    rules: never two rotations of one deal in the same process, a fault ends the process.
    """

    enabled = False
    idle_cap: int | None = None
    """Idle bot processes kept in all (``None``: as many as a table has seats)."""
    runner: asyncio.Runner | None = None
    pools: dict[tuple[str, tuple[str, ...], TimeControl, Limits], SessionPool] = {}

    @classmethod
    def pool(cls, task: MatchTask) -> SessionPool:
        key = (task.sandbox, task.images, task.time_control, task.limits)
        if key not in cls.pools:
            sandbox = _sandbox(task.sandbox, task.images)
            cls.pools[key] = SessionPool(
                sandbox, task.limits, task.time_control, max_idle_total=cls.idle_cap
            )
        return cls.pools[key]

    @classmethod
    def loop_runner(cls) -> asyncio.Runner:
        if cls.runner is None:
            cls.runner = asyncio.Runner()
        return cls.runner

    @classmethod
    def close(cls) -> None:
        """Stop every pooled bot, then anything the backends still run (at worker exit)."""
        if cls.runner is None:
            return
        pools = list(cls.pools.values())
        cls.pools.clear()
        for pool in pools:
            with contextlib.suppress(Exception):
                cls.runner.run(pool.aclose())
        for sandbox in list(_sandboxes.values()):
            with contextlib.suppress(Exception):
                cls.runner.run(sandbox.aclose())
        cls.runner.close()
        cls.runner = None


def enable_reuse(idle_cap: int | None = None) -> None:
    """Keep bots running between the matches this process plays (worker processes only).

    ``idle_cap`` bounds the idle bot processes kept (the memory budget decides it:
    :func:`referee.sandbox.budget.plan_workers`); ``None`` keeps a table's worth.
    """
    _Reuse.enabled = True
    _Reuse.idle_cap = idle_cap


def close_reused() -> None:
    """Stop the bots kept for reuse in this process."""
    _Reuse.close()


def play_task(task: MatchTask) -> TaskOutcome:
    """Play one match in this process; never raises for a match that went wrong.

    The log is written to a private ``.part`` file and renamed to ``task.log_path`` only
    when the match is complete, so an attempt that dies (or a worker that outlives a killed
    coordinator) never mixes its lines into another attempt's log.
    """
    final = Path(task.log_path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=final.stem + ".", suffix=PARTIAL_SUFFIX, dir=final.parent)
    os.close(fd)
    partial = Path(name)
    try:
        sandbox = _sandbox(task.sandbox, task.images)
        match = play_match(
            sandbox,
            task.bots,
            task.rules,
            task.spec.match_seed,
            match_id=task.spec.key,
            time_control=task.time_control,
            limits=task.limits,
            log_path=partial,
            pool=_Reuse.pool(task) if _Reuse.enabled else None,
            deal_key=task.spec.deal_id,
        )
        result = interrupts.run(match, _Reuse.loop_runner() if _Reuse.enabled else None)
        os.replace(partial, final)
    except InfrastructureError as exc:
        return TaskOutcome("infrastructure", error=str(exc))
    except UsageError as exc:
        return TaskOutcome("usage", error=str(exc))
    except Exception:  # a bug of ours: recorded with its traceback, the run goes on
        return TaskOutcome("bug", error=traceback.format_exc())
    finally:
        partial.unlink(missing_ok=True)
    return TaskOutcome(
        "done", result=result.model_copy(update={"log": str(final)}).model_dump(mode="json")
    )


