"""What a published site carries so that anyone can check it: ``verification/``.

A leaderboard is only worth what its evidence is, and the results folder it comes from is
the organiser's, private (it holds the deal secret while the tournament runs). So the site
publishes everything ``referee verify`` needs, beside the match logs it already copies into
``matches/``::

    verification/plan.json      the tournament plan stored with the results: the file's
                                text, the entrants and their authors (the schedule is
                                recomputed from it), each entrant's version and SHA-256,
                                and every replacement of an entrant's files (``--replace``)
    verification/deals.json     every deal secret's commitment, the beacon declared with it
                                (its source and form, bound into the commitment) and the
                                beacon mixed in, and the secret itself once revealed (never
                                before)
    verification/manifest.json  every stored match (the schedule's keys, with their state):
                                its table, deal, deal id and secret, the deal attempt and
                                seed it was played on, each seat's place, score, forfeit and
                                fault kind, its log's file name and SHA-256, the replacement
                                it was added under and the one that retired it, if any
    verification/chain.json     the results chain: each link's position, key and head, and
                                the entry of each plan link (a result's entry is
                                recomputed from the manifest and its log)

The shapes are the pydantic models below, one definition for the writer
(:func:`verification_files`) and the reader (:mod:`referee.verify.audit`), which
refuses anything else. Nothing here may show cards still to be played: while a deal is
open (``spec.deal_id`` with a match not finished) its matches are listed without their
seeds and logs, the seeds of the chain's entries are never published (the chain carries
heads only: ``verify`` recomputes each entry from the manifest and the logs), and an
unrevealed secret is published as its commitment alone. A site published mid-run can
therefore not be checked in full; ``verify`` says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from referee.publish.source import StoredTournament
from referee.specs import StoredMatch

__all__ = [
    "EVIDENCE",
    "FILES",
    "Chain",
    "Deals",
    "Manifest",
    "PublishedEntrant",
    "PublishedLink",
    "PublishedMatch",
    "PublishedPlan",
    "PublishedReplacement",
    "PublishedSeat",
    "PublishedSecret",
    "dump_document",
    "verification_files",
]

EVIDENCE = "verification"
"""The site's folder of verification data."""

