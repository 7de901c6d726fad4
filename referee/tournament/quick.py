"""``referee play BOTS --matches N``: N matches of one table of bots, as a small tournament.

The quick loop a bot author runs after every change. It is a tournament in every way that
matters, so it reuses the tournament's machinery whole: a round robin of the one table
that the given bots make (every bot at every match), its seat rotations and balanced base
orders (:mod:`referee.tournament.seating`), secret deals (:mod:`referee.tournament.deals`),
and a results store that lets an interrupted run resume. :func:`quick_tournament` builds
the :class:`~referee.tournament.file.Tournament`; the coordinator plays it.

**How many.** A table deal is played in all ``k`` seat rotations (each bot holds each
seat's hand once), so ``N`` is rounded up to whole table deals: ``ceil(N / k)`` of them
(:func:`deals_for`). The base order changes from deal to deal; after
:data:`~referee.tournament.seating.BALANCED_DEALS` deals (2 at 3 seats, 6 at 4, 4 at 5, 20
at 6) every ordered pair of bots has sat at every offset equally often.

**Which cards.** The default is the tournament's: **no bot meets the same cards twice**
(ARCHITECTURE.md). A deal is shared only across disjoint tables, and one table has none
to share with, so every match is dealt its own cards. That is right for an author's loop
too: the numbers then mean what a tournament's will, and a bot that learns from cards it
saw before (on purpose or through a cache it forgot) cannot look better here than it will
be there. ``duplicate = "rotations"`` (``--duplicate rotations``) opts into the classic
duplicate scheme, every rotation of a table deal on the same cards, which cancels card
luck and narrows the interval for the same number of matches: for trusted bots only.

The bots are the ones given, already loaded and checked; a bot given twice takes two seats
under two names (``name#1``, ``name#2``: the caller makes names distinct), so copies are
allowed (``allow_twins``) and nobody is kept apart by author (it is one author's loop).
The file the tournament would have been is kept as its ``source`` (the results store keeps
it as the plan, so ``referee verify`` can recompute the schedule).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from referee.sandbox import BotSpec, bot_sha256, read_bot_files
from referee.specs import TimeControl
from referee.text import printable
from referee.tournament.file import Tournament, toml_string
from referee.tournament.model import CompareSettings, TournamentFile
from referee.tournament.scheduler import Duplicate

__all__ = [
    "COMPARE_NAME",
    "QUICK_NAME",
    "compare_tournament",
    "deals_for",
    "quick_tournament",
    "toml_value",
]

QUICK_NAME = "play"
"""The tournament's name: it names nothing on disk (the caller picks the results folder)."""

COMPARE_NAME = "compare"
"""The name of ``referee compare``'s tournament (its results folder is the caller's too)."""


def deals_for(matches: int, table_size: int) -> int:
    """Table deals that play at least ``matches`` matches: whole seat rotations."""
    if matches < 1:
        raise ValueError("at least one match")
    return math.ceil(matches / table_size)


def quick_tournament(
    bots: Sequence[BotSpec],
    given: Sequence[str],
    *,
    preset: str,
    max_rounds: int | None,
    matches: int,
    seed: int,
    duplicate: Duplicate,
    time_control: TimeControl,
    backend: str,
    memory_mb: int,
    images: Sequence[str],
    folder: Path,
) -> Tournament:
    """The tournament of one table of ``bots`` (as the user named them: ``given``), playing
    at least ``matches`` matches (:func:`deals_for`); ``folder`` holds its results.

    Raises ``UsageError`` when the rules do not work at this many seats, ``ValueError``
    when two bots have one name.
    """
    names = [bot.name for bot in bots]
    if len(set(names)) != len(names):
        raise ValueError(f"the bots' names must be distinct: {names}")
    source = _source(
        bots,
        given,
        preset=preset,
        max_rounds=max_rounds,
        deals=deals_for(matches, len(bots)),
        seed=seed,
        duplicate=duplicate,
        time_control=time_control,
        backend=backend,
        memory_mb=memory_mb,
        images=images,
    )
    return _tournament(bots, source, folder / f"{QUICK_NAME}.toml")


def _tournament(bots: Sequence[BotSpec], source: str, path: Path) -> Tournament:
    """The tournament of the file ``source`` (made here, so checked by its model alone)."""
    model = TournamentFile.model_validate(tomllib.loads(source))
    rules = model.ruleset().resolve(model.table_size)
    fingerprinted = tuple(
        dataclasses.replace(bot, sha256=bot_sha256(read_bot_files(bot))) for bot in bots
    )
    return Tournament(path=path, file=model, bots=fingerprinted, rules=rules, source=source)


