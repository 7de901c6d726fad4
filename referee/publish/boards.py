"""The one board renderer: a leaderboard as a terminal table, Markdown, JSON or CSV.

A tournament's leaderboard (:mod:`referee.publish.leaderboard`) and a league's
(:mod:`referee.publish.league`) are rendered by the same code: what differs between them is
data, their columns (:class:`Column`), their rows and their notes, and each hands those to
the functions here. Every renderer escapes a cell for its medium where the board asks it
to: Markdown (:func:`markdown_escape`), CSV (:func:`csv_text_cell`) and the terminal
(:func:`terminal_text`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from referee.text import printable

__all__ = [
    "FORMATS",
    "RECORD_COLUMNS",
    "Board",
    "Column",
    "Record",
    "Renderers",
    "csv_table",
    "csv_text_cell",
    "faults_text",
    "markdown_escape",
    "markdown_table",
    "record_cells",
    "render_board",
    "terminal_board",
    "terminal_text",
]

FORMATS = ("table", "md", "json", "csv")


@dataclass(frozen=True)
class Column:
    """A column of a board's Markdown or terminal table: its heading, right-aligned or not,
    and in the terminal whether it may wrap (``no_wrap``), how a long cell is cut
    (``overflow``) and its least width."""

    name: str
    right: bool = False
    no_wrap: bool = False
    overflow: Literal["fold", "crop", "ellipsis", "ignore"] = "ellipsis"
    min_width: int | None = None


class Board(Protocol):
    """A leaderboard as the renderer reads it: a tournament's or a league's."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        ...


B = TypeVar("B", bound=Board)


@dataclass(frozen=True)
class Renderers(Generic[B]):
    """What differs between two kinds of board when rendered: its Markdown, its CSV and its
    terminal table (:func:`terminal_board`)."""

    markdown: Callable[[B], str]
    csv: Callable[[B], str]
    terminal: Callable[[B], RenderableType]


def render_board(board: B, fmt: str, renderers: Renderers[B]) -> str:
    """``board`` as text in ``fmt`` (one of :data:`FORMATS`; ``table`` is the terminal's,
    plain, 160 columns wide); ``ValueError`` for another."""
    if fmt == "json":
        return json_text(board.as_dict())
    if fmt == "md":
        return renderers.markdown(board)
    if fmt == "csv":
        return renderers.csv(board)
    if fmt == "table":
        console = Console(width=160, color_system=None, file=io.StringIO(), highlight=False)
        console.print(renderers.terminal(board))
        out = console.file
        assert isinstance(out, io.StringIO)
        return out.getvalue()
    raise ValueError(f"unknown leaderboard format {fmt!r} (allowed: {', '.join(FORMATS)})")


def json_text(data: dict[str, Any]) -> str:
    """A board's JSON shape as a file: indented, UTF-8 as it is, a newline at the end."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def faults_text(faults: dict[str, int]) -> str:
    """``timeout: 2, crash: 1``."""
    return ", ".join(f"{kind}: {count}" for kind, count in faults.items())


def avg_text(value: float | None) -> str:
    """An average place: ``2.25``; ``—`` when there is none."""
    return "—" if value is None else f"{value:.2f}"


# --------------------------------------------------------------------------- Markdown

_MD_SPECIAL = frozenset("\\`*_[]|~")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown_escape(text: str) -> str:
    """Text safe inside a Markdown table cell: no formatting, no HTML, no cell breaks."""
    out = []
    for ch in text:
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        elif ch in "\r\n\t" or not ch.isprintable():
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def markdown_table(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table: the headings, the alignment line, a line per row (its cells as
    given: the caller escapes what is untrusted)."""
    head = "| " + " | ".join(c.name for c in columns) + " |\n"
    align = "|" + "|".join("---:" if c.right else "---" for c in columns) + "|\n"
    return head + align + "".join("| " + " | ".join(row) + " |\n" for row in rows)


# --------------------------------------------------------------------------- CSV

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text_cell(text: str) -> str:
    """A text cell a spreadsheet will not evaluate (OWASP "CSV injection")."""
    return "'" + text if text.startswith(_FORMULA_START) else text


RECORD_COLUMNS = ("score", "mu", "sigma", "matches", "avg_place", "firsts", "forfeits", "faults")
"""The CSV columns of an entrant's record, alike on every board."""


class Record(Protocol):
    """An entrant's record as every board has it."""

    @property
    def score(self) -> float: ...
    @property
    def mu(self) -> float: ...
    @property
    def sigma(self) -> float: ...
    @property
    def matches(self) -> int: ...
    @property
    def avg_place(self) -> float | None: ...
    @property
    def firsts(self) -> int: ...
    @property
    def forfeits(self) -> int: ...
    @property
    def faults(self) -> dict[str, int]: ...


def record_cells(e: Record) -> list[object]:
    """The CSV cells of :data:`RECORD_COLUMNS` (the faults defused: a kind is the bot's
    word in an older store)."""
    return [
        f"{e.score:.3f}",
        f"{e.mu:.3f}",
        f"{e.sigma:.3f}",
        e.matches,
        "" if e.avg_place is None else f"{e.avg_place:.3f}",
        e.firsts,
        e.forfeits,
        csv_text_cell(";".join(f"{k}:{v}" for k, v in e.faults.items())),
    ]


def csv_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """CSV with every cell quoted (the caller defuses the text cells: :func:`csv_text_cell`)."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


# --------------------------------------------------------------------------- terminal


def terminal_text(text: str) -> str:
    """Untrusted text for a terminal: :func:`referee.text.printable`."""
    return printable(text)


def terminal_board(
    title: str,
    columns: Sequence[Column],
    rows: Iterable[Sequence[str | Text]],
    notes: Sequence[str],
) -> Group:
    """The terminal table and the notes under it. A cell of untrusted text comes as a
    :class:`~rich.text.Text` (rich reads no markup from it); the notes follow the table
    rather than being its caption, which rich wraps to the table's width and may cut."""
    table = Table(
        title=Text(title),
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        show_edge=False,
    )
    for c in columns:
        table.add_column(
            c.name,
            justify="right" if c.right else "left",
            no_wrap=c.no_wrap,
            overflow=c.overflow,
            min_width=c.min_width,
        )
    for row in rows:
        table.add_row(*row)
    return Group(table, Text("\n".join(notes)))
