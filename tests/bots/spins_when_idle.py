#!/usr/bin/env python3
"""Spins the CPU in a thread from its start to its end, so also while it waits between
matches (in a session pool), where it could slow the machine's other bots or think ahead.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus the spinning thread. Markers on stderr are lines `WORD: result`.
"""

import json
import sys
import threading

NAME = "spins_when_idle"


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


def spin():
    n = 0
    while True:
        n += 1


def main():
    threading.Thread(target=spin, daemon=True).start()
    sys.stderr.write("SPIN: started\n")
    sys.stderr.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            return


if __name__ == "__main__":
    main()
