"""Where matches run: the executor interface, the worker's side, and the local pool.

* :mod:`.base`: :class:`MatchTask`, the attempt events and the :class:`Executor` protocol;
* :mod:`.worker`: :class:`Worker`, what a worker does with a task (and :func:`play_task`,
  one task on a worker of its own);
* :mod:`.local`: :class:`~referee.executors.local.LocalExecutor`, worker processes here.

The run core that schedules and stores is :mod:`referee.runs`. The package
imports only :mod:`.base`; the worker's names load on first use.
"""

from typing import TYPE_CHECKING, Any

from referee.executors.base import (
    AttemptEvent,
    Executor,
    MatchFailed,
    MatchFinished,
    MatchStarted,
    MatchTask,
    TaskOutcome,
)

if TYPE_CHECKING:
    from referee.executors.worker import PARTIAL_SUFFIX, Worker, play_task


def __getattr__(name: str) -> Any:
    """The worker's names, imported when first asked for: :mod:`.worker` plays matches
    (the match runner, the protocol, the sandboxes), and whoever only reads the interface
    (the coordinator's events, the CLI's progress view) should not load all that."""
    if name in ("PARTIAL_SUFFIX", "Worker", "play_task"):
        from referee.executors import worker

        return getattr(worker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PARTIAL_SUFFIX",
    "AttemptEvent",
    "Executor",
    "MatchFailed",
    "MatchFinished",
    "MatchStarted",
    "MatchTask",
    "TaskOutcome",
    "Worker",
    "play_task",
]
