#!/usr/bin/env python3
"""A well-behaved instant bot: the protocol loop every hostile test bot copies.

hello -> ready; act play -> the first legal entry; act give -> the first `count` cards;
act leftover -> take the first offered card, discard the first card of the hand;
events are ignored; bye or end of input -> exit 0.
"""

import json
import sys

NAME = "polite"


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(msg):
    """The reply fields for one `act` request."""
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
        elif kind == "bye":
            return


if __name__ == "__main__":
    main()
