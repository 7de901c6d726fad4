"""The leaderboard: data from the ratings, and renderers for a terminal, Markdown, JSON, CSV.

Each rated entry carries its TrueSkill rating (the rank is by ``mu - 3 sigma``), its mean
normalised finishing score with a bootstrap interval (:mod:`referee.ranking.intervals`), and
**over next**: how sure it is, from the deals both played, that it does better than the next
entry (:class:`OverNext`, whose docstring says why that figure and not TrueSkill's, and how
every format words it). Entrants without a match are listed apart, unrated. With
play-offs, the leaderboard says how many were played and why they stopped; byte-identical
entrants (``allow_twins``) are named; so is every replaced version of an entrant
(:class:`RetiredVersion`), whose matches are retired: rated for nobody, since its tables
are played again by the new version against the same opponents.

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

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from referee.publish.settings import TournamentSettings, settings_sentences
from referee.publish.stats import ReplyStats
from referee.ranking.collusion import CollusionCheck, collusion_check
from referee.ranking.intervals import (
    MIN_SHARED_DEALS,
    OrderConfidence,
    ScoreInterval,
    adjacent_confidences,
    deal_scores,
    score_intervals,
)
from referee.ranking.playoff import PlayoffState, identical, playoff_rounds
from referee.ranking.ratings import EntrantRating, make_environment, rate
from referee.rules import ResolvedRules
from referee.specs import (
    PLAYOFF_PREFIX,
    PlayoffSettings,
    RatingSettings,
    Replacement,
    StoredMatch,
    identical_groups,
)
from referee.text import printable

__all__ = [
    "FORMATS",
    "DealCommitment",
    "Leaderboard",
    "LeaderboardEntry",
    "OverNext",
    "PlayoffSummary",
    "RetiredVersion",
    "build_leaderboard",
    "render",
    "retired_versions",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich_table",
]

FORMATS = ("table", "md", "json", "csv")
_DIGITS = 3


@dataclass(frozen=True)
class OverNext:
    """How sure it is that an entry does better than the next one: the **over next** cell.

    **Which estimate, and why.** The rank is TrueSkill's (``mu - 3 sigma``, every match,
    the opponents weighed); the figure beside it is not: it is the paired comparison of the
    two bots on the deal blocks both played (the same cards, every seat,
    :func:`referee.ranking.intervals.order_confidence`), the share of bootstrap resamples in
    which this one outscores the next. TrueSkill's own certainty of the order would be
    ``Phi((mu_a - mu_b) / sqrt(sigma_a**2 + sigma_b**2))`` (with ``2 beta**2`` added under
    the root it becomes the chance that ``a`` places above ``b`` in one match, 0.5 to 0.6
    for any two bots of a tournament: a prediction, not a certainty). Measured by
    ``python -m bench.certainty_bench`` on the ranking benchmark's ladder of eight bots of
    known order, over the adjacent pairs of the published order: in 24 seeded round robins
    of one-round matches after 1, 2 and 3 deals (168 pairs each) the shared-deal figure
    predicts which bot of a pair is truly the better one a little better than TrueSkill's
    (Brier scores 0.220, 0.183 and 0.146 against 0.230, 0.194 and 0.148), in 12 round
    robins of matches to 15 points (84 pairs each) about as well (0.156 and 0.094 against
    0.152 and 0.097); and where it disagrees with the rank (below 0.5: 39 of the 504
    one-round pairs), the bot ranked lower was truly the better one in 31. The play-offs
    stop on this figure too (``until``), and the twins controls
    (``bench/ranking_bench.py``, ``tests/tournament/test_fairness.py``) check that it calls
    two copies of one bot ordered no more often than its level says. So it stays, and every
    format says plainly which is which (:func:`leaderboard_notes`).

    **How it reads**, the same words in every format (:meth:`text`):

    * ``0.98``: significant at the leaderboard's confidence;
    * ``≈ 0.81``: this bot is ahead on the shared deals, but not surely;
    * ``≈ 0.13 (next ahead)``: the shared deals favour the *next* bot (87 % of resamples),
      though TrueSkill, weighing every match and opponent, ranks this one higher;
    * ``— 6 shared deals``: fewer than :data:`MIN_SHARED_DEALS`, too few for any figure
      (a bootstrap of a handful of deals reads 1.00 from two won deals); ``confidence`` is
      then ``None``.
    """

    confidence: float | None
    deals: int
    significant: bool
    favours: Literal["this", "next", "even"] | None
    """Which bot the shared deals favour; ``None`` when they are too few."""

    @classmethod
    def of(cls, pair: OrderConfidence, level: float) -> OverNext:
        if pair.deals < MIN_SHARED_DEALS:
            return cls(None, pair.deals, False, None)
        c = pair.confidence
        favours: Literal["this", "next", "even"] = (
            "this" if c > 0.5 else "next" if c < 0.5 else "even"
        )
        return cls(c, pair.deals, pair.significant(level), favours)

    def text(self) -> str:
        """The cell, as every format shows it (see the class)."""
        if self.confidence is None:
            if self.deals == 0:
                return "— no shared deal"
            return f"— {self.deals} shared deal{'s' if self.deals != 1 else ''}"
        figure = f"{self.confidence:.2f}"
        if self.significant:
            return figure
        return f"≈ {figure} (next ahead)" if self.favours == "next" else f"≈ {figure}"


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
    interval: ScoreInterval | None = None
    """Mean normalised finishing score and its bootstrap interval."""
    over_next: OrderConfidence | None = None
    """The shared-deal comparison with the next entry (``None`` for the last)."""
    significant: bool | None = None
    """Whether ``over_next`` is significant at the leaderboard's confidence."""
    playoff_matches: int = 0
    certainty: OverNext | None = None
    """``over_next`` as every format shows it (:class:`OverNext`)."""

    @property
    def mark(self) -> str:
        """``≈`` when the order over the next entry is not significant, else nothing."""
        return "≈" if self.significant is False else ""

    @property
    def over_next_text(self) -> str:
        """The over-next cell: ``0.98``, ``≈ 0.81``, ``≈ 0.13 (next ahead)``,
        ``— 6 shared deals``, or nothing for the last entry."""
        return "" if self.certainty is None else self.certainty.text()


