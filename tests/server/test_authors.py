"""Authors and tokens of the competition server: tokens printed once and stored only as
digests, authentication that fails after revoke and rotate, hostile names refused in one
line, an audit log without a token in it, and a server database that says what it is."""

from __future__ import annotations

import hmac
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.server.authors import TOKEN_PREFIX, AuthorBook
from referee.server.database import DATABASE, ServerDatabase

ROOT = Path(__file__).resolve().parents[2]

LEAGUE = """\
name = "open"
format = "league"
table_size = 3
[[bots]]
path = "@heuristic"
name = "heuristic"
[[bots]]
path = "@lowest"
name = "lowest"
[[bots]]
path = "@random"
name = "random"
"""


@pytest.fixture
def league(tmp_path: Path) -> Path:
    path = tmp_path / "open.toml"
    path.write_text(LEAGUE, encoding="utf-8")
    return path


@pytest.fixture
def book(tmp_path: Path):
    with AuthorBook(tmp_path / "open.results") as opened:
        yield opened


def _cli(*argv: str):
    return CliRunner().invoke(main, ["authors", *argv])


def _database_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.glob(f"{DATABASE}*")))


# ---------------------------------------------------------------- the command line


def test_add_prints_the_token_once_alone_on_the_last_line_of_stdout(league: Path) -> None:
    shown = _cli("add", str(league), "alice", "--email", "alice@example.org")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    token = lines[-1]
    assert token.startswith(TOKEN_PREFIX) and token == token.strip()
    assert shown.output.count(token) == 1  # stdout and stderr together: once
    with AuthorBook(league.parent / "open.results") as book:
        author = book.authenticate(token)
    assert author is not None and author.name == "alice" and author.role == "author"
    listed = _cli("list", str(league))
    assert "alice@example.org" in listed.stdout and token not in listed.output


def test_only_the_digest_is_on_disk_and_the_log_holds_no_token(league: Path) -> None:
    tokens = [_cli("add", str(league), "alice").stdout.splitlines()[-1]]
    tokens.append(_cli("rotate", str(league), "alice").stdout.splitlines()[-1])
    tokens.append(_cli("add", str(league), "boss", "--organiser").stdout.splitlines()[-1])
    assert _cli("revoke", str(league), "alice").exit_code == 0
    stored = _database_bytes(league.parent / "open.results")
    logged = _cli("log", str(league)).output + _cli("log", str(league), "--json").output
    assert len(tokens) == 3 and "token " in logged  # the log names tokens by their id
    for token in tokens:
        verifier = token[-43:]  # the secret part: referee_<selector>_<verifier>
        assert token.encode() not in stored and verifier.encode() not in stored
        assert token not in logged and verifier not in logged


def test_the_log_records_each_action_who_what_when(league: Path) -> None:
    _cli("add", str(league), "alice")
    _cli("add", str(league), "boss", "--organiser")
    _cli("rotate", str(league), "alice")
    _cli("revoke", str(league), "alice")
    with AuthorBook(league.parent / "open.results") as book:
        entries = book.log()
    assert [(e.action, e.subject) for e in entries] == [
        ("add", "alice"),
        ("add", "boss"),
        ("rotate", "alice"),
        ("revoke", "alice"),
    ]
    assert all(e.actor.startswith("shell:") and e.at > 0 for e in entries)
    assert "organiser" in entries[1].detail


@pytest.mark.parametrize(
    "name",
    ["<script>alert(1)</script>", "al\x1b[31mice", "bob\nmallory", "a" * 10_000, "", " alice"],
)
def test_hostile_names_are_refused_in_one_line(league: Path, name: str) -> None:
    shown = _cli("add", str(league), name)
    assert shown.exit_code == 2
    assert shown.stdout == ""
    assert len(shown.stderr.strip().splitlines()) == 1
    assert "author name" in shown.stderr and "Traceback" not in shown.stderr
    assert len(shown.stderr) < 400  # a 10k name is not echoed whole


def test_taken_unknown_and_revoked_names_each_get_one_clear_line(league: Path) -> None:
    _cli("add", str(league), "alice")
    cases = {
        ("add", "alice"): "exists already",
        ("add", "ALICE"): "looks like the author 'alice'",
        ("add", "AIice"): "looks like the author 'alice'",
        ("revoke", "bob"): "no author named 'bob'",
        ("rotate", "bob"): "no author named 'bob'",
    }
    for (command, name), said in cases.items():
        shown = _cli(command, str(league), name)
        assert shown.exit_code == 2 and said in shown.stderr, (command, name, shown.output)
        assert len(shown.stderr.strip().splitlines()) == 1
    _cli("revoke", str(league), "alice")
    for command in ("revoke", "rotate"):
        shown = _cli(command, str(league), "alice")
        assert shown.exit_code == 2 and "revoked already" in shown.stderr
    shown = _cli("add", str(league), "alice")
    assert "never given again" in shown.stderr


