"""Memory that is really there: how many bots may run at once, and whom the kernel kills.

Every bot has a memory limit of its own (its cgroup: ``memory_mb`` over its whole process
tree), but the limits of all the bots alive at once are a promise only the machine can keep.
When the memory the referee really has runs out (a small or busy machine, a container or a
CI job with a limit of its own), the kernel's out-of-memory (OOM) killer kills the process
that holds the most, whoever's fault that is: a bot spreading 450 MiB over many small
processes, each within its limits, got an honest 300 MiB bot killed and blamed ("killed at
the memory limit"), and in a 400 MiB budget the coordinator itself, on every resume. Three
defences:

1. **Count before running.** :func:`read_budget` finds the memory the referee has: the least
   room under any memory limit of its own cgroup and its ancestors (v1
   ``memory.limit_in_bytes``, v2 ``memory.max``, less what is in use there, not counting
   file cache the kernel can drop), or the machine's ``MemAvailable``, whichever is
   smaller. :func:`plan_workers` compares it with the limits that can be alive at once in a
   tournament: each worker's table, plus the idle copies its
   :class:`~referee.protocol.seats.SessionPool` keeps (``max_idle_total``), plus a reserve
   for the referee's own processes; it runs fewer workers and keeps fewer idle copies,
   saying so, or refuses with the numbers and what to change. :func:`check_room` does the
   same for the few bots of ``play``, ``bot check`` and ``submit``. Bots of the Docker
   backend live in Docker's cgroups, not the referee's: only ``MemAvailable`` counts there.
2. **Bots die first.** Every bot process gets ``oom_score_adj`` +1000 before it runs (the
   process sandbox's start-up shell; the Docker backend's ``oom_score_adj``). The kernel
   scores a process by its memory plus ``oom_score_adj`` thousandths of all the memory in
   the scope of the OOM (the machine, or the cgroup whose limit ran out), so a bot at +1000
   always outscores a process at 0 or below, which can hold no more than that scope: the
   referee is never chosen while a bot process is left. The referee also lowers its own to
   :data:`REFEREE_OOM_SCORE_ADJ` where it may (:func:`protect_referee`). Measured on this
   project's machines: root without ``CAP_SYS_RESOURCE`` (a container's capability set)
   may raise its value but not lower it below 0 (``EACCES``); the +1000 of the bots is what
   protects the referee there. -999, not -1000: -1000 exempts a process from the OOM
   killer altogether, and a memory cgroup whose every process is exempt cannot free memory
   at its limit (the kernel's documentation: the allocating tasks wait or retry their page
   fault); at -999 the referee still goes last of all. cgroup v2's ``memory.min`` on the
   referee's own group is no alternative here: the bots' groups are children of that group
   and a protection is shared with the children (v1 has no such knob at all).
3. **Blame is counted, not guessed.** A bot killed by the OOM killer is "killed at the
   memory limit" only when its own group reached its own limit
   (:meth:`~referee.sandbox.cgroups.BotCgroup.hit_limit`); otherwise the kill is ours
   (``ExitInfo.outside_oom``) and surfaces as an ``InfrastructureError`` from the match,
   which is then played again, never a fault of the bot.

The arithmetic (:func:`plan_workers`, :func:`check_room`) is pure; the reading
(:func:`read_budget`) takes the ``/proc`` to read, so tests give it fake ones.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from referee.errors import UsageError
from referee.sandbox.cgroups import _cgroup_mounts, _group_folder, _own_groups

__all__ = [
    "BOT_OOM_SCORE_ADJ",
    "REFEREE_OOM_SCORE_ADJ",
    "REFEREE_RESERVE_MIB",
    "SAMPLE_BOT_MIB",
    "WORKER_RESERVE_MIB",
    "MemoryBudget",
    "MemoryPlan",
    "check_room",
    "plan_workers",
    "protect_referee",
    "read_budget",
]

MIB = 1024 * 1024
GIB = 1024 * MIB

BOT_OOM_SCORE_ADJ = 1000
"""Every bot process: the OOM killer's first choice (the kernel's maximum)."""
REFEREE_OOM_SCORE_ADJ = -999
"""The referee's own processes, where they may lower it: last of all, never exempt."""

