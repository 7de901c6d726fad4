"""The ``referee`` command line: thin wrappers that parse, call and print.

A :class:`~referee.errors.UsageError` (or any ``RefereeError`` on the user's side) ends the
command with one line on stderr and exit code 2, never a traceback. Ctrl-C and SIGTERM stop
every bot and remove the staging folders first (exit codes 130 and 143; see
:mod:`referee.interrupts`). Error lines carry untrusted text (file names, bot output), so
they pass through :func:`referee.render.printable` on their way out.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from referee import __version__
from referee.errors import RefereeError, ReplayMismatch, UsageError
from referee.interrupts import Terminated, handle_sigterm
from referee.render import printable
from referee.specs import TimeControl

F = TypeVar("F", bound=Callable[..., Any])


def say(message: str) -> None:
    """Print a message for the user on stderr, each line made safe for a terminal."""
    click.echo("\n".join(printable(line) for line in message.split("\n")), err=True)


def _fail(message: str, code: int = 2) -> None:
    say(f"referee: {message}")
    sys.exit(code)


def friendly(func: F) -> F:
    """Turn the referee's own errors into one clear line and an exit code.

    SIGTERM is handled like Ctrl-C while the command runs: bots are stopped and staging
    folders removed before the command ends with 143 (Ctrl-C: 130).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with handle_sigterm():
                return func(*args, **kwargs)
        except UsageError as exc:
            _fail(str(exc), exc.exit_code)
        except ReplayMismatch as exc:
            _fail(f"replay failed: {exc}", 1)
        except RefereeError as exc:
            _fail(str(exc), 2)
        except Terminated:
            _fail("terminated (SIGTERM); every bot was stopped", Terminated.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; every bot was stopped", 130)

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


_sandbox_option = click.option(
    "--sandbox",
    "sandbox_name",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "process", "docker"]),
    help="Where bots run: docker when its daemon and image are there, else process.",
)


def _default_log(stem: str) -> Any:
    """A log file in a private folder under the temp folder, named after the match.

    The folder is the user's alone (0700): a match log holds every hand, and a bot without
    bubblewrap could otherwise read the log of the match it is playing.
    """
    import tempfile
    from pathlib import Path

    from referee.sandbox import safe_name
    from referee.store import make_private_dir

    log_dir = Path(tempfile.gettempdir()) / f"referee-logs-{os.geteuid()}"
    make_private_dir(log_dir)
    return log_dir / f"{safe_name(stem)}.jsonl"


_allow_image_option = click.option(
    "--allow-image",
    "allow_images",
    multiple=True,
    metavar="IMAGE",
    help="Let a bot run in this Docker image (image = ... in its bot.toml); repeatable. "
    "Default: only the referee's bot image.",
)


def _check_images(specs: list[Any], allow_images: tuple[str, ...]) -> None:
    """Refuse a bot naming a Docker image that ``--allow-image`` did not allow."""
    from referee.sandbox.image import check_bot_image

    for spec in specs:
        hint = f"to allow it, pass --allow-image {spec.image}"
        check_bot_image(spec, allow_images, hint)


def _bots_or_fail(paths: tuple[str, ...], allow_images: tuple[str, ...] = ()) -> list[Any]:
    from referee.sandbox import load_bot

    if not 3 <= len(paths) <= 6:
        raise UsageError(f"a match needs 3 to 6 bots, got {len(paths)}")
    specs = [load_bot(p) for p in paths]
    _check_images(specs, allow_images)
    return specs


