#!/usr/bin/env python3
"""Signals its parent (SIGTERM, SIGKILL) and, with --kill-all, every process it may (kill -1).

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus signals at the first `act`; one `SIGNAL: ...` line per attempt. `kill(-1)` only runs with the --kill-all argument and never as root: outside a sandbox it would kill the machine. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import signal
import sys

NAME = "signal_parent"


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


def try_kill(pid, sig, label):
    try:
        os.kill(pid, sig)
    except OSError as exc:
        log("SIGNAL: %s denied (%s)" % (label, exc.strerror or exc))
        return
    log("SIGNAL: %s sent" % label)


def trick(msg):
    parent = os.getppid()
    try_kill(parent, signal.SIGTERM, "kill(parent %d, SIGTERM)" % parent)
    try_kill(parent, signal.SIGKILL, "kill(parent %d, SIGKILL)" % parent)
    if "--kill-all" not in sys.argv:
        log("SIGNAL: kill(-1) not asked for")
    elif os.geteuid() == 0:
        log("SIGNAL: kill(-1) skipped: running as root")
    else:
        try_kill(-1, signal.SIGKILL, "kill(-1, SIGKILL)")
    log("SIGNAL: still alive")


def wants_trick(msg):
    return True


def main():
    tricked = False
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            if not tricked and wants_trick(msg):
                tricked = True
                if trick(msg) is False:
                    continue
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
