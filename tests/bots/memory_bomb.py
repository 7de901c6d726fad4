#!/usr/bin/env python3
"""Allocates memory in 64 MiB steps at its first `act` until it fails.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus a memory bomb (capped at 4 GiB, so a missing limit shows as a marker, not a dead machine). Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys

NAME = "memory_bomb"


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
    hoard = []
    for step in range(64):
        hoard.append(b"x" * (64 << 20))  # bytes are written, so the pages are real
        log("MEMORY: %d MiB" % ((step + 1) * 64))
    log("MEMORY: no limit hit")


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
