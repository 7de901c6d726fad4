#!/usr/bin/env python3
"""Closes stdout at its first `act` and keeps running without replying.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus a closed stdout. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys
import time

NAME = "closes_stdout"


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
    log("STDOUT: closing")  # first: the referee may stop this bot as soon as it is closed
    os.close(1)
    for _ in sys.stdin:
        pass
    time.sleep(3600)


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
