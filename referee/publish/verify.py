"""Checking a tournament from its results folder: ``referee verify``.

Anyone holding a tournament's results (its database and match logs) can check everything
its leaderboard rests on, and that the organiser dealt fairly and reported honestly:

* **the deals**: every secret matches the commitment it was announced with (its SHA-256,
  and the one published, ``--commitment``); a secret committed to before the run was dealt
  with its beacon mixed in; every match's deal seed is the one the secret gives for the
  match's deal (or, for a match that had to be played again, for its fresh deal), so no deal
  was chosen after the fact;
* **the schedule**: recomputed from the tournament plan stored with the results (the
  tournament file as it ran, the entrants and their authors; with ``--file``, checked
  against the file as published): every scheduled key is there, played, at the table and
  on the deal the schedule gives it, and nothing else is there; play-off rounds are planned
  again from the results before them and must be the rounds stored; no entrant met the
  same cards twice (and, with authors kept apart, no author either);
* **every log**: it replays through the engine from its seed, re-dealing the cards and
  re-applying every decision, and its players, places, scores, forfeits and fault kinds are
  the stored results the leaderboard is computed from;
* **the results chain** (:mod:`referee.tournament.chain`): every result and the hash of its
  log were chained in the order they were stored, and each head printed during the run
  (``--head``) is in the chain: a result changed, removed or added afterwards, or a log
  made up afterwards from the stored seed, breaks it.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.errors import RefereeError, ReplayMismatch, UsageError
from referee.matchlog import read_log
from referee.ranking.playoff import plan_round
from referee.ranking.ratings import Rater
from referee.rules import replay
from referee.rules.engine import SHUFFLE_ID
from referee.specs import MatchSpec, StoredMatch, playoff_round
from referee.tournament import chain
from referee.tournament.deals import commitment as commitment_of
from referee.tournament.deals import deal_seed, redeal_seed
from referee.tournament.model import Plan
from referee.tournament.scheduler import schedule
from referee.tournament.store import DATABASE, ChainLink, DealSecret, MatchRecord, Store

__all__ = ["Verification", "verify_results"]

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

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_results(
    results_dir: Path,
    *,
    plan: Plan | None = None,
    commitment: str | None = None,
    heads: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Verification:
    """Check the tournament stored in ``results_dir`` (see the module docstring).

    ``plan`` is the tournament as published (its file, entrants and authors): the stored
    plan must be the same. ``commitment`` is a commitment published before the run; it must
    be one of the stored secrets'. ``heads`` are results-chain heads seen during the run.
    ``progress(done, total)`` is called after each match. Raises ``UsageError`` when there
    is nothing to verify.
    """
    if not (results_dir / DATABASE).is_file():
        raise UsageError(f"{results_dir} holds no tournament results ({DATABASE} is missing)")
    try:
        with Store(results_dir, readonly=True) as store:
            return _Check(store, results_dir).run(plan, commitment, heads, progress)
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{results_dir / DATABASE} cannot be read: {exc}") from None


class _Check:
    """One verification: reads the store once, collects every problem found."""

    def __init__(self, store: Store, results_dir: Path) -> None:
        self.store = store
        self.results_dir = results_dir
        self.found = Verification()

    def problem(self, text: str) -> None:
        self.found.problems.append(text)

    def run(
        self,
        given: Plan | None,
        commitment: str | None,
        heads: Sequence[str],
        progress: Callable[[int, int], None] | None,
    ) -> Verification:
        store = self.store
        settings = store.settings()
        stored_plan = store.plan()
        if settings is None or stored_plan is None:
            raise UsageError(f"{self.results_dir}: no tournament has run there yet")
        plan = Plan.from_json(stored_plan, store.path)
        if given is not None:
            self._compare_plans(given, plan)
        secrets = self._secrets(commitment)
        specs = store.specs()
        records = store.match_records()
        done = {key for key, record in records.items() if record.status == "done"}
        self._schedule(plan, specs, records)
        matches = store.completed()
        self._playoffs(plan, specs, matches)
        attempts = store.deal_attempts()
        secret_of = store.secret_of()
        seed = plan.file.seed
        rules = plan.file.ruleset().resolve(plan.file.table_size).as_protocol()
        digests: dict[str, str] = {}
        for count, match in enumerate(matches, start=1):
            key = match.spec.key
            dealt_by = secrets.get(secret_of.get(key, -1))
            if dealt_by is None:
                self.problem(f"{key}: no deal secret is stored for it")
            else:
                self.found.unrevealed += dealt_by.revealed is None
                issue, digest = _check_match(
                    match, dealt_by, seed, attempts.get(key, 0), rules, store.log_path(key)
                )
                digests[key] = digest
                if issue:
                    self.problem(f"{key}: {issue}")
            self.found.matches += 1
            if progress is not None:
                progress(count, len(matches))
        self._deals(plan, [specs[key] for key in done if key in specs], attempts)
        self._chain(store.chain(), matches, attempts, secrets, secret_of, seed, digests, heads)
        return self.found

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

    def _secrets(self, published: str | None) -> dict[int, DealSecret]:
        secrets = {s.id: s for s in self.store.deal_secrets()}
        self.found.secrets = list(secrets.values())
        for secret in secrets.values():
            if commitment_of(secret.secret) != secret.commitment:
                self.problem(
                    f"secret {secret.id}: its SHA-256 is not the commitment {secret.commitment}"
                )
        wanted = (published or "").strip().lower()
        if published is not None and wanted not in {s.commitment for s in secrets.values()}:
            self.problem(
                f"the published commitment {published.strip()} is none of this tournament's "
                f"({', '.join(s.commitment for s in secrets.values()) or 'none'})"
            )
        return secrets

    def _schedule(
        self, plan: Plan, specs: dict[str, MatchSpec], records: dict[str, MatchRecord]
    ) -> None:
        """Every scheduled key stored, played, at its table, on its deal; nothing else."""
        try:
            expected = {s.key: s for s in schedule(plan, _STRUCTURE_ONLY)}
        except (ValueError, RefereeError) as exc:
            self.problem(f"the schedule cannot be recomputed from the stored plan: {exc}")
            return
        self.found.scheduled = len(expected)
        for key, want in expected.items():
            got = specs.get(key)
            if got is None:
                self.problem(f"{key}: scheduled, but not in the results")
                continue
            record = records[key]
            if record.status != "done":
                self.problem(f"{key}: scheduled, but {record.status} (not played to the end)")
            self._same_structure(key, want, got)
        for key in sorted(set(specs) - set(expected)):
            if playoff_round(key) is None:
                self.problem(f"{key}: in the results, but not in the schedule")

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
        """Plan every play-off round again from the results before it; compare."""
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
        rules = plan.file.ruleset().resolve(plan.file.table_size)
        last = max(stored_rounds, default=-1)
        finished = all(s.revealed is not None for s in self.found.secrets)
        rater = Rater()  # the rounds' results grow as the run's did: rate only what is new
        for round_no in range(last + 2 if finished else last + 1):
            before = [s for s in specs.values() if _round_of(s) < round_no]
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

    def _deals(
        self, plan: Plan, played: Sequence[MatchSpec], attempts: dict[str, int]
    ) -> None:
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
        matches: Sequence[StoredMatch],
        attempts: dict[str, int],
        secrets: dict[int, DealSecret],
        secret_of: dict[str, int],
        seed: int,
        digests: dict[str, str],
        heads: Sequence[str],
    ) -> None:
        stored = {m.spec.key: m for m in matches}
        first = min(secrets.values(), key=lambda s: s.id, default=None)
        if first is None:
            if links:
                self.problem("the results chain has links but no deal secret is stored")
            return
        head = chain.genesis(first.commitment)
        seen: set[str] = set()
        for link in links:
            match = stored.get(link.key)
            if match is None or link.key in seen:
                self.problem(f"results chain {link.position}: {link.key} is not a finished match")
                break
            seen.add(link.key)
            secret = secrets.get(secret_of.get(link.key, -1))
            attempt = attempts.get(link.key, 0)
            played = _played_seed(match.spec, secret, seed, attempt) if secret else 0
            entry = chain.entry_text(
                link.key,
                attempt,
                played,
                digests.get(link.key, ""),
                [(s.seat, s.name, s.place, s.score, s.forfeit, s.fault_kind) for s in match.seats],
            )
            if entry != link.entry:
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
        self.found.chain_results = len(links)
        self.found.chain_head = links[-1].head if links else None
        known = {link.head for link in links}
        for given in heads:
            if given.strip().lower() not in known:
                self.problem(f"the head {given.strip()} printed during the run is not in the chain")


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
    log_path: Path,
) -> tuple[str | None, str]:
    """What is wrong with one stored match (or ``None``), and its log's SHA-256."""
    spec = match.spec
    key = spec.key
    if spec.deal_seed != deal_seed(secret.key, "deal", seed, spec.deal_id):
        return "its stored deal seed is not the one the secret gives", ""
    try:
        data = log_path.read_bytes()
    except OSError as exc:
        return f"log: cannot read {log_path.name}: {exc.strerror or exc}", ""
    digest = chain.log_digest(data)
    try:
        lines = read_log(log_path)
    except UsageError as exc:
        return f"log: {exc}", digest
    header = lines[0]
    if header.get("match") != key:
        return f"the log is of another match ({header.get('match')!r})", digest
    if header.get("seed") != _played_seed(spec, secret, seed, attempt):
        return "the log was dealt from another seed than the secret gives", digest
    if header.get("shuffle") != SHUFFLE_ID:
        return "the log brings its own deals instead of dealing from its seed", digest
    if header.get("players") != list(spec.table):
        return "the log seats other players than the stored table", digest
    if header.get("rules") != rules:
        return "the log was played under other rules than the tournament's", digest
    try:
        replay(lines)
    except ReplayMismatch as exc:
        return f"the log does not replay: {exc}", digest
    except RefereeError as exc:
        return f"the log cannot be replayed: {exc}", digest
    logged = {
        (st["seat"], st["name"], st["place"], st["score"], bool(st["forfeit"]))
        for st in lines[-1].get("standings", [])
    }
    stored = {(st.seat, st.name, st.place, st.score, st.forfeit) for st in match.seats}
    if len(match.seats) != len(spec.table):
        return "the stored result does not cover every seat", digest
    if logged != stored:
        return (
            "the stored standings (names, places, scores or forfeits) differ from the log's",
            digest,
        )
    faults = {line["seat"]: line["kind"] for line in lines if line.get("type") == "fault"}
    if faults != {st.seat: st.fault_kind for st in match.seats if st.fault_kind is not None}:
        return "the stored faults differ from the log's", digest
    return None, digest
