"""A secret nobody can choose: a commitment that fixes the beacon, and verify checking it.

The second red team chose among 12 secrets the one that suited a favourite. A commitment
published before entries close stops that only if the run cannot choose either: not the
secret (committed), not which public value is "the beacon" (its source is declared with
the commitment and bound into it), and not how that value is spelt (its form is declared
too, and every spelling of the value is brought to one). These tests are the organiser
trying anyway: a tampered beacon, a beacon left out after committing, the commitment of
another secret, a re-spelled beacon, and a declaration changed afterwards.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.runs.tournament import commit_tournament, run_tournament
from referee.testing import InProcessExecutor
from referee.tournament.deals import BeaconDeclaration, commitment, deal_seed, dealing_key
from referee.tournament.file import load_tournament
from referee.tournament.store import Store
from referee.verify.audit import verify_results
from tests.tournament.verify_field import HANDLERS, NAMES, StopsAfter, write

DRAND = BeaconDeclaration.parse("drand quicknet round 12345678, randomness", "hex:32")
BEACON = "a3" * 16 + "0f" * 16
"""The value the declared round gave (as the visitor looks it up)."""


def _five(folder: Path) -> Path:
    """Five bots at tables of 4: 20 matches, each dealt its own cards."""
    return write(folder, bots=NAMES[:5])


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished tournament whose secret was committed to with :data:`DRAND`, run with
    the beacon spelt in capitals with a 0x in front; and the published commitment."""
    path = _five(tmp_path_factory.mktemp("beacon"))
    tournament = load_tournament(path)
    published = commit_tournament(tournament, DRAND).commitment
    summary = run_tournament(tournament, InProcessExecutor(HANDLERS), beacon="0x" + BEACON.upper())
    assert summary.done == summary.total == 20
    return tournament.results_dir, published


def _copy(committed: tuple[Path, str], tmp_path: Path) -> Path:
    results = tmp_path / "t.results"
    shutil.copytree(committed[0], results)
    return results


def _sql(results: Path, statement: str, *args: object) -> None:
    db = sqlite3.connect(results / "results.sqlite")
    db.execute(statement, args)
    db.commit()
    db.close()


# -- the declaration ------------------------------------------------------------------


def test_every_spelling_of_a_value_is_one_and_other_forms_are_refused() -> None:
    spellings = [BEACON, BEACON.upper(), "0x" + BEACON, f"  0X{BEACON.upper()}\n"]
    assert {DRAND.normalise(s) for s in spellings} == {BEACON}
    lottery = BeaconDeclaration.parse("the lottery draw of 2026-12-05", "numbers:6")
    assert lottery.normalise("42, 4 08 15;16 23") == lottery.normalise("4 8 15 16 23 42")
    assert lottery.normalise("042 4 8 15 16 23") == "4 8 15 16 23 42"
    for value, why in [
        (BEACON[:-2], "this has 62 digits"),
        (BEACON + "00", "this has 66 digits"),
        ("g" * 64, "this is not hex"),
        ("lottery 2026-12-05: " + BEACON, "this is not hex"),
        ("", "this has 0 digits"),
    ]:
        with pytest.raises(ValueError, match=why):
            DRAND.normalise(value)
    with pytest.raises(ValueError, match="'x' is not a whole number"):
        lottery.normalise("4 8 x 16 23 42")
    with pytest.raises(ValueError, match="this has 7 numbers"):
        lottery.normalise("1 2 3 4 5 6 7")
    with pytest.raises(ValueError, match="is not one of hex:N"):
        BeaconDeclaration.parse("a newspaper headline", "text")
    with pytest.raises(ValueError, match="N is 4 to 512"):
        BeaconDeclaration.parse("drand", "hex:2")
    with pytest.raises(ValueError, match="control characters"):
        BeaconDeclaration.parse("drand\x1b[31m round 5", "hex:32")
    with pytest.raises(ValueError, match="empty"):
        BeaconDeclaration.parse("  ", "hex:32")
    with pytest.raises(ValueError, match="longer than 500 bytes"):
        BeaconDeclaration.parse("é" * 300, "hex:32")