@dataclass(frozen=True)
class PlayoffSummary:
    """The play-offs as far as they went: ``state`` says whether more are due."""

    top: int
    until: float
    budget: int
    matches: int
    rounds: int
    state: PlayoffState

    def text(self) -> str:
        why = {
            "settled": f"every adjacent pair of the top {self.top} is ordered with "
            f"confidence {self.until:g}",
            "budget": "the budget is spent",
            "open": "more are due (run the tournament again)",
        }[self.state]
        return (
            f"Play-offs (top {self.top} until {self.until:g}, budget {self.budget}): "
            f"{self.matches} matches in {self.rounds} rounds; {why}."
        )


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
    """A tournament's ranking: ``matches`` is how many finished matches it rests on.

    ``deals`` are the commitments of the secrets that dealt the matches, with each secret
    once the tournament is complete (``referee verify`` checks the deals with them).
    """

    tournament: str
    rules: str
    matches: int
    entries: tuple[LeaderboardEntry, ...]
    deals: tuple[DealCommitment, ...] = ()
    unrated: tuple[str, ...] = ()
    """Entrants without a match yet, by name: no rating, no rank."""
    confidence: float = 0.95
    """The level of the intervals and of the marks on adjacent pairs."""
    playoff: PlayoffSummary | None = None
    settings: TournamentSettings | None = None
    """How the tournament was played (``None`` when the caller has no tournament file)."""
    collusion: CollusionCheck | None = None
    """The collusion check of every pair that met (:mod:`referee.ranking.collusion`)."""
    twins: tuple[tuple[str, ...], ...] = ()
    """Groups of byte-identical entrants (the same SHA-256), allowed by ``allow_twins``."""
    reply_times: dict[str, ReplyStats] = field(default_factory=dict)
    """How quickly each bot answered, by name (bots with stored matches)."""
    replaced: tuple[RetiredVersion, ...] = ()
    """Every version replaced by ``--replace``, in the order of the replacements."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape: tournament, rules, settings, matches, confidence, deals, playoff,
        entries, unrated, twins, replaced, notes, collusion, reply_times (by bot, in rank
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
            "entries": [_entry_dict(e) for e in self.entries],
            "unrated": list(self.unrated),
            "twins": [list(group) for group in self.twins],
            "replaced": [version.as_dict() for version in self.replaced],
            "notes": leaderboard_notes(self),
            "collusion": None if self.collusion is None else self.collusion.as_dict(),
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


@dataclass(frozen=True)
class RatedPart:
    """What the ratings decide (:func:`rated_part`): every entrant's rating, best first,
    and how sure each place is over the next. TrueSkill over every match, then a bootstrap
    per adjacent pair: the costlier part of a ranking, which needs the order."""

    rated: tuple[EntrantRating, ...]
    pairs: tuple[OrderConfidence, ...]


@dataclass(frozen=True)
class ScoredPart:
    """What needs no rating (:func:`scored_part`): each entrant's score interval and the
    collusion check. A publication computes them while its ratings are computed."""

    intervals: dict[str, ScoreInterval]
    collusion: CollusionCheck


def rated_part(
    matches: Sequence[StoredMatch],
    entrants: Sequence[str],
    *,
    ratings: RatingSettings | None = None,
    ruleset: ResolvedRules | None = None,
    observe: Callable[[StoredMatch, Mapping[str, Any]], None] | None = None,
) -> RatedPart:
    """Rate ``matches`` (in canonical order) and compare each rated entrant with the next
    over the deals both played; ``observe`` as for :func:`build_leaderboard`."""
    rating = ratings or RatingSettings()
    rated = rate(matches, entrants, env=make_environment(rating, ruleset), observe=observe)
    order = [r.name for r in rated if r.rated]
    pairs = adjacent_confidences(order, deal_scores(matches), resamples=rating.resamples)
    return RatedPart(tuple(rated), tuple(pairs))


def scored_part(
    matches: Sequence[StoredMatch],
    entrants: Sequence[str],
    *,
    ratings: RatingSettings | None = None,
    authors: Mapping[str, str] | None = None,
) -> ScoredPart:
    """Each entrant's mean score with its bootstrap interval, and the collusion check."""
    intervals = entrant_intervals(matches, ratings=ratings)
    return ScoredPart(intervals, collusion_check(matches, order=entrants, authors=authors))


