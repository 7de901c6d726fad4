#!/usr/bin/env python3
"""Spreads 450 MiB over 15 processes of 30 MiB before it says `ready`, then plays politely.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus children that each stay far under RLIMIT_DATA, and together under a 512 MiB limit of
the bot's own group: only memory that runs out above that limit stops them. The attack of
issue 18: where the bots' limits together promise more than the referee has, the kernel
kills the largest process, an honest opponent. Marker on stderr: `SPREAD: alive K of N`.
"""

import json
import os
import socket
import sys

NAME = "spreads_memory"
CHILDREN = 15
EACH = 30 << 20


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


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


def child(channel):
    held = b"x" * EACH  # written, so the pages are real
    channel.send(b"held")
    channel.recv(1)  # end of file when the bot is gone: then this child goes too
    del held
    os._exit(0)


def spread():
    channels = []
    for _ in range(CHILDREN):
        mine, theirs = socket.socketpair()
        if os.fork() == 0:
            mine.close()
            child(theirs)
        theirs.close()
        channels.append(mine)
    alive = sum(channel.recv(4) == b"held" for channel in channels)  # "" if killed
    sys.stderr.write("SPREAD: alive %d of %d\n" % (alive, CHILDREN))
    sys.stderr.flush()
    return channels


def main():
    kept = None
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            kept = spread()
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    del kept
    os._exit(0)


if __name__ == "__main__":
    main()
