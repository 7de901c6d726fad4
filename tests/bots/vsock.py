#!/usr/bin/env python3
"""Opens AF_VSOCK sockets (the way to a virtual machine's host).

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

NAME = "vsock"
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

def probe():
    report("socket(AF_VSOCK)", call(socket.socket, 40, socket.SOCK_STREAM))
    report("socketpair(AF_VSOCK)", call(socket.socketpair, 40, socket.SOCK_STREAM))
    # The family with the upper half of the register set: the kernel reads an int.
    report("socket(AF_VSOCK | 1 << 32)", raw(41, (1 << 32) | 40, socket.SOCK_STREAM, 0))


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
