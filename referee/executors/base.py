"""Where a match runs: the small interface every executor implements.

An executor takes :class:`MatchTask` values (a match spec plus staged bots, rules, time
control, limits and the sandbox backend's name: everything a worker needs, picklable), plays
each in some worker (:func:`referee.executors.worker.play_task`), and reports every attempt
to one callback in the caller's thread: :class:`MatchStarted`, then :class:`MatchFinished`
or :class:`MatchFailed` (retried a bounded number of times when the failure is ours). The
local pool (:mod:`referee.executors.local`) is one executor; a cluster is another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from referee.results import MatchResult
from referee.rules import ResolvedRules
from referee.sandbox import BotSpec, Limits
from referee.specs import MatchSpec, TimeControl

__all__ = [
    "AttemptEvent",
    "Executor",
    "MatchFailed",
    "MatchFinished",
    "MatchStarted",
    "MatchTask",
    "TaskOutcome",
]


@dataclass(frozen=True)
class MatchTask:
    """One match, ready for any worker: bots are staged copies, in seat order."""

    spec: MatchSpec
    bots: tuple[BotSpec, ...]
    rules: ResolvedRules
    time_control: TimeControl
    limits: Limits
    sandbox: str
    log_path: str
    images: tuple[str, ...] = ()
    """Docker images the bots may name besides the referee's bot image."""


@dataclass(frozen=True)
class TaskOutcome:
    """What a worker sends back: the result as a dict, or why there is none."""

    status: Literal["done", "infrastructure", "usage", "bug"]
    result: dict[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class MatchStarted:
    key: str
    attempt: int


@dataclass(frozen=True)
class MatchFinished:
    key: str
    result: MatchResult


@dataclass(frozen=True)
class MatchFailed:
    """An attempt failed on our side; ``final`` when no attempt is left."""

    key: str
    error: str
    attempt: int
    final: bool


AttemptEvent = MatchStarted | MatchFinished | MatchFailed


class Executor(Protocol):
    """Runs tasks somewhere and reports every attempt to ``on_event`` in the caller's thread.

    ``run`` returns when every task has finished or failed for good; an executor may also
    be a context manager that keeps its workers from one ``run`` to the next.
    """

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None: ...