def test_the_commitment_binds_the_declaration() -> None:
    secret = bytes(range(32))
    assert commitment(secret) == hashlib.sha256(secret).hexdigest()
    text = f"referee-deal-commitment\0{secret.hex()}\0hex:32\0{DRAND.source}"
    assert commitment(secret, DRAND) == hashlib.sha256(text.encode()).hexdigest()
    other_round = BeaconDeclaration.parse("drand quicknet round 12345679, randomness", "hex:32")
    other_form = BeaconDeclaration.parse(DRAND.source, "hex:64")
    found = {commitment(secret, d) for d in (None, DRAND, other_round, other_form)}
    assert len(found) == 4


# -- committing and running -------------------------------------------------------------


def test_a_committed_secret_deals_only_with_its_declared_beacon(
    committed: tuple[Path, str], tmp_path: Path
) -> None:
    tournament = load_tournament(_five(tmp_path / "t"))
    first = commit_tournament(tournament, DRAND)
    assert commit_tournament(tournament, DRAND).commitment == first.commitment  # until dealt
    with pytest.raises(UsageError, match=r"already committed to .* a commitment stands"):
        commit_tournament(tournament, BeaconDeclaration.parse("another round", "hex:32"))
    with pytest.raises(
        UsageError, match=r"give that value with --beacon \(32 bytes, written as 64"
    ):
        run_tournament(tournament, InProcessExecutor(HANDLERS))
    with pytest.raises(UsageError, match="--beacon: the beacon is declared as 32 bytes"):
        run_tournament(tournament, InProcessExecutor(HANDLERS), beacon="lottery: 4 8 15")
    run_tournament(tournament, StopsAfter(5), beacon=BEACON.upper())
    with pytest.raises(UsageError, match="dealt with the beacon"):
        run_tournament(tournament, InProcessExecutor(HANDLERS), beacon="cd" * 32)
    with pytest.raises(UsageError, match="a run has already dealt"):
        other = load_tournament(_five(tmp_path / "u"))
        run_tournament(other, StopsAfter(3))
        commit_tournament(other, DRAND)
    run_tournament(tournament, StopsAfter(5), beacon="0x" + BEACON)  # re-spelt: the same
    summary = run_tournament(tournament, InProcessExecutor(HANDLERS))  # recorded: optional now
    assert summary.done == summary.total
    with Store(tournament.results_dir) as store:
        [secret] = store.deal_secrets()
        spec = store.specs()[sorted(store.done_keys())[0]]
    assert secret.beacon == BEACON and secret.declared == DRAND
    # The beacon decides the cards; every spelling of it gives the same ones.
    assert spec.deal_seed == deal_seed(dealing_key(secret.secret, BEACON), "deal", 11, spec.deal_id)
    other_seed = deal_seed(dealing_key(secret.secret, "cd" * 32), "deal", 11, spec.deal_id)
    assert other_seed != spec.deal_seed
    # The committed fixture ran with a third spelling and verifies with a fourth.
    results, published = committed
    found = verify_results(results, commitments=[published], beacons=[f" {BEACON.upper()} "])
    assert found.ok, found.problems


def test_a_beacon_without_a_commitment_before_the_run_is_refused(tmp_path: Path) -> None:
    tournament = load_tournament(_five(tmp_path / "t"))
    with pytest.raises(UsageError, match="commit first"):
        run_tournament(tournament, InProcessExecutor(HANDLERS), beacon=BEACON)
    run_tournament(tournament, StopsAfter(5))
    with pytest.raises(UsageError, match="drawn when the first run started"):
        run_tournament(tournament, InProcessExecutor(HANDLERS), beacon=BEACON)


# -- verify, against an organiser who tries anyway -------------------------------------


