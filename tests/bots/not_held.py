#!/usr/bin/env python3
"""Plays a card it does not hold at its first `play`.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus an illegal card. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys

NAME = "not_held"


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


RULES = {}


def trick(msg):
    hand = set(msg.get("hand") or [])
    ranks = RULES.get("ranks") or ["7", "8", "9", "10", "J", "Q", "K", "A"]
    suits = RULES.get("suits") or ["C", "S", "H", "D"]
    missing = [rank + suit for rank in ranks for suit in suits if rank + suit not in hand]
    send({"id": msg["id"], "cards": missing[:1] or ["2X"]})
    return False


def wants_trick(msg):
    return msg.get("kind") == "play"


def main():
    tricked = False
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "match_start":
            RULES.update(msg.get("rules") or {})
        elif kind == "hello":
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
