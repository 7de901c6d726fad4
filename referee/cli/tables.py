"""Printing a table on stdout so that it stays readable, piped or at 80 columns.

A rich table squeezes its columns to the console's width: a note of three words became a
column four letters wide (``faul`` / ``cras`` / ``131``). :func:`print_table` decides the
width instead of leaving it to the squeeze:

- stdout is no terminal (a pipe, a file, a test): the width is ignored; the table is as
  wide as its widest row needs (at least 80 columns; the notes under it wrap to that),
  so a script or a pager reads every cell on one line;
- on a terminal narrower than the table: the columns the caller named as least needed
  are left out, in that order, until the table fits, and a line under it says which
  (``--format`` shows them all); what still does not fit wraps at spaces, a column never
  narrower than its longest word.

The tables themselves are built where their figures are (:mod:`referee.publish`); this
only chooses how wide they are printed.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

__all__ = ["print_table"]

_PIPE_WIDTH = 80
"""The width the notes under a table wrap to when stdout is no terminal."""


def print_table(
    shown: RenderableType, *, drop: Sequence[str] = (), console: Console | None = None
) -> None:
    """Print ``shown`` (a table, or a group whose first part is one) on stdout.

    ``drop`` names columns by the start of their header, least needed first: on a terminal
    too narrow for the table they are left out in that order until it fits.
    """
    out = console or Console(highlight=False)
    table = _table_of(shown)
    if table is None:
        out.print(shown)
        return
    for column in table.columns:
        if column.overflow == "fold":  # a cell wraps at its spaces, a long name folds
            column.min_width = max(column.min_width or 0, _longest_word(column))
    if not out.is_terminal:
        wide = Console(
            highlight=False,
            width=max(_PIPE_WIDTH, _natural_width(out, table)),
            file=out.file,
            color_system=None,
        )
        wide.print(shown)
        return
    left_out = []
    for header in drop:
        if _natural_width(out, table) <= out.width:
            break
        index = _column_index(table, header)
        if index is not None:
            left_out.append(str(table.columns[index].header))
            del table.columns[index]
    out.print(shown)
    if left_out:
        out.print(
            f"left out to fit {out.width} columns: {', '.join(left_out)} (a wider terminal, "
            "a pipe, or --format md|json|csv shows every column)",
            markup=False,
            highlight=False,
        )


def _table_of(shown: RenderableType) -> Table | None:
    if isinstance(shown, Table):
        return shown
    if isinstance(shown, Group) and shown.renderables and isinstance(shown.renderables[0], Table):
        return shown.renderables[0]
    return None


def _natural_width(console: Console, table: Table) -> int:
    """How wide ``table`` is with no cell wrapped (whatever the console's width)."""
    options = console.options.update(width=100_000)
    return Measurement.get(console, options, table).maximum


def _column_index(table: Table, header: str) -> int | None:
    for index, column in enumerate(table.columns):
        if str(column.header).startswith(header):
            return index
    return None


def _longest_word(column: Column) -> int:
    """The longest word in a column's cells and header, capped at 24 (a longer one folds)."""
    words = [str(column.header)]
    for cell in column.cells:
        words.append(cell.plain if isinstance(cell, Text) else str(cell))
    return min(24, max((len(word) for text in words for word in text.split()), default=1))
