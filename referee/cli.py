"""The ``referee`` command line: thin wrappers that parse, call and print.

A :class:`~referee.errors.UsageError` (or any ``RefereeError`` on the user's side) ends the
command with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from referee import __version__
from referee.errors import RefereeError, ReplayMismatch, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"referee: {message}", err=True)
    sys.exit(code)


def friendly(func: F) -> F:
    """Turn the referee's own errors into one clear line and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UsageError as exc:
            _fail(str(exc), exc.exit_code)
        except ReplayMismatch as exc:
            _fail(f"replay failed: {exc}", 1)
        except RefereeError as exc:
            _fail(str(exc), 2)
        except KeyboardInterrupt:
            _fail("interrupted", 130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="referee")
def main() -> None:
    """Referee and tournament runner for Arschloch / Président card-game bots."""


@main.command()
@click.argument("log", type=click.Path(dir_okay=False, path_type=str))
@click.option("--check-only", is_flag=True, help="Only verify the log; print one line.")
@click.option("--color/--no-color", default=None, help="Colour suits (default: on a terminal).")
@friendly
def replay(log: str, check_only: bool, color: bool | None) -> None:
    """Replay a match LOG through the engine and print it trick by trick.

    Every logged decision is re-applied; the first line that differs from what the rules
    give stops the replay with exit code 1.
    """
    from referee.matchlog import read_log
    from referee.render import render_text
    from referee.rules import replay as replay_lines

    lines = read_log(log)
    game = replay_lines(lines)
    if check_only:
        click.echo(f"{log}: ok, {game.round} rounds, {len(lines)} lines replayed")
        return
    console = Console(highlight=False, soft_wrap=True, no_color=color is False)
    use_color = console.is_terminal if color is None else color
    console.print(render_text(lines, color=use_color), markup=use_color)


@main.command()
@click.option("--rules", "preset", default="arschloch", show_default=True, help="Preset name.")
@click.option("--players", default=4, show_default=True, type=click.IntRange(3, 6))
@click.option("--seed", default=1, show_default=True, type=int)
@friendly
def demo(preset: str, players: int, seed: int) -> None:
    """Play one match in-process among random legal players and print it."""
    import random

    from referee.matchlog import game_log_lines
    from referee.render import render_text
    from referee.rules import RuleSet
    from referee.rules.simulate import play_random

    rules = RuleSet.preset(preset).resolve(players)
    game = play_random(rules, [f"random-{i}" for i in range(players)], seed, random.Random(seed))
    console = Console(highlight=False, soft_wrap=True)
    console.print(render_text(game_log_lines(game, f"demo-{seed}"), color=console.is_terminal))
