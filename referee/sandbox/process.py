"""The process sandbox: a bot as a local process under cgroups, rlimits, a dropped uid and bwrap.

Layers, from the outside in::

    referee (maybe root)
     └─ sh -c ...          when cgroups work: joins the bot's own groups (memory incl. shared
        │                  memory and tmpfs, pids, CPU quota; see referee.sandbox.cgroups),
        │                  then execs the rest, so nothing of the bot ever runs outside them
        └─ setpriv ...     when root: the bot's own uid and gid, no supplementary groups;
           │               always: the parent-death signal, so the start dies with the referee
           └─ prlimit ...  rlimits: data segment, CPU seconds, file size, open files, no core,
              │            processes per uid (set after the uid drop, before anything else runs)
              └─ bwrap ... when installed and working: no network, own pid/ipc/uts/user/cgroup
                 │         namespaces and no nested user namespaces (``--disable-userns``),
                 │         only the runtime's system folders read-only, a read-only /dev, a
                 │         private size-limited /tmp and a small /dev/shm, the bot's folder
                 │         read-only at /bot, die with parent, and a seccomp filter
                 │         (``--seccomp``, :mod:`referee.sandbox.seccomp`) loaded just
                 │         before the bot runs
                 └─ sh -c  opens the stdout FIFO only the bot holds (bwrap keeps copies of
                    │      what it inherits: :mod:`referee.sandbox.stdout_fifo`), execs on
                    └─ the bot  cwd /bot, a clean environment, TMPDIR = HOME = /tmp

Between ``setpriv`` and ``prlimit`` one more ``sh -c`` checks that the referee is still its
parent (a referee that died before ``setpriv`` armed the signal ends the start there) and
sets the bot's ``oom_score_adj`` to +1000, so the kernel's OOM killer takes a bot before
anything else (the referee lowers its own where it may, and children inherit it:
:mod:`referee.sandbox.budget`). Without ``setpriv`` (not root, util-linux missing) only
bubblewrap's ``--die-with-parent`` ties a bot to its referee.

Without cgroups (not root and no delegated group, or no writable hierarchy) the uid drop
is done by ``subprocess``'s ``user=``/``group=`` instead of ``setpriv``, and memory is bounded
per process only: the start-up line (:meth:`ProcessSandbox.describe`) and ``referee doctor``
say so.

When the referee runs as root, every bot process gets its own unprivileged uid (and gid) from
a range (:data:`DEFAULT_UID_RANGE`), leased across all referee processes of the machine with a
lock file, because bubblewrap started by root with a mapped uid keeps root's file access, and
``RLIMIT_NPROC`` is ignored for root and counted per uid. The uid also makes the kill total:
every process of that uid belongs to this bot, even a ``setsid`` daemon outside its process
group (under bubblewrap the pid namespace catches those too).

Without bubblewrap the bot still gets the rlimits, the dropped uid (when root) and a private
scratch folder as ``TMPDIR``, but it can reach the network and read every world-readable file;
that is said once by each sandbox (a process keeps one) as a logged warning.

Measured on Debian 12 (kernel 6.x, bubblewrap 0.8.0, as root): unprivileged bubblewrap works
as a dropped uid because unprivileged user namespaces are enabled. Where they are not (sysctl
``kernel.unprivileged_userns_clone=0``, ``user.max_user_namespaces=0``, Ubuntu's AppArmor
restriction, Docker's default seccomp profile), a probe at the first start notices it and the
backend falls back to running without bubblewrap (``bwrap=None``) or refuses (``bwrap=True``).
A setuid-root bubblewrap is deliberately not supported.

Rlimits are set by util-linux's ``prlimit`` wrapper (thread-safe, unlike ``preexec_fn``, and
the referee may run in a Dask worker thread); without ``prlimit`` a ``preexec_fn`` sets them.
The rlimits cover bubblewrap too; ``pids`` gets two more for bwrap's own processes.

Memory has two limits. ``RLIMIT_DATA`` is per process and counts only private writable
memory: a bot hitting it sees an allocation fail (Python: ``MemoryError``, exit code 1).
The bot's memory cgroup counts everything its processes touch, shared mappings and tmpfs
files included (a bot held 2 GiB of ``MAP_SHARED`` memory under a 512 MiB ``RLIMIT_DATA``);
at its limit the kernel kills a process of the group, reported as ``ExitInfo.oom_killed``
("killed at the memory limit") when that was the bot. A kill by the OOM killer while the
group was within its own limit (memory ran out above it) is ``ExitInfo.outside_oom``: the
referee's failure, never the bot's (:mod:`referee.sandbox.budget`). ``Limits.cpus`` needs a
cgroup too.

Writable tmpfs mounts under bubblewrap are all size-limited: ``/tmp`` at ``Limits.tmp_mb``
and ``/dev/shm`` at most 16 MiB; ``/dev`` itself (a tmpfs as large as the host allows) is
read-only (a bot wrote 384 MiB to /dev/shm and 128 MiB to /dev before). Without ``--size``
(bubblewrap before 0.5) there is no /dev/shm to write to.

Zombies: bubblewrap's outer process may exit before reaping its pid-1 helper, which is then
reaped by the machine's init. Some inits reap late (a firecracker VM's init left dozens for
seconds under a busy tournament, enough to use up a test run's block of 50 uids) or never (a
container without ``--init``). A zombie with no thread left holds nothing but its pid, so a
uid held only by such zombies is lent again, after every uid with none: until it is reaped, a
zombie counts against the new bot's ``RLIMIT_NPROC``. A zombie thread-group leader whose
other threads still run is alive, and is killed like any live process.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import fcntl
import logging
import os
import pwd
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from referee.errors import (
    OUTSIDE_KILL,
    REFEREE_KILL,
    UNCOUNTED_KILL,
    InfrastructureError,
    UsageError,
)
from referee.folders import private_folder
from referee.sandbox.base import (
    SANDBOX_PATH,
    BotProcess,
    BotSpec,
    DirectReader,
    ExitInfo,
    Limits,
    Sandbox,
    bot_environment,
)
from referee.sandbox.budget import BOT_OOM_SCORE_ADJ
from referee.sandbox.cgroups import (
    BotCgroup,
    CgroupSupport,
    probe_cgroups,
    sweep_leftovers,
    unavailable,
)
from referee.sandbox.pidfd import kill_if
from referee.sandbox.seccomp import SeccompFilter, compile_filter
from referee.sandbox.staging import give_tree
from referee.sandbox.stdout_fifo import INSIDE_PATH, StdoutFifo

__all__ = [
    "BOT_MOUNT",
    "DEFAULT_UID_RANGE",
    "ON_PATH",
    "SANDBOX_PATH",
    "UIDS_ENV",
    "UID_LOCK_DIR",
    "BwrapStatus",
    "ProcessBotProcess",
    "ProcessSandbox",
    "UidLease",
    "UidPool",
    "default_uid_range",
    "find_bwrap",
    "kill_uid",
    "pids_of_uid",
    "probe_bwrap",
]

log = logging.getLogger(__name__)

DEFAULT_UID_RANGE = range(61000, 62000)
"""Uids (and gids of the same number) lent to bots when the referee runs as root."""

UIDS_ENV = "REFEREE_SANDBOX_UIDS"
"""Environment variable that narrows the uid range, e.g. ``61000-61099`` (both ends included).

