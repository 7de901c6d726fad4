"""``referee serve`` end to end: a real uvicorn on a loopback port, a real HTTP client, the
real league on the process sandbox (slow: real processes).

An upload is answered ``202`` once stored, checked as ``referee submit`` checks, entered
with the token's author, and played by the running league; every refusal of the API is
one sentence with its status; a server killed with SIGKILL right after a ``202`` checks
that upload once it is started again and enters it at most once.
"""

from __future__ import annotations

import io
import os
import re
import select
import signal
import socket
import subprocess
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from referee.server import AuthorBook
from tests.server.conftest import Server, bot_source, start, write_league
from tests.tournament.conftest import REFEREE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def upload(server: Server, author: str, data: bytes, filename: str = "mybot.py", **form: str):
    with server.client(author) as client:
        return client.post("/api/v1/submissions", files={"bot": (filename, data)}, data=form)


def entries_named(path: Path, name: str) -> int:
    return len(re.findall(rf'^name = "{re.escape(name)}"$', path.read_text(), re.M))


def wait_on_board(server: Server, label: str, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        board = httpx.get(f"{server.url}/api/v1/leaderboard", timeout=5).json()
        for entry in board["entries"]:
            if entry["name"] == label and entry["matches"] > 0:
                return dict(entry)
        time.sleep(0.5)
    raise AssertionError(f"{label} never played:\n{server.log.read_text()[-3000:]}")


def test_an_upload_is_checked_entered_under_its_token_and_played(tmp_path, serve_league):
    server = start(write_league(tmp_path))
    serve_league.append(server)
    server.add_author("alice")
    # The bot's own bot.toml could name another author: only the token decides.
    answer = upload(server, "alice", bot_source("pairs"), name="alices-bot")
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["status"] == "queued" and body["url"] == f"/api/v1/submissions/{body['id']}"
    verdict = server.wait_verdict("alice", body["id"])
    assert verdict["status"] == "accepted", verdict["report"]
    assert verdict["entrant"] == "alices-bot" and verdict["version"] == 1
    report = str(verdict["report"])
    assert report.splitlines()[0].startswith("sandbox: process sandbox")
    assert "ok    handshake" in report
    assert report.splitlines()[-1] == (
        "accepted: alices-bot entered in open.toml as bots/alices-bot/mybot.py"
    )
    text = server.path.read_text()
    assert 'name = "alices-bot"\nauthor = "alice"\n' in text
    entry = wait_on_board(server, "alices-bot")
    assert entry["entrant"] == "alices-bot"
    # A second upload under the name is a new version of alice's entrant.
    second = upload(server, "alice", bot_source("last"), name="alices-bot")
    assert second.status_code == 202
    again = server.wait_verdict("alice", second.json()["id"])
    assert again["status"] == "accepted" and again["version"] == 2, again["report"]
    # SIGTERM stops the server and its league cleanly.
    assert server.stop(signal.SIGTERM) == 0
    log = server.log.read_text()
    assert "batches settled in this run" in log  # the league's own closing line
    assert log.rstrip().endswith("run the same command again to go on where it stopped")
    assert f"submission {body['id']} of alice: accepted as alices-bot" in log


def test_refusals_are_one_sentence_each(tmp_path, serve_league):
    server = start(write_league(tmp_path, server="upload_mb = 0.01"))
    serve_league.append(server)
    server.add_author("alice")
    server.add_author("bob")
    with httpx.Client(base_url=server.url) as anonymous:
        none = anonymous.post("/api/v1/submissions", files={"bot": ("b.py", b"x")})
        assert none.status_code == 401 and "valid token" in none.json()["error"]
        assert none.headers["www-authenticate"] == "Bearer"
        wrong = anonymous.post(
            "/api/v1/submissions",
            files={"bot": ("b.py", b"x")},
            headers={"Authorization": "Bearer referee_0000000000000000_" + "A" * 43},
        )
        assert wrong.status_code == 401
    # Too large: refused while it streams, nothing left in the uploads folder.
    big = upload(server, "alice", b"#" * 20_000)
    assert big.status_code == 413 and "larger than 0.01 MiB" in big.json()["error"]
    assert not list((server.results / "uploads").iterdir())
    wrong_kind = upload(server, "alice", b"x", filename="bot.exe")
    assert wrong_kind.status_code == 400 and ".py file" in wrong_kind.json()["error"]
    # Another author's submission is exactly as absent as one that does not exist.
    mine = upload(server, "alice", bot_source("pairs"))
    assert mine.status_code == 202
    sid = mine.json()["id"]
    with server.client("bob") as bob:
        other = bob.get(f"/api/v1/submissions/{sid}")
        missing = bob.get("/api/v1/submissions/000000000000000000000000")
    assert other.status_code == missing.status_code == 404
    assert other.json() == missing.json()
    # Revoked and rotated tokens stop working at once.
    old = server.tokens["alice"]
    with AuthorBook(server.results) as book:
        server.tokens["alice"] = book.rotate("alice", actor="test").token
        book.revoke("bob", actor="test")
    with httpx.Client(base_url=server.url) as client:
        for token in (old, server.tokens["bob"]):
            got = client.get(
                f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}
            )
            assert got.status_code == 401
    with server.client("alice") as alice:
        assert alice.get(f"/api/v1/submissions/{sid}").status_code == 200


