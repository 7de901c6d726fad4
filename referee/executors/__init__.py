"""Where matches run, and the coordinator that feeds them and stores what comes back.

An executor takes :class:`MatchTask` values (a match spec plus staged bots, rules, time
control, limits and the sandbox backend's name: everything a worker needs, picklable) and
reports :data:`Event` values to one callback, in the coordinator's own thread. The
coordinator, :func:`run_tournament`, is the only writer of the results store: it stages
every bot once per run, checks the store, skips finished matches, and commits each result
as it arrives.

With ``playoff`` in the tournament file, the coordinator goes on, once every scheduled match
is done, with play-off rounds planned from the stored results (:mod:`referee.playoff`), each
stored before it is played, until the order at the top is sure or the budget is spent.

Blame decides what happens to a match: a bot fault is a normal result; an
``InfrastructureError`` or a dead worker is retried a bounded number of times and then
recorded as ``failed``; a ``UsageError`` (the configuration cannot work at all) stops the
run; an unexpected exception (a bug of ours) fails that match at once with its traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from referee import interrupts
from referee.errors import InfrastructureError, UsageError
from referee.match import play_match
from referee.playoff import PlayoffSettings, PlayoffState, plan_round
from referee.results import MatchResult
from referee.rules import ResolvedRules
from referee.sandbox import (
    BotSpec,
    Limits,
    Sandbox,
    get_sandbox,
    make_staging_root,
    remove_staging_root,
    stage_bot,
)
from referee.scheduler import MatchSpec, deal_key, playoff_round, schedule
from referee.session import SessionPool
from referee.specs import TimeControl
from referee.store import DealSecret, EntrantRecord, RunLock, Store, wipe
from referee.tournament import Tournament

__all__ = [
    "Event",
    "Executor",
    "MatchFailed",
    "MatchFinished",
    "MatchStarted",
    "MatchTask",
    "PlayoffRound",
    "PlayoffsOver",
    "RunStarted",
    "RunSummary",
    "TaskOutcome",
    "play_task",
    "run_tournament",
]

PARTIAL_SUFFIX = ".part"


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
class RunStarted:
    total: int
    done: int
    to_play: int
    sandbox: str
    commitment: str
    """SHA-256 of the deal secret that deals this run's new matches (published now)."""


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


@dataclass(frozen=True)
class PlayoffRound:
    """A play-off round is about to be played (``to_play`` of its ``matches`` are left).

    ``uncertain`` holds ``(upper, lower, confidence, shared deals)`` for each adjacent pair
    of the top that the round is for (empty for a round resumed from the store).
    """

    round: int
    matches: int
    to_play: int
    uncertain: tuple[tuple[str, str, float, int], ...]
    spent: int
    budget: int


@dataclass(frozen=True)
class PlayoffsOver:
    """No play-off round is due: ``settled`` (the top is ordered) or ``budget`` (spent)."""

    state: PlayoffState
    rounds: int
    matches: int
    uncertain: tuple[tuple[str, str, float, int], ...]


Event = RunStarted | MatchStarted | MatchFinished | MatchFailed | PlayoffRound | PlayoffsOver


class Executor(Protocol):
    """Runs tasks somewhere and reports every attempt to ``on_event`` in the caller's thread."""

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[Event], None]) -> None: ...


@dataclass
class RunSummary:
    """How a run ended."""

    total: int
    done: int
    failed: int
    played: int
    faults: int
    results_dir: Path


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
    runner: asyncio.Runner | None = None
    pools: dict[tuple[str, tuple[str, ...], TimeControl, Limits], SessionPool] = {}

    @classmethod
    def pool(cls, task: MatchTask) -> SessionPool:
        key = (task.sandbox, task.images, task.time_control, task.limits)
        if key not in cls.pools:
            sandbox = _sandbox(task.sandbox, task.images)
            cls.pools[key] = SessionPool(sandbox, task.limits, task.time_control)
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


def enable_reuse() -> None:
    """Keep bots running between the matches this process plays (worker processes only)."""
    _Reuse.enabled = True


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
            deal_key=deal_key(task.spec.key),
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


