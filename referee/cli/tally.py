"""The table ``referee play --matches N`` ends with (its figures: :mod:`referee.ranking.tally`).

Bot names are untrusted: the table prints them through :func:`referee.text.printable` and
reads no markup from them.
"""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from referee.ranking.intervals import MIN_SHARED_DEALS
from referee.ranking.tally import Tally
from referee.text import ordinal, printable

__all__ = ["tally_table"]


def tally_table(result: Tally) -> Group:
    """The terminal table and the line under it that says how to read it."""
    level = f"{result.confidence * 100:g}%"
    counted = f"{result.matches} matches"
    if result.matches != result.scheduled:
        counted = f"{result.matches} of {result.scheduled} matches"
    table = Table(
        title=Text(f"{printable(result.rules)} · {result.table_size} seats · {counted}"),
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        show_edge=False,
    )
    table.add_column("bot", overflow="fold", min_width=10)
    table.add_column(f"score [{level}]", justify="right", no_wrap=True)
    for place in range(1, result.table_size + 1):
        table.add_column(ordinal(place), justify="right", no_wrap=True)
    table.add_column("faults", overflow="fold", min_width=6)
    for bot in result.bots:
        faults = str(bot.forfeits)
        if bot.faults:
            faults += " (" + ", ".join(f"{k} {n}" for k, n in bot.faults.items()) + ")"
        table.add_row(
            Text(printable(bot.name)),
            bot.score_text(result.deals),
            *(str(n) for n in bot.places),
            Text(faults),
        )
    deals = f"{result.deals} deal{'s' if result.deals != 1 else ''}"
    if result.deals >= MIN_SHARED_DEALS:
        score = f"and its {level} bootstrap interval over the {deals} (whole seat rotations)"
    else:
        needed = MIN_SHARED_DEALS * result.table_size
        score = (
            f"with an interval from {MIN_SHARED_DEALS} deals on (--matches {needed}), not {deals}"
        )
    note = (
        f"score: the mean finishing score (1 first, 0 last) {score}; 1st, 2nd, ...: matches "
        "finished there; faults: matches forfeited, by kind."
    )
    return Group(table, Text(note))
