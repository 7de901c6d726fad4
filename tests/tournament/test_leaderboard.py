"""Leaderboard renderers: the JSON shape, and escaping of hostile bot names."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

from referee.publish import Leaderboard, render, to_csv, to_json, to_markdown
from referee.ranking.standings import RankingInput, standings
from referee.specs import MatchSpec, StoredMatch, StoredSeat

HOSTILE = "=cmd|x<script>"


def build_leaderboard(tournament, rules, matches, entrants, **given):  # type: ignore[no-untyped-def]
    """The leaderboard of ``matches`` as a publication makes it: the standings, and the
    names (``given``: the ranking's other inputs)."""
    ranked = standings(RankingInput(tuple(matches), tuple(entrants), **given))
    return Leaderboard(tournament, rules, ranked)


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
    assert list(data) == [
        "tournament",
        "rules",
        "settings",
        "matches",
        "confidence",
        "deals",
        "playoff",
        "ranked_by",
        "entries",
        "unrated",
        "twins",
        "replaced",
        "notes",
        "collusion",
        "reply_times",
    ]
    assert (data["tournament"], data["rules"], data["matches"]) == ("spring", "arschloch", 6)
    assert (data["confidence"], data["playoff"], data["unrated"]) == (0.95, None, [])
    assert data["ranked_by"] == "conservative"  # no play-off match
    assert data["settings"] is None  # no tournament file here: see tests/publish
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
            "mean_score",
            "interval",
            "over_next",
            "playoff_matches",
        ]
        assert abs(entry["score"] - (entry["mu"] - 3 * entry["sigma"])) < 2e-3
        low, high = entry["interval"]
        assert 0 <= low <= entry["mean_score"] <= high <= 1
    for entry in data["entries"][:-1]:
        over = entry["over_next"]
        assert list(over) == ["confidence", "deals", "significant", "favours", "text"]
        # 6 matches: too few shared deals for any figure, and the cell says so.
        assert over["confidence"] is None and over["favours"] is None
        assert over["significant"] is False and over["deals"] < 8
        assert (
            over["text"] == f"too few deals ({over['deals']} of 8)"
            or over["text"] == "no shared deal yet"
        )
    assert data["twins"] == [] and data["notes"][0].startswith("Rank: TrueSkill")
    assert data["entries"][-1]["over_next"] is None
    assert {e["name"] for e in data["entries"]} == set(NAMES)
    assert sum(e["matches"] for e in data["entries"]) == 18
    assert sum(e["faults"].get("timeout", 0) for e in data["entries"]) == 6
    assert data["entries"][0]["score"] >= data["entries"][-1]["score"]
    collusion = data["collusion"]
    assert list(collusion) == ["level", "min_deals", "tested", "flagged", "pairs"]
    assert (collusion["level"], collusion["tested"], collusion["flagged"]) == (0.001, 0, 0)
    assert len(collusion["pairs"]) == 10  # every pair of the five met; none shared 10 deals
    assert list(collusion["pairs"][0]) == [
        "a",
        "b",
        "a_author",
        "b_author",
        "matches",
        "deals",
        "a_with",
        "a_without",
        "a_excess",
        "b_with",
        "b_without",
        "b_excess",
        "p_value",
        "pattern",
        "flagged",
    ]


def test_markdown_escapes_names_so_they_cannot_break_the_table_or_inject_html() -> None:
    md = to_markdown(_board())
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "=cmd\\|x" in md
    assert "\\*bold\\*\\_it\\_\\`code\\`" in md
    table = [line for line in md.splitlines() if line.startswith("|") and "sha256" not in line]
    assert len(table) == 2 + 5
    for line in table:  # every row has exactly the 12 cells of the header
        unescaped_pipes = line.replace("\\|", "").count("|")
        assert unescaped_pipes == 13
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
    assert rows[0][10:] == [
        "mean_score",
        "interval_low",
        "interval_high",
        "over_next",
        "over_next_deals",
        "significant",
        "over_next_text",
        "playoff_matches",
    ]
    assert [row[15] for row in rows[1:]] == ["no"] * 4 + [""]
    assert [row[13] for row in rows[1:]] == [""] * 5  # too few shared deals: no figure
    assert all(row[16].startswith(("too few deals", "no shared deal")) for row in rows[1:5])


def test_terminal_table_strips_control_characters_and_markup() -> None:
    text = render(_board(), "table")
    assert "\x1b" not in text
    assert "[31mred" in text  # the escape character itself is gone, the rest is shown as text
    assert "=cmd|x<script>" in text


def test_an_empty_tournament_lists_every_bot_as_unrated() -> None:
    board = build_leaderboard("empty", "arschloch", [], ["a", "b", "=c"])
    data = json.loads(to_json(board))
    assert data["entries"] == [] and data["unrated"] == ["=c", "a", "b"]
    assert "Unrated (no match yet): =c, a, b." in to_markdown(board)
    assert '\n"","\'=c",' in to_csv(board)
    assert "unrated" in render(board, "table")


