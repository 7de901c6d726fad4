#!/usr/bin/env python3
"""Writes to /dev/shm in 1 MiB files at its first `act` until that fails, then to /dev.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus a tmpfs filler (capped at 256 MiB, so a missing limit shows as a marker, not a full
machine). Markers on stderr are lines `WORD: result`; it plays on afterwards.
"""

import json
import os
import sys

NAME = "dev_shm"


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


def trick(msg):
    written, error = 0, "no limit hit"
    try:
        for index in range(256):
            with open("/dev/shm/referee-shm-%d-%d" % (os.getpid(), index), "wb") as handle:
                handle.write(b"x" * (1 << 20))
            written += 1
    except OSError as exc:
        error = exc.strerror or str(exc)
    log("SHM: %d MiB, %s" % (written, error))
    for index in range(written + 1):
        try:
            os.unlink("/dev/shm/referee-shm-%d-%d" % (os.getpid(), index))
        except OSError:
            pass
    try:
        with open("/dev/referee-dev-%d" % os.getpid(), "wb") as handle:
            handle.write(b"x" * (1 << 20))
        os.unlink("/dev/referee-dev-%d" % os.getpid())
        log("DEV: written")
    except OSError as exc:
        log("DEV: " + (exc.strerror or str(exc)))


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
