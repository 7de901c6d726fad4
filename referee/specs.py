"""The tournament's vocabulary: the value types every layer passes around, validated once.

This module is a leaf: it imports nothing of the referee, so the tournament file, the
scheduler, the executors, the match runner, the store, the ratings and the CLI can all use
the same types without importing each other.

* :class:`TimeControl`: the clock of a match, with its bounds (the tournament file's
  ``[time]``, the CLI's ``--move-ms``/``--bank-ms``/``--hello-ms``, ``hello``'s ``time``).
* :class:`MatchSpec`: one match to play, named by its key (:func:`deal_key`,
  :func:`playoff_round` read a key); the scheduler and the play-off planner make them.
* :class:`EntrantRecord`: an entrant as the store keeps it; :class:`Replacement`: an
  entrant's files replaced (``--replace``), its old version's results retired;
  :class:`StoredMatch` and
  :class:`StoredSeat`: a finished match as the store gives it to ratings and publishing;
  :class:`StoredFault`: a fault with its evidence, for the published pages.
* :class:`RatingSettings` (``[ratings]``) and :class:`PlayoffSettings` (``playoff``): the
  tournament file's settings for the ranking; :data:`RankRule`: what a leaderboard ranks
  by, and :data:`RANK_AFTER_PLAYOFFS`, the rule a new tournament records for the rank after
  play-offs (:data:`RANK_NOT_RECORDED` where an old folder records none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "DEFAULT_SANDBOX",
    "DRAW_PROBABILITY",
    "IMAGE_NAME",
    "PLAYOFF_PREFIX",
    "RANK_AFTER_PLAYOFFS",
    "RANK_NOT_RECORDED",
    "SANDBOX_NAMES",
    "EntrantRecord",
    "MatchSpec",
    "PlayoffSettings",
    "RankRule",
    "RatingSettings",
    "Replacement",
    "StoredFault",
    "StoredMatch",
    "StoredSeat",
    "TimeControl",
    "deal_key",
    "identical_groups",
    "playoff_round",
]


SANDBOX_NAMES = ("process", "docker", "auto")
DEFAULT_SANDBOX: Final = "process"
"""The one default of every command that runs bots (``play``, ``bot check``, ``submit``, a
tournament file without ``[sandbox] backend``): a bot checked with the defaults runs the way
it will run in a tournament with the defaults. The process sandbox is there wherever the
referee is installed; ``auto`` would make the same command mean different things on
different machines."""

IMAGE_NAME: Final = "arschloch-referee-bot:latest"
"""The default bot runtime image of the Docker sandbox (``referee.sandbox.image`` builds it)."""


def _wire_schema(schema: dict[str, Any]) -> None:
    """Its JSON Schema (``hello``'s ``time``): a later referee may add keys there."""
    schema.pop("additionalProperties", None)


class TimeControl(BaseModel):
    """The clock of a match in milliseconds: time per request, the match's bank, start-up.

    A reply later than move_ms plus what is left of the bank is a timeout.
    """

    # Unknown keys are refused where people write a time control (the tournament file).
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_serialization_defaults_required=True,
        json_schema_extra=_wire_schema,
    )

    move_ms: int = Field(
        default=1000, ge=1, le=3_600_000, description="time for each request before the bank"
    )
    bank_ms: int = Field(
        default=10_000, ge=0, le=36_000_000, description="extra time for the whole match"
    )
    hello_ms: int = Field(
        default=10_000, ge=1, le=3_600_000, description="time to start up and answer hello"
    )

    def describe(self) -> str:
        """The clock in one line: ``move 1000 ms + bank 10000 ms, hello 10000 ms``."""
        return f"move {self.move_ms} ms + bank {self.bank_ms} ms, hello {self.hello_ms} ms"

    @classmethod
    def bounds(cls, name: str) -> tuple[int, int]:
        """The smallest and largest value of the field ``name`` (for the CLI's ranges)."""
        low = high = None
        for item in cls.model_fields[name].metadata:
            low = getattr(item, "ge", low)
            high = getattr(item, "le", high)
        assert low is not None and high is not None
        return low, high


PLAYOFF_PREFIX = "po/"
"""Keys of play-off matches start with this (``po/<round>/...``)."""


