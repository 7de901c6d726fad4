#!/usr/bin/env python3
"""Takes and tests file locks on files every copy of it can read: its own file and
/usr/bin/env (flock, fcntl's F_SETLK/F_SETLKW/F_GETLK and F_OFD_ forms, a lease, a
directory notice), also with the command's upper 32 bits set and through the 32-bit
i386 entry (int 0x80). Two copies running at once used such locks as a covert channel.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus the probes at its first `act`, after which it plays on. Each probe is one stderr line
`SECCOMP <call>: <result>`, the result `ok` or the errno's name (`EPERM` where the sandbox
denies it); `SECCOMP-DONE: <n>` follows the n probes. The system call numbers are
x86_64's: elsewhere the bot says `SECCOMP-DONE: skipped on <machine>`.
"""

import ctypes
import errno
import json
import os
import platform
import socket
import sys

NAME = "file_locks"
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
PROBES = []


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def answer(msg):
    """The polite reply fields for one `act` request."""
    kind = msg.get("kind")
    hand = msg.get("hand") or []
    if kind == "give":
        return {"cards": hand[: msg.get("count", 0)]}
    if kind == "leftover":
        offer = msg.get("offer") or []
        return {"take": offer[0], "discard": hand[0] if hand else offer[0]}
    legal = msg.get("legal") or [[]]
    return {"cards": legal[0]}


def arg(value):
    return ctypes.c_long(value) if isinstance(value, int) else value


def raw(nr, *args):
    """syscall(nr, *args): `ok`, or the name of the errno it failed with."""
    ctypes.set_errno(0)
    if LIBC.syscall(ctypes.c_long(nr), *[arg(a) for a in args]) == -1:
        code = ctypes.get_errno()
        return errno.errorcode.get(code, str(code))
    return "ok"


def call(func, *args):
    """A library call: `ok`, or the name of the errno of the OSError it raised."""
    try:
        func(*args)
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"


def report(name, result):
    PROBES.append(name)
    log("SECCOMP %s: %s" % (name, result))

import fcntl
import mmap
import struct


def i386_flock(fd, operation):
    """flock through the 32-bit entry: `int 0x80` with eax = 143 (i386's flock)."""
    code = bytes(
        [0x53]  # push rbx
        + [0xB8, 143, 0, 0, 0]  # mov eax, 143
        + [0x89, 0xFB]  # mov ebx, edi (fd)
        + [0x89, 0xF1]  # mov ecx, esi (operation)
        + [0xCD, 0x80]  # int 0x80
        + [0x5B, 0xC3]  # pop rbx; ret
    )
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    result = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int)(address)(fd, operation)
    return "ok" if result >= 0 else errno.errorcode.get(-result, str(-result))


def probe():
    for path in (os.path.abspath(sys.argv[0]), "/usr/bin/env"):
        fd = os.open(path, os.O_RDONLY)
        where = "own file" if path != "/usr/bin/env" else path
        report("flock(%s)" % where, call(fcntl.flock, fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
        read_lock = struct.pack("hh4xqqi4x", fcntl.F_RDLCK, os.SEEK_SET, 0, 1, 0)
        for name, cmd in (("F_GETLK", 5), ("F_SETLK", 6), ("F_SETLKW", 7),
                          ("F_OFD_GETLK", 36), ("F_OFD_SETLK", 37), ("F_OFD_SETLKW", 38)):
            report("fcntl(%s, %s)" % (where, name), call(fcntl.fcntl, fd, cmd, read_lock))
        buf = ctypes.create_string_buffer(read_lock, len(read_lock))
        report("fcntl(%s, F_OFD_SETLK | 1 << 32)" % where, raw(72, fd, (1 << 32) | 37, buf))
        report("fcntl(%s, F_GETLEASE)" % where, raw(72, fd, 1025, 0))
        report("flock(%s) via i386" % where, i386_flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
        os.close(fd)
    folder = os.open("/usr/bin", os.O_RDONLY | os.O_DIRECTORY)
    report("fcntl(/usr/bin, F_NOTIFY)", raw(72, folder, 1026, 1))  # DN_ACCESS
    os.close(folder)


def trick(msg):
    if platform.machine() != "x86_64":
        log("SECCOMP-DONE: skipped on " + platform.machine())
        return
    probe()
    log("SECCOMP-DONE: %d" % len(PROBES))


def main():
    tricked = False
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            if not tricked:
                tricked = True
                trick(msg)
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