REFEREE_RESERVE_MIB = 96
"""Kept for the referee beside the bots: the coordinator (49 MiB resident, measured during
``referee tournament demo``), multiprocessing's resource tracker (13 MiB) and their growth."""
WORKER_RESERVE_MIB = 64
"""Kept for each worker process (47 MiB resident, measured in the same run)."""
SAMPLE_BOT_MIB = 16
"""A sample bot, trusted code of the referee's own: 6.1 to 8.2 MiB peak in its cgroup
(``referee bot check`` of each), counted at twice that rather than at its limit."""

_UNLIMITED = 1 << 60  # v1 writes "no limit" as the largest page-aligned 63-bit number


@dataclass(frozen=True)
class MemoryBudget:
    """The memory bots and the referee may still use here, and where that figure comes from."""

    free: int
    """Bytes."""
    where: str
    """``MemAvailable``, or e.g. ``cgroup /sys/fs/cgroup/memory/ci: limit 400 MiB, 61 MiB in
    use``."""

    def describe(self) -> str:
        """``3.1 GiB available (MemAvailable)``."""
        return f"{size(self.free)} available ({self.where})"


@dataclass(frozen=True)
class MemoryPlan:
    """How many workers run, how many idle bot processes each keeps, and what to say."""

    workers: int
    idle: int
    notes: tuple[str, ...] = ()


def size(n: int) -> str:
    """Bytes for people: ``400 MiB``, ``3.1 GiB``."""
    if abs(n) >= GIB:
        return f"{n / GIB:.1f} GiB"
    return f"{round(n / MIB)} MiB"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


# --------------------------------------------------------------------------- arithmetic


def _referee_reserve(workers: int) -> int:
    return (REFEREE_RESERVE_MIB + workers * WORKER_RESERVE_MIB) * MIB


