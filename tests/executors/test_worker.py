"""The worker object (referee.executors.worker.Worker) with in-memory bots: what it keeps
between tasks, what it gives back, and what it stops when it closes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from referee.errors import UsageError
from referee.executors.base import MatchTask
from referee.executors.local import _WorkerSlot
from referee.executors.worker import PARTIAL_SUFFIX, Worker
from referee.rules import RuleSet
from referee.sandbox import Limits
from referee.specs import MatchSpec, TimeControl
from referee.testing import FakeSandbox, polite_bot, spec

RULES3 = RuleSet.preset("arschloch", target=3).resolve(3)
NAMES = ("a", "b", "c")


def _task(tmp_path: Path, deal: int, rotation: int = 0) -> MatchTask:
    key = f"t/rr/{deal}/r{rotation}"
    table = NAMES[rotation:] + NAMES[:rotation]
    match = MatchSpec(
        key=key, table=table, deal=deal, rotation=rotation, deal_seed=deal, match_seed=deal
    )
    return MatchTask(
        spec=match,
        bots=tuple(spec(name) for name in table),
        rules=RULES3,
        time_control=TimeControl(move_ms=200, bank_ms=200, hello_ms=1000),
        limits=Limits(),
        sandbox="fake",
        log_path=str(tmp_path / f"{deal}-{rotation}.jsonl"),
    )


def _running(sandbox: FakeSandbox) -> int:
    return sum(proc.ended is None for proc in sandbox.started)


@pytest.mark.parametrize("reuse", [True, False])
def test_a_worker_keeps_its_bots_between_tasks_only_when_it_reuses(
    reuse: bool, tmp_path: Path
) -> None:
    sandbox = FakeSandbox({name: polite_bot for name in NAMES})
    made: list[tuple[str, tuple[str, ...]]] = []

    def sandboxes(name: str, images: tuple[str, ...]) -> FakeSandbox:
        made.append((name, images))
        return sandbox

    tasks = [_task(tmp_path, 1), _task(tmp_path, 2), _task(tmp_path, 1, rotation=1)]
    with Worker(reuse=reuse, sandboxes=sandboxes) as worker:
        outcomes = [worker.play(task) for task in tasks]
        started_before_close = len(sandbox.started)
        kept = _running(sandbox)
    assert [o.status for o in outcomes] == ["done"] * 3, [o.error for o in outcomes]
    for task, outcome in zip(tasks, outcomes, strict=True):
        assert outcome.result is not None and outcome.result["log"] == task.log_path
        assert Path(task.log_path).is_file()
    assert not list(tmp_path.glob(f"*{PARTIAL_SUFFIX}")), "no partial log is left"
    assert made == [("fake", ())], "one backend per worker, made once"
    if reuse:
        # The second deal reuses the first one's processes; the other rotation of deal 1
        # needs fresh ones; the pool keeps a table's worth idle between tasks.
        assert started_before_close == 6 and kept == 3
    else:
        assert started_before_close == 9 and kept == 0
    assert _running(sandbox) == 0, "closing the worker stopped every bot it kept"


def test_a_worker_told_the_next_match_starts_its_bots_while_it_plays(tmp_path: Path) -> None:
    """A task naming the next one (another rotation of its deal, which none of its
    processes may play): the fresh processes are started during the first match, and the
    second match starts none of its own."""
    sandbox = FakeSandbox({name: polite_bot for name in NAMES})
    second = _task(tmp_path, 1, rotation=1)
    first = _task(tmp_path, 1).followed_by(second)
    assert first.next_up is not None and first.next_up.deal_id == second.spec.deal_id
    with Worker(reuse=True, sandboxes=lambda name, images: sandbox) as worker:
        assert worker.play(first).status == "done"
        started_after_first = len(sandbox.started)
        assert worker.play(second).status == "done"
        started_after_second = len(sandbox.started)
    assert started_after_first == 6 and started_after_second == 6
    assert _running(sandbox) == 0


def test_a_worker_prepares_its_sandbox_before_any_task_and_leaves_a_failure_to_it(
    tmp_path: Path,
) -> None:
    """Worker.prepare makes the backend and runs its probe at once; a backend that cannot
    work is not an error then, but the first task's (a usage error, as without it)."""

    class Probed(FakeSandbox):
        probes = 0

        async def prepare(self) -> None:
            Probed.probes += 1

    class Broken(FakeSandbox):
        async def prepare(self) -> None:
            raise UsageError("no such backend here")

        async def start(self, bot: Any, limits: Limits) -> Any:
            raise UsageError("no such backend here")

    probed = Probed({name: polite_bot for name in NAMES})
    with Worker(reuse=True, sandboxes=lambda name, images: probed) as worker:
        worker.prepare("fake")
        assert Probed.probes == 1 and probed.started == []
        assert worker.play(_task(tmp_path, 1)).status == "done"
    broken = Broken({})
    with Worker(reuse=True, sandboxes=lambda name, images: broken) as worker:
        worker.prepare("fake")
        outcome = worker.play(_task(tmp_path, 2))
    assert outcome.status == "usage" and outcome.error == "no such backend here"


def test_closing_a_worker_twice_or_unused_does_nothing(tmp_path: Path) -> None:
    worker = Worker(reuse=True, sandboxes=lambda name, images: FakeSandbox({}))
    worker.close()
    worker.close()


def test_a_pool_process_has_exactly_one_worker() -> None:
    slot = _WorkerSlot()
    with pytest.raises(RuntimeError, match="not a process of the local pool"):
        slot.get()
    first = object.__new__(_PoolProcessStub)
    slot.fill(first)  # type: ignore[arg-type]
    assert slot.get() is cast(object, first)
    with pytest.raises(RuntimeError, match="a process has exactly one"):
        slot.fill(first)  # type: ignore[arg-type]


class _PoolProcessStub:
    """Stands in for a pool process: the slot only holds it."""
