"""The server's durable state: uploads stored before their row, the queue's claims, the
recovery after a kill, the upload limits, and sessions tied to their token."""

from __future__ import annotations

import io
import threading

import pytest

from referee.server import AuthorBook
from referee.server.submissions import SubmissionBook, TooLarge


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def books(tmp_path):
    clock = Clock()
    with (
        AuthorBook(tmp_path, clock=clock) as authors,
        SubmissionBook(tmp_path, clock=clock) as book,
    ):
        authors.add("alice", actor="test")
        authors.add("bob", actor="test")
        yield authors, book, clock


def test_an_upload_is_on_the_disk_with_its_row(books):
    _, book, _ = books
    stored = book.store("alice", "bot.py", None, io.BytesIO(b"print()\n"), limit=100)
    assert book.path(stored.id).read_bytes() == b"print()\n"
    assert stored.status == "queued" and stored.size == 8 and stored.attempts == 0
    assert [p.name for p in book.folder.iterdir()] == [stored.id]


def test_an_upload_past_its_limit_leaves_nothing(books):
    _, book, _ = books
    with pytest.raises(TooLarge):
        book.store("alice", "bot.py", None, io.BytesIO(b"x" * 101), limit=100)
    assert list(book.folder.iterdir()) == []
    assert book.queue() == []


def test_another_authors_upload_is_as_absent_as_none(books):
    _, book, _ = books
    stored = book.store("alice", "bot.py", None, io.BytesIO(b"x"), limit=100)
    assert book.get(stored.id, author="alice") is not None
    assert book.get(stored.id, author="bob") is None
    assert book.get("nope", author="bob") is None


def test_two_checkers_never_claim_one_upload(tmp_path, books):
    _, book, _ = books
    for n in range(20):
        book.store("alice", f"b{n}.py", None, io.BytesIO(b"x"), limit=100)
    claimed: list[str] = []
    lock = threading.Lock()

    def claim_all() -> None:
        with SubmissionBook(tmp_path) as mine:
            while (got := mine.claim()) is not None:
                with lock:
                    claimed.append(got.id)

    threads = [threading.Thread(target=claim_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == 20 and len(set(claimed)) == 20


def test_uploads_at_once_from_many_threads_are_all_stored(tmp_path, books):
    """Fifty threads, each with its own connection, store at the same moment: every one is
    stored once, none fails with a locked database (the in-process writer lock)."""
    _, _, clock = books
    start = threading.Barrier(50)
    ids: list[str] = []
    errors: list[BaseException] = []

    def one(n: int) -> None:
        try:
            with SubmissionBook(tmp_path, clock=clock) as mine:
                start.wait()
                ids.append(mine.store("alice", f"b{n}.py", None, io.BytesIO(b"x"), 100).id)
        except BaseException as exc:  # the test reports every failure
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with SubmissionBook(tmp_path) as book:
        assert sorted(s.id for s in book.queue()) == sorted(ids) and len(set(ids)) == 50


def test_a_writer_waits_for_another_threads_transaction_then_commits(tmp_path, books):
    _, book, _ = books
    holding, release, done = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with SubmissionBook(tmp_path) as mine, mine.database.transaction():
            holding.set()
            release.wait(10)

    def write() -> None:
        with SubmissionBook(tmp_path) as mine:
            mine.store("bob", "late.py", None, io.BytesIO(b"x"), 100)
        done.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    writer = threading.Thread(target=write)
    writer.start()
    assert not done.wait(0.5)  # it waits for the transaction, it does not fail
    release.set()
    holder.join()
    writer.join()
    assert done.is_set() and [s.filename for s in book.queue()] == ["late.py"]


def test_recovery_queues_a_cut_check_again_and_marks_one_already_entered(books):
    _, book, _ = books
    cut = book.store("alice", "a.py", None, io.BytesIO(b"a"), limit=100)
    entered = book.store("alice", "b.py", None, io.BytesIO(b"b"), limit=100)
    done = book.store("bob", "c.py", None, io.BytesIO(b"c"), limit=100)
    for _ in range(3):
        book.claim()
    book.read(cut.id, "1" * 64)
    book.read(entered.id, "2" * 64)
    book.finish(done.id, "refused", "bot refused: no")
    (book.folder / ".incoming-deadbeef").write_bytes(b"half")  # killed before its row
    (book.folder / "orphan").write_bytes(b"renamed, no row")
    again = book.recover({("alice", "2" * 64): ("b", 1, "b")})
    assert again == 1
    assert book.get(cut.id).status == "queued"  # type: ignore[union-attr]
    recovered = book.get(entered.id)
    assert recovered is not None and recovered.status == "accepted" and recovered.label == "b"
    assert "entered before the server stopped" in recovered.report
    assert book.get(done.id).status == "refused"  # type: ignore[union-attr]
    assert sorted(p.name for p in book.folder.iterdir()) == sorted([cut.id, entered.id, done.id])
    # Claimed again, it counts a second attempt.
    again_claimed = book.claim()
    assert again_claimed is not None and again_claimed.id == cut.id
    assert again_claimed.attempts == 2


def test_retry_after_counts_the_interval_and_the_day(books):
    _, book, clock = books
    assert book.retry_after("alice", per_day=2, interval_s=30) == 0
    book.store("alice", "a.py", None, io.BytesIO(b"a"), limit=100)
    assert book.retry_after("alice", per_day=2, interval_s=30) == 30
    clock.now += 40
    assert book.retry_after("alice", per_day=2, interval_s=30) == 0
    book.store("alice", "b.py", None, io.BytesIO(b"b"), limit=100)
    clock.now += 40
    # Two in the last day: the first leaves the window 86,400 s after it came.
    assert book.retry_after("alice", per_day=2, interval_s=30) == pytest.approx(86_400 - 80)
    assert book.retry_after("bob", per_day=2, interval_s=30) == 0


def test_a_session_ends_with_its_token(books):
    authors, book, clock = books
    alice = authors.author("alice")
    assert alice is not None and alice.token_id is not None
    cookie = book.open_session("alice", alice.token_id, hours=1)
    session = book.session(cookie)
    assert session is not None and session.author == "alice" and len(session.csrf) >= 24
    assert book.session(cookie + "x") is None
    assert book.session("") is None
    authors.rotate("alice", actor="test")
    assert book.session(cookie) is None  # opened with the old token
    fresh = authors.author("alice")
    assert fresh is not None and fresh.token_id is not None
    second = book.open_session("alice", fresh.token_id, hours=1)
    assert book.session(second) is not None
    clock.now += 3601
    assert book.session(second) is None  # expired
    clock.now -= 3601
    authors.revoke("alice", actor="test")
    assert book.session(second) is None
