"""What a publication reads: a tournament's file and everything its results store holds.

:func:`load_results` opens the store once (it may be in use by a running tournament: WAL
lets it read while the run writes) and returns a :class:`StoredTournament` snapshot: the
finished matches (those that count, and apart those retired by a replacement), each fault
with its evidence, every match's state and timings, the deal commitments, the entrants'
records, the replacements and each bot's reply times. :func:`ranking_input` is what its
standings are computed from (:mod:`referee.ranking.standings`), and :func:`leaderboard`
adds to them the tournament's settings and what else no ranking decides. The terminal,
Markdown, JSON and CSV leaderboards and the static site all start here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from referee import __version__
from referee.errors import UsageError
from referee.publish.leaderboard import DealCommitment, Leaderboard, retired_versions
from referee.publish.settings import BotRecord, TournamentSettings
from referee.publish.stats import reply_stats
from referee.ranking.standings import RankingInput, Standings, standings
from referee.results import ReplyTimes
from referee.specs import (
    RANK_NOT_RECORDED,
    EntrantRecord,
    MatchSpec,
    Replacement,
    StoredFault,
    StoredMatch,
)
from referee.tournament.deals import BeaconDeclaration
from referee.tournament.model import Plan
from referee.tournament.store import DATABASE, ChainLink, MatchRecord, Store

if TYPE_CHECKING:
    from referee.rules import ResolvedRules
    from referee.tournament.file import Tournament, TournamentFile

__all__ = [
    "EntrantFiles",
    "PublishedTournament",
    "SecretRecord",
    "StoredTournament",
    "entrant_authors",
    "entrant_fingerprints",
    "leaderboard",
    "load_results",
    "ranking_input",
    "tournament_settings",
]


class EntrantFiles(Protocol):
    """An entrant as the pages name it: its name, declared version and files' SHA-256."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str | None: ...
    @property
    def sha256(self) -> str: ...


class PublishedTournament(Protocol):
    """What a publication reads of a tournament: its file, rules and entrants in file
    order. A loaded :class:`~referee.tournament.file.Tournament` is one; ``referee verify``
    makes one from a site's stored plan, without the bots
    (:mod:`referee.verify.pages`)."""

    @property
    def name(self) -> str: ...
    @property
    def file(self) -> TournamentFile: ...
    @property
    def rules(self) -> ResolvedRules: ...
    @property
    def entrants(self) -> list[str]: ...
    @property
    def bots(self) -> Sequence[EntrantFiles]: ...


@dataclass(frozen=True)
class StoredTournament:
    """A snapshot of a tournament's results, as one publication shows them."""

    tournament: PublishedTournament
    results_dir: Path
    matches: tuple[StoredMatch, ...]
    """The finished matches, in key order."""
    faults: tuple[StoredFault, ...]
    records: dict[str, MatchRecord]
    """Every stored match's status and timings (finished or not), by key."""
    specs: dict[str, MatchSpec]
    """Every stored match spec, by key (play-off rounds included once planned)."""
    deals: tuple[DealCommitment, ...]
    entrants: dict[str, EntrantRecord]
    """The entrants as their results were played (version, SHA-256), by name."""
    published: float
    """When this snapshot is published (a Unix time, from the clock :func:`load_results`
    is given): the one time every page and leaderboard of one publication names, so that
    ``referee verify`` renders them again with the time the site records
    (:mod:`referee.publish.sitefiles`)."""
    plan: Plan | None = None
    """The tournament plan stored with the results (what the schedule is computed from)."""
    secrets: tuple[SecretRecord, ...] = ()
    """Every deal secret as it may be published: an unrevealed one without its secret."""
    attempts: dict[str, int] = field(default_factory=dict)
    """The deal attempt each finished match was played on (0: its scheduled deal)."""
    secret_of: dict[str, int] = field(default_factory=dict)
    """Which secret dealt each stored match, by key."""
    chain: tuple[ChainLink, ...] = ()
    """The results chain, in the order the results were stored."""
    reply_times: dict[str, ReplyTimes] = field(default_factory=dict)
    """Each bot's reply times over its finished matches, by name."""
    kit_replaced: dict[str, tuple[int, int]] = field(default_factory=dict)
    """For each entrant whose bot kit replaced decisions with safe ones (the kits' safety
    net): in how many finished matches, and how many decisions in all."""
    retired: tuple[StoredMatch, ...] = ()
    """The finished matches retired by a replacement, in key order: in no rating."""
    replacements: tuple[Replacement, ...] = ()
    """Every replacement of an entrant's files, in the order they were made."""
    generations: dict[str, int] = field(default_factory=dict)
    """The replacement each stored match was added under (0: before any), by key."""

    @property
    def chain_entries(self) -> dict[str, str]:
        """Each chained result's entry text (:mod:`referee.tournament.chain`), by key."""
        return {link.key: link.entry for link in self.chain if link.key is not None}

    @property
    def logs_dir(self) -> Path:
        return self.results_dir / "logs"

    def log_path(self, key: str) -> Path:
        """Where the store keeps the log of ``key`` (as the store's own ``log_path``)."""
        return self.logs_dir / f"{key.replace('/', '_')}.jsonl"

    @property
    def deals_revealed(self) -> bool:
        """Whether every deal secret is revealed: the tournament is complete."""
        return bool(self.deals) and all(d.secret is not None for d in self.deals)

    @property
    def counting(self) -> dict[str, MatchRecord]:
        """The stored matches that count (none retired by a replacement), by key."""
        return {key: r for key, r in self.records.items() if r.retired is None}

    @property
    def in_progress(self) -> bool:
        """Matches are still to be played (or retried), or the deals are not revealed yet
        (a retired match is never played: nothing waits for it)."""
        counting = self.counting.values()
        return any(r.status != "done" for r in counting) or not self.deals_revealed