FORMAT: Final = 3
"""The version of these files' shapes: a later referee that changes them says so. 2: a
secret's declared beacon (``beacon_source``, ``beacon_form``), and plan links in the chain;
3: replaced entrants (``replacements`` in the plan, each match's ``generation`` and
``retired``), and later the plan's ``rank_after_playoffs`` (optional: a site published
before it has none, and reads as a plan that records none)."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class PublishedEntrant(_Shape):
    """An entrant as its results were played (no local path: that is the organiser's)."""

    name: str
    version: str | None
    sha256: str
    author: str


class PublishedReplacement(_Shape):
    """An entrant's files replaced (:class:`referee.specs.Replacement`, without its time)."""

    generation: int
    name: str
    old_version: str | None
    old_sha256: str
    new_version: str | None
    new_sha256: str


class PublishedPlan(_Shape):
    """``plan.json``: :class:`referee.tournament.model.Plan`, the entrants' records, and the
    replacements made, in order. ``rank_after_playoffs`` is the plan's recorded rank after
    play-offs (``null``, or absent in a site published before it was recorded: a plan that
    records none, ranked by ``mu - 3 sigma``)."""

    format: Literal[3]
    file: str
    entrants: list[str]
    authors: dict[str, str]
    records: list[PublishedEntrant]
    replacements: list[PublishedReplacement]
    rank_after_playoffs: Literal["conservative", "mu"] | None = None


class PublishedSecret(_Shape):
    """A deal secret: ``secret`` (hex) only once revealed. ``beacon_source`` and
    ``beacon_form`` are the beacon declared when it was committed to before the run (both
    ``None`` for a secret drawn by a run); ``beacon`` is the value mixed in."""

    id: int
    commitment: str
    secret: str | None
    revealed: bool
    beacon_source: str | None
    beacon_form: str | None
    beacon: str | None


class Deals(_Shape):
    """``deals.json``."""

    format: Literal[3]
    secrets: list[PublishedSecret]


class PublishedSeat(_Shape):
    seat: int
    name: str
    place: int
    score: int
    forfeit: bool
    fault: str | None


class PublishedMatch(_Shape):
    """One stored match. ``deal_seed`` (the scheduled deal's) and ``seed`` (the one it was
    played on: its deal's, or a fresh deal's when ``attempt`` > 0) are decimal strings,
    ``None`` while its deal is open; so are ``log`` (the file in ``matches/``) and its
    ``log_sha256``. ``seats`` are empty unless ``status`` is ``done``. ``generation`` is the
    replacement it was added under (0: before any); ``retired`` the one that retired it."""

    key: str
    status: Literal["pending", "running", "done", "failed"]
    table: list[str]
    deal: int
    rotation: int
    deal_id: str
    secret: int
    attempt: int | None
    deal_seed: str | None
    seed: str | None
    log: str | None
    log_sha256: str | None
    seats: list[PublishedSeat]
    generation: int
    retired: int | None


class Manifest(_Shape):
    """``manifest.json``: every stored match, in key order."""

    format: Literal[3]
    tournament: str
    matches: list[PublishedMatch]


class PublishedLink(_Shape):
    """A link of the results chain: a result's (``key``, its head) or a plan link's
    (``key`` ``None``, with its ``entry``: hashes and settings, nothing of a deal)."""

    position: int
    key: str | None
    head: str
    entry: str | None


class Chain(_Shape):
    """``chain.json``: the results chain's heads, in the order the results were stored."""

    format: Literal[3]
    links: list[PublishedLink]


FILES: dict[str, type[_Shape]] = {
    "plan": PublishedPlan,
    "deals": Deals,
    "manifest": Manifest,
    "chain": Chain,
}
"""Each file of :data:`EVIDENCE` (``<stem>.json``) and its shape."""


def verification_files(
    results: StoredTournament,
    logs: Mapping[str, tuple[str, str]],
    complete_deals: Iterable[str],
) -> dict[str, bytes]:
    """The files of :data:`EVIDENCE`, by stem, for ``results``.

    ``logs`` are the logs the site published: match key to (file name in ``matches/``,
    SHA-256 of its bytes); ``complete_deals`` the deal ids whose cards may be shown.
    """
    shown = set(complete_deals)
    plan = results.plan
    records = [
        PublishedEntrant(name=r.name, version=r.version, sha256=r.sha256, author=r.author)
        for r in sorted(results.entrants.values(), key=lambda r: r.name)
    ]
    plan_doc = PublishedPlan(
        format=FORMAT,
        file=plan.source if plan else "",
        entrants=list(plan.entrants) if plan else [],
        authors=dict(plan.authors) if plan else {},
        records=records,
        replacements=[
            PublishedReplacement(
                generation=r.generation,
                name=r.name,
                old_version=r.old_version,
                old_sha256=r.old_sha256,
                new_version=r.new_version,
                new_sha256=r.new_sha256,
            )
            for r in results.replacements
        ],
        rank_after_playoffs=plan.rank_after_playoffs if plan else None,
    )
    deals_doc = Deals(
        format=FORMAT,
        secrets=[
            PublishedSecret(
                id=s.id,
                commitment=s.commitment,
                secret=s.secret_hex,
                revealed=s.secret_hex is not None,
                beacon_source=s.declared.source if s.declared else None,
                beacon_form=s.declared.form if s.declared else None,
                beacon=s.beacon,
            )
            for s in results.secrets
        ],
    )
    manifest_doc = Manifest(
        format=FORMAT,
        tournament=results.tournament.name,
        matches=_matches(results, logs, shown),
    )
    chain_doc = Chain(
        format=FORMAT,
        links=[
            PublishedLink(
                position=c.position,
                key=c.key,
                head=c.head,
                entry=c.entry if c.key is None else None,
            )
            for c in results.chain
        ],
    )
    return {
        stem: dump_document(doc)
        for stem, doc in (
            ("plan", plan_doc),
            ("deals", deals_doc),
            ("manifest", manifest_doc),
            ("chain", chain_doc),
        )
    }


def _matches(
    results: StoredTournament, logs: Mapping[str, tuple[str, str]], shown: set[str]
) -> list[PublishedMatch]:
    """Every stored match of the manifest, in key order (an open deal's without its seeds
    and log)."""
    done = {m.spec.key: m for m in (*results.matches, *results.retired)}
    entries = results.chain_entries  # built on each use: once here, not once a match
    matches = []
    for key in sorted(results.specs):
        spec = results.specs[key]
        record = results.records.get(key)
        match = done.get(key)
        open_deal = spec.deal_id not in shown or match is None
        log = logs.get(key)
        attempt = results.attempts.get(key) if match is not None else None
        matches.append(
            PublishedMatch(
                key=key,
                status=record.status if record is not None else "pending",
                table=list(spec.table),
                deal=spec.deal,
                rotation=spec.rotation,
                deal_id=spec.deal_id,
                secret=results.secret_of.get(key, -1),
                attempt=attempt,
                deal_seed=None if open_deal else str(spec.deal_seed),
                seed=None if open_deal else _played_seed(entries.get(key)),
                log=None if open_deal or log is None else log[0],
                log_sha256=None if open_deal or log is None else log[1],
                seats=[] if match is None else _seats(match),
                generation=results.generations.get(key, 0),
                retired=None if record is None else record.retired,
            )
        )
    return matches


def _played_seed(entry: str | None) -> str | None:
    """The seed a finished match was played on, from its chain entry (``None`` if none)."""
    if entry is None:
        return None
    seed = json.loads(entry).get("seed")
    return seed if isinstance(seed, str) else None


def _seats(match: StoredMatch) -> list[PublishedSeat]:
    return [
        PublishedSeat(
            seat=s.seat,
            name=s.name,
            place=s.place,
            score=s.score,
            forfeit=s.forfeit,
            fault=s.fault_kind,
        )
        for s in sorted(match.seats, key=lambda s: s.seat)
    ]


def dump_document(doc: BaseModel) -> bytes:
    """The document as JSON, one key a line and one list entry a line: compact, and still
    easy to read and compare line by line."""
    lines = []
    for key, value in doc.model_dump().items():
        if isinstance(value, list) and value:
            items = ",\n".join(_compact(item) for item in value)
            lines.append(f"{_compact(key)}: [\n{items}\n]")
        else:
            lines.append(f"{_compact(key)}: {_compact(value)}")
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
