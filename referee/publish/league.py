"""A league's leaderboard: its stored ratings, in a terminal table, Markdown, JSON and CSV.

A round robin's leaderboard replays every match (:mod:`referee.publish.source`); a league's
reads the ratings the league stores as each result arrives (:mod:`referee.ranking.
incremental`), one row per version of an entrant, so :func:`league_board` costs the same
after a hundred matches as after a million: its work grows with the entrants, never the
matches (``tests/tournament/test_league.py`` counts it). What needs every match (score
intervals over whole deals, the confidence of adjacent pairs, the collusion check, the
rating history) is left to ``referee league check`` and to tournaments.

Each entrant in the league is ranked by ``mu - 3 sigma`` with its matches, its uncertainty
(sigma), when it last played and whether it is still in placement; entrants without a
result yet are listed apart, unrated; so are the **suspended** (no longer seated after
forfeits of their own in a row, :mod:`referee.league`: their rating kept, with the fault
that suspended them) and the **retired versions** (replaced by a new version, or
retired): their rating and record as they left, no longer ranked.

It is rendered by the tournament's renderer (:mod:`referee.publish.boards`), with columns,
rows and notes of its own. Bot names are untrusted display text: every renderer escapes
them as the tournament's leaderboard does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

from referee.errors import UsageError
from referee.publish import boards
from referee.publish.settings import format_time
from referee.tournament.league import LeagueEntrant, LeagueLedger, Suspension
from referee.tournament.store import DATABASE, Store

if TYPE_CHECKING:
    from referee.tournament.file import Tournament

__all__ = [
    "LeagueBoard",
    "LeagueEntry",
    "league_board",
    "read_board",
    "render_league",
    "suspension_text",
]

_DIGITS = 3


@dataclass(frozen=True)
class LeagueEntry:
    """One version of an entrant on the league's leaderboard (``rank`` ``None``: unrated or
    retired)."""

    rank: int | None
    label: str
    name: str
    version: int
    mu: float
    sigma: float
    matches: int
    avg_place: float | None
    firsts: int
    forfeits: int
    faults: dict[str, int]
    last_played: float | None
    placing: bool
    """Still in placement: fewer placement tables played than the league's ``placement``."""
    joined: int
    left: int | None = None
    """The batch it left the league at (retired versions)."""
    why: str | None = None
    """Why it left: ``replaced by alice#2``, ``retired``."""
    suspended: int | None = None
    """The batch it is suspended from (not seated; ``None``: it is not)."""
    suspended_why: str | None = None
    """Why: how many forfeits of its own in a row, and the last one told in a line."""

    @property
    def score(self) -> float:
        return self.mu - 3 * self.sigma

    @property
    def last_played_text(self) -> str:
        return "—" if self.last_played is None else format_time(self.last_played)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "name": self.label,
            "entrant": self.name,
            "version": self.version,
            "score": round(self.score, _DIGITS),
            "mu": round(self.mu, _DIGITS),
            "sigma": round(self.sigma, _DIGITS),
            "matches": self.matches,
            "avg_place": None if self.avg_place is None else round(self.avg_place, _DIGITS),
            "firsts": self.firsts,
            "forfeits": self.forfeits,
            "faults": dict(self.faults),
            "last_played": self.last_played,
            "placement": self.placing,
            "joined_batch": self.joined,
            "left_batch": self.left,
            "left_why": self.why,
            "suspended_batch": self.suspended,
            "suspended_why": self.suspended_why,
        }