def run_tournament(
    tournament: Tournament,
    executor: Executor,
    *,
    restart: bool = False,
    results_dir: Path | None = None,
    on_event: Callable[[Event], None] | None = None,
    deal_secret: bytes | None = None,
) -> RunSummary:
    """Play every match of ``tournament`` not yet in its store; resume where a run stopped.

    ``restart`` wipes the stored results first. New matches are dealt with the store's
    unrevealed deal secret (a fresh one when there is none, or ``deal_secret`` to reproduce
    a tournament); when every scheduled match is done, and the play-offs are over, the
    secret is revealed. Raises
    ``UsageError`` when stored results were played by other bot files or other settings
    (unless ``restart``), or when another run holds the tournament's lock.
    """
    folder = results_dir or tournament.results_dir
    notify = on_event or (lambda event: None)
    with RunLock(folder):
        if restart:
            wipe(folder)
        with Store(folder) as store:
            _remove_partial_logs(store)
            images = tuple(sorted(tournament.images))
            sandbox = get_sandbox(tournament.file.sandbox.backend, images=images)
            staging = make_staging_root()
            try:
                staged = {b.name: stage_bot(b, staging) for b in tournament.bots}
                records = [_record(tournament, staged[name]) for name in tournament.entrants]
                store.check_entrants(records)
                store.check_settings(tournament.settings())
                store.save_entrants(records)
                secret = store.deal_secret(deal_secret)
                scheduled = schedule(tournament, secret.secret)
                store.add_matches(scheduled, secret)
                # Stored specs: a match keeps the deal of the secret it was scheduled with.
                stored = store.specs()
                specs = [stored[spec.key] for spec in scheduled]
                finished = store.done_keys()

                def task(spec: MatchSpec) -> MatchTask:
                    return MatchTask(
                        spec=spec,
                        bots=tuple(staged[name] for name in spec.table),
                        rules=tournament.rules,
                        time_control=tournament.time_control,
                        limits=tournament.limits,
                        sandbox=sandbox.name,
                        log_path=str(store.log_path(spec.key)),
                        images=images,
                    )

                tasks = [task(spec) for spec in specs if spec.key not in finished]
                # Rotation-major order: a worker's consecutive matches are different deals,
                # so it can keep its bot processes (never across rotations of one deal).
                tasks.sort(key=lambda task: (task.spec.rotation, task.spec.key))
                summary = RunSummary(
                    total=len(specs),
                    done=len(specs) - len(tasks),
                    failed=0,
                    played=0,
                    faults=0,
                    results_dir=folder,
                )
                notify(
                    RunStarted(
                        len(specs), summary.done, len(tasks), sandbox.describe(), secret.commitment
                    )
                )
                tables = {task.spec.key: task.spec.table for task in tasks}

                def record(event: Event) -> None:
                    if isinstance(event, MatchStarted):
                        store.mark_running(event.key)
                    elif isinstance(event, MatchFinished):
                        store.record_result(event.key, event.result, tables[event.key])
                        summary.done += 1
                        summary.played += 1
                        summary.faults += sum(st.fault is not None for st in event.result.standings)
                    elif isinstance(event, MatchFailed):
                        store.record_failure(event.key, event.error, final=event.final)
                        summary.failed += event.final
                    notify(event)

                def play(round_specs: Sequence[MatchSpec]) -> None:
                    done = store.done_keys()
                    round_tasks = [task(spec) for spec in round_specs if spec.key not in done]
                    round_tasks.sort(key=lambda task: (task.spec.rotation, task.spec.key))
                    tables.update({spec.key: spec.table for spec in round_specs})
                    summary.total += len(round_specs)
                    summary.done += len(round_specs) - len(round_tasks)
                    if round_tasks:
                        executor.run(round_tasks, record)

                with contextlib.ExitStack() as keep:
                    if tournament.file.playoff is not None and isinstance(
                        executor, contextlib.AbstractContextManager
                    ):
                        keep.enter_context(executor)  # one pool for the rounds to come
                    executor.run(tasks, record)
                    complete = {spec.key for spec in specs} <= store.done_keys()
                    if complete and tournament.file.playoff is not None:
                        complete = _play_offs(
                            tournament, tournament.file.playoff, store, secret, play, notify
                        )
                if complete:
                    store.reveal_secrets()  # complete: publish the secret, never deal with it again
            finally:
                remove_staging_root(staging)
                _remove_partial_logs(store)
    return summary


def _play_offs(
    tournament: Tournament,
    settings: PlayoffSettings,
    store: Store,
    secret: DealSecret,
    play: Callable[[Sequence[MatchSpec]], None],
    notify: Callable[[Event], None],
) -> bool:
    """Play play-off rounds until none is due; ``False`` if a round could not be completed.

    A round already stored (planned by an earlier, interrupted run) is played as stored,
    never planned again; a new round is planned from the finished matches and stored
    before any of it is played.
    """
    f = tournament.file
    round_no = 0
    while True:
        stored = store.specs()
        in_round = sorted(
            (spec for spec in stored.values() if playoff_round(spec.key) == round_no),
            key=lambda spec: spec.key,
        )
        spent = sum(playoff_round(key) is not None for key in stored)
        uncertain: tuple[tuple[str, str, float, int], ...] = ()
        if not in_round:
            plan = plan_round(
                round_no,
                store.completed(),
                list(stored.values()),
                tournament.entrants,
                settings=settings,
                ratings=f.ratings,
                rules=tournament.rules,
                table_size=f.table_size,
                seed=f.seed,
                secret=secret.secret,
            )
            uncertain = tuple((p.upper, p.lower, p.confidence, p.deals) for p in plan.uncertain)
            if not plan.specs:
                notify(PlayoffsOver(plan.state, round_no, spent, uncertain))
                return True
            store.add_matches(plan.specs, secret)
            in_round = list(plan.specs)
            spent += len(in_round)
        done = store.done_keys()
        to_play = sum(spec.key not in done for spec in in_round)
        if to_play:
            notify(
                PlayoffRound(round_no, len(in_round), to_play, uncertain, spent, settings.budget)
            )
        play(in_round)
        if not {spec.key for spec in in_round} <= store.done_keys():
            return False  # a match failed on our side: the next run retries it, then goes on
        round_no += 1


def _remove_partial_logs(store: Store) -> None:
    """Logs of attempts that died with their worker (or with a killed coordinator)."""
    for partial in store.logs_dir.glob(f"*{PARTIAL_SUFFIX}"):
        partial.unlink(missing_ok=True)


def _record(tournament: Tournament, staged: BotSpec) -> EntrantRecord:
    original = tournament.bot(staged.name)
    path = original.folder / original.single_file if original.single_file else original.folder
    return EntrantRecord(staged.name, staged.version, staged.sha256, str(path))
