"""The rounds of each stored match, kept beside the results where a comparison needs them.

``referee compare --statistic round-score`` scores each match by the places of every round
(:mod:`referee.ranking.statistics`), which the store's result rows (the final standings)
do not hold. The comparison reads them from each match log as its result arrives and keeps
them here, in the results database, in the result's own transaction
(:meth:`~referee.tournament.store.Store.transaction`), so a resumed run reads them back
without opening a log, and a result is never stored without its rounds::

    match_rounds(match_key, places)   places: JSON, each round's seats in the order they
                                      finished it, e.g. [[2, 0, 1, 3], [0, 2, 3, 1]]

The table is created on first use, so a results folder written before it existed (or by a
comparison scored by ``final-score``) simply has none. What is read back is checked: a
row that is not such a list is refused in one line naming the match, never used.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from referee.errors import UsageError
from referee.tournament.store import Store

__all__ = ["RoundPlaces", "load_rounds", "save_rounds"]

RoundPlaces = tuple[tuple[int, ...], ...]
"""A match's rounds: each round's seats in the order they finished it (1st first)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS match_rounds (
    match_key TEXT PRIMARY KEY REFERENCES matches(key),
    places TEXT NOT NULL
)
"""


def save_rounds(db: sqlite3.Connection, key: str, rounds: Sequence[Sequence[int]]) -> None:
    """Keep the rounds of match ``key`` (call inside the store's transaction of its result)."""
    db.execute(_SCHEMA)
    db.execute(
        "INSERT INTO match_rounds VALUES (?, ?) ON CONFLICT(match_key) DO UPDATE SET "
        "places = excluded.places",
        (key, json.dumps([list(places) for places in rounds], separators=(",", ":"))),
    )


def load_rounds(store: Store) -> dict[str, RoundPlaces]:
    """The rounds kept for each match, by key (none in a folder that never kept any).

    Raises ``UsageError`` when a row is not a list of rounds of seat numbers.
    """
    try:
        rows = store.connection.execute("SELECT match_key, places FROM match_rounds").fetchall()
    except sqlite3.OperationalError:  # no such table: nothing was kept
        return {}
    found: dict[str, RoundPlaces] = {}
    for key, text in rows:
        try:
            data = json.loads(text)
            if not isinstance(data, list) or not all(
                isinstance(places, list)
                and all(isinstance(seat, int) and not isinstance(seat, bool) for seat in places)
                for places in data
            ):
                raise ValueError("not a list of rounds of seat numbers")
        except (ValueError, TypeError, RecursionError) as exc:
            raise UsageError(
                f"{store.path}: the rounds stored for {str(key)[:80]!r} cannot be read "
                f"({str(exc)[:80]}); run with --restart to discard these results"
            ) from None
        found[str(key)] = tuple(tuple(places) for places in data)
    return found
