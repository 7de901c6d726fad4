"""The leaderboard: the standings and what publishing adds, as a terminal table, Markdown,
JSON and CSV.

The ranking is the standings' (:mod:`referee.ranking.standings`), computed there; this
module adds what no ranking decides, and renders. Each rated entry carries its TrueSkill
rating (the rank is by ``mu - 3 sigma``, or by ``mu`` once play-offs were played: every
format says which, :func:`rank_text`), its mean normalised finishing score with a
bootstrap interval (:mod:`referee.ranking.intervals`), and **over next**: how sure it is,
from the deals both played, that it does better than the next entry (:class:`OverNext`,
whose docstring says why that figure and not TrueSkill's, and how every format words it).
Entrants without a match are listed apart, unrated. With play-offs, the leaderboard says
how many were played and why they stopped; byte-identical entrants (``allow_twins``) are
named; so is every replaced version of an entrant (:class:`RetiredVersion`), whose matches
are retired: rated for nobody, since its tables are played again by the new version against
the same opponents.

JSON also has each bot's reply times (:class:`referee.publish.stats.ReplyStats`: median, 99th
percentile, slowest, the most of the bank spent in a match); they are measured, not in the
logs, so ``referee verify`` leaves them out of its comparison.

Every format also carries the tournament's settings (:mod:`referee.publish.settings`): the
rules with every override, table size, format, deals, seed, clock, sandbox, each bot's
version and SHA-256, when it was played and by which referee; and the collusion check
(:mod:`referee.ranking.collusion`): JSON has every pair, the others a sentence when a pair
is flagged (the site's collusion page has the table).

Bot names are untrusted display text. Markdown escapes every character that could start
formatting, a table cell or HTML; CSV quotes every cell and defuses spreadsheet formulas
(a text cell starting with ``= + - @``, tab or carriage return gets a leading ``'``); the
terminal table drops control characters and never reads markup from a name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group
from rich.text import Text

from referee.publish.boards import (
    FORMATS,
    RECORD_COLUMNS,
    Column,
    Renderers,
    avg_text,
    csv_table,
    csv_text_cell,
    faults_text,
    json_text,
    markdown_escape,
    markdown_table,
    record_cells,
    render_board,
    terminal_board,
    terminal_text,
)
from referee.publish.settings import TournamentSettings, settings_sentences
from referee.publish.stats import ReplyStats
from referee.ranking.collusion import CollusionCheck
from referee.ranking.standings import (
    MIN_SHARED_DEALS,
    LeaderboardEntry,
    OverNext,
    PlayoffSummary,
    RankRule,
    Standings,
)
from referee.specs import Replacement

__all__ = [
    "FORMATS",
    "DealCommitment",
    "Leaderboard",
    "LeaderboardEntry",
    "OverNext",
    "PlayoffSummary",
    "RetiredVersion",
    "rank_text",
    "render",
    "retired_versions",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich_table",
]

_DIGITS = 3


@dataclass(frozen=True)
class DealCommitment:
    """A deal secret as published: its commitment, and the secret once revealed; for a
    secret committed to before its run, where its beacon comes from (declared with the
    commitment) and the beacon mixed in."""

    commitment: str
    secret: str | None
    beacon_source: str | None = None
    beacon: str | None = None


@dataclass(frozen=True)
class RetiredVersion:
    """An entrant's version replaced by ``--replace`` (replacement ``replacement``): its
    files, the files that replaced them, and how many finished matches it played, now
    retired (kept, shown in its history, rated for nobody)."""

    name: str
    replacement: int
    version: str | None
    sha256: str
    new_version: str | None
    new_sha256: str
    matches: int

    def text(self) -> str:
        """The sentence every format adds under the leaderboard."""
        old = f"version {self.version}" if self.version else "its old version"
        new = f"version {self.new_version}" if self.new_version else "the new files"
        played = "match" if self.matches == 1 else "matches"
        return (
            f"Replaced: {self.name} (replacement {self.replacement}). The {self.matches} "
            f"finished {played} of {old} (sha256 {self.sha256[:12]}…) are retired: kept in "
            f"the results and in its history, counted in no rating, nor in its opponents'; "
            f"its scheduled tables are played again by {new} (sha256 {self.new_sha256[:12]}…) "
            "on fresh cards."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "replacement": self.replacement,
            "version": self.version,
            "sha256": self.sha256,
            "new_version": self.new_version,
            "new_sha256": self.new_sha256,
            "matches": self.matches,
        }


def retired_versions(
    replacements: Sequence[Replacement], retired_by: Sequence[int | None]
) -> tuple[RetiredVersion, ...]:
    """Each replacement's retired version; ``retired_by`` holds, for every finished retired
    match, the replacement that retired it."""
    counts = {r.generation: 0 for r in replacements}
    for generation in retired_by:
        if generation in counts:
            counts[generation] += 1
    return tuple(
        RetiredVersion(
            r.name,
            r.generation,
            r.old_version,
            r.old_sha256,
            r.new_version,
            r.new_sha256,
            counts[r.generation],
        )
        for r in replacements
    )


@dataclass(frozen=True)
class Leaderboard:
    """A tournament's standings (:class:`~referee.ranking.standings.Standings`) with what
    publishing adds to them and no ranking decides.

    ``deals`` are the commitments of the secrets that dealt the matches, with each secret
    once the tournament is complete (``referee verify`` checks the deals with them).
    """

    tournament: str
    rules: str
    standings: Standings
    deals: tuple[DealCommitment, ...] = ()
    settings: TournamentSettings | None = None
    """How the tournament was played (``None`` when the caller has no tournament file)."""
    reply_times: dict[str, ReplyStats] = field(default_factory=dict)
    """How quickly each bot answered, by name (bots with stored matches)."""
    replaced: tuple[RetiredVersion, ...] = ()
    """Every version replaced by ``--replace``, in the order of the replacements."""

    @property
    def matches(self) -> int:
        """How many finished matches the ranking rests on."""
        return self.standings.matches

    @property
    def entries(self) -> tuple[LeaderboardEntry, ...]:
        return self.standings.entries

    @property
    def unrated(self) -> tuple[str, ...]:
        """Entrants without a match yet, by name: no rating, no rank."""
        return self.standings.unrated

    @property
    def confidence(self) -> float:
        """The level of the intervals and of the marks on adjacent pairs."""
        return self.standings.confidence

    @property
    def playoff(self) -> PlayoffSummary | None:
        return self.standings.playoff

    @property
    def ranked_by(self) -> RankRule:
        """What the entries are ordered by (:func:`referee.ranking.ratings.rank_rule`)."""
        return self.standings.ranked_by

    @property
    def collusion(self) -> CollusionCheck:
        """The collusion check of every pair that met (:mod:`referee.ranking.collusion`)."""
        return self.standings.collusion

    @property
    def twins(self) -> tuple[tuple[str, ...], ...]:
        """Groups of byte-identical entrants (the same SHA-256), allowed by ``allow_twins``."""
        return self.standings.twins

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape: tournament, rules, settings, matches, confidence, deals, playoff,
        ranked_by, entries, unrated, twins, replaced, notes, collusion, reply_times (by bot, in rank
        order)."""
        playoff = None
        if self.playoff is not None:
            p = self.playoff
            playoff = {
                "top": p.top,
                "until": p.until,
                "budget": p.budget,
                "matches": p.matches,
                "rounds": p.rounds,
                "state": p.state,
            }
        return {
            "tournament": self.tournament,
            "rules": self.rules,
            "settings": None if self.settings is None else self.settings.as_dict(),
            "matches": self.matches,
            "confidence": self.confidence,
            "deals": [
                {
                    "commitment": d.commitment,
                    "secret": d.secret,
                    "beacon_source": d.beacon_source,
                    "beacon": d.beacon,
                }
                for d in self.deals
            ],
            "playoff": playoff,
            "ranked_by": self.ranked_by,
            "entries": [_entry_dict(e) for e in self.entries],
            "unrated": list(self.unrated),
            "twins": [list(group) for group in self.twins],
            "replaced": [version.as_dict() for version in self.replaced],
            "notes": leaderboard_notes(self),
            "collusion": self.collusion.as_dict(),
            "reply_times": {
                name: self.reply_times[name].as_dict()
                for name in [*(e.name for e in self.entries), *self.unrated]
                if name in self.reply_times
            },
        }


