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
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from referee.errors import UsageError
from referee.names import check_name, lookalike_note, skeleton
from referee.rules import ResolvedRules
from referee.sandbox import BotSpec, Limits, bot_sha256, load_bot, read_bot_files
from referee.sandbox.image import allowed_images, check_bot_image
from referee.specs import RANK_AFTER_PLAYOFFS, TimeControl, identical_groups
from referee.tournament.league import Version, league_roster
from referee.tournament.model import (
    AuthorSettings,
    BotEntry,
    Plan,
    SandboxSettings,
    TournamentFile,
    explain,
    schedule_size_problem,
)

__all__ = [
    "AuthorSettings",
    "BotEntry",
    "Plan",
    "SandboxSettings",
    "Tournament",
    "TournamentFile",
    "append_bot_entry",
    "append_retirement",
    "check_display_name",
    "check_new_author",
    "load_tournament",
    "parse_tournament",
    "toml_string",
]

RESULTS_SUFFIX = ".results"


@dataclass(frozen=True)
class Tournament:
    """A loaded tournament: the checked file plus its bots (named as entrants) and rules.

    ``source`` is the file's text as read (stored with the results, so that ``referee
    verify`` can recompute the schedule without the bots).
    """

    path: Path
    file: TournamentFile
    bots: tuple[BotSpec, ...]
    rules: ResolvedRules
    source: str = ""

    def plan(self) -> Plan:
        """What the schedule depends on, without the bots' files: a tournament that may play
        off records the rank after play-offs of a new tournament
        (:data:`~referee.specs.RANK_AFTER_PLAYOFFS`; a resumed run keeps its folder's,
        :func:`referee.runs.tournament.enter_field`); a league or a comparison never plays
        off, and records none."""
        plays_off = self.file.format in ("round-robin", "gauntlet")
        return Plan(
            self.file,
            tuple(self.entrants),
            {name: self.author(name) for name in self.entrants},
            self.source,
            RANK_AFTER_PLAYOFFS if plays_off else None,
        )

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
        """What results depend on besides the bots (:meth:`Plan.settings`)."""
        return self.plan().settings()

    def warnings(self) -> list[str]:
        """What this file chose that weakens the tournament, said when a run starts
        (``referee compare`` says what its own design implies itself)."""
        f = self.file
        found: list[str] = []
        if f.format == "compare":
            return found
        if f.duplicate == "rotations":
            found.append(
                'duplicate = "rotations": every entrant holds each seat\'s cards of a deal in '
                "turn; a bot that passes what it saw between its copies (through covert "
                "channels of the shared kernel such as file locks or the page cache) reads "
                "the other hands. Use it with trusted bots only"
            )
        for group in self.twins():
            found.append(
                f"{' and '.join(repr(n) for n in group)} are byte-identical (allow_twins = "
                "true): no match can order them, and the play-offs never try"
            )
        if not f.authors.apart:
            found.append(
                "[authors] apart = false: entrants of one author may share a table and a "
                "deal, and so what they see"
            )
        return found

    def twins(self) -> list[tuple[str, ...]]:
        """Groups of byte-identical entrants (same SHA-256 of their files), in file order."""
        return identical_groups({bot.name: bot.sha256 for bot in self.bots})

    def author(self, name: str) -> str:
        """Who wrote the entrant called ``name`` (itself, when nobody is named)."""
        return self.bot(name).author or name

    def authors_apart(self) -> dict[str, str] | None:
        """Entrant -> author key for the scheduler when authors are kept apart, else None.

        Authors are compared by their skeleton (:func:`referee.names.skeleton`), so
        "Alice" and "ALICE" are one author.
        """
        if not self.file.authors.apart:
            return None
        return {bot.name: skeleton(bot.author or bot.name) for bot in self.bots}

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
        raise UsageError(explain(path, exc)) from None
    return _resolve(path, model, text)


def append_bot_entry(path: Path, bot_path: str, name: str, author: str | None = None) -> Tournament:
    """Append a ``[[bots]]`` entry to the tournament file, leaving the rest as written.

    The new text is checked as a whole before anything is written (a file that lists its
    bots inline, ``bots = [...]``, cannot take a ``[[bots]]`` table; an author over
    ``[authors] max_entrants``); returns the tournament as it now is.
    """
    text = path.read_text(encoding="utf-8")
    block = "" if not text or text.endswith("\n") else "\n"
    block += f"\n[[bots]]\npath = {toml_string(bot_path)}\nname = {toml_string(name)}\n"
    if author is not None:
        block += f"author = {toml_string(author)}\n"
    try:
        updated = parse_tournament(text + block, path)
    except UsageError as exc:
        raise UsageError(f"cannot add the bot to {path}: {exc}") from None
    with path.open("a", encoding="utf-8") as handle:
        handle.write(block)
    return updated


