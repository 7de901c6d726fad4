#!/usr/bin/env python3
"""Answers hello, then sleeps through its first request: a match that waits on its clock.

Used to interrupt the referee (SIGTERM, Ctrl-C, SIGKILL) while a match is in progress.
"""

import json
import sys
import time

for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        sys.stdout.write(json.dumps({"type": "ready", "id": msg["id"], "name": "sleeps"}) + "\n")
        sys.stdout.flush()
    elif msg.get("type") == "act":
        time.sleep(3600)
