"""File names of the published site that people can read: bots and tables, not hashes.

A match key names its table by a hash (``rr/3f1c2a9b0d4e/d003/r1``); its page is named by
the table's bots instead, slugged (:func:`referee.sandbox.safe_name`), then the deal and
the rotation: ``alice-bob-carol_d003_r1.html``. Gauntlet draws and play-off rounds keep
their number (``g_...``, ``po001_...``). Two different tables whose names slug alike (or
display names without a letter a slug can keep) get the table's hash appended, so every
name is unique and stays the same whatever else the tournament holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from referee.text import safe_name

__all__ = ["bot_slugs", "match_names"]

_SLUG_PART = 20
"""Characters of each bot's slug in a match name: six bots stay well under 255 bytes."""
_TABLE_ID = re.compile(r"^[0-9a-f]{12}$")
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def bot_slugs(names: Iterable[str]) -> dict[str, str]:
    """A unique file-name slug for each bot name (``-2``, ``-3``... for slugs taken)."""
    slugs: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = safe_name(name)
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        slugs[name] = slug
    return slugs


def _short_slug(name: str) -> str:
    return safe_name(name)[:_SLUG_PART].strip("-._") or "bot"


def match_names(tables: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """A unique readable file stem for each match key, from its table (names by seat)."""
    stems: dict[str, str] = {}
    table_of: dict[str, tuple[str, str]] = {}
    for key, table in tables.items():
        parts = key.split("/")
        table_id = next((p for p in parts if _TABLE_ID.match(p)), "")
        bots = "-".join(sorted(_short_slug(name) for name in table))
        named = [bots if p == table_id else _UNSAFE.sub("-", p.lower()) for p in parts]
        if named[0] == "rr":
            named = named[1:]
        elif named[0] == "po" and len(named) > 1:
            named = [f"po{named[1]}", *named[2:]]
        stems[key] = "_".join(p for p in named if p)
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