def append_retirement(path: Path, name: str) -> Version:
    """Append to the league file at ``path`` an entry that retires the entrant ``name``
    (``referee league retire``: the running league takes it out at its next batch), leaving
    the rest as written. Returns the version retired; ``UsageError`` when ``path`` is no
    league or ``name`` is not in it."""
    tournament = load_tournament(path)
    if tournament.file.format != "league":
        raise UsageError(
            f'{path} is not a league (format = "{tournament.file.format}"): only a league '
            "takes entrants out while it runs"
        )
    roster = league_roster(tournament.file, path)
    current = roster.current(name)
    if current is None:
        listed = ", ".join(v.name for v in roster.active[:20])
        why = "is already retired from" if name in roster.retired else "is not an entrant of"
        raise UsageError(f"{path}: {name!r} {why} the league (in it now: {listed or 'nobody'})")
    text = path.read_text(encoding="utf-8")
    block = "" if not text or text.endswith("\n") else "\n"
    block += (
        f"\n[[bots]]\npath = {toml_string(current.entry.path)}\nname = {toml_string(name)}\n"
        "retired = true\n"
    )
    try:
        parse_tournament(text + block, path)  # the file as it will be must load
    except UsageError as exc:
        raise UsageError(f"cannot retire {name!r} in {path}: {exc}") from None
    with path.open("a", encoding="utf-8") as handle:
        handle.write(block)
    return current


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


def _entries(path: Path, model: TournamentFile) -> list[tuple[int, BotEntry, str | None]]:
    """The entries to load, each with its index and the name its entrant goes by: every
    entry; in a league, the current version of each entrant in it, named by its label
    (:mod:`referee.tournament.league`: older versions' files may be gone)."""
    if model.format == "league":
        return [(v.index, v.entry, v.label) for v in league_roster(model, path).active]
    k = model.table_size
    if k > len(model.bots):
        raise UsageError(
            f"{path}: table_size: {k} is more than the {len(model.bots)} bots listed; "
            f"allowed: 3 to {min(6, len(model.bots))}"
        )
    return [(i, entry, entry.name) for i, entry in enumerate(model.bots)]


def _resolve(path: Path, model: TournamentFile, source: str = "") -> Tournament:
    k = model.table_size
    entries = _entries(path, model)
    try:
        rules = model.ruleset().resolve(k)
    except UsageError as exc:
        message = str(exc) if str(exc).startswith("rules") else f"rules: {exc}"
        raise UsageError(f"{path}: {message}") from None
    base = path.parent
    bots: list[BotSpec] = []
    first_seen: dict[str, int] = {}
    # Each skeleton to the first name with it: one skeleton per name, not one per pair (a
    # league of 1,000 entrants is read again while it runs).
    looks: dict[str, str] = {}
    for i, entry, display in entries:
        where = f"{path}: bots[{i}]"
        try:
            spec = load_bot(entry.path, relative_to=base)
            spec = dataclasses.replace(spec, sha256=bot_sha256(read_bot_files(spec)))
            if display is not None:
                spec = dataclasses.replace(spec, name=check_display_name(display))
            if entry.author is not None:
                spec = dataclasses.replace(spec, author=check_name(entry.author, "author"))
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        if spec.name in first_seen:
            raise UsageError(
                f"{where}: the name {spec.name!r} is already used by "
                f"bots[{first_seen[spec.name]}]; "
                'names must be unique (set name = "..." on one of them)'
            )
        twin = looks.get(skeleton(spec.name))
        if twin is not None:
            raise UsageError(
                f"{where}: the name {spec.name!r} looks like {twin!r} of bots[{first_seen[twin]}] "
                f"({lookalike_note(spec.name, twin)}); names must look different "
                '(set name = "..." on one of them)'
            )
        first_seen[spec.name] = i
        looks.setdefault(skeleton(spec.name), spec.name)
        bots.append(spec)
    tournament = Tournament(path=path, file=model, bots=tuple(bots), rules=rules, source=source)
    for i, spec in enumerate(bots):
        if spec.image is not None:
            try:
                check_bot_image(spec, tournament.images, tournament.image_hint(spec.image))
            except UsageError as exc:
                raise UsageError(f"{path}: bots[{i}]: {exc}") from None
    _check_twins(path, tournament)
    _check_format(path, model, list(first_seen))
    _check_authors(path, tournament)
    _check_size(path, model)
    _check_playoff(path, model)
    return tournament


