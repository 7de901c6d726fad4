#!/usr/bin/env python3
"""Answers `hello` with the worst line known for the referee's parser, just under 64 KiB.

65 opening brackets (past the nesting early exit), then an unterminated string of escaped
quotes: a regular expression matching JSON strings retried it from every quote, and took
18 s of the referee's event loop, so the other bots timed out answering hello.
Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
after it. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys

NAME = "worst_hello"
WORST = "[" * 65 + '"' + '\\"' * ((65536 - 66) // 2)


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
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            # The marker first: the referee faults the line as it reads it, and may stop
            # this bot before anything written after it reaches stderr.
            log(f"WORST: sending {len(WORST)} bytes")
            sys.stdout.write(WORST + "\n")
            sys.stdout.flush()
        elif kind == "act":
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
