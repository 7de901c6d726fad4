"""Where matches run: the executor interface, the worker's side, and the local pool.

* :mod:`.base`: :class:`MatchTask`, the attempt events and the :class:`Executor` protocol;
* :mod:`.worker`: :class:`Worker`, what a worker does with a task (and :func:`play_task`,
  one task on a worker of its own);
* :mod:`.local`: :class:`~referee.executors.local.LocalExecutor`, worker processes here.

The coordinator that schedules, stores and rates is :mod:`referee.coordinator`.
"""

from referee.executors.base import (
    AttemptEvent,
    Executor,
    MatchFailed,
    MatchFinished,
    MatchStarted,
    MatchTask,
    TaskOutcome,
)
from referee.executors.worker import PARTIAL_SUFFIX, Worker, play_task

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
