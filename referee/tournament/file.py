"""The tournament file (TOML): its model, and loading it into bots and rules ready to run.

A tournament file names the rules, the table size, the format, the seed, the time control,
the sandbox and the bots; paths are relative to the file::

    name = "spring"
    rules = "arschloch"            # a preset, or { preset = "arschloch", target = 10 }
    table_size = 4
    format = "round-robin"         # or "gauntlet" (then also candidate = "...", matches = N)
    tables = "all"                 # round robin: every group of table_size, or "balanced"
    deals = 2
    seed = 1
    [time]
    move_ms = 1000
    [sandbox]
    backend = "process"
    images = ["arschloch-referee-bot:latest"]   # the Docker images bots may name
    [ratings]                      # TrueSkill and the leaderboard's confidence (defaults)
    tau = 0.0
    [[bots]]
    path = "bots/alice.py"

and optionally ``playoff = { top = 4, until = 0.95, budget = 200 }``
(:mod:`referee.ranking.playoff`).

:func:`load_tournament` refuses anything else with one line naming the file, the key and
what is allowed (:class:`~referee.errors.UsageError`).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.errors import UsageError
from referee.names import check_name, confusable_with, lookalike_note
from referee.rules import ResolvedRules, RuleSet
from referee.sandbox import DEFAULT_SANDBOX, BotSpec, Limits, load_bot
from referee.sandbox.image import IMAGE_NAME, allowed_images, check_bot_image
from referee.specs import PlayoffSettings, RatingSettings, TimeControl
from referee.tournament.design import design_size

__all__ = [
    "BotEntry",
    "SandboxSettings",
    "Tournament",
    "TournamentFile",
    "append_bot_entry",
    "check_display_name",
    "load_tournament",
    "parse_tournament",
    "toml_string",
]

RESULTS_SUFFIX = ".results"
MAX_SCHEDULED = 1_000_000
"""The most scheduled matches one tournament may have (play-offs come on top, within their
budget)."""

_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SandboxSettings(_Strict):
    """``[sandbox]``: the backend that runs the bots, their memory limit, and the Docker
    images a bot may name in its ``bot.toml`` (the referee's bot image is always allowed)."""

    backend: Literal["process", "docker", "auto"] = DEFAULT_SANDBOX
    memory_mb: int = Field(default=512, ge=32, le=65_536)
    images: tuple[Annotated[str, Field(min_length=1, max_length=512)], ...] = (IMAGE_NAME,)


class BotEntry(_Strict):
    """One ``[[bots]]`` entry: a path (relative to the file) and an optional display name."""

    path: str = Field(min_length=1)
    name: str | None = None


class TournamentFile(_Strict):
    """The tournament file as written, checked key by key."""

    name: str = Field(pattern=_NAME_PATTERN)
    rules: str | dict[str, Any] = Field(
        default="arschloch",
        description='a preset name, or a table { preset = "...", <parameter> = <value>, ... }',
    )
    table_size: int = Field(default=4, ge=3, le=6)
    format: Literal["round-robin", "gauntlet"] = "round-robin"
    tables: Literal["all", "balanced"] = "all"
    deals: int = Field(default=1, ge=1, le=10_000)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    time: TimeControl = TimeControl()
    sandbox: SandboxSettings = SandboxSettings()
    bots: list[BotEntry] = Field(min_length=3)
    candidate: str | None = None
    matches: int | None = Field(default=None, ge=1, le=100_000)
    ratings: RatingSettings = RatingSettings()
    playoff: PlayoffSettings | None = None

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
class Tournament:
    """A loaded tournament: the checked file plus its bots (named as entrants) and rules."""

    path: Path
    file: TournamentFile
    bots: tuple[BotSpec, ...]
    rules: ResolvedRules

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def entrants(self) -> list[str]:
        """Entrant names in file order."""
        return [bot.name for bot in self.bots]

    @property
    def results_dir(self) -> Path:
        """``<name>.results/`` next to the tournament file."""
        return self.path.parent / f"{self.file.name}{RESULTS_SUFFIX}"

    @property
    def time_control(self) -> TimeControl:
        """``[time]``: the clock of every match."""
        return self.file.time

    @property
    def limits(self) -> Limits:
        return Limits(memory_mb=self.file.sandbox.memory_mb)

    @property
    def images(self) -> frozenset[str]:
        """The Docker images this tournament's bots may run in."""
        return allowed_images(self.file.sandbox.images)

    def image_hint(self, image: str) -> str:
        """How to allow ``image`` in this tournament (ends a refusal)."""
        wanted = [*self.file.sandbox.images, image]
        listed = ", ".join(toml_string(name) for name in dict.fromkeys(wanted))
        return f"to allow it, set images = [{listed}] under [sandbox] in {self.path}"

    def settings(self) -> dict[str, Any]:
        """What results depend on besides the bots: stored results are only comparable
        between runs with equal settings. More deals, matches or bots may be added (bots
        not to a balanced round robin, whose tables depend on the whole field)."""
        f = self.file
        settings: dict[str, Any] = {
            "rules": self.rules.as_protocol(),
            "table_size": f.table_size,
            "format": f.format,
            "seed": f.seed,
            "time": f.time.model_dump(),
            "candidate": f.candidate,
        }
        if f.tables != "all":
            # A balanced design is made for its whole field: another bot, other tables.
            settings["tables"] = f.tables
            settings["field"] = sorted(self.entrants)
        return settings

    def bot(self, name: str) -> BotSpec:
        """The entrant called ``name``."""
        for spec in self.bots:
            if spec.name == name:
                return spec
        raise KeyError(name)


def load_tournament(path: str | Path) -> Tournament:
    """Read, check and resolve the tournament file at ``path``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"tournament file {file} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{file} is a folder; name the tournament's .toml file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{file} is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read tournament file {file}: {exc.strerror or exc}") from None
    return parse_tournament(text, file)


def parse_tournament(text: str, path: Path) -> Tournament:
    """Check the TOML ``text`` of the tournament file at ``path`` (used for relative paths)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    try:
        model = TournamentFile.model_validate(data)
    except ValidationError as exc:
        raise UsageError(_explain(path, exc)) from None
    return _resolve(path, model)


def append_bot_entry(path: Path, bot_path: str, name: str) -> Tournament:
    """Append a ``[[bots]]`` entry to the tournament file, leaving the rest as written.

    The new text is checked as a whole before anything is written (a file that lists its
    bots inline, ``bots = [...]``, cannot take a ``[[bots]]`` table); returns the tournament
    as it now is.
    """
    text = path.read_text(encoding="utf-8")
    block = "" if not text or text.endswith("\n") else "\n"
    block += f"\n[[bots]]\npath = {toml_string(bot_path)}\nname = {toml_string(name)}\n"
    try:
        updated = parse_tournament(text + block, path)
    except UsageError as exc:
        raise UsageError(f"cannot add the bot to {path}: {exc}") from None
    with path.open("a", encoding="utf-8") as handle:
        handle.write(block)
    return updated


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    out = ['"']
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(f"\\U{ord(ch):08X}")
    out.append('"')
    return "".join(out)


def _resolve(path: Path, model: TournamentFile) -> Tournament:
    k = model.table_size
    if k > len(model.bots):
        raise UsageError(
            f"{path}: table_size: {k} is more than the {len(model.bots)} bots listed; "
            f"allowed: 3 to {min(6, len(model.bots))}"
        )
    try:
        rules = model.ruleset().resolve(k)
    except UsageError as exc:
        message = str(exc) if str(exc).startswith("rules") else f"rules: {exc}"
        raise UsageError(f"{path}: {message}") from None
    base = path.parent
    bots: list[BotSpec] = []
    first_seen: dict[str, int] = {}
    for i, entry in enumerate(model.bots):
        where = f"{path}: bots[{i}]"
        try:
            spec = load_bot(base / entry.path)
            if entry.name is not None:
                spec = dataclasses.replace(spec, name=check_display_name(entry.name))
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        if spec.name in first_seen:
            raise UsageError(
                f"{where}: the name {spec.name!r} is already used by "
                f"bots[{first_seen[spec.name]}]; "
                'names must be unique (set name = "..." on one of them)'
            )
        twin = confusable_with(spec.name, first_seen)
        if twin is not None:
            raise UsageError(
                f"{where}: the name {spec.name!r} looks like {twin!r} of bots[{first_seen[twin]}] "
                f"({lookalike_note(spec.name, twin)}); names must look different "
                '(set name = "..." on one of them)'
            )
        first_seen[spec.name] = i
        bots.append(spec)
    tournament = Tournament(path=path, file=model, bots=tuple(bots), rules=rules)
    for i, spec in enumerate(bots):
        if spec.image is not None:
            try:
                check_bot_image(spec, tournament.images, tournament.image_hint(spec.image))
            except UsageError as exc:
                raise UsageError(f"{path}: bots[{i}]: {exc}") from None
    _check_format(path, model, list(first_seen))
    _check_size(path, model)
    _check_playoff(path, model)
    return tournament


def _check_format(path: Path, model: TournamentFile, names: list[str]) -> None:
    if model.format == "gauntlet":
        if model.candidate is None or model.matches is None:
            missing = "candidate" if model.candidate is None else "matches"
            raise UsageError(
                f'{path}: {missing}: required when format = "gauntlet" '
                '(candidate = "<bot name>", matches = <number of tables to draw>)'
            )
        if model.candidate not in names:
            raise UsageError(
                f"{path}: candidate: {model.candidate!r} is not a bot of this tournament "
                f"(allowed: {', '.join(repr(n) for n in names)})"
            )
        if model.tables != "all":
            raise UsageError(
                f'{path}: tables: only allowed when format = "round-robin" '
                "(a gauntlet draws its own tables)"
            )
        return
    for key in ("candidate", "matches"):
        if getattr(model, key) is not None:
            raise UsageError(
                f'{path}: {key}: only allowed when format = "gauntlet" (format is {model.format!r})'
            )


def _check_size(path: Path, model: TournamentFile) -> None:
    """Refuse a schedule of more than :data:`MAX_SCHEDULED` matches before anything is
    built: 64 bots at tables of 6 make 75 million tables, which would exhaust memory while
    the schedule is listed."""
    n, k, deals = len(model.bots), model.table_size, model.deals
    balanced = min(design_size(n, k).tables, math.comb(n, k))
    if model.format == "gauntlet":
        assert model.matches is not None  # _check_format
        tables, what = model.matches, f"{model.matches:,} tables"
    elif model.tables == "balanced":
        tables, what = balanced, f"{balanced:,} balanced tables"
    else:
        tables, what = math.comb(n, k), f"C({n}, {k}) = {math.comb(n, k):,} tables"
    total = tables * deals * k
    if total <= MAX_SCHEDULED:
        return
    hint = "fewer deals or bots"
    if model.format == "round-robin" and model.tables == "all":
        hint = f'tables = "balanced" ({balanced:,} tables a deal), fewer deals, or a gauntlet'
    raise UsageError(
        f"{path}: the schedule would be {total:,} matches ({what} x {deals:,} "
        f"deal{'s' if deals != 1 else ''} x {k} seat rotations); at most "
        f"{MAX_SCHEDULED:,} fit in one tournament: use {hint}"
    )


def _check_playoff(path: Path, model: TournamentFile) -> None:
    playoff = model.playoff
    if playoff is None:
        return
    if playoff.top > len(model.bots):
        raise UsageError(
            f"{path}: playoff.top: {playoff.top} is more than the {len(model.bots)} bots "
            f"listed; allowed: 2 to {len(model.bots)}"
        )
    if playoff.budget < model.table_size:
        raise UsageError(
            f"{path}: playoff.budget: {playoff.budget} matches cannot pay for one deal "
            f"({model.table_size} matches, one per seat rotation); allowed: at least "
            f"{model.table_size}"
        )


def check_display_name(name: str) -> str:
    """A display name: see :func:`referee.names.check_name`."""
    return check_name(name, "name")


_SECTIONS: dict[str, type[BaseModel]] = {
    "": TournamentFile,
    "time": TimeControl,
    "sandbox": SandboxSettings,
    "bots": BotEntry,
    "ratings": RatingSettings,
    "playoff": PlayoffSettings,
}


def _explain(path: Path, exc: ValidationError) -> str:
    """One line naming the file, each bad key, and what is allowed there."""
    parts = []
    for err in exc.errors():
        loc = list(err["loc"])
        key = _key(loc)
        if loc and loc[0] == "rules":
            parts.append(
                f"rules: got {err['input']!r}; use a preset name or a table like "
                '{ preset = "arschloch", target = 10 }'
            )
            continue
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            section = ".".join(str(p) for p in loc[:-1] if isinstance(p, str))
            model = _SECTIONS.get(section)
            allowed = ", ".join(model.model_fields) if model is not None else "none"
            parts.append(f"unknown key {key!r} (allowed: {allowed})")
            continue
        if err["type"] == "missing":
            msg = "required key is missing"
        elif err["type"] == "literal_error":
            msg = f"got {err['input']!r}; {msg[0].lower()}{msg[1:]}"
        elif err["type"] == "string_pattern_mismatch":
            msg = (
                f"got {err['input']!r}; use 1 to 64 letters, digits, '.', '_' or '-' "
                "(it names the results folder)"
            )
        elif "input" in err and not isinstance(err["input"], dict | list):
            msg = f"got {err['input']!r}; {msg[0].lower()}{msg[1:]}"
        parts.append(f"{key}: {msg}" if key else msg)
    return f"{path}: " + "; ".join(dict.fromkeys(parts))


def _key(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
