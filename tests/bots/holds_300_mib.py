#!/usr/bin/env python3
"""An honest bot that needs 300 MiB: it fills them at its first `act` and keeps them.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus one allocation, in one process, well under a 512 MiB limit. It stands for the bot a
memory-spreading opponent tries to get killed and blamed. Marker on stderr: `HELD: N MiB`.
"""

import json
import sys

NAME = "holds_300_mib"
MIB = 300


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
    held = None
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            if held is None:
                held = b"x" * (MIB << 20)  # written, so every page is real
                sys.stderr.write("HELD: %d MiB\n" % MIB)
                sys.stderr.flush()
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            return


if __name__ == "__main__":
    main()
