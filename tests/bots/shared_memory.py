#!/usr/bin/env python3
"""Maps 2 GiB of shared anonymous memory at its first `act` and touches every page.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus a MAP_SHARED|MAP_ANONYMOUS mapping, which RLIMIT_DATA does not count; only a memory
cgroup stops it. Markers on stderr are lines `WORD: result`.
"""

import json
import mmap
import os
import sys

NAME = "shared_memory"


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


def trick(msg):
    size = 2 << 30
    shared = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    page = mmap.PAGESIZE
    for offset in range(0, size, page):
        shared[offset] = 1  # a written page is a real page
        if (offset + page) % (64 << 20) == 0:
            log("SHARED: %d MiB" % ((offset + page) >> 20))
    log("SHARED: no limit hit")


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
