"""The human-readable match text: untrusted names print as themselves, never as markup."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from referee.match.text import render_text
from referee.matchlog import game_log_lines
from referee.rules import RuleSet
from referee.rules.simulate import play_random

# A bot's name and its fault details come from the bot: each of these tries to style or
# hide the text around it (a backslash before a tag once escaped the escape).
HOSTILE_NAMES = ["\\[bold]x", "[red]y[/red]", "z\\", "\x1b[31mred"]
SHOWN = ["\\[bold]x", "[red]y[/red]", "z\\", "\\x1b[31mred"]
# With markup, rich's escape doubles a trailing backslash (it would escape a tag that
# followed); shown, never obeyed.
SHOWN_WITH_MARKUP = ["\\[bold]x", "[red]y[/red]", "z\\\\", "\\x1b[31mred"]


def _printed(color: bool) -> str:
    rules = RuleSet.preset("arschloch").with_overrides(target=1).resolve(len(HOSTILE_NAMES))
    game = play_random(rules, HOSTILE_NAMES, 3, random.Random(3))
    text = render_text(game_log_lines(game, "[blink]m"), color=color)
    printed = io.StringIO()
    console = Console(file=printed, width=400, color_system=None, highlight=False)
    console.print(text, markup=color)
    return printed.getvalue()


@pytest.mark.parametrize("color", [True, False])
def test_names_print_literally_with_and_without_markup(color: bool) -> None:
    output = _printed(color)
    seats = next(line for line in output.splitlines() if line.startswith("Seats: "))
    shown = SHOWN_WITH_MARKUP if color else SHOWN
    assert seats == "Seats: " + " · ".join(f"{i} {name}" for i, name in enumerate(shown))
    assert output.startswith("Match [blink]m · ")
    assert "\x1b" not in output
