"""The ``referee`` command group and what its commands share.

Commands are thin: they parse, call the package and print. :func:`friendly` turns the
referee's own errors into one line on stderr and the exit code of their branch of the error
tree (:mod:`referee.errors`): 2 for a usage error, 1 when a check says no, 3 when our side
failed; Ctrl-C and SIGTERM stop every bot and remove the staging folders first (130 and
143; :mod:`referee.interrupts`). Every line the user sees may carry untrusted text (file
names, bot output), so it passes through :func:`referee.text.printable` on its way out.
"""

from __future__ import annotations

import functools
import os
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from referee import DISTRIBUTION
from referee.errors import RefereeError, ReplayMismatch, UsageError
from referee.interrupts import Terminated, handle_sigterm
from referee.sandbox import DEFAULT_SANDBOX, SANDBOX_NAMES, Limits
from referee.specs import TimeControl
from referee.text import printable

__all__ = [
    "allow_image_option",
    "bots_or_fail",
    "check_images",
    "check_memory",
    "default_log",
    "friendly",
    "main",
    "memory_option",
    "print_result",
    "sandbox_option",
    "say",
]

F = TypeVar("F", bound=Callable[..., Any])


def say(message: str) -> None:
    """Print a message for the user on stderr, each line made safe for a terminal."""
    click.echo("\n".join(printable(line) for line in message.split("\n")), err=True)


def _fail(message: str, code: int) -> None:
    say(f"referee: {message}")
    sys.exit(code)


def friendly(func: F) -> F:
    """Turn the referee's own errors into one clear line and their exit code.

    SIGTERM is handled like Ctrl-C while the command runs: bots are stopped and staging
    folders removed before the command ends with 143 (Ctrl-C: 130).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with handle_sigterm():
                return func(*args, **kwargs)
        except ReplayMismatch as exc:
            _fail(f"replay failed: {exc}", exc.exit_code)
        except RefereeError as exc:
            _fail(str(exc), exc.exit_code)
        except Terminated:
            _fail("terminated (SIGTERM); every bot was stopped", Terminated.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; every bot was stopped", 130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION, prog_name="referee")
def main() -> None:
    """Referee and tournament runner for Arschloch / Président card-game bots."""


sandbox_option = click.option(
    "--sandbox",
    "sandbox_name",
    default=DEFAULT_SANDBOX,
    show_default=True,
    type=click.Choice(SANDBOX_NAMES),
    help="Where bots run; the same default as a tournament file's [sandbox] backend "
    "(auto: docker when its daemon and image are there, else process).",
)


memory_option = click.option(
    "--memory-mb",
    "memory_mb",
    default=Limits().memory_mb,
    show_default=True,
    type=click.IntRange(32, 65_536),
    help="Memory limit of each bot over its whole process tree (MiB); in a tournament "
    "file: [sandbox] memory_mb.",
)


def check_memory(sandbox: Any, bots: int, memory_mb: int, *, samples: int = 0, fix: str) -> None:
    """Refuse, before any bot starts, bots whose memory limits do not fit in the memory
    really there (:func:`referee.sandbox.budget.check_room`); ``samples`` sample bots
    are counted at what they use, ``fix`` says what to lower."""
    from referee.sandbox.budget import check_room, read_budget

    budget = read_budget(own_cgroup=sandbox.name == "process")
    check_room(bots, memory_mb=memory_mb, budget=budget, samples=samples, fix=fix)


def time_control_options(command: F) -> F:
    """``--move-ms``, ``--bank-ms`` and ``--hello-ms``, handed to the command as one
    ``time_control`` (a :class:`~referee.specs.TimeControl`), with the model's bounds."""

    @functools.wraps(command)
    def wrapper(*args: Any, move_ms: int, bank_ms: int, hello_ms: int, **kwargs: Any) -> Any:
        clock = TimeControl(move_ms=move_ms, bank_ms=bank_ms, hello_ms=hello_ms)
        return command(*args, time_control=clock, **kwargs)

    helps = {
        "hello_ms": "Time to start up and answer hello (ms).",
        "bank_ms": "Extra time for each match, used when a reply takes over --move-ms (ms).",
        "move_ms": "Time for each request (ms).",
    }
    decorated: Any = wrapper
    for field, text in helps.items():
        decorated = click.option(
            "--" + field.replace("_", "-"),
            field,
            default=getattr(TimeControl(), field),
            show_default=True,
            type=click.IntRange(*TimeControl.bounds(field)),
            help=text,
        )(decorated)
    return typing.cast(F, decorated)


def announce(sandbox: Any, time_control: Any, limits: Any, *, err: bool = True) -> None:
    """Say where the bots run and under which clock and limits, before any bot starts."""
    click.echo(printable(f"sandbox: {sandbox.describe()}"), err=err)
    click.echo(printable(f"limits: {time_control.describe()}; {limits.describe()}"), err=err)


