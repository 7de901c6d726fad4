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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

from referee.errors import UsageError
from referee.results import MatchResult
from referee.rules import ResolvedRules
from referee.sandbox import BotSpec, Limits, get_sandbox
from referee.specs import MatchSpec, TimeControl
from referee.tournament.deals import redeal_seed

if TYPE_CHECKING:
    from referee.tournament.file import Tournament

__all__ = [
    "DEFAULT_ATTEMPTS",
    "AttemptEvent",
    "Attempts",
    "Executor",
    "MatchFailed",
    "MatchFinished",
    "MatchStarted",
    "MatchTask",
    "RunsHere",
    "SandboxPlan",
    "TaskOutcome",
    "Upcoming",
]


DEFAULT_ATTEMPTS = 3
"""Attempts of a match before it is recorded as failed on our side (each on fresh cards)."""


@dataclass(frozen=True)
class Upcoming:
    """The match a worker will likely play after the one it is given: its bots (staged, in
    seat order) and its deal, so that the worker can start, while it plays, the bots that
    match would otherwise start (:meth:`referee.protocol.seats.SessionPool.warm`). Only a
    guess: a worker that gets another match has started some bots for nothing."""

    bots: tuple[BotSpec, ...]
    deal_id: str


@dataclass(frozen=True)
class MatchTask:
    """One match, ready for any worker: bots are staged copies, in seat order.

    An attempt that does not finish was seen by its bots, so a retry never deals the same
    cards again: ``spec.match_seed`` deals the first attempt of this run and ``reseeds``
    the later ones (:meth:`attempt`), and ``first_attempt`` is the deal attempt the first
    one is (more than 0 when an earlier run started the match already). The exception is
    ``same_cards``: every attempt plays the scheduled deal (``referee compare``, whose
    trusted bots see every deal several times anyway, and whose pairs need both halves on
    the same cards).
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
    next_up: Upcoming | None = None
    """The match its worker will likely play next (see :class:`Upcoming`)."""
    same_cards: bool = False

    @classmethod
    def dealt(
        cls,
        tournament: Tournament,
        spec: MatchSpec,
        bots: Sequence[BotSpec],
        *,
        key: bytes,
        started: int,
        max_attempts: int,
        sandbox: str,
        log_path: Path,
        images: tuple[str, ...],
    ) -> MatchTask:
        """The task of ``tournament``'s match ``spec`` (``bots`` staged, in seat order),
        started ``started`` times before: each attempt from then on is dealt fresh cards
        from the dealing ``key`` (its bots may have seen the cards of the earlier ones)."""
        seed = tournament.file.seed
        if started:
            spec = spec.model_copy(update={"match_seed": redeal_seed(key, seed, spec.key, started)})
        return cls(
            spec=spec,
            bots=tuple(bots),
            rules=tournament.rules,
            time_control=tournament.time_control,
            limits=tournament.limits,
            sandbox=sandbox,
            log_path=str(log_path),
            images=images,
            reseeds=tuple(
                redeal_seed(key, seed, spec.key, started + n) for n in range(1, max_attempts)
            ),
            first_attempt=started,
        )

    def attempt(self, number: int) -> MatchTask:
        """The task for this run's attempt ``number`` (1, 2, ...): fresh cards after the first
        (the same cards every time with ``same_cards``)."""
        if number == 1 or self.same_cards:
            return self
        if not 2 <= number <= len(self.reseeds) + 1:
            raise ValueError(f"match {self.spec.key}: no fresh deal for attempt {number}")
        seed = self.reseeds[number - 2]
        spec = self.spec.model_copy(update={"match_seed": seed})
        return dataclasses.replace(self, spec=spec)

    def followed_by(self, task: MatchTask | None) -> MatchTask:
        """This task, telling its worker that ``task`` is likely to come next."""
        upcoming = None if task is None else Upcoming(task.bots, task.spec.deal_id)
        return dataclasses.replace(self, next_up=upcoming)

    def deal_attempt(self, number: int) -> int:
        """The deal attempt (0: the scheduled deal) this run's attempt ``number`` plays."""
        if self.same_cards:
            return 0
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


@dataclass(frozen=True)
class SandboxPlan:
    """The sandbox backend the bots of a run will get: its ``name`` (``process`` or
    ``docker``, never ``auto``) and a line saying what it confines (printed at the start)."""

    name: str
    description: str
    notes: tuple[str, ...] = ()
    """What the run should say first (a worker that cannot run the backend, say)."""


class Executor(Protocol):
    """Runs tasks somewhere and reports every attempt to ``on_event`` in the caller's thread.

    :meth:`prepare` says which backend the tournament's ``sandbox`` setting resolves to
    where the bots will run (and refuses at once when it cannot run there); ``run``
    returns when every task has finished or failed for good, after at most
    ``max_attempts`` attempts of each (attempt ``n`` plays ``task.attempt(n)``).

    The lifecycle is part of the interface, with defaults that do nothing (as httpx's
    transports have), so a caller never asks what an executor can do: ``with executor:``
    keeps its workers from one ``run`` to the next until the block ends, and
    :meth:`release_prepared` stops what :meth:`prepare` started for a run that will not
    come. An executor subclasses this protocol to inherit the defaults.
    """

    max_attempts: int

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan: ...

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def release_prepared(self) -> None:
        """Stop what :meth:`prepare` started ahead of a run that will not come (it was
        refused while preparing); nothing, for an executor that starts nothing there."""
        return None


class RunsHere:
    """For executors whose workers run on this machine: the backend is the one found here."""

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        sandbox = get_sandbox(backend, images=images)
        return SandboxPlan(sandbox.name, sandbox.describe())


class Attempts:
    """Counts the attempts of each task of a run and turns their outcomes into events.

    An executor asks :meth:`next` for the number of a task's next attempt, reports it with
    :meth:`started` once the attempt is on its way, and hands each outcome to
    :meth:`settle`, which reports it to ``on_event`` and says whether to play the task again
    (a failure on our side with attempts left). Every executor shares these rules: a bot
    fault is a result, ``usage`` stops the run, a bug fails its match at once.
    """

    def __init__(self, max_attempts: int, on_event: Callable[[AttemptEvent], None]) -> None:
        self.max_attempts = max_attempts
        self.on_event = on_event
        self.counts: dict[str, int] = {}

    def next(self, task: MatchTask) -> int:
        return self.counts.get(task.spec.key, 0) + 1

    def started(self, task: MatchTask, number: int) -> None:
        self.counts[task.spec.key] = number
        self.on_event(MatchStarted(task.spec.key, number))

    def settle(self, task: MatchTask, outcome: TaskOutcome) -> bool:
        """Report ``outcome`` of the task's latest attempt; True when it is to run again."""
        key = task.spec.key
        number = self.counts[key]
        if outcome.status == "done":
            assert outcome.result is not None
            self.on_event(MatchFinished(key, MatchResult.model_validate(outcome.result), number))
            return False
        if outcome.status == "usage":
            raise UsageError(outcome.error or "the match could not start")
        final = outcome.status == "bug" or number >= self.max_attempts
        self.on_event(MatchFailed(key, outcome.error or outcome.status, number, final))
        return not final
