#!/usr/bin/env python3
"""Answers every message, events too: `{"id": msg.get("id"), ...}` gives an event `null`.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py,
except that each event gets a reply line as well, as a bot does that never checks for an
`id`. `referee bot check` must say "replied to an event; events need no answer".
"""

import json
import os
import sys

NAME = "answers_events"


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
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "bye":
            break
        else:
            send(dict(answer(msg), id=msg.get("id")))
    os._exit(0)


if __name__ == "__main__":
    main()
