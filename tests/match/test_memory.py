"""Memory that is really there (issue 18, finding 6), in memory cgroups the tests make.

Each test makes a memory group of its own, under the test process's own group (so it works
nested, and touches no one else's), with a small limit standing for the machine, container
or CI job the referee runs in, and removes it afterwards. Then:

- a bot killed by the kernel because that group ran out, while its own group was within its
  own limit, is the referee's failure (an ``InfrastructureError`` out of the match), never
  "killed at the memory limit"; a bot killed at its own limit still is;
- ``referee play`` and ``referee tournament run`` in a 400 MiB group with a bot that spreads
  450 MiB over 15 processes and an honest bot holding 300 MiB refuse up front; forced on
  (``--overcommit-memory``), the run completes, the referee survives, the honest bot is
  never blamed and the matches are failed on the referee's side.

cgroup v1 only (this project's machines and CI); root needed. Skipped otherwise, a failure
under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from referee.errors import InfrastructureError
from referee.match.runner import play_match
from referee.protocol.seats import seated
from referee.results import MatchResult
from referee.rules import RuleSet
from referee.sandbox import Limits, ProcessSandbox, load_bot, stage_bot
from referee.sandbox.cgroups import CgroupSupport, Hierarchy, probe_cgroups
from referee.specs import TimeControl
from tests.conftest import run_uids
from tests.match.conftest import BOTS, IN_CI, sandbox_pids
from tests.sandbox.bot_processes import bwrap_usable, reply, script

MIB = 1024 * 1024
TC = TimeControl(move_ms=5000, bank_ms=5000, hello_ms=20000)
RULES = RuleSet.preset("arschloch", target=3).resolve(3)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _v1_memory_support() -> CgroupSupport:
    """The machine's v1 memory hierarchy as the sandbox sees it; a skip without one."""
    found = probe_cgroups()
    usable = found.version == 1 and any(h.controller == "memory" for h in found.hierarchies)
    if not usable or os.geteuid() != 0:
        why = f"needs root and cgroup v1 memory ({found.describe()})"
        if IN_CI:
            pytest.fail(f"CI=true but this test {why}")
        pytest.skip(why)
    return found


@pytest.fixture
def memory_group() -> Iterator[Callable[[int], Path]]:
    """Make memory groups of this test's own (``make(limit_mib)``), removed afterwards."""
    support = _v1_memory_support()
    parent = next(h.parent for h in support.hierarchies if h.controller == "memory")
    made: list[Path] = []

    def make(limit_mib: int) -> Path:
        folder = parent / f"test-{os.environ['REFEREE_RUN_ID']}-{secrets.token_hex(4)}"
        folder.mkdir()
        made.append(folder)
        (folder / "memory.limit_in_bytes").write_text(str(limit_mib * MIB))
        if (folder / "memory.memsw.limit_in_bytes").exists():
            (folder / "memory.memsw.limit_in_bytes").write_text(str(limit_mib * MIB))
        return folder

    yield make
    for folder in reversed(made):
        _empty(folder)
        folder.rmdir()


def _members(folder: Path) -> set[int]:
    """Every process in ``folder`` and the groups below it."""
    pids: set[int] = set()
    for procs in folder.rglob("cgroup.procs"):
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(pid) for pid in procs.read_text().split()}
    return pids


