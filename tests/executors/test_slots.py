"""Worker slots a server borrows from the league's local pool: counted across processes,
given back by a borrower that dies, and each one a match fewer at once."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from referee.executors import MatchFailed, MatchFinished, MatchStarted
from referee.executors.local import LocalExecutor
from referee.executors.slots import WorkerSlots
from referee.runs.tournament import run_tournament
from referee.tournament.file import load_tournament
from tests.tournament.conftest import write_tournament

HOLDER = """
import sys, time
from pathlib import Path
from referee.executors.slots import WorkerSlots
with WorkerSlots(Path(sys.argv[1])).borrow("check-0"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_slot_held_by_another_process_counts_until_it_dies(tmp_path: Path) -> None:
    slots = WorkerSlots(tmp_path / "slots")
    assert slots.borrowed() == 0  # no folder yet
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(slots.folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert slots.borrowed() == 1
        with slots.borrow("compare-0"):
            assert slots.borrowed() == 2
        assert slots.borrowed() == 1
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert slots.borrowed() == 0  # the lock died with its process: no stale count


@pytest.mark.parametrize("name", ["", "../x", "A", "x" * 65, "a/b", "a\0b"])
def test_a_slot_name_that_could_leave_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError), WorkerSlots(tmp_path).borrow(name):
        pass
    assert not list(tmp_path.iterdir())


def test_a_slot_file_replaced_by_a_symlink_is_not_followed(tmp_path: Path) -> None:
    slots = WorkerSlots(tmp_path / "slots")
    slots.folder.mkdir()
    (slots.folder / "slot-x").symlink_to("/etc/passwd")
    assert slots.borrowed() == 0


def test_the_room_of_a_pool_is_a_match_fewer_for_each_slot_lent(tmp_path: Path) -> None:
    executor = LocalExecutor(3)
    assert executor._room() == 4  # no lender: every worker and the next task
    executor.lender = WorkerSlots(tmp_path / "slots")
    assert executor._room() == 4
    with executor.lender.borrow("check-0"):
        assert executor._room() == 2
        with executor.lender.borrow("check-1"), executor.lender.borrow("compare-0"):
            assert executor._room() == 1  # never fewer than one: the league goes on


def _most_at_once(tmp_path: Path, lent: int) -> tuple[int, int]:
    """The most matches handed out at once in a small tournament on 2 workers with
    ``lent`` slots held, and the matches played."""
    path = write_tournament(tmp_path, bots=4, table_size=3, deals=2)
    executor = LocalExecutor(2)
    executor.lender = WorkerSlots(tmp_path / "slots")
    out, most, played = 0, 0, 0

    def count(event: object) -> None:
        nonlocal out, most, played
        if isinstance(event, MatchStarted):
            out += 1
            most = max(most, out)
        elif isinstance(event, (MatchFinished, MatchFailed)):
            out -= 1
            played += isinstance(event, MatchFinished)

    names = [f"check-{n}" for n in range(lent)]
    with contextlib.ExitStack() as held:
        for name in names:
            held.enter_context(executor.lender.borrow(name))
        run_tournament(load_tournament(path), executor, on_event=count)
    return most, played


def test_a_lent_slot_is_a_match_fewer_in_a_real_run(tmp_path: Path) -> None:
    free, played = _most_at_once(tmp_path / "free", 0)
    assert free == 3 and played > 6
    lent, played_lent = _most_at_once(tmp_path / "lent", 1)
    assert lent == 1 and played_lent == played