@dataclass(frozen=True)
class SecretRecord:
    """A deal secret as a publication may show it: ``secret_hex`` only once revealed (the
    unrevealed secret never leaves the store)."""

    id: int
    commitment: str
    secret_hex: str | None
    declared: BeaconDeclaration | None
    beacon: str | None


def load_results(
    tournament: Tournament,
    results_dir: Path | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> StoredTournament:
    """Read the stored results of ``tournament`` (from ``results_dir`` when given), to be
    published at ``clock()`` (the wall clock, a Unix time; a test's, pinned).

    Raises ``UsageError`` when there are none yet, naming the command that makes them.
    """
    folder = results_dir or tournament.results_dir
    if not (folder / DATABASE).exists():
        raise UsageError(
            f"no results yet for {tournament.name} ({folder} has none); "
            f"run: referee tournament run {tournament.path}"
        )
    with Store(folder) as store, store.snapshot():
        matches = store.completed()
        every = store.completed(include_retired=True)
        replacements = store.replacements()
        generations = store.generations()
        secrets = store.deal_secrets()
        faults = store.fault_reports()
        records = store.match_records()
        specs = store.specs()
        entrants = store.entrants()
        stored_plan = store.plan()
        attempts = store.deal_attempts()
        secret_of = store.secret_of()
        links = store.chain()
        reply_times = store.reply_times()
        kit_replaced = store.kit_replacements()
    plan = None if stored_plan is None else Plan.from_json(stored_plan, folder / DATABASE)
    return StoredTournament(
        tournament=tournament,
        results_dir=folder,
        matches=tuple(matches),
        faults=tuple(faults),
        records=records,
        specs=specs,
        deals=tuple(
            DealCommitment(
                s.commitment,
                s.secret.hex() if s.revealed is not None else None,
                s.declared.source if s.declared else None,
                s.beacon,
            )
            for s in secrets
        ),
        entrants=entrants,
        published=clock(),
        plan=plan,
        secrets=tuple(
            SecretRecord(
                s.id,
                s.commitment,
                s.secret.hex() if s.revealed is not None else None,
                s.declared,
                s.beacon,
            )
            for s in secrets
        ),
        attempts=attempts,
        secret_of=secret_of,
        chain=tuple(links),
        reply_times=reply_times,
        kit_replaced=kit_replaced,
        retired=tuple(m for m in every if records[m.spec.key].retired is not None),
        replacements=tuple(replacements),
        generations=generations,
    )


def ranking_input(results: StoredTournament) -> RankingInput:
    """What the standings of ``results`` are computed from: its counting matches, its
    entrants in file order, the tournament's ``[ratings]`` and ``[playoff]``, the authors,
    the fingerprints of the files and the rank after play-offs its stored plan records
    (:meth:`~referee.tournament.model.Plan.playoff_rank`: ``mu - 3 sigma`` for a folder
    stored before the rule was recorded, and for one without a plan)."""
    t = results.tournament
    f = t.file
    plan = results.plan
    return RankingInput(
        matches=results.matches,
        entrants=tuple(t.entrants),
        ratings=f.ratings,
        rules=t.rules,
        playoff=f.playoff,
        table_size=f.table_size,
        authors=entrant_authors(results.entrants),
        fingerprints=entrant_fingerprints(t, results.entrants),
        after_playoffs=RANK_NOT_RECORDED if plan is None else plan.playoff_rank(),
    )


def leaderboard(results: StoredTournament, ranked: Standings | None = None) -> Leaderboard:
    """The leaderboard of ``results``: its standings (``ranked``, or computed now by
    :func:`~referee.ranking.standings.standings`) with the tournament's settings, the deal
    commitments, the reply times and the replaced versions."""
    t = results.tournament
    if ranked is None:
        ranked = standings(ranking_input(results))
    return Leaderboard(
        tournament=t.name,
        rules=t.rules.name,
        standings=ranked,
        deals=results.deals,
        settings=tournament_settings(
            t, results.entrants, results.records.values(), published=results.published
        ),
        reply_times=reply_stats(results.reply_times, t.file.time.bank_ms),
        replaced=retired_versions(
            results.replacements, [results.records[m.spec.key].retired for m in results.retired]
        ),
    )


def entrant_fingerprints(
    tournament: PublishedTournament, stored: Mapping[str, EntrantRecord]
) -> dict[str, str]:
    """Each entrant's SHA-256: the one its results were played with, else its files' now."""
    found = {bot.name: bot.sha256 for bot in tournament.bots}
    found.update({name: record.sha256 for name, record in stored.items()})
    return found


def entrant_authors(entrants: Mapping[str, EntrantRecord]) -> dict[str, str]:
    """Each entrant's author where one was named (for the collusion check's rows).

    An entrant nobody claimed is its own author (the store records its name): those are
    left out, so a tournament without authors shows no author column.
    """
    return {
        name: record.author
        for name, record in entrants.items()
        if record.author and record.author != name
    }


def tournament_settings(
    tournament: PublishedTournament,
    stored: dict[str, EntrantRecord],
    records: Iterable[MatchRecord] = (),
    *,
    published: float,
) -> TournamentSettings:
    """The settings published with the leaderboard of ``tournament``.

    Each bot's version and SHA-256 are those its stored results were played with (the
    files as they are now for an entrant without results yet); ``records`` (the stored
    matches' :class:`MatchRecord`) say when the finished matches were played, and
    ``published`` when this is published.
    """
    f = tournament.file
    overrides = {} if isinstance(f.rules, str) else dict(f.rules)
    preset = str(overrides.pop("preset", tournament.rules.name))
    bots = []
    for bot in tournament.bots:
        record = stored.get(bot.name)
        if record is not None:
            bots.append(BotRecord(bot.name, record.version, record.sha256))
        else:
            bots.append(BotRecord(bot.name, bot.version, bot.sha256))
    done = [r for r in records if r.status == "done"]
    started = [r.started for r in done if r.started is not None]
    finished = [r.finished for r in done if r.finished is not None]
    return TournamentSettings(
        preset=preset,
        overrides=overrides,
        table_size=f.table_size,
        format=f.format,
        deals=f.deals,
        seed=f.seed,
        move_ms=f.time.move_ms,
        bank_ms=f.time.bank_ms,
        hello_ms=f.time.hello_ms,
        sandbox=f.sandbox.backend,
        memory_mb=f.sandbox.memory_mb,
        bots=tuple(bots),
        referee_version=__version__,
        played_from=min(started) if started else None,
        played_to=max(finished) if finished else None,
        candidate=f.candidate,
        gauntlet_matches=f.matches,
        ratings=f.ratings.model_dump(exclude_unset=True),
        tables=f.tables,
        published=published,
    )
