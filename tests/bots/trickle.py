#!/usr/bin/env python3
"""Writes every `act` reply byte by byte, 2 ms apart (about 0.1 s a reply).

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus slow but correct replies. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys
import time

NAME = "trickle"


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
    line = json.dumps(dict(answer(msg), id=msg["id"])) + "\n"
    for char in line:
        sys.stdout.write(char)
        sys.stdout.flush()
        time.sleep(0.002)
    return False


def wants_trick(msg):
    return True  # every act


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            if wants_trick(msg):
                if trick(msg) is False:
                    continue
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
