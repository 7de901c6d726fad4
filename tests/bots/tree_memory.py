#!/usr/bin/env python3
"""Forks 4 children that each hold 48 MiB at its first `act`, counts the live ones, plays on.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus memory spread over a process tree, each process well under RLIMIT_DATA; only a limit
on the whole tree (a memory cgroup) stops it. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import signal
import socket
import sys

NAME = "tree_memory"


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


CHILDREN = 4
EACH = 48 << 20


def child(channel):
    held = b"x" * EACH  # bytes are written, so the pages are real
    channel.send(b"held")
    channel.recv(1)  # "are you alive?": a child killed meanwhile never answers
    channel.send(b"alive")
    channel.recv(1)
    del held
    os._exit(0)


def trick(msg):
    children = []
    for _ in range(CHILDREN):
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            mine.close()
            child(theirs)
        theirs.close()
        children.append((pid, mine))
    for _, channel in children:
        channel.recv(4)  # "held", or end of file from a child killed while allocating
    alive = 0
    for _, channel in children:
        try:
            channel.send(b"?")
            alive += channel.recv(5) == b"alive"
        except OSError:
            pass
    for pid, channel in children:
        channel.close()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    log("TREE: alive %d of %d" % (alive, CHILDREN))


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
