"""Where matches run: the executor interface, the worker's side, and the local pool.

* :mod:`.base`: :class:`MatchTask`, the attempt events and the :class:`Executor` protocol;
* :mod:`.worker`: :func:`play_task`, what a worker process does with a task;
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
from referee.executors.worker import PARTIAL_SUFFIX, close_reused, enable_reuse, play_task

__all__ = [
    "PARTIAL_SUFFIX",
    "AttemptEvent",
    "Executor",
    "MatchFailed",
    "MatchFinished",
    "MatchStarted",
    "MatchTask",
    "TaskOutcome",
    "close_reused",
    "enable_reuse",
    "play_task",
]
