"""What the bots wrote and how quickly they answered, as the site publishes it.

A fake tournament (conftest.py) in which one bot writes hostile text to stderr before every
reply (markup, terminal escapes, invalid UTF-8, a bidirectional override) and takes a few
milliseconds to answer: its stderr must reach each replay page as data that shows it as
text, never as markup; its reply times must reach its page and ``leaderboard.json`` as the
store recorded them.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import statistics
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from referee.publish.paths import bot_slugs, match_names
from referee.publish.replaydata import STDERR_GLOBAL, shown_text, stderr_script
from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.results import ReplyTimes
from referee.stderrlog import MatchStderr, stderr_path
from referee.testing import Exit, Handler, Stderr, lowest_bot, polite_bot
from referee.tournament.file import Tournament
from tests.publish.conftest import play_fake, write_fake_tournament

TALKER = "talker"
NOISE = b"act %d <script>alert(4)</script> \x1b[31mred\x1b[0m \xff\xfe \xe2\x80\xaeevil & done\n"


def _talker() -> Handler:
    """Plays like ``polite``; before each reply writes :data:`NOISE` and waits 0 to 4 ms."""
    inner = polite_bot(TALKER)

    def handle(msg: dict[str, Any]) -> Any:
        out = inner(msg)
        if msg.get("type") != "act":
            return out
        time.sleep(msg["id"] % 5 / 1000)
        return [Stderr(NOISE % msg["id"]), out]

    return handle


HANDLERS: dict[str, Callable[[], Handler]] = {
    TALKER: _talker,
    "lowest": lambda: lowest_bot("lowest"),
    "polite": lambda: polite_bot("polite"),
}


@pytest.fixture(scope="module")
def talked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tournament, Path]:
    folder = tmp_path_factory.mktemp("talk")
    spec = play_fake(write_fake_tournament(folder, deals=1, names=tuple(HANDLERS)), HANDLERS)
    out = folder / "site"
    publish_site(load_results(spec), out)
    return spec, out


def _script_data(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    prefix = f"window.{STDERR_GLOBAL} = "
    assert text.startswith(prefix) and text.endswith(";\n")
    data: dict[str, Any] = json.loads(text[len(prefix) : -2])
    return data


def test_each_replay_page_carries_every_seats_stderr_made_safe_to_show(
    talked: tuple[Tournament, Path],
) -> None:
    spec, out = talked
    results = load_results(spec)
    stems = match_names({m.spec.key: m.spec.table for m in results.matches})
    for match in results.matches:
        stem = stems[match.spec.key]
        page = (out / "matches" / f"{stem}.html").read_text()
        assert f'<script src="{stem}.stderr.js"></script>' in page
        script = (out / "matches" / f"{stem}.stderr.js").read_text(encoding="utf-8")
        assert "<" not in script and ">" not in script and "&" not in script
        assert "\x1b" not in script and "\u202e" not in script
        kept = MatchStderr.model_validate_json(
            stderr_path(results.log_path(match.spec.key)).read_bytes()
        )
        data = _script_data(out / "matches" / f"{stem}.stderr.js")
        assert [s["name"] for s in data["seats"]] == list(match.spec.table)
        for seat, stored in zip(data["seats"], kept.seats, strict=True):
            assert seat["pieces"] == [[p.line, shown_text(p.text)] for p in stored.pieces]
            assert (seat["written"], seat["cut"]) == (stored.written, stored.cut)
        talker = data["seats"][match.spec.table.index(TALKER)]
        assert talker["pieces"], "the talker wrote before every reply"
        for _line, text in talker["pieces"]:
            assert re.fullmatch(
                r"act \d+ <script>alert\(4\)</script> red \ufffd\ufffd \ufffdevil & done\n", text
            ), text
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".js", ".json", ".jsonl"):
            assert "<script>alert(4)" not in path.read_text(encoding="utf-8"), path


def test_shown_text_removes_terminal_escapes_and_shows_controls() -> None:
    assert shown_text("a\x1b[1;31mred\x1b[0m\x1b]0;title\x07b") == "aredb"
    assert shown_text("x\x1bP unterminated, kept") == "x unterminated, kept"
    assert (
        shown_text("nul\x00 bell\x07 del\x7f c1\x85 tab\t")
        == "nul\u2400 bell\u2407 del\u2421 c1\ufffd tab\t"
    )
    assert shown_text("a\r\nb\rc") == "a\nb\nc"
    assert shown_text("\u202eabc\u2066d") == "\ufffdabc\ufffdd"
    assert shown_text("<b>&amp;</b>") == "<b>&amp;</b>"  # text, shown with textContent


def test_a_stderr_file_that_is_not_one_is_refused() -> None:
    for raw in (b"", b"[]", b'{"type":"stderr"}', b'{"type":"log","version":1}'):
        with pytest.raises(ValueError):
            stderr_script(raw)


def _recorded(spec: Tournament) -> dict[str, tuple[list[int], list[int]]]:
    """Each bot's reply times and bank spent per match, read from the store by hand."""
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    found: dict[str, tuple[list[int], list[int]]] = {}
    for name, times, spent in db.execute("SELECT name, reply_ms, bank_spent_ms FROM results"):
        mine = found.setdefault(name, ([], []))
        mine[0].extend(json.loads(times))
        mine[1].append(spent)
    db.close()
    return found


