"""``referee verify SITE`` checks what people read: every file of the site against what the
verified data renders.

Once a site's evidence has verified (:mod:`referee.verify.audit`: the deals, the
schedule, every log, the results chain, the leaderboard), :func:`check_pages` checks its
files (:mod:`referee.publish.sitefiles` lists them):

* **nothing unlisted, nothing missing**: the site's folders are walked without following a
  link (a link or a special file is named); a file ``verification/site.json`` does not list
  fails, but for the files static hosts add (:data:`~referee.publish.sitefiles.HOST_FILES`),
  which are named in the result; a listed file that is missing fails;
* **every page rendered again**: a :class:`~referee.publish.source.StoredTournament` is
  built from the verified data alone (the plan, the deals, the manifest's matches and
  the logs: each match's rounds, each seat's fault detail and each fault's reply, request
  id and time taken are the log's) and the page inputs ``site.json`` records (the times,
  the reply times, the faults' requests and stderr reports: named as not verified), then
  rendered by the code ``referee publish`` renders with
  (:func:`~referee.publish.site.render_site`), the site's own HTML never read but to
  compare. Every page, replay script, leaderboard and static
  file must be the same, byte for byte: a difference fails naming the file and the first
  line that differs. A file the data renders that the site lacks fails too, and so does a
  listed file it does not render (a page added and listed);
* **the bots' stderr scripts** are read back to the stderr they show and written again: a
  script that is not one ``publish`` writes (code instead of data) fails; what they say is
  the bots' and not verified;
* **the listed SHA-256** of every other file (the evidence, the reuse cache, the marker).

The list and the page inputs are the organiser's word like the rest of the site: a listed
SHA-256 edited to match an edited page changes nothing, since the page is rendered again,
not trusted. A site rendered by another referee version (``site.json`` says which) has its
data verified and its files listed and hashed, but its pages are not rendered again: they
are reported as not compared, so that changing the pages in a later version does not fail
every site published before it. A site without ``site.json`` (published by a referee
before it) is reported so too. Pages are not compared while the data fails (verify fails
anyway) or on a site published mid-run (it cannot be checked in full).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from referee import __version__
from referee.errors import UsageError
from referee.matchlog import parse_log
from referee.publish.evidence import EVIDENCE
from referee.publish.leaderboard import DealCommitment
from referee.publish.replaydata import STDERR_GLOBAL
from referee.publish.sitefiles import (
    FORMAT,
    HOST_FILES,
    SITE_FILES,
    ListedFile,
    SiteFiles,
    file_kind,
)
from referee.publish.source import SecretRecord, StoredTournament
from referee.results import ReplyTimes
from referee.specs import StoredFault, StoredMatch
from referee.stderrlog import MatchStderr, SeatStderr, StderrPiece
from referee.tournament.model import TournamentFile
from referee.tournament.store import MatchRecord
from referee.verify.audit import PublishedSite, Unavailable, Verification

if TYPE_CHECKING:
    from referee.rules import ResolvedRules

__all__ = ["MAX_SITE_FILES", "check_pages"]

MAX_SITE_FILES = 4_000_000
"""The most files verify lists in a site (a site of a million matches has about four
million); a folder holding more is refused."""
_MAX_FILE_BYTES = 512 * 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_RENDERED = ("log", "evidence", "cache", "marker")
"""Kinds of file not rendered again: the logs and the evidence are checked for what they
say, the cache and the marker by their SHA-256."""


def check_pages(site: PublishedSite, found: Verification, rounds: dict[str, int]) -> None:
    """Check the files of ``site`` (module docstring), adding to ``found``: its problems,
    the files compared, what is not verified, and why pages were not compared. ``rounds``
    are the rounds each verified log deals (a page shows how many)."""
    site_json = f"{EVIDENCE}/{SITE_FILES}.json"
    data_failed = bool(found.problems or found.incomplete)
    if not site.holds(EVIDENCE, f"{SITE_FILES}.json"):
        found.pages_note = (
            f"not compared: the site lists no files ({site_json} is missing: published by an "
            "older referee, which did not write it, or removed)"
        )
        return
    document = site.document(SITE_FILES, SiteFiles, FORMAT)
    listed = {f.path: f for f in document.files}
    on_disk, host = _walk(site, found)
    found.host_files = sorted(host)
    named = _named(found.problems)
    for path in sorted(set(on_disk) - set(listed) - {site_json}):
        _problem(
            found,
            named,
            path,
            f"{path}: not a file referee publish wrote ({site_json} does not list it)",
        )
    for path in sorted(set(listed) - set(on_disk)):
        _problem(found, named, path, f"{path}: listed in {site_json}, but missing")
    if document.referee != __version__:
        found.pages_note = (
            f"not compared: rendered by referee {document.referee} (this is {__version__}); "
            "verify with that version to compare them"
        )
        _hashes(site, found, named, listed, set(on_disk))
        return
    if data_failed:
        return  # verify fails already: nothing to render from
    renderer = _Renderer(site, found, named, listed)
    from referee.publish.site import render_site

    try:
        results = _tournament(site, document, rounds)
        render_site(results, renderer, _SiteFiles(site, document, renderer), ranked=site.standings)
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as exc:
        # The page inputs are the site's, checked for their shape only: whatever else in
        # them the pages cannot be rendered from fails here, in one line.
        found.problems.append(
            f"{site_json}: the pages cannot be rendered from its page inputs "
            f"({type(exc).__name__}: {str(exc)[:200]}); not what referee publish writes"
        )
        return
    rendered = set(renderer.rendered)
    for path in sorted(rendered - set(on_disk)):
        _problem(found, named, path, f"{path}: missing (the verified data renders it)")
    for path in sorted(listed):
        kind = file_kind(path)[0]  # by its path: the list's word for it is no evidence
        if path in on_disk and path not in rendered and kind not in _NOT_RENDERED:
            _problem(
                found,
                named,
                path,
                f"{path}: listed as a {kind}, but the verified data renders no such file",
            )
    _hashes(site, found, named, listed, set(on_disk) - set(renderer.compared))
    found.pages = len(renderer.compared)
    found.unverified = _unverified(document, renderer)


def _named(problems: list[str]) -> set[str]:
    """The files named by the problems found so far (each is named once)."""
    return {p.partition(":")[0] for p in problems}


def _problem(found: Verification, named: set[str], path: str, text: str) -> None:
    if path not in named:
        named.add(path)
        found.problems.append(text)


def _hashes(
    site: PublishedSite,
    found: Verification,
    named: set[str],
    listed: dict[str, ListedFile],
    paths: set[str],
) -> None:
    """Each of ``paths`` that is listed has the SHA-256 the list gives it."""
    for path in sorted(paths & set(listed)):
        if path in named:
            continue
        folder, _, name = path.rpartition("/")
        try:
            data = site.read(folder, name, _MAX_FILE_BYTES)
        except OSError as exc:
            _problem(found, named, path, f"{path}: {exc.strerror or exc}")
            continue
        if hashlib.sha256(data).hexdigest() != listed[path].sha256:
            _problem(
                found,
                named,
                path,
                f"{path}: its SHA-256 is not the one {EVIDENCE}/{SITE_FILES}.json lists",
            )


def _walk(site: PublishedSite, found: Verification) -> tuple[set[str], set[str]]:
    """Every regular file of the site by its path, and the host files among them; a link
    or anything else not a file or folder is a problem."""
    files: set[str] = set()
    host: set[str] = set()

    def visit(fd: int, prefix: str, depth: int) -> None:
        with os.scandir(fd) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                path = f"{prefix}{entry.name}"
                if len(files) >= MAX_SITE_FILES:
                    raise UsageError(
                        f"{site.where}: more than {MAX_SITE_FILES:,} files; a published site "
                        "holds far fewer"
                    )
                if entry.is_symlink():
                    found.problems.append(
                        f"{path}: a symbolic link; a published site holds files only"
                    )
                elif entry.is_dir(follow_symlinks=False) and depth < 3:
                    try:
                        sub = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        found.problems.append(f"{path}: cannot be read ({exc.strerror})")
                        continue
                    try:
                        visit(sub, f"{path}/", depth + 1)
                    finally:
                        os.close(sub)
                elif entry.is_file(follow_symlinks=False):
                    if not prefix and entry.name in HOST_FILES:
                        host.add(path)
                    else:
                        files.add(path)
                else:
                    found.problems.append(f"{path}: not a regular file")

    visit(site.root, "", 0)
    return files, host


class _Renderer:
    """Where the site is rendered again: each file compared with the site's as it comes,
    none kept."""

    def __init__(
        self,
        site: PublishedSite,
        found: Verification,
        named: set[str],
        listed: dict[str, ListedFile],
    ) -> None:
        self.site = site
        self.found = found
        self.named = named
        self.listed = listed
        self.rendered: dict[str, str] = {}
        self.compared: list[str] = []
        self.stderr_checked = 0

    def problem(self, path: str, text: str) -> None:
        _problem(self.found, self.named, path, text)

    def write(self, folder: str, stem: str, suffix: str, data: bytes) -> int:
        path = f"{folder}/{stem}{suffix}".lstrip("/")
        digest = hashlib.sha256(data).hexdigest()
        self.rendered[path] = digest
        if file_kind(path)[0] in _NOT_RENDERED:  # by its path, never by what the list says
            return len(data)  # checked otherwise (see _NOT_RENDERED)
        try:
            published = self.site.read(folder, f"{stem}{suffix}", _MAX_FILE_BYTES)
        except FileNotFoundError:
            self.problem(path, f"{path}: missing (the verified data renders it)")
            return len(data)
        except OSError as exc:
            self.problem(path, f"{path}: {exc.strerror or exc}")
            return len(data)
        self.compared.append(path)
        if published != data:
            if suffix == ".stderr.js":
                what = "not the script referee publish writes for the stderr it holds"
            elif folder == "static":
                what = "not the file this referee ships"
            else:
                what = "not what the verified data renders"
            self.problem(path, f"{path}: {what}{_first_line(published, data)}")
        elif path in self.listed and self.listed[path].sha256 != digest:
            self.problem(path, f"{path}: {EVIDENCE}/{SITE_FILES}.json lists another SHA-256 for it")
        return len(data)


def _first_line(published: bytes, rendered: bytes) -> str:
    """`` (first at line 38: '…30.92…' where it renders '…28.92…')``."""
    got, want = published.split(b"\n"), rendered.split(b"\n")
    for number, (a, b) in enumerate(zip(got, want, strict=False), start=1):
        if a != b:
            column = next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
            return (
                f" (first at line {number}: {_excerpt(a, column)!r} where it renders "
                f"{_excerpt(b, column)!r})"
            )
    return f" (it has {len(got)} lines, the rendering {len(want)})"


def _excerpt(line: bytes, column: int) -> str:
    start = max(0, column - 24)
    text = line[start : column + 24].decode("utf-8", "replace")
    return f"{'…' if start else ''}{text}{'…' if column + 24 < len(line) else ''}"


class _SiteFiles:
    """:class:`~referee.publish.site.MatchFiles` from the site being verified: its logs
    (verified already) and its stderr scripts read back to the stderr they show."""

    def __init__(self, site: PublishedSite, document: SiteFiles, renderer: _Renderer) -> None:
        self.site = site
        self.renderer = renderer
        self.states = {m.key: m.stderr for m in document.matches}

    def log_name(self, key: str) -> str:
        return f"{key.replace('/', '_')}.jsonl"

    def log(self, key: str) -> bytes:
        try:
            return self.site.log(key)[1]
        except Unavailable as exc:
            raise OSError(2, str(exc)) from None

    def stderr(self, key: str, stem: str) -> bytes:
        state = self.states.get(key, "none")
        if state == "none":
            raise FileNotFoundError(2, "no stderr kept")
        if state == "unreadable":
            raise OSError(5, "the stderr could not be read when published")
        path = f"matches/{stem}.stderr.js"
        try:
            script = self.site.read("matches", f"{stem}.stderr.js", _MAX_FILE_BYTES)
        except OSError as exc:
            self.renderer.problem(path, f"{path}: {exc.strerror or exc}")
            raise
        try:
            shown = _stderr_shown(script, key)
        except (ValueError, RecursionError, TypeError, KeyError, AttributeError):
            self.renderer.problem(
                path,
                f"{path}: not a stderr script referee publish writes (it must assign "
                f"window.{STDERR_GLOBAL} the data of one match's stderr, nothing else)",
            )
            raise OSError(5, "not a stderr script") from None
        self.renderer.stderr_checked += 1
        return shown


def _stderr_shown(script: bytes, key: str) -> bytes:
    """The stderr file that ``script`` shows: rendered again, it must be ``script``."""
    head, tail = f"window.{STDERR_GLOBAL} = ".encode(), b";\n"
    if not script.startswith(head) or not script.endswith(tail):
        raise ValueError("not a stderr script")
    data = json.loads(script[len(head) : -len(tail)])
    record = MatchStderr(
        match=key,
        cap=data["cap"],
        seats=tuple(
            SeatStderr(
                seat=seat["seat"],
                name=seat["name"],
                written=seat["written"],
                cut=seat["cut"],
                pieces=tuple(StderrPiece(line=line, text=text) for line, text in seat["pieces"]),
            )
            for seat in data["seats"]
        ),
    )
    return record.model_dump_json().encode("utf-8")


@dataclass(frozen=True)
class _Entrant:
    """An entrant as the site's plan records it (:class:`~referee.publish.source.EntrantFiles`)."""

    name: str
    version: str | None
    sha256: str


