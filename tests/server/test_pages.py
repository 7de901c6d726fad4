"""The authors' private pages and the organiser's, on a real ``referee serve`` (slow: real
processes; one server for the module, its league playing an uploaded bot).

An author reads their own entrants, versions, matches and the whole stderr of their own
seats, never another seat's; another author's match, submission or stderr is the very
``404`` of a key that does not exist; markup chosen by bots and authors is escaped on every
page; the organiser's forms need the session's CSRF token, an author on ``/admin`` gets the
``404`` of an unknown page, and retiring and revoking do what they say and are logged.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from referee.server import AuthorBook
from referee.server.private import released_replay
from referee.stderrlog import stderr_path
from tests.server.conftest import Server, bot_source, start, write_league

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

NAME = "<script>alert(1)</script>"
"""Alice's entrant: a display name of markup."""
IMG = '"><img src=x onerror=alert(2)>'
FILE_IMG = "<img src=x onerror=alert(3)>"
"""Bob's upload's file name (a multipart file name cannot carry a quote as it is)."""
MINE = "MINE-STDERR-7f3a"
OTHERS = "OTHER-SEAT-STDERR-91c2"
ESCAPED_NAME = "&lt;script&gt;alert(1)&lt;/script&gt;"
ESCAPED_IMG = "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;"
MISSING_KEY = "lg/00000000/000000000000/r0"
MISSING_SID = "0" * 24


def noisy(source: bytes, text: str) -> bytes:
    """``source`` (the tests' bot) writing ``text`` to stderr at every message it reads."""
    line = "    msg = json.loads(line)\n"
    assert line in source.decode()
    extra = f"    sys.stderr.write({text!r} + '\\n')\n    sys.stderr.flush()\n"
    return source.decode().replace(line, line + extra).encode()


@dataclass
class League:
    server: Server
    alice_sid: str
    bob_sid: str
    key: str
    """One of alice's matches whose replay the site has published."""


@contextlib.contextmanager
def sign_in(server: Server, name: str) -> Iterator[httpx.Client]:
    """A browser signed in as ``name`` (its session cookie kept by the client)."""
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        answer = client.post("/signin", data={"token": server.tokens[name]})
        assert answer.status_code == 303 and answer.headers["location"] == "/me", answer.text
        yield client


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def upload(server: Server, author: str, data: bytes, filename: str, **form: str) -> str:
    with server.client(author) as client:
        answer = client.post("/api/v1/submissions", files={"bot": (filename, data)}, data=form)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["id"])