Two referees on one machine already never share a uid (leases are locked); a range of its own
lets a test run or an operator tell which bot processes are whose."""


def default_uid_range() -> range:
    """:data:`DEFAULT_UID_RANGE`, or the range named by :data:`UIDS_ENV` when it is set."""
    text = os.environ.get(UIDS_ENV, "").strip()
    if not text:
        return DEFAULT_UID_RANGE
    first, sep, last = text.partition("-")
    try:
        if not sep:
            raise ValueError
        uids = range(int(first), int(last) + 1)
    except ValueError:
        raise UsageError(
            f"{UIDS_ENV}={text!r}: write the uid range as FIRST-LAST, e.g. 61000-61099"
        ) from None
    if not uids or uids.start < 1000:
        raise UsageError(f"{UIDS_ENV}={text!r}: the range must be non-empty and start at 1000+")
    return uids


BOT_MOUNT = "/bot"
"""Where the bot's folder (or its single file) appears under bubblewrap."""

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_ETC = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
)
# A JDK's configuration (its java.security, which javac and the JVM load at start) lives in
# /etc/java-<version>-openjdk, linked from /usr/lib/jvm: package files, no machine secrets.
_SYSTEM_ETC_GLOBS = ("/etc/java-*-openjdk",)
_WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
_SYSTEM_SHELLS = "/usr/bin:/bin"  # run as root: never a shell found on the caller's PATH
_BWRAP_PROCESSES = 2  # bwrap's monitor and its pid-1 reaper count against RLIMIT_NPROC
_MIB = 1024 * 1024
_SHM_MB = 16  # /dev/shm under bubblewrap: POSIX semaphores and small shared buffers
_STREAM_LIMIT = 2**16  # asyncio's default buffer limit, as for the docker backend
_PROBE_TIMEOUT_S = 20.0
_REAP_TIMEOUT_S = 10.0
_ORPHAN_GRACE_S = 0.5
_UNCONFINED_WARNING = (
    "bots run WITHOUT bubblewrap: rlimits%s only, no network and no file-system isolation (%s)"
)

_SIGNAL_REASONS = {
    signal.SIGXCPU: "the CPU time limit",
    signal.SIGXFSZ: "the file size limit",
    signal.SIGSEGV: "a segmentation fault",
    signal.SIGABRT: "an abort",
}


# --------------------------------------------------------------------------- uids


def _proc_status(pid: int | str) -> dict[str, str] | None:
    """The fields of ``/proc/<pid>/status``, or ``None`` when the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            lines = status.read().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _status_uids(fields: dict[str, str]) -> set[int]:
    """Real, effective, saved and file-system uid of a process."""
    return {int(part) for part in fields.get("Uid", "").split()}


def _is_zombie(fields: dict[str, str]) -> bool:
    return fields.get("State", "").startswith(("Z", "X"))


def _is_dead(fields: dict[str, str]) -> bool:
    """A zombie with no thread left: it holds a pid until reaped, and nothing else.

    A thread-group leader that exits while its other threads run is a zombie too, but its
    ``Threads`` count stays above 1 and those threads (absent from a listing of ``/proc``)
    still run: such a process is alive.
    """
    if not _is_zombie(fields):
        return False
    try:
        return int(fields.get("Threads", "1")) <= 1
    except ValueError:
        return False


def _processes() -> Iterator[tuple[int, dict[str, str]]]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _proc_status(entry.name)
            if fields is not None:
                yield int(entry.name), fields


def pids_of_uid(uid: int) -> list[int]:
    """Processes running with ``uid`` as any of their uids and not dead (see :func:`_is_dead`)."""
    return [
        pid for pid, fields in _processes() if uid in _status_uids(fields) and not _is_dead(fields)
    ]


def _uids_in_use() -> tuple[set[int], set[int]]:
    """The uids of live processes, and those held only by dead zombies (see the module
    docstring: where pid 1 reaps late or never, a uid may keep a zombie for a while)."""
    live: set[int] = set()
    dead: set[int] = set()
    for _, fields in _processes():
        (dead if _is_dead(fields) else live).update(_status_uids(fields))
    return live, dead - live


def _kill_pid_of_uid(pid: int, uid: int) -> None:
    """SIGKILL ``pid`` if it still runs as ``uid`` (see :func:`.pidfd.kill_if`)."""

    def runs_as_uid(pid: int) -> bool:
        fields = _proc_status(pid)
        return fields is not None and uid in _status_uids(fields)

    kill_if(pid, runs_as_uid)


async def kill_uid(uid: int, timeout: float = _REAP_TIMEOUT_S, *, spare: int = 0) -> bool:
    """SIGKILL every process of ``uid`` (but ``spare``) until none is left; ``False`` if
    some survive."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        pids = [pid for pid in pids_of_uid(uid) if pid != spare]
        if not pids:
            return True
        if loop.time() > deadline:
            log.error("processes of sandbox uid %d survive SIGKILL: %s", uid, pids)
            return False
        for pid in pids:
            _kill_pid_of_uid(pid, uid)
        await asyncio.sleep(0.01)


UID_LOCK_DIR = Path("/tmp") / "referee-sandbox-uids"
"""Where the uid locks of every referee of the machine live (see :class:`UidPool`); not
under ``tempfile.gettempdir()``, which each process's ``TMPDIR`` may move."""