def entrant_intervals(
    matches: Sequence[StoredMatch], *, ratings: RatingSettings | None = None
) -> dict[str, ScoreInterval]:
    """Each entrant's mean score with its bootstrap interval, at ``ratings``' confidence."""
    rating = ratings or RatingSettings()
    return score_intervals(
        deal_scores(matches), level=rating.confidence, resamples=rating.resamples
    )


def build_leaderboard(
    tournament: str,
    rules: str,
    matches: Sequence[StoredMatch],
    entrants: Sequence[str],
    *,
    deals: Sequence[DealCommitment] = (),
    ratings: RatingSettings | None = None,
    ruleset: ResolvedRules | None = None,
    playoff: PlayoffSettings | None = None,
    table_size: int | None = None,
    settings: TournamentSettings | None = None,
    observe: Callable[[StoredMatch, Mapping[str, Any]], None] | None = None,
    authors: Mapping[str, str] | None = None,
    fingerprints: Mapping[str, str] | None = None,
    reply_times: Mapping[str, ReplyStats] | None = None,
    replaced: Sequence[RetiredVersion] = (),
    parts: tuple[RatedPart, ScoredPart] | None = None,
) -> Leaderboard:
    """Rate ``matches`` (in canonical order), rank ``entrants`` by ``mu - 3 sigma``, and
    add each one's score interval and the confidence of each adjacent pair.

    ``ratings`` are the tournament's ``[ratings]`` (the defaults when ``None``); ``ruleset``
    decides the default draw probability; ``playoff`` and ``table_size`` say whether more
    play-offs are due; ``settings`` are published with the ranking; ``observe`` is called
    with every match and the ratings after it (:func:`referee.ranking.ratings.rate`);
    ``authors`` (entrant to author, where known) go into the collusion check's rows;
    ``fingerprints`` (entrant to the SHA-256 of its files) name byte-identical entrants,
    which the play-offs never separate; ``reply_times`` (by bot) are published with it;
    ``replaced`` are the versions replaced (``matches`` holds none of their retired ones).
    ``parts`` are :func:`rated_part` and :func:`scored_part` of the same arguments when
    computed already (elsewhere, at the same time): the leaderboard is the same.
    """
    rating = ratings or RatingSettings()
    if parts is None:
        parts = (
            rated_part(matches, entrants, ratings=rating, ruleset=ruleset, observe=observe),
            scored_part(matches, entrants, ratings=rating, authors=authors),
        )
    rated_of, scored = parts
    order = [r for r in rated_of.rated if r.rated]
    pairs = rated_of.pairs
    in_playoffs = _playoff_matches(matches)
    entries = []
    for rank, r in enumerate(order, start=1):
        over = pairs[rank - 1] if rank - 1 < len(pairs) else None
        entries.append(
            _entry(
                rank,
                r,
                interval=scored.intervals.get(r.name),
                over_next=over,
                significant=None if over is None else over.significant(rating.confidence),
                playoff_matches=in_playoffs.get(r.name, 0),
                certainty=None if over is None else OverNext.of(over, rating.confidence),
            )
        )
    summary = None
    if playoff is not None:
        summary = _playoff_summary(
            matches, playoff, pairs, table_size or len(entrants), fingerprints
        )
    return Leaderboard(
        tournament=tournament,
        rules=rules,
        matches=len(matches),
        entries=tuple(entries),
        deals=tuple(deals),
        unrated=tuple(r.name for r in rated_of.rated if not r.rated),
        confidence=rating.confidence,
        playoff=summary,
        settings=settings,
        collusion=scored.collusion,
        twins=tuple(identical_groups({n: (fingerprints or {}).get(n, "") for n in entrants})),
        reply_times=dict(reply_times or {}),
        replaced=tuple(replaced),
    )


