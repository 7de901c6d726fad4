"""The published site, read as files: what it holds, what it escapes, when it holds back.

The browser tests (test_browser.py) open the same pages in Chromium; these check the files
themselves, fast, on tournaments played in memory (conftest.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import sqlite3
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.protocol.kit import KIT_MARKER
from referee.publish.paths import match_names
from referee.publish.site import SITE_MARKER, WITHHELD_NOTE, publish_site
from referee.publish.source import entrant_authors, leaderboard, load_results
from referee.ranking.standings import rate_part
from referee.results import FaultInfo, MatchResult, SeatResult
from referee.specs import deal_key
from referee.testing import Handler, Stderr, lowest_bot, polite_bot
from referee.tournament.file import Tournament, load_tournament
from referee.tournament.scheduler import schedule
from referee.tournament.store import Store
from tests.publish.conftest import (
    HANDLERS,
    HOSTILE_NAME,
    NAMES,
    play_fake,
    write_fake_tournament,
)

ESCAPED_NAME = "&lt;img src=x onerror=alert(1)&gt;"


class _Rows(HTMLParser):
    """The text of each cell of the first table with ``id``, row by row."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id = table_id
        self.inside = self.in_body = False
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("id", self.table_id) in attrs:
            self.inside = True
        elif self.inside and tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.rows.append([])
        elif self.in_body and tag == "td":
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = self.in_body = False

    def handle_data(self, data: str) -> None:
        if self.in_body and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


class _Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.update(name for name, _ in attrs)


def _attributes(text: str) -> set[str]:
    """Every attribute name used in the page's tags."""
    parser = _Attributes()
    parser.feed(text)
    return parser.names


def _rows(page: Path, table_id: str) -> list[list[str]]:
    parser = _Rows(table_id)
    parser.feed(page.read_text(encoding="utf-8"))
    return [[cell.strip() for cell in row] for row in parser.rows]


