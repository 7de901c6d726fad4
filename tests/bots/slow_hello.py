#!/usr/bin/env python3
"""Says on stderr that it loads, then takes 3 s before it answers `hello`.

Self-contained. Checked with a short --hello-ms: `referee bot check` must report the hello
timeout, its hint about slow starts, and the stderr written before `hello`.
"""

import json
import os
import sys
import time

NAME = "slow_hello"


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    sys.stderr.write("slow_hello: loading a very large opening book...\n")
    sys.stderr.write("slow_hello: still loading\n")
    sys.stderr.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            time.sleep(3)
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            legal = msg.get("legal") or [[]]
            send({"id": msg["id"], "cards": legal[0]})
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