def test_a_tampered_beacon_fails_against_the_one_looked_up(
    committed: tuple[Path, str], tmp_path: Path
) -> None:
    results = _copy(committed, tmp_path)
    _, published = committed
    _sql(results, "UPDATE deal_secrets SET beacon = ?", "cd" * 32)
    problems = verify_results(results, commitments=[published], beacons=[BEACON]).problems
    assert (
        f"secret 1: the beacon given ({BEACON}) is not the one its matches were dealt with "
        f"('{'cd' * 32}'); the beacon is {DRAND.source}"
    ) in problems
    assert any("its stored deal seed is not the one the secret gives" in p for p in problems)
    # Untouched, the beacon the visitor looked up must still be the right one.
    honest = committed[0]
    problems = verify_results(honest, beacons=["ee" * 32]).problems
    assert problems == [
        f"secret 1: the beacon given ({'ee' * 32}) is not the one its matches were dealt with "
        f"('{BEACON}'); the beacon is {DRAND.source}"
    ]
    wrong_form = verify_results(honest, beacons=["4 8 15 16 23 42"]).problems
    assert wrong_form == [
        "secret 1: the beacon given does not fit: the beacon is declared as 32 bytes, "
        "written as 64 lower-case hex digits; this is not hex"
    ]
    twice = verify_results(honest, beacons=[BEACON, BEACON]).problems
    assert twice == [
        "2 beacons given for 1 secrets committed to before their runs: give one --beacon per "
        "committed secret, oldest first"
    ]


def test_a_beacon_left_out_after_the_commitment_fails(
    committed: tuple[Path, str], tmp_path: Path
) -> None:
    """The organiser deals from the committed secret alone (cards they could foresee)."""
    results = _copy(committed, tmp_path)
    _sql(results, "UPDATE deal_secrets SET beacon = NULL")
    problems = verify_results(results).problems
    assert (
        f"secret 1 was committed to before the run, with its beacon declared ({DRAND.source}), "
        "but no beacon was mixed into the 20 matches it dealt: their cards depend on nothing "
        "revealed after the commitment"
    ) in problems


def test_the_commitment_of_another_secret_fails(
    committed: tuple[Path, str], tmp_path: Path
) -> None:
    """The organiser publishes one commitment, keeps that secret unused in the store, and
    deals every match with a second secret of their choosing."""
    results = _copy(committed, tmp_path)
    _, published = committed
    chosen = bytes(range(32))
    _sql(
        results,
        "INSERT INTO deal_secrets (id, secret, commitment, created, revealed, beacon_source, "
        "beacon_form, beacon) VALUES (2, ?, ?, 0, 1, ?, ?, ?)",
        chosen.hex(),
        commitment(chosen, DRAND),
        DRAND.source,
        DRAND.form,
        BEACON,
    )
    _sql(results, "UPDATE matches SET secret_id = 2")
    problems = verify_results(results, commitments=[published]).problems
    assert (
        f"the published commitment {published} is that of secret 1, which dealt none of the "
        "stored matches"
    ) in problems
    assert (
        f"secret 2 (commitment {commitment(chosen, DRAND)}) dealt 20 of the stored matches, "
        "but it is not a commitment given (--commitment): those matches were not dealt by a "
        "secret published"
    ) in problems
    unknown = verify_results(committed[0], commitments=["00" * 32]).problems
    assert any(p.startswith(f"the published commitment {'00' * 32} is none of") for p in unknown)


def test_a_re_spelled_beacon_fails(committed: tuple[Path, str], tmp_path: Path) -> None:
    """One value, another spelling (another key, other cards): refused as stored."""
    results = _copy(committed, tmp_path)
    _sql(results, "UPDATE deal_secrets SET beacon = ?", BEACON.upper())
    problems = verify_results(results).problems
    assert (
        f"secret 1: the recorded beacon '{BEACON.upper()}' is not written as declared "
        f"({BEACON}): a beacon has one spelling, or the organiser could choose among them"
    ) in problems


