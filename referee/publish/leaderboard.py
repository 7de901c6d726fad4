"""The leaderboard: data from the ratings, and renderers for a terminal, Markdown, JSON, CSV.

Bot names are untrusted display text. Markdown escapes every character that could start
formatting, a table cell or HTML; CSV quotes every cell and defuses spreadsheet formulas
(a text cell starting with ``= + - @``, tab or carriage return gets a leading ``'``); the
terminal table drops control characters and never reads markup from a name.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from referee.ratings import EntrantRating, rate
from referee.render import printable
from referee.store import StoredMatch

__all__ = [
    "FORMATS",
    "DealCommitment",
    "Leaderboard",
    "LeaderboardEntry",
    "build_leaderboard",
    "render",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich_table",
]

FORMATS = ("table", "md", "json", "csv")
_DIGITS = 3


@dataclass(frozen=True)
class LeaderboardEntry:
    """One line of the leaderboard."""

    rank: int
    name: str
    mu: float
    sigma: float
    score: float
    matches: int
    avg_place: float | None
    firsts: int
    forfeits: int
    faults: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DealCommitment:
    """A deal secret as published: its commitment, and the secret once revealed."""

    commitment: str
    secret: str | None


@dataclass(frozen=True)
class Leaderboard:
    """A tournament's ranking: ``matches`` is how many finished matches it rests on.

    ``deals`` are the commitments of the secrets that dealt the matches, with each secret
    once the tournament is complete (``referee verify`` checks the deals with them).
    """

    tournament: str
    rules: str
    matches: int
    entries: tuple[LeaderboardEntry, ...]
    deals: tuple[DealCommitment, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape: tournament, rules, matches, deals, entries."""
        return {
            "tournament": self.tournament,
            "rules": self.rules,
            "matches": self.matches,
            "deals": [{"commitment": d.commitment, "secret": d.secret} for d in self.deals],
            "entries": [
                {
                    "rank": e.rank,
                    "name": e.name,
                    "mu": round(e.mu, _DIGITS),
                    "sigma": round(e.sigma, _DIGITS),
                    "score": round(e.score, _DIGITS),
                    "matches": e.matches,
                    "avg_place": None if e.avg_place is None else round(e.avg_place, _DIGITS),
                    "firsts": e.firsts,
                    "forfeits": e.forfeits,
                    "faults": dict(e.faults),
                }
                for e in self.entries
            ],
        }


def build_leaderboard(
    tournament: str,
    rules: str,
    matches: Sequence[StoredMatch],
    entrants: Sequence[str],
    *,
    deals: Sequence[DealCommitment] = (),
) -> Leaderboard:
    """Rate ``matches`` (in key order) and rank ``entrants`` by ``mu - 3 sigma``."""
    ratings = rate(matches, entrants)
    return Leaderboard(
        tournament=tournament,
        rules=rules,
        matches=len(matches),
        entries=tuple(_entry(rank, r) for rank, r in enumerate(ratings, start=1)),
        deals=tuple(deals),
    )


def _deals_text(board: Leaderboard) -> str:
    """One sentence on the deal secrets: committed, and revealed or not yet."""
    if not board.deals:
        return ""
    parts = []
    for d in board.deals:
        if d.secret is None:
            parts.append(f"committed to sha256 {d.commitment}, secret not revealed yet")
        else:
            parts.append(f"committed to sha256 {d.commitment}, secret {d.secret}")
    return "Deals: " + "; ".join(parts) + " (check them with `referee verify`)."


def _entry(rank: int, r: EntrantRating) -> LeaderboardEntry:
    return LeaderboardEntry(
        rank=rank,
        name=r.name,
        mu=r.mu,
        sigma=r.sigma,
        score=r.score,
        matches=r.matches,
        avg_place=r.avg_place,
        firsts=r.firsts,
        forfeits=r.forfeits,
        faults=dict(r.faults),
    )


