"""Checking a finished tournament from its results folder: ``referee verify``.

Anyone holding a tournament's results (its database and match logs) and its revealed deal
secret can check that the organiser dealt fairly and reported honestly:

* the secret matches the commitment published when the run started (its SHA-256);
* every match's deal seed is the one the secret gives for that deal
  (:mod:`referee.tournament.deals`),
  so no deal was chosen after the fact, and every seat rotation of a deal had the same cards;
* every match log replays through the engine from that seed, line for line (the deals are
  re-dealt, every decision re-applied), so no card and no play was changed;
* the standings in each log are the stored results the leaderboard is computed from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from referee.errors import RefereeError, ReplayMismatch, UsageError
from referee.matchlog import read_log
from referee.rules import replay
from referee.specs import StoredMatch, deal_key
from referee.tournament.deals import commitment as commitment_of
from referee.tournament.deals import deal_seed
from referee.tournament.store import DATABASE, DealSecret, Store

__all__ = ["Verification", "verify_results"]


@dataclass
class Verification:
    """What :func:`verify_results` found."""

    matches: int = 0
    secrets: list[DealSecret] = field(default_factory=list)
    unrevealed: int = 0
    """Matches dealt by a secret not revealed yet (checked with the organiser's copy)."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_results(
    results_dir: Path,
    *,
    commitment: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Verification:
    """Check every finished match stored in ``results_dir`` (see the module docstring).

    ``commitment`` is a commitment published elsewhere (when the run was announced); it
    must be one of the stored secrets' commitments. ``progress(done, total)`` is called
    after each match. Raises ``UsageError`` when there is nothing to verify.
    """
    if not (results_dir / DATABASE).is_file():
        raise UsageError(f"{results_dir} holds no tournament results ({DATABASE} is missing)")
    found = Verification()
    with Store(results_dir) as store:
        settings = store.settings()
        if settings is None:
            raise UsageError(f"{results_dir}: no tournament has run there yet")
        secrets = {s.id: s for s in store.deal_secrets()}
        found.secrets = list(secrets.values())
        for secret in found.secrets:
            if commitment_of(secret.secret) != secret.commitment:
                found.problems.append(
                    f"secret {secret.id}: its SHA-256 is not the commitment {secret.commitment}"
                )
        if commitment is not None and commitment.strip().lower() not in {
            s.commitment for s in found.secrets
        }:
            found.problems.append(
                f"the published commitment {commitment.strip()} is none of this tournament's "
                f"({', '.join(s.commitment for s in found.secrets) or 'none'})"
            )
        secret_of = store.secret_of()
        matches = store.completed()
        for done, match in enumerate(matches, start=1):
            dealt_by = secrets.get(secret_of.get(match.spec.key, -1))
            if dealt_by is None:
                found.problems.append(f"{match.spec.key}: no deal secret is stored for it")
            else:
                found.unrevealed += dealt_by.revealed is None
                problem = _check_match(
                    match, dealt_by.secret, int(settings["seed"]), store.log_path(match.spec.key)
                )
                if problem:
                    found.problems.append(f"{match.spec.key}: {problem}")
            found.matches += 1
            if progress is not None:
                progress(done, len(matches))
    return found


def _check_match(match: StoredMatch, secret: bytes, seed: int, log_path: Path) -> str | None:
    """What is wrong with one stored match, or ``None``."""
    key = match.spec.key
    expected = deal_seed(secret, "deal", seed, deal_key(key))
    if match.spec.deal_seed != expected or match.spec.match_seed != expected:
        return "its stored deal seed is not the one the secret gives"
    try:
        lines = read_log(log_path)
    except UsageError as exc:
        return f"log: {exc}"
    header = lines[0]
    if header.get("match") != key:
        return f"the log is of another match ({header.get('match')!r})"
    if header.get("seed") != expected:
        return "the log was dealt from another seed than the secret gives"
    try:
        replay(lines)
    except ReplayMismatch as exc:
        return f"the log does not replay: {exc}"
    except RefereeError as exc:
        return f"the log cannot be replayed: {exc}"
    logged = {
        (st["seat"], st["place"], bool(st["forfeit"])) for st in lines[-1].get("standings", [])
    }
    stored = {(st.seat, st.place, st.forfeit) for st in match.seats}
    if logged != stored:
        return "the stored standings differ from the log's"
    if len(match.seats) != len(match.spec.table):
        return "the stored result does not cover every seat"
    return None
