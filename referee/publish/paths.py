"""File names of the published site that people can read: bots and tables, not hashes.

A match key names its table by a hash (``rr/3f1c2a9b0d4e/d003/r1``); its page is named by
the table's bots instead, slugged, then the deal and the rotation:
``alice-bob-carol_d003_r1.html``. Gauntlet draws and play-off rounds keep their number
(``g_...``, ``po001_...``). Two different tables whose names slug alike (or display names
without a letter a slug can keep) get the table's hash appended, so every name is unique
and stays the same whatever else the tournament holds.

Display names are untrusted, so a name in the site is built, never cut out of one: a
:func:`site_slug` holds only ``a-z``, ``0-9`` and ``-`` (no dot, so nothing after it can
pass for a suffix; no slash, backslash, control character or ``..``; Unicode look-alikes
folded to ASCII or dropped; never empty, never a leading dash, at most 40 characters, never
a name Windows reserves), and the site appends its own suffix to a stem it built
(:func:`file_name`), which checks the result again. A dot in ``"Dr. Who"`` once let
``Path.with_suffix`` cut every stem of that bot's tables at the dot, mapping all their
replays to one file name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from referee.text import safe_name

__all__ = ["SUFFIXES", "bot_slugs", "file_name", "is_slug", "match_names", "site_slug"]

_SLUG_PART = 20
"""Characters of each bot's slug in a match name: six bots stay well under 255 bytes."""
_TABLE_ID = re.compile(r"^[0-9a-f]{12}$")
_UNSAFE = re.compile(r"[^a-z0-9]+")
_STEM = re.compile(r"[a-z0-9][a-z0-9_-]{0,199}")
_RESERVED = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))]
)
"""Device names Windows will not open as files, whatever the suffix (a site may be copied
there)."""
SUFFIXES = frozenset([".html", ".js", ".jsonl", ".css", ".md", ".json", ".csv", ".stderr.js"])
"""The only suffixes the site writes."""


def site_slug(name: str) -> str:
    """A display name as a file-name part: ``"Dr. Who"`` -> ``"dr-who"`` (see the module)."""
    slug = _UNSAFE.sub("-", safe_name(name)).strip("-") or "bot"
    return f"{slug}-bot" if slug in _RESERVED else slug


def file_name(stem: str, suffix: str) -> str:
    """``stem + suffix``, refusing anything but a stem this module builds and a known suffix.

    A ``ValueError`` here is a bug in the site, never the bots' doing: every stem comes
    from :func:`site_slug`, :func:`bot_slugs` or :func:`match_names`.
    """
    if not _STEM.fullmatch(stem) or suffix not in SUFFIXES:
        raise ValueError(f"not a file name the site makes: {stem!r} + {suffix!r}")
    return stem + suffix


def is_slug(stem: str) -> bool:
    """Whether ``stem`` is a stem this module could have built (a file name of the site)."""
    return _STEM.fullmatch(stem) is not None


def bot_slugs(names: Iterable[str], known: Mapping[str, str] | None = None) -> dict[str, str]:
    """A unique file-name slug for each bot name (``-2``, ``-3``... for slugs taken); the
    names in ``known`` keep the slug given there (a league's pages keep their address), and
    the others get slugs none of those has."""
    slugs: dict[str, str] = dict(known or {})
    taken: set[str] = set(slugs.values())
    for name in names:
        if name in slugs:
            continue
        base = site_slug(name)
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        slugs[name] = slug
    return slugs


def _short_slug(name: str) -> str:
    return site_slug(name)[:_SLUG_PART].strip("-") or "bot"


def match_names(tables: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """A unique readable file stem for each match key, from its table (names by seat)."""
    stems: dict[str, str] = {}
    table_of: dict[str, tuple[str, str]] = {}
    for key, table in tables.items():
        parts = key.split("/")
        table_id = next((p for p in parts if _TABLE_ID.match(p)), "")
        bots = "-".join(sorted(_short_slug(name) for name in table))
        named = [bots if p == table_id else _UNSAFE.sub("-", p.lower()).strip("-") for p in parts]
        if named[0] == "rr":
            named = named[1:]
        elif named[0] == "po" and len(named) > 1:
            named = [f"po{named[1]}", *named[2:]]
        stems[key] = "_".join(p for p in named if p) or "match"
        table_of[key] = (table_id, bots)
    by_stem: dict[str, set[str]] = {}
    for key, stem in stems.items():
        by_stem.setdefault(stem, set()).add(table_of[key][0])
    for key, stem in stems.items():
        if len(by_stem[stem]) > 1:  # two tables slug alike: the hash tells them apart
            stems[key] = f"{stem}_{table_of[key][0][:8]}"
    seen: set[str] = set()
    for key in sorted(stems):  # keys without a table hash that still collide: number them
        stem, n = stems[key], 1
        while stems[key] in seen:
            n += 1
            stems[key] = f"{stem}_{n}"
        seen.add(stems[key])
    return stems
