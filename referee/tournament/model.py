"""The tournament file's model: every key, its default and what is allowed, checked by pydantic.

This module reads no bot and starts nothing: :class:`TournamentFile` is the file as written,
:class:`Plan` the tournament as its schedule sees it (the file, the entrants and their
authors), which the results keep so that ``referee verify`` can recompute the schedule
anywhere, without the bots. Loading a file into bots ready to run is
:mod:`referee.tournament.file`.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.errors import UsageError
from referee.names import IDENTIFIER_PATTERN, skeleton
from referee.rules import RuleSet
from referee.specs import (
    DEFAULT_SANDBOX,
    IMAGE_NAME,
    RANK_NOT_RECORDED,
    PlayoffSettings,
    RankRule,
    RatingSettings,
    TimeControl,
)
from referee.tournament.design import design_size
from referee.validation import bounds_text, describe, shown

__all__ = [
    "MAX_SCHEDULED",
    "AuthorSettings",
    "BotEntry",
    "CompareSettings",
    "ExecutorSettings",
    "LeagueSettings",
    "Plan",
    "PublishSettings",
    "SandboxSettings",
    "ServerSettings",
    "Statistic",
    "TournamentFile",
    "explain",
    "schedule_size_problem",
]

_NAME_PATTERN = IDENTIFIER_PATTERN

MAX_SCHEDULED = 1_000_000
"""The most scheduled matches one tournament may have (play-offs come on top, within their
budget)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SandboxSettings(_Strict):
    """``[sandbox]``: the backend that runs the bots, their memory limit, and the Docker
    images a bot may name in its ``bot.toml`` (the referee's bot image is always allowed)."""

    backend: Literal["process", "docker", "auto"] = DEFAULT_SANDBOX
    memory_mb: int = Field(default=512, ge=32, le=65_536)
    images: tuple[Annotated[str, Field(min_length=1, max_length=512)], ...] = (IMAGE_NAME,)


class BuildSettings(_Strict):
    """``[build]``: what one bot's build step (``build`` in its ``bot.toml``) may use. It
    runs once per version and toolchain, in the tournament's sandbox
    (:mod:`referee.sandbox.build`, whose ``BuildLimits`` has the same fields and defaults);
    the defaults fit a C++, Rust or Java kit bot."""

    cpu_seconds: int = Field(default=300, ge=1, le=86_400)
    wall_seconds: int = Field(default=600, ge=1, le=86_400)
    memory_mb: int = Field(default=2048, ge=64, le=65_536)
    disk_mb: int = Field(default=256, ge=1, le=16_384)
    pids: int = Field(default=128, ge=8, le=4096)
    log_kb: int = Field(default=64, ge=1, le=4096)


class BotEntry(_Strict):
    """One ``[[bots]]`` entry: a path (relative to the file), an optional display name, and
    who wrote it (``author``: overrides the bot's own ``bot.toml``; by default each entrant is
    its own author).

    In a league (``format = "league"``) every entry names its entrant, and entries may share
    a name: each is a new version of that entrant, and ``retired = true`` takes the entrant
    out of the league (:mod:`referee.tournament.league`)."""

    path: str = Field(min_length=1)
    name: str | None = None
    author: str | None = None
    retired: bool = False


class LeagueSettings(_Strict):
    """``[league]``: how a league (``format = "league"``) chooses its tables.

    A league plays in **batches** of at most ``batch`` tables, each table one deal in every
    seat rotation, no entrant at two tables of a batch. A new entrant first plays
    ``placement`` tables against a spread of the field. In every batch at least
    ``fair_share`` of the tables are seated around the entrants that have waited longest
    (no entrant starves), and no entrant is seated when it has already played more than
    ``max_share`` times the average entrant's matches in the last ``window_minutes`` (none
    hogs; its placement always fits). The file is read again every ``poll_seconds`` while
    the league runs: entrants submitted or retired meanwhile join or leave at the next
    batch (:mod:`referee.ranking.matchmaking`). An entrant whose last ``suspend_after``
    matches were all forfeits of its own (a crash, a timeout, an illegal play, a protocol
    fault: never a failure on the referee's side) is suspended: no longer seated until a
    new version comes or ``referee league reinstate`` (:mod:`referee.runs.league`).
    """

    batch: int = Field(default=32, ge=1, le=4096)
    placement: int = Field(default=3, ge=0, le=100)
    fair_share: float = Field(default=0.25, gt=0, le=1)
    max_share: float = Field(default=4.0, ge=1, le=1000)
    window_minutes: int = Field(default=60, ge=1, le=10_080)
    poll_seconds: int = Field(default=30, ge=1, le=60)
    suspend_after: int = Field(default=8, ge=1, le=10_000)


