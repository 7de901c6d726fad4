"""Entering a bot in a tournament: the workflow behind ``referee submit``.

:func:`submit` takes what an author names (a ``.py`` file, an executable, or a folder with
``bot.toml``) and a loaded tournament, and either enters the bot (its files copied into
``bots/`` next to the tournament file, a ``[[bots]]`` entry appended) or refuses it with
the reason, having changed nothing. In order, cheapest first:

1. the bot is read once (:func:`referee.sandbox.staging.read_bot`): its spec (command,
   image, author) is built from the bytes read, and only those bytes are checked and
   entered, whatever the author's folder holds by then;
2. its Docker image must be one the tournament allows;
3. its display name must be new and look like no entrant's (:mod:`referee.names`), its
   author within the file's ``[authors]`` limit; in a league, a name already entered
   enters a **new version** of that entrant instead (:mod:`referee.tournament.league`: the
   running league takes it in at its next batch and retires the version it replaces), which
   must differ from the current one, and keeps the entrant's author unless given;
4. its files must not be an entrant's, byte for byte, unless the file sets ``allow_twins``;
5. the bots of the check must fit in the memory here;
6. a staged copy of those bytes passes ``referee bot check``'s steps for the tournament's
   rules at its table size, under its clock and limits
   (:func:`referee.match.compliance.check_entry`: the handshake, short matches on pinned
   deals, two matches on one process); a failure is refused with bot check's diagnostics;
7. the bytes are copied in through descriptors, and the entry appended.

A refusal (:class:`~referee.errors.Refused`, exit code 1) is the bot's doing; a usage error
(a name taken, a path that does not exist: exit code 2) the caller's.

Why a module of its own, at this level: entering a bot plays matches (the check, in
:mod:`referee.match`) and reads and edits the tournament file (:mod:`referee.tournament`).
The plan and its record may not play matches (an import-linter contract), and the CLI only
parses options and prints, so the workflow sits above both, beside
:mod:`referee.runs`, the other workflow over both; nothing below imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from referee.errors import InfrastructureError, Refused, UsageError
from referee.match.compliance import CheckReport, Progress, Step, check_entry
from referee.names import check_name, confusable_with, lookalike_note
from referee.resources import SAMPLE_PREFIX, sample_by_name
from referee.rules import RuleSet
from referee.sandbox import (
    BotSpec,
    Limits,
    Sandbox,
    bot_sha256,
    get_sandbox,
    make_staging_root,
    read_bot,
    remove_staging_root,
    stage_files,
)
from referee.sandbox.build import Builder, BuildFailed, BuildLimits
from referee.sandbox.image import check_bot_image
from referee.sandbox.staging import BotFile, write_bot_folder
from referee.specs import TimeControl
from referee.text import printable, safe_name
from referee.tournament.file import (
    Tournament,
    append_bot_entry,
    check_display_name,
    check_new_author,
    load_tournament,
)
from referee.tournament.league import Version, league_roster

__all__ = ["EntryCheck", "Submission", "accepted_line", "check_intro", "submit"]


class EntryCheck(Protocol):
    """What checks the staged bot: :func:`~referee.match.compliance.check_entry`, or a
    test's wrapper around it."""

    def __call__(
        self,
        staged: BotSpec,
        sandbox: Sandbox,
        ruleset: RuleSet,
        seats: int,
        *,
        time_control: TimeControl,
        limits: Limits,
        on_start: Callable[[CheckReport], None] | None = None,
        progress: Progress | None = None,
    ) -> CheckReport: ...


@dataclass(frozen=True)
class Submission:
    """A bot entered: its display name, its folder next to the tournament file, the path
    written in its ``[[bots]]`` entry, and the check it passed."""

    name: str
    folder: Path
    entry: str
    report: CheckReport
    version: Version | None = None
    """In a league: the version entered (its number and the label its results go under)."""
    replaces: Version | None = None
    """In a league: the entrant's version in the league when the bot was checked, which a
    new version replaces (``None``: a new entrant, or one retired)."""
    entered: bool = True
    """``False`` for a bot checked and not entered (``submit(enter=False)``): ``folder`` is
    then where it was read from, ``entry`` empty and ``version`` ``None``."""


