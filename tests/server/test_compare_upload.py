"""``referee upload --compare`` and ``--enter-if-better`` against a real ``referee serve``:
the new version is checked, compared with the author's current one on the league's rules
and field, and entered only when the author says so (or at once when it is better)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from referee.resources import sample_bot
from referee.server.compares import COMPARES
from tests.server.conftest import Server, bot_source, start, write_league
from tests.server.test_server import entries_named, upload
from tests.tournament.conftest import REFEREE


def referee(
    server: Server, author: str, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {"REFEREE_TOKEN": server.tokens[author], "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(
        [str(REFEREE), *args, "--server", server.url],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def wait_for(
    server: Server, author: str, sid: str, statuses: tuple[str, ...], timeout: float = 240
):
    deadline = time.monotonic() + timeout
    with server.client(author) as client:
        while time.monotonic() < deadline:
            body = client.get(f"/api/v1/submissions/{sid}").json()
            if body["status"] in statuses:
                return body
            time.sleep(0.3)
    raise AssertionError(f"{sid} never reached {statuses}:\n{server.log.read_text()}")


def test_a_better_version_is_compared_then_entered_at_once(
    tmp_path: Path, serve_league: list[Server]
) -> None:
    """The whole flow with the league running: v1 entered, v2 compared on the league's
    field and entered because it is better; the comparison's deals are its own."""
    path = write_league(tmp_path)
    server = start(path)
    serve_league.append(server)
    server.add_author("alice")
    weak = tmp_path / "weak.py"  # passes whenever it may: far behind, so the test is short
    weak.write_bytes(bot_source("pass"))
    first = referee(server, "alice", "upload", str(weak), "--name", "mine")
    assert first.returncode == 0, first.stdout + first.stderr
    assert entries_named(path, "mine") == 1
    better = referee(
        server,
        "alice",
        "upload",
        str(sample_bot("heuristic")),
        "--name",
        "mine",
        "--enter-if-better",
    )
    assert better.returncode == 0, better.stdout + better.stderr
    out = better.stdout
    assert "comparison: " in out and "H1" in out, out
    assert "comparing with mine" in better.stderr and "field: p" in better.stderr, better.stderr
    assert "accepted: " in out, out
    assert entries_named(path, "mine") == 2
    # its cards are dealt from a secret of its own folder, not the league's
    compares = server.results / COMPARES
    (folder,) = list(compares.iterdir())
    assert (folder / "results").is_dir()
    own = sorted(p.name for p in (folder / "results").iterdir())
    assert own, "the comparison kept no store of its own"


def test_compare_waits_for_the_author_and_the_budget_holds(
    tmp_path: Path, serve_league: list[Server]
) -> None:
    """``--compare`` ends with the verdict and the line that enters it; one comparison at
    a time per author; the day's deals are a budget; another author cannot enter it."""
    path = write_league(tmp_path, server="compare_deals_per_day = 3")
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    server.add_author("bob")
    assert (
        referee(server, "alice", "upload", str(sample_bot("random")), "--name", "mine").returncode
        == 0
    )
    # a comparison for an entrant alice has no version of is refused before it is stored
    lone = upload(server, "alice", bot_source("first"), name="newcomer", compare="1")
    assert lone.status_code == 400 and "no entrant named 'newcomer'" in lone.json()["error"]
    asked = upload(server, "alice", bot_source("last"), name="mine", compare="1")
    assert asked.status_code == 202, asked.text
    sid = asked.json()["id"]
    again = upload(server, "alice", bot_source("pairs"), name="mine", compare="1")
    assert again.status_code == 429 and "one comparison at a time" in again.json()["error"]
    assert again.headers["Retry-After"].isdigit()
    done = wait_for(server, "alice", sid, ("compared", "refused", "accepted"))
    assert done["status"] == "compared", done
    compared = done["compare"]
    assert compared["status"] == "done" and compared["old"] == "mine"
    assert compared["deals"] <= 3 and compared["max_deals"] == 3
    assert compared["decision"] in ("H0", "H1", "undecided") and compared["verdict"]
    assert entries_named(path, "mine") == 1  # not entered until alice says so
    # bob can neither see nor enter it: the same 404 as a missing submission
    with server.client("bob") as bob:
        assert bob.post(f"/api/v1/submissions/{sid}/enter").status_code == 404
        assert bob.post("/api/v1/submissions/0000/enter").status_code == 404
    # the budget is spent: the next comparison waits, and says how long
    spent = upload(server, "alice", bot_source("pairs"), name="mine", compare="1")
    assert spent.status_code == 429 and "compare_deals_per_day" in spent.json()["error"]
    assert int(spent.headers["Retry-After"]) > 3600
    entered = referee(server, "alice", "enter", sid)
    assert entered.returncode == 0, entered.stdout + entered.stderr
    assert "accepted: " in entered.stdout
    assert entries_named(path, "mine") == 2
    twice = referee(server, "alice", "enter", sid)
    assert twice.returncode == 1 and "only a compared submission" in twice.stderr


