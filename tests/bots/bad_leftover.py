#!/usr/bin/env python3
"""Answers a `leftover` request by taking a card of its own hand, which is not offered.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py,
with a wrong `take`. `referee bot check` must find it (its seeds ask for leftovers).
"""

import json
import os
import sys

NAME = "bad_leftover"


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(msg):
    """The polite reply fields for one `act` request, except a leftover not offered."""
    kind = msg.get("kind")
    hand = msg.get("hand") or []
    if kind == "give":
        return {"cards": hand[: msg.get("count", 0)]}
    if kind == "leftover":
        return {"take": hand[-1], "discard": hand[0]}
    legal = msg.get("legal") or [[]]
    return {"cards": legal[0]}


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
