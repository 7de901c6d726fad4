#!/usr/bin/env python3
"""Looks for a Dask cluster on loopback at its first `act`, tries to talk to it, then plays on.

Self-contained (a single-file bot sees only its own file): the polite loop of polite.py plus
the attack. It reads the listening sockets of its network namespace from /proc/net/tcp (the
process sandbox without bubblewrap shares the machine's), and talks to each listening
loopback port named in argv[1] (comma-separated): a real attacker would try them all; the
test names its own cluster's, since other runs share the machine. Per port it tries Dask's
wire protocol over plain TCP (a Dask member sends its handshake, msgpack naming
`compression` and `pickle-protocol`, as soon as a connection is open) and over TLS without a
client certificate (the most a bot can offer: it has no key the cluster's CA signed).

Markers on stderr: `CLUSTER-FOUND: <n> listening loopback ports`; per port
`CLUSTER-PORT <port>: listed|not listed`, `CLUSTER-TALK <port> plain|tls: dask answered` or
`... refused (<why>)`; last `CLUSTER: done`.
"""

import json
import os
import socket
import ssl
import sys

NAME = "cluster_client"
DASK_HANDSHAKE = (b"compression", b"pickle-protocol")


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


def listening_loopback_ports():
    """Ports in LISTEN state (0A) on 127.0.0.1 or any address, from /proc/net/tcp."""
    ports = set()
    with open("/proc/net/tcp") as table:
        next(table)
        for row in table:
            local, state = row.split()[1], row.split()[3]
            address, port = local.split(":")
            if state == "0A" and address in ("0100007F", "00000000"):
                ports.add(int(port, 16))
    return ports


def read_some(conn):
    """What the other side sends within a second of being spoken to."""
    conn.settimeout(1.0)
    got = b""
    try:
        # A Dask frame: count, lengths, then a msgpack'd handshake of our own.
        conn.sendall(b"\x01\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00")
        conn.sendall(b"\x81\xabcompression\xc0" + b"\x00" * 3)
        while len(got) < 4096:
            chunk = conn.recv(4096)
            if not chunk:
                break
            got += chunk
    except (OSError, ssl.SSLError) as exc:
        if not got:
            raise exc
    return got


def verdict(got):
    if all(word in got for word in DASK_HANDSHAKE):
        return "dask answered"
    return "refused (%d bytes, no Dask handshake: %r)" % (len(got), got[:16])


def talk_plain(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            return verdict(read_some(conn))
    except OSError as exc:
        return "refused (%s)" % (exc.strerror or exc)


def talk_tls(port):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # whatever the server shows: the bot wants in
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw:
            with context.wrap_socket(raw) as conn:
                return verdict(read_some(conn))
    except (OSError, ssl.SSLError) as exc:
        return "refused (%s)" % (getattr(exc, "reason", None) or exc.strerror or exc)


def trick():
    targets = [int(p) for p in sys.argv[1].split(",")] if len(sys.argv) > 1 else []
    listed = listening_loopback_ports()
    log("CLUSTER-FOUND: %d listening loopback ports" % len(listed))
    for port in targets:
        log("CLUSTER-PORT %d: %s" % (port, "listed" if port in listed else "not listed"))
        if port in listed:
            log("CLUSTER-TALK %d plain: %s" % (port, talk_plain(port)))
            log("CLUSTER-TALK %d tls: %s" % (port, talk_tls(port)))
    log("CLUSTER: done")


def main():
    tricked = False
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "act":
            if not tricked:
                tricked = True
                trick()
            send(dict(answer(msg), id=msg["id"]))
        elif kind == "bye":
            break
    os._exit(0)


if __name__ == "__main__":
    main()