@dataclass(frozen=True)
class LeagueBoard:
    """A league's leaderboard at one moment (see the module docstring)."""

    league: str
    rules: str
    table_size: int
    matches: int
    """Results stored so far (every version's, retired ones' included)."""
    batches: int
    """Batches settled so far."""
    entries: tuple[LeagueEntry, ...]
    unrated: tuple[LeagueEntry, ...] = ()
    retired: tuple[LeagueEntry, ...] = ()
    suspended: tuple[LeagueEntry, ...] = ()
    """In the league, not seated (:attr:`LeagueEntry.suspended`): rated, not ranked."""
    commitment: str | None = None
    """The commitment of the secret dealing the league's matches."""
    chain_head: str | None = None
    """The results chain's head when the board was read."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape: league, rules, table_size, matches, batches, commitment,
        chain_head, entries, unrated, suspended, retired, notes."""
        return {
            "league": self.league,
            "rules": self.rules,
            "table_size": self.table_size,
            "matches": self.matches,
            "batches": self.batches,
            "commitment": self.commitment,
            "chain_head": self.chain_head,
            "entries": [e.as_dict() for e in self.entries],
            "unrated": [e.as_dict() for e in self.unrated],
            "suspended": [e.as_dict() for e in self.suspended],
            "retired": [e.as_dict() for e in self.retired],
            "notes": league_notes(self),
        }


def league_board(tournament: Tournament, results_dir: Path | None = None) -> LeagueBoard:
    """The leaderboard of the league ``tournament`` from its store (which it may be writing
    meanwhile); ``UsageError`` when it has no results yet."""
    folder = results_dir or tournament.results_dir
    if not (folder / DATABASE).exists():
        raise UsageError(
            f"no results yet for {tournament.name} ({folder} has none); "
            f"run: referee league run {tournament.path}"
        )
    with Store(folder, readonly=True) as store, store.snapshot():
        return read_board(tournament, LeagueLedger(store, readonly=True), store)


def read_board(tournament: Tournament, ledger: LeagueLedger, store: Store) -> LeagueBoard:
    """The leaderboard from an open ledger: a query per table, none per match."""
    f = tournament.file
    k = f.table_size
    batch = ledger.next_batch()
    entrants = ledger.entrants()
    placement = f.league.placement
    held = ledger.suspended(batch)
    entries = [
        _entry(e, placement * k, placement, batch, held.get(e.label)) for e in entrants.values()
    ]
    suspended = tuple(
        sorted(
            (e for e in entries if e.left is None and e.suspended is not None),
            key=lambda e: (e.suspended or 0, e.label),
        )
    )
    live = [e for e in entries if e.left is None and e.suspended is None]
    rated = sorted((e for e in live if e.matches), key=lambda e: (-e.score, -e.mu, e.label))
    ranked = tuple(_ranked(e, i) for i, e in enumerate(rated, start=1))
    unrated = tuple(sorted((e for e in live if not e.matches), key=lambda e: e.label))
    retired = tuple(sorted((e for e in entries if e.left is not None), key=lambda e: e.left or 0))
    secret = store.connection.execute(
        "SELECT commitment FROM deal_secrets ORDER BY id DESC LIMIT 1"
    ).fetchone()
    head = store.connection.execute(
        "SELECT head FROM chain ORDER BY position DESC LIMIT 1"
    ).fetchone()
    return LeagueBoard(
        league=tournament.name,
        rules=tournament.rules.name,
        table_size=k,
        matches=sum(e.matches for e in entrants.values()) // k,
        batches=ledger.settled_batches(),
        entries=ranked,
        unrated=unrated,
        retired=retired,
        suspended=suspended,
        commitment=None if secret is None else str(secret[0]),
        chain_head=None if head is None else str(head[0]),
    )


def _entry(
    e: LeagueEntrant, matches: int, placement: int, batch: int, held: Suspension | None
) -> LeagueEntry:
    """``e`` as the board shows it: placing while it has played fewer than ``placement``
    placement tables and fewer than ``matches`` matches (as the planner sees it);
    ``held``: the suspension that keeps it from the next batch."""
    left = e.retired if e.retired is not None and e.retired <= batch else None
    return LeagueEntry(
        rank=None,
        label=e.label,
        name=e.name,
        version=e.version,
        mu=e.mu,
        sigma=e.sigma,
        matches=e.matches,
        avg_place=e.place_sum / e.matches if e.matches else None,
        firsts=e.firsts,
        forfeits=e.forfeits,
        faults=dict(e.faults),
        last_played=e.last_played,
        placing=e.placement < placement and e.matches < matches and left is None,
        joined=e.joined,
        left=left,
        why=e.retired_why if left is not None else None,
        suspended=None if held is None else held.since,
        suspended_why=None if held is None else suspension_text(held),
    )