def _sure_board(**kwargs):  # type: ignore[no-untyped-def]
    """``a`` always beats ``b``, who always beats ``c``, over 12 deals of 3 rotations;
    ``d`` never plays."""
    matches = []
    for deal in range(12):
        for rotation in range(3):
            table = ("a", "b", "c")[rotation:] + ("a", "b", "c")[:rotation]
            key = f"rr/t/d{deal:03d}/r{rotation}"
            spec = MatchSpec(
                key=key, table=table, deal=deal, rotation=rotation, deal_seed=1, match_seed=1
            )
            places = {"a": 1, "b": 2, "c": 3}
            seats = tuple(
                StoredSeat(i, n, places[n], 0, False, None, None) for i, n in enumerate(table)
            )
            matches.append(StoredMatch(spec, seats))
    return build_leaderboard("sure", "arschloch", matches, ["a", "b", "c", "d"], **kwargs)


def test_a_significant_order_is_not_marked_and_an_uncertain_one_is() -> None:
    board = _sure_board()
    assert [e.name for e in board.entries] == ["a", "b", "c"] and board.unrated == ("d",)
    a, b, c = board.entries
    assert a.significant and b.significant and c.significant is None
    assert a.mark == "" and a.interval is not None and a.interval.mean == 1.0
    assert (a.over_next_text, b.over_next_text, c.over_next_text) == ("1.00", "1.00", "")
    assert "≈" not in render(board, "table").split("Rank: TrueSkill")[0]
    unsure = _board()
    marked = [e for e in unsure.entries if e.mark == "≈"]
    assert marked and all(not e.significant for e in marked)
    # Too few shared deals: no figure at all, and no "≈1.00" either.
    assert all(e.over_next_text.startswith(("too few deals", "no shared deal")) for e in marked)
    assert "≈ 1.00" not in to_markdown(unsure) and "≈ 1.00" not in render(unsure, "table")


def test_play_offs_are_summarised_in_every_format() -> None:
    from referee.specs import PlayoffSettings

    board = _sure_board(playoff=PlayoffSettings(top=3, until=0.9, budget=30), table_size=3)
    assert board.playoff is not None and board.playoff.state == "settled"
    text = "Play-offs (top 3 until 0.9, budget 30): 0 matches in 0 rounds"
    assert text in to_markdown(board) and text in render(board, "table").replace("\n", " ")
    assert json.loads(to_json(board))["playoff"] == {
        "top": 3,
        "until": 0.9,
        "budget": 30,
        "matches": 0,
        "rounds": 0,
        "state": "settled",
    }


def test_a_flagged_pair_is_a_sentence_in_every_format_with_its_names_escaped() -> None:
    from bench.collusion_bench import round_robin

    hostile = {"bot1": "*x*|<b>", "bot3": "=HYPERLINK(1)"}

    def renamed(match: StoredMatch) -> StoredMatch:
        table = tuple(hostile.get(n, n) for n in match.spec.table)
        seats = tuple(replace(s, name=hostile.get(s.name, s.name)) for s in match.seats)
        return StoredMatch(match.spec.model_copy(update={"table": table}), seats)

    matches = [renamed(m) for m in round_robin(1, helps=("bot3", "bot1"))]
    names = sorted({s.name for m in matches for s in m.seats})
    board = build_leaderboard("c", "arschloch", matches, names)
    assert board.collusion is not None
    [pair] = board.collusion.flagged
    said = "*x*|<b> does better when =HYPERLINK(1) is at its table"
    assert pair.describe() == said
    md = to_markdown(board)
    [line] = [x for x in md.splitlines() if x.startswith("Collusion check: 1 pair")]
    assert "\\*x\\*\\|&lt;b&gt; does better when =HYPERLINK(1)" in line
    assert "evidence, not proof" in line
    text = " ".join(render(board, "table").split())
    assert "Collusion check: 1 pair" in text and said in text
    data = json.loads(to_json(board))["collusion"]
    assert data["flagged"] == 1 and data["pairs"][0]["flagged"] is True
    assert {data["pairs"][0]["a"], data["pairs"][0]["b"]} == set(hostile.values())
    assert "Collusion" not in to_markdown(_board())  # nothing flagged: no line


def _disagreeing_board(shared_deals: int = 10, **kwargs):  # type: ignore[no-untyped-def]
    """Ratings and shared deals disagree, as they do when strengths are not transitive:
    ``b`` beats ``a`` on every deal both played (tables of b, a and x), but ``a`` wins all
    its many other matches (a, y, z) and ``b`` is second to ``y`` in all of its (y, b, z):
    TrueSkill, weighing every match and opponent, ranks ``a`` just above ``b``."""
    matches = []

    def table_deal(tag: str, deal: int, order: tuple[str, ...]) -> None:
        for rotation in range(3):
            table = order[rotation:] + order[:rotation]
            spec = MatchSpec(
                key=f"rr/{tag}/d{deal:03d}/r{rotation}",
                table=table,
                deal=deal,
                rotation=rotation,
                deal_seed=1,
                match_seed=1,
            )
            place = {name: i + 1 for i, name in enumerate(order)}
            seats = tuple(
                StoredSeat(i, n, place[n], 0, False, None, None) for i, n in enumerate(table)
            )
            matches.append(StoredMatch(spec, seats))

    for deal in range(shared_deals):
        table_deal("bax", deal, ("b", "a", "x"))
    for deal in range(40):
        table_deal("ayz", deal, ("a", "y", "z"))
    for deal in range(20):
        table_deal("ybz", deal, ("y", "b", "z"))
    return build_leaderboard("split", "arschloch", matches, ["a", "b", "x", "y", "z"], **kwargs)


