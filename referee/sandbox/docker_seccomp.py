"""The Docker sandbox's seccomp profile: Docker's default allowlist, less what bots may not do.

Docker applies one seccomp profile per container, and the default one is compiled into
``dockerd`` (Debian's ``docker.io`` ships no JSON of it), so the referee builds its own in
code and passes it as ``security_opt=["seccomp=<json>"]``. It keeps the default profile's
semantics: everything not allowed fails with ``EPERM``, and the allowed calls are those the
default profile allows a container **without capabilities** (ours drop them all, so the
rules Docker adds only for ``CAP_SYS_ADMIN``, ``CAP_SYS_PTRACE`` and the like never apply
and are left out). The names come from moby's ``profiles/seccomp/default.json`` (read at
moby's main branch in 2025; system call names are the kernel's, the selection Docker's);
a newer call Docker allows later is simply denied here until this list learns it.

Then the denials of :data:`referee.sandbox.seccomp.DENIALS` are applied, so both sandboxes
deny the same things:

- a call denied whatever its arguments is left out of the allowlist (of those, the default
  profile already denied ``perf_event_open``, ``userfaultfd``, the keyring calls,
  ``process_vm_readv``/``writev``, ``bpf`` and ``fanotify_init`` to a capability-less
  container; it allowed io_uring, ``ptrace``, ``flock`` and ``inotify_init``, measured on
  Docker 20.10 with ``tests/bots/``);
- a call denied only for some values of one argument (``socket``'s and ``socketpair``'s
  family, ``fcntl``'s command) is allowed by rules that match every other value. Docker
  combines the conditions of one rule on the same argument with *or* (runc splits them
  into separate rules), so "family != 16 and != 38 and != 40" cannot be written as one
  rule; instead the allowed values are covered by aligned blocks, each one ``MASKED_EQ``
  rule on the argument's low 32 bits (:func:`allowed_blocks`): the same 32 bits the kernel
  reads, so a bot setting the upper half of the register gains nothing. The default
  profile's own ``socket`` rule (family != AF_VSOCK) is replaced by these; Docker 20.10's
  compiled-in profile predates it and let AF_VSOCK sockets through.

**Architectures**: as in the default profile, the rules cover the 32-bit ABIs beside the
native one (x86 and x32 beside x86_64, arm beside aarch64): a profile without them does not
leave the i386 entry (``int 0x80``) open, but Docker's runtime then kills the whole bot with
``SIGSYS`` at its first such call (measured), where the process sandbox answers ``ENOSYS``.
With them, each rule holds for each ABI under that ABI's own numbers (libseccomp translates
the names), and the two calls that exist only there and would get around a rule are left
out: ``socketcall``, i386's socket multiplexer, whose arguments sit in memory where no
filter can read the family, and ``fcntl64``, i386's ``fcntl``. A 32-bit entry thus gets
``EPERM`` for everything denied here (:mod:`referee.sandbox.seccomp`, "Architectures").
"""

from __future__ import annotations

import errno
import json
import platform
from collections.abc import Iterable
from typing import Any

from referee.sandbox.seccomp import DENIALS, denied_syscalls

__all__ = ["ALLOWED", "allowed_blocks", "docker_profile", "profile_json"]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


ALLOWED = _names(
    """
    accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown chown32
    clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime
    clock_gettime64 clock_nanosleep clock_nanosleep_time64 close close_range connect
    copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old
    epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit
    exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir
    fchmod fchmodat fchown fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr flistxattr
    flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 fsync
    ftruncate ftruncate64 futex futex_time64 futex_waitv futimesat getcpu getcwd getdents
    getdents64 getegid getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32
    getitimer getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid
    getresgid32 getresuid getresuid32 getrlimit get_robust_list getrusage getsid getsockname
    getsockopt get_thread_area gettid gettimeofday getuid getuid32 getxattr inotify_add_watch
    inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents
    io_pgetevents io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit
    io_uring_enter io_uring_register io_uring_setup ipc kill landlock_add_rule
    landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr link linkat
    listen listxattr llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise
    membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2
    mlockall mmap mmap2 mprotect mq_getsetattr mq_notify mq_open mq_timedreceive
    mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink mremap msgctl msgget
    msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat
    _newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc
    pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2 prlimit64
    process_mrelease pselect6 pselect6_time64 pwrite64 pwritev pwritev2 read readahead
    readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg
    remap_file_pages removexattr rename renameat renameat2 restart_syscall rmdir rseq
    rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend
    rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity
    sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min
    sched_getscheduler sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity
    sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select semctl semget
    semop semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto
    setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer
    setpgid setpriority setregid setregid32 setresgid setresgid32 setresuid setresuid32
    setreuid setreuid32 setrlimit set_robust_list setsid setsockopt set_thread_area
    set_tid_address setuid setuid32 setxattr shmat shmctl shmdt shmget shutdown sigaltstack
    signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs
    statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time
    timer_create timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime
    timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime
    timerfd_settime64 times tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat
    utime utimensat utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev
    """
)
"""The calls Docker's default profile allows every container, whatever its capabilities.

Also allowed there: ``ptrace`` and ``process_vm_readv``/``writev`` (kernel 4.8 and later;
denied here), ``socket`` for every family but AF_VSOCK (replaced, see the module docstring),
five ``personality`` values, ``clone`` without namespace flags, ``clone3`` as ``ENOSYS`` (so
that the C library falls back to ``clone``) and a few calls of one architecture each: all
in :func:`docker_profile`.
"""

