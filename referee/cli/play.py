"""``referee play``, ``referee replay`` and ``referee demo``: one match, played or told."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from referee.cli.app import (
    allow_image_option,
    announce,
    bots_or_fail,
    built_bot,
    check_memory,
    default_log,
    friendly,
    main,
    memory_option,
    print_result,
    sandbox_option,
    say,
    time_control_options,
)
from referee.cli.matches import Series, play_matches, series_options
from referee.errors import UsageError
from referee.specs import TimeControl
from referee.text import printable


@main.command()
@click.argument("log", type=click.Path(dir_okay=False, path_type=str))
@click.option("--check-only", is_flag=True, help="Only verify the log; print one line.")
@click.option("--color/--no-color", default=None, help="Colour suits (default: on a terminal).")
@friendly
def replay(log: str, check_only: bool, color: bool | None) -> None:
    """Replay a match LOG through the engine and print it trick by trick.

    Every logged decision is re-applied; the first line that differs from what the rules
    give stops the replay with exit code 1. A fault is shown with the last lines its bot
    wrote to stderr up to it, from the stderr file kept beside the log (LOG without
    .jsonl, plus .stderr.json), when it is there.
    """
    from referee.match.text import render_text
    from referee.matchlog import read_log
    from referee.rules import replay as replay_lines

    lines = read_log(log)
    game = replay_lines(lines)
    if check_only:
        click.echo(f"{log}: ok, {game.round} rounds, {len(lines)} lines replayed")
        return
    console = Console(highlight=False, soft_wrap=True, no_color=color is False)
    use_color = console.is_terminal if color is None else color
    stderr = _kept_stderr(log)
    console.print(render_text(lines, color=use_color, stderr=stderr), markup=use_color)


def _kept_stderr(log: str) -> Any:
    """The bots' stderr kept beside ``log`` (:mod:`referee.stderrlog`), or ``None``: an
    older log has none, and a file that is not a stderr record is said and left out (the
    replay is the log's, whatever lies beside it)."""
    from pydantic import ValidationError

    from referee.stderrlog import MatchStderr, stderr_path

    path = stderr_path(log)
    try:
        return MatchStderr.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not a stderr record"
        say(f"note: {path}: {why}; the faults are shown without the bots' stderr")
        return None


@main.command()
@click.option("--rules", "preset", default="arschloch", show_default=True, help="Preset name.")
@click.option("--players", default=4, show_default=True, type=click.IntRange(3, 6))
@click.option("--seed", default=1, show_default=True, type=int)
@friendly
def demo(preset: str, players: int, seed: int) -> None:
    """Play one match in-process among random legal players and print it."""
    import random

    from referee.match.text import render_text
    from referee.matchlog import game_log_lines
    from referee.rules import RuleSet
    from referee.rules.simulate import play_random

    rules = RuleSet.preset(preset).resolve(players)
    game = play_random(rules, [f"random-{i}" for i in range(players)], seed, random.Random(seed))
    console = Console(highlight=False, soft_wrap=True)
    console.print(render_text(game_log_lines(game, f"demo-{seed}"), color=console.is_terminal))


@main.command()
@click.argument("bots", nargs=-1, required=True)
@click.option("--rules", "preset", default="arschloch", show_default=True, help="Preset name.")
@click.option(
    "--seed",
    default=None,
    type=click.IntRange(0),
    help="Deal seed, to repeat a deal (with --matches: the same deals); the cards are then "
    "predictable. Default: secret deals.",
)
@sandbox_option
@allow_image_option
@time_control_options
@memory_option
@click.option("--max-rounds", default=None, type=click.IntRange(1, 10_000), help="Hard round cap.")
@click.option("--log", "log_path", default=None, type=click.Path(dir_okay=False), help="Match log.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (with --matches: the table)."
)
@click.option(
    "--human",
    "human_seat",
    default=None,
    type=click.IntRange(0, 5),
    metavar="SEAT",
    help="Play yourself at seat SEAT (0-based) on this terminal; the BOTS fill the other "
    "seats in order.",
)
@series_options
@friendly
def play(
    bots: tuple[str, ...],
    preset: str,
    seed: int | None,
    sandbox_name: str,
    allow_images: tuple[str, ...],
    time_control: TimeControl,
    memory_mb: int,
    max_rounds: int | None,
    log_path: str | None,
    as_json: bool,
    human_seat: int | None,
    series: Series,
) -> None:
    """Play one match between 3 to 6 BOTS and print the standings.

    A BOT is a .py file, an executable file, a folder with bot.toml, or @NAME, a sample
    bot (`referee play mybot @heuristic @lowest`; `referee bot samples` lists them); one
    bot may take several seats. A forfeit is a result (exit code 0); 2: the command is wrong.

    With --matches N, an author's quick loop: N matches on balanced seating, each on its
    own cards, then each bot's mean score (95% interval), places and faults.

    With --human SEAT you play too, as "you": you sit at SEAT and the 2 to 5 BOTS take
    the other seats in the order given (`--human 2 a b c` seats a, b, you, c).
    You see your hand, the table and what each seat did, and pick a numbered option; ?
    shows the rules. You have no time limit; the bots keep theirs. Ctrl-D leaves the match
    (the referee plays your seat to the end), Ctrl-C stops it.
    """
    import json
    import secrets

    from referee.match.runner import play_once
    from referee.rules import RuleSet
    from referee.sandbox import Limits, get_sandbox
    from referee.tournament.deals import deal_seed, new_secret

    series.check(human_seat=human_seat, log_path=log_path)
    specs = bots_or_fail(bots, allow_images, 0 if human_seat is None else 1)
    if series.matches is not None:
        settings = (preset, max_rounds, seed, sandbox_name, allow_images, time_control)
        play_matches(specs, bots, series, *settings, memory_mb=memory_mb, as_json=as_json)
        return
    people = _seat_person(human_seat, len(specs), as_json)
    overrides = {"max_rounds": max_rounds} if max_rounds else {}
    rules = RuleSet.preset(preset, **overrides).resolve(len(specs) + len(people))
    # The match id is random and says nothing of the deal; the seed stays in the log.
    match_id = f"play-{preset}-{secrets.token_hex(6)}"
    if seed is None:
        seed = deal_seed(new_secret(), "play", match_id)
    elif not as_json:
        click.echo(
            f"note: --seed {seed} makes the deal predictable: a bot that knows the seed can "
            "compute every hand. Leave it out for a secret deal.",
            err=True,
        )
    if log_path is None:
        log_path = str(default_log(match_id))
    sandbox = get_sandbox(sandbox_name, images=allow_images)
    specs = _built(specs, sandbox.name, allow_images, as_json)
    tc = time_control
    limits = Limits(memory_mb=memory_mb)
    check_memory(sandbox, len(specs), memory_mb, fix="lower --memory-mb")
    if not as_json:
        announce(sandbox, tc, limits)
    result = play_once(
        sandbox,
        specs,
        rules,
        seed,
        match_id=match_id,
        time_control=tc,
        limits=limits,
        log_path=log_path,
        people=people,
    )
    if as_json:
        data = result.model_dump(mode="json", exclude={"duration_s", "stderr_tails"})
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    print_result(result)


def _built(specs: list[Any], sandbox: str, images: tuple[str, ...], as_json: bool) -> list[Any]:
    """``specs`` with every bot that has a build step built (or found in the cache), the
    build lines on stderr."""

    def show(lines: list[str]) -> None:
        for line in lines:
            click.echo(printable(line), err=True)

    return [
        built_bot(spec, sandbox, images, show, as_json=as_json) if spec.build else spec
        for spec in specs
    ]


def _seat_person(seat: int | None, bots: int, as_json: bool) -> dict[int, Any]:
    """The person of ``--human SEAT``, by seat (none without the option), checked."""
    if seat is None:
        return {}
    if as_json:
        raise UsageError("--human and --json do not go together: the game is played on screen")
    if seat > bots:
        raise UsageError(f"--human {seat}: with {bots} bot(s) and you, the seats are 0 to {bots}")
    from referee.match.human import PersonSession

    return {seat: PersonSession("you")}