@dataclass
class UidLease:
    """One uid lent to one bot process; :meth:`release` gives it back (idempotent)."""

    uid: int
    _lock_fd: int | None

    @property
    def gid(self) -> int:
        """The bot's gid: the same number as its uid, a group of its own."""
        return self.uid

    def release(self) -> None:
        """Unlock the uid for the next bot (closing the lock file drops the ``flock``)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


class UidPool:
    """Lends uids from a range, the lowest free one first, to one bot at a time.

    A uid is free when no lock holds it and no process runs with it. The lock is an ``flock``
    on ``<lock_dir>/<uid>``, so referee processes on one machine (local worker pool, several
    tournaments) never share a uid, and a crashed referee's locks vanish with it. The
    default folder is :data:`UID_LOCK_DIR`, the same for every referee of the machine
    whatever its ``TMPDIR``: two referees with lock folders of their own could lease one uid
    at once (each sees it free until the other's bot runs), and the first to clean up would
    SIGKILL the other's bot, which would read as a crash of that bot.
    """

    def __init__(self, uids: range | None = None, lock_dir: Path | None = None) -> None:
        uids = default_uid_range() if uids is None else uids
        if not uids or uids.start <= 0:
            raise UsageError(f"sandbox uid range must be non-empty and above 0, not {uids}")
        self.uids = uids
        self.lock_dir = lock_dir or UID_LOCK_DIR

    def _open_lock_dir(self) -> None:
        # A fixed name in the temp folder: a planted symlink or folder is refused there.
        private_folder(self.lock_dir)

    def acquire(self) -> UidLease:
        """Lease the lowest free uid; raises ``InfrastructureError`` when all are taken."""
        self._open_lock_dir()
        live, zombies = _uids_in_use()
        # A uid whose only processes are dead zombies is lent last: harmless, but each zombie
        # counts against RLIMIT_NPROC of that uid until it is reaped.
        order = [uid for uid in self.uids if uid not in zombies] + [
            uid for uid in self.uids if uid in zombies
        ]
        for uid in order:
            if uid in live or _has_passwd_entry(uid):
                continue
            path = self.lock_dir / str(uid)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return UidLease(uid, fd)
        raise InfrastructureError(
            f"no free sandbox uid in {self.uids.start}-{self.uids.stop - 1}: too many bots "
            "running at once, or processes of those uids are left over"
        )


def _has_passwd_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


# --------------------------------------------------------------------------- bubblewrap


@dataclass(frozen=True)
class BwrapStatus:
    """Whether bubblewrap works here for the sandbox user, and how."""

    path: str | None
    works: bool
    sized_tmpfs: bool
    reason: str
    disables_userns: bool = False
    seccomp: bool = False
    """True when this bubblewrap takes ``--seccomp FD`` (0.1.8 and later do)."""


_BWRAP_FLAGS = (
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--hostname",
    "bot",
    "--clearenv",
)

_NO_USERNS_FLAGS = ("--unshare-user", "--disable-userns")  # the second needs the first


class _Lookup(enum.Enum):
    """How bubblewrap is found when no path is given (a sentinel: ``None`` means none)."""

    ON_PATH = "on the PATH"


ON_PATH: Final = _Lookup.ON_PATH
"""``ProcessSandbox(bwrap_path=ON_PATH)``, the default: bubblewrap is :func:`find_bwrap`'s."""


def _bwrap_flags(disables_userns: bool) -> list[str]:
    return [*_BWRAP_FLAGS, *(_NO_USERNS_FLAGS if disables_userns else ())]


def _dev_mounts(sized: bool, shm_bytes: int) -> list[str]:
    """/proc, a read-only /dev and, where tmpfs sizes work, a small writable /dev/shm."""
    args = ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    if sized:
        args += ["--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    return args


def _system_binds() -> list[str]:
    """Read-only binds of the runtime's system folders; symlinked ones become symlinks."""
    import glob

    args: list[str] = []
    found = [path for pattern in _SYSTEM_ETC_GLOBS for path in sorted(glob.glob(pattern))]
    for path in (*_SYSTEM_DIRS, *_SYSTEM_ETC, *found):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def find_bwrap() -> str | None:
    """The ``bwrap`` on the referee's ``PATH``, else on :data:`SANDBOX_PATH`; ``None`` if none."""
    return shutil.which("bwrap") or shutil.which("bwrap", path=SANDBOX_PATH)


def probe_bwrap(
    uids: UidPool | None = None, *, path: str | _Lookup | None = ON_PATH
) -> BwrapStatus:
    """Probe whether bubblewrap (``path``, by default :func:`find_bwrap`'s) can build our
    sandbox, now (no cache: a :class:`ProcessSandbox` probes once and keeps the result).

    With ``uids`` (the referee is root) the probe runs as a uid leased from that pool:
    bubblewrap must work unprivileged, through user namespaces, for the bots' uids.
    """
    if path is ON_PATH:
        path = find_bwrap()
    if path is None:
        return BwrapStatus(None, False, False, "bwrap is not installed")
    if uids is None:
        return _probe_bwrap(path, None)
    lease = uids.acquire()
    try:
        return _probe_bwrap(path, lease.uid)
    finally:
        lease.release()


def _probe_bwrap(path: str, run_as: int | None) -> BwrapStatus:
    """Run ``true`` in the sandbox the bots get, with the same flags and mounts.

    ``--disable-userns`` (bubblewrap 0.8) is used when the help text lists it; should the
    kernel refuse it, the probe tries once more without and the status says so.
    """
    try:
        help_text = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S
        ).stdout
        sized = "--size" in help_text
        no_userns = "--disable-userns" in help_text
        probe = _run_probe(path, run_as, sized, no_userns)
        if probe.returncode != 0 and no_userns:
            retry = _run_probe(path, run_as, sized, False)
            if retry.returncode == 0:
                log.warning(
                    "bwrap --disable-userns fails here (%s): bots may create nested user "
                    "namespaces",
                    probe.stderr.strip() or probe.returncode,
                )
                probe, no_userns = retry, False
    except (OSError, subprocess.TimeoutExpired) as exc:
        return BwrapStatus(path, False, False, f"bwrap probe failed: {exc}")
    if probe.returncode != 0:
        who = "the referee's user" if run_as is None else f"unprivileged uid {run_as}"
        reason = (
            f"bwrap does not work for {who}: {probe.stderr.strip() or probe.returncode}; "
            "unprivileged user namespaces are probably disabled (sysctl "
            "kernel.unprivileged_userns_clone / user.max_user_namespaces, AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns, or a container's seccomp profile)"
        )
        return BwrapStatus(path, False, sized, reason)
    return BwrapStatus(
        path, True, sized, f"bubblewrap at {path}", no_userns, "--seccomp" in help_text
    )


def _run_probe(
    path: str, run_as: int | None, sized: bool, no_userns: bool
) -> subprocess.CompletedProcess[str]:
    tmp = ["--size", str(_MIB), "--tmpfs", "/tmp"] if sized else ["--tmpfs", "/tmp"]
    return subprocess.run(
        [
            path,
            *_bwrap_flags(no_userns),
            *_system_binds(),
            *_dev_mounts(sized, _MIB),
            *tmp,
            "--remount-ro",
            "/",
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=_PROBE_TIMEOUT_S,
        env={"PATH": SANDBOX_PATH},
        cwd="/",
        user=run_as,
        group=run_as,
        extra_groups=None if run_as is None else [],
    )


# --------------------------------------------------------------------------- limits


def _rlimits(limits: Limits, *, nproc: int | None) -> dict[int, tuple[int, int]]:
    """(soft, hard) per resource, clamped to what the referee itself may grant."""
    wanted = {
        resource.RLIMIT_DATA: (limits.memory_mb * _MIB,) * 2,
        # SIGXCPU at the soft limit (the bot may notice), SIGKILL a second later.
        resource.RLIMIT_CPU: (limits.cpu_seconds, limits.cpu_seconds + 1),
        resource.RLIMIT_FSIZE: (limits.file_size_mb * _MIB,) * 2,
        resource.RLIMIT_NOFILE: (limits.open_files,) * 2,
        resource.RLIMIT_CORE: (0, 0),
    }
    if nproc is not None:
        wanted[resource.RLIMIT_NPROC] = (nproc, nproc)
    clamped = {}
    for res, (soft, hard) in wanted.items():
        _, current_hard = resource.getrlimit(res)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        clamped[res] = (soft, hard)
    return clamped


_PRLIMIT_NAMES = {
    resource.RLIMIT_DATA: "data",
    resource.RLIMIT_CPU: "cpu",
    resource.RLIMIT_FSIZE: "fsize",
    resource.RLIMIT_NOFILE: "nofile",
    resource.RLIMIT_CORE: "core",
    resource.RLIMIT_NPROC: "nproc",
}


def _prlimit_argv(prlimit: str, rlimits: dict[int, tuple[int, int]]) -> list[str]:
    return [
        prlimit,
        *(f"--{_PRLIMIT_NAMES[res]}={soft}:{hard}" for res, (soft, hard) in rlimits.items()),
        "--",
    ]


# Raising one's own oom_score_adj needs no privilege; it is inherited by every child.
# The shell exports PWD, which the bot's environment must not gain. With a referee pid as
# its first argument, it first checks that the referee is still its parent (see
# _setpriv_argv); a start whose referee is gone ends there.
_OOM_FIRST_SCRIPT = (
    'if [ -n "$1" ] && [ "$PPID" != "$1" ]; then exit 125; fi; shift; '
    f"echo {BOT_OOM_SCORE_ADJ} >/proc/self/oom_score_adj || "
    '{ echo "referee: cannot set the bot\'s oom_score_adj" >&2; exit 125; }; '
    'unset PWD OLDPWD; exec "$@"'
)


def _oom_first_argv(parent: int | None = None) -> list[str]:
    """The argv prefix that makes the kernel's OOM killer take the bot first, then execs.

    The referee's own processes may have lowered theirs (:func:`.budget.protect_referee`),
    and children inherit it: without this a bot would be as protected as the referee.
    A shell of the system's own (dash, the cheapest to start) sets it before
    anything of the bot runs. With ``parent`` (the referee's pid), it exits at once unless
    that is still its parent (:func:`_setpriv_argv`).
    """
    shell = shutil.which("dash", path=_SYSTEM_SHELLS) or "/bin/sh"
    return [shell, "-c", _OOM_FIRST_SCRIPT, "referee-oom", "" if parent is None else str(parent)]


def _setpriv_argv(setpriv: str, lease: UidLease | None) -> list[str]:
    """Arm the parent-death signal (SIGKILL) and, with a ``lease``, drop from root to the
    bot's uid and gid, with no supplementary groups.

    Bubblewrap's ``--die-with-parent`` arms the same signal, but only once it has set up:
    a referee SIGKILLed during a start left the sandbox running, its shell waiting forever
    to open a stdout FIFO whose reader had died. Armed here, before anything of the bot,
    and followed by a check that the referee is still the parent (:func:`_oom_first_argv`),
    the start dies with a referee that dies before bubblewrap runs: before the arming, the
    referee is no longer the parent at the check; after it, the kernel kills the start.
    Bubblewrap's own setup still loses the signal for a moment before it arms it again,
    which no option reaches (this leaves far fewer starts running than before, not none:
    docs/performance.md); those are swept by the
    next referee (:func:`referee.sandbox.cgroups.sweep_leftovers`). Without bubblewrap,
    nothing else tied a bot to its referee. setpriv arms the signal after switching users
    (a switch of uid disarms it), and it stays armed through the ``exec`` of programs that
    gain no privilege, which is all of them here. Where setpriv did not run before (not
    root, or no cgroups), it costs one ``exec`` more per start.
    """
    switch = (
        [] if lease is None else [f"--reuid={lease.uid}", f"--regid={lease.gid}", "--clear-groups"]
    )
    return [setpriv, *switch, "--pdeathsig=KILL", "--"]


def _set_rlimits_in_child(rlimits: dict[int, tuple[int, int]]) -> Callable[[], None]:
    """A ``preexec_fn`` for machines without ``prlimit`` (not safe with threads, hence last)."""

    def apply() -> None:
        for res, limit in rlimits.items():
            resource.setrlimit(res, limit)

    return apply


# --------------------------------------------------------------------------- files


def _blocking_ancestor(path: Path) -> Path | None:
    """The first folder on the way to ``path`` that a stranger cannot pass, or ``None``."""
    for folder in [*reversed(path.parents), path]:
        mode = folder.stat().st_mode
        needed = stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH
        if not mode & needed:
            return folder
    return None


def _remove_tree(path: Path) -> None:
    """Remove a scratch folder whatever the bot did to its permissions.

    A bot may leave folders without write or search permission, which stops the removal
    when the referee is not root (root ignores the modes); then every folder of the tree is
    opened up by descriptor (:func:`_open_up`) and the removal tried once more.
    """
    failed: list[str] = []

    def note(func: Callable[[str], object], name: str, exc: BaseException) -> None:
        if not isinstance(exc, FileNotFoundError):
            failed.append(name)

    def strict(func: Callable[[str], object], name: str, exc: BaseException) -> None:
        if not isinstance(exc, FileNotFoundError):
            raise exc

    _rmtree(path, note)
    if not failed:
        return
    with contextlib.suppress(OSError):
        parent = os.open(path.parent, _O_STEP)
        try:
            _open_up(parent, path.name)
        finally:
            os.close(parent)
    _rmtree(path, strict)


_OnError = Callable[[Callable[[str], object], str, BaseException], None]


def _rmtree(path: Path, handler: _OnError) -> None:
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=handler)
    else:
        shutil.rmtree(path, onerror=lambda func, name, info: handler(func, name, info[1]))


_O_STEP = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_up(parent: int, name: str) -> None:
    """Give the owner rwx on the folder ``name`` in the folder ``parent`` (a descriptor) and
    on every folder in it, by descriptor only.

    The tree is the bot's: while it is removed, a process the bot left behind may replace a
    folder in it with a symlink, and ``chmod`` by path would follow that link to a folder
    of its choosing (as in :mod:`referee.folders`). So each folder is opened relative to
    the one holding it with ``O_NOFOLLOW | O_DIRECTORY`` (a symlink is refused: ``ELOOP``)
    and its mode set on the descriptor; a folder that cannot be opened up is left as it is.
    """
    _owner_rwx(parent, name)
    fd = os.open(name, _O_FOLDER, dir_fd=parent)
    try:
        for entry in os.listdir(fd):
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                    _open_up(fd, entry)
    finally:
        os.close(fd)


def _owner_rwx(parent: int, name: str) -> None:
    """``fchmod`` 0700 the folder ``name`` in ``parent`` (a descriptor), never following a
    symlink.

    ``fchmod`` needs a descriptor opened for reading, which a folder without read
    permission does not give its (unprivileged) owner; then the folder is opened as a path
    only (``O_PATH``, no permission needed) and its mode set through the kernel's link to
    that descriptor (``/proc/self/fd/N`` names the very inode opened, not a path looked up
    again).
    """
    try:
        fd = os.open(name, _O_FOLDER, dir_fd=parent)
    except PermissionError:
        fd = os.open(name, _O_STEP, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{fd}", 0o700)
        finally:
            os.close(fd)
        return
    try:
        os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _sweep_files_of_uid(uid: int) -> None:
    """Remove what a bot without bubblewrap left in the machine's world-writable folders."""
    for folder in _WORLD_WRITABLE:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in os.scandir(folder):
                with contextlib.suppress(FileNotFoundError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        _remove_tree(Path(entry.path))
                    else:
                        os.unlink(entry.path)


# --------------------------------------------------------------------------- the process


class _BotProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol plus an event for the moment the process itself exits.

    ``Process.wait()`` also waits until every pipe is closed, which a child that inherited
    stdout can put off forever; the referee needs to know when the bot ended.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()
        self._reader_limit = limit

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # Direct readers in place of asyncio's (no data is passed on before this returns).
        assert isinstance(transport, asyncio.SubprocessTransport)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            pipe = transport.get_pipe_transport(fd)
            if pipe is not None:
                reader = DirectReader(limit=self._reader_limit)
                reader.set_transport(pipe)
                setattr(self, name, reader)

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class ProcessBotProcess(BotProcess):
    """A bot started by :class:`ProcessSandbox`.

    ``pid`` is the process the referee started (bubblewrap or the bot itself) and leads its
    process group; ``uid`` is the bot's own uid when the referee dropped root, else ``None``;
    ``cgroup`` its own cgroup when the machine offers one, else ``None``.
    """

    def __init__(
        self,
        spec: BotSpec,
        transport: asyncio.SubprocessTransport,
        protocol: _BotProtocol,
        *,
        lease: UidLease | None,
        scratch: Path | None,
        bwrap: bool,
        notes: list[str],
        cgroup: BotCgroup | None = None,
        fifo: StdoutFifo | None = None,
        stdout: asyncio.StreamReader | None = None,
    ) -> None:
        stdout = stdout or protocol.stdout
        assert stdout is not None and protocol.stderr is not None
        super().__init__(spec=spec, stdout=stdout, stderr=protocol.stderr, notes=notes)
        self._fifo = fifo
        self._transport = transport
        self._protocol = protocol
        self._stdin = protocol.stdin
        self._lease = lease
        self._scratch = scratch
        self.bwrap = bwrap
        self.cgroup = cgroup
        self._killed = False
        self._exit: ExitInfo | None = None

    @property
    def pid(self) -> int:
        """Pid (and process group id) of the started process."""
        return self._transport.get_pid()

    @property
    def uid(self) -> int | None:
        """The bot's dedicated uid (``None`` when the referee did not drop root)."""
        return self._lease.uid if self._lease is not None else None

    @property
    def scratch(self) -> Path | None:
        """The host folder used as ``TMPDIR`` (``None`` under bubblewrap: /tmp is a tmpfs)."""
        return self._scratch

    async def write(self, data: bytes) -> None:
        """Write to the bot's stdin; ``BrokenPipeError``/``ConnectionResetError`` once gone.

        Blocks while the pipe is full (a bot that does not read): the caller's time
        control bounds it.
        """
        stdin = self._stdin
        if stdin is None or stdin.is_closing() or self._protocol.exited.is_set():
            raise BrokenPipeError(f"bot {self.spec.name!r} is gone (stdin closed)")
        stdin.write(data)
        await stdin.drain()

    async def close_stdin(self) -> None:
        """Close the bot's stdin so it reads end of file. Never raises."""
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            return
        stdin.close()
        with contextlib.suppress(ConnectionError):
            await stdin.wait_closed()

    async def kill(self) -> None:
        """SIGKILL the process group, every process of the bot's uid and of its cgroup.

        Under bubblewrap, killing bwrap (the group leader) takes its pid namespace down, so
        a ``setsid`` daemon dies too; the uid sweep covers the case without bubblewrap, and
        the cgroup every process the bot started, whatever its uid. A frozen bot is thawed
        first (frozen tasks of a v1 cgroup do not die). Never raises; a no-op once
        :meth:`cleanup` ended, when the uid may already serve another bot.
        """
        if self._exit is not None:
            return
        await self.thaw()
        if self._transport.get_returncode() is None:
            self._killed = True
            if self._lease is not None and self.bwrap:
                # The bot and bubblewrap's pid-1 helper first: the outer bwrap then reaps
                # the helper and exits. Killed first, it would orphan the helper, whose
                # zombie some machines' pid 1 never reaps, keeping the uid busy for good.
                await kill_uid(self._lease.uid, _ORPHAN_GRACE_S, spare=self.pid)
                await self.wait(_ORPHAN_GRACE_S)
            # The leader is not reaped yet, so its pid still names our process group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        if self._lease is not None:
            await kill_uid(self._lease.uid)
        if self.cgroup is not None:
            await self.cgroup.kill_all()

    async def wait(self, timeout: float | None = None) -> ExitInfo | None:
        """Wait for the started process to end; ``None`` if still running after ``timeout``.

        This is the process, not its pipes: an orphan still holding stdout does not delay it.
        """
        try:
            await asyncio.wait_for(self._protocol.exited.wait(), timeout)
        except TimeoutError:
            return None
        return self._exit_info()

    async def freeze(self) -> None:
        """Freeze the bot's cgroup (a no-op without a cgroup freezer). Never raises."""
        if self.cgroup is not None and self.cgroup.support.freezer and self._exit is None:
            await self.cgroup.freeze()

    async def thaw(self) -> None:
        """Thaw the bot's cgroup if it is frozen. Never raises."""
        if self.cgroup is not None and self.cgroup.frozen:
            await self.cgroup.thaw()

    async def peak_memory(self) -> int | None:
        """From the bot's memory cgroup: every process of the bot, shared memory included."""
        return self.cgroup.peak_memory() if self.cgroup is not None else None

    async def cleanup(self) -> ExitInfo:
        """Kill, reap, close the pipes, remove the scratch folder and cgroup, free the uid."""
        if self._exit is not None:
            return self._exit
        try:
            await self.kill()
            if await self.wait(_REAP_TIMEOUT_S) is None:
                raise InfrastructureError(
                    f"bot {self.spec.name!r} (pid {self.pid}) did not die after SIGKILL"
                )
            if self._lease is not None:
                await kill_uid(self._lease.uid)
                if not self.bwrap:
                    _sweep_files_of_uid(self._lease.uid)
            self._exit = self._exit_info()
        finally:
            # Closes the read pipes too, even if a stray process held their other end.
            self._transport.close()
            if self._fifo is not None:
                self._fifo.close()
            if self._scratch is not None:
                _remove_tree(self._scratch)
                self._scratch = None
            if self.cgroup is not None:
                # Empty by now (kill() emptied it); what is left is logged by remove().
                self.cgroup.kill_members()
                self.cgroup.remove()
            if self._lease is not None and not pids_of_uid(self._lease.uid):
                self._lease.release()
        return self._exit

    def _exit_info(self) -> ExitInfo:
        if self._exit is not None:
            return self._exit  # the cgroup, and its OOM counter, may be gone
        returncode = self._transport.get_returncode()
        assert returncode is not None
        sig: int | None = None
        via = ""
        if returncode < 0:
            sig = -returncode
        elif self.bwrap and returncode > 128 and (returncode - 128) in signal.valid_signals():
            # bubblewrap passes a signal death on as exit status 128 + signal number.
            sig = returncode - 128
            via = f" (bubblewrap exit status {returncode})"
        refused = self._pids_refused()
        if sig is None:
            return ExitInfo(
                returncode=returncode, detail=f"exit code {returncode}{refused}" if refused else ""
            )
        name = signal.Signals(sig).name if sig in signal.valid_signals() else f"signal {sig}"
        evidence = f"; {self.cgroup.kill_evidence()}" if self.cgroup is not None else ""
        if sig == signal.SIGKILL and self._killed:
            detail = f"{name}: {REFEREE_KILL}"
        elif sig == signal.SIGKILL and self.cgroup is not None and self.cgroup.oom_kills():
            if not self.cgroup.hit_limit():
                # Killed for memory that ran out above the bot's own limit: ours (budget.py).
                return ExitInfo(
                    returncode=returncode,
                    signal=sig,
                    outside_oom=True,
                    detail=f"{name}: killed by the kernel's out-of-memory killer within "
                    f"its own limit{via}{evidence}",
                )
            return ExitInfo(
                returncode=returncode,
                signal=sig,
                oom_killed=True,
                detail=f"{name}: killed at the memory limit{via}{evidence}",
            )
        elif sig == signal.SIGKILL and self.cgroup is None:
            # No counter: the kernel's OOM killer and the bot's own SIGKILL look the same.
            detail = f"{name}: {UNCOUNTED_KILL}"
        elif sig == signal.SIGKILL:
            # Not the referee's kill, no OOM kill counted: another process (the bot's own,
            # a root process, whoever shares its uid), the CPU-seconds hard limit.
            detail = f"{name}: {OUTSIDE_KILL}"
        elif sig in _SIGNAL_REASONS:
            detail = f"{name}: {_SIGNAL_REASONS[signal.Signals(sig)]}"
        else:
            detail = name
        return ExitInfo(returncode=returncode, signal=sig, detail=detail + via + evidence + refused)

    def _pids_refused(self) -> str:
        """A note when the bot's process limit refused it a process (``pids.events``)."""
        hits = self.cgroup.pids_refused() if self.cgroup is not None else 0
        if not hits:
            return ""
        times = "once" if hits == 1 else f"{hits} times"
        return f" (its process limit refused it a new process {times})"


# --------------------------------------------------------------------------- the backend


@dataclass
class _Launch:
    """What one bot's start has composed and made so far: the command, and the resources
    to give back (:meth:`undo`) when the start fails half-way."""

    lease: UidLease | None
    scratch: Path | None = None
    cgroup: BotCgroup | None = None
    program_fd: int | None = None
    """The seccomp program for bubblewrap; closed by the caller once the child has it."""
    fifo: StdoutFifo | None = None
    argv: list[str] = field(default_factory=list)
    cwd: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""
    preexec: Callable[[], None] | None = None
    switch_user: UidLease | None = None
    """The uid the child takes as it starts (``None``: it starts as it is, or setpriv does)."""

    def undo(self) -> None:
        """Give back what the start made: FIFOs, cgroup, scratch folder, the uid."""
        if self.fifo is not None:
            self.fifo.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.scratch is not None:
            _remove_tree(self.scratch)
        if self.lease is not None:
            self.lease.release()


class ProcessSandbox(Sandbox):
    """Run bots as local processes: cgroups and bubblewrap where they work, rlimits, and a
    dropped uid when root.

    ``bwrap``: ``None`` uses bubblewrap when it is installed and works (else warns once and
    runs without), ``True`` requires it, ``False`` never uses it. ``cgroups`` likewise for a
    cgroup per bot (``None``: when the machine offers one, see :meth:`cgroup_support`), and
    ``seccomp`` for the seccomp filter under bubblewrap (``None``: when libseccomp is there,
    else this sandbox warns once; see :meth:`seccomp_filter`).
    ``uid_range`` and ``lock_dir`` configure the uids lent to bots when the referee is root;
    ``scratch_root`` is where scratch folders go when there is no bubblewrap tmpfs.

    What the machine offers is probed once per sandbox, at the first need, and kept: the
    bubblewrap at ``bwrap_path`` (by default the one on the ``PATH``; ``None``: there is
    none), and the cgroups :func:`~referee.sandbox.cgroups.probe_cgroups` finds, unless
    ``cgroup_support`` says which there are. A process keeps one sandbox for its life (the
    worker, a command), so nothing is probed twice; the warnings about what is missing are
    said once by each sandbox.
    """

    name = "process"

    def __init__(
        self,
        *,
        bwrap: bool | None = None,
        cgroups: bool | None = None,
        seccomp: bool | None = None,
        uid_range: range | None = None,
        lock_dir: Path | None = None,
        scratch_root: Path | None = None,
        bwrap_path: str | _Lookup | None = ON_PATH,
        cgroup_support: CgroupSupport | None = None,
    ) -> None:
        self._want_bwrap = bwrap
        self._want_cgroups = cgroups
        self._want_seccomp = seccomp
        self._bwrap_path = bwrap_path
        self._bwrap_found: BwrapStatus | None = None
        self._cgroups_found = cgroup_support
        self._filter: SeccompFilter | None = None
        # Starts prepare in worker threads (asyncio.to_thread): one probe of each kind.
        self._probing = threading.Lock()
        self._warned_unconfined = False
        self._warned_no_filter = False
        self._uids = UidPool(uid_range, lock_dir) if os.geteuid() == 0 else None
        self._scratch_root = scratch_root
        self._prlimit = shutil.which("prlimit") or shutil.which("prlimit", path=SANDBOX_PATH)
        self._setpriv = shutil.which("setpriv") or shutil.which("setpriv", path=SANDBOX_PATH)
        self._swept = False

    @property
    def drops_privileges(self) -> bool:
        """True when bots run under uids of their own (the referee is root)."""
        return self._uids is not None

    def bwrap_status(self) -> BwrapStatus:
        """Whether bubblewrap works here for the bots' user, probed once (:func:`probe_bwrap`).

        As root the probe runs as a uid of the bots' pool: what counts is whether
        bubblewrap works unprivileged, for them.
        """
        with self._probing:
            if self._bwrap_found is None:
                self._bwrap_found = probe_bwrap(self._uids, path=self._bwrap_path)
            return self._bwrap_found

    def _bwrap(self) -> BwrapStatus | None:
        """The bubblewrap to use, or ``None``; warns once (per sandbox) when there is none."""
        if self._want_bwrap is False:
            status = None
            reason = "disabled by configuration"
        else:
            found = self.bwrap_status()
            if found.works:
                return found
            if self._want_bwrap:
                raise InfrastructureError(f"bubblewrap is required but unusable: {found.reason}")
            status, reason = None, found.reason
        if not self._warned_unconfined:
            self._warned_unconfined = True
            uid_note = " and a dedicated uid" if self.drops_privileges else ""
            log.warning(_UNCONFINED_WARNING, uid_note, reason)
        return status

    def cgroup_support(self) -> CgroupSupport:
        """The cgroups bots get from this sandbox; ``InfrastructureError`` if required and none.

        As root the uid drop must happen after the bot joined its groups, which takes
        util-linux's ``setpriv``; without it there are no cgroups.
        """
        if self._want_cgroups is False:
            support = unavailable("disabled by configuration")
        else:
            with self._probing:
                if self._cgroups_found is None:
                    self._cgroups_found = probe_cgroups()
                support = self._cgroups_found
            if support.works and self._uids is not None and self._setpriv is None:
                support = unavailable("setpriv (util-linux) is not installed")
            if not support.works and self._want_cgroups:
                raise InfrastructureError(f"cgroups are required but unusable: {support.reason}")
        return support

    def seccomp_filter(self) -> SeccompFilter:
        """The filter bots get under bubblewrap, compiled once for this sandbox.

        ``InfrastructureError`` when it is required (``seccomp=True``) and cannot be built.
        """
        with self._probing:
            if self._filter is None:
                if self._want_seccomp is False:
                    self._filter = SeccompFilter(False, reason="disabled by configuration")
                else:
                    self._filter = compile_filter()
            found = self._filter
        if not found.works and self._want_seccomp:
            raise InfrastructureError(
                f"the seccomp filter is required but unusable: {found.reason}"
            )
        return found

    def _bot_filter(self, status: BwrapStatus) -> bytes | None:
        """The BPF program for a bot under ``status``'s bubblewrap; warns once when none."""
        found = self.seccomp_filter()
        reason = found.reason
        if found.works and not status.seccomp:
            reason = f"{status.path} has no --seccomp option"
        elif found.works:
            return found.program
        if not self._warned_no_filter and self._want_seccomp is not False:
            self._warned_no_filter = True
            log.warning("bots run WITHOUT a seccomp filter: %s", reason)
        return None

    def _describe_filter(self, status: BwrapStatus | None) -> str:
        found = self.seccomp_filter()
        if status is None:
            return "no seccomp filter (it needs bubblewrap)"
        if found.works and not status.seccomp:
            return f"NO seccomp filter ({status.path} has no --seccomp option)"
        return found.describe()

    def describe(self) -> str:
        """One line on what the bots are confined by."""
        try:
            status = self._bwrap()
            cgroups = self.cgroup_support().describe()
            seccomp = self._describe_filter(status)
        except InfrastructureError as exc:
            return f"process sandbox: {exc}"
        uid = (
            f", uids {self._uids.uids.start}-{self._uids.uids.stop - 1}"
            if self._uids is not None
            else ", the referee's own uid"
        )
        if status is None:
            return (
                f"process sandbox without bubblewrap: rlimits{uid}, {cgroups}, {seccomp}; "
                "NO network isolation"
            )
        return (
            "process sandbox: bubblewrap (no network, read-only system folders, private /tmp, "
            f"own pid namespace), {seccomp}, rlimits{uid}, {cgroups}"
        )

    def _prepare(self) -> tuple[BwrapStatus | None, CgroupSupport, bytes | None]:
        """Bubblewrap, cgroups and the seccomp program to use; the first time, sweep dead
        referees' groups."""
        status = self._bwrap()
        support = self.cgroup_support()
        program = self._bot_filter(status) if status is not None else None
        if support.works and not self._swept:
            self._swept = True
            sweep_leftovers(support)
        return status, support, program

    async def prepare(self) -> None:
        """Probe bubblewrap, cgroups and seccomp, and sweep dead referees' groups, now."""
        await asyncio.to_thread(self._prepare)

    async def start(self, bot: BotSpec, limits: Limits) -> ProcessBotProcess:
        """Start ``bot`` under ``limits``.

        Raises ``UsageError`` when the bot's folder is out of the sandbox user's reach and
        ``InfrastructureError`` when the process cannot be started.
        """
        status, support, program = await asyncio.to_thread(self._prepare)
        launch = _Launch(self._uids.acquire() if self._uids is not None else None)
        try:
            self._compose(launch, bot, limits, status, support, program)
            switch_user, fifo = launch.switch_user, launch.fifo
            loop = asyncio.get_running_loop()
            transport, protocol = await loop.subprocess_exec(
                lambda: _BotProtocol(_STREAM_LIMIT, loop),
                *launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE if fifo is None else asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                cwd=launch.cwd,
                env=launch.env,
                start_new_session=True,
                preexec_fn=launch.preexec,
                user=None if switch_user is None else switch_user.uid,
                group=None if switch_user is None else switch_user.gid,
                extra_groups=None if switch_user is None else [],
                pass_fds=() if launch.program_fd is None else (launch.program_fd,),
            )
            stdout = None if fifo is None else await fifo.open_reader(_STREAM_LIMIT)
        except BaseException as exc:
            launch.undo()
            if isinstance(exc, OSError):
                raise InfrastructureError(f"cannot start bot {bot.name!r}: {exc}") from exc
            raise
        finally:
            if launch.program_fd is not None:
                os.close(launch.program_fd)  # the child has its own copy; bwrap reads it once
        cgroup = launch.cgroup
        return ProcessBotProcess(
            bot,
            transport,
            protocol,
            lease=launch.lease,
            scratch=launch.scratch,
            bwrap=status is not None,
            notes=[launch.note, *(cgroup.notes if cgroup is not None else ())],
            cgroup=cgroup,
            fifo=fifo,
            stdout=stdout,
        )

    def _compose(
        self,
        launch: _Launch,
        bot: BotSpec,
        limits: Limits,
        status: BwrapStatus | None,
        support: CgroupSupport,
        program: bytes | None,
    ) -> None:
        """Fill ``launch`` with the command that starts ``bot``: its argv (bubblewrap or
        not, rlimits, the OOM score, the cgroup), folder, environment and the uid switch,
        making the scratch folder, FIFOs, seccomp program and cgroup it needs on the way
        (``launch`` keeps each as soon as it exists, for :meth:`_Launch.undo`)."""
        lease = launch.lease
        uid = lease.uid if lease is not None else os.geteuid()
        if lease is not None:
            self._check_reachable(bot, lease.uid)
            if bot.writable:
                give_tree(bot.folder, lease.uid, lease.gid)
        if status is None or not status.sized_tmpfs:
            launch.scratch = self._make_scratch(lease)
        pids = limits.pids + (_BWRAP_PROCESSES if status is not None else 0)
        rlimits = _rlimits(limits, nproc=pids if lease is not None else None)
        if status is not None:
            if program is not None:
                launch.program_fd = _program_fd(program)
            owner = None if lease is None else (lease.uid, lease.gid)
            launch.fifo = StdoutFifo.create(owner=owner)
            argv = self._bwrap_argv(
                bot, limits, status, launch.scratch, launch.program_fd, launch.fifo
            )
            launch.env = {"PATH": SANDBOX_PATH}
            launch.note = f"process sandbox: bubblewrap, uid {uid}"
            if launch.program_fd is not None:
                launch.note += ", seccomp filter"
        else:
            assert launch.scratch is not None
            argv, launch.cwd = list(bot.command), str(bot.folder)
            launch.env = bot_environment(str(launch.scratch))
            launch.note = f"process sandbox: no bubblewrap, uid {uid}"
        if self._prlimit is not None:
            argv = _prlimit_argv(self._prlimit, rlimits) + argv
        else:
            launch.preexec = _set_rlimits_in_child(rlimits)
        setpriv = self._setpriv
        argv = _oom_first_argv(os.getpid() if setpriv is not None else None) + argv
        launch.switch_user = lease
        if support.works:
            launch.cgroup = BotCgroup.create(
                support, memory_bytes=limits.memory_mb * _MIB, pids=pids, cpus=limits.cpus
            )
            if lease is not None:
                launch.switch_user = None  # the shell must still be root to join the groups
        if setpriv is not None:
            argv = _setpriv_argv(setpriv, None if launch.switch_user else lease) + argv
        else:  # cgroup_support() refuses groups to a referee that switches users without it
            assert launch.switch_user is lease
        if launch.cgroup is not None:
            argv = launch.cgroup.enter_argv() + argv
            launch.note += f", {launch.cgroup.name}"
        launch.argv = argv

    def _check_reachable(self, bot: BotSpec, uid: int) -> None:
        target = bot.folder / bot.single_file if bot.single_file else bot.folder
        try:
            blocker = _blocking_ancestor(target.resolve())
        except FileNotFoundError:
            raise UsageError(f"bot {bot.name!r}: {target} does not exist") from None
        if blocker is not None:
            raise UsageError(
                f"bot {bot.name!r}: {target} is out of reach of the sandbox user (uid {uid}): "
                f"{blocker} is not open to other users; stage the bot with stage_bot() into "
                "a folder everyone may enter"
            )

    def _make_scratch(self, lease: UidLease | None) -> Path:
        scratch = Path(tempfile.mkdtemp(prefix="referee-scratch-", dir=self._scratch_root))
        if lease is not None:
            # Through a descriptor of the folder mkdtemp made, never the path (folders.py).
            fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fchown(fd, lease.uid, lease.gid)
            finally:
                os.close(fd)
        return scratch

    def _bwrap_argv(
        self,
        bot: BotSpec,
        limits: Limits,
        status: BwrapStatus,
        scratch: Path | None,
        program_fd: int | None,
        fifo: StdoutFifo,
    ) -> list[str]:
        assert status.path is not None
        env = bot_environment("/tmp")
        argv = [status.path, *_bwrap_flags(status.disables_userns)]
        if program_fd is not None:
            argv += ["--seccomp", str(program_fd)]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += _system_binds()
        shm_mb = max(1, min(limits.tmp_mb, _SHM_MB))
        argv += _dev_mounts(status.sized_tmpfs, shm_mb * _MIB)
        if status.sized_tmpfs:
            # tmpfs reads size 0 as "no limit": never pass it.
            argv += ["--size", str(max(1, limits.tmp_mb) * _MIB), "--tmpfs", "/tmp"]
        else:
            assert scratch is not None
            argv += ["--bind", str(scratch), "/tmp"]
        if bot.single_file:
            name = bot.single_file
            argv += ["--ro-bind", str(bot.folder / name), f"{BOT_MOUNT}/{name}"]
        else:
            argv += ["--bind" if bot.writable else "--ro-bind", str(bot.folder), BOT_MOUNT]
        argv += ["--ro-bind", str(fifo.path), INSIDE_PATH]
        argv += ["--remount-ro", "/", "--chdir", BOT_MOUNT, "--", *fifo.shim(), *bot.command]
        return argv


def _program_fd(program: bytes) -> int:
    """A memory file holding the seccomp program, at offset 0, for the child to inherit."""
    fd = os.memfd_create("referee-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
