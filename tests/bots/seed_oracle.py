#!/usr/bin/env python3
"""Hostile: tries to recover the deal seed from its own hand, then read everyone's cards.

The engine's deal is public: a Mersenne Twister seeded with the match seed draws 32 bits per
card, the deck sorted by them is dealt one card at a time from the dealer's left. This bot
tries every small seed, every number in the match id, and the ``seed`` of ``match_start``
(protocol 1.2: a seed for the bot's own random choices) with a few obvious transforms, until
one deals it its own hand.
If it ever finds the seed it makes that visible by replying with a card that does not
exist (an illegal fault the tests look for) and saying so on stderr; otherwise it plays
like polite.py.
"""

import json
import random
import re
import sys

NAME = "seed-oracle"
SMALL_SEEDS = 20_000


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def deal(seed, n, rules):
    ranks, suits = rules["ranks"], rules["suits"]
    names = [r + s for r in ranks for s in suits]
    size = len(names)
    bits = random.Random(seed).getrandbits(32 * size).to_bytes(4 * size, "little")
    keys = [int.from_bytes(bits[4 * i : 4 * i + 4], "little") for i in range(size)]
    deck = sorted(range(size), key=keys.__getitem__)
    dealt = size if rules["deal"] == "all" else size // n * n
    return [sorted(names[c] for c in deck[(s - 1) % n : dealt : n]) for s in range(n)]


def candidates(match_id, bot_seed=None):
    if isinstance(bot_seed, int):
        # The seed bots are given: as it is, its halves, and its neighbours.
        yield from (bot_seed, bot_seed >> 21, bot_seed & 0xFFFFFFFF, bot_seed - 1, bot_seed + 1)
        for seat in range(8):
            yield bot_seed - seat
            yield bot_seed ^ seat
    yield from range(SMALL_SEEDS)
    for token in re.findall(r"[0-9a-fA-F]+", match_id):
        yield int(token, 16)
        if token.isdigit():
            yield int(token)


def search(state, hand):
    n = len(state["players"])
    mine = sorted(hand)
    for seed in candidates(state["match"], state.get("seed")):
        if deal(seed, n, state["rules"])[state["seat"]] == mine:
            return seed
    return None


def main():
    state = {}
    found = None
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            send({"id": msg["id"], "type": "ready", "name": NAME})
        elif kind == "match_start":
            state = msg
            found = None
        elif kind == "round_start" and msg.get("round") == 1:
            found = search(state, msg["hand"])
            if found is not None:
                print(f"FOUND the deal seed {found}", file=sys.stderr, flush=True)
        elif kind == "act":
            if found is not None:
                send({"id": msg["id"], "cards": ["QQ"]})  # shows the find as a fault
                continue
            hand = msg.get("hand") or []
            if msg.get("kind") == "give":
                send({"id": msg["id"], "cards": hand[: msg["count"]]})
            elif msg.get("kind") == "leftover":
                send({"id": msg["id"], "take": msg["offer"][0], "discard": hand[0]})
            else:
                send({"id": msg["id"], "cards": (msg.get("legal") or [[]])[0]})
        elif kind == "bye":
            return


if __name__ == "__main__":
    main()