def published_match(server: Server, timeout: float = 90.0) -> str:
    """The key of one of alice's matches whose replay the site has published."""
    deadline = time.monotonic() + timeout
    with sign_in(server, "alice") as alice:
        while time.monotonic() < deadline:
            for row in alice.get("/me/matches").text.split("<tr>"):
                found = re.search(r'href="/me/matches/(lg/[^"]+)"', row)
                if found is not None and 'href="/site/matches/' in row:
                    return found.group(1)
            time.sleep(0.5)
    raise AssertionError(f"no published match of alice's:\n{server.log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def league(tmp_path_factory: pytest.TempPathFactory) -> Iterator[League]:
    folder = tmp_path_factory.mktemp("pages")
    path = write_league(folder)
    for bot in (folder / "bots").glob("*.py"):  # the field writes stderr of its own
        bot.write_bytes(noisy(bot.read_bytes(), OTHERS))
    server = start(path)
    try:
        for name in ("alice", "bob"):
            server.add_author(name)
        server.add_author("boss", organiser=True)
        alice_sid = upload(
            server, "alice", noisy(bot_source("pairs"), f"{MINE} {NAME} {IMG}"), "a.py", name=NAME
        )
        broken = f"import sys\nsys.stderr.write({NAME + IMG!r})\nsys.exit(3)\n".encode()
        bob_sid = upload(server, "bob", broken, f"{FILE_IMG}.py")
        assert server.wait_verdict("alice", alice_sid)["status"] == "accepted"
        assert server.wait_verdict("bob", bob_sid)["status"] == "refused"
        yield League(server, alice_sid, bob_sid, published_match(server))
    finally:
        server.stop()


def test_an_author_reads_their_entrants_matches_and_own_stderr(league: League) -> None:
    server, key = league.server, league.key
    with sign_in(server, "alice") as alice:
        entrants = alice.get("/me/entrants")
        assert entrants.status_code == 200
        assert f"<h3>{ESCAPED_NAME}</h3>" in entrants.text
        assert re.search(
            rf"<td>{re.escape(ESCAPED_NAME)}</td><td>(ranked \d+|in the league)", entrants.text
        )
        assert f'href="/me/submissions/{league.alice_sid}"' in entrants.text
        assert "accepted: " in entrants.text  # the report of the upload that entered it
        matches = alice.get("/me/matches")
        assert f'href="/me/matches/{key}"' in matches.text
        page = alice.get(f"/me/matches/{key}")
    assert page.status_code == 200
    assert f"{ESCAPED_NAME} (yours)" in page.text
    assert page.text.count(MINE) > 3  # the whole stderr: a line per message read
    # The other seats wrote stderr in this match too, and none of it is shown.
    kept = json.loads(
        stderr_path(server.results / "logs" / f"{key.replace('/', '_')}.jsonl").read_text()
    )
    assert any(OTHERS in piece["text"] for s in kept["seats"] for piece in s["pieces"])
    assert OTHERS not in page.text
    replay = re.search(r'href="(/site/matches/[^"]+\.html)"', page.text)
    assert replay is not None
    assert httpx.get(server.url + replay.group(1)).status_code == 200
    # A server's site keeps stderr private: no stderr script beside the replay.
    script = replay.group(1).removesuffix(".html") + ".stderr.js"
    assert httpx.get(server.url + script).status_code == 404


def test_another_authors_match_submission_or_stderr_is_the_404_of_a_missing_key(
    league: League,
) -> None:
    with sign_in(league.server, "bob") as bob:
        theirs = bob.get(f"/me/matches/{league.key}")
        missing = bob.get(f"/me/matches/{MISSING_KEY}")
        garbage = bob.get("/me/matches/../../etc/passwd")
        assert theirs.status_code == missing.status_code == 404
        assert theirs.text == missing.text
        assert garbage.status_code == 404
        assert league.key not in bob.get("/me/matches").text
        submission = bob.get(f"/me/submissions/{league.alice_sid}")
        no_submission = bob.get(f"/me/submissions/{MISSING_SID}")
        assert submission.status_code == no_submission.status_code == 404
        assert submission.text == no_submission.text
        assert MINE not in theirs.text + submission.text


def test_markup_is_escaped_on_every_page(league: League) -> None:
    server = league.server
    with (
        sign_in(server, "alice") as alice,
        sign_in(server, "bob") as bob,
        sign_in(server, "boss") as boss,
    ):
        pages = {
            "/": alice.get("/"),
            "/me/entrants": alice.get("/me/entrants"),
            "/me/matches": alice.get("/me/matches"),
            "/me/matches/{key}": alice.get(f"/me/matches/{league.key}"),
            "/me/submissions (alice)": alice.get(f"/me/submissions/{league.alice_sid}"),
            "/me (bob)": bob.get("/me"),
            "/me/submissions (bob)": bob.get(f"/me/submissions/{league.bob_sid}"),
            "/admin/submissions": boss.get("/admin/submissions"),
            "/admin/submissions (bob)": boss.get(f"/admin/submissions/{league.bob_sid}"),
            "/admin/entrants": boss.get("/admin/entrants"),
        }
    file_name = "&lt;img src=x onerror=alert(3)&gt;.py"
    shown = {  # what each page shows, escaped: the name, the stderr, the file name, a report
        "/": [ESCAPED_NAME],
        "/me/entrants": [ESCAPED_NAME],
        "/me/matches": [ESCAPED_NAME],
        "/me/matches/{key}": [ESCAPED_NAME, ESCAPED_IMG],
        "/me/submissions (alice)": [ESCAPED_NAME],
        "/me (bob)": [file_name],
        "/me/submissions (bob)": [file_name, ESCAPED_NAME + ESCAPED_IMG],
        "/admin/submissions": [ESCAPED_NAME, file_name],
        "/admin/submissions (bob)": [file_name, ESCAPED_NAME + ESCAPED_IMG],
        "/admin/entrants": [ESCAPED_NAME],
    }
    for where, answer in pages.items():
        assert answer.status_code == 200, where
        assert "<script>alert" not in answer.text and "<img src=x" not in answer.text, where
        for text in shown[where]:
            assert text in answer.text, (where, text)


def test_forms_without_the_csrf_token_are_refused_and_do_nothing(league: League) -> None:
    server = league.server
    before = server.path.read_text()
    with sign_in(server, "boss") as boss:
        for form in ({"name": "p0"}, {"name": "p0", "csrf": "not-the-token"}):
            retire = boss.post("/admin/entrants/retire", data=form)
            revoke = boss.post("/admin/authors/revoke", data={**form, "name": "alice"})
            assert retire.status_code == revoke.status_code == 403
        assert boss.get("/admin").status_code == 200  # still signed in
    with sign_in(server, "alice") as alice:
        assert alice.post("/signout", data={}).status_code == 403
        assert alice.get("/me").status_code == 200
    assert server.path.read_text() == before
    with AuthorBook(server.results) as book:
        assert book.author("alice").active  # type: ignore[union-attr]
        assert not [e for e in book.log() if e.action in ("retire", "revoke")]


def test_an_author_on_the_organiser_pages_gets_the_404_of_an_unknown_page(
    league: League,
) -> None:
    server = league.server
    before = server.path.read_text()
    with sign_in(server, "alice") as alice:
        csrf = csrf_of(alice.get("/me").text)
        unknown = alice.get("/no-such-page")
        assert unknown.status_code == 404
        for answer in (
            alice.get("/admin"),
            alice.get("/admin/log"),
            alice.get(f"/admin/submissions/{league.bob_sid}"),
            alice.post("/admin/entrants/retire", data={"name": "p0", "csrf": csrf}),
            alice.post("/admin/authors/revoke", data={"name": "bob", "csrf": csrf}),
        ):
            assert (answer.status_code, answer.text) == (404, unknown.text)
    with httpx.Client(base_url=server.url) as anonymous:
        assert anonymous.get("/admin").headers["location"] == "/signin"
    assert server.path.read_text() == before


def test_the_organiser_retires_an_entrant_and_the_log_says_so(league: League) -> None:
    server = league.server
    with sign_in(server, "boss") as boss:
        page = boss.get("/admin/entrants")
        assert 'value="p2"' in page.text
        done = boss.post("/admin/entrants/retire", data={"name": "p2", "csrf": csrf_of(page.text)})
        assert done.status_code == 303 and done.headers["location"] == "/admin/entrants"
        assert 'value="p2"' not in boss.get("/admin/entrants").text
        again = boss.post("/admin/entrants/retire", data={"name": "p2", "csrf": csrf_of(page.text)})
        assert again.status_code == 400 and "already retired" in again.text
        log = boss.get("/admin/log").text
    assert re.search(r'path = "[^"]+"\nname = "p2"\nretired = true\n', server.path.read_text())
    assert "<td>organiser:boss</td><td>retire</td><td>p2</td>" in log
    with AuthorBook(server.results) as book:
        last = book.log()[-1]
    assert (last.actor, last.action, last.subject) == ("organiser:boss", "retire", "p2")


def test_a_revoked_authors_session_and_token_stop_working(league: League) -> None:
    server = league.server
    with sign_in(server, "bob") as bob:
        cookies = dict(bob.cookies)
        assert bob.get("/me").status_code == 200
    with sign_in(server, "boss") as boss:
        page = boss.get("/admin/authors")
        done = boss.post("/admin/authors/revoke", data={"name": "bob", "csrf": csrf_of(page.text)})
        assert done.status_code == 303
        assert "<td>organiser:boss</td><td>revoke</td><td>bob</td>" in boss.get("/admin/log").text
    with httpx.Client(base_url=server.url, cookies=cookies) as replayed:
        for where in ("/me", "/me/matches", "/me/entrants", f"/me/submissions/{league.bob_sid}"):
            answer = replayed.get(where)
            assert answer.status_code == 303 and answer.headers["location"] == "/signin", where
    with server.client("bob") as api:
        assert api.get("/api/v1/submissions").status_code == 401


def test_a_replay_is_linked_only_once_the_site_published_its_batch(tmp_path: Path) -> None:
    key, table = "lg/00000001/0123456789ab/r0", ("a", "b", "c")
    assert released_replay(None, key, table) is None
    assert released_replay(tmp_path, key, table) is None  # never published
    (tmp_path / "league-site.json").write_text(json.dumps({"batch": 1}))
    assert released_replay(tmp_path, key, table) is None  # its batch is not published
    (tmp_path / "league-site.json").write_text(json.dumps({"batch": 2}))
    assert released_replay(tmp_path, key, table) is None  # published, its page missing
    (tmp_path / "matches").mkdir()
    (tmp_path / "matches" / "lg_00000001_a-b-c_r0_01234567.html").write_text("")
    assert (
        released_replay(tmp_path, key, table) == "/site/matches/lg_00000001_a-b-c_r0_01234567.html"
    )
    (tmp_path / "league-site.json").write_text("{not json")
    assert released_replay(tmp_path, key, table) is None
