#!/usr/bin/env python3
"""Tries to read secrets and other bots' files at its first `act`, then plays on.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus reads of /etc/shadow, /root, the folder above its own (where other staged bots live) and any paths given in argv; one `READ: <path> ...` line each, then `READ-SECRETS: blocked|open`. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys

NAME = "read_other"


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


def try_read(path):
    try:
        if os.path.isdir(path):
            entries = os.listdir(path)
            log("READ: %s listed (%d entries)" % (path, len(entries)))
        else:
            with open(path, "rb") as handle:
                handle.read(64)
            log("READ: %s read" % path)
    except OSError as exc:
        log("READ: %s denied (%s)" % (path, exc.strerror or exc))
        return False
    return True


def others():
    """Files of sibling folders of this bot's folder, i.e. other staged bots."""
    here = os.path.dirname(os.path.abspath(__file__))
    parent = os.path.dirname(here)
    found = []
    try:
        siblings = os.listdir(parent)
    except OSError as exc:
        log("READ: %s denied (%s)" % (parent, exc.strerror or exc))
        return found
    for sibling in siblings:
        folder = os.path.join(parent, sibling)
        if folder != here and os.path.isdir(folder) and parent != "/":
            try:
                found += [os.path.join(folder, name) for name in os.listdir(folder)]
            except OSError as exc:
                log("READ: %s denied (%s)" % (folder, exc.strerror or exc))
    return found


def trick(msg):
    targets = ["/etc/shadow", "/root"] + others() + sys.argv[1:]
    results = [try_read(path) for path in targets]
    log("READ-SECRETS: open" if any(results) else "READ-SECRETS: blocked")


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