def _playoff_matches(matches: Sequence[StoredMatch]) -> dict[str, int]:
    """How many play-off matches each bot played."""
    counts: dict[str, int] = {}
    for match in matches:
        if match.spec.key.startswith(PLAYOFF_PREFIX):
            for seat in match.seats:
                counts[seat.name] = counts.get(seat.name, 0) + 1
    return counts


def _playoff_summary(
    matches: Sequence[StoredMatch],
    settings: PlayoffSettings,
    pairs: Sequence[OrderConfidence],
    table_size: int,
    fingerprints: Mapping[str, str] | None = None,
) -> PlayoffSummary:
    """How far the play-offs went, and whether more are due (as :func:`plan_round` sees it:
    a pair of byte-identical entrants is never waited for)."""
    played = sum(m.spec.key.startswith(PLAYOFF_PREFIX) for m in matches)
    state: PlayoffState = "open"
    top_pairs = pairs[: settings.top - 1]
    if top_pairs and all(
        p.significant(settings.until) or identical(p, fingerprints) for p in top_pairs
    ):
        state = "settled"
    elif settings.budget - played < table_size:
        state = "budget"
    rounds = playoff_rounds([m.spec for m in matches])
    return PlayoffSummary(settings.top, settings.until, settings.budget, played, rounds, state)


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


def _entry(
    rank: int,
    r: EntrantRating,
    *,
    interval: ScoreInterval | None,
    over_next: OrderConfidence | None,
    significant: bool | None,
    playoff_matches: int,
    certainty: OverNext | None,
) -> LeaderboardEntry:
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
        interval=interval,
        over_next=over_next,
        significant=significant,
        playoff_matches=playoff_matches,
        certainty=certainty,
    )