@dataclass(frozen=True)
class _Planned:
    """The tournament of a site's stored plan, as a publication reads one
    (:class:`~referee.publish.source.PublishedTournament`): no bot is loaded."""

    file: TournamentFile
    rules: ResolvedRules
    bots: tuple[_Entrant, ...]

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def entrants(self) -> list[str]:
        return [bot.name for bot in self.bots]


def _tournament(
    site: PublishedSite, document: SiteFiles, rounds: dict[str, int]
) -> StoredTournament:
    """The snapshot ``publish`` rendered the site from, as the verified data and the page
    inputs give it (each finished match's rounds are its log's)."""
    plan = site.plan()
    f = plan.file
    records = site.records()
    bots = tuple(
        _Entrant(
            name,
            records[name].version if name in records else None,
            records[name].sha256 if name in records else "",
        )
        for name in plan.entrants
    )
    tournament = _Planned(f, f.ruleset().resolve(f.table_size), bots)
    retired_by = site.retired()
    matches, retired, faults = _told_matches(site, document, retired_by)
    created = {r.generation: r.created for r in document.replacements}
    deals, secrets = _secret_records(site)
    return StoredTournament(
        tournament=tournament,
        results_dir=site.where,
        matches=matches,
        faults=faults,
        records=_match_records(site, document, rounds, retired_by),
        specs=site.specs(),
        deals=deals,
        entrants=records,
        plan=plan,
        secrets=secrets,
        attempts=site.deal_attempts(),
        secret_of=site.secret_of(),
        reply_times={
            r.name: ReplyTimes(Counter({ms: n for ms, n in r.counts}), list(r.bank_spent_ms))
            for r in document.reply_times
        },
        kit_replaced={k.name: (k.matches, k.decisions) for k in document.kit_replaced},
        retired=retired,
        replacements=tuple(
            dataclasses.replace(r, created=created.get(r.generation, 0.0))
            for r in site.replacements()
        ),
        generations=site.generations(),
        published=document.published,
    )