class MatchSpec(BaseModel):
    """One match to play.

    ``table`` holds entrant names by seat (already rotated). ``deal_seed`` decides the
    cards and is shared by every rotation of a deal; ``match_seed`` is the seed the match
    is played with — equal to ``deal_seed`` in both duplicate formats, a separate field so
    a format without duplicate deals needs no change downstream.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    table: tuple[str, ...]
    deal: int
    rotation: int
    deal_seed: int
    match_seed: int
    deal_id: str = ""
    """The public name of the deal its cards come from: matches with the same ``deal_id``
    were dealt the same cards (the scheduler decides which; by default every seat rotation
    of one deal of a table, :func:`deal_key`)."""

    @model_validator(mode="after")
    def _default_deal_id(self) -> MatchSpec:
        if not self.deal_id:
            object.__setattr__(self, "deal_id", deal_key(self.key))
        return self


def deal_key(key: str) -> str:
    """The part of a match key shared by every seat rotation of one deal."""
    return key.rsplit("/r", 1)[0]


def playoff_round(key: str) -> int | None:
    """The play-off round a match key belongs to, or ``None`` for a scheduled match."""
    if not key.startswith(PLAYOFF_PREFIX):
        return None
    return int(key.split("/", 2)[1])


@dataclass(frozen=True)
class EntrantRecord:
    """An entrant as stored: ``sha256`` fingerprints the files its results were played with;
    ``author`` is who wrote it (the entrant's own name when nobody is named)."""

    name: str
    version: str | None
    sha256: str
    path: str
    author: str = ""


@dataclass(frozen=True)
class Replacement:
    """An entrant's files replaced while its tournament kept its other results
    (``referee tournament run FILE --replace NAME``).

    ``generation`` numbers the tournament's replacements from 1, in the order they were
    made; every match the old version played is *retired* by it (kept, never rated), and
    its scheduled tables are played again under keys that carry the generation
    (:mod:`referee.tournament.replacement`). ``old_*`` are the files the retired results
    were played with, ``new_*`` those that play from then on.
    """

    generation: int
    name: str
    old_version: str | None
    old_sha256: str
    new_version: str | None
    new_sha256: str
    created: float = 0.0
    """When it was made (Unix time; not part of what ``referee verify`` checks)."""


def identical_groups(fingerprints: Mapping[str, str]) -> list[tuple[str, ...]]:
    """Groups of two or more entrants whose files have the same SHA-256 (``fingerprints``:
    name to ``sha256``; an empty one matches nothing), in the mapping's order."""
    groups: dict[str, list[str]] = {}
    for name, sha in fingerprints.items():
        if sha:
            groups.setdefault(sha, []).append(name)
    return [tuple(names) for names in groups.values() if len(names) > 1]


@dataclass(frozen=True)
class StoredSeat:
    """One seat's stored result."""

    seat: int
    name: str
    place: int
    score: int
    forfeit: bool
    fault_kind: str | None
    fault_detail: str | None


@dataclass(frozen=True)
class StoredFault:
    """A stored fault with its evidence: the request the bot failed (its id, ``None`` before
    any, and the request itself), the offending reply line (cut to 200 bytes; ``None`` for
    a timeout or a crash), how long the bot took, and its stderr report (start-up output,
    then this match's; at most 4 KiB).
    """

    key: str
    seat: int
    name: str
    kind: str
    detail: str
    request_id: int | None
    reply: str | None
    elapsed_ms: int | None
    stderr: str | None
    request: dict[str, Any] | None = None
    """The last request written to the bot (the one it failed when its ``id`` is
    ``request_id``), as sent; ``None`` before any, and in stores older than schema 5."""
    round: int | None = None
    """The round it was asked in."""


@dataclass(frozen=True)
class StoredMatch:
    """A finished match: its spec and its seats in standings order (place, then seat)."""

    spec: MatchSpec
    seats: tuple[StoredSeat, ...]


DRAW_PROBABILITY = 0.10
"""How often two neighbours in the standings share a place: measured 8-17 % in ``arschloch``
between random players from 3 to 6 seats (12 % at 4), 5-12 % under ``trou-du-cul``, 7.5 %
among the heuristic bots of the ranking benchmark."""


class RatingSettings(BaseModel):
    """``[ratings]``: the TrueSkill environment and the confidence of the leaderboard.

    ``draw_probability`` defaults to :data:`DRAW_PROBABILITY`, or 0 under rules that break
    every tie (``tie_break = "last_round"``); ``confidence`` is the level of the score
    intervals and of the marks on adjacent pairs; ``resamples`` is the bootstrap's size.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mu: float = Field(default=25.0, gt=0, le=10_000)
    sigma: float = Field(default=25.0 / 3, gt=0, le=10_000)
    beta: float = Field(default=25.0 / 6, gt=0, le=10_000)
    tau: float = Field(default=0.0, ge=0, le=10_000)
    draw_probability: float | None = Field(default=None, ge=0, lt=1)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    resamples: int = Field(default=1000, ge=100, le=100_000)

    def draw_probability_for(self, tie_break: str | None) -> float:
        """The draw probability to use under a ruleset's ``tie_break`` (see the class)."""
        if self.draw_probability is not None:
            return self.draw_probability
        if tie_break == "last_round":
            return 0.0
        return DRAW_PROBABILITY


RankRule = Literal["conservative", "mu"]
"""What a leaderboard ranks by: ``conservative`` (TrueSkill's ``mu - 3 sigma``) or ``mu``
(:func:`referee.ranking.ratings.rank_rule` says when, and its module why)."""

RANK_AFTER_PLAYOFFS: Final[RankRule] = "mu"
"""The rank once a play-off match has been played, as a new tournament records it in its
plan (:class:`referee.tournament.model.Plan`)."""

RANK_NOT_RECORDED: Final[RankRule] = "conservative"
"""The rank after play-offs of a folder whose plan records none: stored before the rule was
recorded, it was played off, published and chained by ``mu - 3 sigma``, and keeps it."""


class PlayoffSettings(BaseModel):
    """``playoff = { top = K, until = 0.95, budget = N }``.

    ``top``: how many places at the top of the leaderboard must be ordered; ``until``: the
    confidence each adjacent pair among them must reach; ``budget``: at most this many
    play-off matches in all.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    top: int = Field(ge=2, le=10_000)
    until: float = Field(default=0.95, gt=0.5, lt=1)
    budget: int = Field(ge=1, le=10_000_000)
