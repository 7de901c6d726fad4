"""The memory budget: the arithmetic (pure), reading it from /proc and cgroup files (fake
folders here; the real ones in tests/match/test_memory.py), and the referee's OOM score."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.executors.local import LocalExecutor
from referee.sandbox import Limits
from referee.sandbox.budget import (
    REFEREE_OOM_SCORE_ADJ,
    REFEREE_RESERVE_MIB,
    SAMPLE_BOT_MIB,
    WORKER_RESERVE_MIB,
    MemoryBudget,
    check_room,
    plan_workers,
    protect_referee,
    read_budget,
)

MIB = 1024 * 1024
GIB = 1024 * MIB


def budget(free: int, where: str = "MemAvailable") -> MemoryBudget:
    return MemoryBudget(free, where)


def reserve(workers: int) -> int:
    return (REFEREE_RESERVE_MIB + workers * WORKER_RESERVE_MIB) * MIB


# --------------------------------------------------------------------------- arithmetic


def test_what_fits_runs_as_asked_with_a_tables_worth_of_idle_bots() -> None:
    plan = plan_workers(4, seats=4, memory_mb=512, budget=budget(64 * GIB))
    assert (plan.workers, plan.idle, plan.notes) == (4, 4, ())


def test_workers_that_do_not_fit_are_fewer_and_it_is_said_in_one_line() -> None:
    plan = plan_workers(4, seats=4, memory_mb=512, budget=budget(int(3.1 * GIB)))
    assert plan.workers == 1
    assert plan.notes[0] == (
        "memory: 4 workers x 4 seats x 512 MiB do not fit in 3.1 GiB available "
        "(MemAvailable); running 1 worker"
    )


def test_idle_bots_get_what_the_tables_leave() -> None:
    """Two workers' tables fit exactly, with three more bots' worth: one idle bot each."""
    table = 3 * 256 * MIB
    plan = plan_workers(
        2, seats=3, memory_mb=256, budget=budget(reserve(2) + 2 * table + 3 * 256 * MIB)
    )
    assert (plan.workers, plan.idle) == (2, 1)
    assert plan.notes == (
        "memory: each worker keeps at most 1 idle bot process between matches (not 3), "
        f"to stay within {(reserve(2) + 2 * table + 3 * 256 * MIB) / GIB:.1f} GiB",
    )
    exact = plan_workers(2, seats=3, memory_mb=256, budget=budget(reserve(2) + 2 * table))
    assert (exact.workers, exact.idle) == (2, 0)


def test_every_limit_alive_at_once_fits_in_the_budget() -> None:
    """Whatever the numbers: tables and idle bots of every worker, plus the reserve."""
    for free_mib in (600, 1000, 2500, 3100, 7000, 20000):
        for workers in (1, 2, 4, 8):
            for seats in (3, 4, 6):
                for memory_mb in (64, 256, 512):
                    try:
                        plan = plan_workers(
                            workers, seats=seats, memory_mb=memory_mb, budget=budget(free_mib * MIB)
                        )
                    except UsageError:
                        assert free_mib * MIB - reserve(1) < seats * memory_mb * MIB
                        continue
                    alive = plan.workers * (seats + plan.idle) * memory_mb * MIB
                    assert alive + reserve(plan.workers) <= free_mib * MIB
                    assert 1 <= plan.workers <= workers and 0 <= plan.idle <= seats


def test_not_even_one_worker_is_refused_with_the_numbers_and_what_to_change() -> None:
    room = budget(1 * GIB, "cgroup /sys/fs/cgroup/memory/ci: limit 1.0 GiB, 0 MiB in use")
    with pytest.raises(UsageError) as refused:
        plan_workers(2, seats=4, memory_mb=512, budget=room)
    assert str(refused.value) == (
        "memory: one worker's table of 4 seats x 512 MiB (2.0 GiB) does not fit in 1.0 GiB "
        "available (cgroup /sys/fs/cgroup/memory/ci: limit 1.0 GiB, 0 MiB in use), less "
        f"{REFEREE_RESERVE_MIB + WORKER_RESERVE_MIB} MiB for the referee; lower [sandbox] "
        f"memory_mb (at most {(1024 - REFEREE_RESERVE_MIB - WORKER_RESERVE_MIB) // 4} MiB fits), "
        "free memory, or pass --overcommit-memory"
    )


def test_overcommit_runs_as_asked_and_says_so() -> None:
    plan = plan_workers(2, seats=4, memory_mb=512, budget=budget(GIB), overcommit=True)
    assert (plan.workers, plan.idle) == (2, 4)
    assert plan.notes[0].startswith("memory: overcommitted on purpose: 2 workers x 4 seats")
    assert "never the bot" in plan.notes[0]
    assert (
        plan_workers(2, seats=4, memory_mb=64, budget=budget(64 * GIB), overcommit=True).notes == ()
    )


def test_a_match_that_fits_passes_and_one_that_does_not_is_refused() -> None:
    check_room(3, memory_mb=512, budget=budget(2 * GIB), fix="lower --memory-mb")
    with pytest.raises(UsageError) as refused:
        check_room(3, memory_mb=512, budget=budget(GIB), fix="lower --memory-mb")
    assert str(refused.value) == (
        "memory: 3 bots x 512 MiB (1.5 GiB) do not fit in 1.0 GiB available (MemAvailable), "
        f"less {REFEREE_RESERVE_MIB} MiB for the referee; lower --memory-mb (at most "
        f"{(1024 - REFEREE_RESERVE_MIB) // 3} MiB fits), or run where more memory is free"
    )
    # The sample bots are the referee's own: counted at what they use, not at the limit.
    check_room(1, memory_mb=512, samples=10, budget=budget(GIB), fix="x")
    with pytest.raises(
        UsageError, match=r"1 bot x 900 MiB and 10 sample bots \(1.0 GiB\) do not fit"
    ):
        check_room(1, memory_mb=900, samples=10, budget=budget(GIB), fix="x")
    assert SAMPLE_BOT_MIB < 512
    with pytest.raises(UsageError, match=r"^memory: 1 bot x 2048 MiB \(2.0 GiB\) does not fit in "):
        check_room(1, memory_mb=2048, budget=budget(GIB), fix="x")


def test_the_executor_is_sized_by_the_plan() -> None:
    executor = LocalExecutor.within_memory(
        4, seats=4, limits=Limits(memory_mb=512), own_cgroup=True, budget=budget(int(3.1 * GIB))
    )
    assert executor.workers == 1 and executor.idle_bots == 1
    assert executor.memory is not None and len(executor.memory.notes) == 2
    with pytest.raises(UsageError, match="does not fit"):
        LocalExecutor.within_memory(
            1, seats=6, limits=Limits(memory_mb=512), own_cgroup=True, budget=budget(GIB)
        )


# --------------------------------------------------------------------------- reading


def _proc(tmp_path: Path, mountinfo: str, cgroup: str, available_kib: int) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    (proc / "self" / "cgroup").write_text(cgroup)
    (proc / "meminfo").write_text(
        f"MemTotal:       24683520 kB\nMemFree:          512000 kB\n"
        f"MemAvailable:   {available_kib} kB\n"
    )
    return proc


def _v1_group(folder: Path, limit: int, usage: int, inactive_file: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.limit_in_bytes").write_text(f"{limit}\n")
    (folder / "memory.usage_in_bytes").write_text(f"{usage}\n")
    (folder / "memory.stat").write_text(
        f"cache 0\ninactive_file 0\ntotal_inactive_file {inactive_file}\n"
    )


def test_a_limit_above_the_referees_own_group_is_found(tmp_path: Path) -> None:
    """v1, as a CI job sees it: its own group has no limit, the job's parent has 400 MiB."""
    memory = tmp_path / "memory"
    unlimited = 9223372036854771712
    _v1_group(memory, unlimited, 5 * GIB)
    _v1_group(memory / "ci", 400 * MIB, 100 * MIB, inactive_file=40 * MIB)
    _v1_group(memory / "ci" / "job", unlimited, 90 * MIB)
    proc = _proc(
        tmp_path,
        f"35 31 0:32 / {memory} rw,relatime - cgroup cgroup rw,memory\n",
        "4:memory:/ci/job\n0::/\n",
        available_kib=20 * 1024 * 1024,
    )
    found = read_budget(proc=proc)
    assert found.free == 340 * MIB
    assert found.where == f"cgroup {memory / 'ci'}: limit 400 MiB, 60 MiB in use"
    assert (
        found.describe()
        == f"340 MiB available (cgroup {memory / 'ci'}: limit 400 MiB, 60 MiB in use)"
    )
    # Docker's containers are not in the referee's cgroup: only the machine counts.
    assert read_budget(own_cgroup=False, proc=proc) == MemoryBudget(20 * GIB, "MemAvailable")