def _told_matches(
    site: PublishedSite, document: SiteFiles, retired_by: dict[str, int]
) -> tuple[tuple[StoredMatch, ...], tuple[StoredMatch, ...], tuple[StoredFault, ...]]:
    """The finished matches as their logs tell them (each fault's detail the log's), the
    retired ones apart, and every fault of the counted ones with its page inputs."""
    evidence = {(x.key, x.seat): x for x in document.faults}
    matches, retired, faults = [], [], []
    for match in site.completed():
        lines = _fault_lines(site, match) if any(s.fault_kind for s in match.seats) else {}
        seats = tuple(
            dataclasses.replace(s, fault_detail=_text(lines.get(s.seat, {}).get("detail")))
            if s.fault_kind
            else s
            for s in match.seats
        )
        told = StoredMatch(match.spec, seats)
        key = match.spec.key
        if key in retired_by:
            retired.append(told)
            continue
        matches.append(told)
        for seat in sorted(seats, key=lambda s: s.seat):
            if seat.fault_kind is None:
                continue
            line = lines.get(seat.seat, {})
            extra = evidence.get((key, seat.seat))
            faults.append(
                StoredFault(
                    key,
                    seat.seat,
                    seat.name,
                    seat.fault_kind,
                    _text(line.get("detail")) or "",
                    _int(line.get("id")),
                    _text(line.get("reply")),
                    _int(line.get("elapsed_ms")),
                    extra.stderr if extra else None,
                    request=extra.request if extra else None,
                    round=extra.round if extra else None,
                )
            )
    return tuple(matches), tuple(retired), tuple(faults)