def _entry_dict(e: LeaderboardEntry) -> dict[str, Any]:
    interval = e.interval
    over = e.certainty
    return {
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
        "mean_score": None if interval is None else round(interval.mean, _DIGITS),
        "interval": None
        if interval is None
        else [round(interval.low, _DIGITS), round(interval.high, _DIGITS)],
        "over_next": None
        if over is None
        else {
            "confidence": None if over.confidence is None else round(over.confidence, _DIGITS),
            "deals": over.deals,
            "significant": over.significant,
            "favours": over.favours,
            "text": over.text(),
        },
        "playoff_matches": e.playoff_matches,
    }


def _deals_text(board: Leaderboard, shown: Callable[[str], str] = str) -> str:
    """One sentence on the deal secrets: committed (with the beacon declared), and revealed
    or not yet; ``shown`` escapes the organiser's words (the beacon's source) for a
    format."""
    if not board.deals:
        return ""
    parts = []
    for d in board.deals:
        beacon = ""
        if d.beacon_source is not None:
            mixed = "none mixed in yet" if d.beacon is None else f"{d.beacon} mixed in"
            beacon = f" with the beacon {shown(d.beacon_source)} ({mixed})"
        if d.secret is None:
            parts.append(f"committed to sha256 {d.commitment}{beacon}, secret not revealed yet")
        else:
            parts.append(f"committed to sha256 {d.commitment}{beacon}, secret {d.secret}")
    return "Deals: " + "; ".join(parts) + " (check them with `referee verify`)."


