#!/usr/bin/env python3
"""Plays round 1 politely, then exits with code 3 when round 2 is dealt.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus a crash at `round_start` of round 2, announced on stderr first. It writes a line to
stderr before `hello`, which a fault report must keep, and two lines for every request after:
more than a report shows of the match, so the start-up line must not be pushed out.
"""

import json
import os
import sys

NAME = "crash_round2"


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
    log("crash_round2: starting up (written before hello)")
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "round_start" and msg.get("round") == 2:
            log("crash_round2: IndexError in round 2 (on purpose)")
            os._exit(3)
        elif kind == "act":
            log(f"crash_round2: thinking about act {msg['id']}")
            reply = dict(answer(msg), id=msg["id"])
            log(f"crash_round2: decided {reply}")
            send(reply)
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
