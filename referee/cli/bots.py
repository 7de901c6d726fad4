"""``referee bot check`` and ``referee bot new``: for bot authors."""

from __future__ import annotations

import sys

import click

from referee.cli.app import (
    allow_image_option,
    check_images,
    default_log,
    friendly,
    main,
    print_result,
    sandbox_option,
    say,
)
from referee.errors import UsageError
from referee.render import printable
from referee.resources import bot_kit, sample_bot
from referee.specs import TimeControl


@main.group()
def bot() -> None:
    """Create and check bots."""


@bot.command("check")
@click.argument("path")
@click.option("--rules", "preset", default="arschloch", show_default=True)
@sandbox_option
@allow_image_option
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
    check_images([spec], allow_images)
    opponents = [load_bot(sample_bot(name)) for name in ("heuristic", "lowest", "random")]
    rules = RuleSet.preset(preset).resolve(4)
    sandbox = get_sandbox(sandbox_name, images=allow_images)
    result = play_once(
        sandbox,
        [spec, *opponents],
        rules,
        seed,
        match_id=f"check-{seed}",
        time_control=TimeControl(),
        log_path=default_log(f"check-{spec.name}-{seed}"),
    )
    print_result(result)
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


