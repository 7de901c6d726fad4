"""``referee verify SITE``: anyone with a published site can check it, and tampering fails.

A finished fake tournament (real engine, runner, coordinator, store and logs; in-memory
bots, one of them hostile and faulting) is published once; each test copies the site and
changes one thing in it, as someone between the organiser and a reader could: a log, the
manifest, the leaderboard, the results chain, the deal secret. Verify must name the change
and exit 1; the untouched copy verifies with exit 0. A site published mid-run must say it
cannot be checked in full yet; a site folder is untrusted input (links, huge files, bad
JSON), refused in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.tournament.file import Tournament
from referee.verify import verify_folder, verify_site
from tests.publish.conftest import play_fake, write_fake_tournament


@pytest.fixture(scope="module")
def published(fake_tournament: Tournament, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("published") / "site"
    publish_site(load_results(fake_tournament), out)
    return out


@pytest.fixture
def site(published: Path, tmp_path: Path) -> Path:
    """A copy of the published site, to change."""
    copy = tmp_path / "site"
    shutil.copytree(published, copy, symlinks=True)
    return copy


def _verify(folder: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["verify", str(folder), *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _manifest(site: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((site / "verification" / "manifest.json").read_text())


def _write_manifest(site: Path, data: dict) -> None:  # type: ignore[type-arg]
    (site / "verification" / "manifest.json").write_text(json.dumps(data))


def test_an_honest_site_verifies_from_its_own_files(
    published: Path, fake_tournament: Tournament
) -> None:
    found = verify_site(published)
    assert found.ok, found.problems
    assert found.source == "site" and found.leaderboard
    assert found.matches == found.scheduled == 24 and found.chain_results == 24
    code, output = _verify(published)
    assert code == 0, output
    assert "ok: 24 matches of the published site verified" in output
    assert "the leaderboard is the one its logs give" in output
    # The head the run printed pins the site's results too.
    results = load_results(fake_tournament)
    head = results.chain[-1].head
    assert _verify(published, "--head", head)[0] == 0
    assert f"results chain: 24 results, head {head}" in output
    commitment = results.secrets[0].commitment
    assert _verify(published, "--commitment", commitment)[0] == 0
    assert _verify(published, "--commitment", "0" * 64)[0] == 1


def test_the_site_carries_what_verification_needs(published: Path) -> None:
    folder = published / "verification"
    assert sorted(p.name for p in folder.iterdir()) == [
        "chain.json",
        "deals.json",
        "manifest.json",
        "plan.json",
        "site.json",
    ]
    plan = json.loads((folder / "plan.json").read_text())
    assert plan["file"].startswith('name = "fake"') and len(plan["entrants"]) == 4
    assert all(len(r["sha256"]) == 64 and "path" not in r for r in plan["records"])
    [secret] = json.loads((folder / "deals.json").read_text())["secrets"]
    assert secret["revealed"] and len(secret["secret"]) == 64
    matches = _manifest(published)["matches"]
    assert len(matches) == 24 and all(m["status"] == "done" for m in matches)
    faulted = [s for m in matches for s in m["seats"] if s["fault"]]
    assert faulted and {s["fault"] for s in faulted} == {"protocol"}
    for m in matches:
        assert (published / "matches" / m["log"]).is_file() and len(m["log_sha256"]) == 64
    links = json.loads((folder / "chain.json").read_text())["links"]
    assert [link["position"] for link in links] == list(range(1, 26))
    assert all(set(link) == {"position", "key", "head", "entry"} for link in links)
    assert links[0]["key"] is None and json.loads(links[0]["entry"])["entrants"]  # the plan
    assert all(link["entry"] is None for link in links[1:])  # no seeds
    footer = (published / "index.html").read_text()
    assert "referee verify" in footer and "this folder" in footer


def test_a_tampered_log_fails(site: Path) -> None:
    entry = _manifest(site)["matches"][3]
    log = site / "matches" / entry["log"]
    lines = log.read_text().splitlines()
    last = json.loads(lines[-1])
    last["standings"][0]["score"] += 5  # a better result for the first seat
    log.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    code, output = _verify(site)
    assert code == 1
    assert f"FAIL {entry['key']}: " in output
    assert "is not the log the manifest lists" in output


def test_a_log_swapped_for_another_matchs_fails(site: Path) -> None:
    a, b = _manifest(site)["matches"][:2]
    shutil.copy(site / "matches" / b["log"], site / "matches" / a["log"])
    problems = verify_site(site).problems
    assert any(p.startswith(a["key"]) and "another match" in p for p in problems)


def test_a_tampered_manifest_fails(site: Path) -> None:
    data = _manifest(site)
    entry = data["matches"][5]
    entry["seats"][1]["score"] += 7  # a better result than its log's
    _write_manifest(site, data)
    problems = verify_site(site).problems
    assert any(p.startswith(entry["key"]) and "stored standings" in p for p in problems), problems


def test_a_match_removed_from_the_manifest_fails(site: Path) -> None:
    data = _manifest(site)
    gone = data["matches"].pop(2)
    _write_manifest(site, data)
    problems = verify_site(site).problems
    assert f"{gone['key']}: scheduled, but not in the results" in problems


def test_a_tampered_leaderboard_fails(site: Path) -> None:
    path = site / "leaderboard.json"
    board = json.loads(path.read_text())
    first, second = board["entries"][:2]
    first["name"], second["name"] = second["name"], first["name"]
    path.write_text(json.dumps(board))
    code, output = _verify(site)
    assert code == 1
    assert "FAIL leaderboard.json: its entries are not what the logs give (first at row 1" in output


def test_a_tampered_csv_leaderboard_fails(site: Path) -> None:
    path = site / "leaderboard.csv"
    path.write_text(path.read_text().replace('"1"', '"9"', 1))
    problems = verify_site(site).problems
    assert problems == ["leaderboard.csv: it is not what the logs give (first at row 2)"]


def test_a_tampered_chain_fails(site: Path) -> None:
    path = site / "verification" / "chain.json"
    chain = json.loads(path.read_text())
    chain["links"][10]["head"] = "0" * 64
    path.write_text(json.dumps(chain))
    problems = verify_site(site).problems
    assert "results chain 11: the head does not follow" in problems


def test_a_chain_with_results_swapped_fails(site: Path) -> None:
    path = site / "verification" / "chain.json"
    chain = json.loads(path.read_text())
    links = chain["links"]
    links[3]["key"], links[4]["key"] = links[4]["key"], links[3]["key"]
    path.write_text(json.dumps(chain))
    assert any(p.startswith("results chain 4:") for p in verify_site(site).problems)


def test_a_tampered_secret_fails(site: Path) -> None:
    path = site / "verification" / "deals.json"
    deals = json.loads(path.read_text())
    deals["secrets"][0]["secret"] = "ab" * 32
    path.write_text(json.dumps(deals))
    problems = verify_site(site).problems
    assert any("is not the commitment" in p for p in problems)
    assert any("its stored deal seed is not the one the secret gives" in p for p in problems)


def test_a_site_published_mid_run_cannot_be_fully_checked_yet(tmp_path: Path) -> None:
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1))
    results = load_results(spec)
    one = sorted(results.records)[0]
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    with db:  # as while the run plays: a match under way, the secret not revealed
        db.execute("UPDATE deal_secrets SET revealed = NULL")
        db.execute("UPDATE matches SET status = 'running' WHERE key = ?", (one,))
    db.close()
    secret = results.secrets[0].secret_hex
    assert secret is not None
    out = tmp_path / "site"
    publish_site(load_results(spec), out)
    for path in out.rglob("*"):  # the unrevealed secret is nowhere in the site
        assert not path.is_file() or secret not in path.read_text(errors="replace"), path
    data = _manifest(out)
    open_deal = results.specs[one].deal_id
    for m in data["matches"]:
        if m["deal_id"] == open_deal:
            assert m["seed"] is None and m["deal_seed"] is None and m["log"] is None
    found = verify_site(out)
    assert not found.ok and found.incomplete and found.problems == []
    code, output = _verify(out)
    assert code == 1
    assert "NOT FULLY CHECKED: the deal secret is not revealed yet" in output
    assert "FAIL" not in output


def test_verify_tells_a_site_from_a_results_folder(
    published: Path, fake_tournament: Tournament, tmp_path: Path
) -> None:
    assert verify_folder(fake_tournament.results_dir).source == "results"
    assert verify_folder(published).source == "site"
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="neither a tournament's results folder"):
        verify_folder(tmp_path / "empty")


# --------------------------------------------------------------------------- hostile sites


def test_a_symlinked_log_is_refused(site: Path) -> None:
    entry = _manifest(site)["matches"][0]
    log = site / "matches" / entry["log"]
    log.unlink()
    log.symlink_to("/etc/passwd")
    problems = verify_site(site).problems
    assert any(
        p.startswith(entry["key"]) and "is a symbolic link; a published site holds files only" in p
        for p in problems
    )


def test_a_symlinked_verification_folder_is_refused(site: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.move(site / "verification", elsewhere)
    (site / "verification").symlink_to(elsewhere)
    code, output = _verify(site)
    assert code == 2 and output.count("\n") == 1
    assert "verification is a symbolic link" in output


def test_a_huge_file_is_refused_without_being_read(site: Path) -> None:
    path = site / "verification" / "manifest.json"
    with path.open("r+b") as handle:
        handle.truncate(600 * 1024 * 1024)  # sparse: no disk spent
    code, output = _verify(site)
    assert code == 2 and output.count("\n") == 1
    assert "manifest.json has 629,145,600 bytes; at most 536,870,912 are read" in output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"format": 1, "links": [', "chain.json: not valid JSON (line 1, column 25"),
        ("[1, 2]", "chain.json: not what referee publish writes: the file: got a list of 2"),
        (
            '{"format": 3, "links": [{"position": "1", "key": "k", "head": "h", "entry": null}]}',
            "chain.json: not what referee publish writes: links[0].position: got '1' (text); "
            "use a whole number",
        ),
        (
            '{"format": 3, "links": [], "extra": 1}',
            "chain.json: not what referee publish writes: extra: a key referee publish never "
            "writes",
        ),
        (
            '{"format": 1, "links": []}',
            "chain.json: written by another version of the referee (format 1, this one reads "
            "3); verify it with the version that published it (the site's settings name it)",
        ),
        (
            '{"format": 3, "links": [{"position": 1, "key": null, "head": "h", "entry": null}]}',
            "chain.json: link 1: a plan link without its entry",
        ),
        (
            '{"format": 3, "links": [{"position": 1, "key": "k", "head": "h", "entry": "{}"}]}',
            "chain.json: link 1: a result's entry is never published (its seed is the manifest's)",
        ),
        ("[" * 100_000, "chain.json: not valid JSON"),
    ],
)
def test_a_verification_file_that_publish_never_writes_is_refused_in_one_line(
    site: Path, text: str, expected: str
) -> None:
    (site / "verification" / "chain.json").write_text(text)
    code, output = _verify(site)
    assert code == 2 and output.count("\n") == 1, output
    assert expected in output


def test_a_log_name_that_leaves_the_folder_is_refused(site: Path) -> None:
    data = _manifest(site)
    data["matches"][0]["log"] = "../../etc/passwd"
    _write_manifest(site, data)
    code, output = _verify(site)
    assert code == 2 and "is not a log name the site uses" in output


def test_a_fifo_in_place_of_a_log_is_refused_without_blocking(site: Path) -> None:
    entry = _manifest(site)["matches"][1]
    log = site / "matches" / entry["log"]
    log.unlink()
    os.mkfifo(log)
    problems = verify_site(site).problems
    assert any(p.startswith(entry["key"]) and "not a regular file" in p for p in problems)


def test_a_site_with_play_offs_and_a_gauntlet_verifies(tmp_path: Path) -> None:
    """Play-off rounds are planned again from the site's manifest; a gauntlet's
    schedule is recomputed from its plan (the candidate, the draws)."""
    playoffs = play_fake(
        write_fake_tournament(
            tmp_path / "po", deals=1, extra="playoff = { top = 3, until = 0.99, budget = 12 }"
        )
    )
    results = load_results(playoffs)
    assert any(key.startswith("po/") for key in results.specs)
    publish_site(results, tmp_path / "po-site")
    found = verify_site(tmp_path / "po-site")
    assert found.ok, found.problems
    assert found.matches > found.scheduled
    gauntlet = play_fake(
        write_fake_tournament(
            tmp_path / "g", deals=1, extra='format = "gauntlet"\ncandidate = "polite"\nmatches = 2'
        )
    )
    publish_site(load_results(gauntlet), tmp_path / "g-site")
    assert verify_site(tmp_path / "g-site").ok


def test_a_plan_too_large_to_schedule_is_a_problem_not_a_hang(site: Path) -> None:
    path = site / "verification" / "plan.json"
    plan = json.loads(path.read_text())
    bots = "".join(f'[[bots]]\npath = "b{i}.py"\n' for i in range(64))
    plan["file"] = f'name = "fake"\ntable_size = 6\nallow_twins = true\n{bots}'
    plan["entrants"] = [f"b{i}" for i in range(64)]
    path.write_text(json.dumps(plan))
    problems = verify_site(site).problems
    assert any(
        p.startswith("the stored plan cannot be scheduled: the schedule would be") for p in problems
    )


def test_play_off_round_numbers_with_a_gap_are_refused_without_planning_each(
    site: Path,
) -> None:
    path = site / "verification" / "plan.json"
    plan = json.loads(path.read_text())
    plan["file"] = plan["file"].replace("\n", "\nplayoff = { top = 3, budget = 30 }\n", 1)
    path.write_text(json.dumps(plan))
    data = _manifest(site)
    extra = dict(data["matches"][0], key="po/099999/324ae57865d2/d009/r0", status="pending")
    extra.update(seats=[], log=None, log_sha256=None)
    data["matches"].append(extra)
    _write_manifest(site, data)
    problems = verify_site(site).problems
    assert any("play-off rounds are not rounds 1 to 1" in p for p in problems), problems


@pytest.mark.parametrize("key", ["po/x/1/d0/r0", "../../etc", "rr/" + "a" * 300, "rr/a b/c"])
def test_a_key_the_referee_never_makes_is_refused(site: Path, key: str) -> None:
    data = _manifest(site)
    data["matches"][0]["key"] = key
    _write_manifest(site, data)
    with pytest.raises(UsageError, match="is not a match key the referee makes"):
        verify_site(site)


# -- the plan it binds, and a secret committed to with its beacon -----------------------


def test_a_changed_plan_fails_against_the_chained_plan_link(site: Path) -> None:
    """plan.json edited (a comment only, no match changes): the chain's plan link, whose
    entry the site carries, is no longer the plan; the link edited too breaks its head."""
    path = site / "verification" / "plan.json"
    plan = json.loads(path.read_text())
    plan["file"] += "\n# seen to it afterwards\n"
    path.write_text(json.dumps(plan))
    problems = verify_site(site).problems
    assert (
        "results chain 1: the stored plan is not the one chained (they differ in the "
        "tournament file): it was changed afterwards"
    ) in problems
    chain_path = site / "verification" / "chain.json"
    links = json.loads(chain_path.read_text())
    entry = json.loads(links["links"][0]["entry"])
    entry["file"] = "0" * 64
    links["links"][0]["entry"] = json.dumps(entry)
    chain_path.write_text(json.dumps(links))
    assert "results chain 1: the head does not follow" in verify_site(site).problems


DRAND_SOURCE = "drand quicknet round 12345678, randomness"
BEACON = "5c" * 32


@pytest.fixture(scope="module")
def committed_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The site of a fake tournament committed to with a drand round, and its commitment."""
    from referee.runs.tournament import commit_tournament, run_tournament
    from referee.testing import InProcessExecutor
    from referee.tournament.deals import BeaconDeclaration
    from referee.tournament.file import load_tournament
    from tests.publish.conftest import HANDLERS

    folder = tmp_path_factory.mktemp("committed")
    spec = load_tournament(write_fake_tournament(folder / "t", deals=1))
    published = commit_tournament(spec, BeaconDeclaration.parse(DRAND_SOURCE, "hex:32"))
    run_tournament(spec, InProcessExecutor(HANDLERS), beacon=BEACON.upper())
    out = folder / "site"
    publish_site(load_results(spec), out)
    return out, published.commitment