def _match_records(
    site: PublishedSite, document: SiteFiles, rounds: dict[str, int], retired_by: dict[str, int]
) -> dict[str, MatchRecord]:
    """Each stored match's record: its state, its log's rounds, its page inputs' times."""
    times = {m.key: m for m in document.matches}
    return {
        key: MatchRecord(
            key,
            status,
            *(
                (rounds.get(key), None, None, None)
                if (t := times.get(key)) is None
                else (rounds.get(key, t.rounds), t.started, t.finished, t.duration)
            ),
            retired_by.get(key),
        )
        for key, status in site.statuses().items()
    }


def _secret_records(
    site: PublishedSite,
) -> tuple[tuple[DealCommitment, ...], tuple[SecretRecord, ...]]:
    """The deal secrets as the leaderboard shows them, and as the settings list them."""
    secrets = site.secrets()
    deals = tuple(
        DealCommitment(
            s.commitment,
            s.secret.hex() if s.revealed is not None else None,
            s.declared.source if s.declared else None,
            s.beacon,
        )
        for s in secrets
    )
    records = tuple(
        SecretRecord(
            s.id,
            s.commitment,
            s.secret.hex() if s.revealed is not None else None,
            s.declared,
            s.beacon,
        )
        for s in secrets
    )
    return deals, records