class PublishSettings(_Strict):
    """``[publish]``: what the published site shows.

    ``stderr``: ``public`` (the default) publishes what each bot wrote to stderr, beside
    its matches' replays and under its faults; ``private`` publishes none of it (no stderr
    scripts, no stderr on any page), so a public competition can leave each author's
    output to the author (the results folder keeps it).
    """

    stderr: Literal["public", "private"] = "public"


class ServerSettings(_Strict):
    """``[server]``: the limits of ``referee serve`` (:mod:`referee.server`), as contest
    systems set them.

    An upload is at most ``upload_mb`` (refused while it streams); an archive unpacks to at
    most ``archive_files`` files, ``archive_depth`` folders deep and ``archive_mb`` in all.
    An author submits at most ``per_day`` times in 24 hours and waits ``interval_seconds``
    between two; ``checks`` submissions are checked at once. An address that fails
    ``signin_failures`` sign-ins in ``signin_window_seconds`` waits out the window. A
    request's headers must arrive within ``header_seconds`` and its body within
    ``body_seconds``. Sessions last ``session_hours``.

    ``referee upload --compare`` (a new version compared with the author's current one
    before it is entered, :mod:`referee.server.compares`): an author's comparisons play at
    most ``compare_deals_per_day`` deals in 24 hours (0: the server compares nothing; a
    deal is both versions in every seat rotation, ``2 * table_size`` matches), one
    comparison of theirs at a time; ``compares`` comparisons play at once, each on one
    worker process of its own beside the league's (the organiser's share of the machine).
    """

    upload_mb: float = Field(default=16, gt=0, le=1024)
    archive_files: int = Field(default=2_000, ge=1, le=10_000)
    archive_depth: int = Field(default=16, ge=1, le=32)
    archive_mb: float = Field(default=64, gt=0, le=1024)
    per_day: int = Field(default=50, ge=1, le=100_000)
    interval_seconds: float = Field(default=30, ge=0, le=86_400)
    checks: int = Field(default=1, ge=1, le=64)
    signin_failures: int = Field(default=10, ge=1, le=10_000)
    signin_window_seconds: float = Field(default=600, ge=1, le=86_400)
    header_seconds: float = Field(default=10, gt=0, le=600)
    body_seconds: float = Field(default=120, gt=0, le=3_600)
    session_hours: float = Field(default=168, gt=0, le=8_760)
    compare_deals_per_day: int = Field(default=500, ge=0, le=1_000_000)
    compares: int = Field(default=1, ge=1, le=64)


class AuthorSettings(_Strict):
    """``[authors]``: how many entrants one author may enter, and whether they are kept apart.

    Entrants of one author could share what they see through covert channels of a shared
    kernel, so by default (``apart = true``) they never sit at one table and never get the
    same deal at different tables; ``max_entrants`` refuses a file with more of one author.
    """

    max_entrants: int | None = Field(default=None, ge=1, le=10_000)
    apart: bool = True


class ExecutorSettings(_Strict):
    """Where the matches run (``--executor`` and ``--cluster`` on the command line win).

    ``local``: worker processes on this machine. ``dask``: a Dask distributed cluster, the
    scheduler at ``cluster`` (``tls://host:8786``, reached with the TLS files ``security``
    names, relative to the tournament file), or a local cluster started for the run when
    none is named. Results do not depend on it: a run may resume on another executor.
    """

    kind: Literal["local", "dask"] = "local"
    cluster: str | None = Field(default=None, min_length=1, max_length=512)
    security: str | None = Field(default=None, min_length=1, max_length=4096)


Statistic = Literal["final-score", "round-score"]
"""What a compared deal is scored by (:mod:`referee.ranking.statistics`)."""


