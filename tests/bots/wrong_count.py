#!/usr/bin/env python3
"""Answers a trick of pairs with a single card: a reply with the wrong number of cards.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py,
except that when the trick needs a pair it sends only the first card of the
lowest legal play. `referee bot check` must say "has 1 card; the trick needs 2".
"""

import json
import os
import sys

NAME = "wrong_count"


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(msg):
    """The polite reply fields for one `act` request, one card short on a multi-card trick."""
    kind = msg.get("kind")
    hand = msg.get("hand") or []
    if kind == "give":
        return {"cards": hand[: msg.get("count", 0)]}
    if kind == "leftover":
        offer = msg.get("offer") or []
        return {"take": offer[0], "discard": hand[0] if hand else offer[0]}
    legal = msg.get("legal") or [[]]
    if (msg.get("trick") or {}).get("count") == 2 and legal[0]:
        return {"cards": legal[0][:1]}
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
