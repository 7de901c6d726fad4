"""The bot kits' safety net as the referee sees it: the marker lines a kit writes on stderr.

A kit (``protocol/kits/``) that replaces a decision of its bot with a safe one (a decision
the rules would refuse, or one that raised) writes one line on stderr that starts with
:data:`KIT_MARKER`, followed by a JSON object (protocol/SPEC.md, "The kits' safety net")::

    botkit: replaced {"id":12,"kind":"play","decided":["8H"],"sent":[],"why":"not allowed"}

The channel counts such lines as the bot's stderr flows, whatever else the bot writes
(:class:`~referee.protocol.channel.LineChannel`); :func:`read_marker` reads one back. Nothing
in a marker is trusted: it is the bot's own output, and a line that only starts like one
still counts against the bot that wrote it.
"""

from __future__ import annotations

import json
from typing import Any

from referee.results import KitReplacement

__all__ = ["KIT_MARKER", "KIT_NOTES", "NOTE_BYTES", "marker_id", "read_marker"]

KIT_MARKER = b"botkit: replaced "
"""The start of the stderr line a kit writes for each decision it replaced."""
KIT_NOTES = 8
"""Marker lines kept per match and seat (the rest are only counted): the first ones name
the requests an author looks at first."""
NOTE_BYTES = 1024
"""A kept marker line is cut to this many bytes."""


def marker_id(line: bytes) -> int | None:
    """The request id a marker line names, if it names one."""
    data = _decode(line)
    rid = data.get("id")
    return rid if type(rid) is int else None


def read_marker(line: bytes, request: dict[str, Any] | None = None) -> KitReplacement:
    """One marker line (with or without :data:`KIT_MARKER`) as a :class:`KitReplacement`.

    ``request`` is the request it answered, when the caller has it. A marker whose JSON
    cannot be read (cut, or not JSON) still stands for one replaced decision, told as such.
    """
    data = _decode(line)
    if not data:
        return KitReplacement(why="unreadable marker", request=request)
    rid = data.get("id")
    error = data.get("error")
    return KitReplacement(
        request_id=rid if type(rid) is int else None,
        kind=str(data.get("kind"))[:20] if data.get("kind") is not None else None,
        decided=data.get("decided"),
        sent=data.get("sent"),
        why=str(data.get("why", ""))[:40],
        error=str(error)[:200] if error is not None else None,
        request=request,
    )


def _decode(line: bytes) -> dict[str, Any]:
    body = line.removeprefix(KIT_MARKER).strip()
    try:
        data = json.loads(body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
