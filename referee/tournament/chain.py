"""The results chain: every stored result and its log, committed in order as they arrive.

A tournament's results folder is the organiser's: whoever holds it could delete a match,
edit a result, or write a log from scratch after the fact (the deal seed is in the store,
and a log made up from it replays). So each result is chained as it is stored: its
**entry** (the match key, the deal attempt and seed it was played on, the SHA-256 of its
log, and every seat's name, place, score, forfeit and fault kind) is hashed with the
**head** before it::

    head_0 = SHA-256("referee-results-chain" NUL commitment)
    head_n = SHA-256(head_(n-1) NUL entry_n)

The run prints the head as it goes and at its end, and the site publishes it: a head
someone saw during the run pins every result stored before it. ``referee verify``
recomputes every entry from the stored results and the logs and every head from the first,
so a result changed, removed or added later, or a log replaced, no longer leads to a head
anyone saw. The chain starts from the commitment of the tournament's first deal secret, so
it cannot be moved to another tournament.

The schedule is computed from the **plan** stored with the results (the tournament file's
text, the entrants and their authors), so the plan is chained too: the first link of every
chain is a **plan link** (:func:`plan_entry`: the SHA-256 of the plan and of the file's
text, each entrant's SHA-256, and the settings the plan gives), and a run that starts with
another plan (more deals, a bot added, other ``[ratings]``) adds one before its results.
The last plan link must be the stored plan: a plan changed afterwards, to make a schedule
fit the results, no longer leads to a head anyone saw.

A plan link also binds the **replacements** made so far (``--replace``,
:mod:`referee.tournament.replacement`): each one's generation, entrant and the SHA-256 of its
old and new files. A replacement changes an entrant's SHA-256, so it adds a plan link
before any result played after it; every result is thereby placed under the replacements
made before it, which is how ``referee verify`` tells the results of a replaced version
(which must be retired) from those of the version that replaced it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from referee.specs import Replacement
from referee.tournament.model import Plan

__all__ = [
    "Entry",
    "entry_text",
    "genesis",
    "log_digest",
    "next_head",
    "plan_entry",
    "replaced_in",
]

Entry = dict[str, Any]


def genesis(commitment: str) -> str:
    """The head before any result: tied to the tournament's first deal commitment."""
    return hashlib.sha256(b"referee-results-chain\0" + commitment.encode("ascii")).hexdigest()


def entry_text(
    key: str,
    attempt: int,
    seed: int,
    log_sha256: str,
    seats: Sequence[tuple[int, str, int, int, bool, str | None]],
) -> str:
    """The canonical text of one result: ``seats`` are ``(seat, name, place, score,
    forfeit, fault kind)``, in seat order."""
    data = {
        "key": key,
        "attempt": attempt,
        "seed": str(seed),
        "log": log_sha256,
        "seats": [list(seat) for seat in sorted(seats)],
    }
    return json.dumps(data, ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def plan_entry(
    plan: Plan, fingerprints: Mapping[str, str], replacements: Sequence[Replacement] = ()
) -> str:
    """The canonical text of a plan link: ``plan`` (SHA-256 of its canonical JSON), ``file``
    (SHA-256 of the tournament file's text, as ``referee tournament commit`` prints it),
    ``entrants`` (each stored entrant's SHA-256, by name), ``settings`` (what results
    depend on besides the bots, :meth:`Plan.settings`) and, once an entrant was replaced,
    ``replaced``: ``[generation, name, old SHA-256, new SHA-256]`` of each replacement."""
    data: dict[str, Any] = {
        "plan": log_digest(plan.to_json().encode("utf-8")),
        "file": log_digest(plan.source.encode("utf-8")),
        "entrants": dict(sorted(fingerprints.items())),
        "settings": plan.settings(),
    }
    if replacements:
        data["replaced"] = [
            [r.generation, r.name, r.old_sha256, r.new_sha256] for r in replacements
        ]
    return json.dumps(data, ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def replaced_in(entry: str) -> list[list[Any]] | None:
    """The ``replaced`` list of a plan link's entry (``[]`` before any replacement), or
    ``None`` when the entry is not a plan link's JSON object."""
    try:
        data = json.loads(entry)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    replaced = data.get("replaced", [])
    return replaced if isinstance(replaced, list) else None


def next_head(head: str, entry: str) -> str:
    """The head after ``entry``."""
    return hashlib.sha256(head.encode("ascii") + b"\0" + entry.encode("ascii")).hexdigest()


def log_digest(data: bytes) -> str:
    """SHA-256 of a log file's bytes, in hex."""
    return hashlib.sha256(data).hexdigest()
