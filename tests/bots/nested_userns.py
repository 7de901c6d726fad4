#!/usr/bin/env python3
"""Tries to create a nested user namespace (unshare(CLONE_NEWUSER)) at its first `act`.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus the attempt, made in a child so the bot itself stays as it was. Inside a user
namespace of its own a bot is "root" again, which widens the kernel surface it can reach.
Markers on stderr are lines `WORD: result`.
"""

import ctypes
import json
import os
import sys

NAME = "nested_userns"


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


CLONE_NEWUSER = 0x10000000


def trick(msg):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUSER) == 0:
            result = "created"
        else:
            result = os.strerror(ctypes.get_errno())
        os.write(write_end, result.encode())
        os._exit(0)
    os.close(write_end)
    result = os.read(read_end, 200).decode()
    os.waitpid(pid, 0)
    log("USERNS: " + result)


def wants_trick(msg):
    return True


def main():
    tricked = False
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            if not tricked and wants_trick(msg):
                tricked = True
                if trick(msg) is False:
                    continue
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
