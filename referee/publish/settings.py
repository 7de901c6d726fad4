"""What a published leaderboard says about how its tournament was played.

A ranking means little without its conditions: the rules and every override of the preset
(``target = 10`` changes the game), the table size, the format, the deals, the seed, the
clock and the sandbox, each bot's version and SHA-256 (the files its results were played
with), when the matches were played and which referee published them. Every format of the
leaderboard carries them: JSON as an object, Markdown and the terminal as a few sentences
(:func:`settings_sentences`), the site as a table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BotRecord", "TournamentSettings", "format_time", "settings_sentences"]


@dataclass(frozen=True)
class BotRecord:
    """An entrant as its results were played: name, declared version, files' SHA-256."""

    name: str
    version: str | None
    sha256: str


@dataclass(frozen=True)
class TournamentSettings:
    """The settings of a tournament's file and store, as published with its leaderboard.

    ``overrides`` are the rule parameters the file changed from ``preset``, as written;
    ``played_from`` and ``played_to`` bound the stored matches (Unix times, ``None`` before
    any); ``published`` is when this leaderboard was made.
    """

    preset: str
    overrides: Mapping[str, Any]
    table_size: int
    format: str
    deals: int
    seed: int
    move_ms: int
    bank_ms: int
    hello_ms: int
    sandbox: str
    memory_mb: int
    bots: tuple[BotRecord, ...]
    referee_version: str
    published: float
    played_from: float | None = None
    played_to: float | None = None
    candidate: str | None = None
    gauntlet_matches: int | None = None
    ratings: Mapping[str, Any] = field(default_factory=dict)
    """The ``[ratings]`` keys the file sets (the defaults otherwise)."""
    tables: str = "all"
    """A round robin's tables: ``all`` groups of ``table_size``, or a ``balanced`` design."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (``settings`` in ``leaderboard.json``)."""
        return {
            "preset": self.preset,
            "overrides": dict(self.overrides),
            "table_size": self.table_size,
            "format": self.format,
            "tables": self.tables,
            "deals": self.deals,
            "seed": self.seed,
            "candidate": self.candidate,
            "gauntlet_matches": self.gauntlet_matches,
            "time": {"move_ms": self.move_ms, "bank_ms": self.bank_ms, "hello_ms": self.hello_ms},
            "sandbox": {"backend": self.sandbox, "memory_mb": self.memory_mb},
            "ratings": dict(self.ratings),
            "bots": [{"name": b.name, "version": b.version, "sha256": b.sha256} for b in self.bots],
            "played_from": None if self.played_from is None else format_time(self.played_from),
            "played_to": None if self.played_to is None else format_time(self.played_to),
            "published": format_time(self.published),
            "referee_version": self.referee_version,
        }

    def rules_text(self) -> str:
        """``arschloch`` or ``arschloch with target = 10, max_rounds = 20``."""
        if not self.overrides:
            return self.preset
        changes = ", ".join(f"{k} = {_value(v)}" for k, v in self.overrides.items())
        return f"{self.preset} with {changes}"

    def format_text(self) -> str:
        """The format, with a gauntlet's candidate and draws, or a round robin's tables."""
        if self.format == "gauntlet":
            return f"gauntlet of {self.candidate} over {self.gauntlet_matches} drawn tables"
        if self.tables == "balanced":
            return f"{self.format} on balanced tables (every pair of bots meets equally often)"
        return self.format

    def time_text(self) -> str:
        return (
            f"{self.move_ms} ms per request, a {self.bank_ms} ms bank per match, "
            f"{self.hello_ms} ms to start"
        )

    def played_text(self, made: str = "published") -> str:
        """When the stored matches were played, and when and by what this was ``made``
        (``published``; a board shown on a terminal was ``ranked``, not published)."""
        published = f"{made} {format_time(self.published)} by referee {self.referee_version}"
        if self.played_from is None or self.played_to is None:
            return f"No match played yet; {published}."
        return (
            f"Played {format_time(self.played_from)} to {format_time(self.played_to)}; {published}."
        )


def _value(value: Any) -> str:
    """A rule value as in the tournament file: ``10``, ``true``, ``"out"``, ``[2, 1]``."""
    return json.dumps(value, ensure_ascii=False)


def format_time(when: float) -> str:
    """A Unix time as ``2026-11-01 14:03 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when))


def settings_sentences(s: TournamentSettings, made: str = "published") -> list[str]:
    """The settings as sentences for Markdown and the terminal (bot names are untrusted:
    the caller escapes them for its medium); ``made`` as for :meth:`~TournamentSettings.
    played_text`."""
    ratings = ""
    if s.ratings:
        ratings = "; ratings " + ", ".join(f"{k} = {_value(v)}" for k, v in s.ratings.items())
    lines = [
        f"Settings: rules {s.rules_text()}; {s.table_size} per table; {s.format_text()}; "
        f"{s.deals} deals per table, each in every seat rotation; seed {s.seed}; "
        f"time {s.time_text()}; sandbox {s.sandbox} ({s.memory_mb} MB){ratings}.",
        s.played_text(made),
    ]
    return lines
