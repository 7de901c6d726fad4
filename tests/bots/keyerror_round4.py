#!/usr/bin/env python3
"""Plays politely for three rounds, then fails with a KeyError when round 4 is dealt.

Self-contained (a single-file bot sees only its own file). A bug that three-round matches
never reach: ``referee submit``'s short matches pass it, a full match does not.
"""

import json
import sys

NAME = "keyerror_round4"
OPENINGS = {1: "lead low", 2: "lead low", 3: "lead low"}  # round 4 was never written


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


def main():
    plan = None
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "round_start":
            plan = OPENINGS[msg["round"]]  # KeyError: 4
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"], note=plan))
        elif kind == "bye":
            break


if __name__ == "__main__":
    main()
