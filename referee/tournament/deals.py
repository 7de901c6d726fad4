"""Secret, verifiable deals: deal seeds that no bot can recover and anyone can check later.

The engine deals from a seeded generator whose algorithm is public, so whoever knows a
match's seed knows every hand in it. A seed a bot could guess (a small number, the
tournament file's ``seed``, anything in a match id) would let it try seeds until one gives
its own hand, and then read everybody's cards. So deal seeds come from a **secret** of
:data:`SECRET_BYTES` random bytes through HMAC-SHA256: without the secret, the seed of a
deal is 128 bits no bot can search, and nothing a bot receives is computed from the secret.

The secret is committed to before any match is played and revealed when the tournament is
over: :func:`commitment` (its SHA-256) is shown when a run starts, and once every match is
done the secret itself is published, so anyone can re-derive every deal seed with
:func:`deal_seed` and replay every log (``referee verify``). A secret, once revealed, never
deals another match: a tournament extended afterwards gets a new secret for its new deals.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

__all__ = [
    "SECRET_BYTES",
    "SEED_BITS",
    "commitment",
    "deal_seed",
    "dealing_key",
    "new_secret",
    "parse_beacon",
    "parse_secret",
    "redeal_seed",
]

SECRET_BYTES = 32
"""256 random bits from the operating system's generator."""

SEED_BITS = 128
"""Bits of a derived deal seed (the engine seeds its generator with all of them)."""


def new_secret() -> bytes:
    """A fresh secret from the operating system's cryptographic generator."""
    return secrets.token_bytes(SECRET_BYTES)


def commitment(secret: bytes) -> str:
    """The public commitment to ``secret``: its SHA-256, in hex."""
    return hashlib.sha256(secret).hexdigest()


def deal_seed(secret: bytes, *parts: Any) -> int:
    """The deal seed for the deal named by ``parts`` (JSON values), keyed by ``secret``.

    ``parts`` name the deal publicly (the tournament seed and the deal's key, say); every
    seat rotation of one deal names it the same way and so gets the same cards.
    """
    message = json.dumps(parts, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return int.from_bytes(digest[: SEED_BITS // 8], "big")


def dealing_key(secret: bytes, beacon: str | None) -> bytes:
    """The key deal seeds are derived with: the secret, with the beacon mixed in when given.

    A beacon is a public value nobody knew when the secret was committed to (a lottery
    draw, a randomness beacon's round): with it mixed in, an organiser who committed to the
    secret before entries closed cannot have picked a secret that favours an entrant, since
    the cards depend on a value revealed only afterwards. Without a beacon the secret alone
    deals (as before beacons existed).
    """
    if beacon is None:
        return secret
    return hmac.new(secret, b"beacon\0" + beacon.encode("utf-8"), hashlib.sha256).digest()


def redeal_seed(key: bytes, seed: int, match_key: str, attempt: int) -> int:
    """Fresh cards for attempt ``attempt`` (1, 2, ...) of the match ``match_key``.

    A match that was started and did not finish (a worker that died, an interrupted run,
    a failure on our side) was seen by its bots, at least in part: it is never played on
    the same cards again. Attempt 0 plays the scheduled deal; every later attempt gets a
    deal of its own, derived like every other deal, so ``referee verify`` re-derives it.
    """
    if attempt < 1:
        raise ValueError("attempt 0 plays the scheduled deal")
    return deal_seed(key, "redeal", seed, match_key, attempt)


_BEACON_MAX = 1024


def parse_beacon(text: str) -> str:
    """A beacon value as given on the command line: printable text of at most 1 KiB."""
    value = text.strip()
    if not value:
        raise ValueError("the beacon is empty")
    if len(value.encode("utf-8")) > _BEACON_MAX:
        raise ValueError(f"the beacon is longer than {_BEACON_MAX} bytes")
    if not value.isprintable():
        raise ValueError("the beacon holds control characters; give it as printable text")
    return value


def parse_secret(text: str) -> bytes:
    """A secret written as hex (as revealed); ``ValueError`` with the reason otherwise."""
    cleaned = text.strip().lower()
    try:
        secret = bytes.fromhex(cleaned)
    except ValueError:
        raise ValueError("a deal secret is written as hexadecimal digits") from None
    if len(secret) < 16:
        raise ValueError(f"a deal secret needs at least 128 bits; this one has {8 * len(secret)}")
    return secret