_PERSONALITIES = (0, 8, 0x20000, 0x20008, 0xFFFFFFFF)  # PER_LINUX, UNAME26, ADDR_NO_RANDOMIZE
_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}
_ARCHES = {
    "x86_64": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "aarch64": ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
}
_ONE_ARCH = (  # (names, Docker's architecture names) from the default profile
    (("arch_prctl",), ("amd64", "x32")),
    (("modify_ldt",), ("amd64", "x32", "x86")),
    (
        (
            "arm_fadvise64_64",
            "arm_sync_file_range",
            "sync_file_range2",
            "breakpoint",
            "cacheflush",
            "set_tls",
        ),
        ("arm", "arm64"),
    ),
)


def allowed_blocks(denied: Iterable[int], bits: int = 32) -> list[tuple[int, int]]:
    """Aligned blocks ``(mask, value)`` that together hold every ``bits``-bit number but
    ``denied``: a number ``n`` is in a block when ``n & mask == value``.

    The blocks are the largest power-of-two-sized, aligned ranges free of denied numbers,
    found by halving: at most ``bits`` of them per denied number.
    """
    full = (1 << bits) - 1
    refused = sorted(set(denied))
    blocks: list[tuple[int, int]] = []

    def cover(start: int, size: int) -> None:
        if not any(start <= n < start + size for n in refused):
            blocks.append((full & ~(size - 1), start))
        elif size > 1:
            cover(start, size // 2)
            cover(start + size // 2, size // 2)

    cover(0, 1 << bits)
    return blocks


def _rule(names: Iterable[str], action: str = "SCMP_ACT_ALLOW", **extra: Any) -> dict[str, Any]:
    return {"names": sorted(names), "action": action, **extra}


def _masked(index: int, mask: int, value: int) -> dict[str, Any]:
    return {"index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"}


def docker_profile(machine: str | None = None) -> dict[str, Any]:
    """The profile for containers on ``machine`` (``platform.machine()`` by default)."""
    machine = machine or platform.machine()
    never = denied_syscalls()
    # socketcall and fcntl64 (32-bit ABIs only) would get around the socket and fcntl rules.
    rules = [_rule(ALLOWED - {d.syscall for d in DENIALS} - {"fcntl64", "socketcall"})]
    for denial in DENIALS:
        if denial.arg is None:
            continue
        for mask, value in allowed_blocks(denial.values):
            # The low 32 bits of the 64-bit register: the kernel reads an int.
            rules.append(_rule([denial.syscall], args=[_masked(denial.arg, mask, value)]))
    rules += [
        _rule(["personality"], args=[{"index": 0, "value": p, "op": "SCMP_CMP_EQ"}])
        for p in _PERSONALITIES
    ]
    rules.append(
        _rule(
            ["clone"],
            args=[_masked(0, _NAMESPACE_FLAGS, 0)],
            excludes={"arches": ["s390", "s390x"]},
        )
    )
    rules.append(_rule(["clone3"], "SCMP_ACT_ERRNO", errnoRet=errno.ENOSYS))
    rules += [
        _rule(set(names) - never, includes={"arches": list(arches)}) for names, arches in _ONE_ARCH
    ]
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "architectures": _ARCHES.get(machine, []),
        "syscalls": rules,
    }


def profile_json(machine: str | None = None) -> str:
    """:func:`docker_profile` as the JSON text ``security_opt=["seccomp=..."]`` takes."""
    return json.dumps(docker_profile(machine), separators=(",", ":"))
