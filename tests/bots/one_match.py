#!/usr/bin/env python3
"""Plays one match politely, then ignores everything after `match_end` without exiting.

Self-contained: the polite loop of polite.py, deaf from its first `match_end` on. A
tournament reuses a bot's process for several matches: the second one times out.
"""

import json
import os
import sys

NAME = "one_match"


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
    done = False
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "bye":
            break
        if done:
            continue
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "match_end":
            done = True
    os._exit(0)


if __name__ == "__main__":
    main()