def how_to_read(board: Leaderboard) -> str:
    """The one line under the table of every format: which figure comes from what."""
    level = f"{board.confidence * 100:g} %"
    return (
        "Rank: TrueSkill, mu - 3 sigma over every match, opponents weighed. Over next: "
        "how sure it is, on the deals both bots played (same cards, every seat), that this "
        f"bot does better than the next; ≈ below {level}, “next ahead” where those deals "
        f"favour the next bot, “— N shared deals” where fewer than {MIN_SHARED_DEALS} are "
        "too few to say."
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
    if board.collusion is not None and board.collusion.flagged:
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
    if fmt == "md":
        return to_markdown(board)
    if fmt == "json":
        return to_json(board)
    if fmt == "csv":
        return to_csv(board)
    if fmt == "table":
        from rich.console import Console

        console = Console(width=160, color_system=None, file=io.StringIO(), highlight=False)
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


def to_markdown(board: Leaderboard) -> str:
    """The ranking first (a heading, one line, the table), then how to read it, the notes,
    the deals and the settings."""
    deals = f"{_deals_text(board, markdown_escape)}\n\n" if board.deals else ""
    notes = "".join(f"{markdown_escape(note)}\n\n" for note in leaderboard_notes(board))
    head = (
        f"## Leaderboard: {markdown_escape(board.tournament)}\n\n"
        f"Rules {markdown_escape(board.rules)}, {board.matches} matches.\n\n"
        "| rank | bot | score | mu | sigma | mean score [interval] | over next | matches "
        "| avg place | firsts | forfeits | faults |\n"
        "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|\n"
    )
    rows = [
        f"| {e.rank} | {markdown_escape(e.name)} | {e.score:.2f} | {e.mu:.2f} | {e.sigma:.2f} "
        f"| {_interval_text(e)} | {e.over_next_text} "
        f"| {e.matches} | {_avg(e.avg_place)} | {e.firsts} | {e.forfeits} "
        f"| {markdown_escape(_faults_text(e.faults))} |\n"
        for e in board.entries
    ]
    return head + "".join(rows) + f"\n{notes}{deals}{_markdown_settings(board.settings)}"


def _markdown_settings(settings: TournamentSettings | None) -> str:
    """The settings as sentences, then the bots' versions and SHA-256 as a table."""
    if settings is None:
        return ""
    text = "".join(f"{markdown_escape(line)}\n\n" for line in settings_sentences(settings))
    rows = "".join(
        f"| {markdown_escape(b.name)} | {markdown_escape(b.version or '—')} | `{b.sha256}` |\n"
        for b in settings.bots
    )
    return f"{text}| bot | version | sha256 |\n|---|---|---|\n{rows}\n"


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
    "mean_score",
    "interval_low",
    "interval_high",
    "over_next",
    "over_next_deals",
    "significant",
    "over_next_text",
    "playoff_matches",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text_cell(text: str) -> str:
    """A text cell a spreadsheet will not evaluate (OWASP "CSV injection")."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv_over_next(e: LeaderboardEntry) -> tuple[str, str, str, str]:
    """The over-next cells: the figure (empty when the shared deals are too few), the
    shared deals, significant or not, and the text every format shows."""
    c = e.certainty
    if c is None:
        return ("", "", "", "")
    figure = "" if c.confidence is None else f"{c.confidence:.4f}"
    return (figure, str(c.deals), "yes" if c.significant else "no", c.text())


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
                *(
                    ("", "", "")
                    if e.interval is None
                    else (f"{x:.4f}" for x in (e.interval.mean, e.interval.low, e.interval.high))
                ),
                *_csv_over_next(e),
                e.playoff_matches,
            ]
        )
    for name in board.unrated:
        writer.writerow(["", csv_text_cell(name), *[""] * (len(_CSV_COLUMNS) - 2)])
    return out.getvalue()


# --------------------------------------------------------------------------- terminal


def terminal_text(text: str) -> str:
    """Untrusted text for a terminal: :func:`referee.text.printable`."""
    return printable(text)


def to_rich_table(board: Leaderboard) -> Group:
    """The terminal table, narrow enough for 80 columns, and the notes under it.

    Average places and first places are left to the other formats: at one table size the
    mean score says what the average place does (``mean = (k - avg) / (k - 1)``). The
    notes follow the table rather than being its caption: a caption is wrapped to the
    width rich computes for the table, which with collapsed padding can exceed the
    terminal by a column, and the last letter of a line was cut off.
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
    table = Table(
        title=Text(
            f"{terminal_text(board.tournament)} · {terminal_text(board.rules)} · "
            f"{board.matches} matches"
        ),
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        show_edge=False,
    )
    table.add_column("#", justify="right", min_width=1, no_wrap=True)
    table.add_column("bot", overflow="fold", min_width=10)
    level = f"{board.confidence * 100:g}%"
    for column in ("score", "mu ± sigma", f"mean [{level}]"):
        table.add_column(column, justify="right", no_wrap=True)
    # "≈ 0.13 (next ahead)" may wrap at its spaces on a narrow terminal, never mid-word.
    table.add_column("over next", justify="right", min_width=6)
    table.add_column("played", justify="right", no_wrap=True)
    table.add_column("forfeits", overflow="fold", min_width=8)
    for e in board.entries:
        forfeits = str(e.forfeits)
        if e.faults:
            forfeits += f" ({_faults_text(e.faults)})"
        interval = "—"
        if e.interval is not None:
            interval = f"{e.interval.mean:.2f} [{e.interval.low:.2f},{e.interval.high:.2f}]"
        table.add_row(
            str(e.rank),
            Text(terminal_text(e.name)),
            f"{e.score:.2f}",
            f"{e.mu:.2f}±{e.sigma:.2f}",
            interval,
            e.over_next_text,
            str(e.matches),
            Text(forfeits),
        )
    for name in board.unrated:
        table.add_row("", Text(terminal_text(name)), "", "", "unrated", "", "", "")
    return Group(table, Text("\n".join(notes)))
