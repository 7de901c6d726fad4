"""The table ``referee play --matches`` ends with: counted from stored matches, rendered safely."""

from __future__ import annotations

import io
import json

from rich.console import Console

from referee.cli.tally import tally_table
from referee.ranking.tally import tally
from referee.specs import MatchSpec, StoredMatch, StoredSeat


def _match(deal: int, rotation: int, places: dict[str, int], faults: dict[str, str]) -> StoredMatch:
    """A stored match of table deal ``deal``: ``places`` by name in seat order, and the
    fault kind of each seat that forfeited."""
    table = tuple(places)
    key = f"rr/t/d{deal:03d}/r{rotation}"
    spec = MatchSpec(key=key, table=table, deal=deal, rotation=rotation, deal_seed=1, match_seed=1)
    seats = tuple(
        StoredSeat(
            i, n, places[n], 0, n in faults, faults.get(n), "detail" if n in faults else None
        )
        for i, n in enumerate(table)
    )
    return StoredMatch(spec, tuple(sorted(seats, key=lambda s: (s.place, s.seat))))


MATCHES = [
    _match(0, 0, {"mine": 1, "low": 2, "rand": 3}, {}),
    _match(0, 1, {"low": 1, "rand": 2, "mine": 3}, {"mine": "timeout"}),
    _match(0, 2, {"rand": 1, "mine": 2, "low": 3}, {}),
    _match(1, 0, {"mine": 1, "rand": 2, "low": 3}, {}),
    _match(1, 1, {"rand": 1, "low": 2, "mine": 3}, {"mine": "crash", "low": "crash"}),
    _match(1, 2, {"low": 1, "mine": 2, "rand": 3}, {}),
]


def test_each_bot_gets_its_matches_places_faults_and_interval() -> None:
    result = tally(
        MATCHES, ["low", "mine", "rand", "absent"], rules="arschloch", table_size=3, scheduled=6
    )
    assert (result.matches, result.scheduled, result.deals) == (6, 6, 2)
    rows = {row.name: row for row in result.bots}
    mine = rows["mine"]
    assert mine.matches == 6 and mine.places == (2, 2, 0) and mine.forfeits == 2
    assert mine.faults == {"crash": 1, "timeout": 1}
    # Forfeits share the place after every seat that did not forfeit (the ratings' places):
    # alone, mine is last (0); beside low's forfeit, both are 2nd (0.5).
    assert mine.score is not None and abs(mine.score - (1 + 0 + 0.5 + 1 + 0.5 + 0.5) / 6) < 1e-9
    assert mine.interval is None  # two deals are too few for one
    low = rows["low"]
    assert low.places == (2, 1, 2) and low.forfeits == 1 and low.faults == {"crash": 1}
    assert sum(low.places) + low.forfeits == low.matches == 6
    # A bot without a match is listed, last, without an interval.
    assert rows["absent"].matches == 0 and rows["absent"].score is None
    assert result.bots[-1].name == "absent"
    means = [row.score for row in result.bots if row.score is not None]
    assert means == sorted(means, reverse=True)


# Eight deals of three rotations: the first bot of each rotation wins.
MANY = [
    _match(d, r, {n: 1 + (i - r) % 3 for i, n in enumerate(("a", "b", "c"))}, {})
    for d in range(8)
    for r in range(3)
]


def test_from_eight_deals_on_each_bot_has_an_interval() -> None:
    result = tally(MANY[:21], ["a", "b", "c"], rules="arschloch", table_size=3, scheduled=24)
    assert result.deals == 7 and all(row.interval is None for row in result.bots)
    result = tally(MANY, ["a", "b", "c"], rules="arschloch", table_size=3, scheduled=24)
    assert result.deals == 8
    for row in result.bots:
        assert row.score == 0.5 and row.places == (8, 8, 8)
        assert row.interval is not None and row.interval[0] <= 0.5 <= row.interval[1]
    text = _rendered(MANY, ["a", "b", "c"], 24)
    assert "0.50 [0.50,0.50]" in text
    assert "and its 95% bootstrap interval over the 8 deals (whole seat rotations)" in text


def test_the_same_matches_in_any_order_give_the_same_table() -> None:
    names = ["low", "mine", "rand"]
    one = tally(MATCHES, names, rules="arschloch", table_size=3, scheduled=6)
    two = tally(MATCHES[::-1], names[::-1], rules="arschloch", table_size=3, scheduled=6)
    assert one.as_dict() == two.as_dict()


def test_the_json_shape() -> None:
    data = tally(MANY, ["a", "b", "c"], rules="arschloch", table_size=3, scheduled=27).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {
        "rules",
        "table_size",
        "matches",
        "scheduled",
        "deals",
        "confidence",
        "bots",
    }
    assert data["matches"] == 24 and data["scheduled"] == 27 and data["confidence"] == 0.95
    first = data["bots"][0]
    assert set(first) == {"name", "matches", "score", "interval", "places", "forfeits", "faults"}
    assert len(first["interval"]) == 2 and len(first["places"]) == 3


def _rendered(matches: list[StoredMatch], names: list[str], scheduled: int) -> str:
    console = Console(width=100, color_system=None, file=io.StringIO(), highlight=False)
    console.print(
        tally_table(tally(matches, names, rules="arschloch", table_size=3, scheduled=scheduled))
    )
    out = console.file
    assert isinstance(out, io.StringIO)
    return " ".join(out.getvalue().split())


def test_the_terminal_table_counts_and_explains() -> None:
    text = _rendered(MATCHES, ["mine", "low", "rand"], 9)
    assert "arschloch · 3 seats · 6 of 9 matches" in text
    for column in ("bot", "score [95%]", "1st", "2nd", "3rd", "faults"):
        assert column in text
    assert "2 (crash 1, timeout 1)" in text
    note = "score: the mean finishing score (1 first, 0 last) with an interval from 8 deals "
    note += "on (--matches 24), not 2 deals; 1st, 2nd, ...: matches finished there"
    assert note in text
    assert "0.58 (2 deals)" in text


def test_hostile_names_are_shown_not_obeyed() -> None:
    evil = "\x1b[2J[bold]x[/bold]\u202e"
    matches = [
        _match(0, r, {evil: 1 + r % 3, "b": 1 + (r + 1) % 3, "c": 1 + (r + 2) % 3}, {})
        for r in range(3)
    ]
    text = _rendered(matches, [evil, "b", "c"], 3)
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[2J[bold]x[/bold]\\u202e" in text.replace(" ", "")
