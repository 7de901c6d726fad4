"""``referee bot check`` and ``referee bot new``: for bot authors."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from referee.cli.app import (
    allow_image_option,
    built_bot,
    check_images,
    check_memory,
    default_log,
    friendly,
    main,
    memory_option,
    sandbox_option,
    time_control_options,
)
from referee.errors import UsageError
from referee.resources import bot_kit
from referee.rules import preset_names
from referee.sandbox.staging import BotFile
from referee.specs import TimeControl
from referee.text import printable


@main.group()
def bot() -> None:
    """Create and check bots."""


@bot.command("check")
@click.argument("path", metavar="BOT")
@click.option(
    "--rules",
    "presets",
    multiple=True,
    type=click.Choice(preset_names()),
    help="Check only this preset (repeatable). Default: every preset.",
)
@sandbox_option
@allow_image_option
@time_control_options
@memory_option
@click.option("--keep-going", is_flag=True, help="Run every step, also after a failure.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the report.")
@friendly
def bot_check(
    path: str,
    presets: tuple[str, ...],
    sandbox_name: str,
    allow_images: tuple[str, ...],
    time_control: TimeControl,
    memory_mb: int,
    keep_going: bool,
    as_json: bool,
) -> None:
    """Run BOT through the protocol, as a tournament would, and explain what it got wrong.

    BOT is a .py file, an executable file, a folder with bot.toml, or @NAME, a sample bot
    (referee bot samples lists them).

    The handshake and its time, a short match of every preset at 3 and at 6 seats against
    the sample bots on deals where the bot is asked every kind of request (play, give,
    leftover), then two matches in a row. One process of the bot plays them all (a fresh
    one after a failed step); beside Docker the sample bots run in the process sandbox.
    Each problem shows the request, the bot's line, what was expected and the usual
    causes; then reply times and peak memory.
    Progress goes to stderr with --json. Exit code 0 when every step passed, 1 otherwise.
    """
    import json
    import secrets

    from referee.match import compliance
    from referee.sandbox import Limits, get_sandbox, load_bot
    from referee.text import safe_name

    spec = load_bot(path)
    check_images([spec], allow_images)
    sandbox = get_sandbox(sandbox_name, images=allow_images)
    # The bot under test at its limit, as many times as fit up to BOT_PROCESSES (a failed
    # step's process stops behind the next step's start; once where no more fit); the
    # sample bots at 6 seats and those idle.
    for processes in range(compliance.BOT_PROCESSES, 0, -1):
        try:
            check_memory(
                sandbox,
                processes,
                memory_mb,
                samples=compliance.MOST_OPPONENTS,
                fix="lower --memory-mb",
            )
        except UsageError:
            if processes == 1:
                raise
        else:
            break
    ahead = processes - 1
    log_dir = default_log(f"check-{safe_name(spec.name)}-{secrets.token_hex(4)}").with_suffix("")
    log_dir.mkdir(mode=0o700)

    def show(lines: list[str]) -> None:
        for line in lines:
            click.echo(printable(line), err=as_json)

    if spec.build:
        spec = built_bot(spec, sandbox.name, allow_images, show, as_json=as_json)
    report = compliance.run_check(
        spec,
        sandbox,
        time_control=time_control,
        limits=Limits(memory_mb=memory_mb),
        presets=presets or None,
        keep_going=keep_going,
        log_dir=log_dir,
        on_start=lambda report: show(compliance.header_lines(report)),
        progress=lambda step: show(compliance.step_lines(step)),
        ahead=ahead,
    )
    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        show(compliance.summary_lines(report))
        show([f"match logs: {log_dir}"])
    if not report.passed:
        sys.exit(1)


_PY_TEMPLATE = '''"""{name}: an Arschloch referee bot (protocol: `referee protocol spec`).

The kit's safety net: when a decision of yours is not allowed (a card you do not hold, the
wrong number of cards, a pass when you lead) or raises, botkit sends a safe legal choice
instead, so the match goes on. It does not hide the mistake: it writes a line
"botkit: replaced {{...}}" on stderr each time, `referee bot check` fails the bot, and
`referee play` and the tournament pages warn. To see the referee's own verdict on a
mistake (a forfeit that explains the move), set `safety_net = False` below while testing.
"""

from botkit import Bot


class MyBot(Bot):
    name = {name!r}
    version = "0.1"
    safety_net = True  # False: a mistake forfeits the match, with the referee's explanation

    def on_play(self, state):
        # state.legal lists every legal play; [] (a pass) is there when you may pass.
        plays = [p for p in state.legal if p]
        return plays[0] if plays else []


if __name__ == "__main__":
    MyBot().run()
'''

_JS_TEMPLATE = """// {name}: an Arschloch referee bot (protocol: `referee protocol spec`).
//
// The kit's safety net: when a decision of yours is not allowed (a card you do not hold, the
// wrong number of cards, a pass when you lead) or throws, botkit sends a safe legal choice
// instead, so the match goes on. It does not hide the mistake: it writes a line
// "botkit: replaced {{...}}" on stderr each time, `referee bot check` fails the bot, and
// `referee play` and the tournament pages warn. To see the referee's own verdict on a
// mistake (a forfeit that explains the move), set bot.safetyNet = false while testing.
const {{ Bot }} = require("./botkit.js");