class CompareSettings(_Strict):
    """``[compare]``: the test a comparison (``format = "compare"``) runs, as ``referee
    compare`` writes it into its results: the ``statistic`` every deal is scored by and the
    sequential test's hypotheses and error rates in its units. A file stored before the
    section existed has none: its comparison is scored by ``final-score``
    (:func:`CompareSettings.of`)."""

    statistic: Statistic = "final-score"
    d0: float | None = Field(default=None, ge=-1, le=1, allow_inf_nan=False)
    d1: float | None = Field(default=None, ge=-1, le=1, allow_inf_nan=False)
    alpha: float | None = Field(default=None, gt=0, lt=1, allow_inf_nan=False)
    beta: float | None = Field(default=None, gt=0, lt=1, allow_inf_nan=False)
    min_differing: int | None = Field(default=None, ge=0, le=10_000)
    """The deals other than 0 the test waits for before it decides; a folder stored
    before the rule existed has none, and its comparison keeps 0, the rule it ran under
    (:meth:`differing`)."""

    @classmethod
    def of(cls, model: TournamentFile) -> CompareSettings:
        """The settings of ``model`` (the defaults for a file without the section)."""
        return model.compare if model.compare is not None else cls()

    def differing(self) -> int:
        """The stored minimum of deals other than 0 (0 when none is stored)."""
        return 0 if self.min_differing is None else self.min_differing


class TournamentFile(_Strict):
    """The tournament file as written, checked key by key."""

    name: str = Field(pattern=_NAME_PATTERN)
    rules: str | dict[str, Any] = Field(
        default="arschloch",
        description='a preset name, or a table { preset = "...", <parameter> = <value>, ... }',
    )
    table_size: int = Field(default=4, ge=3, le=6)
    format: Literal["round-robin", "gauntlet", "league", "compare"] = "round-robin"
    tables: Literal["all", "balanced"] = "all"
    duplicate: Literal["tables", "rotations"] = "tables"
    deals: int = Field(default=1, ge=1, le=10_000)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    time: TimeControl = TimeControl()
    sandbox: SandboxSettings = SandboxSettings()
    build: BuildSettings = BuildSettings()
    bots: list[BotEntry] = Field(min_length=3)
    candidate: str | None = None
    baseline: str | None = None
    """``format = "compare"``: the version ``candidate`` is compared with (``referee
    compare`` writes such a file into its results; a tournament file cannot use it)."""
    compare: CompareSettings | None = None
    matches: int | None = Field(default=None, ge=1, le=100_000)
    ratings: RatingSettings = RatingSettings()
    playoff: PlayoffSettings | None = None
    authors: AuthorSettings = AuthorSettings()
    executor: ExecutorSettings = ExecutorSettings()
    league: LeagueSettings = LeagueSettings()
    publish: PublishSettings = PublishSettings()
    server: ServerSettings = ServerSettings()
    allow_twins: bool = False
    """Whether two entrants may be byte-identical (the same SHA-256 of their files):
    refused by default (:func:`referee.tournament.file.load_tournament` says why)."""

    def ruleset(self) -> RuleSet:
        """The preset named by ``rules`` with its overrides applied."""
        if isinstance(self.rules, str):
            return RuleSet.preset(self.rules)
        overrides = dict(self.rules)
        preset = overrides.pop("preset", None)
        if not isinstance(preset, str):
            raise UsageError(
                "rules.preset: required in a rules table, "
                'e.g. { preset = "arschloch", target = 10 }'
            )
        return RuleSet.preset(preset, **overrides)