def rank_text(ranked_by: RankRule) -> str:
    """What the rank is, as every format says it."""
    if ranked_by == "mu":
        return (
            "Rank: TrueSkill mu over every match, opponents weighed (after play-offs the "
            "rank is by mu, not by the score mu - 3 sigma, which would favour the bots the "
            "play-offs seated more often)."
        )
    return "Rank: TrueSkill score, mu - 3 sigma over every match, opponents weighed."


def how_to_read(board: Leaderboard) -> str:
    """The one line under the table of every format: which figure comes from what."""
    level = f"{board.confidence * 100:g} %"
    return (
        f"{rank_text(board.ranked_by)} Over next: "
        "how sure it is, on the deals both bots played (same cards, every seat), that this "
        f"bot does better than the next; ≈ below {level}, “next ahead” where those deals "
        f"favour the next bot, “too few deals (N of {MIN_SHARED_DEALS})” where the two "
        f"have played fewer than {MIN_SHARED_DEALS} deals together, too few to say (the "
        "rotations of a deal count once; a replaced bot's count starts again with its new "
        "version)."
    )


def leaderboard_notes(board: Leaderboard) -> list[str]:
    """The sentences under every format: how to read the marks, play-offs, unrated."""
    level = f"{board.confidence * 100:g} %"
    notes = [
        how_to_read(board),
        f"Mean score: the normalised finishing score (1 first, 0 last) with its {level} "
        "bootstrap interval over whole deals; a plain average that does not weigh the "
        "opponents (nor the play-offs' stronger tables), so it may disagree with the rank.",
    ]
    if board.playoff is not None:
        notes.append(board.playoff.text())
    if board.unrated:
        notes.append(f"Unrated (no match yet): {', '.join(board.unrated)}.")
    for group in board.twins:
        notes.append(
            f"Byte-identical entrants (the same sha256; the file allows twins): "
            f"{' and '.join(group)}. No match can order them, and the play-offs never try."
        )
    notes += [version.text() for version in board.replaced]
    if board.collusion.flagged:
        notes.append(collusion_note(board.collusion))
    return notes


def collusion_note(check: CollusionCheck) -> str:
    """The sentence every format adds when the collusion check flags a pair."""
    flagged = check.flagged
    pairs = "; ".join(f"{p.describe()} (p = {p.p_value:.2g})" for p in flagged)
    count = "1 pair" if len(flagged) == 1 else f"{len(flagged)} pairs"
    return (
        f"Collusion check: {count} of entrants flagged at p ≤ {check.level:g}: {pairs}. "
        "This is evidence, not proof: look at their code and at their matches together."
    )


def _interval_text(e: LeaderboardEntry) -> str:
    i = e.interval
    return "—" if i is None else f"{i.mean:.3f} [{i.low:.3f}, {i.high:.3f}]"


def render(board: Leaderboard, fmt: str) -> str:
    """The leaderboard as text in ``fmt`` (``md``, ``json`` or ``csv``; ``table`` is plain)."""
    return render_board(board, fmt, _RENDERERS)


def to_json(board: Leaderboard) -> str:
    return json_text(board.as_dict())


# --------------------------------------------------------------------------- Markdown

_MD_COLUMNS = (
    Column("rank", right=True),
    Column("bot"),
    *(Column(name, right=True) for name in ("score", "mu", "sigma")),
    Column("mean score [interval]"),
    *(Column(n, right=True) for n in ("over next", "matches", "avg place", "firsts", "forfeits")),
    Column("faults"),
)


def to_markdown(board: Leaderboard) -> str:
    """The ranking first (a heading, one line, the table), then how to read it, the notes,
    the deals and the settings."""
    deals = f"{_deals_text(board, markdown_escape)}\n\n" if board.deals else ""
    notes = "".join(f"{markdown_escape(note)}\n\n" for note in leaderboard_notes(board))
    head = (
        f"## Leaderboard: {markdown_escape(board.tournament)}\n\n"
        f"Rules {markdown_escape(board.rules)}, {board.matches} matches.\n\n"
    )
    rows = [
        (
            str(e.rank),
            markdown_escape(e.name),
            f"{e.score:.2f}",
            f"{e.mu:.2f}",
            f"{e.sigma:.2f}",
            _interval_text(e),
            e.over_next_text,
            str(e.matches),
            avg_text(e.avg_place),
            str(e.firsts),
            str(e.forfeits),
            markdown_escape(faults_text(e.faults)),
        )
        for e in board.entries
    ]
    table = markdown_table(_MD_COLUMNS, rows)
    return head + table + f"\n{notes}{deals}{_markdown_settings(board.settings)}"


