"""Untrusted text made safe to show, and words for people.

A leaf module (it imports nothing of the referee): bot names, bot output and tournament
files are untrusted text, and every layer that prints them, or names a file after them,
uses the same three functions:

* :func:`printable`: text safe for a terminal (control and format characters escaped);
* :func:`safe_name`: a file-system-safe slug of a display name;
* :func:`ordinal`: ``1st``, ``2nd``, ``3rd``, ``4th``...
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ordinal", "printable", "safe_name"]

_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}
_SLUG_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_SLUG_LENGTH = 40


def printable(text: str) -> str:
    """Untrusted text made safe for a terminal: control characters shown as escapes.

    The one sanitiser for everything the referee prints: whatever Python does not call
    printable (C0 and C1 controls such as ESC, CSI, BEL, CR and backspace; format
    characters such as the bidirectional overrides U+202A-U+202E and U+2066-U+2069; line
    and paragraph separators; unassigned code points) is shown as its escape, ``\\x1b``.
    """
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``..."""
    return _ORDINAL.get(n, f"{n}th")


def safe_name(name: str) -> str:
    """A file-system-safe slug of a display name: ``"Quick Fox 2!"`` -> ``"quick-fox-2"``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_UNSAFE.sub("-", ascii_name.lower()).strip("-._")[:_SLUG_LENGTH].strip("-._")
    return slug or "bot"