def render(board: Leaderboard, fmt: str) -> str:
    """The leaderboard as text in ``fmt`` (``md``, ``json`` or ``csv``; ``table`` is plain)."""
    if fmt == "md":
        return to_markdown(board)
    if fmt == "json":
        return to_json(board)
    if fmt == "csv":
        return to_csv(board)
    if fmt == "table":
        from rich.console import Console

        console = Console(width=120, color_system=None, file=io.StringIO(), highlight=False)
        console.print(to_rich_table(board))
        out = console.file
        assert isinstance(out, io.StringIO)
        return out.getvalue()
    raise ValueError(f"unknown leaderboard format {fmt!r} (allowed: {', '.join(FORMATS)})")


def to_json(board: Leaderboard) -> str:
    return json.dumps(board.as_dict(), ensure_ascii=False, indent=2) + "\n"


def _faults_text(faults: dict[str, int]) -> str:
    return ", ".join(f"{kind}: {count}" for kind, count in faults.items())


def _avg(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


# --------------------------------------------------------------------------- Markdown

_MD_SPECIAL = set("\\`*_[]|~")
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


def to_markdown(board: Leaderboard) -> str:
    deals = f"{_deals_text(board)}\n\n" if board.deals else ""
    head = (
        f"## Leaderboard: {markdown_escape(board.tournament)}\n\n"
        f"Rules {markdown_escape(board.rules)}, {board.matches} matches. "
        f"Ranked by TrueSkill score = mu - 3 sigma.\n\n{deals}"
        "| rank | bot | score | mu | sigma | matches | avg place | firsts | forfeits | faults |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )
    rows = [
        f"| {e.rank} | {markdown_escape(e.name)} | {e.score:.2f} | {e.mu:.2f} | {e.sigma:.2f} "
        f"| {e.matches} | {_avg(e.avg_place)} | {e.firsts} | {e.forfeits} "
        f"| {markdown_escape(_faults_text(e.faults))} |\n"
        for e in board.entries
    ]
    return head + "".join(rows)


# --------------------------------------------------------------------------- CSV

_CSV_COLUMNS = (
    "rank",
    "name",
    "score",
    "mu",
    "sigma",
    "matches",
    "avg_place",
    "firsts",
    "forfeits",
    "faults",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text_cell(text: str) -> str:
    """A text cell a spreadsheet will not evaluate (OWASP "CSV injection")."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_csv(board: Leaderboard) -> str:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(_CSV_COLUMNS)
    for e in board.entries:
        writer.writerow(
            [
                e.rank,
                csv_text_cell(e.name),
                f"{e.score:.3f}",
                f"{e.mu:.3f}",
                f"{e.sigma:.3f}",
                e.matches,
                "" if e.avg_place is None else f"{e.avg_place:.3f}",
                e.firsts,
                e.forfeits,
                csv_text_cell(";".join(f"{k}:{v}" for k, v in e.faults.items())),
            ]
        )
    return out.getvalue()


# --------------------------------------------------------------------------- terminal


def terminal_text(text: str) -> str:
    """Untrusted text for a terminal: :func:`referee.render.printable`."""
    return printable(text)


def to_rich_table(board: Leaderboard) -> Table:
    table = Table(
        title=Text(
            f"{terminal_text(board.tournament)} · {terminal_text(board.rules)} · "
            f"{board.matches} matches"
        ),
        caption="score = mu - 3 sigma (TrueSkill)"
        + (f"\n{terminal_text(_deals_text(board))}" if board.deals else ""),
        box=box.SIMPLE_HEAD,
    )
    table.add_column("#", justify="right")
    table.add_column("bot", overflow="fold", min_width=10)
    for column in ("score", "mu ± sigma", "matches", "avg place", "1st"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("forfeits", overflow="fold")
    for e in board.entries:
        forfeits = str(e.forfeits)
        if e.faults:
            forfeits += f" ({_faults_text(e.faults)})"
        table.add_row(
            str(e.rank),
            Text(terminal_text(e.name)),
            f"{e.score:.2f}",
            f"{e.mu:.2f} ± {e.sigma:.2f}",
            str(e.matches),
            _avg(e.avg_place),
            str(e.firsts),
            Text(forfeits),
        )
    return table
