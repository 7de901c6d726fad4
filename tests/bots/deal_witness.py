#!/usr/bin/env python3
"""Says on stderr what it was dealt, for the comparison's tests; plays with the seed it got.

At every ``match_start`` it writes one line, ``witness <process> <match> <seat> <seed>``:
``<process>`` is a random token drawn when the process starts (a pid would not do: inside
bubblewrap every bot has its own pid namespace), so the tests can tell which process played
which match. Then it plays like polite.py, except that ``STRATEGY = "random"`` picks each play
with a generator seeded from ``match_start``'s ``seed``: its choices repeat wherever the seed
does. The tests copy it with another ``STRATEGY`` for a second version.
"""

import json
import random
import secrets
import sys

NAME = "deal-witness"
STRATEGY = "random"
PROCESS = secrets.token_hex(8)


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(msg, rng):
    kind = msg.get("kind")
    hand = msg.get("hand") or []
    if kind == "give":
        return {"cards": hand[: msg.get("count", 0)]}
    if kind == "leftover":
        offer = msg.get("offer") or []
        return {"take": offer[0], "discard": hand[0] if hand else offer[0]}
    legal = msg.get("legal") or [[]]
    if STRATEGY == "random":
        return {"cards": rng.choice(legal)}
    return {"cards": next((play for play in legal if play), [])}


def main():
    rng = random.Random(0)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "match_start":
            seed = msg.get("seed")
            rng = random.Random(seed)
            print(f"witness {PROCESS} {msg['match']} {msg['seat']} {seed}", file=sys.stderr)
            sys.stderr.flush()
        elif kind == "act":
            send(dict(answer(msg, rng), id=msg["id"]))
        elif kind == "bye":
            return


if __name__ == "__main__":
    main()