def _source(
    bots: Sequence[BotSpec],
    given: Sequence[str],
    *,
    preset: str,
    max_rounds: int | None,
    deals: int,
    seed: int,
    duplicate: Duplicate,
    time_control: TimeControl,
    backend: str,
    memory_mb: int,
    images: Sequence[str],
) -> str:
    """The tournament file these settings make (paths as the user gave them, printable)."""
    lines = _settings_lines(
        QUICK_NAME,
        preset=preset,
        max_rounds=max_rounds,
        table_size=len(bots),
        deals=deals,
        seed=seed,
        duplicate=duplicate,
        time_control=time_control,
        backend=backend,
        memory_mb=memory_mb,
        images=images,
    )
    for bot, path in zip(bots, given, strict=True):
        lines += ["", "[[bots]]", f"path = {toml_string(printable(path))}"]
        lines.append(f"name = {toml_string(bot.name)}")
    return "\n".join(lines) + "\n"


def _settings_lines(
    name: str,
    *,
    preset: str,
    max_rounds: int | None,
    table_size: int,
    deals: int,
    seed: int,
    duplicate: Duplicate,
    time_control: TimeControl,
    backend: str,
    memory_mb: int,
    images: Sequence[str],
    rules_table: str | Mapping[str, Any] | None = None,
) -> list[str]:
    """A command's tournament file up to its bots: one author's bots (copies allowed, nobody
    kept apart), the command's rules (``rules_table`` as a tournament file writes them, or
    else the preset and its round cap), clock and sandbox."""
    if rules_table is not None:
        rules = toml_value(rules_table)
    else:
        rules = f"{{ preset = {toml_string(preset)}"
        rules += f", max_rounds = {max_rounds} }}" if max_rounds is not None else " }"
    listed = ", ".join(toml_string(image) for image in images)
    return [
        f"name = {toml_string(name)}",
        f"rules = {rules}",
        f"table_size = {table_size}",
        f"deals = {deals}",
        f"seed = {seed}",
        f"duplicate = {toml_string(duplicate)}",
        "allow_twins = true",
        "",
        "[time]",
        *(f"{key} = {value}" for key, value in time_control.model_dump().items()),
        "",
        "[sandbox]",
        f"backend = {toml_string(backend)}",
        f"memory_mb = {memory_mb}",
        f"images = [{listed}]",
        "",
        "[authors]",
        "apart = false",
    ]


def toml_value(value: object) -> str:
    """``value`` (a string, a number, a boolean, an array or a table, as :mod:`tomllib`
    reads them) written as a TOML inline value, which :mod:`tomllib` reads back equal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{toml_string(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise ValueError(f"no TOML inline value for {type(value).__name__}")


def compare_tournament(
    new: BotSpec,
    old: BotSpec,
    field: Sequence[BotSpec],
    given: Sequence[str],
    *,
    preset: str,
    max_rounds: int | None,
    table_size: int,
    deals: int,
    time_control: TimeControl,
    backend: str,
    memory_mb: int,
    images: Sequence[str],
    folder: Path,
    test: CompareSettings | None = None,
    rules: str | Mapping[str, Any] | None = None,
) -> Tournament:
    """``referee compare``'s tournament: ``new`` against ``old`` on at most ``deals`` paired
    deals, each at a table of ``new`` (or ``old``) and ``table_size - 1`` of the ``field``
    bots (:func:`referee.tournament.scheduler.compare`). ``given`` are the paths as the user
    named the bots (new, old, then the field); names must be distinct already. ``test`` is
    written as the file's ``[compare]`` section (none: scored by ``final-score``, the
    hypotheses the run's). ``rules``, when given, are the rules as a tournament file has
    them (a preset's name, or a table of a preset and its overrides: the competition
    server compares on its league's), instead of ``preset`` and ``max_rounds``.

    Raises ``UsageError`` when the rules do not work at this many seats, ``ValueError`` when
    two bots have one name.
    """
    bots = (new, old, *field)
    names = [bot.name for bot in bots]
    if len(set(names)) != len(names):
        raise ValueError(f"the bots' names must be distinct: {names}")
    lines = _settings_lines(
        COMPARE_NAME,
        preset=preset,
        max_rounds=max_rounds,
        table_size=table_size,
        deals=deals,
        seed=0,
        duplicate="rotations",
        time_control=time_control,
        backend=backend,
        memory_mb=memory_mb,
        images=images,
        rules_table=rules,
    )
    lines[3:3] = [
        'format = "compare"',
        f"candidate = {toml_string(new.name)}",
        f"baseline = {toml_string(old.name)}",
    ]
    if test is not None:
        lines += ["", "[compare]", f"statistic = {toml_string(test.statistic)}"]
        for key in ("d0", "d1", "alpha", "beta"):
            value = getattr(test, key)
            if value is not None:
                lines.append(f"{key} = {float(value)!r}")
        if test.min_differing is not None:
            lines.append(f"min_differing = {int(test.min_differing)}")
    for bot, path in zip(bots, given, strict=True):
        lines += ["", "[[bots]]", f"path = {toml_string(printable(path))}"]
        lines.append(f"name = {toml_string(bot.name)}")
    return _tournament(bots, "\n".join(lines) + "\n", folder / f"{COMPARE_NAME}.toml")