@pytest.fixture(scope="module")
def site(fake_tournament: Tournament, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    publish_site(load_results(fake_tournament), out)
    return out


def test_the_leaderboard_page_lists_every_bot_in_the_order_of_leaderboard_json(
    site: Path,
) -> None:
    board = json.loads((site / "leaderboard.json").read_text())
    rows = _rows(site / "index.html", "leaderboard")
    assert [row[1] for row in rows] == [e["name"] for e in board["entries"]]
    assert [int(row[0]) for row in rows] == [e["rank"] for e in board["entries"]]
    for row, entry in zip(rows, board["entries"], strict=True):
        assert abs(float(row[2]) - entry["score"]) < 0.006
    assert board["settings"]["overrides"] == {"target": 3}
    index = (site / "index.html").read_text()
    assert "target = 3" in index and "referee 0.1" in index
    for bot in board["settings"]["bots"]:
        assert bot["sha256"] in index
    assert "revealed:" in index  # a finished tournament shows its deal secret
    assert "Still being played" not in index
    assert (site / "leaderboard.md").read_text().startswith("## Leaderboard: fake")
    assert (site / "leaderboard.csv").read_text().startswith('"rank","name"')


def test_untrusted_text_is_escaped_and_no_page_runs_inline_code(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) == 3 + 4 + 24
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<img" not in text and "<script>" not in text, page
        for tag in re.findall(r"<script[^>]*>", text):
            assert re.fullmatch(r'<script src="[^"]+">', tag), (page, tag)
        assert not [a for a in _attributes(text) if a.startswith("on")], page
        assert "Content-Security-Policy" in text
    assert ESCAPED_NAME in (site / "index.html").read_text()
    for script in site.rglob("matches/*.js"):
        text = script.read_text(encoding="utf-8")
        assert "<" not in text and ">" not in text and "\u2028" not in text, script


def test_each_match_has_a_readable_page_its_log_and_its_data(
    site: Path, fake_tournament: Tournament
) -> None:
    stems = {p.stem for p in (site / "matches").glob("*.html")}
    assert len(stems) == 24
    assert "lowest-polite-steady_d000_r0" in stems
    assert "img-src-x-onerror-al-lowest-polite_d001_r2" in stems
    for stem in stems:
        assert (site / "matches" / f"{stem}.js").is_file()
    results = load_results(fake_tournament)
    logs = {p.read_bytes() for p in results.logs_dir.glob("*.jsonl")}
    assert {p.read_bytes() for p in (site / "matches").glob("*.jsonl")} == logs
    rows = _rows(site / "matches.html", "match-list")
    assert len(rows) == 24
    page = (site / "matches" / "lowest-polite-steady_d000_r0.html").read_text()
    assert 'src="lowest-polite-steady_d000_r0.js"' in page and "deal 0, rotation 0" in page


def test_a_bot_page_lists_each_fault_with_its_reply_and_a_link_to_the_move(site: Path) -> None:
    page = (site / "bots" / "img-src-x-onerror-alert-1.html").read_text()
    assert page.count('<details class="fault"') == 18
    assert "reply is not valid JSON" in page
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(3)&gt;&lt;!--" in page
    links = re.findall(r'href="\.\./matches/([^"#]+)\.html#L(\d+)"', page)
    assert len(links) == 18
    stem, line = links[0]
    log = (site / "matches" / f"{stem}.jsonl").read_text().split("\n")
    assert json.loads(log[int(line) - 1])["type"] == "fault"


def test_the_stderr_of_a_faulting_bot_is_kept_and_shown(tmp_path: Path) -> None:
    spec = load_tournament(write_fake_tournament(tmp_path / "t", deals=1))
    stderr = "[before the match]\nloading </pre><script>alert(4)</script>\n[during the match]\nboom"
    with Store(spec.results_dir) as store:  # one match scheduled and stored by hand
        store.check_settings(spec.settings())
        secret = store.deal_secret()
        store.save_plan(spec.plan())
        first = schedule(spec, secret.key)[0]
        store.add_matches([first], secret)
    key, table = first.key, first.table
    fault = FaultInfo(kind="crash", detail="exit code 3", request_id=9, reply=None, elapsed_ms=12)
    standings = [
        SeatResult(
            seat=s, name=n, place=s + 1, score=0, forfeit=s == 2, fault=fault if s == 2 else None
        )
        for s, n in enumerate(table)
    ]
    result = MatchResult(
        match=key,
        seed=1,
        rules="arschloch",
        rounds=1,
        log=None,
        standings=standings,
        stderr_tails={2: stderr},
    )
    with Store(spec.results_dir) as store:
        store.mark_running(key)
        store.record_result(key, result, table)
        [kept] = [f for f in store.fault_reports() if f.key == key and f.seat == 2]
    assert (kept.kind, kept.request_id, kept.elapsed_ms, kept.stderr) == ("crash", 9, 12, stderr)
    out = tmp_path / "site"
    publish_site(load_results(spec), out)
    slug = {"polite": "polite", "lowest": "lowest", "steady": "steady"}.get(
        table[2], "img-src-x-onerror-alert-1"
    )
    page = (out / "bots" / f"{slug}.html").read_text()
    assert "loading &lt;/pre&gt;&lt;script&gt;alert(4)&lt;/script&gt;" in page
    assert "exit code 3" in page and "<dd>9</dd>" in page and "12 ms" in page


def test_while_a_deal_is_being_played_its_replays_are_held_back(tmp_path: Path) -> None:
    # Rotations share their deal here (at four bots, tables of three share none otherwise).
    spec = play_fake(
        write_fake_tournament(tmp_path / "t", deals=1, extra='duplicate = "rotations"')
    )
    key = sorted(load_results(spec).records)[0]
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    for statement in (  # as if the run were still playing that match
        "DELETE FROM chain WHERE match_key = ?",
        "DELETE FROM results WHERE match_key = ?",
        "UPDATE matches SET status = 'running' WHERE key = ?",
    ):
        db.execute(statement, (key,))
    db.execute("UPDATE deal_secrets SET revealed = NULL")
    db.commit()
    db.close()
    out = tmp_path / "site"
    report = publish_site(load_results(spec), out)
    assert (report.matches, report.withheld, report.replays) == (11, 2, 9)
    index = (out / "index.html").read_text()
    assert "Still being played" in index and "11 of 12 matches were finished" in index
    assert "not revealed yet" in index
    held = [p for p in (out / "matches").glob("*.html") if not p.with_suffix(".js").exists()]
    assert len(held) == 2
    assert WITHHELD_NOTE in held[0].read_text()


def test_a_missing_log_costs_its_replay_only(tmp_path: Path) -> None:
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1))
    results = load_results(spec)
    key = sorted(results.records)[0]
    results.log_path(key).unlink()
    report = publish_site(results, tmp_path / "site")
    assert (report.matches, report.replays, report.missing) == (12, 11, 1)


