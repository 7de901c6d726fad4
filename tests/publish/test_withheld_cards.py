"""A site published mid-run shows no card of a deal that is still being played.

Matches with the same ``spec.deal_id`` were dealt the same cards. While one of them is
still to play, the site must hold back every published thing that shows those cards: the
replays of the finished ones (page data and log), the bots' stderr kept beside each log,
and their fault evidence (the detail, the offending reply, the stderr report), since a bot
may print its hand or send it as its reply. Here a finished match of an open deal has a fault whose reply and stderr carry the
bot's hand; every file of the site is scanned for the deal's hands as its log has them
(and as a bot would print them), then the deal is completed and they must appear.
"""

from __future__ import annotations

import html
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.results import FaultInfo, MatchResult, SeatResult
from referee.stderrlog import stderr_json, stderr_path
from referee.tournament.file import Tournament
from referee.tournament.store import Store
from tests.publish.conftest import play_fake, write_fake_tournament


def _hands(log: Path) -> list[list[str]]:
    """Every hand dealt in the match (each round's ``deal`` row)."""
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [hand for row in rows if row["type"] == "deal" for hand in row["hands"]]


def _spellings(hand: list[str]) -> set[str]:
    """The ways a hand appears in a file: as the log writes it, and as a bot may print it."""
    return {
        json.dumps(hand, separators=(",", ":")),
        json.dumps(hand),
        " ".join(hand),
        ",".join(hand),
    }


def _files_with(site: Path, needles: set[str]) -> dict[str, set[str]]:
    """Each file of the site holding one of ``needles`` (pages read as their text, markup
    escapes undone): which ones."""
    found = {}
    for path in sorted(site.rglob("*")):
        if path.is_file():
            text = html.unescape(path.read_text(encoding="utf-8"))
            hits = {n for n in needles if n in text}
            if hits:
                found[path.relative_to(site).as_posix()] = hits
    return found


@dataclass(frozen=True)
class OpenDeal:
    """A tournament stored mid-run: ``shown`` is finished, ``open`` is dealt the same cards
    and being played; ``hands`` are every hand of the deal, ``evidence`` what ``shown``'s
    fault holds (its detail, reply and stderr, each showing the bot's cards)."""

    tournament: Tournament
    shown: str
    open: str
    hands: list[list[str]]
    evidence: set[str]


@pytest.fixture
def open_deal(tmp_path: Path) -> OpenDeal:
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1))
    results = load_results(spec)
    shown, other = sorted(results.records)[:2]
    shown_spec = results.specs[shown]
    log = results.log_path(shown)
    hands = _hands(log)
    seat = 0
    hand = hands[seat]
    fault = FaultInfo(
        kind="protocol",
        detail=f"{hand[0]} is not in your hand",
        request_id=7,
        reply=json.dumps({"id": 7, "cards": hand}, separators=(",", ":")),
        elapsed_ms=3,
    )
    stderr = f"my hand: {' '.join(hand)}"
    # What the bot wrote during the match, beside the log: its hand, at its first move.
    during = [
        (name, [(3, f"{stderr}\n".encode())] if s == seat else [], 0)
        for s, name in enumerate(shown_spec.table)
    ]
    stderr_path(log).write_text(stderr_json(shown, 65536, during), encoding="utf-8")
    standings = [
        SeatResult(
            seat=s,
            name=n,
            place=s + 1,
            score=0,
            forfeit=s == seat,
            fault=fault if s == seat else None,
        )
        for s, n in enumerate(shown_spec.table)
    ]
    result = MatchResult(
        match=shown,
        seed=1,
        rules="arschloch",
        rounds=1,
        log=str(log),
        standings=standings,
        stderr_tails={seat: stderr},
    )
    for key in (shown, other):  # as if neither had been played yet
        _sql(spec, "DELETE FROM chain WHERE match_key = ?", key)
        _sql(spec, "DELETE FROM results WHERE match_key = ?", key)
        _sql(spec, "UPDATE matches SET status = 'pending' WHERE key = ?", key)
    with Store(spec.results_dir) as store:
        store.mark_running(shown)
        store.record_result(shown, result, shown_spec.table)
        store.mark_running(other)
    # The same cards as ``shown``, whatever the scheduler made of the fixture's deals.
    other_spec = results.specs[other].model_copy(update={"deal_id": shown_spec.deal_id})
    _sql(spec, "UPDATE matches SET spec = ? WHERE key = ?", other_spec.model_dump_json(), other)
    return OpenDeal(spec, shown, other, hands, {fault.detail, str(fault.reply), stderr})


def _sql(spec: Tournament, statement: str, *args: str) -> None:
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    with db:
        db.execute(statement, args)
    db.close()


def test_no_card_of_an_open_deal_is_published_until_it_is_played(
    open_deal: OpenDeal, tmp_path: Path
) -> None:
    spec = open_deal.tournament
    results = load_results(spec)
    deal = results.specs[open_deal.shown].deal_id
    out = tmp_path / "site"
    report = publish_site(results, out)
    assert report.withheld == sum(m.spec.deal_id == deal for m in results.matches) >= 1
    spelled = set().union(*(_spellings(h) for h in open_deal.hands))
    assert _files_with(out, spelled | open_deal.evidence) == {}
    pages = [p.read_text() for p in (out / "bots").glob("*.html")]
    assert sum("evidence held back" in page for page in pages) == 1

    # The deal's last match is played (its seat rows were kept): it is done again.
    _sql(spec, "UPDATE matches SET status = 'done' WHERE key = ?", open_deal.open)
    report = publish_site(load_results(spec), out)
    assert report.withheld == 0
    compact = {json.dumps(h, separators=(",", ":")) for h in open_deal.hands}
    assert set().union(*_files_with(out, compact).values()) == compact
    on_pages = _files_with(out / "bots", open_deal.evidence)
    assert set().union(*on_pages.values()) == open_deal.evidence
    stderr = next(e for e in open_deal.evidence if e.startswith("my hand: "))
    beside = _files_with(out / "matches", {stderr})
    assert [name for name in beside if name.endswith(".stderr.js")] != []
