#!/usr/bin/env python3
"""Tries the network at its first `act`, reports it on stderr, then plays on.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py
plus connections to 127.0.0.1:<argv[1] or 47123> and to public DNS servers; the verdict is one line `NETWORK: blocked` or `NETWORK: open`, details on `NETWORK-DETAIL:` lines. Markers on stderr are lines `WORD: result`.
"""

import json
import os
import socket
import sys

NAME = "network"


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


def attempt(host, port):
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(b"hello from the network bot\n")
    except OSError as exc:
        log("NETWORK-DETAIL: %s:%d %s" % (host, port, exc.strerror or exc))
        return False
    log("NETWORK-DETAIL: %s:%d connected" % (host, port))
    return True


def trick(msg):
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 47123
    targets = [("127.0.0.1", port), ("1.1.1.1", 53), ("8.8.8.8", 53)]
    results = [attempt(host, port) for host, port in targets]
    log("NETWORK: open" if any(results) else "NETWORK: blocked")


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