def _check_twins(path: Path, tournament: Tournament) -> None:
    """Refuse byte-identical entrants unless the file sets ``allow_twins = true``.

    Two entrants with the same files (the same SHA-256) are one program entered twice. In a
    competition that is never an accident worth running silently: a double submission, a
    copy of someone else's bot, or a pair that recognises itself at a table and plays for
    its copy (under two author names, ``[authors] apart`` does not see it). And no number of
    matches can order two copies: the play-offs, which spend their budget on the pairs
    whose order is in doubt, would spend all of it on them (they now skip such pairs,
    :mod:`referee.ranking.playoff`). So loading refuses, naming both and what to do; a file
    that means it (a control experiment, a reference bot entered twice on purpose) sets
    ``allow_twins = true``, and every run then says so before it starts, and the
    leaderboard says which entrants are identical.
    """
    twins = tournament.twins()
    if not twins or tournament.file.allow_twins:
        return
    index = {name: i for i, name in enumerate(tournament.entrants)}
    first = twins[0]
    sha = tournament.bot(first[0]).sha256
    listed = [f"bots[{index[n]}] ({n!r})" for n in first]
    named = (
        " and ".join(listed)
        if len(listed) <= 3
        else (f"{', '.join(listed[:2])} and {len(listed) - 2} more")
    )
    more = f" (and {len(twins) - 1} more such groups)" if len(twins) > 1 else ""
    raise UsageError(
        f"{path}: {named} are byte-identical (sha256 {sha[:12]}…): the same program entered "
        f"twice{more}; no match can order two copies, and the play-offs never try. Remove "
        "one, or set allow_twins = true at the top of the file to run them anyway"
    )


def _check_format(path: Path, model: TournamentFile, names: list[str]) -> None:
    if model.format == "compare":
        raise UsageError(
            f'{path}: format: "compare" is what referee compare writes into its results (it '
            "stops when its test decides); compare two versions of a bot with "
            "referee compare NEW OLD"
        )
    for key in ("baseline", "compare"):
        if getattr(model, key) is not None:
            raise UsageError(
                f"{path}: {key}: only referee compare uses it (compare two versions of a bot "
                "with referee compare NEW OLD)"
            )
    if model.format == "league":
        _check_league(path, model)
        return
    if "league" in model.model_fields_set:
        raise UsageError(
            f'{path}: league: only allowed when format = "league" (format is {model.format!r})'
        )
    retired = next((i for i, entry in enumerate(model.bots) if entry.retired), None)
    if retired is not None:
        raise UsageError(
            f'{path}: bots[{retired}]: retired: only a league (format = "league") takes '
            "entrants out while it runs; remove the entry instead"
        )
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


def _check_league(path: Path, model: TournamentFile) -> None:
    """What a league may not have: a fixed schedule's keys (it draws its own tables, one
    deal each, batch by batch) and play-offs (it never stops)."""
    fixed = {
        "candidate": 'only allowed when format = "gauntlet"',
        "matches": 'only allowed when format = "gauntlet"',
        "tables": "a league draws its own tables, batch by batch",
        "deals": "a league plays one deal at each table it draws (in every seat rotation)",
        "playoff": "a league never ends: its matchmaking seats close bots together all along",
    }
    for key, why in fixed.items():
        if key in model.model_fields_set:
            raise UsageError(f'{path}: {key}: not allowed when format = "league" ({why})')


def _check_authors(path: Path, tournament: Tournament) -> None:
    """At most ``max_entrants`` per author; tables that can keep one author's entrants apart."""
    f = tournament.file
    by_author: dict[str, list[str]] = {}
    for bot in tournament.bots:
        by_author.setdefault(skeleton(bot.author or bot.name), []).append(bot.name)
    crowded = {a: names for a, names in by_author.items() if len(names) > 1}
    limit = f.authors.max_entrants
    for names in by_author.values():
        if limit is not None and len(names) > limit:
            author = tournament.author(names[0])
            raise UsageError(
                f"{path}: authors.max_entrants: {author!r} has {len(names)} entrants "
                f"({', '.join(repr(n) for n in names)}); at most {limit} allowed"
            )
    if not crowded or not f.authors.apart:
        return
    if f.tables == "balanced":
        author = tournament.author(next(iter(crowded.values()))[0])
        raise UsageError(
            f'{path}: tables = "balanced" seats every pair of entrants together, but '
            f"{author!r} has several entrants and [authors] keeps them apart; use "
            'tables = "all", at most one entrant per author, or apart = false'
        )
    k, n = f.table_size, len(by_author)
    if n < k:
        raise UsageError(
            f"{path}: table_size: {k} entrants of different authors are needed at each table "
            f"([authors] apart = true), and there are only {n} authors"
        )


def _check_size(path: Path, model: TournamentFile) -> None:
    """Refuse a schedule of more than :data:`MAX_SCHEDULED` matches before anything is
    built (:func:`referee.tournament.model.schedule_size_problem`)."""
    problem = schedule_size_problem(model)
    if problem is not None:
        raise UsageError(f"{path}: {problem}")


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


def check_new_author(tournament: Tournament, author: str) -> None:
    """Refuse another entrant of ``author`` when ``[authors] max_entrants`` is reached."""
    limit = tournament.file.authors.max_entrants
    key = skeleton(author)
    theirs = [b.name for b in tournament.bots if skeleton(b.author or b.name) == key]
    if limit is not None and len(theirs) >= limit:
        raise UsageError(
            f"{tournament.path}: {author!r} already has {len(theirs)} entrant"
            f"{'s' if len(theirs) != 1 else ''} ({', '.join(repr(n) for n in theirs)}); "
            f"[authors] max_entrants allows {limit}"
        )


def check_display_name(name: str) -> str:
    """A display name: see :func:`referee.names.check_name`."""
    return check_name(name, "name")
