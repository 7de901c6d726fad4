"""``referee play BOTS --matches N``: the quick loop of a bot author, through click.

The bot-running tests (listed in tests/conftest.py's SLOW_TESTS) play short matches
(``--max-rounds 2``) of the sample bots, named ``@name`` as a user would, in the process
sandbox; the refusals come before any bot starts.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from referee.cli import main

ROOT = Path(__file__).resolve().parents[1]
GARBAGE = ROOT / "tests" / "bots" / "garbage.py"

pytestmark = pytest.mark.timeout(240)


def _play(*args: str) -> Result:
    return CliRunner().invoke(
        main, ["play", *args, "--sandbox", "process", "--max-rounds", "2"], catch_exceptions=False
    )


def _json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.slow
def test_play_matches_prints_a_table_with_every_bot_and_the_matches_counted(
    tmp_path: Path,
) -> None:
    result = _play("@heuristic", "@lowest", "@random", "--matches", "6", "--workers", "2")
    assert result.exit_code == 0, result.stderr
    folder = Path(re.findall(r"^results in (\S+)$", result.stderr, re.M)[0])
    assert f"match logs in {folder / 'logs'} (referee replay LOG); results in {folder}\n" in (
        result.stderr
    )
    try:
        said = "6 matches (2 deals x 3 seat rotations), each on its own cards: 6 to play with 2 "
        assert said + "workers\n" in result.stderr
        lines = result.stdout.splitlines()
        assert "arschloch · 3 seats · 6 matches" in lines[0]
        assert re.split(r"\s{2,}", lines[1].strip()) == [
            "bot",
            "score [95%]",
            "1st",
            "2nd",
            "3rd",
            "faults",
        ]
        rows = {line.split()[0]: line.split() for line in lines[3:6]}
        assert set(rows) == {"heuristic", "lowest", "random"}
        for cells in rows.values():
            places = [int(n) for n in cells[-4:-1]]
            assert sum(places) + int(cells[-1]) == 6  # every match counted once
        assert "not 2 deals" in " ".join(result.stdout.split())
        assert len(list((folder / "logs").glob("*.jsonl"))) == 6
        assert folder.parent == Path(tempfile.gettempdir())
        assert folder.name.startswith("referee-play-") and folder.stat().st_mode & 0o077 == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_json_has_each_bot_rounds_up_and_counts_faults(tmp_path: Path) -> None:
    result = _play(
        "@heuristic",
        "@lowest",
        "@random",
        str(GARBAGE),
        "--matches",
        "5",
        "--json",
        "--results",
        str(tmp_path / "r"),
    )
    data = _json(result)
    assert "8 matches (2 deals x 4 seat rotations; --matches 5 rounded up)" in result.stderr
    assert set(data) == {
        "rules",
        "table_size",
        "matches",
        "scheduled",
        "deals",
        "confidence",
        "bots",
        "duplicate",
        "results",
        "failed",
    }
    assert (data["matches"], data["scheduled"], data["table_size"]) == (8, 8, 4)
    assert (data["duplicate"], data["failed"], data["deals"]) == ("tables", 0, 2)
    assert data["results"] == str(tmp_path / "r")
    bots = {bot["name"]: bot for bot in data["bots"]}
    assert set(bots) == {"heuristic", "lowest", "random", "garbage"}
    for bot in bots.values():
        assert set(bot) == {"name", "matches", "score", "interval", "places", "forfeits", "faults"}
        assert bot["matches"] == 8 == sum(bot["places"]) + bot["forfeits"]
        assert bot["interval"] is None  # two deals: too few for an interval
    assert bots["garbage"]["forfeits"] == 8 and bots["garbage"]["faults"] == {"protocol": 8}
    assert bots["garbage"]["score"] == 0.0 and data["bots"][-1]["name"] == "garbage"


@pytest.mark.slow
def test_the_same_seed_gives_the_same_table_with_one_worker_or_two(tmp_path: Path) -> None:
    tables = []
    for workers in ("1", "2"):
        result = _play(
            "@heuristic",
            "@random",
            "@random",
            "--matches",
            "6",
            "--seed",
            "11",
            "--json",
            "--workers",
            workers,
            "--results",
            str(tmp_path / workers),
        )
        assert "note: --seed 11 makes the deals predictable" in result.stderr
        data = _json(result)
        data.pop("results")
        tables.append(data)
    assert tables[0] == tables[1]
    assert [bot["name"] for bot in tables[0]["bots"]].count("random#1") == 1
    assert {bot["name"] for bot in tables[0]["bots"]} == {"heuristic", "random#1", "random#2"}


@pytest.mark.slow
def test_results_resume_refuse_a_changed_bot_and_restart(tmp_path: Path) -> None:
    mine = tmp_path / "mine.py"
    shutil.copy(ROOT / "tests" / "bots" / "polite.py", mine)
    results = str(tmp_path / "r")
    first = _play(str(mine), "@lowest", "@random", "--matches", "3", "--results", results)
    assert first.exit_code == 0, first.stderr
    again = _play(str(mine), "@lowest", "@random", "--matches", "6", "--results", results)
    assert again.exit_code == 0, again.stderr
    assert ": 3 already done, 3 to play with" in again.stderr
    assert "arschloch · 3 seats · 6 matches" in again.stdout
    mine.write_text(mine.read_text() + "\n# changed\n")
    changed = _play(str(mine), "@lowest", "@random", "--matches", "6", "--results", results)
    assert changed.exit_code == 2 and changed.stdout == ""
    assert re.fullmatch(
        r"referee: .*: 'mine' changed since its results were stored \(sha256 .*\); run with "
        r"--restart to discard the stored results, or put the old files back\n",
        changed.stderr,
    )
    restarted = _play(
        str(mine), "@lowest", "@random", "--matches", "6", "--results", results, "--restart"
    )
    assert restarted.exit_code == 0, restarted.stderr
    assert ": 6 to play with" in restarted.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--matches", "0"], "Invalid value for '--matches': 0 is not in the range 1<=x<=100000."),
        (["--matches", "x"], "Invalid value for '--matches': 'x' is not a valid integer range."),
        (["--matches", "3", "--workers", "0"], "Invalid value for '--workers': 0 is not in"),
        (["--workers", "2"], "referee: --workers needs --matches N: it is about several matches"),
        (["--results", "r"], "referee: --results needs --matches N: it is about several matches"),
        (["--duplicate", "rotations"], "referee: --duplicate needs --matches N"),
        (["--matches", "3", "--restart"], "referee: --restart discards the results in --results"),
        (["--matches", "3", "--human", "0"], "referee: --human and --matches do not go together"),
        (["--matches", "3", "--log", "x.jsonl"], "referee: --log and --matches do not go together"),
        (["--matches", "3", "--duplicate", "seats"], "Invalid value for '--duplicate': 'seats'"),
    ],
)
def test_bad_values_are_clear_errors_before_any_bot_starts(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = _play("@heuristic", "@lowest", "@random", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr
    if message.startswith("referee:"):
        assert result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_sample_is_one_line_before_any_bot_starts() -> None:
    result = _play("@heuristic", "@lowest", "@randon", "--matches", "3")
    assert result.exit_code == 2
    assert result.stderr == (
        "referee: no sample bot is called @randon (the samples: @c-lowest, @cpp-lowest, "
        "@heuristic, @java-lowest, @js-lowest, @lowest, @montecarlo, @random, @rust-lowest)\n"
    )


def test_seat_names_that_would_collide_are_one_line(tmp_path: Path) -> None:
    for name in ("a.py", "a#1.py"):
        shutil.copy(ROOT / "tests" / "bots" / "polite.py", tmp_path / name)
    a, a1 = str(tmp_path / "a.py"), str(tmp_path / "a#1.py")
    result = _play(a1, a, a, "--matches", "3", "--results", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert result.stderr == (
        "referee: two seats would both be called 'a#1' (a bot taking several seats is "
        "numbered name#1, name#2, ...); rename one of the bots\n"
    )
    assert not (tmp_path / "r").exists()