def _empty(folder: Path) -> None:
    """Kill what is left in the group (nothing, if the referee cleaned up) and its children."""
    deadline = time.monotonic() + 10
    while (left := _members(folder)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    for child in sorted(folder.glob("*/"), reverse=True):
        if child.is_dir() and (child / "cgroup.procs").exists():
            child.rmdir()


def _sandbox_under(group: Path) -> ProcessSandbox:
    """The process sandbox, its bots' groups made under ``group`` (as when the referee
    itself runs in it)."""
    found = probe_cgroups()
    tight = CgroupSupport(
        1,
        (Hierarchy("memory", group),),
        swap_accounting=found.swap_accounting,
        reason=f"cgroup v1 under {group}",
    )
    return ProcessSandbox(uid_range=run_uids(), cgroups=True, cgroup_support=tight)


# --------------------------------------------------------------------------- who dies first


@pytest.mark.parametrize("mode", ["bwrap", "plain"])
def test_every_bot_process_is_the_oom_killers_first_choice(staging: Path, mode: str) -> None:
    """The bot and its children run at oom_score_adj +1000, whatever the referee's own."""
    if mode == "bwrap" and not bwrap_usable():
        pytest.skip("bubblewrap is not usable here (under CI=true this fails instead)")
    spec = script(
        staging,
        """
        import json, subprocess
        child = subprocess.run(["cat", "/proc/self/oom_score_adj"], capture_output=True, text=True)
        own = open("/proc/self/oom_score_adj").read()
        print(json.dumps({"own": own.strip(), "child": child.stdout.strip()}), flush=True)
        """,
    )

    async def scenario() -> dict[str, str]:
        bot = await ProcessSandbox(bwrap=mode == "bwrap", uid_range=run_uids()).start(
            spec, Limits()
        )
        try:
            return await reply(bot)
        finally:
            await bot.cleanup()

    assert asyncio.run(scenario()) == {"own": "1000", "child": "1000"}
    assert sandbox_pids() == []


# --------------------------------------------------------------------------- attribution


@pytest.mark.parametrize(
    ("bot", "memory_mb", "whose"),
    [("holds_300_mib.py", 512, "ours"), ("shared_memory.py", 128, "the bot's")],
)
def test_an_oom_kill_is_the_bots_only_at_its_own_limit(
    memory_group: Callable[[int], Path],
    staging: Path,
    bot: str,
    memory_mb: int,
    whose: str,
) -> None:
    """In a 200 MiB group standing for the machine: the honest bot filling 300 MiB, within
    its 512 MiB limit, is killed for memory it was allowed (the referee's failure); a bot
    mapping 2 GiB of shared memory is killed at its own 128 MiB (its fault). (The shared
    mapping, because RLIMIT_DATA, also ``memory_mb``, stops a plain allocation first.)"""
    sandbox = _sandbox_under(memory_group(200))
    bots = [stage_bot(load_bot(BOTS / name), staging) for name in (bot, "polite.py", "polite.py")]

    async def go() -> MatchResult:
        limits = Limits(memory_mb=memory_mb)
        async with seated(bots, sandbox=sandbox, time_control=TC, limits=limits) as table:
            return await play_match(table, RULES, 1, match_id="memory")

    def play() -> MatchResult:
        return asyncio.run(go())

    if whose == "ours":
        with pytest.raises(InfrastructureError) as failed:
            play()
        message = str(failed.value)
        assert "killed by the kernel's out-of-memory killer within its own memory limit" in message
        assert "not the bot's fault" in message and "\n" not in message
    else:
        seat0 = next(st for st in play().standings if st.seat == 0)
        assert seat0.fault is not None and seat0.fault.kind == "crash"
        assert seat0.fault.detail.endswith("(killed at the memory limit)"), seat0.fault
    assert sandbox_pids() == []


# --------------------------------------------------------------------------- whole runs


def _in_group(group: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as a process of ``group`` (it joins before it execs), as a CI job would."""
    enter = 'echo $$ >"$1/cgroup.procs" || exit 125; shift; exec "$@"'
    return subprocess.run(
        ["/bin/sh", "-c", enter, "join", str(group), *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=500,
    )


def _referee(*args: str) -> list[str]:
    return [sys.executable, "-m", "referee", *args]


@pytest.fixture
def hostile_field(tmp_path: Path) -> Path:
    """A tournament of the spreader, the honest bot and a polite one, at one table."""
    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("spreads_memory.py", "holds_300_mib.py", "polite.py"):
        shutil.copy(BOTS / name, bots / name)
    path = tmp_path / "memory.toml"
    path.write_text(
        textwrap.dedent(
            """\
            name = "memory"
            rules = { preset = "arschloch", target = 3 }
            table_size = 3
            deals = 1
            [time]
            move_ms = 5000
            bank_ms = 5000
            hello_ms = 20000
            [sandbox]
            backend = "process"
            memory_mb = 512
            [[bots]]
            path = "bots/spreads_memory.py"
            [[bots]]
            path = "bots/holds_300_mib.py"
            [[bots]]
            path = "bots/polite.py"
            """
        )
    )
    return path


def test_play_refuses_up_front_what_cannot_fit(
    memory_group: Callable[[int], Path], tmp_path: Path
) -> None:
    group = memory_group(400)
    bots = [str(BOTS / name) for name in ("spreads_memory.py", "holds_300_mib.py", "polite.py")]
    done = _in_group(group, _referee("play", *bots), tmp_path)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("referee: memory: 3 bots x 512 MiB (1.5 GiB) do not fit in ")
    assert f"(cgroup {group}: limit 400 MiB, " in lines[0]
    assert "lower --memory-mb (at most " in lines[0]
    assert "killed at the memory limit" not in done.stdout + done.stderr


def test_play_at_a_limit_that_fits_blames_only_a_bot_over_its_own_limit(
    memory_group: Callable[[int], Path], tmp_path: Path
) -> None:
    """Within the budget, a bot mapping 2 GiB of shared memory goes over its own 64 MiB
    limit: its own fault, said as before."""
    group = memory_group(400)
    bots = [str(BOTS / name) for name in ("shared_memory.py", "polite.py", "polite.py")]
    done = _in_group(group, _referee("play", "--memory-mb", "64", "--json", *bots), tmp_path)
    assert done.returncode == 0, done
    assert '"kind": "crash"' in done.stdout and "killed at the memory limit" in done.stdout


def test_a_tournament_refuses_up_front_what_cannot_fit(
    memory_group: Callable[[int], Path], hostile_field: Path
) -> None:
    group = memory_group(400)
    done = _in_group(
        group,
        _referee("tournament", "run", str(hostile_field), "--workers", "1"),
        hostile_field.parent,
    )
    assert done.returncode == 2, done
    assert "referee: memory: one worker's table of 3 seats x 512 MiB (1.5 GiB) does not fit" in (
        done.stderr
    )
    assert "lower [sandbox] memory_mb (at most " in done.stderr
    assert "--overcommit-memory" in done.stderr
    assert not (hostile_field.parent / "memory.results" / "results.sqlite").exists()


def test_an_overcommitted_tournament_never_blames_the_honest_bot_nor_dies(
    memory_group: Callable[[int], Path], hostile_field: Path
) -> None:
    """The run of the finding, forced on: the kernel kills in the 400 MiB group, the
    referee survives (it is never the OOM killer's choice while a bot is left), the
    honest bot is never reported killed at the memory limit, and each match it was
    killed in is failed on the referee's side (retried, then failed), not a forfeit."""
    group = memory_group(400)
    done = _in_group(
        group,
        _referee("tournament", "run", str(hostile_field), "--workers", "1", "--overcommit-memory"),
        hostile_field.parent,
    )
    output = done.stdout + done.stderr
    assert done.returncode in (0, 1), output  # never killed (-9), never a traceback (3)
    assert "Traceback" not in output
    assert "memory: overcommitted on purpose: 1 worker x 3 seats x 512 MiB" in output
    # v1 counts an OOM kill in the victim's own group (the bots' groups, gone by now);
    # the group's high-water mark shows that it ran out.
    peak = int((group / "memory.max_usage_in_bytes").read_text())
    assert peak >= 396 * MIB, f"the group never ran out ({peak} bytes): nothing was tested"
    with sqlite3.connect(hostile_field.parent / "memory.results" / "results.sqlite") as db:
        faults = db.execute(
            "SELECT name, fault_kind, fault_detail FROM results WHERE fault_kind IS NOT NULL"
        ).fetchall()
        failed = db.execute(
            "SELECT key, attempts, error FROM matches WHERE status = 'failed'"
        ).fetchall()
    assert not [f for f in faults if "memory limit" in (f[2] or "")], faults
    assert not [f for f in faults if f[0] == "holds_300_mib"], faults
    assert failed, "the honest bot was killed, so some match must have failed on our side"
    for _key, attempts, error in failed:
        assert attempts >= 2 and "out-of-memory killer within its own memory limit" in error
    assert "failed on the referee's side" in output
    # multiprocessing's resource tracker may take a moment after the referee to exit.
    deadline = time.monotonic() + 10
    while _members(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {pid: _cmdline(pid) for pid in _members(group)}
    assert not left, f"processes of the run outlived it: {left}"
    assert sandbox_pids() == []


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    return "?"
