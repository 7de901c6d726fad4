"""Leaderboard renderers: the JSON shape, and escaping of hostile bot names."""

from __future__ import annotations

import csv
import io
import json

from referee.publish import build_leaderboard, render, to_csv, to_json, to_markdown
from referee.scheduler import MatchSpec
from referee.store import StoredMatch, StoredSeat

HOSTILE = "=cmd|x<script>"
NAMES = [HOSTILE, "*bold*_it_`code`", "+SUM(A1)", "plain", "\x1b[31mred"]


def _board():  # type: ignore[no-untyped-def]
    matches = []
    for i in range(6):
        table = tuple(NAMES[(i + j) % 5] for j in range(3))
        spec = MatchSpec(key=f"k{i}", table=table, deal=0, rotation=0, deal_seed=1, match_seed=1)
        seats = tuple(
            StoredSeat(
                seat,
                name,
                seat + 1,
                3 - seat,
                seat == 2,
                "timeout" if seat == 2 else None,
                "slow" if seat == 2 else None,
            )
            for seat, name in enumerate(table)
        )
        matches.append(StoredMatch(spec, seats))
    return build_leaderboard("spring", "arschloch", matches, NAMES)


def test_json_has_exactly_the_documented_shape() -> None:
    data = json.loads(to_json(_board()))
    assert list(data) == ["tournament", "rules", "matches", "deals", "entries"]
    assert (data["tournament"], data["rules"], data["matches"]) == ("spring", "arschloch", 6)
    assert [e["rank"] for e in data["entries"]] == [1, 2, 3, 4, 5]
    for entry in data["entries"]:
        assert list(entry) == [
            "rank",
            "name",
            "mu",
            "sigma",
            "score",
            "matches",
            "avg_place",
            "firsts",
            "forfeits",
            "faults",
        ]
        assert abs(entry["score"] - (entry["mu"] - 3 * entry["sigma"])) < 2e-3
    assert {e["name"] for e in data["entries"]} == set(NAMES)
    assert sum(e["matches"] for e in data["entries"]) == 18
    assert sum(e["faults"].get("timeout", 0) for e in data["entries"]) == 6
    assert data["entries"][0]["score"] >= data["entries"][-1]["score"]


def test_markdown_escapes_names_so_they_cannot_break_the_table_or_inject_html() -> None:
    md = to_markdown(_board())
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "=cmd\\|x" in md
    assert "\\*bold\\*\\_it\\_\\`code\\`" in md
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 5
    for line in table:  # every row has exactly the 10 cells of the header
        unescaped_pipes = line.replace("\\|", "").count("|")
        assert unescaped_pipes == 11
    assert "\x1b" not in md


def test_csv_quotes_every_cell_and_defuses_formulas() -> None:
    text = to_csv(_board())
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:2] == ["rank", "name"]
    names = {row[1] for row in rows[1:]}
    assert "'=cmd|x<script>" in names and "'+SUM(A1)" in names and "plain" in names
    assert all(line.startswith('"') for line in text.splitlines())
    assert all(not row[1].startswith(("=", "+", "-", "@")) for row in rows[1:])
    assert any(row[9].startswith("timeout:") for row in rows[1:])


def test_terminal_table_strips_control_characters_and_markup() -> None:
    text = render(_board(), "table")
    assert "\x1b" not in text
    assert "[31mred" in text  # the escape character itself is gone, the rest is shown as text
    assert "=cmd|x<script>" in text


def test_an_empty_tournament_renders() -> None:
    board = build_leaderboard("empty", "arschloch", [], ["a", "b", "c"])
    assert json.loads(to_json(board))["entries"][0]["avg_place"] is None
    assert "| 1 | a |" in to_markdown(board)
