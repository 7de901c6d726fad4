"""Cgroups for the process sandbox: one group per bot, limits over its whole process tree.

Rlimits are per process, and ``RLIMIT_DATA`` counts only private writable memory: a bot
could hold gigabytes in shared anonymous mappings, ``memfd``s or files on a tmpfs, and
spread the rest over as many processes as ``pids`` allows. A memory cgroup charges every
page the bot's processes touch, shared or private, and every tmpfs page they write, to the
bot's group; at the limit the kernel reclaims, then kills a process of that group (never one
outside it). A pids group bounds its tasks whoever their uid is, and a CPU quota its share.

Two kernel interfaces, the first that works wins:

- **v2** (the unified hierarchy), when the referee's own group lists ``memory`` and ``pids``
  in ``cgroup.subtree_control``: ``memory.max``, ``memory.swap.max = 0``, ``pids.max``,
  ``cpu.max`` (when ``cpu`` is enabled too); OOM kills are counted in ``memory.events``.
  The referee does not enable controllers itself: v2 forbids that while its group holds
  processes, its own among them; whoever starts it must delegate such a group.
- **v1**, one group in each of the ``memory``, ``pids``, ``cpu`` and ``freezer`` hierarchies
  (Docker's "Cgroup Version: 1" machines, this project's CI): ``memory.limit_in_bytes`` and,
  where swap accounting is on, ``memory.memsw.limit_in_bytes`` to the same value (no
  swapping out of the limit), ``memory.swappiness = 0``, ``pids.max``, ``cpu.cfs_quota_us``
  over ``cpu.cfs_period_us``; OOM kills are counted by ``oom_kill`` in
  ``memory.oom_control``. Only ``memory`` is required; a missing ``pids``, ``cpu`` or
  ``freezer`` hierarchy is said in :meth:`CgroupSupport.describe`.

**Freezing** (:meth:`BotCgroup.freeze`): an idle bot kept between matches by a session
pool could burn CPU meanwhile, slowing the other bots of the machine or thinking ahead; its
group is frozen while it waits and thawed before it is lent again. v2 writes ``1``/``0`` to
``cgroup.freeze`` and waits for ``frozen 1`` in ``cgroup.events``; v1 writes ``FROZEN``/
``THAWED`` to ``freezer.state`` and waits until it reads so (``FREEZING`` in between). A
frozen task stays frozen when sent ``SIGKILL`` under v1, so the bot is thawed before any
kill (:meth:`BotCgroup.kill_all`).

Where groups go: under the referee's own group in each hierarchy (``/proc/self/cgroup``
resolved through ``/proc/self/mountinfo``), so it also works nested, in a container or a CI
job whose group is not the root. Each is named ``referee-<pidns>-<pid>-<random>``: the
referee's pid namespace (its inode) and pid, so a later referee can tell which groups belong
to a dead referee of its own namespace, kill what still runs in them and remove them
(:func:`sweep_leftovers`); groups of live referees, and of other pid namespaces, whose pids
mean nothing here, are never touched.

Entering before the bot runs: the referee starts a tiny shell (``dash`` where it exists)
that writes its own pid (``$$``) into each group's ``cgroup.procs`` and then ``exec``s the
rest of the chain (``setpriv`` to the bot's uid when root, ``prlimit``, ``bwrap``, the bot),
so every process of the bot is born inside, and nothing else is (:meth:`BotCgroup.enter_argv`).
Rejected alternatives: a ``preexec_fn`` (not safe with threads, and the referee may run in a
Dask worker thread); moving the pid after the start (the bot runs meanwhile and may fork
out); ``CLONE_INTO_CGROUP`` (v2 only, and not reachable from ``subprocess``); moving the
referee's own thread through v1's ``tasks`` around the fork (its other threads' children and
charges would land in the bot's group).

On this project's machines (kernel 6.x, cgroup v1, as root) a 2 GiB
``MAP_SHARED|MAP_ANONYMOUS`` mapping is OOM-killed at a 128 MiB limit. A group adds to a
bot's start-up (``bench/match_bench.py`` times it; the figures are in docs/performance.md):
most of that is the first write to ``cgroup.procs``, which waits for an RCU grace period
(the kernel's ``cgroup_threadgroup_rwsem``), paid in the bot's shell, not in the referee's
event loop. A v1 group that still holds page cache or
tmpfs pages can be removed: its charges move to the parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from referee.errors import InfrastructureError
from referee.sandbox.pidfd import kill_if

__all__ = [
    "BotCgroup",
    "CgroupSupport",
    "Hierarchy",
    "group_prefix",
    "peak_memory_of",
    "probe_cgroups",
    "sweep_leftovers",
    "unavailable",
]

log = logging.getLogger(__name__)

_V1_CONTROLLERS = ("memory", "pids", "cpu", "freezer")
_FREEZE_TIMEOUT_S = 2.0
_CPU_PERIOD_US = 100_000
_MIN_CPU_QUOTA_US = 1_000  # the kernel refuses smaller quotas
_KILL_TIMEOUT_S = 10.0
# A refused charge is at most a huge page (2 MiB; the kernel batches 64 small pages).
_LIMIT_MARGIN = 4 * 1024 * 1024
_SYSTEM_BIN = "/usr/bin:/bin"
_NAME = re.compile(r"referee-(\d+)-(\d+)-[0-9a-f]+")
# Joins each group named before "--", then runs the rest. The shell exports PWD, which
# the bot's environment must not gain.
_ENTER_SCRIPT = (
    'while [ "$1" != -- ]; do '
    'echo $$ >"$1" || { echo "referee: cannot move the bot into cgroup $1" >&2; exit 125; }; '
    'shift; done; shift; unset PWD OLDPWD; exec "$@"'
)


@dataclass(frozen=True)
class Hierarchy:
    """One place bot groups are made: a controller's folder for the referee's own group.

    ``controller`` is ``memory``, ``pids``, ``cpu`` or ``freezer`` under v1, ``unified``
    under v2.
    """

    controller: str
    parent: Path


@dataclass(frozen=True)
class CgroupSupport:
    """Which cgroup interface bots get here, where, and why (not)."""

    version: int | None
    hierarchies: tuple[Hierarchy, ...] = ()
    swap_accounting: bool = False
    cpu: bool = False
    reason: str = ""

    @property
    def works(self) -> bool:
        """True when every bot gets a memory (and pids) group of its own."""
        return self.version is not None

    @property
    def pids(self) -> bool:
        """True when ``pids.max`` bounds a bot's tasks."""
        return self.version == 2 or any(h.controller == "pids" for h in self.hierarchies)

    @property
    def freezer(self) -> bool:
        """True when a bot's group can be frozen (v2's ``cgroup.freeze``: Linux 5.2)."""
        if self.version == 2:
            # The root group has no cgroup.freeze of its own: ask the kernel's version.
            major, minor = (int(n) for n in re.findall(r"\d+", os.uname().release)[:2])
            return (major, minor) >= (5, 2)
        return any(h.controller == "freezer" for h in self.hierarchies)

    def describe(self) -> str:
        """A phrase for the start-up line and ``referee doctor``."""
        if not self.works:
            return (
                "no cgroup: memory is limited per process only (RLIMIT_DATA), shared memory "
                f"and tmpfs are not counted, no CPU quota ({self.reason})"
            )
        counted = ["memory incl. shared memory and tmpfs"]
        counted.append("no swap" if self.swap_accounting else "swap not accounted")
        counted.append("pids" if self.pids else "no pids group")
        counted.append("CPU quota" if self.cpu else "no CPU quota")
        counted.append("idle bots frozen" if self.freezer else "no freezer")
        return f"cgroup v{self.version} ({', '.join(counted)})"