class MyBot extends Bot {{
  onPlay(state) {{
    const plays = state.legal.filter((p) => p.length > 0);
    return plays.length ? plays[0] : [];
  }}
}}

const bot = new MyBot({name_json}, "0.1");
bot.safetyNet = true; // false: a mistake forfeits the match, with the referee's explanation
bot.run();
"""


@bot.command("new")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option(
    "--lang",
    default="python",
    type=click.Choice(["python", "javascript", "c", "cpp", "rust", "java"]),
    help="The kit's language (default python). c, cpp, rust and java bots are built by "
    "the referee with make (bot.toml's build).",
)
@click.option("--name", default=None, help="Display name (default: the folder's name).")
@friendly
def bot_new(folder: str, lang: str, name: str | None) -> None:
    """Create FOLDER with bot.toml, the bot kit and a bot that plays its lowest legal play."""
    import json
    import shutil

    target = Path(folder)
    if target.exists():
        raise UsageError(f"{target} already exists; choose a new folder")
    bot_name = name or target.name
    if lang not in ("python", "javascript"):
        _compiled_bot(target, lang, bot_name)
        click.echo(f"created {target}: edit it, then run `referee bot check {target}`")
        return
    kit = bot_kit("python" if lang == "python" else "javascript")
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


def _compiled_bot(target: Path, lang: str, name: str) -> None:
    """A new bot in a compiled language: the kit's folder copied, its ``bot.toml``
    template given the bot's name (quoted as TOML reads it)."""
    import json
    import shutil

    from referee.resources import kit_folder

    kit = kit_folder(lang)
    shutil.copytree(kit, target, ignore=shutil.ignore_patterns("bot.toml"))
    manifest = (kit / "bot.toml").read_text("utf-8")
    (target / "bot.toml").write_text(manifest.replace('"{name}"', json.dumps(name)), "utf-8")


@bot.command("samples")
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Copy into FOLDER even when it holds files: each sample's folder there is replaced, "
    "anything else is left alone.",
)
@friendly
def bot_samples(folder: Path | None, force: bool) -> None:
    """List the sample bots shipped with the referee, or copy them into FOLDER.

    Name a sample wherever a bot goes as @NAME, from any folder and from an installed
    referee alike: `referee play mybot @heuristic @lowest`, `referee bot check @random`,
    `path = "@heuristic"` in a tournament file. Copy them out to read them or to start
    from one: each lands in FOLDER/NAME, exactly as shipped (the bytes that @NAME runs).
    FOLDER must be new or empty, unless --force.
    """
    from referee.resources import SAMPLE_PREFIX, sample_bot_names
    from referee.sandbox import load_bot, read_bot_files

    names = sample_bot_names()
    if folder is None:
        width = max(len(name) for name in names) + len(SAMPLE_PREFIX)
        for name in names:
            spec = load_bot(SAMPLE_PREFIX + name)
            line = f"{SAMPLE_PREFIX + name:<{width}}  {' '.join(spec.command):<14}  {spec.folder}"
            click.echo(printable(line))
        return
    _check_samples_target(folder, force)
    for name in names:
        files = read_bot_files(load_bot(SAMPLE_PREFIX + name))
        target = folder / name
        _copy_sample(files, target, force)
        count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        click.echo(printable(f"copied {SAMPLE_PREFIX}{name} to {target} ({count})"))


def _check_samples_target(folder: Path, force: bool) -> None:
    """FOLDER is new, or an empty folder, or ``--force`` was given; made if need be."""
    shown = printable(str(folder))
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UsageError(f"{shown} is not a folder; name a new or an empty one")
    try:
        if folder.is_dir() and any(folder.iterdir()) and not force:
            raise UsageError(
                f"{shown} is not empty; name a new or an empty folder, or pass --force to "
                "replace the samples' folders in it"
            )
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the folder {shown}: {exc.strerror or exc}") from None


def _copy_sample(files: tuple[BotFile, ...], target: Path, force: bool) -> None:
    """Write one sample's files to ``target`` (replaced with ``force``), through descriptors."""
    import shutil

    from referee.sandbox.staging import write_bot_folder

    try:
        if force and (target.is_symlink() or target.is_file()):
            target.unlink()
        elif force and target.is_dir():
            shutil.rmtree(target)
        write_bot_folder(files, target)
    except FileExistsError:
        raise UsageError(
            f"{printable(str(target))} already exists; pass --force to replace it"
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot copy the sample to {printable(str(target))}: {exc.strerror or exc}"
        ) from None