def default_log(stem: str) -> Any:
    """A log file in a private folder under the temp folder, named after the match.

    The folder is the user's alone (0700): a match log holds every hand, and a bot without
    bubblewrap could otherwise read the log of the match it is playing. Its name is fixed,
    so someone else may have planted it (a symlink, a folder of theirs): that is refused
    (:func:`referee.folders.private_folder`).
    """
    import tempfile

    from referee.folders import private_folder
    from referee.text import safe_name

    log_dir = private_folder(Path(tempfile.gettempdir()) / f"referee-logs-{os.geteuid()}")
    return log_dir / f"{safe_name(stem)}.jsonl"


allow_image_option = click.option(
    "--allow-image",
    "allow_images",
    multiple=True,
    metavar="IMAGE",
    help="Let a bot run in this Docker image (image = ... in its bot.toml); repeatable. "
    "Default: only the referee's bot image.",
)


def check_images(specs: list[Any], allow_images: tuple[str, ...]) -> None:
    """Refuse a bot naming a Docker image that ``--allow-image`` did not allow."""
    from referee.sandbox.image import check_bot_image

    for spec in specs:
        hint = f"to allow it, pass --allow-image {spec.image}"
        check_bot_image(spec, allow_images, hint)


def bots_or_fail(
    paths: tuple[str, ...], allow_images: tuple[str, ...] = (), people: int = 0
) -> list[Any]:
    """The bots of one match, loaded and checked; ``people`` seats are taken by people."""
    from referee.sandbox import load_bot

    if not 3 <= len(paths) + people <= 6:
        if people:
            raise UsageError(
                f"a match needs 3 to 6 players: with {people} person(s) seated, "
                f"{3 - people} to {6 - people} bots, got {len(paths)}"
            )
        raise UsageError(f"a match needs 3 to 6 bots, got {len(paths)}")
    specs = [load_bot(p) for p in paths]
    check_images(specs, allow_images)
    return specs


def built_bot(
    spec: Any,
    sandbox: str,
    images: tuple[str, ...],
    show: Callable[[list[str]], None],
    *,
    as_json: bool = False,
) -> Any:
    """``spec`` built in ``sandbox`` (or found built in the cache), saying so through
    ``show``; a build that fails ends the command (exit code 1) with the compiler's output
    (and, with ``as_json``, one JSON object saying why on stdout)."""
    import json

    from referee.sandbox.build import Builder, BuildFailed, BuildLimits

    limits = BuildLimits()
    what = f"build: {spec.name}:"
    show([f"{what} {' '.join(spec.build)} in the {sandbox} sandbox ({limits.describe()})"])
    try:
        built = Builder(sandbox, images=images, limits=limits).build(spec)
    except BuildFailed as exc:
        if as_json:
            failure = {"reason": exc.reason, "first_error": exc.first_error, "log": exc.log}
            click.echo(json.dumps({"passed": False, "build": failure}, ensure_ascii=False))
        show(str(exc).splitlines())
        sys.exit(1)
    if built.cached:
        show([f"{what} already built (in {built.seconds:.1f} s), reused from the cache"])
    else:
        show([f"{what} done in {built.seconds:.1f} s"])
    return built.spec


def print_result(result: Any) -> None:
    """A match's standings, each fault explained, each seat whose kit replaced decisions
    warned, and where its log is."""
    from rich.table import Table
    from rich.text import Text

    from referee.explain import explain_fault, replacements_summary
    from referee.text import ordinal

    console = Console(highlight=False)
    table = Table(title=f"{result.match} · {result.rules} · {result.rounds} rounds")
    table.add_column("place", justify="right")
    table.add_column("seat", justify="right")
    table.add_column("bot")
    table.add_column("score", justify="right")
    table.add_column("note")
    for st in result.standings:
        note = ""
        if st.fault is not None and st.fault.kind == "left":
            note = "left the match"
        elif st.fault is not None:
            note = f"forfeit — {st.fault.kind}: {printable(st.fault.detail)}"
        if st.kit_replaced:
            note += f"{'; ' if note else ''}kit replaced {st.kit_replaced}"
        table.add_row(
            ordinal(st.place), str(st.seat), Text(printable(st.name)), str(st.score), Text(note)
        )
    from referee.cli.tables import print_table

    print_table(table, console=console)
    for st in sorted(result.standings, key=lambda st: st.seat):
        if st.fault is not None:
            how = "left" if st.fault.kind == "left" else "forfeited"
            console.print(printable(f"seat {st.seat} ({st.name}) {how}:"), markup=False)
            for line in explain_fault(st.fault, result.stderr_tails.get(st.seat)):
                console.print("  " + line, markup=False, soft_wrap=True)
    for st in sorted(result.standings, key=lambda st: st.seat):
        if st.kit_replaced:
            told = replacements_summary(st.kit_replaced, st.kit_replacements)
            console.print(
                printable(
                    f"warning: seat {st.seat} ({st.name}): {told}; "
                    "`referee bot check` fails such a bot (protocol/SPEC.md: the kits' "
                    "safety net)"
                ),
                markup=False,
                soft_wrap=True,
            )
    console.print(f"match log: {result.log}  (referee replay {result.log})", markup=False)
