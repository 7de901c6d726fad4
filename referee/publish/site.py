"""The static site of a tournament: leaderboard, crosstable, rating history, a page per bot,
the match list and a replay viewer per match.

:func:`publish_site` writes it from a :class:`~referee.publish.source.StoredTournament`
snapshot into one folder that works opened from disk (``file://``) and served by any static
server: nothing is loaded from the network, and each match log travels as a script beside
its page (:mod:`referee.publish.replaydata`), since browsers refuse ``fetch()`` of local
files. Layout::

    index.html              leaderboard, settings, deals, rating history, crosstable
    collusion.html          the collusion check: every pair that met, flagged or not
    matches.html            every match with its standings, filterable by bot
    bots/<bot>.html         a bot's matches, places, head-to-head and faults, and its history:
                            the versions replaced (``--replace``) and the retired matches
    matches/<table>_dNNN_rN.html|.js|.jsonl   a match: its page, its log as data, the log
    matches/<table>_dNNN_rN.stderr.js  what each bot wrote to stderr in it, as data
    static/                 style.css, site.js (sorting, filter, chart), replay.js
    leaderboard.md|json|csv the leaderboard in the other formats
    verification/           what ``referee verify SITE`` checks it with: the plan, the
                            deals, a manifest of every match, the results chain
                            (:mod:`referee.publish.evidence`), and every file of the site
                            with the page inputs no log holds (``site.json``,
                            :mod:`referee.publish.sitefiles`), so that verify renders
                            every page again (:func:`render_site`) and compares it
    publish-cache.json      what each match file was made from, for the next publication
                            (:mod:`referee.publish.reuse`; verify checks its SHA-256 only)

Every file goes through :class:`~referee.publish.writer.PageWriter`, the one writer a
league's site (:mod:`referee.publish.league_site`) and ``referee verify``'s renderer use
too: this module decides what the pages show, the writer renders and records them.

Bot names, stderr and replies are untrusted: the templates are Jinja2 with autoescaping
everywhere, the pages forbid inline scripts (a Content-Security-Policy allowing only the
site's own script files), and the scripts write data with ``textContent`` only. File names
are built from slugs that hold only ``a-z0-9-`` (:mod:`referee.publish.paths`), and the
site is written into a fresh folder that takes ``--out``'s place when complete, every file
a new one, never into the results folder (:mod:`referee.publish.folder`).

The ranking (TrueSkill over every match, then the bootstrap) is most of the work: the
standings (:mod:`referee.ranking.standings`) are computed meanwhile, for a large tournament
partly in another process (:func:`~referee.ranking.standings.standings_meanwhile`), while
the match pages (and the verification files, which do not need them) are written.
Published again into the same folder, the match pages and scripts whose inputs are
unchanged are copied from the site there, each checked against what it was recorded to hold
(:mod:`referee.publish.reuse`): a page's inputs are exactly its template's context, which
is why a match page gets only what it shows of the matches it links (:class:`MatchLink`)
and the slugs of its own bots.

A replay shows every hand, so while the tournament runs, a match whose deal (``spec.deal_id``)
still has matches to play is listed without its replay, and without anything else that may
show its cards: the bots' stderr beside its log, its faults' details, reply lines and
stderr reports (:class:`FaultView`). Publishing again when the deal is played adds them.

A match retired by a replacement (:mod:`referee.tournament.replacement`) keeps its page and
replay, marked retired; it is listed apart on the match list and in the history of each bot
that sat at it, and counted nowhere else (rankings, places, head-to-head, faults).
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from referee.errors import InfrastructureError
from referee.publish.evidence import EVIDENCE, verification_files
from referee.publish.folder import SITE_MARKER, SiteFolder, check_target
from referee.publish.history import history_chart
from referee.publish.leaderboard import (
    Leaderboard,
    leaderboard_notes,
    to_csv,
    to_json,
    to_markdown,
)
from referee.publish.paths import bot_slugs, match_names
from referee.publish.reuse import CACHE, Reuse, fingerprint, inputs_key
from referee.publish.settings import format_time
from referee.publish.sitefiles import SITE_FILES, site_document
from referee.publish.source import StoredTournament, leaderboard, ranking_input
from referee.publish.stats import ReplyStats
from referee.publish.writer import PageWriter, SiteWriter
from referee.ranking.collusion import MIN_EXCESS
from referee.ranking.records import PairRecord, pair_records, place_counts
from referee.ranking.standings import Standings, standings_meanwhile
from referee.specs import (
    MatchSpec,
    Replacement,
    StoredFault,
    StoredMatch,
    deal_key,
    playoff_round,
)
from referee.stderrlog import stderr_path
from referee.text import ordinal
from referee.tournament.replacement import key_generation

__all__ = [
    "SITE_MARKER",
    "WITHHELD_NOTE",
    "FaultGroup",
    "FaultView",
    "MatchFiles",
    "MatchView",
    "SeatView",
    "SiteReport",
    "SiteWriter",
    "match_label",
    "publish_site",
    "render_site",
]


@dataclass(frozen=True)
class SeatView:
    """One seat of a match as the pages show it (``fault_line``: the log line of its fault)."""

    seat: int
    name: str
    slug: str | None
    place: int
    score: int
    forfeit: bool
    fault_kind: str | None
    fault_detail: str | None
    fault_line: int | None


@dataclass(frozen=True)
class FaultView:
    """A fault as a bot's page shows it. While other matches dealt the same cards are still
    to be played (``held``), everything that may show the cards is left out: the detail
    ("7C is not in your hand"), the reply line and the stderr report (a bot may print its
    hand); the kind, the seat, the request id and the time taken stay."""

    key: str
    seat: int
    name: str
    kind: str
    held: bool
    request_id: int | None
    elapsed_ms: int | None
    detail: str | None
    reply: str | None
    stderr: str | None
    request: str | None = None
    """The request it answered (the last written to the bot), as the bot read it: one JSON
    line; ``None`` before any request, in an older store, or while held."""
    request_label: str = ""
    """``act 12 (play), round 3``, and whether it is the request failed or the last one
    before the fault (a crash between requests)."""
    explained: tuple[str, ...] = ()
    """The fault told as ``bot check`` tells it (:func:`referee.explain.explain_fault`,
    its stderr shown apart), where the page explains it (a league's, for the first of
    each kind)."""


@dataclass(frozen=True)
class FaultGroup:
    """A bot's faults of one kind with the same reply (or none): listed once, with every
    occurrence under it. Faults held back (an open deal) form groups of their own."""

    kind: str
    reply: str | None
    held: bool
    faults: tuple[tuple[FaultView, MatchView | None], ...]
    count: int | None = None
    """How many faults the group holds, where it lists only the first (a league's)."""


@dataclass(frozen=True)
class MatchView:
    """A finished match as the pages show it; ``replay`` is ``ok``, ``withheld`` (its deal
    is still being played: nothing that shows its cards is published), ``missing`` or
    ``unreadable`` (``replay_note`` says why)."""

    key: str
    stem: str
    label: str
    table: tuple[str, ...]
    seats: tuple[SeatView, ...]
    rounds: int | None
    duration: float | None
    finished: str | None
    replay: str
    replay_note: str
    filter_keys: str
    """The bots' slugs, space-separated, for the match list's filter."""
    deal_id: str = ""
    table_deal: str = ""
    """The table deal it is a rotation of (:func:`referee.specs.deal_key`)."""
    stderr: str = "none"
    """The bots' stderr beside the replay: ``ok`` (published), ``none`` (no replay, or a
    match played before the referee kept it), ``unreadable``, or ``private`` (``[publish]
    stderr = "private"``: no bot's stderr is published)."""
    retired: int | None = None
    """The replacement that retired it (``None``: it counts)."""


@dataclass(frozen=True)
class MatchLink:
    """Another match as a match page links it (its rotations, the same cards elsewhere):
    all the page may read of it, so nothing else of it is among the page's inputs."""

    stem: str
    label: str
    table: tuple[str, ...]


@dataclass(frozen=True)
class VersionView:
    """A replaced version of a bot as its history shows it."""

    replacement: Replacement
    replaced: str | None
    """When it was replaced, as the pages write times."""
    matches: tuple[MatchView, ...]
    """Its finished matches, retired by the replacement."""


@dataclass(frozen=True)
class SiteReport:
    """What :func:`publish_site` wrote."""

    out: Path
    index: Path
    matches: int
    replays: int
    withheld: int
    missing: int
    bots: int
    index_bytes: int
    total_bytes: int
    largest: tuple[str, int]
    reused: int = 0
    """Per-match files (pages, log and stderr scripts) copied from the site published
    before (:mod:`referee.publish.reuse`)."""
    rendered: tuple[str, ...] = ()
    """The per-match files made this time, by their path in the site."""


class MatchFiles(Protocol):
    """Where a publication reads each match's log and the bots' stderr beside it: the
    results folder (:class:`StoredFiles`), or, when ``referee verify`` renders a site
    again, the site itself (:mod:`referee.verify.pages`)."""

    def log_name(self, key: str) -> str:
        """The log's file name, as a page names it when the log cannot be had."""
        ...

    def log(self, key: str) -> bytes:
        """The log of ``key``; ``OSError`` when it cannot be read."""
        ...

    def stderr(self, key: str, stem: str) -> bytes:
        """The stderr file of ``key`` (:mod:`referee.stderrlog`; ``stem``: its files' name
        in the site); ``FileNotFoundError`` when none was kept, ``OSError`` when unreadable."""
        ...


class StoredFiles:
    """:class:`MatchFiles` from the results folder."""

    def __init__(self, results: StoredTournament) -> None:
        self.results = results

    def log_name(self, key: str) -> str:
        return self.results.log_path(key).name

    def log(self, key: str) -> bytes:
        return self.results.log_path(key).read_bytes()

    def stderr(self, key: str, stem: str) -> bytes:
        return stderr_path(self.results.log_path(key)).read_bytes()


class _Site:
    """One publication: the snapshot, the names of its files, and the pages as written."""

    def __init__(
        self,
        results: StoredTournament,
        out: Path,
        reuse: Reuse,
        files: MatchFiles | None = None,
    ) -> None:
        self.results = results
        self.files: MatchFiles = files if files is not None else StoredFiles(results)
        self.out = out
        self.reuse = reuse
        self.pages = PageWriter(
            {"tournament": results.tournament.name, "in_progress": results.in_progress}, reuse
        )
        self.env = self.pages.env
        entrants = results.tournament.entrants
        finished = (*results.matches, *results.retired)
        seated = {s.name for m in finished for s in m.seats}
        # Slugs in the file's order, not the ranking's: a bot's address never changes.
        self.names = [*entrants, *sorted(seated - set(entrants))]
        self.slugs = bot_slugs(self.names)
        self.in_progress = results.in_progress
        self.stderr_private = results.tournament.file.publish.stderr == "private"
        self.stems = match_names({m.spec.key: m.spec.table for m in finished})
        self.complete_deals = _complete_deals(results)
        self.views: dict[str, MatchView] = {}
        self.replays = self.withheld = self.missing = 0
        self.logs: dict[str, tuple[str, str]] = {}
        """The logs published: key to (file name in ``matches/``, SHA-256)."""
        self._board: Leaderboard | None = None
        self._bots: _BotParts | None = None
        self.write = self.pages.write
        self.render = self.pages.render

    def use(self, board: Leaderboard) -> None:
        """The leaderboard is ready: bots are listed in its order from now on."""
        self._board = board
        ranked = [*(e.name for e in board.entries), *board.unrated]
        self.names = [*ranked, *(n for n in self.names if n not in ranked)]

    @property
    def board(self) -> Leaderboard:
        assert self._board is not None, "the ranking is used before it is ready"
        return self._board

    def into(self, folder: SiteWriter) -> None:
        """Write the site's files into ``folder`` from now on."""
        self.pages.into(folder)

    def templates(self) -> None:
        """Compile now the templates of the pages that wait for the ranking (Jinja keeps
        them): the compiling is taken off the end of a publication, done while the ranking is
        still being computed (docs/performance.md, "Publishing")."""
        for name in ("bot.html", "index.html", "collusion.html"):
            self.env.get_template(name)

    def static_files(self) -> None:
        """The site's own style and scripts, copied from the package."""
        self.pages.static_files()

    # -- matches -----------------------------------------------------------------------

    def match_pages(self, progress: Callable[[int, int], None] | None) -> None:
        """A page per finished match, with its log as a script when it may be shown, and
        links to the other matches of its deal (the same cards, at other tables) and of its
        table deal (the other seat rotations). Retired matches have theirs too."""
        matches = (*self.results.matches, *self.results.retired)
        by_deal: dict[str, list[str]] = {}
        by_table_deal: dict[str, list[str]] = {}
        for match in matches:
            by_deal.setdefault(match.spec.deal_id, []).append(match.spec.key)
            by_table_deal.setdefault(deal_key(match.spec.key), []).append(match.spec.key)
        for done, match in enumerate(matches, start=1):
            self.views[match.spec.key] = self._match_view(match)
            if progress is not None:
                progress(done, 2 * len(matches))
        links = {
            key: MatchLink(view.stem, view.label, view.table) for key, view in self.views.items()
        }
        for done, match in enumerate(matches, start=len(matches) + 1):
            view = self.views[match.spec.key]
            rotations = [k for k in by_table_deal[view.table_deal] if k != view.key]
            same_cards = [k for k in by_deal[view.deal_id] if k != view.key and k not in rotations]
            # The context is the page's inputs: only the slugs of the bots it links.
            context = {
                "root": "../",
                "match": view,
                "bot_slug": {s.name: s.slug for s in view.seats if s.slug is not None},
                "same_cards": [links[k] for k in same_cards],
                "rotations": [links[k] for k in rotations],
            }
            inputs = inputs_key(
                "match.html", self.results.tournament.name, self.in_progress, context
            )
            if not self.pages.reused_file("matches", view.stem, ".html", inputs):
                page = self.pages.page("match.html", context)
                self.pages.made_file("matches", view.stem, ".html", inputs, page)
            if progress is not None:
                progress(done, 2 * len(matches))

    def _match_view(self, match: StoredMatch) -> MatchView:
        key = match.spec.key
        stem = self.stems[key]
        replay, note, fault_lines = self._replay(match.spec, stem)
        held = replay == "withheld"
        stderr = self._stderr(key, stem) if replay == "ok" else "none"
        record = self.results.records.get(key)
        seats = seat_views(match, self.slugs, fault_lines, held=held)
        return MatchView(
            key=key,
            stem=stem,
            label=match_label(key, match.spec.deal, match.spec.rotation),
            table=match.spec.table,
            seats=seats,
            rounds=record.rounds if record else None,
            duration=record.duration if record else None,
            finished=format_time(record.finished) if record and record.finished else None,
            replay=replay,
            replay_note=note,
            filter_keys=" ".join(self.slugs[name] for name in match.spec.table),
            deal_id=match.spec.deal_id,
            table_deal=deal_key(key),
            stderr=stderr,
            retired=record.retired if record else None,
        )

    def _replay(self, spec: MatchSpec, stem: str) -> tuple[str, str, dict[int, int]]:
        """Publish the log of ``spec`` if it may be shown: (state, note, fault lines)."""
        key = spec.key
        if spec.deal_id not in self.complete_deals:
            self.withheld += 1
            return "withheld", WITHHELD_NOTE, {}
        try:
            raw = self.files.log(key)
        except OSError:
            self.missing += 1
            name = self.files.log_name(key)
            return "missing", f"its log {name} is not in the results folder", {}
        published = self.pages.log_files(stem, raw)
        if published.state != "ok":
            self.missing += 1
            return published.state, published.note, {}
        self.logs[key] = (f"{stem}.jsonl", published.digest)
        self.replays += 1
        return "ok", "", published.fault_lines

    def _stderr(self, key: str, stem: str) -> str:
        """Publish the bots' stderr of a match whose replay is published: its state."""
        if self.stderr_private:
            return "private"
        return self.pages.stderr_file(stem, lambda: self.files.stderr(key, stem))

    # -- the other pages ---------------------------------------------------------------

    def index_page(self) -> None:
        results = self.results
        board = self.board
        ranked = [e.name for e in board.entries]
        chart = history_chart(board.standings.history, ranked)
        pairs = self._bots.pairs if self._bots is not None else pair_records(results.matches)
        counts = {status: 0 for status in ("done", "running", "pending", "failed")}
        for record in results.counting.values():
            counts[record.status] += 1
        self.render(
            "index.html",
            "",
            "index",
            root="",
            board=board,
            settings=board.settings,
            slug=self.slugs,
            chart=chart,
            crosstable=[[pairs.get((a, b)) for b in ranked] for a in ranked],
            ranked=ranked,
            counts=counts,
            notes=leaderboard_notes(board),
        )

    def matches_page(self) -> None:
        views = [self.views[m.spec.key] for m in self.results.matches]
        self.render(
            "matches.html",
            "",
            "matches",
            root="",
            matches=views,
            retired=[self.views[m.spec.key] for m in self.results.retired],
            names=self.names,
            slug=self.slugs,
        )

    def bot_rows(self) -> None:
        """What the bot pages show that needs no ranking: each bot's matches (their rows
        rendered now, the bulk of a page), places, head-to-head records and faults; made
        while the ranking is computed, the pages once it is ready (:meth:`bot_pages`)."""
        matches = self.results.matches
        mine: dict[str, list[tuple[MatchView, SeatView]]] = {}
        for match in matches:
            view = self.views[match.spec.key]
            for seat in view.seats:
                mine.setdefault(seat.name, []).append((view, seat))
        faults: dict[str, list[StoredFault]] = {}
        for fault in self.results.faults:
            faults.setdefault(fault.name, []).append(fault)
        rows = self.env.get_template("_bot_rows.html")
        self._bots = _BotParts(
            pairs=pair_records(matches),
            places=place_counts(matches),
            faults=faults,
            rows={name: rows.render(matches=mine.get(name, []), root="../") for name in self.names},
        )

    def bot_pages(self) -> None:
        parts = self._bots
        assert parts is not None, "the bot pages are made before their rows"
        settings = self.board.settings
        records = {b.name: b for b in settings.bots} if settings else {}
        entries = {e.name: e for e in self.board.entries}
        replies: dict[str, ReplyStats] = self.board.reply_times
        size = self.results.tournament.file.table_size
        for name in self.names:
            self.render(
                "bot.html",
                "bots",
                self.slugs[name],
                root="../",
                name=name,
                entry=entries.get(name),
                replies=replies.get(name),
                record=records.get(name),
                match_rows=parts.rows[name],
                places=_place_rows(parts.places.get(name), size),
                head_to_head=list(self._head_to_head(name, parts.pairs)),
                kit=self.results.kit_replaced.get(name),
                faults=_fault_groups(
                    [(self._fault(f), self.views.get(f.key)) for f in parts.faults.get(name, [])]
                ),
                stderr_private=self.stderr_private,
                versions=self._versions(name),
                retired=[
                    (view, seat)
                    for match in self.results.retired
                    for view in [self.views[match.spec.key]]
                    for seat in view.seats
                    if seat.name == name
                ],
                slug=self.slugs,
            )

    def _versions(self, name: str) -> list[VersionView]:
        """The versions of ``name`` replaced (``--replace``), oldest first."""
        return [
            VersionView(
                replacement=r,
                replaced=format_time(r.created) if r.created else None,
                matches=tuple(
                    self.views[m.spec.key]
                    for m in self.results.retired
                    if self.results.records[m.spec.key].retired == r.generation
                    and name in m.spec.table
                ),
            )
            for r in self.results.replacements
            if r.name == name
        ]

    def _fault(self, fault: StoredFault) -> FaultView:
        """``fault`` as its page may show it now (see :class:`FaultView`)."""
        spec = self.results.specs.get(fault.key)
        held = spec is None or spec.deal_id not in self.complete_deals
        return fault_view(fault, held=held, stderr_private=self.stderr_private)

    def _head_to_head(
        self, name: str, pairs: dict[tuple[str, str], PairRecord]
    ) -> Iterator[tuple[str, PairRecord]]:
        for other in self.names:
            record = pairs.get((name, other))
            if other != name and record is not None:
                yield other, record

    def collusion_page(self) -> None:
        """The collusion check's table (:mod:`referee.ranking.collusion`)."""
        check = self.board.collusion
        self.render(
            "collusion.html",
            "",
            "collusion",
            root="",
            check=check,
            authors=any(p.a_author or p.b_author for p in check.pairs),
            margin=MIN_EXCESS,
            slug=self.slugs,
        )

    def verification_files(self) -> None:
        """What ``referee verify SITE`` needs (:mod:`referee.publish.evidence`)."""
        files = verification_files(self.results, self.logs, self.complete_deals)
        for stem, data in files.items():
            self.write(EVIDENCE, stem, ".json", data)

    def site_files(self) -> None:
        """The list of every file written, and the page inputs no log holds
        (:mod:`referee.publish.sitefiles`): last, once every file is written."""
        stderr = {key: view.stderr for key, view in self.views.items()}
        document = site_document(self.results, self.pages.digests, stderr, self.complete_deals)
        self.write(EVIDENCE, SITE_FILES, ".json", document)

    def reuse_cache(self) -> None:
        """What the next publication may reuse (:mod:`referee.publish.reuse`)."""
        self.write("", CACHE, ".json", self.reuse.cache())

    def leaderboard_files(self) -> None:
        board = self.board
        for suffix, text in (
            (".md", to_markdown(board)),
            (".json", to_json(board)),
            (".csv", to_csv(board)),
        ):
            self.write("", "leaderboard", suffix, text.encode("utf-8"))


def publish_site(
    results: StoredTournament,
    out: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    background_from: int | None = None,
    site_folder: Callable[[Path], SiteFolder] = SiteFolder,
    reuse: bool = True,
) -> SiteReport:
    """Write the site of ``results`` into ``out``; ``progress(done, total)`` per match page.

    ``out`` must be new, empty, or a site published before, and outside the results folder
    (:func:`~referee.publish.folder.check_target`). The site is written into a fresh folder
    beside it and takes its place only when complete (:mod:`referee.publish.folder`): an
    error half-way leaves ``out`` as it was. Raises ``UsageError`` for a wrong ``out``, or
    when Jinja2 (the ``site`` extra) is missing; ``InfrastructureError`` when the disk
    refuses a write (full, read-only, not permitted). From ``background_from`` matches
    (default :data:`BACKGROUND_FROM`) the ranking is computed in a spawned process, so a
    script calling this must guard its entry point (``if __name__ == "__main__":``), as for
    a tournament run. ``site_folder`` makes the folder the site is written into
    (:class:`~referee.publish.folder.SiteFolder`; a test's, to fail a write).

    With ``reuse`` (the default), the per-match files of the site published in ``out``
    before whose inputs are unchanged are copied from it instead of made again
    (:mod:`referee.publish.reuse`): the site is the same, byte for byte, as one made whole.
    """
    if background_from is None:
        background_from = BACKGROUND_FROM
    target = check_target(out, results.results_dir)
    cache = Reuse(fingerprint())
    site = _Site(results, target, cache)
    existed = target.exists()
    try:
        with (
            _collector_spares_results(),
            cache,
            site_folder(target) as folder,
            standings_meanwhile(
                ranking_input(results), elsewhere=len(results.matches) >= background_from
            ) as ranked,
        ):
            if reuse and existed:
                cache.open(target)
            site.into(folder)
            _write_files(site, progress, lambda: leaderboard(results, ranked()))
            folder.commit()
    except OSError as exc:  # the disk, not the results: say so, in one line
        kept = "the site published before is unchanged" if existed else "nothing was kept"
        raise InfrastructureError(
            f"cannot write the site {out}: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}; {kept}"
        ) from exc
    return _report(site)


def _write_files(
    site: _Site,
    progress: Callable[[int, int], None] | None,
    board: Callable[[], Leaderboard],
    *,
    evidence: bool = True,
) -> None:
    """Every file of the site, in the order that lets the ranking be computed meanwhile;
    ``evidence``: with the verification files and the file list."""
    site.static_files()
    # Meanwhile the ranking is computed: what does not need it comes first.
    site.match_pages(progress)
    if evidence:
        site.verification_files()
    site.matches_page()
    site.reuse_cache()  # the match files' record: all of them are written
    site.bot_rows()
    site.templates()
    site.use(board())
    site.bot_pages()
    site.index_page()
    site.collusion_page()
    site.leaderboard_files()
    if evidence:
        site.site_files()


def render_site(
    results: StoredTournament,
    writer: SiteWriter,
    files: MatchFiles,
    *,
    ranked: Standings | None = None,
) -> dict[str, str]:
    """Render every file of the site of ``results`` into ``writer`` as :func:`publish_site`
    does (the same :class:`_Site`, templates and order; nothing reused), reading the logs
    and stderr from ``files``, but for ``verification/`` (the evidence, which ``referee
    verify`` checks for what it says) and the reuse cache's record of an earlier site.
    ``referee verify`` compares what comes out with a site's files. ``ranked`` are the
    standings (:mod:`referee.ranking.standings`) when computed already.
    Returns the SHA-256 of each file written, by its path."""
    site = _Site(results, Path("."), Reuse(fingerprint()), files)
    site.into(writer)
    _write_files(site, None, lambda: leaderboard(results, ranked), evidence=False)
    return site.pages.digests


@contextlib.contextmanager
def _collector_spares_results() -> Iterator[None]:
    """While the site is written, the garbage collector leaves alone what exists now (the
    loaded results, the modules): its full passes went over them again and again
    (docs/performance.md, "Publishing"). They
    are handed back at the end; a caller that set objects aside itself is left as it is."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


BACKGROUND_FROM = 300
"""From this many matches the ranking is computed in another process while the match pages
are written (below it, starting that process costs more than it saves)."""


def _report(site: _Site) -> SiteReport:
    sizes = site.pages.sizes
    pages = {name: size for name, size in sizes.items() if name.endswith(".html")}
    largest = max(pages.items(), key=lambda item: item[1])
    return SiteReport(
        out=site.out,
        index=site.out / "index.html",
        matches=len(site.views),
        replays=site.replays,
        withheld=site.withheld,
        missing=site.missing,
        bots=len(site.names),
        index_bytes=sizes["index.html"],
        total_bytes=sum(sizes.values()),
        largest=largest,
        reused=site.pages.reused,
        rendered=tuple(site.pages.rendered),
    )


def match_label(key: str, deal: int, rotation: int) -> str:
    """``deal 3, rotation 1``; ``play-off round 2, deal 4, rotation 0``; a gauntlet's draw;
    ``deal 3, rotation 1, replayed (replacement 2)``."""
    where = f"deal {deal}, rotation {rotation}"
    if key_generation(key):
        where += f", replayed (replacement {key_generation(key)})"
    round_no = playoff_round(key)
    if round_no is not None:
        return f"play-off round {round_no + 1}, {where}"
    draw = next((p[1:] for p in key.split("/") if p[:1] == "m" and p[1:].isdigit()), None)
    if key.startswith("g/") and draw is not None:
        return f"gauntlet draw {int(draw)}, {where}"
    return where


WITHHELD_NOTE = "other matches dealt the same cards are still to be played"


def _complete_deals(results: StoredTournament) -> set[str]:
    """The deals (``spec.deal_id``) every match of which is finished: their cards may be
    shown. A deal with a match running, to play or failed is open (a retired match is never
    played: it keeps no deal open)."""
    open_deals = {
        results.specs[key].deal_id
        for key, record in results.counting.items()
        if record.status != "done" and key in results.specs
    }
    return {m.spec.deal_id for m in (*results.matches, *results.retired)} - open_deals


@dataclass(frozen=True)
class _BotParts:
    """What :meth:`_Site.bot_rows` prepares for the bot pages (by bot name)."""

    pairs: dict[tuple[str, str], PairRecord]
    places: dict[str, Counter[int | str]]
    faults: dict[str, list[StoredFault]]
    rows: dict[str, str]
    """Rendered from an escaping template: the page shows them as they are."""


def _fault_groups(
    faults: list[tuple[FaultView, MatchView | None]],
) -> list[FaultGroup]:
    """``faults`` grouped by kind and reply (see :class:`FaultGroup`), the largest group
    first, each in match order."""
    groups: dict[tuple[str, str | None, bool], list[tuple[FaultView, MatchView | None]]] = {}
    for fault, view in faults:
        groups.setdefault((fault.kind, fault.reply, fault.held), []).append((fault, view))
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][2]))
    return [
        FaultGroup(kind, reply, held, tuple(members)) for (kind, reply, held), members in ordered
    ]


def seat_views(
    match: StoredMatch, slugs: Mapping[str, str], fault_lines: Mapping[int, int], *, held: bool
) -> tuple[SeatView, ...]:
    """The seats of ``match`` as the pages show them: a fault's detail only once its cards
    may be shown (not ``held``), and the log line of each seat's fault."""
    return tuple(
        SeatView(
            seat=s.seat,
            name=s.name,
            slug=slugs.get(s.name),
            place=s.place,
            score=s.score,
            forfeit=s.forfeit,
            fault_kind=s.fault_kind,
            fault_detail=None if held else s.fault_detail,
            fault_line=fault_lines.get(s.seat),
        )
        for s in match.seats
    )


def fault_view(
    fault: StoredFault, *, held: bool, stderr_private: bool, explained: tuple[str, ...] = ()
) -> FaultView:
    """``fault`` as a page shows it: while ``held``, nothing that may show the cards (see
    :class:`FaultView`); its stderr report only where stderr is published."""
    return FaultView(
        key=fault.key,
        seat=fault.seat,
        name=fault.name,
        kind=fault.kind,
        held=held,
        request_id=fault.request_id,
        elapsed_ms=fault.elapsed_ms,
        detail=None if held else fault.detail,
        reply=None if held else fault.reply,
        stderr=None if held or stderr_private else fault.stderr,
        request=None if held or fault.request is None else _request_line(fault.request),
        request_label="" if fault.request is None else _request_label(fault),
        explained=() if held else explained,
    )


def _request_line(request: dict[str, Any]) -> str:
    """A request as the bot read it: one JSON line."""
    return json.dumps(request, ensure_ascii=False, separators=(",", ":"))


def _request_label(fault: StoredFault) -> str:
    """``act 12 (play), round 3``; says when it is not the request the bot failed."""
    request = fault.request or {}
    kind = request.get("kind")
    label = f"{request.get('type', 'request')} {request.get('id', '?')}"
    if isinstance(kind, str):
        label += f" ({kind})"
    if fault.round is not None and request.get("type") == "act":
        label += f", round {fault.round}"
    if fault.request_id is None or request.get("id") != fault.request_id:
        label = f"the last request before the fault: {label}"
    return label


def _place_rows(counts: Counter[int | str] | None, table_size: int) -> list[tuple[str, int, float]]:
    """``(label, count, share)`` for places 1..k and forfeits, for the bar chart."""
    if not counts:
        return []
    total = sum(counts.values())
    rows: list[tuple[str, int, float]] = []
    for place in range(1, table_size + 1):
        rows.append((ordinal(place), counts.get(place, 0), counts.get(place, 0) / total))
    rows.append(("forfeit", counts.get("forfeit", 0), counts.get("forfeit", 0) / total))
    return rows
