"""The system calls bots may not make, and the seccomp filter that denies them under bubblewrap.

Both sandboxes deny the same list (:data:`DENIALS`): the process sandbox through the BPF
program compiled here by libseccomp (the ``pyseccomp`` binding) and handed to bubblewrap's
``--seccomp FD``; the Docker sandbox through a profile built from the same list
(:mod:`referee.sandbox.docker_seccomp`). Every denial answers ``EPERM``, as a kernel that
refuses an unprivileged caller would: a bot that probes sees an error it can handle, the
referee never sees a process killed by ``SIGSYS``. What is denied, and why:

- **io_uring** (``io_uring_setup``/``_enter``/``_register``): a second way into most of the
  kernel, the source of many of its recent exploits; no runtime a bot uses needs it.
- **perf_event_open**: hardware counters, a fine timing side channel and attack surface.
- **userfaultfd**: stops the kernel at a page fault mid-copy, the usual tool to win a race.
- **the kernel keyrings** (``keyctl``, ``add_key``, ``request_key``): state outside every
  namespace and folder the sandbox gives a bot.
- **ptrace, process_vm_readv/writev**: reading or steering another process's memory.
- **bpf**: loading programs into the kernel.
- **sockets of the families AF_VSOCK, AF_NETLINK, AF_ALG** (``socket`` and ``socketpair``):
  vsock reaches a virtual machine's host whatever ``--unshare-net`` says; netlink and the
  kernel's crypto API are attack surface a card game does not need.
- **file locks** (``flock``, and ``fcntl`` with ``F_GETLK``/``F_SETLK``/``F_SETLKW`` and their
  ``F_OFD_`` forms), **leases** (``F_GETLEASE``/``F_SETLEASE``) and **directory notices**
  (``F_NOTIFY``): two copies of one bot that run at once passed opponents' hands through
  read locks on a file both can read (their own staged file, ``/usr/bin/env``): one sets a
  lock, the other tests for it. Watching another copy open or read such a file is the same
  channel, so ``inotify_init``/``inotify_init1`` and ``fanotify_init`` are denied as well.
  No sample bot and neither bot kit takes a lock or watches a file (each passes
  ``referee bot check`` under the filter).

Arguments are compared on their low 32 bits only (``MASKED_EQ`` with ``0xffffffff``): the
kernel reads ``fcntl``'s command and ``socket``'s family as 32-bit integers, so a bot that
sets the upper half of the register (``syscall(SYS_fcntl, fd, (1 << 32) | F_OFD_SETLK,
...)``) would pass a plain 64-bit equality test and still take its lock.

**Architectures.** The filter is built for the machine's native ABI alone (x86_64 here).
An x86_64 process can still enter the kernel through the 32-bit i386 ABI (``int 0x80``,
where ``CONFIG_IA32_EMULATION`` is on, as on this project's machines) and, on kernels built
with ``CONFIG_X86_X32_ABI``, through x32 (syscall numbers with bit 30 set); both use other
syscall numbers, and i386 multiplexes sockets through ``socketcall``, whose arguments sit
in memory where no filter can read them. Rather than repeat every rule for each ABI and
still miss ``socketcall``, every call from a foreign ABI fails with ``ENOSYS``: what a
kernel built without 32-bit emulation answers (libseccomp's bad-architecture action; it
also sends x32 numbers there, which it checks before any rule). The bots' runtimes (Python,
Node.js) are 64-bit programs and never use those entries.

**Without bubblewrap** there is no filter: the referee does not load one into its own
children (a ``preexec_fn`` is not safe in a threaded referee, and a launcher of our own
would be one more trusted program); :meth:`~referee.sandbox.process.ProcessSandbox.describe`
and ``referee doctor`` say so.

libseccomp is loaded lazily (``pyseccomp`` is a ctypes binding to the system's
``libseccomp.so.2``, installed by default on Debian); where it is missing, :func:`compile_filter`
says why and the process sandbox runs without the filter, saying so once.
"""

from __future__ import annotations

import errno
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.installation import install_hint

__all__ = [
    "AF_ALG",
    "AF_NETLINK",
    "AF_VSOCK",
    "DENIALS",
    "LOCK_COMMANDS",
    "Denial",
    "SeccompFilter",
    "compile_filter",
    "denied_syscalls",
    "kernel_has_seccomp",
]

AF_NETLINK = 16
AF_ALG = 38
AF_VSOCK = 40

F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
F_SETLEASE, F_GETLEASE, F_NOTIFY = 1024, 1025, 1026
LOCK_COMMANDS = frozenset({F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW})
"""``fcntl`` commands that take or test a file lock."""