@dataclass(frozen=True)
class Plan:
    """A tournament as its schedule sees it: the file, the entrants and their authors.

    The scheduler needs nothing else, so the schedule can be recomputed from the results
    folder alone (:meth:`to_json`, :meth:`from_json`): ``referee verify`` does, on a machine
    without the bots.

    ``rank_after_playoffs`` is the rank once a play-off match has been played, recorded by
    the referee with the plan (never written in the tournament file), as a comparison's
    test is recorded with its own: a new tournament records
    :data:`referee.specs.RANK_AFTER_PLAYOFFS` (``Tournament.plan``); ``None`` is a plan
    stored before the rule was recorded, which keeps ``mu - 3 sigma``
    (:data:`~referee.specs.RANK_NOT_RECORDED`, :meth:`playoff_rank`), since its play-offs
    were planned and its leaderboard published so. A resumed run keeps the stored value
    (:func:`referee.runs.tournament.kept_plan`), and :meth:`to_json` leaves the key out for
    ``None``, so an old folder's plan, and its chain, stay what they were.
    """

    file: TournamentFile
    entrants: tuple[str, ...]
    authors: dict[str, str]
    source: str
    rank_after_playoffs: RankRule | None = None

    def playoff_rank(self) -> RankRule:
        """What the leaderboard ranks by once play-offs have been played (see the class)."""
        return self.rank_after_playoffs or RANK_NOT_RECORDED

    def authors_apart(self) -> dict[str, str] | None:
        """Entrant -> author key when authors are kept apart (see :class:`Tournament`)."""
        if not self.file.authors.apart:
            return None
        return {name: skeleton(self.authors.get(name) or name) for name in self.entrants}

    def settings(self) -> dict[str, Any]:
        """What results depend on besides the bots: stored results are only comparable
        between runs with equal settings. More deals, matches or bots may be added (bots
        not to a balanced round robin, whose tables depend on the whole field)."""
        f = self.file
        settings: dict[str, Any] = {
            "rules": f.ruleset().resolve(f.table_size).as_protocol(),
            "table_size": f.table_size,
            "format": f.format,
            "seed": f.seed,
            "time": f.time.model_dump(),
            "candidate": f.candidate,
        }
        if f.format == "league":
            # Entrants come and go while a league runs: its field and their authors are
            # the league's records (referee.tournament.league), not settings.
            settings["duplicate"] = f.duplicate
            settings["authors_apart"] = f.authors.apart
            return settings
        if f.format == "compare":
            # The field bots drawn for each deal depend on the whole field.
            settings["baseline"] = f.baseline
            settings["field"] = sorted(self.entrants)
        if f.tables != "all":
            # A balanced design is made for its whole field: another bot, other tables.
            settings["tables"] = f.tables
            settings["field"] = sorted(self.entrants)
        settings["duplicate"] = f.duplicate
        if f.format == "round-robin" and f.duplicate == "tables":
            # Which tables share a deal depends on every table: another bot, other deals.
            settings["field"] = sorted(self.entrants)
        if f.authors.apart:
            settings["authors"] = {name: self.authors[name] for name in sorted(self.entrants)}
        return settings

    def to_json(self) -> str:
        """The plan as canonical JSON (keys sorted): what is stored and chained."""
        data: dict[str, Any] = {
            "file": self.source,
            "entrants": list(self.entrants),
            "authors": self.authors,
        }
        if self.rank_after_playoffs is not None:
            data["rank_after_playoffs"] = self.rank_after_playoffs
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: Path) -> Plan:
        """The plan stored with a tournament's results; ``UsageError`` if it is unreadable."""
        try:
            data = json.loads(text)
            source = data["file"]
            model = TournamentFile.model_validate(tomllib.loads(source))
            entrants = tuple(str(name) for name in data["entrants"])
            authors = {str(k): str(v) for k, v in dict(data["authors"]).items()}
            rank = _recorded_rank(data, where)
        except ValidationError as exc:  # a ValueError too: explained in the file's words
            raise UsageError(explain(where, exc)) from None
        except (ValueError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(
                f"{where}: the stored tournament plan cannot be read ({exc})"
            ) from None
        return cls(model, entrants, authors, source, rank)


def _recorded_rank(data: dict[str, Any], where: Path) -> RankRule | None:
    """A stored plan's ``rank_after_playoffs``: ``None`` when it records none (an old
    folder's), else the rule it names; ``UsageError`` in one line for anything else."""
    if "rank_after_playoffs" not in data:
        return None
    value = data["rank_after_playoffs"]
    if value == "mu":
        return "mu"
    if value == "conservative":
        return "conservative"
    raise UsageError(
        f"{where}: the stored tournament plan's rank_after_playoffs is {shown(value)}, not "
        "'mu' or 'conservative' (the referee writes it: the plan was changed afterwards)"
    )


def schedule_size_problem(model: TournamentFile) -> str | None:
    """Why the schedule of ``model`` is too large to list (more than :data:`MAX_SCHEDULED`
    matches: 64 bots at tables of 6 make 75 million tables, which would exhaust memory while
    the schedule is listed), or ``None``; counted, never built."""
    if model.format == "league":
        return None  # a league plans its matches batch by batch, never all at once
    n, k, deals = len(model.bots), model.table_size, model.deals
    balanced = min(design_size(n, k).tables, math.comb(n, k))
    if model.format == "gauntlet":
        tables = model.matches or 0
        what = f"{tables:,} tables"
    elif model.format == "compare":
        tables, what = 2, "2 tables (the pair's halves)"
    elif model.tables == "balanced":
        tables, what = balanced, f"{balanced:,} balanced tables"
    else:
        tables, what = math.comb(n, k), f"C({n}, {k}) = {math.comb(n, k):,} tables"
    total = tables * deals * k
    if total <= MAX_SCHEDULED:
        return None
    hint = "fewer deals or bots"
    if model.format == "round-robin" and model.tables == "all":
        hint = f'tables = "balanced" ({balanced:,} tables a deal), fewer deals, or a gauntlet'
    return (
        f"the schedule would be {total:,} matches ({what} x {deals:,} "
        f"deal{'s' if deals != 1 else ''} x {k} seat rotations); at most "
        f"{MAX_SCHEDULED:,} fit in one tournament: use {hint}"
    )


_SECTIONS: dict[str, type[BaseModel]] = {
    "": TournamentFile,
    "authors": AuthorSettings,
    "time": TimeControl,
    "sandbox": SandboxSettings,
    "bots": BotEntry,
    "compare": CompareSettings,
    "ratings": RatingSettings,
    "playoff": PlayoffSettings,
    "league": LeagueSettings,
    "publish": PublishSettings,
}


def explain(path: Path, exc: ValidationError) -> str:
    """One line naming the file, each bad key, and what is allowed there, in the referee's
    words (never pydantic's: "List should have at least 3 items after validation" is
    "bots: at least 3 bots are needed, the file lists 2").

    :func:`referee.validation.describe` words each error; here the file's own knowledge is
    added: the keys allowed in a section, a number's whole range (from the model's
    bounds), which section a table belongs in, and what the required keys are for.
    """
    parts = []
    for err in exc.errors():
        loc = list(err["loc"])
        key = _key(loc)
        kind, given = err["type"], err.get("input")
        if loc and loc[0] == "rules":
            parts.append(
                f"rules: got {shown(given)}; use a preset name or a table like "
                '{ preset = "arschloch", target = 10 }'
            )
            continue
        if kind == "extra_forbidden":
            section = ".".join(str(p) for p in loc[:-1] if isinstance(p, str))
            model = _SECTIONS.get(section)
            allowed = ", ".join(model.model_fields) if model is not None else "none"
            parts.append(f"unknown key {key!r} (allowed: {allowed})")
            continue
        parts.append(f"{key}: {_described(kind, loc, given, dict(err.get('ctx') or {}))}")
    return f"{path}: " + "; ".join(dict.fromkeys(parts))


def _described(kind: str, loc: list[Any], given: Any, ctx: dict[str, Any]) -> str:
    if kind == "missing" and loc == ["bots"]:
        return "the file lists no bots; add at least 3 [[bots]] tables, each with a path"
    if kind == "missing" and loc == ["name"]:
        return "required: the tournament's name (it names the results folder)"
    if kind == "string_pattern_mismatch":
        return (
            f"got {shown(given)}; use 1 to 64 letters, digits, '.', '_' or '-', starting "
            "with a letter or a digit (it names the results folder)"
        )
    bounds = [
        (name, getattr(item, name))
        for item in _field_metadata(loc)
        for name in ("ge", "gt", "le", "lt")
        if getattr(item, name, None) is not None
    ]
    section = loc[-1] if loc and isinstance(loc[-1], str) and loc[-1] in _SECTIONS else None
    return describe(
        kind,
        given,
        ctx,
        noun="bots" if loc == ["bots"] else "entries",
        table=None if section is None else ("[bots]" if section == "bots" else section),
        bounds=bounds_text(bounds) if bounds else None,
    )


def _field_metadata(loc: list[Any]) -> list[Any]:
    """The constraints (``annotated_types`` objects) of the field at ``loc``, walking the
    models from the file down (list indices skipped); ``[]`` when ``loc`` is no field."""
    model: type[BaseModel] | None = TournamentFile
    metadata: list[Any] = []
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return []
        info = model.model_fields[part]
        metadata = list(info.metadata)
        model = _SECTIONS.get(part) if part in _SECTIONS else None
    return metadata


def _key(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
