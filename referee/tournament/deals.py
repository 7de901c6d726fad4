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

**A secret nobody can choose.** An organiser who draws the secret after seeing the entries
could draw again until the cards suit a favourite. So for a public competition the secret
is committed to before entries close (``referee tournament commit``), and a **beacon**, a
public value nobody knew then, is mixed in when the run starts (:func:`dealing_key`). The
commitment also fixes where the beacon will come from and how it is written (a
:class:`BeaconDeclaration`): otherwise the organiser could still choose, among the values
and spellings of "the public value" (another round of the beacon, upper or lower case, the
lottery's numbers in another order), the one whose cards suit them. With a declaration the
commitment is SHA-256 of the secret *and* the declaration (:func:`commitment`), and the
beacon has one spelling only (:meth:`BeaconDeclaration.normalise`): one source, one value,
one key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FORMS_HELP",
    "SECRET_BYTES",
    "SEED_BITS",
    "BeaconDeclaration",
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


def commitment(secret: bytes, declared: BeaconDeclaration | None = None) -> str:
    """The public commitment to ``secret``, in hex: its SHA-256, or, when a beacon was
    declared with it, the SHA-256 of ``referee-deal-commitment NUL <secret in hex> NUL
    <form> NUL <source>`` (UTF-8), which binds the declaration too."""
    if declared is None:
        return hashlib.sha256(secret).hexdigest()
    text = "\0".join(("referee-deal-commitment", secret.hex(), declared.form, declared.source))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_HEX_FORM = re.compile(r"hex:([0-9]{1,3})")
_NUMBERS_FORM = re.compile(r"numbers:([0-9]{1,2})")
_HEX_BYTES = (4, 512)
_NUMBERS = (1, 64)
_SOURCE_MAX = 500
_NUMBER = re.compile(r"[0-9]{1,18}")
FORMS_HELP = "hex:N (N bytes as 2N hex digits, 4 to 512) or numbers:N (N whole numbers, 1 to 64)"


@dataclass(frozen=True)
class BeaconDeclaration:
    """Where the beacon of a committed secret will come from, and how it is written: fixed
    by ``referee tournament commit`` and bound into the commitment.

    ``source`` names the public value in words anyone can follow to look it up (``drand
    quicknet round 12345678, randomness``; ``the first NIST beacon pulse after 2026-05-01
    12:00 UTC, outputValue``; ``the EuroMillions draw of 2026-05-01, main numbers``).
    ``form`` is how it is written, with one spelling only: ``hex:N``, N bytes as 2N
    lower-case hexadecimal digits (a drand round's randomness is ``hex:32``, a NIST pulse's
    outputValue ``hex:64``), or ``numbers:N``, N whole numbers in ascending order, one space
    apart (a lottery draw, in whatever order it was drawn).
    """

    source: str
    form: str

    @classmethod
    def parse(cls, source: str, form: str) -> BeaconDeclaration:
        """A declaration as given to ``commit``; ``ValueError`` naming what is wrong."""
        text = source.strip()
        if not text:
            raise ValueError("the beacon source is empty; name where the value will come from")
        if len(text.encode("utf-8")) > _SOURCE_MAX:
            raise ValueError(f"the beacon source is longer than {_SOURCE_MAX} bytes")
        if not text.isprintable():
            raise ValueError("the beacon source holds control characters")
        declared = cls(text, form.strip().lower())
        declared.size()
        return declared

    def size(self) -> tuple[str, int]:
        """``("hex", bytes)`` or ``("numbers", count)``; ``ValueError`` for another form."""
        for kind, pattern, (low, high) in (
            ("hex", _HEX_FORM, _HEX_BYTES),
            ("numbers", _NUMBERS_FORM, _NUMBERS),
        ):
            found = pattern.fullmatch(self.form)
            if found:
                count = int(found.group(1))
                if not low <= count <= high:
                    raise ValueError(f"the beacon form {self.form}: N is {low} to {high}")
                return kind, count
        raise ValueError(f"the beacon form {self.form[:40]!r} is not one of {FORMS_HELP}")

    def describe(self) -> str:
        """The form in words, e.g. ``32 bytes, written as 64 lower-case hex digits``."""
        kind, count = self.size()
        if kind == "hex":
            return f"{count} bytes, written as {2 * count} lower-case hex digits"
        numbers = f"{count} whole number{'s' * (count != 1)}"
        return f"{numbers}, written in ascending order, one space apart"

    def normalise(self, value: str) -> str:
        """``value`` written in the declared form, its one spelling (hex: an ``0x`` prefix
        dropped and lower case; numbers: separated by spaces or commas, leading zeros
        dropped, sorted); ``ValueError`` saying why it is not of the form."""
        kind, count = self.size()
        text = value.strip()
        if kind == "hex":
            digits = text[2:] if text[:2].lower() == "0x" else text
            digits = digits.lower()
            if not re.fullmatch(r"[0-9a-f]*", digits):
                raise ValueError(f"the beacon is declared as {self.describe()}; this is not hex")
            if len(digits) != 2 * count:
                raise ValueError(
                    f"the beacon is declared as {self.describe()}; this has {len(digits)} digits"
                )
            return digits
        parts = [part for part in re.split(r"[\s,;]+", text) if part]
        wrong = next((part for part in parts if not _NUMBER.fullmatch(part)), None)
        if wrong is not None:
            raise ValueError(
                f"the beacon is declared as {self.describe()}; {wrong[:20]!r} is not a whole number"
            )
        if len(parts) != count:
            raise ValueError(
                f"the beacon is declared as {self.describe()}; this has {len(parts)} numbers"
            )
        return " ".join(str(n) for n in sorted(int(part) for part in parts))


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
    the cards depend on a value revealed only afterwards. ``beacon`` is written in the form
    declared with the commitment (:meth:`BeaconDeclaration.normalise`), so it has one
    spelling. Without a beacon the secret alone deals (a secret drawn when the run starts).
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