def unavailable(reason: str) -> CgroupSupport:
    """No cgroup for bots, and why."""
    return CgroupSupport(None, reason=reason)


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class _Mount:
    root: str
    point: Path
    fstype: str
    options: frozenset[str]


def _unescape(text: str) -> str:
    """Mountinfo writes a space, tab, newline and backslash as ``\\ooo``."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def _cgroup_mounts(mountinfo: str) -> list[_Mount]:
    mounts = []
    for line in mountinfo.splitlines():
        before, sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append(
            _Mount(
                root=_unescape(fields[3]),
                point=Path(_unescape(fields[4])),
                fstype=tail[0],
                options=frozenset(tail[2].split(",")),
            )
        )
    return mounts


def _own_groups(proc_cgroup: str) -> dict[str, str]:
    """Controller (``""`` for v2) -> the referee's group path, from ``/proc/self/cgroup``."""
    groups: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            groups[controller] = parts[2]
    return groups


def _group_folder(mount: _Mount, own: str) -> Path | None:
    """The folder of group ``own`` under ``mount``; ``None`` if the mount does not show it."""
    root = mount.root.rstrip("/")
    if own != root and not own.startswith(root + "/"):
        return None
    return mount.point / own[len(root) :].lstrip("/")


def peak_memory_of(pid: int, group_name: str, proc: Path = Path("/proc")) -> int | None:
    """The highest memory use so far of the memory group process ``pid`` is in, in bytes,
    read from the kernel (v1 ``memory.max_usage_in_bytes``, v2 ``memory.peak``).

    Only when that group's path holds ``group_name`` (a container's id: a ``pid`` the
    daemon gave from another pid namespace names some other process here); ``None`` when
    the group or its counter cannot be read.
    """
    try:
        groups = _own_groups((proc / str(pid) / "cgroup").read_text())
        mounts = _cgroup_mounts((proc / "self" / "mountinfo").read_text())
    except OSError:
        return None
    for mount in mounts:
        if mount.fstype == "cgroup" and "memory" in mount.options:
            group, counter = groups.get("memory"), "memory.max_usage_in_bytes"
        elif mount.fstype == "cgroup2":
            group, counter = groups.get(""), "memory.peak"
        else:
            continue
        folder = None if group is None or group_name not in group else _group_folder(mount, group)
        if folder is None:
            continue
        try:
            return int((folder / counter).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return None


def group_prefix() -> str:
    """``referee-<pidns>-<pid>-``: how this process's groups are named."""
    return f"referee-{_pid_namespace()}-{os.getpid()}-"


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _try_group(parent: Path) -> str | None:
    """Make and remove a probe group under ``parent``; ``None`` when that works."""
    probe = parent / f"{group_prefix()}{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot create a group in {parent}: {exc.strerror or exc}"
    with contextlib.suppress(OSError):
        probe.rmdir()
    return None


def _probe_v2(mounts: list[_Mount], groups: dict[str, str]) -> CgroupSupport | None:
    """The unified hierarchy, if mounted: usable, or unusable and why."""
    mount = next((m for m in mounts if m.fstype == "cgroup2"), None)
    if mount is None or "" not in groups:
        return None
    folder = _group_folder(mount, groups[""])
    if folder is None:
        return unavailable(f"cgroup v2: the referee's group {groups['']} is not visible")
    try:
        enabled = set((folder / "cgroup.subtree_control").read_text().split())
    except OSError as exc:
        return unavailable(f"cgroup v2: cannot read {exc.filename}: {exc.strerror or exc}")
    if not {"memory", "pids"} <= enabled:
        # Enabling them here is not ours to do: v2 forbids it while the group holds
        # processes, the referee's own among them.
        return unavailable(
            f"cgroup v2: memory and pids are not enabled in {folder}/cgroup.subtree_control"
        )
    failure = _try_group(folder)
    if failure is not None:
        return unavailable(f"cgroup v2: {failure}")
    return CgroupSupport(
        2,
        (Hierarchy("unified", folder),),
        swap_accounting=True,
        cpu="cpu" in enabled,
        reason=f"cgroup v2 under {folder}",
    )


def _probe_v1(mounts: list[_Mount], groups: dict[str, str]) -> CgroupSupport | None:
    """The v1 hierarchies, if memory is among them: usable, or unusable and why."""
    hierarchies = []
    for controller in _V1_CONTROLLERS:
        mount = next((m for m in mounts if m.fstype == "cgroup" and controller in m.options), None)
        if mount is None or controller not in groups:
            continue
        folder = _group_folder(mount, groups[controller])
        if folder is not None and folder.is_dir():
            hierarchies.append(Hierarchy(controller, folder))
    memory = next((h for h in hierarchies if h.controller == "memory"), None)
    if memory is None:
        return None
    usable = []
    for hierarchy in hierarchies:
        failure = _try_group(hierarchy.parent)
        if failure is None:
            usable.append(hierarchy)
        elif hierarchy is memory:
            return unavailable(f"cgroup v1: {failure}")
    return CgroupSupport(
        1,
        tuple(usable),
        swap_accounting=(memory.parent / "memory.memsw.limit_in_bytes").exists(),
        cpu=any(h.controller == "cpu" for h in usable),
        reason=f"cgroup v1 under {memory.parent}",
    )


def probe_cgroups(proc_self: Path = Path("/proc/self")) -> CgroupSupport:
    """Find the hierarchies the referee may make bot groups in, now (no cache: a
    :class:`~referee.sandbox.process.ProcessSandbox` probes once and keeps the result)."""
    try:
        mountinfo = (proc_self / "mountinfo").read_text()
        proc_cgroup = (proc_self / "cgroup").read_text()
    except OSError as exc:
        return unavailable(f"cannot read the process's cgroups: {exc}")
    mounts = _cgroup_mounts(mountinfo)
    if not mounts:
        return unavailable("no cgroup file system is mounted")
    groups = _own_groups(proc_cgroup)
    unified = _probe_v2(mounts, groups)
    if unified is not None and unified.works:
        return unified
    # A hybrid machine has both: v2 without the memory controller, v1 with it.
    legacy = _probe_v1(mounts, groups)
    if legacy is not None:
        return legacy
    return unified or unavailable("no cgroup memory controller is mounted")


# --------------------------------------------------------------------------- one bot


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _make_group(path: Path) -> None:
    """``mkdir`` in a cgroup file system; the kernel fills the folder with its files."""
    path.mkdir()


def _read_counter(path: Path, key: str) -> int | None:
    """The value of line ``key N`` in a flat-keyed cgroup file, ``None`` when absent."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


@dataclass
class BotCgroup:
    """One bot's group, in each hierarchy of ``support``; see the module docstring."""

    support: CgroupSupport
    name: str
    folders: tuple[Path, ...]
    notes: list[str] = field(default_factory=list)
    _frozen: bool = False

    @classmethod
    def create(
        cls,
        support: CgroupSupport,
        *,
        memory_bytes: int,
        pids: int,
        cpus: float,
        make_group: Callable[[Path], None] = _make_group,
    ) -> BotCgroup:
        """Make the groups and write the limits; ``InfrastructureError`` when that fails.

        The memory and pids limits are required; a CPU quota the kernel refuses (a parent
        with a smaller one) is noted and skipped. ``make_group`` makes one group's folder
        (the kernel's ``mkdir``; a test's fake hierarchy).
        """
        assert support.works
        name = f"{group_prefix()}{secrets.token_hex(4)}"
        folders: list[Path] = []
        group = cls(support, name, ())
        try:
            for hierarchy in support.hierarchies:
                folder = hierarchy.parent / name
                make_group(folder)
                folders.append(folder)
                group.folders = tuple(folders)
                group._limit(hierarchy.controller, folder, memory_bytes, pids, cpus)
        except OSError as exc:
            group.remove()
            where = f" ({exc.filename})" if exc.filename else ""
            raise InfrastructureError(
                f"cannot set up the bot's cgroup: {exc.strerror or exc}{where}"
            ) from exc
        return group

    def _limit(
        self, controller: str, folder: Path, memory_bytes: int, pids: int, cpus: float
    ) -> None:
        quota = max(_MIN_CPU_QUOTA_US, round(cpus * _CPU_PERIOD_US))
        if controller == "unified":
            _write(folder / "memory.max", str(memory_bytes))
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", "0")
            _write(folder / "pids.max", str(pids))
            if self.support.cpu and cpus > 0:
                self._best_effort(folder / "cpu.max", f"{quota} {_CPU_PERIOD_US}")
        elif controller == "memory":
            _write(folder / "memory.limit_in_bytes", str(memory_bytes))
            if self.support.swap_accounting:
                _write(folder / "memory.memsw.limit_in_bytes", str(memory_bytes))
            # Without swap accounting the kernel could still swap the bot out; say none.
            with contextlib.suppress(OSError):
                _write(folder / "memory.swappiness", "0")
        elif controller == "pids":
            _write(folder / "pids.max", str(pids))
        elif controller == "cpu" and cpus > 0:
            _write(folder / "cpu.cfs_period_us", str(_CPU_PERIOD_US))
            self._best_effort(folder / "cpu.cfs_quota_us", str(quota))

    def _best_effort(self, path: Path, value: str) -> None:
        try:
            _write(path, value)
        except OSError as exc:
            self.notes.append(f"no CPU quota: {path} refused {value!r}: {exc.strerror or exc}")

    def enter_argv(self) -> list[str]:
        """The argv prefix that joins the groups, then ``exec``s the argv that follows it."""
        # Run as root: only the system's own shell, never one found on the caller's PATH.
        shell = shutil.which("dash", path=_SYSTEM_BIN) or "/bin/sh"
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        return [shell, "-c", _ENTER_SCRIPT, "referee-cgroup", *procs, "--"]

    @property
    def _memory_folder(self) -> Path:
        controllers = [h.controller for h in self.support.hierarchies]
        return self.folders[controllers.index("memory" if "memory" in controllers else "unified")]

    def oom_kills(self) -> int:
        """How many processes of the group the kernel killed at the memory limit."""
        folder = self._memory_folder
        if self.support.version == 2:
            return _read_counter(folder / "memory.events", "oom_kill") or 0
        kills = _read_counter(folder / "memory.oom_control", "oom_kill")
        if kills is None:
            # Kernels before 4.13 have no counter: the limit was hit at least.
            with contextlib.suppress(OSError, ValueError):
                return min(1, int((folder / "memory.failcnt").read_text()))
            return 0
        return kills

    def hit_limit(self) -> bool:
        """True when the group reached its own memory limit: an OOM kill in it is the bot's.

        :meth:`oom_kills` counts a kill in the victim's group whichever limit ran out: its
        own, one above it (the referee's group, a container's) or the machine's. So the
        group's own limit is looked at apart. v2 counts it: ``oom`` in ``memory.events``.
        v1 has no such counter that works: ``memory.failcnt`` stays 0 when the swap limit
        (``memory.memsw.limit_in_bytes``, set with the memory limit) refuses first, and
        ``memory.memsw.failcnt`` stays 0 too (measured, kernel 6.18). What works is the
        high-water mark: a charge refused at the group's own limit leaves
        ``memory.max_usage_in_bytes`` (or its memsw twin) within one charge of that limit
        (:data:`_LIMIT_MARGIN`), which a group stopped by a smaller limit above it never
        reaches. Measured, v1: killed at its own 128 MiB, the mark is exactly 128 MiB; in
        a 200 MiB group under a 100 MiB parent, killed at the parent's limit, it is 100.2
        MiB. A group that came that close to its limit earlier in its life and was then
        killed from outside is still taken for the bot's, as is one stopped by a limit above
        it that is within the margin of its own. Unreadable: ``True``, as before the two
        were told apart.
        """
        folder = self._memory_folder
        if self.support.version == 2:
            hits = _read_counter(folder / "memory.events", "oom")
            return hits is None or hits > 0
        readable = False
        for prefix in ("memory.", "memory.memsw."):
            try:
                limit = int((folder / f"{prefix}limit_in_bytes").read_text())
                peak = int((folder / f"{prefix}max_usage_in_bytes").read_text())
            except (OSError, ValueError):
                continue
            readable = True
            if peak >= limit - _LIMIT_MARGIN:
                return True
        return not readable

    def _folder_of(self, controller: str) -> Path | None:
        for hierarchy, folder in zip(self.support.hierarchies, self.folders, strict=False):
            if hierarchy.controller in (controller, "unified"):
                return folder
        return None

    def pids_refused(self) -> int:
        """How often the group's process limit refused a new process (``max`` in
        ``pids.events``; 0 where there is no pids group or counter)."""
        folder = self._folder_of("pids")
        return (_read_counter(folder / "pids.events", "max") or 0) if folder else 0

    def kill_evidence(self) -> str:
        """What the kernel counted of the group's limits, in one line, for the text of a
        fault whose process was killed: whoever reads it can tell a kill at the memory
        limit, an out-of-memory kill from above, a refused fork and a kill from outside
        apart. v1: ``oom_kill`` and ``under_oom`` of ``memory.oom_control``,
        ``memory.failcnt``, the high-water mark against the limit; v2: ``memory.events``
        (``max``, ``oom``, ``oom_kill``); both: ``max`` of ``pids.events``. What is not
        readable is left out."""
        memory = self._memory_folder
        parts: list[str] = []
        if self.support.version == 2:
            for key in ("max", "oom", "oom_kill"):
                value = _read_counter(memory / "memory.events", key)
                if value is not None:
                    parts.append(f"memory.events {key} {value}")
        else:
            for key in ("oom_kill", "under_oom"):
                value = _read_counter(memory / "memory.oom_control", key)
                if value is not None:
                    parts.append(f"memory.oom_control {key} {value}")
            with contextlib.suppress(OSError, ValueError):
                parts.append(f"memory.failcnt {int((memory / 'memory.failcnt').read_text())}")
            with contextlib.suppress(OSError, ValueError):
                peak = int((memory / "memory.max_usage_in_bytes").read_text())
                limit = int((memory / "memory.limit_in_bytes").read_text())
                parts.append(f"peak {peak >> 20} of {limit >> 20} MiB")
        folder = self._folder_of("pids")
        refused = _read_counter(folder / "pids.events", "max") if folder else None
        if refused is not None:
            parts.append(f"pids.events max {refused}")
        return ", ".join(parts)

    def peak_memory(self) -> int | None:
        """The group's highest memory use so far in bytes (``None`` if the kernel has no
        counter: cgroup v2 gained ``memory.peak`` in Linux 5.19)."""
        folder = self._memory_folder
        name = "memory.peak" if self.support.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((folder / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _freezer_folder(self) -> Path | None:
        for hierarchy, folder in zip(self.support.hierarchies, self.folders, strict=False):
            if hierarchy.controller in ("freezer", "unified"):
                return folder
        return None

    @property
    def frozen(self) -> bool:
        """True while the group is frozen (or freezing)."""
        return self._frozen

    async def freeze(self) -> bool:
        """Stop every process of the group until :meth:`thaw`; ``False`` (and a note) when
        the kernel did not freeze it within a moment or there is no freezer. Never raises."""
        return await self._set_frozen(True)

    async def thaw(self) -> bool:
        """Let the group's processes run again; ``False`` (and a note) when that failed."""
        return await self._set_frozen(False)

    async def _set_frozen(self, frozen: bool) -> bool:
        folder = self._freezer_folder()
        if folder is None or not self.support.freezer:
            return False
        v2 = self.support.version == 2
        control, value = (
            ("cgroup.freeze", "1" if frozen else "0")
            if v2
            else (
                "freezer.state",
                "FROZEN" if frozen else "THAWED",
            )
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _FREEZE_TIMEOUT_S
        try:
            _write(folder / control, value)
            self._frozen = frozen
            while True:
                if v2:
                    done = _read_counter(folder / "cgroup.events", "frozen") == int(frozen)
                else:
                    done = (folder / "freezer.state").read_text().strip() == value
                if done:
                    return True
                if loop.time() > deadline:
                    self.notes.append(f"cgroup {self.name} not {value} after {_FREEZE_TIMEOUT_S} s")
                    return False
                await asyncio.sleep(0.005)
        except OSError as exc:
            self.notes.append(f"cannot write {value} to {folder / control}: {exc.strerror or exc}")
            return False

    def members(self) -> set[int]:
        """Pids of every process in any of the bot's groups."""
        pids: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                pids |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return pids

    def kill_members(self) -> bool:
        """SIGKILL every process in the groups once; ``False`` when there was none."""
        pids = self.members()
        if self.support.version == 2 and pids:
            with contextlib.suppress(OSError):
                _write(self.folders[0] / "cgroup.kill", "1")
        for pid in pids:
            _kill_member(pid, self.name)
        return bool(pids)

    async def kill_all(self, timeout: float = _KILL_TIMEOUT_S) -> bool:
        """SIGKILL the group's processes until none is left; ``False`` if some survive.

        A frozen group is thawed first: under v1 its tasks would not die frozen.
        """
        if self._frozen:
            await self.thaw()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.kill_members():
            if loop.time() > deadline:
                log.error("processes in cgroup %s survive SIGKILL: %s", self.name, self.members())
                return False
            await asyncio.sleep(0.01)
        return True

    def remove(self) -> bool:
        """Remove the (empty) groups; ``False`` when one is left, which is then logged."""
        left = []
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                left.append(f"{folder}: {exc.strerror or exc}")
        if left:
            log.error("cannot remove the bot's cgroup: %s", "; ".join(left))
        return not left


def _kill_member(pid: int, name: str) -> None:
    """SIGKILL ``pid`` if it is still in group ``name`` (see :func:`.pidfd.kill_if`)."""

    def in_group(pid: int) -> bool:
        try:
            text = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            return False
        return any(line.endswith("/" + name) for line in text.splitlines())

    kill_if(pid, in_group)


# --------------------------------------------------------------------------- leftovers


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_leftovers(support: CgroupSupport) -> list[Path]:
    """Remove groups left by dead referees of this pid namespace; returns what was removed.

    A referee that died (SIGKILL, a power cut of its worker) leaves its bots' groups behind,
    possibly with processes still in them: those are killed first. A bot dies with its
    referee (the parent-death signal, :func:`referee.sandbox.process._setpriv_argv`), but
    not what the bot forked without bubblewrap, nor a start the death cut inside
    bubblewrap's own setup, before bubblewrap arms the signal again (a few starts killed
    early do: docs/performance.md). A group whose referee pid is alive
    is left alone, even if that pid was reused by something else (an empty group costs
    nothing).
    """
    namespace = str(_pid_namespace())
    removed = []
    for hierarchy in support.hierarchies:
        try:
            entries = list(os.scandir(hierarchy.parent))
        except OSError:
            continue
        for entry in entries:
            match = _NAME.fullmatch(entry.name)
            if match is None or match.group(1) != namespace or not entry.is_dir():
                continue
            if _pid_alive(int(match.group(2))):
                continue
            group = BotCgroup(support, entry.name, (Path(entry.path),))
            # A dead referee's pooled bot may be frozen: frozen v1 tasks ignore SIGKILL.
            with contextlib.suppress(OSError):
                if hierarchy.controller == "freezer":
                    _write(Path(entry.path) / "freezer.state", "THAWED")
                elif hierarchy.controller == "unified":
                    _write(Path(entry.path) / "cgroup.freeze", "0")
            for _ in range(100):
                if not group.kill_members():
                    break
                time.sleep(0.01)
            if group.remove():
                removed.append(Path(entry.path))
    if removed:
        log.info("removed %d cgroups left by dead referees", len(removed))
    return removed
