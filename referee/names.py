"""Display names of bots: what a name may hold, and when two names look the same.

A display name is shown to people on the terminal, in the leaderboard and on the site, so it
must be readable and must not pass for another entrant's. :func:`check_name` accepts 1 to
:data:`MAX_NAME_LENGTH` printable characters without spaces at the ends, and refuses
invisible ones outright: format characters (category Cf: zero-width spaces and joiners,
bidirectional overrides) are not printable, and the other default-ignorable code points
(a Hangul filler, a combining grapheme joiner, variation selectors) are listed here.

:func:`skeleton` is the name's look, after Unicode Technical Standard #39: two names with the
same skeleton are *confusable* (``"h\u0435uristic"`` with a Cyrillic ie and ``"heuristic"``;
the same in fullwidth forms; ``"Alice"`` and ``"AIice"`` with a capital i). The table is
``data/confusables.tsv``, generated from Unicode's ``confusables.txt`` by
``data/make_confusables.py``. Unlike the standard's skeleton it also ignores case and
compatibility forms (NFKD instead of NFD), because a leaderboard reader cannot tell
"Heuristic" from "heuristic" either.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from referee.errors import UsageError
from referee.resources import confusables_table

__all__ = [
    "IDENTIFIER_PATTERN",
    "MAX_NAME_LENGTH",
    "check_identifier",
    "check_name",
    "confusable_with",
    "lookalike_note",
    "skeleton",
]

MAX_NAME_LENGTH = 64

IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""What a name that names a folder, a URL or an account may hold: a tournament's name (it
names the results folder) and a server's author (:mod:`referee.server.authors`). Plain
ASCII letters, digits, ``.``, ``_`` and ``-``, a letter or a digit first, at most 64: no
markup, no spaces, nothing a terminal, a page or a path could read otherwise."""

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)

# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties.txt) that Python still calls
# printable; the rest of that property is category Cf, which str.isprintable() refuses.
_INVISIBLE = (
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x115F, 0x1160),  # HANGUL CHOSEONG / JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ / AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS
    (0x2800, 0x2800),  # BRAILLE PATTERN BLANK (not default-ignorable, but blank)
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTORS
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM ... END PHRASE
    (0xE0000, 0xE0FFF),  # TAGS and VARIATION SELECTORS SUPPLEMENT
)


def _invisible(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _INVISIBLE)


def _describe(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"


def check_name(name: str, where: str = "name") -> str:
    """``name`` if it may be a display name, else :class:`UsageError` naming ``where``."""
    if not name.strip():
        raise UsageError(f"{where}: the bot name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise UsageError(
            f"{where}: the bot name is {len(name)} characters long; at most "
            f"{MAX_NAME_LENGTH} are allowed"
        )
    for char in name:
        if not char.isprintable():
            raise UsageError(
                f"{where}: the bot name {name!r} has a non-printable character U+{ord(char):04X}"
            )
        if _invisible(char):
            raise UsageError(
                f"{where}: the bot name {name!r} has an invisible character {_describe(char)}"
            )
    if name != name.strip():
        raise UsageError(f"{where}: the bot name {name!r} starts or ends with spaces")
    return name


def check_identifier(name: str, what: str) -> str:
    """``name`` if it matches :data:`IDENTIFIER_PATTERN`, else :class:`UsageError` in one
    line saying what ``what`` (e.g. "author name") may hold; the name is shown only cut
    short and escaped, as it may be anything."""
    if _IDENTIFIER.fullmatch(name) is None:
        shown = repr(name[:40]) + ("..." if len(name) > 40 else "")
        raise UsageError(
            f"{what} {shown} is not allowed: use 1 to {MAX_NAME_LENGTH} ASCII letters, digits, "
            "'.', '_' or '-', starting with a letter or a digit"
        )
    return name


@functools.cache  # an immutable value: the package's own table, read once, a read-only view
def _lookalikes() -> Mapping[int, str]:
    """The table: a code point -> the characters it looks like."""
    table: dict[int, str] = {}
    for line in confusables_table().splitlines():
        if line.startswith("#") or not line:
            continue
        source, target = line.split("\t")
        table[int(source, 16)] = "".join(chr(int(code, 16)) for code in target.split())
    return MappingProxyType(table)


def _mapped(text: str) -> str:
    """NFKD, each character replaced by its look-alike, NFKD again (UTS #39 with NFKD)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFKD", decomposed.translate(_lookalikes()))


def skeleton(name: str) -> str:
    """What ``name`` looks like: equal skeletons mean the names can be mistaken for each other.

    Mapped before case folding (the table knows that a capital I looks like a small l) and
    after it (folding may produce characters that have look-alikes).
    """
    return _mapped(_mapped(name).casefold())


def confusable_with(name: str, others: Iterable[str]) -> str | None:
    """The first of ``others`` that ``name`` can be mistaken for (itself included), if any."""
    mine = skeleton(name)
    return next((other for other in others if skeleton(other) == mine), None)


def lookalike_note(name: str, other: str) -> str:
    """Why ``name`` passes for ``other``: its characters that are not in ``other``, named."""
    if name == other:
        return "the same name"
    if name.casefold() == other.casefold():
        return "they differ only in case"
    odd = [char for char in dict.fromkeys(name) if char not in other]
    if not odd:
        return "their letters look alike"
    shown = ", ".join(_describe(char) for char in odd[:3])
    return f"it has {shown}" + (" …" if len(odd) > 3 else "")