def test_a_bad_email_is_refused_in_one_line(league: Path) -> None:
    for email in ("not an address", "a@b", "x" * 300 + "@example.org", "a@b.c\n"):
        shown = _cli("add", str(league), "alice", "--email", email)
        assert shown.exit_code == 2 and "e-mail address" in shown.stderr
        assert len(shown.stderr.strip().splitlines()) == 1


def test_list_and_log_make_nothing_before_the_first_author(league: Path) -> None:
    assert "no authors yet" in _cli("list", str(league)).stderr
    assert "nothing in the audit log" in _cli("log", str(league)).stderr
    assert not (league.parent / "open.results").exists()


# ---------------------------------------------------------------- authenticate


def test_authenticate_fails_after_revoke_and_for_a_rotated_away_token(book: AuthorBook) -> None:
    first = book.add("alice", actor="test").token
    other = book.add("bob", actor="test").token
    assert book.authenticate(first) is not None
    second = book.rotate("alice", actor="test").token
    assert book.authenticate(first) is None
    found = book.authenticate(second)
    assert found is not None and found.name == "alice"
    book.revoke("alice", actor="test")
    assert book.authenticate(second) is None
    bob = book.authenticate(other)
    assert bob is not None and bob.name == "bob"


def test_near_misses_and_garbage_are_refused(book: AuthorBook) -> None:
    token = book.add("alice", actor="test").token
    last = "A" if token[-1] != "A" else "B"
    near = [
        token[:-1] + last,  # right selector, verifier wrong in its last character
        token[:-1],
        token + "x",
        token.upper(),
        token.replace(TOKEN_PREFIX, "other_"),
        "",
        "x" * 10_000,
        "référé_" + token,
        token + "\n",
    ]
    assert [book.authenticate(t) for t in near] == [None] * len(near)


def test_every_attempt_costs_one_digest_comparison(
    book: AuthorBook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the token is malformed, unknown, nearly right or right, the decision is one
    constant-time comparison of two 32-byte digests: no early exit tells them apart."""
    token = book.add("alice", actor="test").token
    compared: list[tuple[int, int]] = []
    constant_time = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((len(a), len(b)))
        return constant_time(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    attempts = ["", "garbage", token[:-1] + ("A" if token[-1] != "A" else "B"), token]
    results = [book.authenticate(t) for t in attempts]
    assert [r is not None for r in results] == [False, False, False, True]
    assert compared == [(32, 32)] * len(attempts)


# ---------------------------------------------------------------- the file


def test_the_database_is_wal_full_and_versioned(tmp_path: Path) -> None:
    with ServerDatabase(tmp_path / "r") as db:
        pragmas = [
            db.connection.execute(f"PRAGMA {p}").fetchone()[0]
            for p in ("journal_mode", "synchronous")
        ]
    assert pragmas == ["wal", 2]  # 2: FULL
    with ServerDatabase(tmp_path / "r"):
        pass  # opened again as it is


def test_damaged_foreign_and_newer_files_are_refused_in_one_line(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    damaged.mkdir(mode=0o700)
    (damaged / DATABASE).write_bytes(b"not a database at all" * 100)
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    with sqlite3.connect(foreign / DATABASE) as other:
        other.execute("CREATE TABLE t (x)")
    newer = tmp_path / "newer"
    with ServerDatabase(newer) as db:
        db.connection.execute("PRAGMA user_version=99")
    said = {}
    for folder in (damaged, foreign, newer):
        with pytest.raises(UsageError) as refused:
            ServerDatabase(folder)
        said[folder.name] = str(refused.value)
    assert "cannot be read as the server's database" in said["damaged"]
    assert "of something else" in said["foreign"]
    assert "schema 99" in said["newer"]
    assert all("\n" not in line for line in said.values())


_ADD_MANY = """
import sys
from pathlib import Path
from referee.server.authors import AuthorBook
with AuthorBook(Path(sys.argv[1])) as book:
    for i in range(15):
        book.add(f"{sys.argv[2]}{i}", actor="test")
"""


def test_two_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "open.results"
    AuthorBook(folder).close()
    runs = [
        subprocess.Popen([sys.executable, "-c", _ADD_MANY, str(folder), prefix], cwd=ROOT)
        for prefix in ("a", "b")
    ]
    assert [run.wait(timeout=60) for run in runs] == [0, 0]
    with AuthorBook(folder) as book:
        names = {a.name for a in book.authors()}
        assert len(book.log()) == 30
        check = book.database.connection.execute("PRAGMA integrity_check").fetchone()[0]
    assert names == {f"{p}{i}" for p in "ab" for i in range(15)}
    assert check == "ok"


def test_restarting_the_league_keeps_the_accounts(league: Path) -> None:
    from referee.tournament.store import Store, wipe

    token = _cli("add", str(league), "alice").stdout.splitlines()[-1]
    folder = league.parent / "open.results"
    Store(folder).close()  # the league's own store, beside the server's database
    wipe(folder)  # what --restart does to the results
    assert not (folder / "results.sqlite").exists()
    with AuthorBook(folder) as book:
        found = book.authenticate(token)
    assert found is not None and found.name == "alice"