def _fault_lines(site: PublishedSite, match: StoredMatch) -> dict[int, dict[str, Any]]:
    """Each seat's first fault line in the log of ``match``."""
    with contextlib.suppress(Exception):
        name, data = site.log(match.spec.key)
        found: dict[int, dict[str, Any]] = {}
        for line in parse_log(data, name):
            if line.get("type") == "fault" and isinstance(line.get("seat"), int):
                found.setdefault(line["seat"], line)
        return found
    return {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _unverified(document: SiteFiles, renderer: _Renderer) -> list[str]:
    """What the pages show that verify cannot check, in words (each only if shown)."""
    done = sum(m.started is not None or m.finished is not None for m in document.matches)
    parts = [f"when it was published, and when and how long {done} matches were played"]
    if renderer.stderr_checked:
        parts.append(
            f"the bots' stderr in {renderer.stderr_checked} matches (matches/*.stderr.js, "
            "checked to be data only)"
        )
    if document.faults:
        parts.append(f"the requests and stderr reports of {len(document.faults)} faults")
    if document.reply_times:
        parts.append(f"the reply times of {len(document.reply_times)} bots")
    if document.kit_replaced:
        parts.append(f"the kit's replaced decisions of {len(document.kit_replaced)} bots")
    if document.replacements:
        parts.append(f"when {len(document.replacements)} replacements were made")
    return parts
