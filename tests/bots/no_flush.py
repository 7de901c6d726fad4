#!/usr/bin/env python3
"""Writes its replies to a block-buffered stdout and never flushes: nothing ever arrives.

Self-contained. Like a C bot that forgets fflush(stdout): it opens its own block-buffered
writer on file descriptor 1 (whatever the environment says of Python's buffering), where
`ready` stays. `referee bot check` must time it out at `hello` and hint at flushing.
"""

import json
import sys

NAME = "no_flush"
OUT = open(1, "w", buffering=65536, closefd=False)  # noqa: SIM115 - never flushed on purpose


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            OUT.write(json.dumps({"id": msg["id"], "type": "ready", "name": NAME}) + "\n")
        elif kind == "act":
            legal = msg.get("legal") or [[]]
            OUT.write(json.dumps({"id": msg["id"], "cards": legal[0]}) + "\n")
        elif kind == "bye":
            break


if __name__ == "__main__":
    main()
