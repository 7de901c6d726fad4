"""The list of a published site's files, and what its pages show that no log holds:
``verification/site.json``.

``referee verify SITE`` checks what people read, not only the evidence: every page, replay
script, leaderboard and static file is rendered again from the verified data by the code
that published it (:func:`referee.publish.site.render_site`) and compared byte for byte
(:mod:`referee.verify.pages`). For that the site records, beside the evidence of
:mod:`referee.publish.evidence`:

* **every file** it holds (but this one): its path, SHA-256, what kind of file it is and
  what it is made from (:data:`SOURCES` names the sources). A file on the site that is not
  listed fails verify, but for the few a static host adds (:data:`HOST_FILES`), which
  verify names; a listed file that is missing fails too;
* **the referee that rendered the pages** (its version) and **when** (the publication time
  every page and leaderboard shows): a site rendered by another version has its data
  verified and its pages reported as not compared, since later versions render pages
  differently;
* **the page inputs no log holds** (:class:`SiteFiles`): each match's times, duration
  and whether the bots' stderr was published (and its round count, which verify takes
  from its log); each fault's request and stderr
  report; each bot's reply times, and its kit's replaced decisions; when each replacement
  was made (a fault of a deal still open is recorded as its page shows it: nothing that
  may show the cards). They are the organiser's word, as the stored results hold them:
  verify renders the pages with them and names them as not verified. They stay outside
  the results chain because the chain's entries are the results of every stored
  tournament as they were played (a new field would change every entry, or need two kinds
  of entry) and because none of them decides a result: the standings, forfeits, faults
  and their details, the offending replies and the times taken are the logs', and verify
  takes them from there.

The bots' stderr (``matches/*.stderr.js``) is not verified either, for the same reasons and
one more: it is the bots' own text, which no result rests on. Verify checks each script is
one ``referee publish`` writes for some stderr (it reads the data back and writes the script
again, so a script holding code, not data, fails), and names the matches whose stderr it
could not check further. A site that does not publish the bots' stderr has no such files.

``publish-cache.json`` (:mod:`referee.publish.reuse`) is listed with its SHA-256 only: it
is the publishing build's record for the next publication, read by no visitor, and its
fingerprint names the build (the library versions), so a visitor's referee would not
write it the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Set
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee import __version__
from referee.publish.evidence import dump_document
from referee.publish.folder import MARKER_TEXT, SITE_MARKER
from referee.publish.source import StoredTournament
from referee.specs import StoredFault

__all__ = [
    "FORMAT",
    "HOST_FILES",
    "SITE_FILES",
    "SOURCES",
    "FaultInputs",
    "KitInputs",
    "ListedFile",
    "MatchInputs",
    "ReplacementInputs",
    "ReplyInputs",
    "SiteFiles",
    "file_kind",
    "site_document",
]

SITE_FILES = "site"
"""The stem of the file list: ``verification/site.json``."""

FORMAT: Final = 1

HOST_FILES: Final = (".nojekyll", "CNAME", "robots.txt")
"""Files a static host or its deploy step adds at the top of a site (GitHub Pages'
``.nojekyll`` and ``CNAME``, a crawler policy): verify accepts them unlisted, and names
them. Nothing the pages load."""

Kind = Literal[
    "page", "replay", "stderr", "log", "leaderboard", "static", "evidence", "cache", "marker"
]

SOURCES: Final = {
    "plan": "verification/plan.json",
    "deals": "verification/deals.json",
    "manifest": "verification/manifest.json",
    "log": "the match's own log in matches/",
    "logs": "every log in matches/",
    "inputs": "the page inputs of verification/site.json (not verified)",
    "stderr": "the bots' stderr (not verified)",
    "referee": "the referee's own files",
    "results": "the results folder",
}
"""What ``made_from`` names: each source of a file."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


_Time = Annotated[float, Field(ge=0, le=2**35)]
"""A Unix time the pages can write (before the year 3000)."""
_Count = Annotated[int, Field(ge=0)]


class ListedFile(_Shape):
    """A file of the site: its path, SHA-256, kind and sources (:data:`SOURCES`)."""

    path: str
    sha256: str
    kind: Kind
    made_from: list[str]


class MatchInputs(_Shape):
    """A stored match's state as the store keeps it (Unix times, seconds), and whether the
    bots' stderr is published with it (``ok``), none was kept, or it could not be read."""

    key: str
    rounds: _Count | None
    started: _Time | None
    finished: _Time | None
    duration: _Time | None
    stderr: Literal["ok", "none", "unreadable"]


class FaultInputs(_Shape):
    """What a fault's evidence holds beyond its log line: the request it answered, the
    bot's stderr report and the round."""

    key: str
    seat: _Count
    request: dict[str, Any] | None
    stderr: str | None
    round: _Count | None