def suspension_text(held: Suspension) -> str:
    """``8 forfeits of its own in a row, the last: crash: ...`` (and a reinstatement
    asked for, when one was)."""
    text = f"{held.forfeits} forfeits of its own in a row, the last: {held.why}"
    if held.asked is not None:
        text += "; reinstated, seated again from the next batch"
    return text


def _ranked(entry: LeagueEntry, rank: int) -> LeagueEntry:
    return replace(entry, rank=rank)


def league_notes(board: LeagueBoard) -> list[str]:
    """The sentences under every format."""
    notes = [
        "Rank: TrueSkill, mu - 3 sigma, updated as each result is stored and settled batch "
        "by batch in match-key order (referee league check replays every result and "
        "reports any difference). Sigma is the uncertainty left: a new version starts "
        "high and comes down as it plays.",
        f"{board.matches} matches in {board.batches} settled batches, tables of "
        f"{board.table_size}, each table one deal in every seat rotation.",
    ]
    placing = [e.label for e in board.entries if e.placing]
    if placing:
        listed = ", ".join(placing)
        notes.append(f"In placement (first tables, against a spread of the field): {listed}.")
    if board.unrated:
        notes.append(f"Unrated (no match yet): {', '.join(e.label for e in board.unrated)}.")
    if board.suspended:
        notes.append(
            "Suspended (no longer seated after forfeits of their own in a row; their "
            f"rating is kept, not ranked): {', '.join(e.label for e in board.suspended)}. A "
            "new version, or referee league reinstate, seats an entrant again."
        )
        notes += [
            f"{e.label} is suspended from batch {e.suspended}: {e.suspended_why}."
            for e in board.suspended
        ]
    if board.retired:
        notes.append(
            "Retired versions are listed apart: their results stay counted for their "
            "opponents (they were real matches), their own rating is kept and no longer "
            "ranked."
        )
    if board.commitment:
        notes.append(
            f"Deals: secret, committed to sha256 {board.commitment} (a league never ends: "
            "the secret is not revealed while it runs)."
        )
    if board.chain_head:
        notes.append(f"Results chain head: {board.chain_head}.")
    return notes


def render_league(board: LeagueBoard, fmt: str) -> str:
    """The leaderboard as text in ``fmt`` (``table``, ``md``, ``json`` or ``csv``)."""
    return boards.render_board(board, fmt, _RENDERERS)


_MD_COLUMNS = (
    boards.Column("rank", right=True),
    boards.Column("bot"),
    *(
        boards.Column(n, right=True)
        for n in ("version", "score", "mu", "sigma", "matches", "avg place")
    ),
    boards.Column("last played"),
    boards.Column("forfeits", right=True),
    boards.Column("faults"),
)


def _md_apart(last: str) -> tuple[boards.Column, ...]:
    """The columns of the suspended and the retired, ``last`` naming their batch."""
    return (
        boards.Column("bot"),
        *(boards.Column(n, right=True) for n in ("version", "score", "mu", "sigma", "matches")),
        boards.Column("last played"),
        boards.Column(last, right=True),
        boards.Column("why"),
    )


def _md_figures(e: LeagueEntry) -> tuple[str, ...]:
    """The cells every Markdown table of the league shows: version to matches."""
    return (str(e.version), f"{e.score:.2f}", f"{e.mu:.2f}", f"{e.sigma:.2f}", str(e.matches))


