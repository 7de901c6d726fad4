#!/usr/bin/env python3
"""Tries to write outside its scratch space at its first `act`, then plays on.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus writes to its own folder, /, /etc (all must fail) and to $TMPDIR (must work); one `WRITE: <path> ok|denied (...)` line each, then `WRITE-OUTSIDE: blocked|open` and `WRITE-TMP: ok|failed`. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import sys

NAME = "write_outside"


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


def try_write(folder):
    path = os.path.join(folder, "referee-write-test-%d" % os.getpid())
    try:
        with open(path, "w") as handle:
            handle.write("written by write_outside.py\n")
    except OSError as exc:
        log("WRITE: %s denied (%s)" % (path, exc.strerror or exc))
        return False
    log("WRITE: %s ok" % path)
    os.unlink(path)  # leave nothing behind even where the sandbox failed
    return True


def trick(msg):
    here = os.path.dirname(os.path.abspath(__file__))
    outside = [try_write(folder) for folder in (here, os.getcwd(), "/", "/etc", "/usr")]
    log("WRITE-OUTSIDE: open" if any(outside) else "WRITE-OUTSIDE: blocked")
    tmp = os.environ.get("TMPDIR", "/tmp")
    log("WRITE-TMP: ok" if try_write(tmp) else "WRITE-TMP: failed")


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
