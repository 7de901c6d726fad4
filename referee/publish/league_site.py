"""A league's site, kept current while it runs: each publication renders only what is new.

``referee publish FILE --out DIR`` on a league, and ``referee league run FILE --publish DIR
--every MINUTES`` while it plays, write::

    index.html              the leaderboard: the entrants in the league, the unrated, the
                            suspended and the retired versions apart
                            (:mod:`referee.publish.league`)
    bots/<slug>.html        a version's page: rating, record, its other versions, its last
                            matches, and its faults: the first of each kind, told as ``bot
                            check`` tells it, with its replay and its stderr
    matches/<stem>.html|.js|.jsonl|.stderr.js   a match with its replay
    static/                 the site's style and scripts
    leaderboard.md|json|csv the leaderboard in the other formats
    league-site.json        what was published: the last batch, every bot's slug and record

**Only what is new.** A tournament's site is written whole each time
(:mod:`referee.publish.site`); a league's would grow without end. So a publication writes
the leaderboard (its cost grows with the entrants), the pages of the versions whose record
changed since the last one (they played, joined or left), and the match pages of the
batches settled since; pages written before stay as they are. Its cost grows with the
entrants and with what was played since, never with every match. A match is published
once its batch is settled: the deals of a batch are shared by its tables only, so every
match dealt the same cards is played by then, and a replay (which shows every hand) gives
nothing away.

**Stderr, public or private.** ``[publish] stderr = "private"`` publishes no bot's stderr:
no ``.stderr.js`` beside a replay, no stderr under a fault (the results folder keeps it for
each author). ``league-site.json`` records which the site was published with: when that
changes, every match page is written again, and the stderr scripts published before are
removed. A bot's faults are shown one per kind (:meth:`~referee.tournament.league.
LeagueLedger.first_faults`: a query per kind, never a list of them all), the tournament's
fault section (``_faults.html``) rendering them.

**Written in place, one file at a time**, through the writer a tournament's site uses
(:class:`~referee.publish.writer.PageWriter`: the same templates, static files and replay
files) into a :class:`~referee.publish.folder.LiveFolder`: each file is written under a
new name and renamed over the old one, so a reader sees the old page or the new, never half
of one, and nothing is written through a link. ``league-site.json`` goes last,
so a publication interrupted half-way is done again from the same batch. ``--out`` must be
new, empty, or a league's site (:func:`~referee.publish.folder.check_target`); a
tournament's site there is refused rather than mixed in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.errors import InfrastructureError, UsageError
from referee.explain import explain_fault, stored_fault_info
from referee.publish.folder import SITE_MARKER, LiveFolder, check_target
from referee.publish.league import LeagueBoard, LeagueEntry, league_notes, read_board, render_league
from referee.publish.paths import bot_slugs, is_slug, match_names
from referee.publish.replaydata import log_script
from referee.publish.settings import format_time
from referee.publish.site import (
    FaultGroup,
    MatchView,
    fault_view,
    seat_views,
)
from referee.publish.writer import STDERR_SCRIPT, PageWriter
from referee.specs import StoredMatch
from referee.stderrlog import stderr_path
from referee.tournament.league import LeagueLedger, batch_of
from referee.tournament.store import DATABASE, Store

if TYPE_CHECKING:
    from referee.tournament.file import Tournament

__all__ = [
    "LEAGUE_STATE",
    "LeagueSiteReport",
    "check_league_target",
    "match_stem",
    "publish_league",
]

LEAGUE_STATE = "league-site"
"""The stem of the file that says what was published (``league-site.json``)."""
RECENT = 30
"""Matches listed on a bot's page, latest first."""


@dataclass(frozen=True)
class LeagueSiteReport:
    """What a publication wrote: the batches it published, match and bot pages, bytes."""

    out: Path
    index: Path
    batches: tuple[int, int]
    """The batches whose matches it published, ``[first, last)``."""
    matches: int
    bots: int
    written: int
    """Bytes written by this publication."""


