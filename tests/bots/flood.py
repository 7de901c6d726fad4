#!/usr/bin/env python3
"""After answering its first `act`, writes lines nobody asked for as fast as it can.

Without a bound the referee queued every line (345 MiB in 8 s). Self-contained (a
single-file bot sees only its own file): the polite loop of polite.py, then the flood
until it is killed. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys

NAME = "flood"
BLOCK = '{"note":"nobody asked"}\n' * 4096


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


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"]))
            log("FLOOD: started")
            while True:
                sys.stdout.write(BLOCK)
                sys.stdout.flush()
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