@main.command()
@click.argument("bots", nargs=-1, required=True)
@click.option("--rules", "preset", default="arschloch", show_default=True, help="Preset name.")
@click.option(
    "--seed",
    default=None,
    type=click.IntRange(0),
    help="Deal seed, to repeat a deal; the deal is then predictable. Default: a secret one.",
)
@_sandbox_option
@_allow_image_option
@click.option(
    "--move-ms",
    default=TimeControl().move_ms,
    show_default=True,
    type=click.IntRange(*TimeControl.bounds("move_ms")),
    help="Time for each request (ms).",
)
@click.option(
    "--bank-ms",
    default=TimeControl().bank_ms,
    show_default=True,
    type=click.IntRange(*TimeControl.bounds("bank_ms")),
    help="Extra time for the whole match, used when a reply takes over --move-ms (ms).",
)
@click.option(
    "--hello-ms",
    default=TimeControl().hello_ms,
    show_default=True,
    type=click.IntRange(*TimeControl.bounds("hello_ms")),
    help="Time to start up and answer hello (ms).",
)
@click.option("--max-rounds", default=None, type=click.IntRange(1, 10_000), help="Hard round cap.")
@click.option("--log", "log_path", default=None, type=click.Path(dir_okay=False), help="Match log.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the result.")
@friendly
def play(
    bots: tuple[str, ...],
    preset: str,
    seed: int | None,
    sandbox_name: str,
    allow_images: tuple[str, ...],
    move_ms: int,
    bank_ms: int,
    hello_ms: int,
    max_rounds: int | None,
    log_path: str | None,
    as_json: bool,
) -> None:
    """Play one match between 3 to 6 BOTS and print the standings.

    A BOT is a .py file, an executable file, or a folder with bot.toml. The same bot may
    take several seats. A forfeit is a result: the exit code is 0 unless the command
    itself was wrong.
    """
    import json
    import secrets

    from referee.deals import deal_seed, new_secret
    from referee.match import play_once
    from referee.rules import RuleSet
    from referee.sandbox import get_sandbox

    specs = _bots_or_fail(bots, allow_images)
    overrides = {"max_rounds": max_rounds} if max_rounds else {}
    rules = RuleSet.preset(preset, **overrides).resolve(len(specs))
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
        log_path = str(_default_log(match_id))
    sandbox = get_sandbox(sandbox_name, images=allow_images)
    if not as_json:
        say(f"sandbox: {sandbox.describe()}")
    tc = TimeControl(move_ms=move_ms, bank_ms=bank_ms, hello_ms=hello_ms)
    result = play_once(
        sandbox, specs, rules, seed, match_id=match_id, time_control=tc, log_path=log_path
    )
    if as_json:
        data = result.model_dump(mode="json", exclude={"duration_s", "stderr_tails"})
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    _print_result(result)


