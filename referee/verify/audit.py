"""Checking a tournament from its results folder: ``referee verify``.

Anyone holding a tournament's results (its database and match logs) can check everything
its leaderboard rests on, and that the organiser dealt fairly and reported honestly:

* **the deals**: every secret matches the commitment it was announced with (its SHA-256,
  bound with the beacon declared with it when it was committed to before the run); such a
  secret was dealt with a beacon, recorded in the declared form's one spelling, and the
  beacon given (``--beacon``, as whoever verifies looked it up from the declared source) is
  that one; the commitments published (``--commitment``) are those of the secrets that
  dealt the stored matches, every one of them; every match's deal seed is the one the
  secret gives for the match's deal (or, for a match that had to be played again, for its
  fresh deal), so no deal was chosen after the fact;
* **the schedule**: recomputed from the tournament plan stored with the results (the
  tournament file as it ran, the entrants and their authors), which the results chain
  binds (its last plan link must be that plan; with ``--file``, it is also checked against
  the file as published, and :attr:`Verification.plan_given` says whether it was): every
  scheduled key is there, played, at the table and on the deal the schedule gives it, and
  nothing else is there; play-off rounds are planned again from the results before them and
  must be the rounds stored; no entrant met the same cards twice (and, with authors kept
  apart, no author either);
* **every log**: it replays through the engine from its seed, re-dealing the cards and
  re-applying every decision, and its players, places, scores, forfeits and fault kinds are
  the stored results the leaderboard is computed from;
* **the results chain** (:mod:`referee.tournament.chain`): the plan, and every result and
  the hash of its log, were chained in the order they were stored, and each head printed
  during the run (``--head``) is in the chain: a plan or a result changed, removed or added
  afterwards, or a log made up afterwards from the stored seed, breaks it;
* **replacements** (``--replace``, :mod:`referee.tournament.replacement`): each one is bound
  by the plan links of the chain, every result is placed under the replacements made
  before it (its position in the chain), and a result is retired exactly when an entrant at
  its table was replaced after it was played: a result of a replaced version still counted,
  or a result retired without such a replacement, is named. A retired match stands for its
  replay in the schedule: the replay must be stored at the same table, seats and rotation,
  on the deal of its own :func:`~referee.tournament.replacement.replay_spec` gives it, and
  played. Retired matches are checked like every other (their logs, deals and chain links)
  and left out of the leaderboard; their cards count for the rule that no entrant meets the
  same cards twice, since their players saw them.

The same checks read either of two sources of the same data, behind one small interface
(:class:`Evidence`): the organiser's **results folder** (:class:`ResultsFolder`, its
database and logs) or a **published site** (:class:`PublishedSite`, its ``verification/``
files and the logs in ``matches/``, :mod:`referee.publish.evidence`), which anyone may
have. A site is someone else's files: every file is opened without following a link (a
symbolic link anywhere is refused), only regular files are read, each within a size
limit, and a file that is not what ``referee publish`` writes is refused in one line. On a
site, verify also **re-derives the leaderboard from the logs alone** (each log's standings
and faults, rated with the plan's settings) and compares it with the published
``leaderboard.json`` (but for its settings and reply times, which no log holds) and
``leaderboard.csv``, and checks each log's SHA-256 and seed
against the manifest. Then it checks what people read (:mod:`referee.verify.pages`):
every file the site holds is the one its list names, and every page, replay script,
leaderboard and static file is rendered again from the verified data and compared. A
site published while the tournament was played cannot be checked in full (its secret is
not revealed, and the logs of open deals are held back): verify checks what it can and
says so, and does not pass it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import sqlite3
import stat
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from referee.errors import RefereeError, ReplayMismatch, UsageError
from referee.matchlog import parse_log
from referee.publish.evidence import (
    EVIDENCE,
    FORMAT,
    Chain,
    Deals,
    Manifest,
    PublishedPlan,
    PublishedSecret,
)
from referee.publish.folder import SITE_MARKER
from referee.publish.leaderboard import (
    DealCommitment,
    Leaderboard,
    retired_versions,
    to_csv,
    to_json,
)
from referee.publish.source import entrant_authors
from referee.ranking.playoff import plan_round
from referee.ranking.ratings import Rater
from referee.ranking.spoils import spoil, spoiled_counts
from referee.ranking.sprt import PairedDeals, Sprt, SprtState
from referee.ranking.standings import RankingInput, Standings, standings
from referee.ranking.statistics import HYPOTHESES, RoundPlaces, round_places
from referee.rules import replay
from referee.rules.engine import SHUFFLE_ID, EngineMemo
from referee.specs import (
    EntrantRecord,
    MatchSpec,
    Replacement,
    StoredMatch,
    StoredSeat,
    playoff_round,
)
from referee.tournament import chain
from referee.tournament.deals import BeaconDeclaration, deal_seed, redeal_seed
from referee.tournament.deals import commitment as commitment_of
from referee.tournament.model import CompareSettings, Plan, schedule_size_problem
from referee.tournament.replacement import key_generation, live_at, replay_key, replay_spec
from referee.tournament.rounds import load_rounds
from referee.tournament.scheduler import schedule
from referee.tournament.store import DATABASE, ChainLink, DealSecret, MatchStatus, Store
from referee.validation import describe

__all__ = [
    "MAX_EVIDENCE_BYTES",
    "MAX_LOG_BYTES",
    "ComparisonVerdict",
    "Evidence",
    "Published",
    "PublishedSite",
    "ResultsFolder",
    "Verification",
    "audit_site",
    "is_site",
    "verify_results",
]

MAX_EVIDENCE_BYTES = 512 * 1024 * 1024
"""The largest ``verification/`` file or leaderboard a site may give verify (a manifest of a
million matches is about 400 MiB)."""
MAX_LOG_BYTES = 64 * 1024 * 1024
"""The largest match log verify reads from a site (the longest logs of 10,000-round
matches stay well below it)."""

_STRUCTURE_ONLY = bytes(32)
"""Schedules are recomputed for their keys, tables and deal ids, which no secret decides."""


@dataclass
class Verification:
    """What :func:`verify_results` found."""

    matches: int = 0
    """Finished matches whose logs were replayed and compared."""
    scheduled: int = 0
    secrets: list[DealSecret] = field(default_factory=list)
    unrevealed: int = 0
    """Matches dealt by a secret not revealed yet (checked with the organiser's copy)."""
    chain_results: int = 0
    chain_head: str | None = None
    problems: list[str] = field(default_factory=list)
    source: str = "results"
    """``results`` (a results folder) or ``site`` (a published site)."""
    incomplete: list[str] = field(default_factory=list)
    """Why the source cannot be checked in full (a site published mid-run): never ok."""
    leaderboard: bool = False
    """Whether the published leaderboard was re-derived from the logs and compared."""
    plan_given: bool = False
    """Whether the tournament file as published was given (else the stored plan, bound by
    the results chain, is all the schedule was recomputed from)."""
    file_sha256: str = ""
    """SHA-256 of the stored tournament file's text (``referee tournament commit`` prints
    the same of the file it committed for)."""
    dealt: dict[int, int] = field(default_factory=dict)
    """How many stored matches each secret dealt, by id."""
    retired: int = 0
    """Finished matches retired by a replacement (checked, counted in no rating)."""
    replacements: list[Replacement] = field(default_factory=list)
    pages: int = 0
    """A site's files rendered again from the verified data and compared
    (:mod:`referee.verify.pages`)."""
    pages_note: str | None = None
    """Why a site's pages were not compared (another referee rendered them, or it lists no
    files): said with the result, never a silent ok."""
    unverified: list[str] = field(default_factory=list)
    """What a site's pages show that nothing verifies (the stderr, the times), in words."""
    host_files: list[str] = field(default_factory=list)
    """Files a static host added that the site does not list (``.nojekyll``, ``CNAME``)."""
    comparison: ComparisonVerdict | None = None
    """A comparison's verdict, recomputed from the logs with its stored statistic and test."""
    spoiled: dict[str, int] = field(default_factory=dict)
    """A comparison's deals spoiled by faults that are not the versions' own, by spoiler
    (:mod:`referee.ranking.spoils`, the rule the comparison left them out by), from the
    verified results."""

    @property
    def ok(self) -> bool:
        return not self.problems and not self.incomplete


@dataclass(frozen=True)
class ComparisonVerdict:
    """A comparison's (``format = "compare"``) verdict as the verified logs give it: the
    stored ``statistic`` and ``test`` (``assumed``: the folder recorded no hypotheses, an
    old one, so the statistic's defaults were taken) and the test's first decision."""

    statistic: str
    test: Sprt
    state: SprtState
    assumed: bool = False


class Unavailable(Exception):
    """A log the source cannot give (missing, unreadable, held back): the reason."""


class Evidence(Protocol):
    """What a verification reads: the stored tournament, from a results folder or a site.

    Both hold the same data: the plan, the entrants' fingerprints, the deal secrets, every
    stored match (spec, status, result, deal attempt, secret), the results chain, and
    each finished match's log.
    """

    where: Path

    def plan(self) -> Plan: ...

    def fingerprints(self) -> dict[str, str]:
        """Each entrant's SHA-256, as its results were played."""
        ...

    def secrets(self) -> list[DealSecret]: ...

    def hidden_secrets(self) -> set[int]:
        """The ids of secrets the source has only the commitment of (not revealed yet)."""
        ...

    def specs(self) -> dict[str, MatchSpec]: ...

    def statuses(self) -> dict[str, MatchStatus]: ...

    def completed(self) -> list[StoredMatch]:
        """Every finished match with its stored result, in key order (retired ones too)."""
        ...

    def retired(self) -> dict[str, int]:
        """The retired matches, by key: the replacement that retired each."""
        ...

    def generations(self) -> dict[str, int]:
        """The replacement each stored match was added under (0: before any), by key."""
        ...

    def replacements(self) -> list[Replacement]: ...

    def deal_attempts(self) -> dict[str, int]: ...

    def secret_of(self) -> dict[str, int]: ...

    def chain(self) -> list[ChainLink]:
        """The chain's links; a link's ``entry`` is ``""`` where the source has heads only."""
        ...

    def log(self, key: str) -> tuple[str, bytes]:
        """The log of ``key``: its file name and bytes; :class:`Unavailable` if none."""
        ...

    def match_rounds(self) -> dict[str, RoundPlaces]:
        """The rounds a comparison kept of each match (:mod:`referee.tournament.rounds`)."""
        ...


class ResultsFolder:
    """:class:`Evidence` from a results folder: its database (opened read-only) and logs."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.where = store.results_dir

    def plan(self) -> Plan:
        stored = self.store.plan()
        if self.store.settings() is None or stored is None:
            raise UsageError(f"{self.where}: no tournament has run there yet")
        plan = Plan.from_json(stored, self.store.path)
        if plan.file.format == "league":
            raise UsageError(
                f"{self.where} holds a league: its tables are drawn as it runs and its deal "
                "secret is revealed only when it ends; check its ratings with "
                "referee league check FILE"
            )
        return plan

    def fingerprints(self) -> dict[str, str]:
        return {name: e.sha256 for name, e in self.store.entrants().items()}

    def secrets(self) -> list[DealSecret]:
        return self.store.deal_secrets()

    def hidden_secrets(self) -> set[int]:
        return set()  # the organiser's copy holds every secret

    def specs(self) -> dict[str, MatchSpec]:
        return self.store.specs()

    def statuses(self) -> dict[str, MatchStatus]:
        return {key: r.status for key, r in self.store.match_records().items()}

    def completed(self) -> list[StoredMatch]:
        return self.store.completed(include_retired=True)

    def retired(self) -> dict[str, int]:
        return self.store.retired()

    def generations(self) -> dict[str, int]:
        return self.store.generations()

    def replacements(self) -> list[Replacement]:
        return self.store.replacements()

    def deal_attempts(self) -> dict[str, int]:
        return self.store.deal_attempts()

    def secret_of(self) -> dict[str, int]:
        return self.store.secret_of()

    def chain(self) -> list[ChainLink]:
        return self.store.chain()

    def log(self, key: str) -> tuple[str, bytes]:
        path = self.store.log_path(key)
        try:
            return path.name, path.read_bytes()
        except OSError as exc:
            raise Unavailable(f"cannot read {path.name}: {exc.strerror or exc}") from None

    def match_rounds(self) -> dict[str, RoundPlaces]:
        return load_rounds(self.store)


@dataclass(frozen=True)
class Published:
    """What was published outside the results, brought by whoever verifies: each given
    item is checked (see :func:`verify_results`)."""

    plan: Plan | None = None
    commitments: tuple[str, ...] = ()
    beacons: tuple[str, ...] = ()
    heads: tuple[str, ...] = ()


def verify_results(
    results_dir: Path,
    *,
    plan: Plan | None = None,
    commitments: Sequence[str] = (),
    beacons: Sequence[str] = (),
    heads: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Verification:
    """Check the tournament stored in ``results_dir`` (see the module docstring).

    ``plan`` is the tournament as published (its file, entrants and authors): the stored
    plan must be the same. ``commitments`` are the commitments published before the runs:
    each must be that of a secret that dealt stored matches, and every stored match must be
    dealt by one of them. ``beacons`` are the public values looked up by whoever verifies,
    one for each secret committed before its run (oldest first): each must be the one its
    matches were dealt with. ``heads`` are results-chain heads seen during the run.
    ``progress(done, total)`` is called after each match. Raises ``UsageError`` when there
    is nothing to verify.
    """
    if not (results_dir / DATABASE).is_file():
        raise UsageError(f"{results_dir} holds no tournament results ({DATABASE} is missing)")
    given = Published(plan, tuple(commitments), tuple(beacons), tuple(heads))
    try:
        with Store(results_dir, readonly=True) as store:
            return _Check(ResultsFolder(store)).run(given, progress)
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{results_dir / DATABASE} cannot be read: {exc}") from None


def audit_site(
    site: PublishedSite, given: Published, progress: Callable[[int, int], None] | None = None
) -> tuple[Verification, dict[str, int]]:
    """Everything :func:`verify_results` checks, from the open ``site``'s own files, and its
    leaderboard re-derived from the logs; with the rounds each verified log deals, which the
    pages check (:mod:`referee.verify.pages`) needs."""
    check = _Check(site)
    found = check.run(given, progress)
    found.source = "site"
    site.check_published(check)
    return found, check.rounds


def is_site(folder: Path) -> bool:
    """Whether ``folder`` looks like a published site (rather than a results folder)."""
    return (folder / EVIDENCE).is_dir() or (folder / SITE_MARKER).exists()


class _Check:
    """One verification: reads the source once, collects every problem found."""

    def __init__(self, source: Evidence) -> None:
        self.source = source
        self.found = Verification()
        self.from_logs: dict[str, StoredMatch] = {}
        """Each finished match as its log tells it (for the site's leaderboard check)."""
        self.rounds: dict[str, int] = {}
        """How many rounds each finished match's log deals (for the site's pages)."""
        self.places: dict[str, RoundPlaces] = {}
        """Each finished match's rounds as its log tells them (for a comparison's verdict)."""
        self.memo = EngineMemo()
        """The engine's memo, shared by every log this verification replays."""
        self.unplayed: list[str] = []
        """Scheduled matches not played to the end: problems, unless the source was taken
        while the tournament ran (a site published mid-run)."""
        self.retired: dict[str, int] = {}
        self.generations: dict[str, int] = {}
        self.replacements: list[Replacement] = []
        self.played_under: dict[str, int] = {}
        """The replacements made before each chained result (from the plan link before it)."""

    def problem(self, text: str) -> None:
        self.found.problems.append(text)

    def run(self, given: Published, progress: Callable[[int, int], None] | None) -> Verification:
        source = self.source
        plan = source.plan()
        self.found.file_sha256 = chain.log_digest(plan.source.encode("utf-8"))
        if given.plan is not None:
            self.found.plan_given = True
            self._compare_plans(given.plan, plan)
        hidden = source.hidden_secrets()
        specs = source.specs()
        secret_of = source.secret_of()
        secrets = self._secrets(given, specs, secret_of)
        statuses = source.statuses()
        done = {key for key, status in statuses.items() if status == "done"}
        self.retired, self.generations = source.retired(), source.generations()
        self.replacements = self.found.replacements = source.replacements()
        self._replacement_list(plan)
        self._schedule(plan, specs, statuses)
        matches = source.completed()
        self.found.retired = sum(m.spec.key in self.retired for m in matches)
        if plan.file.format == "compare":
            self.found.spoiled = _spoiled(plan, matches)
        if not hidden:  # play-off rounds are planned from every result: all must be known
            self._playoffs(plan, specs, matches)
        attempts = source.deal_attempts()
        digests, unchecked = self._matches(plan, matches, secrets, secret_of, attempts, progress)
        if hidden:
            left = f", {len(self.unplayed)} scheduled matches still to play" * bool(self.unplayed)
            self.found.incomplete.append(
                f"the deal secret is not revealed yet (the tournament was still being played "
                f"when this was published{left}): {unchecked} of {len(matches)} finished "
                "matches cannot be re-dealt, the logs of deals still open are held back, and "
                "the play-offs and the results chain cannot be recomputed; publish the site "
                "again once the tournament is over, and check that"
            )
            return self.found
        self.found.problems[:0] = self.unplayed
        self._deals(plan, [specs[key] for key in done if key in specs], attempts)
        links = source.chain()
        self._chain(links, plan, matches, attempts, secrets, secret_of, digests, given.heads)
        self._retirements(specs, matches)
        if plan.file.format == "compare":
            self._comparison(plan, matches, statuses)
        return self.found

    def _comparison(
        self, plan: Plan, matches: Sequence[StoredMatch], statuses: dict[str, MatchStatus]
    ) -> None:
        """The comparison's verdict from the verified logs, with its stored statistic and
        test (the run's rule: a deal with a match failed for good, one spoiled by a fault
        that is not the versions' own (:mod:`referee.ranking.spoils`), or one whose log gives
        no rounds under ``round-score``, is left out); the rounds it kept must be the
        logs'."""
        f = plan.file
        settings = CompareSettings.of(f)
        for key, kept in sorted(self.source.match_rounds().items()):
            if key in self.places and kept != self.places[key]:
                self.problem(f"{key}: the rounds kept for the comparison differ from the log's")
        stored = (settings.d0, settings.d1, settings.alpha, settings.beta)
        assumed = any(value is None for value in stored)
        d0, d1 = HYPOTHESES[settings.statistic]
        test = Sprt(
            d0 if settings.d0 is None else settings.d0,
            d1 if settings.d1 is None else settings.d1,
            0.05 if settings.alpha is None else settings.alpha,
            0.05 if settings.beta is None else settings.beta,
            settings.differing(),
        )
        assert f.candidate is not None and f.baseline is not None
        deals = PairedDeals(f.candidate, f.baseline, f.table_size, statistic=settings.statistic)
        specs = self.source.specs()
        for key, status in statuses.items():
            if status == "failed" and key in specs:
                deals.fail(specs[key].deal)
        for match in matches:
            spoil(deals, match)  # a field bot's fault, or a kill on the referee's side
            places = self.places.get(match.spec.key)
            if match.spec.key not in self.from_logs or (
                settings.statistic == "round-score" and places is None
            ):
                deals.fail(match.spec.deal)
                continue
            deals.add(match, places)
        state = test.first_decision(deals.observations())
        self.found.comparison = ComparisonVerdict(settings.statistic, test, state, assumed)

    def _matches(
        self,
        plan: Plan,
        matches: Sequence[StoredMatch],
        secrets: dict[int, DealSecret],
        secret_of: dict[str, int],
        attempts: dict[str, int],
        progress: Callable[[int, int], None] | None,
    ) -> tuple[dict[str, str], int]:
        """Check every finished match with its log; returns each log's SHA-256 by key, and
        how many could not be re-dealt (their secret is not revealed on a site)."""
        source, hidden = self.source, self.source.hidden_secrets()
        seed = plan.file.seed
        rules = plan.file.ruleset().resolve(plan.file.table_size).as_protocol()
        digests: dict[str, str] = {}
        unchecked = 0
        for count, match in enumerate(matches, start=1):
            key = match.spec.key
            dealt_by = secrets.get(secret_of.get(key, -1))
            if dealt_by is None:
                self.problem(f"{key}: no deal secret is stored for it")
            elif dealt_by.id in hidden:
                unchecked += 1
                with contextlib.suppress(Unavailable):  # held back while its deal is open
                    name, data = source.log(key)
                    issue = _unsealed_log(match, rules, name, data, self.memo)
                    if issue:
                        self.problem(f"{key}: {issue}")
            else:
                self.found.unrevealed += dealt_by.revealed is None
                issue, digest, logged, rounds, places = _check_match(
                    match, dealt_by, seed, attempts.get(key, 0), rules, source, self.memo
                )
                digests[key] = digest
                if places is not None:
                    self.places[key] = places
                if logged is not None:
                    self.from_logs[key] = logged
                if rounds is not None:
                    self.rounds[key] = rounds
                if issue:
                    self.problem(f"{key}: {issue}")
            self.found.matches += 1
            if progress is not None:
                progress(count, len(matches))
        return digests, unchecked

    # -- the plan, the secrets and the schedule -----------------------------------------

    def _compare_plans(self, given: Plan, stored: Plan) -> None:
        if given.file != stored.file:
            self.problem(
                "the tournament file given is not the one the results were played with "
                "(the stored copy differs)"
            )
        if sorted(given.entrants) != sorted(stored.entrants):
            self.problem("the entrants of the file given are not the stored ones")
        elif given.authors != stored.authors:
            self.problem("the authors of the file given are not the stored ones")

    def _secrets(
        self, given: Published, specs: dict[str, MatchSpec], secret_of: dict[str, int]
    ) -> dict[int, DealSecret]:
        """Each secret against its commitment and its beacon; the commitments and beacons
        published against the secrets that dealt the stored matches."""
        secrets = {s.id: s for s in self.source.secrets()}
        hidden = self.source.hidden_secrets()
        self.found.secrets = list(secrets.values())
        dealt = Counter(secret_of.get(key, -1) for key in specs)
        self.found.dealt = {sid: dealt[sid] for sid in secrets}
        for secret in secrets.values():
            if secret.id not in hidden and (
                commitment_of(secret.secret, secret.declared) != secret.commitment
            ):
                binds = " (with the beacon declared with it)" if secret.declared else ""
                self.problem(
                    f"secret {secret.id}: its SHA-256{binds} is not the commitment "
                    f"{secret.commitment}"
                )
            self._recorded_beacon(secret, dealt[secret.id])
        if given.commitments:
            self._published_commitments(given.commitments, secrets, dealt)
        if given.beacons:
            self._beacons_given(given.beacons, secrets, dealt)
        return secrets

    def _recorded_beacon(self, secret: DealSecret, dealt: int) -> None:
        """A secret committed to before its run dealt with its declared beacon, spelt as
        declared; a secret drawn by a run with none."""
        declared = secret.declared
        if declared is None:
            if secret.beacon is not None:
                self.problem(
                    f"secret {secret.id}: a beacon ({secret.beacon[:80]!r}) is recorded, but "
                    "none was declared when it was committed to: a beacon chosen afterwards "
                    "proves nothing"
                )
            return
        if secret.beacon is None:
            if dealt:
                self.problem(
                    f"secret {secret.id} was committed to before the run, with its beacon "
                    f"declared ({declared.source}), but no beacon was mixed into the {dealt} "
                    "matches it dealt: their cards depend on nothing revealed after the "
                    "commitment"
                )
            return
        try:
            value = declared.normalise(secret.beacon)
        except ValueError as exc:
            self.problem(f"secret {secret.id}: the recorded beacon is not as declared: {exc}")
            return
        if value != secret.beacon:
            self.problem(
                f"secret {secret.id}: the recorded beacon {secret.beacon[:140]!r} is not written "
                f"as declared ({value}): a beacon has one spelling, or the organiser could "
                "choose among them"
            )

    def _published_commitments(
        self, published: Sequence[str], secrets: dict[int, DealSecret], dealt: Counter[int]
    ) -> None:
        """Each commitment published is that of a secret that dealt stored matches, and
        every stored match was dealt by a secret whose commitment was published."""
        wanted = {c.strip().lower() for c in published}
        by_commitment = {s.commitment: s for s in secrets.values()}
        for given in sorted(wanted):
            secret = by_commitment.get(given)
            if secret is None:
                self.problem(
                    f"the published commitment {given[:80]} is none of this tournament's "
                    f"({', '.join(s.commitment for s in secrets.values()) or 'none'})"
                )
            elif not dealt[secret.id]:
                self.problem(
                    f"the published commitment {given} is that of secret {secret.id}, which "
                    "dealt none of the stored matches"
                )
        for secret in secrets.values():
            if dealt[secret.id] and secret.commitment not in wanted:
                self.problem(
                    f"secret {secret.id} (commitment {secret.commitment}) dealt "
                    f"{dealt[secret.id]} of the stored matches, but it is not a commitment "
                    "given (--commitment): those matches were not dealt by a secret published"
                )

    def _beacons_given(
        self, beacons: Sequence[str], secrets: dict[int, DealSecret], dealt: Counter[int]
    ) -> None:
        """The beacons a visitor looked up, one per secret committed before its run
        (oldest first), are the ones those secrets dealt with."""
        committed = [
            s for s in sorted(secrets.values(), key=lambda s: s.id) if s.declared and dealt[s.id]
        ]
        if not committed:
            self.problem(
                "a beacon was given (--beacon), but no secret of this tournament was committed "
                "to before its run with a beacon declared: its cards depend on no beacon"
            )
            return
        if len(beacons) != len(committed):
            self.problem(
                f"{len(beacons)} beacons given for {len(committed)} secrets committed to before "
                "their runs: give one --beacon per committed secret, oldest first"
            )
            return
        for given, secret in zip(beacons, committed, strict=True):
            assert secret.declared is not None
            try:
                value = secret.declared.normalise(given)
            except ValueError as exc:
                self.problem(f"secret {secret.id}: the beacon given does not fit: {exc}")
                continue
            if value != secret.beacon:
                recorded = "none" if secret.beacon is None else repr(secret.beacon[:140])
                self.problem(
                    f"secret {secret.id}: the beacon given ({value}) is not the one its "
                    f"matches were dealt with ({recorded}); the beacon is "
                    f"{secret.declared.source}"
                )

    def _schedule(
        self, plan: Plan, specs: dict[str, MatchSpec], statuses: dict[str, MatchStatus]
    ) -> None:
        """Every scheduled key stored, at its table, on its deal, and played (or retired,
        and its replay so); nothing else."""
        too_big = schedule_size_problem(plan.file)
        if too_big is not None:  # a plan from someone else's site could ask for billions
            self.problem(f"the stored plan cannot be scheduled: {too_big}")
            return
        try:
            expected = {s.key: s for s in schedule(plan, _STRUCTURE_ONLY)}
        except (ValueError, RefereeError) as exc:
            self.problem(f"the schedule cannot be recomputed from the stored plan: {exc}")
            return
        if plan.file.format == "compare":
            # A comparison plays its deals in order until its test decides: its schedule is
            # every deal up to the last one it reached, each whole.
            reached = max((spec.deal for spec in specs.values()), default=-1)
            expected = {key: s for key, s in expected.items() if s.deal <= reached}
        self.found.scheduled = len(expected)
        replays: set[str] = set()
        for key, want in expected.items():
            got = specs.get(key)
            if got is None:
                self.problem(f"{key}: scheduled, but not in the results")
                continue
            self._same_structure(key, want, got)
            live = self._replays(plan, want, specs, replays)
            status = statuses.get(live or "", "pending")
            if live is not None and status != "done":
                self.unplayed.append(f"{live}: scheduled, but {status} (not played to the end)")
        for key in sorted(set(specs) - set(expected) - replays):
            if playoff_round(key) is None:
                self.problem(f"{key}: in the results, but not in the schedule")

    def _replays(
        self, plan: Plan, want: MatchSpec, specs: dict[str, MatchSpec], found: set[str]
    ) -> str | None:
        """The match that counts for the scheduled ``want``: itself, or (retired) its latest
        replay, each checked against what its replacement schedules; the keys of the
        replays go into ``found``. ``None`` when a replay is missing (named)."""
        f = plan.file
        key = want.key
        while (generation := self.retired.get(key)) is not None:
            if generation <= key_generation(key):
                self.problem(
                    f"{key}: retired by replacement {generation}, which was made before it "
                    "was scheduled"
                )
                return None
            replay = replay_key(want.key, generation)
            got = specs.get(replay)
            if got is None:
                self.problem(
                    f"{key}: retired by replacement {generation}, but its replay {replay} is "
                    "not in the results"
                )
                return None
            expected = replay_spec(
                want, generation, seed=f.seed, secret=_STRUCTURE_ONLY, duplicate=f.duplicate
            )
            self._same_structure(replay, expected, got)
            found.add(replay)
            key = replay
        return key

    def _same_structure(self, key: str, want: MatchSpec, got: MatchSpec) -> None:
        if got.table != want.table:
            self.problem(
                f"{key}: stored at the table {', '.join(got.table)}; the schedule seats "
                f"{', '.join(want.table)}"
            )
        if got.deal_id != want.deal_id or (got.deal, got.rotation) != (want.deal, want.rotation):
            self.problem(f"{key}: stored on another deal than the schedule gives it")

    def _playoffs(
        self, plan: Plan, specs: dict[str, MatchSpec], matches: Sequence[StoredMatch]
    ) -> None:
        """Plan every play-off round again from the results before it that counted when it
        was planned (before a later replacement retired some); compare."""
        settings = plan.file.playoff
        stored_rounds: dict[int, dict[str, MatchSpec]] = defaultdict(dict)
        for key, spec in specs.items():
            round_no = playoff_round(key)
            if round_no is not None:
                stored_rounds[round_no][key] = spec
        if settings is None:
            for round_no in sorted(stored_rounds):
                self.problem(f"play-off round {round_no + 1} is stored, but the file has none")
            return
        if set(stored_rounds) != set(range(len(stored_rounds))):
            # (Planning each missing round again would re-rate every match that often.)
            self.problem(
                f"the stored play-off rounds are not rounds 1 to {len(stored_rounds)} "
                f"(round numbers {', '.join(str(r + 1) for r in sorted(stored_rounds)[:5])}…)"
            )
            return
        rules = plan.file.ruleset().resolve(plan.file.table_size)
        last = max(stored_rounds, default=-1)
        finished = all(s.revealed is not None for s in self.found.secrets)
        rater = Rater()  # the rounds' results grow as the run's did: rate only what is new
        for round_no in range(last + 2 if finished else last + 1):
            at = self._planned_under(round_no, stored_rounds.get(round_no, {}))
            if at is None:
                return
            before = [
                s
                for s in specs.values()
                if _round_of(s) < round_no
                and live_at(at, self.generations.get(s.key, 0), self.retired.get(s.key))
            ]
            before_keys = {s.key for s in before}
            results = [m for m in matches if m.spec.key in before_keys]
            planned = plan_round(
                round_no,
                results,
                before,
                list(plan.entrants),
                settings=settings,
                ratings=plan.file.ratings,
                rules=rules,
                table_size=plan.file.table_size,
                seed=plan.file.seed,
                secret=_STRUCTURE_ONLY,
                duplicate=plan.file.duplicate,
                authors=plan.authors_apart(),
                rater=rater,
                fingerprints=self.source.fingerprints(),
                after_playoffs=plan.playoff_rank(),
            )
            want = {s.key: s for s in planned.specs}
            got = stored_rounds.get(round_no, {})
            if round_no > last and want:
                self.problem(
                    f"the tournament is finished, but the results call for play-off round "
                    f"{round_no + 1} ({len(want)} matches): a round is missing"
                )
                return
            if set(want) != set(got):
                self.problem(
                    f"play-off round {round_no + 1}: its stored matches are not the ones the "
                    f"results before it call for ({len(got)} stored, {len(want)} planned)"
                )
                return
            for key, spec in want.items():
                self._same_structure(key, spec, got[key])

    def _planned_under(self, round_no: int, stored: dict[str, MatchSpec]) -> int | None:
        """The replacements made when play-off round ``round_no`` was planned: those its
        matches were added under (the latest for a round not stored); ``None`` when they
        disagree (named)."""
        under = {self.generations.get(key, 0) for key in stored}
        if len(under) > 1:
            self.problem(
                f"play-off round {round_no + 1}: its matches are stored as planned under "
                "different replacements"
            )
            return None
        return under.pop() if under else len(self.replacements)

    def _deals(self, plan: Plan, played: Sequence[MatchSpec], attempts: dict[str, int]) -> None:
        """No entrant (nor author, kept apart) met the same cards twice."""
        if plan.file.duplicate == "rotations":
            return
        owner = plan.authors_apart() or {}
        holders: dict[str, list[str]] = defaultdict(list)
        for spec in played:
            if attempts.get(spec.key, 0) == 0:  # a fresh deal is the match's own
                holders[spec.deal_id] += [owner.get(name, name) for name in spec.table]
        for deal_id, names in sorted(holders.items()):
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                self.problem(
                    f"{deal_id}: dealt twice to {', '.join(twice)} (no entrant may meet the "
                    "same cards twice)"
                )

    # -- the chain ---------------------------------------------------------------------

    def _chain(
        self,
        links: Sequence[ChainLink],
        plan: Plan,
        matches: Sequence[StoredMatch],
        attempts: dict[str, int],
        secrets: dict[int, DealSecret],
        secret_of: dict[str, int],
        digests: dict[str, str],
        heads: Sequence[str],
    ) -> None:
        """Every link recomputed from the first: each result from the stored results and
        logs, and the last plan link from the stored plan; each given head in the chain."""
        stored = {m.spec.key: m for m in matches}
        first = min(secrets.values(), key=lambda s: s.id, default=None)
        if first is None:
            if links:
                self.problem("the results chain has links but no deal secret is stored")
            return
        head = chain.genesis(first.commitment)
        seen: set[str] = set()
        planned: ChainLink | None = None
        under = 0
        for link in links:
            if link.key is None:
                entry, planned = link.entry, link
                if not entry or not entry.isascii():
                    self.problem(f"results chain {link.position}: a plan link without its entry")
                    break
                under = self._replaced_before(link)
            else:
                match = stored.get(link.key)
                if planned is None or match is None or link.key in seen:
                    why = "a result before the plan" if planned is None else "not a finished match"
                    self.problem(f"results chain {link.position}: {link.key} is {why}")
                    break
                seen.add(link.key)
                self.played_under[link.key] = under
                entry = _result_entry(
                    match,
                    secrets.get(secret_of.get(link.key, -1)),
                    plan.file.seed,
                    attempts.get(link.key, 0),
                    digests.get(link.key, ""),
                )
                if link.entry and entry != link.entry:  # a site publishes heads only
                    self.problem(
                        f"results chain {link.position}: {link.key} is not the result (or the "
                        "log) that was chained when it was stored"
                    )
                    break
            head = chain.next_head(head, entry)
            if head != link.head:
                self.problem(f"results chain {link.position}: the head does not follow")
                break
        else:
            missing = sorted(set(stored) - seen)
            if missing:
                self.problem(
                    f"{len(missing)} finished matches are not in the results chain "
                    f"(first: {missing[0]})"
                )
            self._chained_plan(planned, plan)
        self.found.chain_results = sum(link.key is not None for link in links)
        self.found.chain_head = links[-1].head if links else None
        known = {link.head for link in links}
        for given in heads:
            if given.strip().lower() not in known:
                self.problem(f"the head {given.strip()} printed during the run is not in the chain")

    def _chained_plan(self, link: ChainLink | None, plan: Plan) -> None:
        """The last plan link is the stored plan (and entrants, settings, replacements)."""
        if link is None:
            self.problem(
                "the results chain holds no plan link: nothing binds the stored plan the "
                "schedule was recomputed from"
            )
            return
        want = chain.plan_entry(plan, self.source.fingerprints(), self.replacements)
        if link.entry != want:
            self.problem(
                f"results chain {link.position}: the stored plan is not the one chained (they "
                f"differ in {_plan_difference(link.entry, want)}): it was changed afterwards"
            )

    # -- replacements ------------------------------------------------------------------

    def _replacement_list(self, plan: Plan) -> None:
        """The stored replacements: numbered 1, 2, ..., each of an entrant from one file's
        SHA-256 to another, the next of the same entrant from where the last left it, the
        last to the files its results are stored with."""
        fingerprints = self.source.fingerprints()
        files: dict[str, str] = {}
        for number, r in enumerate(self.replacements, start=1):
            where = f"replacement {r.generation}"
            if r.generation != number:
                self.problem(
                    f"{where}: the replacements are not numbered 1 to {len(self.replacements)}"
                )
                return
            if r.name not in plan.entrants:
                self.problem(f"{where}: {r.name!r} is no entrant of the stored plan")
            elif r.old_sha256 == r.new_sha256:
                self.problem(f"{where}: {r.name!r} was replaced by the same files")
            elif files.get(r.name, r.old_sha256) != r.old_sha256:
                self.problem(
                    f"{where}: {r.name!r} was replaced from files (sha256 {r.old_sha256[:12]}…) "
                    "other than those its replacement before left it with"
                )
            files[r.name] = r.new_sha256
        for name, sha in files.items():
            if fingerprints.get(name) != sha:
                self.problem(
                    f"{name!r}: its results are stored with files other than its last replacement's"
                )

    def _replaced_before(self, link: ChainLink) -> int:
        """How many replacements the plan link ``link`` binds (each the stored one)."""
        replaced = chain.replaced_in(link.entry)
        stored = [[r.generation, r.name, r.old_sha256, r.new_sha256] for r in self.replacements]
        if replaced is None or replaced != stored[: len(replaced)]:
            self.problem(
                f"results chain {link.position}: its plan link binds replacements other than "
                "the stored ones"
            )
            return len(stored)
        return len(replaced)

    def _retirements(self, specs: dict[str, MatchSpec], matches: Sequence[StoredMatch]) -> None:
        """Each retired match retired by a replacement of an entrant at its table; each
        finished match retired exactly when such a replacement came after it was played
        (the results chain says when), and never played before its replay was scheduled."""
        names = {r.generation: r.name for r in self.replacements}
        for key, generation in sorted(self.retired.items()):
            name = names.get(generation)
            spec = specs.get(key)
            if name is None:
                self.problem(f"{key}: retired by replacement {generation}, which is not stored")
            elif spec is not None and name not in spec.table:
                self.problem(
                    f"{key}: retired by replacement {generation} of {name!r}, who does not sit "
                    "at it"
                )
            if generation <= self.generations.get(key, 0):
                self.problem(f"{key}: retired by replacement {generation}, made before it")
        for key in specs:
            if key_generation(key) and self.generations.get(key) != key_generation(key):
                self.problem(
                    f"{key}: a replay of replacement {key_generation(key)} stored as "
                    "added under another"
                )
        for match in matches:
            self._retired_as_played(match)

    def _retired_as_played(self, match: StoredMatch) -> None:
        """A finished match is retired by the first replacement, after the one it was
        played under, of an entrant at its table; and it was played once it was scheduled."""
        key = match.spec.key
        under = self.played_under.get(key)
        if under is None:  # not in the chain: named there
            return
        if under < self.generations.get(key, 0):
            self.problem(f"{key}: played before the replacement that scheduled it")
        replaced = next(
            (r for r in self.replacements if r.generation > under and r.name in match.spec.table),
            None,
        )
        stored = self.retired.get(key)
        if replaced is not None and stored != replaced.generation:
            self.problem(
                f"{key}: played by {replaced.name!r} before its replacement "
                f"{replaced.generation}, but "
                + ("still counted" if stored is None else f"retired by replacement {stored}")
                + ": its result must be retired by that replacement"
            )
        elif replaced is None and stored is not None:
            self.problem(
                f"{key}: retired by replacement {stored}, but none of its players was "
                "replaced after it was played: a result that counts was retired"
            )


def _result_entry(
    match: StoredMatch, secret: DealSecret | None, seed: int, attempt: int, digest: str
) -> str:
    """The chain entry a finished match's result and log give."""
    played = _played_seed(match.spec, secret, seed, attempt) if secret else 0
    return chain.entry_text(
        match.spec.key,
        attempt,
        played,
        digest,
        [(s.seat, s.name, s.place, s.score, s.forfeit, s.fault_kind) for s in match.seats],
    )


_PLAN_PARTS = {
    "file": "the tournament file",
    "plan": "the entrants or their authors",
    "entrants": "the entrants' SHA-256",
    "settings": "the settings",
}


def _plan_difference(chained: str, stored: str) -> str:
    """Which parts of a plan link differ, in words."""
    try:
        old = json.loads(chained)
    except ValueError:
        return "everything: the chained entry is unreadable"
    new = json.loads(stored)
    if not isinstance(old, dict):
        return "everything: the chained entry is unreadable"
    parts = [words for key, words in _PLAN_PARTS.items() if old.get(key) != new.get(key)]
    if "the tournament file" in parts and "the entrants or their authors" in parts:
        parts.remove("the entrants or their authors")  # the plan holds the file
    return ", ".join(parts) or "the keys"


def _round_of(spec: MatchSpec) -> int:
    """The play-off round of ``spec``, or -1 for a scheduled match."""
    round_no = playoff_round(spec.key)
    return -1 if round_no is None else round_no


def _played_seed(spec: MatchSpec, secret: DealSecret, seed: int, attempt: int) -> int:
    """The seed a match was played on: its deal's, or its fresh deal's (attempt > 0)."""
    if attempt == 0:
        return deal_seed(secret.key, "deal", seed, spec.deal_id)
    return redeal_seed(secret.key, seed, spec.key, attempt)


def _check_match(
    match: StoredMatch,
    secret: DealSecret,
    seed: int,
    attempt: int,
    rules: dict[str, Any],
    source: Evidence,
    memo: EngineMemo,
) -> tuple[str | None, str, StoredMatch | None, int | None, RoundPlaces | None]:
    """What is wrong with one stored match (or ``None``), its log's SHA-256, the match as
    its log tells it, the rounds it deals and their places (``None`` when the log could not
    be read)."""
    spec = match.spec
    key = spec.key
    if spec.deal_seed != deal_seed(secret.key, "deal", seed, spec.deal_id):
        return "its stored deal seed is not the one the secret gives", "", None, None, None
    try:
        name, data = source.log(key)
    except Unavailable as exc:
        return f"log: {exc}", "", None, None, None
    digest = chain.log_digest(data)
    try:
        lines = parse_log(data, name)
    except UsageError as exc:
        return f"log: {exc}", digest, None, None, None
    logged = _logged_match(spec, lines)
    issue = _compare_log(match, secret, seed, attempt, rules, lines, memo)
    try:
        places: RoundPlaces | None = None if issue else round_places(lines, len(spec.table))
    except ValueError:
        places = None
    return issue, digest, logged, sum(line.get("type") == "deal" for line in lines), places


def _unsealed_log(
    match: StoredMatch, rules: dict[str, Any], name: str, data: bytes, memo: EngineMemo
) -> str | None:
    """What is wrong with the log of a match whose secret is not known (a site published
    mid-run): everything but its seed, which only the secret can confirm."""
    try:
        lines = parse_log(data, name)
    except UsageError as exc:
        return f"log: {exc}"
    return _compare_log(match, None, 0, 0, rules, lines, memo)


def _compare_log(
    match: StoredMatch,
    secret: DealSecret | None,
    seed: int,
    attempt: int,
    rules: dict[str, Any],
    lines: list[dict[str, Any]],
    memo: EngineMemo,
) -> str | None:
    """What is wrong with one match's log against its stored result (or ``None``); its
    seed is checked against the ``secret`` when there is one."""
    spec = match.spec
    key = spec.key
    header = lines[0]
    if header.get("match") != key:
        return f"the log is of another match ({header.get('match')!r})"
    if secret is not None and header.get("seed") != _played_seed(spec, secret, seed, attempt):
        return "the log was dealt from another seed than the secret gives"
    if header.get("shuffle") != SHUFFLE_ID:
        return "the log brings its own deals instead of dealing from its seed"
    if header.get("players") != list(spec.table):
        return "the log seats other players than the stored table"
    if header.get("rules") != rules:
        return "the log was played under other rules than the tournament's"
    try:
        replay(lines, memo=memo)
    except ReplayMismatch as exc:
        return f"the log does not replay: {exc}"
    except RefereeError as exc:
        return f"the log cannot be replayed: {exc}"
    told = _logged_match(spec, lines)
    if told is None:
        return "the log's standings or faults cannot be read"
    logged = {(st.seat, st.name, st.place, st.score, st.forfeit) for st in told.seats}
    stored = {(st.seat, st.name, st.place, st.score, st.forfeit) for st in match.seats}
    if len(match.seats) != len(spec.table):
        return "the stored result does not cover every seat"
    if logged != stored:
        return "the stored standings (names, places, scores or forfeits) differ from the log's"
    faults = {st.seat: st.fault_kind for st in told.seats if st.fault_kind is not None}
    if faults != {st.seat: st.fault_kind for st in match.seats if st.fault_kind is not None}:
        return "the stored faults differ from the log's"
    return None


def _logged_match(spec: MatchSpec, lines: list[dict[str, Any]]) -> StoredMatch | None:
    """The match as its log tells it: the last line's standings, each seat's fault kind
    from the fault lines (``None`` when the log does not say them in the usual shape)."""
    try:
        faults = {
            int(line["seat"]): str(line["kind"]) for line in lines if line.get("type") == "fault"
        }
        seats = [
            StoredSeat(
                int(st["seat"]),
                str(st["name"]),
                int(st["place"]),
                int(st["score"]),
                bool(st["forfeit"]),
                faults.get(int(st["seat"])),
                None,
            )
            for st in lines[-1].get("standings", [])
        ]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    seats.sort(key=lambda st: (st.place, st.seat))
    return StoredMatch(spec, tuple(seats))


# --------------------------------------------------------------------------- a published site

_LOG_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,199}\.jsonl")
_KEY = re.compile(r"(?:rr|g|po/[0-9]{1,6})(?:/[A-Za-z0-9_.-]{1,64}){1,6}")
"""A match key as the scheduler makes them (``rr/…``, ``g/…``, ``po/<round>/…``)."""
_SEED = re.compile(r"[0-9]{1,40}")
_HEX = re.compile(r"(?:[0-9a-f]{2}){16,256}")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
M = TypeVar("M", bound=BaseModel)


class PublishedSite:
    """:class:`Evidence` from a site ``referee publish`` wrote (:mod:`referee.publish.evidence`).

    The folder is untrusted: files are read relative to descriptors of their folders, never
    through a symbolic link (one anywhere is refused), only regular files, each within
    :data:`MAX_EVIDENCE_BYTES` or :data:`MAX_LOG_BYTES`; a verification file that is not
    valid JSON, or not of the shape ``publish`` writes, is refused in one line. Use it as a
    context manager (it holds the folders open).
    """

    def __init__(self, folder: Path) -> None:
        self.where = folder
        self.problems: list[str] = []
        """What reading the logs found besides :class:`_Check` (a log not the manifest's)."""
        self.standings: Standings | None = None
        """The ranking the leaderboard was derived with (its ratings, their history, the
        collusion check, the score intervals), for the pages rendered again."""
        try:
            self._root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise UsageError(f"cannot open the site {folder}: {exc.strerror or exc}") from None
        self._dirs: dict[str, int] = {}
        try:
            self._plan = self._document("plan", PublishedPlan)
            self._deals = self._document("deals", Deals)
            self._manifest = self._document("manifest", Manifest)
            self._chain = self._document("chain", Chain)
            self._index()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> PublishedSite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in [*self._dirs.values(), self._root]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._dirs.clear()

    # -- reading, carefully ------------------------------------------------------------

    @property
    def root(self) -> int:
        """A descriptor of the site's folder (held open while this is)."""
        return self._root

    def holds(self, folder: str, name: str) -> bool:
        """Whether ``folder/name`` exists (a link counts: reading it is refused)."""
        try:
            os.stat(name, dir_fd=self._folder(folder), follow_symlinks=False)
        except OSError:
            return False
        return True

    def read(self, folder: str, name: str, limit: int) -> bytes:
        """The bytes of ``folder/name`` (:meth:`_read`: ``OSError`` saying why not)."""
        return self._read(folder, name, limit)

    def document(self, stem: str, shape: type[M], version: int) -> M:
        """``verification/<stem>.json`` of ``shape``, format ``version``, checked."""
        return self._document(stem, shape, version)

    def _folder(self, name: str) -> int:
        """A descriptor of the site's subfolder ``name`` (``""``: the site itself)."""
        if not name:
            return self._root
        if name not in self._dirs:
            self._refuse_link(self._root, name, name)
            try:
                self._dirs[name] = os.open(name, _DIR_FLAGS, dir_fd=self._root)
            except OSError as exc:
                raise OSError(exc.errno, f"{name}/: {exc.strerror or exc}") from None
        return self._dirs[name]

    def _refuse_link(self, folder: int, name: str, shown: str) -> None:
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        except FileNotFoundError:
            raise OSError(2, f"{shown} is missing") from None
        if stat.S_ISLNK(mode):
            raise OSError(40, f"{shown} is a symbolic link; a published site holds files only")

    def _read(self, folder: str, name: str, limit: int) -> bytes:
        """The bytes of ``folder/name``; ``OSError`` (its text says why) when it cannot be
        read safely: missing, a link, not a regular file, or over ``limit`` bytes."""
        shown = f"{folder}/{name}" if folder else name
        at = self._folder(folder)
        self._refuse_link(at, name, shown)
        fd = os.open(name, _FILE_FLAGS, dir_fd=at)
        with open(fd, "rb", closefd=True) as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(21, f"{shown} is not a regular file")
            if info.st_size > limit:
                raise OSError(27, f"{shown} has {info.st_size:,} bytes; at most {limit:,} are read")
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise OSError(27, f"{shown} grew past {limit:,} bytes while read")
        return data

    def _json(self, folder: str, name: str) -> Any:
        shown = self.where / folder / name
        try:
            data = self._read(folder, name, MAX_EVIDENCE_BYTES)
        except OSError as exc:
            raise UsageError(f"{self.where}: {exc.strerror or exc}") from None
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{shown}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        except (ValueError, RecursionError) as exc:  # bad UTF-8, numbers too long, nesting
            raise UsageError(f"{shown}: not valid JSON ({exc})") from None

    def _document(self, stem: str, shape: type[M], version: int = FORMAT) -> M:
        raw = self._json(EVIDENCE, f"{stem}.json")
        if isinstance(raw, dict) and "format" in raw and raw["format"] != version:
            raise UsageError(
                f"{self.where / EVIDENCE / (stem + '.json')}: written by another version of "
                f"the referee (format {str(raw['format'])[:20]}, this one reads {version}); "
                "verify it with the version that published it (the site's settings name it)"
            )
        try:
            return shape.model_validate(raw)
        except ValidationError as exc:
            errors = exc.errors()
            first = errors[0]
            where = "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]
            ).lstrip(".")
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            what = describe(first["type"], first.get("input"), dict(first.get("ctx") or {}))
            if first["type"] == "extra_forbidden":
                what = "a key referee publish never writes"
            raise UsageError(
                f"{self.where / EVIDENCE / (stem + '.json')}: not what referee publish writes: "
                f"{where or 'the file'}: {what}{more}"
            ) from None

    def _bad(self, text: str) -> UsageError:
        return UsageError(f"{self.where / EVIDENCE / 'manifest.json'}: {text}")

    def _index(self) -> None:
        """Everything :class:`Evidence` gives, from the documents (checked as it goes)."""
        self._specs: dict[str, MatchSpec] = {}
        self._statuses: dict[str, MatchStatus] = {}
        self._completed: list[StoredMatch] = []
        self._attempts: dict[str, int] = {}
        self._secret_of: dict[str, int] = {}
        self._logs: dict[str, tuple[str, str | None]] = {}
        self._claimed_seeds: dict[str, int] = {}
        self._retired: dict[str, int] = {}
        self._generations: dict[str, int] = {}
        names: set[str] = set()
        for entry in self._manifest.matches:
            key = entry.key
            if not _KEY.fullmatch(key):
                raise self._bad(f"{key[:80]!r} is not a match key the referee makes")
            if key in self._specs:
                raise self._bad(f"the match {key!r} is listed twice")
            for seed in (entry.deal_seed, entry.seed):
                if seed is not None and not _SEED.fullmatch(seed):
                    raise self._bad(f"{key}: {seed[:50]!r} is not a deal seed")
            try:
                spec = MatchSpec(
                    key=key,
                    table=tuple(entry.table),
                    deal=entry.deal,
                    rotation=entry.rotation,
                    deal_seed=int(entry.deal_seed or 0),
                    match_seed=int(entry.deal_seed or 0),
                    deal_id=entry.deal_id,
                )
            except ValidationError:
                raise self._bad(f"{key}: not a match spec") from None
            self._specs[key] = spec
            self._statuses[key] = entry.status
            self._secret_of[key] = entry.secret
            self._generations[key] = entry.generation
            if entry.retired is not None:
                self._retired[key] = entry.retired
            if entry.seed is not None:
                self._claimed_seeds[key] = int(entry.seed)
            if entry.log is not None:
                if not _LOG_NAME.fullmatch(entry.log) or entry.log in names:
                    raise self._bad(f"{key}: {entry.log[:80]!r} is not a log name the site uses")
                names.add(entry.log)
                self._logs[key] = (entry.log, entry.log_sha256)
            if entry.status == "done":
                seats = sorted(
                    (
                        StoredSeat(s.seat, s.name, s.place, s.score, s.forfeit, s.fault, None)
                        for s in entry.seats
                    ),
                    key=lambda st: (st.place, st.seat),
                )
                self._completed.append(StoredMatch(spec, tuple(seats)))
                self._attempts[key] = entry.attempt or 0
        self._completed.sort(key=lambda m: m.spec.key)
        self._secrets = [self._secret(secret) for secret in self._deals.secrets]
        self._hidden = {s.id for s in self._deals.secrets if s.secret is None}
        for link in self._chain.links:
            if (link.key is None) == (link.entry is None):
                raise UsageError(
                    f"{self.where / EVIDENCE / 'chain.json'}: link {link.position}: "
                    + (
                        "a plan link without its entry"
                        if link.key is None
                        else "a result's entry is never published (its seed is the manifest's)"
                    )
                )

    def _secret(self, secret: PublishedSecret) -> DealSecret:
        """A secret of ``deals.json``, checked: hex, and a whole beacon declaration."""
        where = f"{self.where / EVIDENCE / 'deals.json'}: secret {secret.id}"
        if secret.secret is not None and not _HEX.fullmatch(secret.secret):
            raise UsageError(f"{where} is not a secret in hexadecimal")
        declared = None
        if secret.beacon_source is not None or secret.beacon_form is not None:
            try:
                declared = BeaconDeclaration.parse(
                    secret.beacon_source or "", secret.beacon_form or ""
                )
            except ValueError as exc:
                raise UsageError(f"{where}: not a beacon referee commit declares ({exc})") from None
        return DealSecret(
            secret.id,
            bytes.fromhex(secret.secret or ""),
            secret.commitment,
            1.0 if secret.secret is not None else None,
            declared,
            secret.beacon,
        )

    # -- Evidence ----------------------------------------------------------------------

    def plan(self) -> Plan:
        doc = self._plan
        data: dict[str, Any] = {"file": doc.file, "entrants": doc.entrants, "authors": doc.authors}
        if doc.rank_after_playoffs is not None:
            data["rank_after_playoffs"] = doc.rank_after_playoffs
        return Plan.from_json(json.dumps(data), self.where / EVIDENCE / "plan.json")

    def records(self) -> dict[str, EntrantRecord]:
        """The entrants' records as published (no local path)."""
        return {
            r.name: EntrantRecord(r.name, r.version, r.sha256, "", r.author)
            for r in self._plan.records
        }

    def fingerprints(self) -> dict[str, str]:
        return {r.name: r.sha256 for r in self._plan.records}

    def secrets(self) -> list[DealSecret]:
        return list(self._secrets)

    def hidden_secrets(self) -> set[int]:
        return set(self._hidden)

    def specs(self) -> dict[str, MatchSpec]:
        return dict(self._specs)

    def statuses(self) -> dict[str, MatchStatus]:
        return dict(self._statuses)

    def completed(self) -> list[StoredMatch]:
        return list(self._completed)

    def retired(self) -> dict[str, int]:
        return dict(self._retired)

    def generations(self) -> dict[str, int]:
        return dict(self._generations)

    def replacements(self) -> list[Replacement]:
        return [
            Replacement(
                r.generation, r.name, r.old_version, r.old_sha256, r.new_version, r.new_sha256
            )
            for r in self._plan.replacements
        ]

    def deal_attempts(self) -> dict[str, int]:
        return dict(self._attempts)

    def secret_of(self) -> dict[str, int]:
        return dict(self._secret_of)

    def chain(self) -> list[ChainLink]:
        return [
            ChainLink(link.position, link.key, link.entry or "", link.head)
            for link in self._chain.links
        ]

    def match_rounds(self) -> dict[str, RoundPlaces]:
        return {}  # a site publishes no comparison's records beyond its logs

    def log(self, key: str) -> tuple[str, bytes]:
        listed = self._logs.get(key)
        if listed is None:
            raise Unavailable("its log is not published (held back while its deal was open)")
        name, claimed = listed
        try:
            data = self._read("matches", name, MAX_LOG_BYTES)
        except OSError as exc:
            raise Unavailable(f"cannot read matches/{name}: {exc.strerror or exc}") from None
        digest = chain.log_digest(data)
        if claimed is not None and digest != claimed:
            self.problems.append(
                f"{key}: matches/{name} is not the log the manifest lists (its SHA-256 is "
                f"{digest[:16]}…, the manifest's {claimed[:16]}…)"
            )
        return name, data

    # -- what only a site has ----------------------------------------------------------

    def check_published(self, check: _Check) -> None:
        """The manifest's seeds, and the leaderboard re-derived from the logs alone."""
        found = check.found
        found.problems.extend(self.problems)
        if found.incomplete:
            return
        plan = self.plan()
        secrets = {s.id: s for s in self._secrets}
        seed = plan.file.seed
        for key, claimed in sorted(self._claimed_seeds.items()):
            secret = secrets.get(self._secret_of.get(key, -1))
            if secret is None or key not in self._attempts:
                continue
            if claimed != _played_seed(self._specs[key], secret, seed, self._attempts[key]):
                found.problems.append(
                    f"{key}: the manifest's seed is not the one the secret gives it"
                )
        self._leaderboard(check, plan)

    def _leaderboard(self, check: _Check, plan: Plan) -> None:
        found = check.found
        counted = [m for m in self._completed if m.spec.key not in self._retired]
        matches = [check.from_logs.get(m.spec.key, m) for m in counted]
        retired_by = [
            self._retired[key]
            for key in (m.spec.key for m in self._completed)
            if key in self._retired
        ]
        rules = plan.file.ruleset().resolve(plan.file.table_size)
        # The standings are kept, so that the site's pages are rendered again from them
        # (referee.verify.pages), not from a second ranking.
        self.standings = standings(
            RankingInput(
                matches=tuple(matches),
                entrants=tuple(plan.entrants),
                ratings=plan.file.ratings,
                rules=rules,
                playoff=plan.file.playoff,
                table_size=plan.file.table_size,
                authors=entrant_authors(self.records()),
                fingerprints=self.fingerprints(),
                after_playoffs=plan.playoff_rank(),
            )
        )
        board = Leaderboard(
            tournament=plan.file.name,
            rules=rules.name,
            standings=self.standings,
            deals=tuple(
                DealCommitment(
                    s.commitment,
                    s.secret.hex() if s.revealed is not None else None,
                    s.declared.source if s.declared else None,
                    s.beacon,
                )
                for s in self._secrets
            ),
            replaced=retired_versions(self.replacements(), retired_by),
        )
        want = json.loads(to_json(board))
        published = self._json("", "leaderboard.json")
        if not isinstance(published, dict):
            found.problems.append("leaderboard.json: not a leaderboard (not a JSON object)")
            return
        for name in want:
            if name in ("settings", "reply_times"):  # no result: when, by whom, how fast
                continue
            if published.get(name) != want[name]:
                found.problems.append(
                    f"leaderboard.json: its {name} are not what the logs give"
                    + _first_difference(published.get(name), want[name])
                )
        try:
            text = self._read("", "leaderboard.csv", MAX_EVIDENCE_BYTES)
        except OSError as exc:
            found.problems.append(f"leaderboard.csv: {exc.strerror or exc}")
        else:
            if text != to_csv(board).encode("utf-8"):
                rows = list(csv.reader(io.StringIO(text.decode("utf-8", "replace"))))
                found.problems.append(
                    "leaderboard.csv: it is not what the logs give"
                    + _first_difference(rows, list(csv.reader(io.StringIO(to_csv(board)))))
                )
        found.leaderboard = True


def _first_difference(got: Any, want: Any) -> str:
    """`` (first at entries[2]: ...)``, saying where a published value departs."""
    if isinstance(got, list) and isinstance(want, list):
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            if a != b:
                label = b.get("name") if isinstance(b, dict) else None
                return f" (first at row {i + 1}{f', {label!r}' if label else ''})"
        return f" ({len(got)} rows published, {len(want)} from the logs)"
    return ""


def _spoiled(plan: Plan, matches: Sequence[StoredMatch]) -> dict[str, int]:
    """A comparison's spoiled deals by spoiler, as its run counted them."""
    f = plan.file
    assert f.candidate is not None and f.baseline is not None
    deals = PairedDeals(f.candidate, f.baseline, f.table_size)
    for match in matches:
        spoil(deals, match)
    return spoiled_counts(deals)