def test_a_declaration_changed_afterwards_breaks_the_commitment(
    committed: tuple[Path, str], tmp_path: Path
) -> None:
    """Another round of the beacon, or the declaration removed (to pass the secret off as
    one drawn by the run): the published commitment no longer matches."""
    _, published = committed
    results = _copy(committed, tmp_path)
    _sql(results, "UPDATE deal_secrets SET beacon_source = 'drand quicknet round 12345679'")
    problems = verify_results(results).problems
    assert any(
        p.startswith(
            "secret 1: its SHA-256 (with the beacon declared with it) is not the commitment"
        )
        for p in problems
    )
    stripped = _copy(committed, tmp_path / "stripped")
    db = sqlite3.connect(stripped / "results.sqlite")
    (secret,) = db.execute("SELECT secret FROM deal_secrets").fetchone()
    plain = hashlib.sha256(bytes.fromhex(secret)).hexdigest()
    db.execute(
        "UPDATE deal_secrets SET beacon_source = NULL, beacon_form = NULL, commitment = ?",
        (plain,),
    )
    db.commit()
    db.close()
    problems = verify_results(stripped, commitments=[published]).problems
    assert any(p.startswith(f"the published commitment {published} is none of") for p in problems)
    assert any("a beacon" in p and "none was declared" in p for p in problems)


def test_a_beacon_given_for_a_secret_drawn_by_the_run_fails(tmp_path: Path) -> None:
    tournament = load_tournament(_five(tmp_path / "t"))
    run_tournament(tournament, InProcessExecutor(HANDLERS))
    problems = verify_results(tournament.results_dir, beacons=[BEACON]).problems
    assert problems == [
        "a beacon was given (--beacon), but no secret of this tournament was committed to "
        "before its run with a beacon declared: its cards depend on no beacon"
    ]


# -- on the command line ----------------------------------------------------------------


def test_commit_prints_what_to_publish_and_verify_checks_the_beacon(
    committed: tuple[Path, str], tmp_path: Path
) -> None:
    path = _five(tmp_path / "t")
    args = ["tournament", "commit", str(path), "--beacon-source", DRAND.source]
    result = CliRunner().invoke(main, [*args, "--beacon-form", "HEX:32"])
    assert result.exit_code == 0, result.output
    with Store(load_tournament(path).results_dir) as store:
        [secret] = store.deal_secrets()
    assert result.output.splitlines()[:4] == [
        f"deal secret committed: sha256 {secret.commitment}",
        f"beacon: {DRAND.source}",
        "beacon form: hex:32 (32 bytes, written as 64 lower-case hex digits)",
        f"tournament file: sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}",
    ]
    assert "--beacon VALUE" in result.output
    bad = CliRunner().invoke(main, [*args, "--beacon-form", "text"])
    assert bad.exit_code == 2 and "commit: the beacon form 'text' is not one of" in bad.output
    missing = CliRunner().invoke(main, ["tournament", "commit", str(path)])
    assert missing.exit_code == 2 and "--beacon-source" in missing.output
    refused = CliRunner().invoke(main, ["tournament", "run", str(path), "--beacon", "\x1b[31m"])
    assert refused.exit_code == 2 and "control characters" in refused.output
    results, published = committed
    ok = CliRunner().invoke(
        main, ["verify", str(results), "--commitment", published, "--beacon", BEACON.upper()]
    )
    assert ok.exit_code == 0, ok.output
    assert (
        f"deal secret 1: commitment sha256 {published} (revealed; committed to before its "
        f"run, the beacon declared: {DRAND.source} (hex:32); beacon '{BEACON}' mixed in; "
        "dealt 20 matches)"
    ) in ok.output
    wrong = CliRunner().invoke(main, ["verify", str(results), "--beacon", "ab" * 32])
    assert wrong.exit_code == 1 and "FAIL secret 1: the beacon given" in wrong.output
    control = CliRunner().invoke(main, ["verify", str(results), "--beacon", "\x07"])
    assert (
        control.exit_code == 2 and "--beacon: the beacon holds control characters" in control.output
    )


def test_the_leaderboard_names_the_beacon_with_the_commitment(
    committed: tuple[Path, str],
) -> None:
    from referee.publish import render
    from referee.publish.source import leaderboard, load_results

    results, published = committed
    tournament = load_tournament(results.parent / "t.toml")
    board = leaderboard(load_results(tournament, results))
    [deal] = board.as_dict()["deals"]
    assert deal["commitment"] == published
    assert (deal["beacon_source"], deal["beacon"]) == (DRAND.source, BEACON)
    sentence = f"committed to sha256 {published} with the beacon {DRAND.source} ({BEACON} mixed in)"
    assert sentence in render(board, "md")