def test_uploads_too_close_together_wait_with_retry_after(tmp_path, serve_league):
    server = start(write_league(tmp_path, server="interval_seconds = 3600"), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    assert upload(server, "alice", bot_source("pairs")).status_code == 202
    second = upload(server, "alice", bot_source("last"))
    assert second.status_code == 429
    assert 3500 <= int(second.headers["retry-after"]) <= 3601
    assert "wait" in second.json()["error"]


def test_failed_sign_ins_from_one_address_are_throttled(tmp_path, serve_league):
    server = start(write_league(tmp_path, server="signin_failures = 3"), "--no-league")
    serve_league.append(server)
    token = server.add_author("alice")
    bad = {"Authorization": "Bearer referee_0123456789abcdef_" + "B" * 43}
    with httpx.Client(base_url=server.url) as client:
        codes = [client.get("/api/v1/submissions", headers=bad).status_code for _ in range(4)]
        assert codes == [401, 401, 401, 429]
        held = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"})
    assert held.status_code == 429 and int(held.headers["retry-after"]) > 0


def test_the_same_upload_twice_at_once_is_entered_once(tmp_path, serve_league):
    server = start(write_league(tmp_path, server="checks = 2"), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    answers: list[httpx.Response] = []

    def send() -> None:
        answers.append(upload(server, "alice", bot_source("pairs"), name="twice"))

    threads = [threading.Thread(target=send) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a.status_code for a in answers] == [202, 202]
    verdicts = [server.wait_verdict("alice", a.json()["id"]) for a in answers]
    assert sorted(str(v["status"]) for v in verdicts) == ["accepted", "refused"], verdicts
    refused = next(v for v in verdicts if v["status"] == "refused")
    assert "twice" in str(refused["report"])
    assert entries_named(server.path, "twice") == 1


def test_a_server_killed_after_202_checks_the_upload_once_started_again(tmp_path, serve_league):
    path = write_league(tmp_path)
    server = start(path)
    serve_league.append(server)
    server.add_author("alice")
    answer = upload(server, "alice", bot_source("pairs"), name="survivor")
    assert answer.status_code == 202
    server.stop(signal.SIGKILL)  # at once: the check has at most begun
    with AuthorBook(server.results) as book:  # the 202 promised the row is on the disk
        assert book.database.connection.execute(
            "SELECT count(*) FROM submissions WHERE id = ?", (answer.json()["id"],)
        ).fetchone() == (1,)
    again = start(path)
    serve_league.append(again)
    again.tokens = server.tokens
    verdict = again.wait_verdict("alice", answer.json()["id"])
    assert verdict["status"] == "accepted", verdict["report"]
    assert entries_named(path, "survivor") == 1
    wait_on_board(again, "survivor")


def test_upload_command_follows_the_check_to_its_verdict(tmp_path, serve_league):
    server = start(write_league(tmp_path), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    bot = tmp_path / "cmdbot.py"
    bot.write_bytes(bot_source("first"))
    token = tmp_path / "token"
    token.write_text(server.tokens["alice"] + "\n")
    done = subprocess.run(
        [str(REFEREE), "upload", str(bot), "--server", server.url, "--token-file", str(token)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accepted: cmdbot entered in open.toml" in done.stdout
    assert "ok    handshake" in done.stdout
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.exit(3)\n")
    refused = subprocess.run(
        [str(REFEREE), "upload", str(broken), "--server", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        env={"REFEREE_TOKEN": server.tokens["alice"], "PATH": "/usr/bin:/bin"},
    )
    assert refused.returncode == 1, refused.stderr
    assert "bot refused" in refused.stdout and "the report above says why" in refused.stderr
    assert "refused at handshake" in refused.stderr, refused.stderr
    no_token = subprocess.run(
        [str(REFEREE), "upload", str(bot), "--server", server.url],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert no_token.returncode == 2 and "REFEREE_TOKEN" in no_token.stderr


def test_a_check_cut_off_after_it_entered_is_not_entered_again(tmp_path, serve_league):
    path = write_league(tmp_path)
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    answer = upload(server, "alice", bot_source("pairs"), name="onlyonce")
    sid = answer.json()["id"]
    assert server.wait_verdict("alice", sid)["status"] == "accepted"
    server.stop(signal.SIGKILL)
    # As if the kill came after the entry was appended and before the verdict's commit.
    with AuthorBook(server.results) as book, book.database.transaction() as db:
        db.execute("UPDATE submissions SET status = 'checking', report = '' WHERE id = ?", (sid,))
    again = start(path, "--no-league")
    serve_league.append(again)
    again.tokens = server.tokens
    verdict = again.wait_verdict("alice", sid)
    assert verdict["status"] == "accepted" and verdict["entrant"] == "onlyonce"
    assert "entered before the server stopped" in str(verdict["report"])
    assert entries_named(path, "onlyonce") == 1
    assert "checked again" not in again.log.read_text()


def test_a_tournament_takes_entries_until_it_is_run(tmp_path, serve_league):
    path = write_league(tmp_path)
    text = path.read_text().replace('format = "league"', 'format = "round-robin"')
    path.write_text(re.sub(r"\[league\]\n(.*\n)*?\[time\]", "[time]", text))
    server = start(path)
    serve_league.append(server)
    server.add_author("alice")
    assert "takes entries until it is run" in server.log.read_text()
    first = upload(server, "alice", bot_source("pairs"), name="early")
    assert server.wait_verdict("alice", first.json()["id"])["status"] == "accepted"
    time.sleep(1.1)  # the board is read again at most once a second
    board = httpx.get(f"{server.url}/api/v1/leaderboard").json()
    assert "early" in board["entrants"] and board["closed"] is False
    run = subprocess.run(
        [str(REFEREE), "tournament", "run", str(path), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    late = upload(server, "alice", bot_source("last"), name="late")
    assert late.status_code == 409 and "takes no more entries" in late.json()["error"]


def test_the_site_is_published_as_batches_settle_with_no_stderr(tmp_path, serve_league):
    server = start(write_league(tmp_path))
    serve_league.append(server)
    server.add_author("alice")
    marker = "stderr-marker-7f3a"
    source = bot_source("pairs").replace(
        b"    msg = json.loads(line)\n",
        f"    msg = json.loads(line)\n    print({marker!r}, file=sys.stderr, flush=True)\n".encode(),
    )
    answer = upload(server, "alice", source, name="noisy")
    assert server.wait_verdict("alice", answer.json()["id"])["status"] == "accepted"
    wait_on_board(server, "noisy")
    site = tmp_path / "open.results-site"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        page = httpx.get(f"{server.url}/site/index.html")
        if page.status_code == 200 and "noisy" in page.text:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"the site never showed noisy:\n{server.log.read_text()[-3000:]}")
    # Its matches were played and their stderr kept, but no published file holds it.
    logs = server.results / "logs"
    assert any(marker in p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file())
    published = [p for p in site.rglob("*") if p.is_file()]
    assert published and not any(marker in p.read_text(errors="replace") for p in published)
    assert not list(site.rglob("*.stderr.js"))


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def _member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = ""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data)
    return info, data if kind == tarfile.REGTYPE else None


def _zip_bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb/bot.toml", 'command = ["python3", "bot.py"]\n')
        with archive.open("bomb/bot.py", "w", force_zip64=True) as member:
            zeros = bytes(1 << 20)
            for _ in range(1024):  # 1 GiB of zeros, about 1 MiB compressed
                member.write(zeros)
    return out.getvalue()


def test_hostile_archives_are_refused_with_their_reason_leaving_nothing(tmp_path, serve_league):
    server = start(write_league(tmp_path), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    toml = b'command = ["python3", "bot.py"]\n'
    good = bot_source("pairs")
    cases = {
        "symlink": (
            "link.tar.gz",
            _tar(
                [
                    _member("bot.toml", toml),
                    _member("bot.py", kind=tarfile.SYMTYPE, link="/etc/passwd"),
                ]
            ),
            "link",
        ),
        "escape": (
            "up.tar.gz",
            _tar([_member("bot.toml", toml), _member("../../bot.py", good)]),
            "leaves the folder",
        ),
        "truncated": (
            "cut.tar.gz",
            _tar([_member("bot.toml", toml), _member("bot.py", good)])[:-30],
            "archive refused",
        ),
        "bomb": ("bomb.zip", _zip_bomb(), "archive refused"),
        "not a bot": ("empty.zip", b"PK\x05\x06" + bytes(18), "archive refused"),
    }
    for what, (filename, data, reason) in cases.items():
        answer = upload(server, "alice", data, filename=filename)
        assert answer.status_code == 202, (what, answer.text)
        verdict = server.wait_verdict("alice", answer.json()["id"])
        assert verdict["status"] == "refused", (what, verdict)
        assert reason in str(verdict["report"]), (what, verdict["report"])
        assert not (server.results / "uploads" / answer.json()["id"]).exists()
    assert not list((server.results / "uploads").iterdir())


def test_a_gibibyte_stream_is_cut_off_at_the_limit(tmp_path, serve_league):
    server = start(write_league(tmp_path), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    sent = 0

    def stream():
        nonlocal sent
        head = (
            b'--b\r\nContent-Disposition: form-data; name="bot"; filename="huge.py"\r\n'
            b"Content-Type: text/x-python\r\n\r\n"
        )
        yield head
        chunk = b"#" * (1 << 16)
        while sent < 1 << 30:
            sent += len(chunk)
            yield chunk

    headers = {
        "Authorization": f"Bearer {server.tokens['alice']}",
        "Content-Type": "multipart/form-data; boundary=b",
    }
    try:
        answer = httpx.post(
            f"{server.url}/api/v1/submissions", content=stream(), headers=headers, timeout=60
        )
    except httpx.HTTPError:  # the server may close before the client hears the 413
        answer = None
    assert sent < 64 << 20, f"the server read {sent} bytes of a stream over the limit"
    if answer is not None:
        assert answer.status_code == 413
    assert not list((server.results / "uploads").iterdir())
    assert httpx.get(f"{server.url}/api/v1/leaderboard").status_code == 200


def test_a_bot_folder_is_packed_uploaded_and_entered(tmp_path, serve_league):
    server = start(write_league(tmp_path), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    folder = tmp_path / "author" / "folderbot"
    folder.mkdir(parents=True)
    (folder / "bot.py").write_bytes(bot_source("last"))
    (folder / "bot.toml").write_text(
        'name = "folderbot"\ncommand = ["python3", "bot.py"]\nauthor = "mallory"\n'
    )
    done = subprocess.run(
        [str(REFEREE), "upload", str(folder), "--server", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        env={"REFEREE_TOKEN": server.tokens["alice"], "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accepted: folderbot entered" in done.stdout
    text = server.path.read_text()
    assert 'name = "folderbot"\nauthor = "alice"\n' in text and "mallory" not in text
    assert (tmp_path / "bots" / "folderbot" / "bot.py").read_bytes() == bot_source("last")


def test_a_slow_client_is_cut_off_and_others_are_answered(tmp_path, serve_league):
    server = start(
        write_league(tmp_path, server="header_seconds = 1\nbody_seconds = 2"), "--no-league"
    )
    serve_league.append(server)
    slow = socket.create_connection(("127.0.0.1", server.port))
    started = time.monotonic()
    closed = False
    for byte in b"GET /api/v1/leaderboard HTTP/1.1\r\nHost: x\r\n" * 4:  # 8 s at this pace
        try:
            slow.send(bytes([byte]))
        except OSError:
            closed = True
            break
        if select.select([slow], [], [], 0)[0] and slow.recv(1) == b"":  # the server closed
            closed = True
            break
        answered = httpx.get(f"{server.url}/api/v1/leaderboard", timeout=2)
        assert answered.status_code == 200  # the others are answered meanwhile
        time.sleep(0.1)
    slow.close()
    assert closed and time.monotonic() - started < 4


def _league_child(server_pid: int) -> int:
    """The pid of the ``referee league run`` child of the server ``server_pid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == server_pid and b"league" in command and b"run" in command:
            return int(entry.name)
    raise AssertionError(f"no league child of {server_pid}")


def test_a_league_that_dies_by_itself_is_said_and_uploads_go_on(tmp_path, serve_league):
    server = start(write_league(tmp_path))
    serve_league.append(server)
    server.add_author("alice")
    os.kill(_league_child(server.process.pid), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while "the league stopped by itself" not in server.log.read_text():
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.2)
    assert "killed by signal 9" in server.log.read_text()
    answer = upload(server, "alice", bot_source("first"), name="late")
    assert answer.status_code == 202
    assert server.wait_verdict("alice", answer.json()["id"])["status"] == "accepted"
    assert server.stop() == 0
    assert server.log.read_text().count("the league stopped by itself") == 1


def test_a_check_borrows_a_slot_of_the_leagues_pool_while_it_runs(tmp_path, serve_league):
    from referee.executors.slots import SLOTS, WorkerSlots

    server = start(write_league(tmp_path), "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    slots = WorkerSlots(server.results / SLOTS)
    sid = upload(server, "alice", bot_source("first"), name="lender").json()["id"]
    seen: set[int] = set()
    deadline = time.monotonic() + 90
    with server.client("alice") as client:
        while time.monotonic() < deadline:
            status = client.get(f"/api/v1/submissions/{sid}").json()["status"]
            if status == "checking":
                seen.add(slots.borrowed())
            elif status in ("accepted", "refused"):
                break
            time.sleep(0.05)
    assert status == "accepted" and 1 in seen, (status, seen)
    assert slots.borrowed() == 0  # given back with the verdict