def test_where_shared_deals_favour_the_next_bot_every_format_says_next_ahead() -> None:
    board = _disagreeing_board()
    order = [e.name for e in board.entries]
    assert order.index("a") + 1 == order.index("b"), order  # TrueSkill: a just above b
    a = board.entries[order.index("a")]
    assert a.over_next is not None and a.over_next.lower == "b"
    assert a.over_next.confidence == 0.0 and a.over_next.deals == 10  # b won every one
    assert a.over_next_text == "≈ 0.00 (next ahead)" and a.mark == "≈"
    data = {e["name"]: e for e in json.loads(to_json(board))["entries"]}
    assert data["a"]["over_next"] == {
        "confidence": 0.0,
        "deals": 10,
        "significant": False,
        "favours": "next",
        "text": "≈ 0.00 (next ahead)",
    }
    row = next(r for r in csv.reader(io.StringIO(to_csv(board))) if r[1] == "a")
    assert row[13:17] == ["0.0000", "10", "no", "≈ 0.00 (next ahead)"]
    assert "| ≈ 0.00 (next ahead) |" in to_markdown(board)
    assert "≈ 0.00 (next ahead)" in " ".join(render(board, "table").split())
    # The page says which figure comes from what, right under the table, in every format.
    line = "Rank: TrueSkill score, mu - 3 sigma over every match"  # no play-off match
    md = to_markdown(board)
    assert md.index("| rank |") < md.index(line) < md.index("Mean score:")
    assert line in " ".join(render(board, "table").split())
    assert json.loads(to_json(board))["notes"][0].startswith(line)


def test_fewer_shared_deals_than_the_minimum_give_no_figure_in_any_format() -> None:
    board = _disagreeing_board(shared_deals=6)
    b = next(e for e in board.entries if e.name == "b")
    assert b.over_next is not None and b.over_next.lower == "x" and b.over_next.deals == 6
    assert b.over_next.confidence == 1.0  # what would read "≈1.00" before
    assert b.certainty is not None and b.certainty.confidence is None
    assert b.over_next_text == "too few deals (6 of 8)" and b.mark == "≈"
    entry = next(e for e in json.loads(to_json(board))["entries"] if e["name"] == "b")
    assert entry["over_next"]["confidence"] is None
    assert entry["over_next"]["text"] == "too few deals (6 of 8)"
    row = next(r for r in csv.reader(io.StringIO(to_csv(board))) if r[1] == "b")
    assert row[13:17] == ["", "6", "no", "too few deals (6 of 8)"]
    assert "| too few deals (6 of 8) |" in to_markdown(board)
    assert "too few deals (6 of 8)" in " ".join(render(board, "table").split())
    x = next(e for e in board.entries if e.name == "x")
    assert x.over_next_text == "no shared deal yet"


def test_markdown_starts_with_the_ranking() -> None:
    md = to_markdown(_sure_board())
    lines = md.splitlines()
    assert lines[0] == "## Leaderboard: sure"
    assert lines[4].startswith("| rank | bot |")  # heading, a line, then the table
    assert md.index("| 1 | a |") < md.index("Rank: TrueSkill")


def test_twins_are_named_in_every_format_and_never_keep_the_play_offs_open() -> None:
    from referee.specs import PlayoffSettings

    fingerprints = {"a": "1" * 64, "b": "1" * 64, "c": "2" * 64}
    settings = PlayoffSettings(top=3, until=0.9, budget=30)
    board = _sure_board(playoff=settings, table_size=3, fingerprints=fingerprints)
    assert board.twins == (("a", "b"),)
    data = json.loads(to_json(board))
    assert data["twins"] == [["a", "b"]]
    note = "Byte-identical entrants (the same sha256; the file allows twins): a and b."
    assert note in to_markdown(board) and note in " ".join(render(board, "table").split())
    assert any(n.startswith(note) for n in data["notes"])


def test_on_an_80_column_terminal_no_letter_of_the_notes_is_cut_off() -> None:
    from rich.console import Console

    from referee.publish.leaderboard import how_to_read, to_rich_table

    board = _disagreeing_board(shared_deals=6)
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(to_rich_table(board))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line) for line in out.splitlines()) <= 80
    assert how_to_read(board) in " ".join(out.split())
    assert {"shared", "deals", "(next", "ahead)"} <= set(out.split())  # cells wrap at spaces
