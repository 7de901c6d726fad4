#!/usr/bin/env python3
"""Behaves in every check, then crashes with a KeyError in every match of a league.

Self-contained (a single-file bot sees only its own file). It plays politely, but its
table of strategies has none for a league's matches (their ids start with ``lg/``): at
the first request of such a match it raises, and Python prints the traceback on stderr
and exits with status 1. ``referee submit``'s check passes it (those matches are
``check-...``); a league sees it fault in every match it is seated in.
"""

import json
import sys

NAME = "league_crash"
STRATEGIES = {"check": "polite", "rr": "polite", "gt": "polite"}


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
    kind_of_match = None
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "match_start":
            kind_of_match = msg["match"].replace("/", "-").split("-")[0]
        elif kind == "act":
            strategy = STRATEGIES[kind_of_match]  # KeyError: 'lg'
            send(dict(answer(msg), id=msg["id"], strategy=strategy))
        elif kind == "bye":
            break


if __name__ == "__main__":
    main()