def test_a_site_carries_the_declared_beacon_and_verify_checks_the_one_looked_up(
    committed_site: tuple[Path, str], tmp_path: Path
) -> None:
    site, commitment = committed_site
    [secret] = json.loads((site / "verification" / "deals.json").read_text())["secrets"]
    assert (secret["commitment"], secret["beacon_source"], secret["beacon_form"]) == (
        commitment,
        DRAND_SOURCE,
        "hex:32",
    )
    assert secret["beacon"] == BEACON
    index = (site / "index.html").read_text()
    assert f'with the beacon {DRAND_SOURCE} (<code class="hash">{BEACON}</code> mixed in)' in index
    code, output = _verify(site, "--commitment", commitment, "--beacon", "0x" + BEACON)
    assert code == 0, output
    assert f"the beacon declared: {DRAND_SOURCE} (hex:32); beacon '{BEACON}' mixed in" in output
    code, output = _verify(site, "--beacon", "ab" * 32)
    assert code == 1
    assert f"FAIL secret 1: the beacon given ({'ab' * 32}) is not the one its matches" in output


def test_a_site_with_its_beacon_or_declaration_changed_fails(
    committed_site: tuple[Path, str], tmp_path: Path
) -> None:
    site, commitment = committed_site
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    path = copy / "verification" / "deals.json"
    deals = json.loads(path.read_text())
    deals["secrets"][0]["beacon_source"] = "drand quicknet round 12345679, randomness"
    deals["secrets"][0]["beacon"] = "ab" * 32
    path.write_text(json.dumps(deals))
    problems = verify_site(copy, commitments=[commitment]).problems
    assert any(
        p.startswith("secret 1: its SHA-256 (with the beacon declared with it) is not")
        for p in problems
    )
    assert any("its stored deal seed is not the one the secret gives" in p for p in problems)
    deals["secrets"][0]["beacon"] = None
    path.write_text(json.dumps(deals))
    problems = verify_site(copy).problems
    assert any("but no beacon was mixed into the 12 matches it dealt" in p for p in problems)
    deals["secrets"][0]["beacon_form"] = "text"
    path.write_text(json.dumps(deals))
    code, output = _verify(copy)
    assert code == 2 and output.count("\n") == 1
    assert "deals.json: secret 1: not a beacon referee commit declares" in output
