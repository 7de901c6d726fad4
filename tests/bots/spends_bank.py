#!/usr/bin/env python3
"""Answers its first 5 requests of a match at once, then thinks 0.4 s before each reply.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py,
flushed after every line. On a short clock (`--move-ms 200 --bank-ms 300`) the 6th reply
still fits (its 200 ms over come from the bank), the 7th does not: `referee bot check`
must say "too slow: answered 6 requests in time, then spent its bank", not that it forgot
to flush.
"""

import json
import os
import sys
import time

NAME = "spends_bank"
QUICK = 5


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
    asked = 0
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            asked += 1
            if asked > QUICK:
                time.sleep(0.4)
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "match_start":
            asked = 0
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