_LOW_32 = 0xFFFFFFFF
_FAMILIES = frozenset({AF_NETLINK, AF_ALG, AF_VSOCK})


@dataclass(frozen=True)
class Denial:
    """One system call bots may not make: always, or only with one of ``values`` as its
    argument number ``arg`` (compared on the low 32 bits)."""

    syscall: str
    why: str
    arg: int | None = None
    values: frozenset[int] = frozenset()


def _always(names: str, why: str) -> Iterator[Denial]:
    for name in names.split():
        yield Denial(name, why)


DENIALS: tuple[Denial, ...] = (
    *_always("io_uring_setup io_uring_enter io_uring_register", "io_uring"),
    Denial("perf_event_open", "performance counters"),
    Denial("userfaultfd", "userfaultfd"),
    *_always("keyctl add_key request_key", "the kernel keyrings"),
    *_always("ptrace process_vm_readv process_vm_writev", "other processes' memory"),
    Denial("bpf", "kernel programs"),
    Denial("socket", "AF_NETLINK, AF_ALG and AF_VSOCK sockets", 0, _FAMILIES),
    Denial("socketpair", "AF_NETLINK, AF_ALG and AF_VSOCK sockets", 0, _FAMILIES),
    Denial("flock", "file locks"),
    Denial(
        "fcntl",
        "file locks, leases and directory notices",
        1,
        LOCK_COMMANDS | {F_SETLEASE, F_GETLEASE, F_NOTIFY},
    ),
    *_always("inotify_init inotify_init1 fanotify_init", "watching files"),
)
"""Everything both sandboxes deny (see the module docstring for why)."""


def denied_syscalls() -> frozenset[str]:
    """The calls denied whatever their arguments."""
    return frozenset(d.syscall for d in DENIALS if d.arg is None)


@dataclass(frozen=True)
class SeccompFilter:
    """The compiled filter, or why there is none.

    ``program`` is the BPF program as bubblewrap's ``--seccomp`` reads it (``struct
    sock_filter`` records, native byte order); empty when ``works`` is false.
    """

    works: bool
    program: bytes = b""
    reason: str = ""

    def describe(self) -> str:
        """A phrase for the start-up line and ``referee doctor``."""
        if not self.works:
            return f"NO seccomp filter ({self.reason})"
        return (
            "seccomp filter (EPERM for io_uring, perf_event_open, userfaultfd, keyrings, "
            "ptrace, bpf, vsock/netlink/AF_ALG sockets, file locks, inotify; 32-bit entries "
            "ENOSYS)"
        )


def kernel_has_seccomp(proc_status: Path = Path("/proc/self/status")) -> bool:
    """True when this kernel filters system calls (``Seccomp:`` in ``/proc/self/status``)."""
    try:
        return any(line.startswith("Seccomp:") for line in proc_status.read_text().splitlines())
    except OSError:
        return False


def _binding() -> tuple[Any, str]:
    """The ``pyseccomp`` module, or ``None`` and why it cannot be used."""
    try:
        import pyseccomp
    except ImportError as exc:
        return None, f"the pyseccomp package is not installed ({exc}); {install_hint('pyseccomp')}"
    except (RuntimeError, OSError) as exc:
        # pyseccomp raises RuntimeError at import when libseccomp.so.2 is not found.
        return None, f"libseccomp is not usable ({exc}); install libseccomp2"
    return pyseccomp, ""


def compile_filter() -> SeccompFilter:
    """Build the BPF program for :data:`DENIALS` with libseccomp (no cache: the caller keeps it).

    Never raises: a missing libseccomp or a kernel without seccomp gives a filter that
    does not work and says why.
    """
    if not kernel_has_seccomp():
        return SeccompFilter(False, reason="this kernel has no seccomp")
    lib, why = _binding()
    if lib is None:
        return SeccompFilter(False, reason=why)
    try:
        rules = lib.SyscallFilter(lib.ALLOW)
        rules.set_attr(lib.Attr.ACT_BADARCH, lib.ERRNO(errno.ENOSYS))
        deny = lib.ERRNO(errno.EPERM)
        for denial in DENIALS:
            if lib.resolve_syscall(lib.Arch.NATIVE, denial.syscall) < 0:
                continue  # not a call of this architecture (libseccomp knows each one's)
            if denial.arg is None:
                rules.add_rule(deny, denial.syscall)
                continue
            for value in sorted(denial.values):
                rules.add_rule(
                    deny, denial.syscall, lib.Arg(denial.arg, lib.MASKED_EQ, _LOW_32, value)
                )
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            program = out.read()
    except (OSError, ValueError) as exc:
        return SeccompFilter(False, reason=f"libseccomp could not build the filter: {exc}")
    return SeccompFilter(True, program)