def submit(
    bot: str | Path,
    tournament: Tournament,
    *,
    name: str | None = None,
    author: str | None = None,
    sandbox: Sandbox | None = None,
    check: EntryCheck = check_entry,
    on_check: Callable[[CheckReport], None] | None = None,
    progress: Progress | None = None,
    owner: str | None = None,
    enter_lock: AbstractContextManager[object] | None = None,
    enter: bool = True,
) -> Submission:
    """Check the bot at ``bot`` and enter it in ``tournament`` (see the module docstring).

    ``name`` and ``author`` override the bot's own. ``sandbox`` is the tournament's backend
    unless given. ``on_check`` is called when the check starts (with its empty report),
    ``progress`` with each finished step. Raises :class:`~referee.errors.Refused` or
    :class:`~referee.errors.UsageError`; nothing is written then.

    ``owner`` (the competition server's signed-in author) is the author whatever the bot's
    files or ``author`` say, and a name already entered by another author is refused
    instead of becoming a new version of that author's entrant. ``enter_lock`` lets checks
    run side by side: the check runs outside it, and under it the file is read again and
    the name, author and twin rules checked again against what other submissions entered
    meanwhile, before the bot is copied in and appended.

    ``enter=False`` runs every rule and the check as for an entry and writes nothing: the
    bot is checked, not entered (the competition server compares such a version with the
    entrant's current one before its author enters it).
    """
    candidate, files = _read(bot, tournament)
    wanted = name if name is not None else candidate.name
    if owner is not None:
        author = owner
    candidate, author = _admit(tournament, candidate, files, wanted, author, owner)
    if sandbox is None:
        sandbox = get_sandbox(tournament.file.sandbox.backend, images=tournament.images)
    _check_memory(tournament, sandbox)
    report = _check(tournament, sandbox, candidate, files, check, on_check, progress)
    current = _current_version(tournament, candidate.name)
    if not enter:
        return Submission(
            name=candidate.name,
            folder=Path(bot),
            entry="",
            report=report,
            replaces=current,
            entered=False,
        )
    with enter_lock if enter_lock is not None else contextlib.nullcontext():
        if enter_lock is not None:  # others may have entered meanwhile: their names count
            tournament = load_tournament(tournament.path)
            candidate, author = _admit(tournament, candidate, files, wanted, author, owner)
            current = _current_version(tournament, candidate.name)
        folder, entry = _copy_in(tournament, candidate, files)
        try:
            updated = append_bot_entry(tournament.path, entry, candidate.name, author)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    display = candidate.name
    version = None
    if updated.file.format == "league":
        version = league_roster(updated.file).latest(display)
    return Submission(
        name=display,
        folder=folder,
        entry=entry,
        report=report,
        version=version,
        replaces=current,
    )


def _read(bot: str | Path, tournament: Tournament) -> tuple[BotSpec, tuple[BotFile, ...]]:
    """The bot at ``bot`` read once, its image one the tournament allows: a missing path
    or an unknown sample is ``UsageError``, a bot that cannot be read ``Refused``."""
    if isinstance(bot, str) and bot.startswith(SAMPLE_PREFIX):
        sample_by_name(bot)  # an unknown name is the user's mistake, as in play
    elif not os.path.lexists(bot):
        raise UsageError(f"bot not found: {printable(str(bot))} does not exist")
    try:
        candidate, files = read_bot(bot)
        check_bot_image(candidate, tournament.images, tournament.image_hint(candidate.image or ""))
    except UsageError as exc:
        raise Refused(f"bot refused: {exc}") from None
    return candidate, files


def check_intro(report: CheckReport, tournament: Tournament) -> list[str]:
    """The lines ``referee submit`` says when the check starts: the sandbox, the limits and
    what the check plays (the competition server's report opens with the same)."""
    rules, k = tournament.file.ruleset().name, tournament.file.table_size
    kind = "league" if tournament.file.format == "league" else "tournament"
    return [
        f"sandbox: {report.sandbox}",
        f"limits: {report.time_control.describe()}; {report.limits.describe()}",
        f"check: {report.bot} against the sample bots, the steps of referee bot check for "
        f"{rules} at {k} seats, then a full match of those rules (to its end, as the {kind} "
        "plays it)",
    ]


