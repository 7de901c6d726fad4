#!/usr/bin/env python3
"""A bot that tries to read opponents' hands through a covert channel between its copies.

Copies of one bot run at once (idle pooled copies, parallel workers) and share the kernel:
``python3 spy.py cache`` signals through the page cache of ``pad.bin``, a file of its own
folder every copy sees (a page read in is a 1; residency read with RWF_NOWAIT, cleared with
fadvise DONTNEED, which a read-only file allows); ``python3 spy.py lock`` through open-file-description read locks
on it (F_OFD_SETLK by the writer, which keeps them while it lives; F_OFD_GETLK by a reader).

At each match it reads the slot of its deal (slots are named by the match id without its
rotation, which is the deal under ``duplicate = "rotations"``), then writes its own hand
there. When a hand read holds every card some other seat played in round 1 (at least 4)
and none another seat played, it has learned that seat's hand: it says so on stderr and answers garbage at its next request, so the
referee records a fault with the stderr as evidence (the tests read it). Otherwise it plays
the first legal play, like ``polite``.
"""

import fcntl
import hashlib
import json
import mmap
import os
import struct
import sys
import time

PAGE = mmap.PAGESIZE
SLOT_BITS = 64  # 52 card bits + a 12-bit check
SLOTS = 16
PAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pad.bin")
MODE = sys.argv[1] if len(sys.argv) > 1 else "cache"
_HELD = []  # open files whose locks must outlive the match (the channel's memory)


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def encode(cards, deck):
    bits = 0
    for card in cards:
        bits |= 1 << deck.index(card)
    check = int.from_bytes(hashlib.sha256(bits.to_bytes(8, "big")).digest()[:2], "big") & 0xFFF
    return bits | (check << 52)


def decode(word, deck):
    bits = word & ((1 << 52) - 1)
    check = int.from_bytes(hashlib.sha256(bits.to_bytes(8, "big")).digest()[:2], "big") & 0xFFF
    if word >> 52 != check or bits == 0:
        return None
    return [card for i, card in enumerate(deck) if bits >> i & 1]


def slot_of(match_id):
    deal = match_id.rsplit("/r", 1)[0]
    return int.from_bytes(hashlib.sha256(deal.encode()).digest()[:4], "big") % SLOTS


# --- page cache ------------------------------------------------------------------------
# mincore() reports every page as resident on a file the caller may not write (Linux 5.2),
# so a page is read with RWF_NOWAIT instead: it fails when the page is not cached. A miss
# also starts reading the page in, so a read destroys the slot: the reader writes its own
# hand into it right after, once those reads have landed.


def _cached(fd, page):
    try:
        os.preadv(fd, [bytearray(1)], page * PAGE, os.RWF_NOWAIT)
    except BlockingIOError:
        return False
    return True


def cache_read(slot):
    fd = os.open(PAD, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        word = 0
        for bit in range(SLOT_BITS):
            if _cached(fd, slot * SLOT_BITS + bit):
                word |= 1 << bit
        return word
    finally:
        os.close(fd)


def cache_write(slot, word, found):
    """Write ``word`` into a fresh slot (read as all zeros), or into any slot while the file
    is as the referee wrote it (read as all ones: cached in large folios, which only a
    drop of the whole file clears). A slot read already holds garbage: left alone."""
    fd = os.open(PAD, os.O_RDONLY)
    try:
        start = slot * SLOT_BITS * PAGE
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        if found == (1 << SLOT_BITS) - 1:
            os.fsync(fd)  # allowed on a read-only file: dirty pages cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        elif found != 0:
            return
        time.sleep(0.2)  # the reads a miss started land first, then the slot is cleared
        os.posix_fadvise(fd, start, SLOT_BITS * PAGE, os.POSIX_FADV_DONTNEED)
        for bit in range(SLOT_BITS):
            if word >> bit & 1:
                os.pread(fd, 1, start + bit * PAGE)
    finally:
        os.close(fd)


# --- file locks ------------------------------------------------------------------------

F_OFD_GETLK, F_OFD_SETLK = 36, 37


def _flock(kind, start):
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, 1, 0)


def lock_read(slot):
    fd = os.open(PAD, os.O_RDONLY)
    try:
        word = 0
        for bit in range(SLOT_BITS):
            probe = fcntl.fcntl(fd, F_OFD_GETLK, _flock(fcntl.F_WRLCK, slot * SLOT_BITS + bit))
            if struct.unpack("hhqqi4x", probe)[0] != fcntl.F_UNLCK:
                word |= 1 << bit
        return word
    finally:
        os.close(fd)


def lock_write(slot, word, found):
    fd = os.open(PAD, os.O_RDONLY)
    for bit in range(SLOT_BITS):
        if word >> bit & 1:
            fcntl.fcntl(fd, F_OFD_SETLK, _flock(fcntl.F_RDLCK, slot * SLOT_BITS + bit))
    _HELD.append(fd)


def channel(match_id, own, deck):
    """Read the deal's slot, then write our hand into it; returns the hand read (or None)."""
    slot = slot_of(match_id)
    try:
        word = (cache_read if MODE == "cache" else lock_read)(slot)
        (cache_write if MODE == "cache" else lock_write)(slot, encode(own, deck), word)
    except OSError as exc:
        log(f"channel refused: {exc}")
        return None
    heard = decode(word, deck)
    if heard is not None and not set(heard) & set(own):
        log(f"heard {match_id}: {' '.join(heard)}")
        return heard
    return None


def main():
    deck, match_id, seat, heard, learned = [], "", 0, None, None
    played = {}
    round_no = 0
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": "spy"})
        elif kind == "match_start":
            rules = msg["rules"]
            deck = [rank + suit for rank in rules["ranks"] for suit in rules["suits"]]
            match_id, seat, heard, learned, played = msg["match"], msg["seat"], None, None, {}
        elif kind == "round_start":
            round_no = msg["round"]
            if round_no == 1:
                heard = channel(match_id, msg["hand"], deck)
        elif kind == "played" and round_no == 1 and msg["seat"] != seat:
            played.setdefault(msg["seat"], []).extend(msg["cards"])
        elif kind == "round_end" and round_no == 1 and heard:
            for other, cards in sorted(played.items()):
                rest = {c for s, seen in played.items() if s != other for c in seen}
                if len(cards) >= 4 and set(cards) <= set(heard) and not rest & set(heard):
                    learned = (other, heard)
                    log(f"LEARNED {match_id} seat {other}: {' '.join(heard)}")
        elif kind == "act":
            if learned is not None:
                sys.stdout.write("I know your cards\n")
                sys.stdout.flush()
                learned = None
                continue
            legal = msg.get("legal") or [[]]
            hand = msg.get("hand") or []
            if msg["kind"] == "give":
                send({"id": msg["id"], "cards": hand[: msg["count"]]})
            elif msg["kind"] == "leftover":
                send({"id": msg["id"], "take": msg["offer"][0], "discard": hand[0]})
            else:
                send({"id": msg["id"], "cards": legal[0]})
        elif kind == "bye":
            break


if __name__ == "__main__":
    main()
