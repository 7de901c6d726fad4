"""What a finished match reports: the data that flows from a match to the store and ratings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from referee.errors import FaultKind


class FaultInfo(BaseModel):
    """The fault that made a seat forfeit."""

    model_config = ConfigDict(frozen=True)

    kind: FaultKind
    detail: str


class SeatResult(BaseModel):
    """One seat's line in the match standings."""

    model_config = ConfigDict(frozen=True)

    seat: int
    name: str
    place: int
    score: int
    forfeit: bool
    fault: FaultInfo | None = None


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
