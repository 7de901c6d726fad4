"""Where a match runs: the small interface every executor implements.

An executor takes :class:`MatchTask` values (a match spec plus staged bots, rules, time
control, limits and the sandbox backend's name: everything a worker needs, picklable), plays
each in some worker (:func:`referee.executors.worker.play_task`), and reports every attempt
to one callback in the caller's thread: :class:`MatchStarted`, then :class:`MatchFinished`
or :class:`MatchFailed` (retried a bounded number of times when the failure is ours). The
local pool (:mod:`referee.executors.local`) is one executor; a cluster is another.
"""

from __future__ import annotations

import dataclasses
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
    """One match, ready for any worker: bots are staged copies, in seat order.

    An attempt that does not finish was seen by its bots, so a retry never deals the same
    cards again: ``spec.match_seed`` deals the first attempt of this run and ``reseeds``
    the later ones (:meth:`attempt`), and ``first_attempt`` is the deal attempt the first
    one is (more than 0 when an earlier run started the match already).
    """

    spec: MatchSpec
    bots: tuple[BotSpec, ...]
    rules: ResolvedRules
    time_control: TimeControl
    limits: Limits
    sandbox: str
    log_path: str
    images: tuple[str, ...] = ()
    """Docker images the bots may name besides the referee's bot image."""
    reseeds: tuple[int, ...] = ()
    first_attempt: int = 0

    def attempt(self, number: int) -> MatchTask:
        """The task for this run's attempt ``number`` (1, 2, ...): fresh cards after the first."""
        if number == 1:
            return self
        if not 2 <= number <= len(self.reseeds) + 1:
            raise ValueError(f"match {self.spec.key}: no fresh deal for attempt {number}")
        seed = self.reseeds[number - 2]
        spec = self.spec.model_copy(update={"match_seed": seed})
        return dataclasses.replace(self, spec=spec)

    def deal_attempt(self, number: int) -> int:
        """The deal attempt (0: the scheduled deal) this run's attempt ``number`` plays."""
        return self.first_attempt + number - 1


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
    attempt: int = 1
    """This run's attempt that finished (see :meth:`MatchTask.deal_attempt`)."""


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

    ``run`` returns when every task has finished or failed for good, after at most
    ``max_attempts`` attempts of each (attempt ``n`` plays ``task.attempt(n)``); an executor
    may also be a context manager that keeps its workers from one ``run`` to the next.
    """

    max_attempts: int

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None: ...