def test_publishing_again_replaces_the_site_and_never_writes_into_other_folders(
    fake_tournament: Tournament, tmp_path: Path
) -> None:
    results = load_results(fake_tournament)
    out = tmp_path / "site"
    publish_site(results, out)
    (out / "matches" / "stale.html").write_text("old")
    publish_site(results, out)
    assert not (out / "matches" / "stale.html").exists()
    assert (out / SITE_MARKER).is_file()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(UsageError, match="not empty and holds no site"):
        publish_site(results, foreign)
    assert [p.name for p in foreign.iterdir()] == ["thesis.tex"]
    with pytest.raises(UsageError, match="is a file"):
        publish_site(results, foreign / "thesis.tex")


def test_without_jinja_the_error_says_what_to_install(
    fake_tournament: Tournament, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)
    # The command of this installation (tests/test_installation.py has each way's).
    with pytest.raises(UsageError, match=r"needs Jinja2, .*; install it with: \S+pip install"):
        publish_site(load_results(fake_tournament), tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_the_command_prints_the_index_and_refuses_a_foreign_folder(
    fake_tournament: Tournament, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "site"
    done = runner.invoke(main, ["publish", str(fake_tournament.path), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip().splitlines()[-1] == str((out / "index.html").resolve())
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    refused = runner.invoke(
        main, ["publish", str(fake_tournament.path), "--out", str(tmp_path / "other")]
    )
    assert refused.exit_code == 2
    assert "not empty" in refused.output


def test_the_leaderboard_in_every_format_carries_the_settings(
    fake_tournament: Tournament,
) -> None:
    from referee.publish import render

    board = leaderboard(load_results(fake_tournament))
    text = " ".join(render(board, "table").split())  # the terminal wraps long lines
    md = render(board, "md")
    for out in (text, md):
        assert "arschloch with target = 3" in out and "3 per table" in out
        assert "round-robin" in out and "seed 5" in out and "sandbox process (512 MB)" in out
        assert "1000 ms per request" in out and "by referee 0.1.0" in out
        for bot in board.settings.bots if board.settings else ():
            assert bot.sha256 in out
    assert "\\<img src=x onerror=alert(1)\\>" not in md and ESCAPED_NAME in md
    assert HOSTILE_NAME in text


@pytest.mark.slow
def test_a_large_tournament_is_ranked_in_another_process_with_the_same_result(
    fake_tournament: Tournament, tmp_path: Path
) -> None:
    results = load_results(fake_tournament)
    publish_site(results, tmp_path / "here")
    publish_site(results, tmp_path / "there", background_from=1)

    def board(folder: Path) -> dict[str, object]:
        return dict(json.loads((folder / "leaderboard.json").read_text()))

    assert board(tmp_path / "here") == board(tmp_path / "there")
    # In two halves (the ratings there, the intervals where free): every page the same.
    for page in ("index.html", "collusion.html", "leaderboard.md", "leaderboard.csv"):
        here = (tmp_path / "here" / page).read_bytes()
        there = (tmp_path / "there" / page).read_bytes()
        assert here == there, page
    for bot in (tmp_path / "here" / "bots").iterdir():
        assert bot.read_bytes() == ((tmp_path / "there" / "bots" / bot.name).read_bytes())


_RATED_HERE: list[int] = []


def _die_there(*args: Any) -> None:
    """The ranking process's target, which dies at once (killed, out of memory)."""
    os._exit(9)


def _count_here(given: Any) -> Any:
    _RATED_HERE.append(os.getpid())
    return rate_part(given)


def test_a_ranking_process_that_dies_is_made_up_for_here(
    fake_tournament: Tournament, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed, the ratings' process answers nothing: the ratings are computed here
    instead, and the site is what it would have been."""
    results = load_results(fake_tournament)
    publish_site(results, tmp_path / "here")
    monkeypatch.setattr("referee.ranking.standings._rank_there", _die_there)
    monkeypatch.setattr("referee.ranking.standings.rate_part", _count_here)
    _RATED_HERE.clear()
    publish_site(results, tmp_path / "there", background_from=1)
    assert [os.getpid()] == _RATED_HERE  # once, here, after the other process died
    assert (tmp_path / "here" / "index.html").read_bytes() == (
        tmp_path / "there" / "index.html"
    ).read_bytes()


@pytest.mark.parametrize("pages", ["quick", "slow"])
def test_the_score_intervals_are_computed_by_whichever_process_is_free_first(
    fake_tournament: Tournament, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pages: str
) -> None:
    """Pages written slowly (a busy disk): the ranking process computes the intervals once
    its ratings are done; written quickly, this one does. The site is the same."""
    import referee.ranking.standings as standings

    results = load_results(fake_tournament)
    publish_site(results, tmp_path / "whole")
    scored_here: list[int] = []
    real = standings.score_part

    def score_here(given: Any) -> Any:
        scored_here.append(os.getpid())
        return real(given)

    monkeypatch.setattr(standings, "score_part", score_here)
    if pages == "slow":  # this process asks only once the other one has taken them
        real_take = standings._Claim.take

        def take_late(claim: Any, who: int) -> bool:
            deadline = time.monotonic() + 60
            while not claim._value.value and time.monotonic() < deadline:
                time.sleep(0.01)
            return bool(real_take(claim, who))

        monkeypatch.setattr(standings._Claim, "take", take_late)
    publish_site(results, tmp_path / "split", background_from=1)
    assert scored_here == ([] if pages == "slow" else [os.getpid()])
    for page in ("index.html", "leaderboard.md", "leaderboard.csv"):
        assert (tmp_path / "whole" / page).read_bytes() == (
            tmp_path / "split" / page
        ).read_bytes(), page


def _let_win(spec: Tournament, helper: str, helped: str) -> int:
    """Rewrite the stored results as if ``helper`` let ``helped`` win wherever both played:
    ``helped`` first, the others after in their order. Returns how many matches changed.
    (A store never stores a match twice, so the rows are edited in place.)"""
    changed = 0
    results = load_results(spec)
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    with db:
        for match in results.matches:
            names = [s.name for s in match.seats]
            if helper not in names or helped not in names:
                continue
            order = sorted(match.seats, key=lambda s: (s.name != helped, s.place, s.seat))
            for place, s in enumerate(order, start=1):
                helped_seat = s.name == helped
                db.execute(
                    "UPDATE results SET place = ?, score = 0, forfeit = ?, fault_kind = ?, "
                    "fault_detail = ? WHERE match_key = ? AND seat = ?",
                    (
                        place,
                        int(s.forfeit and not helped_seat),
                        None if helped_seat else s.fault_kind,
                        None if helped_seat else s.fault_detail,
                        match.spec.key,
                        s.seat,
                    ),
                )
            changed += 1
    db.close()
    return changed


def test_the_collusion_page_lists_every_pair_and_flags_the_one_that_helps_itself(
    tmp_path: Path,
) -> None:
    names = (*NAMES, "quiet")
    handlers = {**HANDLERS, "quiet": lambda: polite_bot("quiet")}
    # Fixed cards: on fresh ones an honest pair is now and then flagged by chance (the
    # test's false-positive rate, not a fault of the page).
    secret = hashlib.sha256(b"collusion page").digest()
    path = write_fake_tournament(tmp_path / "t", deals=4, names=names)
    spec = play_fake(path, handlers, deal_secret=secret)
    assert _let_win(spec, "polite", "steady") >= 30  # 3 shared tables, 4 deals, 3 rotations
    out = tmp_path / "site"
    publish_site(load_results(spec), out)
    rows = _rows(out / "collusion.html", "collusion")
    assert len(rows) == 10  # every pair of the five bots met
    flagged = [row for row in rows if row[-1] == "flagged"]
    assert [row[:2] for row in flagged] == [["polite", "steady"]]
    assert sum(HOSTILE_NAME in row[:2] for row in rows) == 4
    index = (out / "index.html").read_text()
    assert 'href="collusion.html"' in index and "1 of 10 pairs flagged" in index
    assert "steady does better when polite is at its table" in index
    md = (out / "leaderboard.md").read_text()
    assert "Collusion check: 1 pair of entrants flagged" in md
    data = json.loads((out / "leaderboard.json").read_text())["collusion"]
    assert data["flagged"] == 1 and len(data["pairs"]) == 10
    assert (data["pairs"][0]["a"], data["pairs"][0]["b"], data["pairs"][0]["pattern"]) == (
        "polite",
        "steady",
        "b_gains",
    )
    assert '<button type="button">authors</button>' not in (out / "collusion.html").read_text()


def test_the_collusion_page_shows_authors_once_the_store_has_them(
    fake_tournament: Tournament, tmp_path: Path
) -> None:
    """The authors come from the stored entrants (``entrant_authors``): here two of them
    stored as written by one author."""
    results = load_results(fake_tournament)
    entrants = {
        name: dataclasses.replace(record, author="ann") if name in ("polite", "steady") else record
        for name, record in results.entrants.items()
    }
    assert entrant_authors(entrants) == {"polite": "ann", "steady": "ann"}
    publish_site(dataclasses.replace(results, entrants=entrants), tmp_path / "site")
    page = (tmp_path / "site" / "collusion.html").read_text()
    assert '<button type="button">authors</button>' in page
    rows = _rows(tmp_path / "site" / "collusion.html", "collusion")
    [same] = [row for row in rows if {row[0], row[1]} == {"polite", "steady"}]
    assert same[2] == "ann · ann same"


def test_a_replay_links_the_other_rotations_and_the_same_cards_at_other_tables(
    tmp_path: Path,
) -> None:
    from referee.testing import lowest_bot, polite_bot

    names = ("a1", "b2", "c3", "d4", "e5", "f6")  # two disjoint tables share each deal
    handlers = {
        n: functools.partial(polite_bot if i % 2 else lowest_bot, n) for i, n in enumerate(names)
    }
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1, names=names), handlers)
    results = load_results(spec)
    out = tmp_path / "site"
    publish_site(results, out)
    stems = match_names({m.spec.key: m.spec.table for m in results.matches})
    shared = 0
    for match in results.matches:
        page = (out / "matches" / f"{stems[match.spec.key]}.html").read_text()
        related = page.split('<nav class="related"', 1)[1].split("</nav>", 1)[0]
        rotations = {
            stems[m.spec.key]
            for m in results.matches
            if deal_key(m.spec.key) == deal_key(match.spec.key) and m is not match
        }
        same_cards = {
            stems[m.spec.key]
            for m in results.matches
            if m.spec.deal_id == match.spec.deal_id and m is not match
        } - rotations
        linked = set(re.findall(r'href="([^"]+)\.html"', related))
        assert linked == rotations | same_cards, match.spec.key
        assert len(rotations) == 2  # three seats, three rotations
        shared += bool(same_cards)
    assert shared == len(results.matches)  # every deal was dealt at two tables


def _kit_replacing(name: str) -> Handler:
    """Plays like ``lowest``; each time it follows, its 'kit' says it replaced the play."""
    inner = lowest_bot(name)

    def handle(msg: dict[str, Any]) -> Any:
        out: Any = inner(msg)
        if msg.get("type") == "act" and msg["kind"] == "play" and msg["trick"]["count"]:
            note = {
                "id": msg["id"],
                "kind": "play",
                "decided": ["ZZ"],
                "sent": out["cards"],
                "why": "not allowed",
            }
            return [Stderr(KIT_MARKER + json.dumps(note).encode() + b"\n"), out]
        return out

    return handle


def test_a_bot_whose_kit_replaced_decisions_is_warned_about_on_its_page(tmp_path: Path) -> None:
    handlers = {**HANDLERS, "steady": lambda: _kit_replacing("steady")}
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1), handlers)
    results = load_results(spec)
    matches, decisions = results.kit_replaced["steady"]
    played = sum(any(s.name == "steady" for s in m.seats) for m in results.matches)
    assert list(results.kit_replaced) == ["steady"] and 1 <= matches <= played
    assert decisions >= matches
    out = tmp_path / "site"
    publish_site(results, out)
    page = (out / "bots" / "steady.html").read_text()
    warning = re.search(r'<p class="kit-warning" id="kit-replaced">(.*?)</p>', page, re.S)
    assert warning is not None
    assert re.sub(r"<[^>]+>", "", warning.group(1)).startswith(
        f"Its kit replaced {decisions} of its decisions in {matches} match"
    )
    assert "kit-warning" not in (out / "bots" / "polite.html").read_text()


def test_publishing_hands_back_what_it_set_aside_from_the_collector(
    fake_tournament: Tournament, tmp_path: Path
) -> None:
    """A long-lived process (a league publishing again and again) keeps nothing frozen, and
    a caller's own frozen objects stay frozen."""
    import gc

    results = load_results(fake_tournament)
    assert gc.get_freeze_count() == 0
    publish_site(results, tmp_path / "one")
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        publish_site(results, tmp_path / "two")
        # Still frozen (an object freed meanwhile leaves the count, which unfreeze empties).
        assert frozen - 1000 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