def _print_result(result: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from referee.render import ordinal

    console = Console(highlight=False)
    table = Table(title=f"{result.match} · {result.rules} · {result.rounds} rounds")
    table.add_column("place", justify="right")
    table.add_column("seat", justify="right")
    table.add_column("bot")
    table.add_column("score", justify="right")
    table.add_column("note")
    for st in result.standings:
        note = ""
        if st.fault is not None:
            note = f"forfeit — {st.fault.kind}: {printable(st.fault.detail)}"
        table.add_row(
            ordinal(st.place), str(st.seat), Text(printable(st.name)), str(st.score), Text(note)
        )
    console.print(table)
    for seat, tail in result.stderr_tails.items():
        lines = [printable(x) for x in tail.strip().splitlines()[-5:]]
        if lines:
            console.print(f"stderr of seat {seat} (last lines):", markup=False)
            for line in lines:
                console.print("  " + line, markup=False)
    console.print(f"match log: {result.log}  (referee replay {result.log})", markup=False)


def _repo_sample_bots() -> Any:
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "sample_bots"
    if not folder.is_dir():
        raise UsageError(f"the sample bots are not found at {folder} (run from a checkout)")
    return folder


@main.group()
def bot() -> None:
    """Create and check bots."""


@bot.command("check")
@click.argument("path")
@click.option("--rules", "preset", default="arschloch", show_default=True)
@_sandbox_option
@_allow_image_option
@click.option("--seed", default=1, show_default=True, type=int)
@friendly
def bot_check(
    path: str, preset: str, sandbox_name: str, allow_images: tuple[str, ...], seed: int
) -> None:
    """Play PATH against the sample bots and explain anything it did wrong.

    Exit code 0 when the bot played a whole match without a fault, 1 when it faulted.
    """

    from referee.match import play_once, seat_of
    from referee.rules import RuleSet
    from referee.sandbox import get_sandbox, load_bot

    spec = load_bot(path)
    _check_images([spec], allow_images)
    samples = _repo_sample_bots()
    opponents = [load_bot(samples / name) for name in ("heuristic", "lowest", "random")]
    rules = RuleSet.preset(preset).resolve(4)
    sandbox = get_sandbox(sandbox_name, images=allow_images)
    result = play_once(
        sandbox,
        [spec, *opponents],
        rules,
        seed,
        match_id=f"check-{seed}",
        time_control=TimeControl(),
        log_path=_default_log(f"check-{spec.name}-{seed}"),
    )
    _print_result(result)
    mine = seat_of(result, 0)
    if mine.fault is not None:
        say(f"{spec.name}: FAILED ({mine.fault.kind}: {mine.fault.detail})")
        sys.exit(1)
    ok = f"{spec.name}: ok — a whole {preset} match without a fault (place {mine.place})"
    click.echo(printable(ok))


_PY_TEMPLATE = '''"""{name}: a bot for the Arschloch referee (see protocol/SPEC.md)."""

from botkit import Bot


class MyBot(Bot):
    name = {name!r}
    version = "0.1"

    def on_play(self, state):
        # state.legal lists every legal play; [] (a pass) is there when you may pass.
        plays = [p for p in state.legal if p]
        return plays[0] if plays else []


if __name__ == "__main__":
    MyBot().run()
'''

_JS_TEMPLATE = """// {name}: a bot for the Arschloch referee (see protocol/SPEC.md).
const {{ Bot }} = require("./botkit.js");

class MyBot extends Bot {{
  onPlay(state) {{
    const plays = state.legal.filter((p) => p.length > 0);
    return plays.length ? plays[0] : [];
  }}
}}

new MyBot({name_json}, "0.1").run();
"""


@bot.command("new")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--lang", default="python", type=click.Choice(["python", "javascript"]))
@click.option("--name", default=None, help="Display name (default: the folder's name).")
@friendly
def bot_new(folder: str, lang: str, name: str | None) -> None:
    """Create FOLDER with bot.toml, the bot kit and a bot that plays its lowest legal play."""
    import json
    import shutil
    from pathlib import Path

    target = Path(folder)
    if target.exists():
        raise UsageError(f"{target} already exists; choose a new folder")
    bot_name = name or target.name
    kits = Path(__file__).resolve().parent.parent / "protocol" / "kits"
    kit = kits / ("python/botkit.py" if lang == "python" else "javascript/botkit.js")
    if not kit.exists():
        raise UsageError(f"the bot kit is not found at {kit} (run from a checkout)")
    target.mkdir(parents=True)
    shutil.copy(kit, target / kit.name)
    if lang == "python":
        (target / "bot.py").write_text(_PY_TEMPLATE.format(name=bot_name))
        command = "python3 bot.py"
    else:
        (target / "bot.js").write_text(
            _JS_TEMPLATE.format(name=bot_name, name_json=json.dumps(bot_name))
        )
        command = "node bot.js"
    (target / "bot.toml").write_text(
        f'name = {json.dumps(bot_name)}\ncommand = {json.dumps(command)}\nversion = "0.1"\n'
    )
    click.echo(f"created {target}: edit it, then run `referee bot check {target}`")


@main.group()
def sandbox() -> None:
    """Manage the bot sandboxes."""


@sandbox.command("build-image")
@click.option(
    "--offline", is_flag=True, help="Build from Debian packages (debootstrap), no registry."
)
@click.option("--tag", default=None, help="Image name (default: arschloch-referee-bot:latest).")
@click.option("--rebuild", is_flag=True, help="Rebuild even when the image exists.")
@friendly
def sandbox_build_image(offline: bool, tag: str | None, rebuild: bool) -> None:
    """Build the bot runtime image of the Docker sandbox (Python 3 and Node.js)."""
    from referee.sandbox.image import IMAGE_NAME, build_image

    build_image(tag or IMAGE_NAME, offline, rebuild=rebuild, echo=click.echo)


@main.command()
@friendly
def doctor() -> None:
    """Say which sandboxes are usable here, and why not."""
    import shutil

    from referee.sandbox.process import ProcessSandbox, bwrap_status

    lines: list[tuple[str, bool, str]] = []
    status = bwrap_status()
    if status.works:
        lines.append(("process", True, "bubblewrap works: no network, private /tmp, own pids"))
    elif shutil.which("bwrap") is None:
        lines.append(("process", True, "usable, but WITHOUT isolation: install bubblewrap"))
    else:
        lines.append(("process", True, f"usable, but bubblewrap fails: {status.reason}"))
    cgroups = ProcessSandbox().cgroup_support()
    where = f" — {cgroups.reason}" if cgroups.works else ""
    lines.append(("cgroups", cgroups.works, cgroups.describe() + where))
    try:
        from referee.sandbox.docker import docker_status
    except ImportError as exc:
        lines.append(("docker", False, f"the docker extra is not installed ({exc})"))
    else:
        ok, why = docker_status()
        if not ok and "image" in why:
            why += " — build it with: referee sandbox build-image --offline"
        lines.append(("docker", ok, why))
    node = shutil.which("node")
    lines.append(("node", node is not None, node or "not found: JavaScript bots need Node.js"))
    for name, ok, why in lines:
        click.echo(f"{name:8} {'ok  ' if ok else 'NO  '} {why}")
    from referee.sandbox import get_sandbox

    click.echo(f"auto     →    {get_sandbox('auto').describe()}")


# The tournament commands live in their own module and register on `main` when imported.
from referee import cli_tournament  # noqa: E402,F401  (registers tournament commands)