def publish_league(
    tournament: Tournament,
    out: Path,
    results_dir: Path | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> LeagueSiteReport:
    """Bring the league site in ``out`` up to date with the stored results (see the module
    docstring), naming ``clock()`` (the wall clock, a Unix time; a test's, pinned) as the
    time of publication. ``UsageError`` for a wrong ``out`` or a league with no results
    yet, ``InfrastructureError`` when the disk refuses a write."""
    folder = results_dir or tournament.results_dir
    if not (folder / DATABASE).exists():
        raise UsageError(
            f"no results yet for {tournament.name} ({folder} has none); "
            f"run: referee league run {tournament.path}"
        )
    target = check_league_target(out, folder)
    try:
        with LiveFolder(target) as site, Store(folder, readonly=True) as store, store.snapshot():
            return _Publication(tournament, store, site, clock()).write()
    except OSError as exc:
        raise InfrastructureError(
            f"cannot write the site {out}: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}"
        ) from exc


def check_league_target(out: Path, results_dir: Path) -> Path:
    """``out`` resolved, if a league's site may be written there (new, empty, or a league's
    site; never the results): else a ``UsageError`` saying why."""
    target = check_target(out, results_dir)
    marked = target.is_dir() and (target / SITE_MARKER).exists()
    if marked and not (target / f"{LEAGUE_STATE}.json").exists():
        raise UsageError(
            f"--out {out} holds a tournament's site, not a league's; name a new folder"
        )
    return target


def _state(folder: LiveFolder) -> dict[str, Any]:
    """What the last publication wrote (empty for a new site, or one unreadable: it is then
    published again from the start)."""
    raw = folder.read(f"{LEAGUE_STATE}.json")
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    # A slug is a file name of one bot's page: one the site could not have made, or a second
    # label's, is dropped (that label gets a slug anew).
    kept: dict[str, str] = {}
    slugs = data.get("slugs")
    for label, slug in slugs.items() if isinstance(slugs, dict) else ():
        if isinstance(slug, str) and is_slug(slug) and slug not in kept.values():
            kept[label] = slug
    data["slugs"] = kept
    batch = data.get("batch")
    data["batch"] = batch if isinstance(batch, int) and batch >= 0 else 0
    if not isinstance(data.get("records"), dict):
        data["records"] = {}
    return data


class _Publication:
    """One publication of a league's site."""

    def __init__(
        self, tournament: Tournament, store: Store, folder: LiveFolder, published: float
    ) -> None:
        self.tournament = tournament
        self.store = store
        self.folder = folder
        self.ledger = LeagueLedger(store, readonly=True)
        self.pages = PageWriter(
            {
                "tournament": tournament.name,
                "in_progress": True,
                "published": format_time(published),
            }
        )
        self.pages.into(folder)
        self.before = _state(folder)
        self.stderr_private = tournament.file.publish.stderr == "private"
        if not self.before:
            # A new site is marked a league's at once: a publication that fails before its
            # end then leaves a folder the next one takes up (from batch 0), never an
            # unmarked one with subfolders, or a marked one without this state, that
            # check_league_target would refuse from then on.
            folder.marker()
            shown = "private" if self.stderr_private else "public"
            start = {"batch": 0, "slugs": {}, "records": {}, "stderr": shown}
            folder.write("", LEAGUE_STATE, ".json", json.dumps(start).encode("utf-8"))

    def write(self) -> LeagueSiteReport:
        board = read_board(self.tournament, self.ledger, self.store)
        every = (*board.entries, *board.unrated, *board.suspended, *board.retired)
        # Those published before keep theirs: a page's address never changes.
        slugs = bot_slugs([e.label for e in every], known=self.before.get("slugs"))
        last = board.batches
        first = self.before.get("batch", 0)
        if first > last:  # the state of other results: everything again
            first = 0
        shown = "private" if self.stderr_private else "public"
        if self.before.get("stderr", "public") != shown:
            first = 0  # every match page again, with its stderr or without
            if self.stderr_private:
                self.folder.remove("matches", STDERR_SCRIPT)
        self.folder.marker()
        self.pages.static_files()
        matches, seated = 0, set[str]()
        for batch in range(first, last):
            matches += self._batch(batch, slugs, seated)
        records, rendered = self._bots(board, slugs, last, seated)
        self._index(board, slugs)
        state = {"batch": last, "slugs": slugs, "records": records, "stderr": shown}
        self.pages.write("", LEAGUE_STATE, ".json", json.dumps(state).encode("utf-8"))
        return LeagueSiteReport(
            self.folder.target,
            self.folder.target / "index.html",
            (first, last),
            matches,
            rendered,
            self.pages.written,
        )

    def _batch(self, batch: int, slugs: Mapping[str, str], seated: set[str]) -> int:
        """The match pages of one settled batch (``seated`` gathers its bots: their pages
        now link them)."""
        results = self.ledger.batch_results(batch)
        seated.update(name for match in results for name in match.spec.table)
        records = self._records(batch)
        views = {
            m.spec.key: self._view(m, match_stem(m.spec.key, m.spec.table), slugs, records)
            for m in results
        }
        for match in results:
            view = views[match.spec.key]
            rotations = [
                views[m.spec.key]
                for m in results
                if m.spec.key != view.key and m.spec.key.rsplit("/r", 1)[0] == view.table_deal
            ]
            same = [
                views[m.spec.key]
                for m in results
                if m.spec.deal_id == view.deal_id
                and views[m.spec.key] not in rotations
                and m.spec.key != view.key
            ]
            self.pages.render(
                "league_match.html",
                "matches",
                view.stem,
                root="../",
                match=view,
                bot_slug=slugs,
                same_cards=same,
                rotations=rotations,
            )
        return len(results)

    def _records(self, batch: int) -> dict[str, tuple[int | None, float | None, float | None]]:
        low = f"lg/{batch:08d}/"
        rows = self.store.connection.execute(
            "SELECT key, rounds, duration, finished FROM matches WHERE key >= ? AND key < ?",
            (low, low[:-1] + "0"),
        )
        return {key: (rounds, duration, finished) for key, rounds, duration, finished in rows}

    def _view(
        self,
        match: StoredMatch,
        stem: str,
        slugs: Mapping[str, str],
        records: Mapping[str, tuple[int | None, float | None, float | None]],
    ) -> MatchView:
        key = match.spec.key
        replay, note, lines = self._replay(key, stem)
        stderr = self._stderr(key, stem) if replay == "ok" else "none"
        rounds, duration, finished = records.get(key, (None, None, None))
        return MatchView(
            key=key,
            stem=stem,
            label=f"batch {batch_of(key)}, rotation {match.spec.rotation}",
            table=match.spec.table,
            seats=seat_views(match, slugs, lines, held=False),
            rounds=rounds,
            duration=duration,
            finished=format_time(finished) if finished else None,
            replay=replay,
            replay_note=note,
            filter_keys=" ".join(slugs.get(name, "") for name in match.spec.table),
            deal_id=match.spec.deal_id,
            table_deal=key.rsplit("/r", 1)[0],
            stderr=stderr,
        )

    def _replay(self, key: str, stem: str) -> tuple[str, str, dict[int, int]]:
        source = self.store.log_path(key)
        try:
            raw = source.read_bytes()
        except OSError:
            return "missing", f"its log {source.name} is not in the results folder", {}
        published = self.pages.log_files(stem, raw)
        return published.state, published.note, published.fault_lines

    def _stderr(self, key: str, stem: str) -> str:
        if self.stderr_private:
            return "private"
        return self.pages.stderr_file(stem, stderr_path(self.store.log_path(key)).read_bytes)

    def _bots(
        self, board: LeagueBoard, slugs: Mapping[str, str], last: int, seated: set[str]
    ) -> tuple[dict[str, list[Any]], int]:
        """The pages of the versions whose record changed or whose matches were published
        now; returns every version's record, and how many pages were written."""
        every = (*board.entries, *board.unrated, *board.suspended, *board.retired)
        before = self.before.get("records", {})
        by_name: dict[str, list[LeagueEntry]] = {}
        for entry in every:
            by_name.setdefault(entry.name, []).append(entry)
        stored = self.store.entrants()
        records: dict[str, list[Any]] = {}
        rendered = 0
        for entry in every:
            records[entry.label] = [
                entry.matches,
                entry.rank,
                entry.left,
                entry.placing,
                entry.suspended,
                entry.suspended_why,
                self.stderr_private,
                slugs[entry.label],  # the page's name: a new one is a page to write
            ]
            if records[entry.label] == before.get(entry.label) and entry.label not in seated:
                continue
            recent = [
                (self._listed(match, last), seat)
                for match in self.ledger.recent(entry.label, RECENT)
                for seat in match.seats
                if seat.name == entry.label
            ]
            versions = sorted(by_name[entry.name], key=lambda e: e.version)
            self.pages.render(
                "league_bot.html",
                "bots",
                slugs[entry.label],
                root="../",
                e=entry,
                record=stored.get(entry.label),
                versions=versions,
                recent=recent,
                slug=slugs,
                faults=self._faults(entry.label, slugs, last),
                stderr_private=self.stderr_private,
            )
            rendered += 1
        return records, rendered

    def _faults(self, label: str, slugs: Mapping[str, str], last: int) -> list[FaultGroup]:
        """The faults of ``label``: one group per kind, its first fault explained as ``bot
        check`` explains it, with the match it was in and how many of that kind there are.
        A fault of a batch not yet published is held back (it may show the cards)."""
        groups = []
        for fault, count in self.ledger.first_faults(label):
            match = self.ledger.match(fault.key)
            batch = batch_of(fault.key)
            held = match is None or batch is None or batch >= last
            view = None if match is None else self._fault_match(match, slugs, held)
            explained = explain_fault(stored_fault_info(fault))
            shown = fault_view(
                fault,
                held=held,
                stderr_private=self.stderr_private,
                explained=tuple(line for line in explained if not line.startswith("stderr")),
            )
            groups.append(FaultGroup(fault.kind, shown.reply, held, ((shown, view),), count=count))
        return groups

    def _fault_match(self, match: StoredMatch, slugs: Mapping[str, str], held: bool) -> MatchView:
        """The match of a fault as the fault section links it: its page, and the log line
        of each seat's fault for the replay's link (none while its batch is unpublished)."""
        key = match.spec.key
        lines: dict[int, int] = {}
        replay, note = "withheld", "its batch is still being played"
        if not held:
            try:
                lines = dict(log_script(self.store.log_path(key).read_bytes()).fault_lines)
                replay, note = "ok", ""
            except OSError:
                replay, note = "missing", "its log is not in the results folder"
            except ValueError as exc:
                replay, note = "unreadable", f"its log cannot be read ({exc})"
        seats = seat_views(match, slugs, lines, held=held)
        return MatchView(
            key=key,
            stem=match_stem(key, match.spec.table),
            label=f"batch {batch_of(key)}, rotation {match.spec.rotation}",
            table=match.spec.table,
            seats=seats,
            rounds=None,
            duration=None,
            finished=None,
            replay=replay,
            replay_note=note,
            filter_keys="",
        )

    def _listed(self, match: StoredMatch, last: int) -> _Listed:
        key = match.spec.key
        batch = batch_of(key) or 0
        stem = match_stem(key, match.spec.table)
        return _Listed(
            key,
            stem,
            f"batch {batch}, rotation {match.spec.rotation}",
            match.spec.table,
            batch < last,
        )

    def _index(self, board: LeagueBoard, slugs: Mapping[str, str]) -> None:
        self.pages.render(
            "league_index.html",
            "",
            "index",
            root="",
            board=board,
            slug=slugs,
            notes=league_notes(board),
        )
        for suffix, fmt in ((".md", "md"), (".json", "json"), (".csv", "csv")):
            self.pages.write("", "leaderboard", suffix, render_league(board, fmt).encode())


@dataclass(frozen=True)
class _Listed:
    """A match on a bot's page: linked once its batch is published."""

    key: str
    stem: str
    label: str
    table: tuple[str, ...]
    published: bool


def match_stem(key: str, table: Sequence[str]) -> str:
    """A match page's stem (``matches/<stem>.html``): its batch, its bots' slugs and
    rotation, and the table's hash (two tables of one batch whose bots slug alike stay
    apart, on every page alike)."""
    table_id = key.split("/")[2] if key.count("/") >= 3 else ""
    return f"{match_names({key: table})[key]}_{table_id[:8]}".rstrip("_")