def accepted_line(entered: Submission, file: Path | str) -> str:
    """The line ``referee submit`` ends with when ``entered`` was entered in ``file``."""
    version = entered.version
    if version is not None and version.version > 1:
        return printable(
            f"accepted: version {version.version} of {entered.name} entered in {file} as "
            f"{entered.entry} (its results go under {version.label}); the running league "
            "takes it in at its next batch and retires the version before it"
        )
    return f"accepted: {entered.name} entered in {file} as {entered.entry}"


def _admit(
    tournament: Tournament,
    candidate: BotSpec,
    files: tuple[BotFile, ...],
    wanted: str,
    author: str | None,
    owner: str | None,
) -> tuple[BotSpec, str | None]:
    """The rules a bot must pass against the entrants before it is checked (and again,
    under the lock, before it is entered): its name, its author, its bytes. Returns the
    candidate under its display name and author, and the author to write in its entry."""
    earlier = _earlier_version(tournament, wanted)
    if earlier is not None and owner is not None and earlier.entry.author != owner:
        raise UsageError(
            f"a bot named {printable(wanted)!r} is already entered by another author; "
            "choose another name"
        )
    if earlier is not None and author is None:
        author = earlier.entry.author  # a new version is the same entrant's
    display = check_display_name(wanted) if earlier else _display_name(tournament, wanted)
    if author is not None:
        candidate = dataclasses.replace(candidate, author=check_name(author, "--author"))
    candidate = dataclasses.replace(candidate, name=display)
    sha256 = bot_sha256(files)
    if earlier is None:
        check_new_author(tournament, candidate.author or display)
    else:
        _refuse_unchanged(tournament, earlier, sha256)
    _refuse_a_twin(tournament, sha256, own=earlier.label if earlier else None)
    return candidate, author


def _earlier_version(tournament: Tournament, wanted: str) -> Version | None:
    """In a league, the latest version of the entrant called ``wanted`` (in the league or
    retired): what a submission under its name enters a new version of."""
    if tournament.file.format != "league":
        return None
    return league_roster(tournament.file, tournament.path).latest(wanted)


def _current_version(tournament: Tournament, name: str) -> Version | None:
    """In a league, the version of the entrant ``name`` in the league now."""
    if tournament.file.format != "league":
        return None
    return league_roster(tournament.file, tournament.path).current(name)


def _refuse_unchanged(tournament: Tournament, earlier: Version, sha256: str) -> None:
    """Refuse a new version whose files are the entrant's current ones, byte for byte."""
    current = next((b for b in tournament.bots if b.name == earlier.label), None)
    if current is not None and current.sha256 == sha256:
        raise Refused(
            f"bot refused: its files are those of {printable(earlier.label)!r}, the version of "
            f"{printable(earlier.name)!r} in the league now (sha256 {sha256[:12]}…): a new "
            "version must change something"
        )


def _display_name(tournament: Tournament, wanted: str) -> str:
    """``wanted``, checked as a display name, new and unlike every entrant's (in a league:
    unlike every entrant's name, whatever its versions)."""
    display = check_display_name(wanted)
    file = tournament.path
    names = tournament.entrants
    if tournament.file.format == "league":
        names = league_roster(tournament.file, file).names
    if display in names:
        raise UsageError(
            f"{file}: a bot named {display!r} is already entered; choose another with --name"
        )
    twin = confusable_with(display, names)
    if twin is not None:
        raise UsageError(
            f"{file}: the name {display!r} looks like {twin!r}, already entered "
            f"({lookalike_note(display, twin)}); choose another with --name"
        )
    return display