def plan_workers(
    workers: int,
    *,
    seats: int,
    memory_mb: int,
    budget: MemoryBudget,
    overcommit: bool = False,
) -> MemoryPlan:
    """The workers and idle copies a tournament may run within ``budget``.

    A worker holds one table of ``seats`` bots, each promised ``memory_mb``, and keeps up
    to ``seats`` idle bot processes between matches (the default cap of its pool). Workers
    come first: as many of the ``workers`` asked for as fit with their tables and the
    referee's reserve; then idle copies, as many per worker (up to ``seats``) as the rest
    holds. ``UsageError`` when not even one worker's table fits, naming the numbers and
    what to change, unless ``overcommit``: then everything runs as asked, with a note.
    """
    bot = memory_mb * MIB
    table = seats * bot

    def room(n: int) -> int:
        return budget.free - _referee_reserve(n)

    if overcommit:
        need = workers * 2 * table
        notes: tuple[str, ...] = ()
        if need > room(workers):
            notes = (
                f"memory: overcommitted on purpose: {_plural(workers, 'worker')} x {seats} seats x "
                f"{memory_mb} MiB, with idle copies up to {size(need)}, in "
                f"{budget.describe()}; a bot the kernel kills for memory outside its own "
                "limit fails its match on the referee's side (played again), never the bot",
            )
        return MemoryPlan(workers, seats, notes)
    fit = next((n for n in range(workers, 0, -1) if room(n) >= n * table), 0)
    if fit == 0:
        most = max(0, room(1) // seats // MIB)
        raise UsageError(
            f"memory: one worker's table of {seats} seats x {memory_mb} MiB "
            f"({size(table)}) does not fit in {budget.describe()}, less "
            f"{size(_referee_reserve(1))} for the referee; lower [sandbox] memory_mb "
            f"(at most {most} MiB fits), free memory, or pass --overcommit-memory"
        )
    idle = min(seats, (room(fit) - fit * table) // (fit * bot))
    notes_list = []
    if fit < workers:
        notes_list.append(
            f"memory: {workers} workers x {seats} seats x {memory_mb} MiB do not fit in "
            f"{budget.describe()}; running {_plural(fit, 'worker')}"
        )
    if idle < seats:
        notes_list.append(
            f"memory: each worker keeps at most {_plural(idle, 'idle bot process')} between "
            f"matches (not {seats}), to stay within {size(budget.free)}"
        )
    return MemoryPlan(fit, idle, tuple(notes_list))


def check_room(
    bots: int, *, memory_mb: int, budget: MemoryBudget, samples: int = 0, fix: str
) -> None:
    """Refuse a match of ``bots`` bots at ``memory_mb`` (and ``samples`` sample bots) that
    does not fit in ``budget`` beside the referee; ``fix`` says what to lower."""
    need = (bots * memory_mb + samples * SAMPLE_BOT_MIB) * MIB
    room = budget.free - REFEREE_RESERVE_MIB * MIB
    if need <= room:
        return
    most = max(0, (room - samples * SAMPLE_BOT_MIB * MIB) // bots // MIB)
    what = f"{_plural(bots, 'bot')} x {memory_mb} MiB"
    if samples:
        what += f" and {_plural(samples, 'sample bot')}"
    verb = "does" if bots == 1 and not samples else "do"
    raise UsageError(
        f"memory: {what} ({size(need)}) {verb} not fit in {budget.describe()}, less "
        f"{REFEREE_RESERVE_MIB} MiB for the referee; {fix} (at most {most} MiB fits), or "
        "run where more memory is free"
    )


# --------------------------------------------------------------------------- reading


def read_budget(*, own_cgroup: bool = True, proc: Path = Path("/proc")) -> MemoryBudget:
    """The memory this referee has: the tightest cgroup limit above it, or ``MemAvailable``.

    ``own_cgroup``: the bots run in the referee's own cgroup tree (the process sandbox),
    so its limits and those of its ancestors bound them too; Docker's containers do not.
    """
    rooms = _cgroup_rooms(proc / "self") if own_cgroup else []
    available = _mem_available(proc / "meminfo")
    if available is not None:
        rooms.append((available, "MemAvailable"))
    if not rooms:
        return MemoryBudget(1 << 62, "not measured: no /proc/meminfo")
    free, where = min(rooms, key=lambda room: room[0])
    return MemoryBudget(max(0, free), where)


def _mem_available(meminfo: Path) -> int | None:
    try:
        text = meminfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable" and value.split():
            return int(value.split()[0]) * 1024
    return None


def _cgroup_rooms(proc_self: Path) -> list[tuple[int, str]]:
    """``(room, description)`` for each memory limit on the way from the referee's group
    up to the top of the hierarchy it can see."""
    try:
        mounts = _cgroup_mounts((proc_self / "mountinfo").read_text())
        groups = _own_groups((proc_self / "cgroup").read_text())
    except OSError:
        return []
    rooms = []
    for mount in mounts:
        if mount.fstype == "cgroup" and "memory" in mount.options and "memory" in groups:
            version, own = 1, groups["memory"]
        elif mount.fstype == "cgroup2" and "" in groups:
            version, own = 2, groups[""]
        else:
            continue
        folder = _group_folder(mount, own)
        while folder is not None:
            room = _room(folder, version)
            if room is not None:
                rooms.append(room)
            if folder in (mount.point, folder.parent):
                break
            folder = folder.parent
    return rooms


def _room(folder: Path, version: int) -> tuple[int, str] | None:
    """The room left under ``folder``'s memory limit; ``None`` without a limit there."""
    names = (
        ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        if version == 1
        else ("memory.max", "memory.current", "inactive_file")
    )
    try:
        limit_text = (folder / names[0]).read_text().strip()
        if limit_text == "max":
            return None
        limit = int(limit_text)
        usage = int((folder / names[1]).read_text())
    except (OSError, ValueError):
        return None
    if limit >= _UNLIMITED:
        return None
    # File cache the kernel can drop on demand is not memory the bots lack.
    cache = 0
    with contextlib.suppress(OSError, ValueError):
        for line in (folder / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == names[2]:
                cache = int(value)
    used = max(0, usage - cache)
    return limit - used, f"cgroup {folder}: limit {size(limit)}, {size(used)} in use"


# --------------------------------------------------------------------------- protection


def protect_referee(path: Path = Path("/proc/self/oom_score_adj")) -> bool:
    """Lower this process's ``oom_score_adj`` to :data:`REFEREE_OOM_SCORE_ADJ`.

    ``False`` where that is not allowed (lowering needs ``CAP_SYS_RESOURCE``): nothing is
    said then, the bots' +1000 still puts them first. Its children inherit the value; the
    sandboxes raise it again for every bot.
    """
    try:
        if int(path.read_text()) <= REFEREE_OOM_SCORE_ADJ:
            return True
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, str(REFEREE_OOM_SCORE_ADJ).encode())
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return False
    return True
