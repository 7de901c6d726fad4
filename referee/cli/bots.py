"""``referee bot check`` and ``referee bot new``: for bot authors."""

from __future__ import annotations

import sys

import click

from referee.cli.app import (
    allow_image_option,
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
from referee.specs import TimeControl
from referee.text import printable


@main.group()
def bot() -> None:
    """Create and check bots."""


@bot.command("check")
@click.argument("path")
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
    """Run PATH through the protocol, as a tournament would, and explain what it got wrong.

    The handshake and its time, a short match of every preset at 3 and at 6 seats against
    the sample bots on deals where the bot is asked every kind of request (play, give,
    leftover), then two matches on one process. Each problem shows the request, the bot's
    line, what was expected and the usual causes; then reply times and peak memory.
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
    # The bot under test at its limit; the sample bots at 6 seats and those kept idle.
    check_memory(sandbox, 1, memory_mb, samples=compliance.MOST_OPPONENTS, fix="lower --memory-mb")
    log_dir = default_log(f"check-{safe_name(spec.name)}-{secrets.token_hex(4)}").with_suffix("")
    log_dir.mkdir(mode=0o700)

    def show(lines: list[str]) -> None:
        for line in lines:
            click.echo(printable(line), err=as_json)

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