class _Summary(HTMLParser):
    """The ``dt``/``dd`` pairs inside the element with ``id``."""

    def __init__(self, element_id: str) -> None:
        super().__init__()
        self.element_id = element_id
        self.depth = 0
        self.tag: str | None = None
        self.pairs: dict[str, str] = {}
        self._dt = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or ("id", self.element_id) in attrs:
            self.depth += 1
        if self.depth and tag in ("dt", "dd"):
            self.tag = tag

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
        if tag == self.tag:
            self.tag = None

    def handle_data(self, data: str) -> None:
        if self.tag == "dt":
            self._dt = data.strip()
        elif self.tag == "dd":
            self.pairs[self._dt] = self.pairs.get(self._dt, "") + data


def test_reply_times_on_each_bot_page_and_in_leaderboard_json_are_the_recorded_ones(
    talked: tuple[Tournament, Path],
) -> None:
    spec, out = talked
    board = json.loads((out / "leaderboard.json").read_text())
    bank_ms = spec.file.time.bank_ms
    slugs = bot_slugs(spec.entrants)
    recorded = _recorded(spec)
    assert set(board["reply_times"]) == set(recorded) == set(HANDLERS)
    talker_times = recorded[TALKER][0]
    assert max(talker_times) >= 3, "the talker's waits are measured"
    for name, (times, spent) in recorded.items():
        ordered = sorted(times)
        want = {
            "replies": len(times),
            "median_ms": statistics.median(times),
            "p99_ms": ordered[math.ceil(0.99 * len(ordered)) - 1],
            "max_ms": ordered[-1],
            "most_bank_spent_ms": max(spent),
            "bank_ms": bank_ms,
            "most_bank_share": round(max(spent) / bank_ms, 3),
        }
        assert board["reply_times"][name] == want, name
        parser = _Summary("reply-times")
        parser.feed((out / "bots" / f"{slugs[name]}.html").read_text())
        shown = {k: " ".join(v.split()) for k, v in parser.pairs.items()}
        median = want["median_ms"]
        assert shown["median"] == (
            f"{median:.0f} ms" if median == int(median) else f"{median:.1f} ms"
        )
        assert shown["99th percentile"] == f"{want['p99_ms']} ms"
        assert shown["slowest"] == f"{want['max_ms']} ms"
        assert shown["replies"] == f"{len(times):,}"
        share = f"{100 * max(spent) / bank_ms:.0f}%"
        assert (
            shown["most of the bank used"]
            == f"{share} ({max(spent)} ms of {bank_ms:,} ms in one match)"
        )


def test_reply_time_statistics() -> None:
    times = ReplyTimes()
    times.add([5, 1, 3], 0)
    times.add([2], 40)
    times.add([], None)
    assert times.replies == 4 and times.median_ms() == 2.5 and times.max_ms() == 5
    assert times.percentile_ms(99) == 5 and times.percentile_ms(50) == 2
    assert times.percentile_ms(25) == 1 and times.most_bank_spent_ms() == 40
    times.add(range(1, 101), 10)  # 1..100 and the four above: 104 replies
    assert times.percentile_ms(99) == 99 and times.percentile_ms(100) == 100
    assert times.median_ms() == 48.5  # the 52nd and 53rd: 48 and 49
    empty = ReplyTimes()
    assert empty.median_ms() is None and empty.percentile_ms(99) is None
    assert empty.max_ms() is None and empty.most_bank_spent_ms() is None


SECRET_PLAN = b"my secret plan: keep the aces for round 3\n"


def _leaker() -> Handler:
    """Plays like ``polite`` but crashes at its first request, its plan on stderr."""
    inner = polite_bot("leaker")

    def handle(msg: dict[str, Any]) -> Any:
        if msg.get("type") == "act":
            return [Stderr(SECRET_PLAN), Exit(1)]
        return inner(msg)

    return handle


@pytest.mark.parametrize("stderr", ["public", "private"])
def test_stderr_private_publishes_no_bots_stderr_anywhere(tmp_path: Path, stderr: str) -> None:
    """``[publish] stderr = "private"``: no stderr script, no stderr under a fault, on any
    page or file of the site; ``public`` (the default) shows both."""
    handlers = {**HANDLERS, "leaker": _leaker}
    path = write_fake_tournament(
        tmp_path, deals=1, names=tuple(handlers), extra=f'[publish]\nstderr = "{stderr}"\n'
    )
    spec = play_fake(path, handlers)
    out = tmp_path / "site"
    publish_site(load_results(spec), out)
    scripts = list(out.glob("matches/*.stderr.js"))
    found = [f for f in out.rglob("*") if f.is_file() and b"secret plan" in f.read_bytes()]
    bot_page = (out / "bots" / f"{bot_slugs(list(handlers))['leaker']}.html").read_text()
    match_page = next(out.glob("matches/*.html")).read_text()
    if stderr == "public":
        assert scripts and found and "my secret plan" in bot_page
        return
    assert not scripts and not found, found
    assert "Kept private: this competition publishes no bot" in bot_page
    assert 'id="faults"' in bot_page and "crash" in bot_page  # the faults are still there
    assert "stderr is kept private in this competition" in match_page
    assert "stderr.js" not in match_page
