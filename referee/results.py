"""What a finished match reports: the data that flows from a match to the store and ratings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from referee.errors import FaultKind


class FaultInfo(BaseModel):
    """The fault that made a seat forfeit: what, and the evidence (as in the match log).

    ``request_id`` is the request the bot failed (``None`` before any, e.g. at start-up),
    ``reply`` the offending line cut to 200 bytes (``None`` when there was none: a timeout, a
    crash), ``elapsed_ms`` how long the bot took. ``request`` is the last request written to
    the bot (``hello`` or an ``act``, as sent; the one it failed when its ``id`` is
    ``request_id``) and ``round`` the round then: the context a fault report explains
    the fault in (:mod:`referee.protocol.explain`). Neither is in the match log, which holds the
    whole game anyway.
    """

    model_config = ConfigDict(frozen=True)

    kind: FaultKind
    detail: str
    request_id: int | None = None
    reply: str | None = None
    elapsed_ms: int | None = None
    request: dict[str, Any] | None = None
    round: int | None = None
    answered: int | None = None
    """Requests of this match the seat had answered in time before it failed (``None``:
    not counted, as for a fault at ``hello``): a bot that answered many and then ran out
    of its bank was slow, one that never answered may not flush its output."""


class KitReplacement(BaseModel):
    """A decision the bot's kit replaced with a safe one (the kits' safety net), as the
    kit's marker line on stderr told it (protocol/SPEC.md, "The kits' safety net").

    ``decided`` is what the bot's own code returned (``None`` when it raised: ``error``
    says what), ``sent`` what the kit answered instead, ``why`` ``"not allowed"`` or
    ``"raised"``. Everything but ``request`` comes from the bot: untrusted text.
    ``request`` is the request it answered, when the referee still had it at hand.
    """

    model_config = ConfigDict(frozen=True)

    request_id: int | None = None
    kind: str | None = None
    decided: Any = None
    sent: Any = None
    why: str = ""
    error: str | None = None
    request: dict[str, Any] | None = None


class SeatResult(BaseModel):
    """One seat's line in the match standings."""

    model_config = ConfigDict(frozen=True)

    seat: int
    name: str
    place: int
    score: int
    forfeit: bool
    fault: FaultInfo | None = None
    kit_replaced: int = 0
    """Decisions the bot's kit replaced with safe ones in this match (its marker lines)."""
    kit_replacements: tuple[KitReplacement, ...] = ()
    """The first few of them, read back from the marker lines."""


class MatchResult(BaseModel):
    """The outcome of one match, as ``referee play --json`` prints it."""

    model_config = ConfigDict(frozen=True)

    match: str
    seed: int
    rules: str
    rounds: int
    log: str | None
    standings: list[SeatResult]
    duration_s: float = 0.0
    stderr_tails: dict[int, str] = {}