def _markdown_settings(settings: TournamentSettings | None) -> str:
    """The settings as sentences, then the bots' versions and SHA-256 as a table."""
    if settings is None:
        return ""
    text = "".join(f"{markdown_escape(line)}\n\n" for line in settings_sentences(settings))
    rows = [
        (markdown_escape(b.name), markdown_escape(b.version or "—"), f"`{b.sha256}`")
        for b in settings.bots
    ]
    columns = (Column("bot"), Column("version"), Column("sha256"))
    return f"{text}{markdown_table(columns, rows)}\n"


# --------------------------------------------------------------------------- CSV

_CSV_COLUMNS = (
    "rank",
    "name",
    *RECORD_COLUMNS,
    "mean_score",
    "interval_low",
    "interval_high",
    "over_next",
    "over_next_deals",
    "significant",
    "over_next_text",
    "playoff_matches",
)


def _csv_over_next(e: LeaderboardEntry) -> tuple[str, str, str, str]:
    """The over-next cells: the figure (empty when the shared deals are too few), the
    shared deals, significant or not, and the text every format shows."""
    c = e.certainty
    if c is None:
        return ("", "", "", "")
    figure = "" if c.confidence is None else f"{c.confidence:.4f}"
    return (figure, str(c.deals), "yes" if c.significant else "no", c.text())


def _csv_row(e: LeaderboardEntry) -> list[object]:
    interval: Sequence[str] = ("", "", "")
    if e.interval is not None:
        interval = [f"{x:.4f}" for x in (e.interval.mean, e.interval.low, e.interval.high)]
    return [
        e.rank,
        csv_text_cell(e.name),
        *record_cells(e),
        *interval,
        *_csv_over_next(e),
        e.playoff_matches,
    ]


def to_csv(board: Leaderboard) -> str:
    unrated = [["", csv_text_cell(name), *[""] * (len(_CSV_COLUMNS) - 2)] for name in board.unrated]
    return csv_table(_CSV_COLUMNS, [*(_csv_row(e) for e in board.entries), *unrated])


# --------------------------------------------------------------------------- terminal


def to_rich_table(board: Leaderboard) -> Group:
    """The terminal table, narrow enough for 80 columns, and the notes under it.

    Average places and first places are left to the other formats: at one table size the
    mean score says what the average place does (``mean = (k - avg) / (k - 1)``). The
    notes follow the table rather than being its caption (:func:`terminal_board`).
    """
    notes = [terminal_text(note) for note in leaderboard_notes(board)]
    if board.deals:
        notes.append(terminal_text(_deals_text(board)))
    if board.settings is not None:
        # Printing a board publishes nothing: it says when it was ranked.
        notes += [terminal_text(line) for line in settings_sentences(board.settings, "ranked")]
        notes.append("Bots, version and sha256 of their files:")
        notes += [
            terminal_text(f"  {b.name} {b.version or '-'} {b.sha256}") for b in board.settings.bots
        ]
    level = f"{board.confidence * 100:g}%"
    columns = (
        Column("#", right=True, no_wrap=True, min_width=1),
        Column("bot", overflow="fold", min_width=10),
        *(Column(name, right=True, no_wrap=True) for name in ("score", "mu ± sigma")),
        Column(f"mean [{level}]", right=True, no_wrap=True),
        # "≈ 0.13 (next ahead)" may wrap at its spaces on a narrow terminal, never mid-word.
        Column("over next", right=True, min_width=6),
        Column("played", right=True, no_wrap=True),
        Column("forfeits", overflow="fold", min_width=8),
    )
    rows: list[Sequence[str | Text]] = []
    for e in board.entries:
        forfeits = str(e.forfeits)
        if e.faults:
            forfeits += f" ({faults_text(e.faults)})"
        interval = "—"
        if e.interval is not None:
            interval = f"{e.interval.mean:.2f} [{e.interval.low:.2f},{e.interval.high:.2f}]"
        rows.append(
            (
                str(e.rank),
                Text(terminal_text(e.name)),
                f"{e.score:.2f}",
                f"{e.mu:.2f}±{e.sigma:.2f}",
                interval,
                e.over_next_text,
                str(e.matches),
                Text(forfeits),
            )
        )
    for name in board.unrated:
        rows.append(("", Text(terminal_text(name)), "", "", "unrated", "", "", ""))
    title = (
        f"{terminal_text(board.tournament)} · {terminal_text(board.rules)} · "
        f"{board.matches} matches"
    )
    return terminal_board(title, columns, rows, notes)


_RENDERERS = Renderers(to_markdown, to_csv, to_rich_table)