def _markdown(board: LeagueBoard) -> str:
    head = (
        f"## League: {boards.markdown_escape(board.league)}\n\n"
        f"Rules {boards.markdown_escape(board.rules)}, {board.matches} matches, "
        f"{board.batches} batches.\n\n"
    )
    rows = [
        (
            str(e.rank or ""),
            boards.markdown_escape(e.label) + (" (placement)" if e.placing else ""),
            *_md_figures(e),
            boards.avg_text(e.avg_place),
            e.last_played_text,
            str(e.forfeits),
            boards.markdown_escape(boards.faults_text(e.faults)),
        )
        for e in (*board.entries, *board.unrated)
    ]
    text = head + boards.markdown_table(_MD_COLUMNS, rows)
    for title, entries, last in (
        ("Suspended", board.suspended, "from batch"),
        ("Retired versions", board.retired, "left at batch"),
    ):
        if not entries:
            continue
        apart = [
            (
                boards.markdown_escape(e.label),
                *_md_figures(e),
                e.last_played_text,
                str(e.suspended if e.left is None else e.left),
                boards.markdown_escape((e.suspended_why if e.left is None else e.why) or ""),
            )
            for e in entries
        ]
        text += f"\n### {title}\n\n" + boards.markdown_table(_md_apart(last), apart)
    notes = "".join(f"\n{boards.markdown_escape(note)}\n" for note in league_notes(board))
    return text + notes


_CSV_COLUMNS = (
    "rank",
    "name",
    "entrant",
    "version",
    *boards.RECORD_COLUMNS,
    "last_played",
    "placement",
    "retired",
    "left_batch",
    "left_why",
    "suspended",
    "suspended_batch",
    "suspended_why",
)


def _csv_row(e: LeagueEntry) -> list[object]:
    return [
        e.rank or "",
        boards.csv_text_cell(e.label),
        boards.csv_text_cell(e.name),
        e.version,
        *boards.record_cells(e),
        "" if e.last_played is None else e.last_played_text,
        "yes" if e.placing else "no",
        "yes" if e.left is not None else "no",
        "" if e.left is None else e.left,
        boards.csv_text_cell(e.why or ""),
        "yes" if e.suspended is not None else "no",
        "" if e.suspended is None else e.suspended,
        boards.csv_text_cell(e.suspended_why or ""),
    ]


def _csv(board: LeagueBoard) -> str:
    every = (*board.entries, *board.unrated, *board.suspended, *board.retired)
    return boards.csv_table(_CSV_COLUMNS, [_csv_row(e) for e in every])


_TERMINAL_COLUMNS = (
    boards.Column("#", right=True, no_wrap=True),
    boards.Column("bot", overflow="fold", min_width=10),
    *(
        boards.Column(n, right=True, no_wrap=True)
        for n in ("score", "mu ± sigma", "played", "avg place")
    ),
    boards.Column("last played", no_wrap=True),
    boards.Column("note", overflow="fold", min_width=8),
)


def _note(e: LeagueEntry) -> str:
    """The terminal's note on ``e``: placement, retired, suspended or unrated, its faults."""
    note = "placement" if e.placing else ""
    if e.left is not None:
        note = f"retired at batch {e.left}: {e.why}"
    elif e.suspended is not None:
        note = f"suspended from batch {e.suspended} (see below)"
    elif not e.matches:
        note = "unrated"
    if e.faults:
        note = f"{note} faults {boards.faults_text(e.faults)}".strip()
    return note


def league_rich_table(board: LeagueBoard) -> Group:
    """The terminal table and the notes under it (names made safe for a terminal)."""
    rows = [
        (
            "" if e.rank is None else str(e.rank),
            Text(boards.terminal_text(e.label)),
            f"{e.score:.2f}",
            f"{e.mu:.2f}±{e.sigma:.2f}",
            str(e.matches),
            boards.avg_text(e.avg_place),
            e.last_played_text,
            Text(boards.terminal_text(_note(e))),
        )
        for e in (*board.entries, *board.unrated, *board.suspended, *board.retired)
    ]
    title = (
        f"{boards.terminal_text(board.league)} · {boards.terminal_text(board.rules)} · "
        f"{board.matches} matches · {board.batches} batches"
    )
    notes = [boards.terminal_text(note) for note in league_notes(board)]
    return boards.terminal_board(title, _TERMINAL_COLUMNS, rows, notes)


_RENDERERS = boards.Renderers(_markdown, _csv, league_rich_table)