def test_the_client_says_how_to_enter_and_refuses_what_it_cannot_compare(
    tmp_path: Path, serve_league: list[Server]
) -> None:
    path = write_league(tmp_path, server="compare_deals_per_day = 2")
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    bot = tmp_path / "mine.py"
    bot.write_bytes(bot_source("first"))
    assert referee(server, "alice", "upload", str(bot)).returncode == 0
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.exit(3)\n")
    refused = referee(server, "alice", "upload", str(broken), "--name", "mine", "--compare")
    assert refused.returncode == 1 and "refused at handshake" in refused.stderr, refused.stderr
    bot.write_bytes(bot_source("pairs"))  # a refused check spent none of the day's deals
    compared = referee(server, "alice", "upload", str(bot), "--compare")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "not entered yet; to enter it: referee enter " in compared.stderr
    assert "comparison: " in compared.stdout
    assert entries_named(path, "mine") == 1
    bad_id = referee(server, "alice", "enter", "../etc")
    assert bad_id.returncode == 2 and "is not a submission id" in bad_id.stderr


def test_a_server_that_compares_nothing_says_so(tmp_path: Path, serve_league: list[Server]) -> None:
    path = write_league(tmp_path, server="compare_deals_per_day = 0")
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    bot = tmp_path / "mine.py"
    bot.write_bytes(bot_source("first"))
    assert referee(server, "alice", "upload", str(bot)).returncode == 0
    refused = referee(server, "alice", "upload", str(bot), "--enter-if-better")
    assert refused.returncode == 1
    assert "runs no comparisons" in refused.stderr, refused.stderr


def test_the_private_page_shows_the_comparison_and_enters_it_only_with_its_csrf_token(
    tmp_path: Path, serve_league: list[Server]
) -> None:
    from tests.server.test_pages import csrf_of, sign_in

    markup = "<b>mine</b>"
    path = write_league(tmp_path, server="compare_deals_per_day = 2")
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    server.add_author("bob")
    first = upload(server, "alice", bot_source("first"), name=markup)
    assert server.wait_verdict("alice", first.json()["id"])["status"] == "accepted"
    with sign_in(server, "alice") as alice:
        csrf = csrf_of(alice.get("/me").text)
        sent = alice.post(
            "/upload",
            data={"csrf": csrf, "name": markup, "compare": "1"},
            files={"bot": ("mine.py", bot_source("pairs"))},
        )
        assert sent.status_code == 303, sent.text
        sid = sent.headers["location"].rsplit("/", 1)[1]
        wait_for(server, "alice", sid, ("compared",))
        page = alice.get(f"/me/submissions/{sid}").text
        assert "Is it better than &lt;b&gt;mine&lt;/b&gt;?" in page and markup not in page
        assert 'id="enter"' in page and "at most 2 deals" in page
        for form in ({}, {"csrf": "not-the-token"}):
            assert alice.post(f"/me/submissions/{sid}/enter", data=form).status_code == 403
        assert entries_named(path, markup) == 1
        with sign_in(server, "bob") as bob:  # bob's own session and token: still a 404
            bob_csrf = csrf_of(bob.get("/me").text)
            assert bob.get(f"/me/submissions/{sid}").status_code == 404
            taken = bob.post(f"/me/submissions/{sid}/enter", data={"csrf": bob_csrf})
            assert taken.status_code == 404
        entered = alice.post(f"/me/submissions/{sid}/enter", data={"csrf": csrf_of(page)})
        assert entered.status_code == 303
    assert server.wait_verdict("alice", sid)["status"] == "accepted"
    assert entries_named(path, markup) == 2


def test_a_comparison_cut_off_by_a_stop_resumes_within_its_budget(
    tmp_path: Path, serve_league: list[Server]
) -> None:
    import signal

    path = write_league(tmp_path, server="compare_deals_per_day = 6")
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    first = upload(server, "alice", bot_source("pass"), name="mine")
    assert server.wait_verdict("alice", first.json()["id"])["status"] == "accepted"
    sid = upload(server, "alice", bot_source("first"), name="mine", compare="1").json()["id"]
    deadline = time.monotonic() + 120
    with server.client("alice") as client:
        while time.monotonic() < deadline:
            compared = client.get(f"/api/v1/submissions/{sid}").json()["compare"] or {}
            if (compared.get("deals") or 0) >= 2:
                break
            time.sleep(0.2)
    assert (compared.get("deals") or 0) >= 2, compared
    server.stop(signal.SIGKILL)
    again = start(path, "--no-league")
    serve_league.append(again)
    again.tokens = server.tokens
    done = wait_for(again, "alice", sid, ("compared", "refused", "accepted"))
    assert done["status"] == "compared", done
    assert done["compare"]["status"] == "done" and done["compare"]["deals"] == 6, done
    assert done["compare"]["max_deals"] == 6


def test_two_comparisons_asked_at_once_make_one(tmp_path: Path, serve_league: list[Server]) -> None:
    """The race a script of an author's could run: both requests at the same moment; one
    is taken, the other is the one-at-a-time 429 (the check is in the store's transaction)."""
    import threading

    path = write_league(tmp_path, server="compare_deals_per_day = 2")
    server = start(path, "--no-league")
    serve_league.append(server)
    server.add_author("alice")
    first = upload(server, "alice", bot_source("first"), name="mine")
    assert server.wait_verdict("alice", first.json()["id"])["status"] == "accepted"
    go = threading.Barrier(2)
    codes: list[int] = []

    def ask(strategy: str) -> None:
        go.wait()
        codes.append(
            upload(server, "alice", bot_source(strategy), name="mine", compare="1").status_code
        )

    threads = [threading.Thread(target=ask, args=(s,)) for s in ("last", "pairs")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [202, 429], codes