class ReplyInputs(_Shape):
    """A bot's reply times (whole milliseconds, ``[ms, count]``) and the bank it spent in
    each match."""

    name: str
    counts: list[Annotated[list[_Count], Field(min_length=2, max_length=2)]]
    bank_spent_ms: list[_Count | None]


class KitInputs(_Shape):
    """A bot whose kit replaced decisions: in how many matches, how many in all."""

    name: str
    matches: _Count
    decisions: _Count


class ReplacementInputs(_Shape):
    """When a replacement was made."""

    generation: _Count
    created: _Time


class SiteFiles(_Shape):
    """``site.json``: the referee that rendered the pages, when, every file, and the page
    inputs no log holds."""

    format: Literal[1]
    referee: str
    published: _Time
    files: list[ListedFile]
    matches: list[MatchInputs]
    faults: list[FaultInputs]
    reply_times: list[ReplyInputs]
    kit_replaced: list[KitInputs]
    replacements: list[ReplacementInputs]


_PAGE: Final = ["plan", "deals", "manifest", "logs", "inputs"]


def file_kind(path: str) -> tuple[Kind, list[str]]:
    """What the file at ``path`` in a site is, and what it is made from."""
    folder, _, name = path.rpartition("/")
    if folder == "matches":
        if name.endswith(".stderr.js"):
            return "stderr", ["stderr"]
        if name.endswith(".jsonl"):
            return "log", ["results"]
        if name.endswith(".js"):
            return "replay", ["log"]
        return "page", ["manifest", "log", "inputs"]
    if folder == "static":
        return "static", ["referee"]
    if folder == "verification":
        return "evidence", ["results"]
    if folder == "bots":
        return "page", list(_PAGE)
    if name == SITE_MARKER:
        return "marker", []
    if name.startswith("publish-cache."):
        return "cache", ["referee", "results"]
    if name.startswith("leaderboard."):
        return "leaderboard", list(_PAGE)
    if name == "matches.html":
        return "page", ["manifest", "inputs"]
    if name == "collusion.html":
        return "page", ["plan", "manifest", "logs"]
    return "page", list(_PAGE)


def site_document(
    results: StoredTournament,
    digests: Mapping[str, str],
    stderr: Mapping[str, str],
    complete_deals: Set[str],
) -> bytes:
    """``site.json`` for a site of ``results`` whose files have the SHA-256 ``digests`` (by
    path; the marker is added), each match's stderr published as ``stderr`` says (by key:
    ``ok``, ``none``, ``unreadable``). A fault of a deal not in ``complete_deals`` (its
    cards may not be shown yet) is recorded as its page shows it: without its stderr
    report, and with only the request's type, id and kind (:func:`_held_request`). With
    ``[publish] stderr = "private"`` no fault's stderr report is recorded: the list is
    published with the site, and the pages show none."""
    private = results.tournament.file.publish.stderr == "private"
    listed = {**digests, SITE_MARKER: hashlib.sha256(MARKER_TEXT).hexdigest()}
    files = []
    for path in sorted(listed):
        kind, made_from = file_kind(path)
        files.append(ListedFile(path=path, sha256=listed[path], kind=kind, made_from=made_from))
    document = SiteFiles(
        format=FORMAT,
        referee=__version__,
        published=results.published,
        files=files,
        matches=[
            MatchInputs(
                key=key,
                rounds=r.rounds,
                started=r.started,
                finished=r.finished,
                duration=r.duration,
                stderr=_stderr_state(stderr.get(key, "none")),
            )
            for key, r in sorted(results.records.items())
        ],
        faults=[_fault(results, f, complete_deals, private) for f in results.faults],
        reply_times=[
            ReplyInputs(
                name=name,
                counts=[[ms, n] for ms, n in sorted(times.counts.items())],
                bank_spent_ms=list(times.bank_spent_ms),
            )
            for name, times in results.reply_times.items()
        ],
        kit_replaced=[
            KitInputs(name=name, matches=matches, decisions=decisions)
            for name, (matches, decisions) in results.kit_replaced.items()
        ],
        replacements=[
            ReplacementInputs(generation=r.generation, created=r.created)
            for r in results.replacements
        ],
    )
    return dump_document(document)


def _fault(
    results: StoredTournament, fault: StoredFault, complete_deals: Set[str], private: bool
) -> FaultInputs:
    spec = results.specs.get(fault.key)
    if spec is not None and spec.deal_id in complete_deals:
        request, stderr = fault.request, None if private else fault.stderr
    else:
        request, stderr = _held_request(fault.request), None
    return FaultInputs(
        key=fault.key, seat=fault.seat, request=request, stderr=stderr, round=fault.round
    )


def _held_request(request: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a page shows of a held fault's request (its label: ``act 12 (play)``): the
    rest may show the cards."""
    if request is None:
        return None
    return {k: request[k] for k in ("type", "id", "kind") if k in request}


def _stderr_state(state: str) -> Literal["ok", "none", "unreadable"]:
    if state == "ok":
        return "ok"
    return "unreadable" if state == "unreadable" else "none"