def _refuse_a_twin(tournament: Tournament, sha256: str, *, own: str | None = None) -> None:
    """Refuse a bot whose files are an entrant's, byte for byte, unless the file allows
    twins (see :func:`referee.tournament.file.load_tournament`); ``own`` is the version
    a new version replaces (:func:`_refuse_unchanged` speaks for it)."""
    same = [bot.name for bot in tournament.bots if bot.sha256 == sha256 and bot.name != own]
    if same and not tournament.file.allow_twins:
        raise Refused(
            f"bot refused: its files are byte-identical to the entrant {printable(same[0])!r} "
            f"(sha256 {sha256[:12]}…): the same program cannot be entered twice, unless "
            f"{printable(str(tournament.path))} sets allow_twins = true"
        )


def _check_memory(tournament: Tournament, sandbox: Sandbox) -> None:
    """Refuse, before any bot starts, a check whose bots do not fit in the memory here."""
    from referee.sandbox.budget import check_room, read_budget

    # The bot at its limit; the sample bots of one table and as many kept idle by the pool.
    samples = 2 * (tournament.file.table_size - 1)
    check_room(
        1,
        memory_mb=tournament.limits.memory_mb,
        budget=read_budget(own_cgroup=sandbox.name == "process"),
        samples=samples,
        fix=f"lower [sandbox] memory_mb in {tournament.path}",
    )


def _check(
    tournament: Tournament,
    sandbox: Sandbox,
    candidate: BotSpec,
    files: tuple[BotFile, ...],
    check: EntryCheck,
    on_check: Callable[[CheckReport], None] | None,
    progress: Progress | None,
) -> CheckReport:
    """Stage ``files`` and run ``check`` on that copy; refuse the bot when it fails.

    A bot with a build step is built first, as the tournament will build it (its sandbox,
    its ``[build]`` limits, the same cache): a build that fails refuses the bot with the
    compiler's output."""
    if candidate.build:
        builder = Builder(
            sandbox.name,
            images=tuple(sorted(tournament.images)),
            limits=BuildLimits(**tournament.file.build.model_dump()),
        )
        try:
            built = builder.build(candidate, files)
        except BuildFailed as exc:
            raise Refused(f"bot refused: {exc}") from None
        candidate, files = built.spec, built.files
    staging = make_staging_root()
    try:
        report = check(
            stage_files(candidate, files, staging),
            sandbox,
            tournament.file.ruleset(),
            tournament.file.table_size,
            time_control=tournament.time_control,
            limits=tournament.limits,
            on_start=on_check,
            progress=progress,
        )
    finally:
        remove_staging_root(staging)
    failed = next((step for step in report.steps if not step.ok), None)
    if failed is not None or not report.passed:
        raise Refused(_refusal(failed))
    return report


def _refusal(step: Step | None) -> str:
    """Bot check's diagnostics of the failed ``step``, under one ``bot refused`` line."""
    if step is None:
        return "bot refused: the check did not finish"
    fault = step.fault
    head = f"bot refused: {fault.kind}: {fault.detail}" if fault else f"bot refused: {step.name}"
    lines = [f"check step: {step.name}", *step.problem]
    return head + "\n" + "\n".join("  " + line for line in lines)


def _copy_in(
    tournament: Tournament, candidate: BotSpec, files: tuple[BotFile, ...]
) -> tuple[Path, str]:
    """Write the bot's files (the very tuple checked) to ``bots/<safe name>/`` next to the
    tournament file, through descriptors (:func:`~referee.sandbox.staging.write_bot_folder`).

    Returns the folder and the path for the ``[[bots]]`` entry (relative to the file).
    """
    bots_dir = tournament.path.parent / "bots"
    slug = safe_name(candidate.name)
    folder, n = bots_dir / slug, 1
    while os.path.lexists(folder):
        n += 1
        folder = bots_dir / f"{slug}-{n}"
    try:
        bots_dir.mkdir(parents=True, exist_ok=True)
        write_bot_folder(files, folder)
    except FileExistsError:
        raise UsageError(f"{folder} appeared while the bot was copied in; run again") from None
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise InfrastructureError(
            f"cannot copy the bot into {folder}: {exc.strerror or exc}"
        ) from None
    relative = folder.relative_to(tournament.path.parent).as_posix()
    if candidate.single_file:
        return folder, f"{relative}/{candidate.single_file}"
    return folder, relative