def test_the_machine_counts_when_it_has_less_than_the_cgroup(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    _v1_group(memory / "big", 64 * GIB, GIB)
    proc = _proc(
        tmp_path,
        f"35 31 0:32 / {memory} rw - cgroup cgroup rw,memory\n",
        "4:memory:/big\n",
        available_kib=3 * 1024 * 1024,
    )
    assert read_budget(proc=proc) == MemoryBudget(3 * GIB, "MemAvailable")


def test_a_v2_limit_up_the_tree_is_found(tmp_path: Path) -> None:
    unified = tmp_path / "unified"
    own = unified / "system.slice" / "referee.service"
    own.mkdir(parents=True)
    for folder, limit, current in (
        (unified / "system.slice", f"{2 * GIB}", GIB),
        (own, "max", 30 * MIB),
    ):
        (folder / "memory.max").write_text(limit + "\n")
        (folder / "memory.current").write_text(f"{current}\n")
        (folder / "memory.stat").write_text(f"anon 1\ninactive_file {256 * MIB}\n")
    proc = _proc(
        tmp_path,
        f"30 23 0:26 / {unified} rw - cgroup2 cgroup2 rw,nsdelegate\n",
        "0::/system.slice/referee.service\n",
        available_kib=20 * 1024 * 1024,
    )
    found = read_budget(proc=proc)
    assert found.free == GIB + 256 * MIB
    assert found.where == f"cgroup {unified / 'system.slice'}: limit 2.0 GiB, 768 MiB in use"


def test_nothing_to_read_refuses_nothing(tmp_path: Path) -> None:
    found = read_budget(proc=tmp_path / "nowhere")
    assert found.free > 1 << 50 and "not measured" in found.where


def test_this_machine_has_a_budget() -> None:
    found = read_budget()
    assert found.free > 0 and re.fullmatch(
        r"(MemAvailable|cgroup .+: limit .+ in use)", found.where
    )


# --------------------------------------------------------------------------- oom score


def test_the_referee_lowers_its_oom_score_where_it_may(tmp_path: Path) -> None:
    score = tmp_path / "oom_score_adj"
    score.write_text("0\n")
    assert protect_referee(score) and score.read_text() == str(REFEREE_OOM_SCORE_ADJ)
    assert protect_referee(score), "already there: nothing to do"
    assert not protect_referee(tmp_path / "missing")


def test_every_bot_is_the_oom_killers_first_choice() -> None:
    """The start-up shell raises a bot's oom_score_adj to +1000 before the bot runs."""
    import subprocess

    from referee.sandbox.process import _oom_first_argv

    out = subprocess.run(
        [*_oom_first_argv(), "cat", "/proc/self/oom_score_adj"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "1000"
