"""``referee play --human`` driven through a pseudo-terminal, as a person plays it.

The real command, real sample bots in the process sandbox, a real terminal (pexpect): the
person makes a typo, picks a number that is not listed, types nothing, asks for the rules,
gives cards back or takes a leftover, and plays the match to its end; or leaves with Ctrl-D,
or stops everything with Ctrl-C. The bots are deterministic (lowest, heuristic), so a seed
fixes the match once the person's answers are fixed.
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from referee.matchlog import read_log
from referee.rules import replay
from tests.conftest import sandbox_pids

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
PROMPT = r"(Your play|Cards to give|Leftover to take|Card to discard) \[([^\]]*)\]: "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Seeds (3 players: you, lowest, heuristic; arschloch, 2 rounds) where the person, playing
# the first option (or passing when that is all), ends round 1 first (so gives a card back
# in round 2) or last (so takes a leftover, 32 cards leaving 2 at three players).
GIVE_SEED = 2
LEFTOVER_SEED = 3


@pytest.fixture(autouse=True)
def no_bot_left() -> Iterator[None]:
    """Every test stops its referee, and with it every bot it started."""
    yield
    deadline = time.monotonic() + 5
    while sandbox_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_pids() == []


def start(tmp_path: Path, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    """``referee play --human 0`` against lowest and heuristic, on a terminal of its own."""
    screen = io.StringIO()
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "referee",
            "play",
            "--human",
            "0",
            "--sandbox",
            "process",
            "--max-rounds",
            "2",
            "--log",
            str(tmp_path / "m.jsonl"),
            *args,
            str(SAMPLES / "lowest"),
            str(SAMPLES / "heuristic"),
        ],
        cwd=str(ROOT),
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 120),
    )
    child.logfile_read = screen
    return child, screen


Answer = str | Callable[[str], str]
_LETTERS = str.maketrans({"♣": "C", "♠": "S", "♥": "H", "♦": "D"})


def last_option_codes(out: str) -> str:
    """The cards of the last option listed on screen, typed as codes, small, in reverse:
    ``12) 8♣ 8♥`` becomes ``8h 8c``."""
    options = re.findall(r"\d+\) (\S+(?: \S+)*)", out.rsplit("\n", 1)[0])
    return " ".join(reversed(options[-1].translate(_LETTERS).lower().split()))


def play_out(
    child: pexpect.spawn, answers: dict[str, list[Answer]], screen: io.StringIO | None = None
) -> list[str]:
    """Answer every prompt to the end: the scripted answers of each kind first (a callable
    gets the screen so far), then the first option (a pass when that is all there is).
    Returns the prompts, in order."""
    prompts = []
    while child.expect([PROMPT, pexpect.EOF]) == 0:
        kind, choices = child.match.group(1), child.match.group(2)
        prompts.append(kind)
        if answers.get(kind):
            answer = answers[kind].pop(0)
            if isinstance(answer, str):
                child.sendline(answer)
            else:
                assert screen is not None
                child.sendline(answer(text(screen)))
        elif kind == "Cards to give":
            count = int(choices.split()[0])
            child.sendline(" ".join(str(i) for i in range(1, count + 1)))
        elif kind == "Your play" and choices.startswith("0 pass"):
            child.sendline("0")
        else:
            child.sendline("1")
    child.wait()
    return prompts


def text(screen: io.StringIO) -> str:
    return ANSI.sub("", screen.getvalue()).replace("\r\n", "\n")


def check_the_end(child: pexpect.spawn, out: str, tmp_path: Path) -> None:
    assert child.exitstatus == 0, out[-2000:]
    assert "Traceback" not in out
    assert "The match is over." in out
    standings = out.split("The match is over.")[1]
    assert re.search(r"│\s+\d\w\w │\s+0 │ you\s+│", standings), standings
    assert f"match log: {tmp_path / 'm.jsonl'}" in standings.replace("\n", "")
    lines = read_log(tmp_path / "m.jsonl")
    assert lines[0]["players"] == ["you", "lowest", "heuristic"]
    assert replay(lines).over


def test_a_person_plays_a_match_and_gives_a_card_back(tmp_path: Path) -> None:
    child, screen = start(tmp_path, "--seed", str(GIVE_SEED))
    answers: dict[str, list[Answer]] = {
        "Your play": ["", "x7", "99", "?", "1"],
        "Cards to give": ["1 1", "0"],
    }
    prompts = play_out(child, answers)
    out = text(screen)
    check_the_end(child, out, tmp_path)
    assert "you sit at seat 0." in out
    assert "  seat  player     cards  role            score" in out
    assert re.search(r"Your hand \(10\): 7. ", out)  # sorted by rank, with suit symbols
    assert "  ✗ nothing typed: type a number from 1 to " in out
    assert "  ✗ 'x7' is neither a number nor a card: type a number from 1 to " in out
    assert "  ✗ 99 is not one of the options: type a number from 1 to " in out
    assert "whoever holds 7♣" in out and "may not contain A" in out  # the rules, after ?
    assert prompts[:5] == ["Your play"] * 5  # asked again after each of the four
    assert prompts.count("Cards to give") == 3
    assert "  ✗ 1 is listed twice: type a number from 1 to 11" in out
    assert "  ✗ 0 is not one of the options: type a number from 1 to 11" in out
    assert re.search(r"you received \S+ from \w+", out)
    menu = re.search(r"Give 1 card back to (\w+): type their numbers.\n +1\) (\S+)", out)
    assert menu is not None
    assert f"you gave {menu.group(2)} to {menu.group(1)}" in out  # number 1: the lowest card
    assert "Round 2 over: " in out


def test_a_person_takes_a_leftover(tmp_path: Path) -> None:
    child, screen = start(tmp_path, "--seed", str(LEFTOVER_SEED))
    answers: dict[str, list[Answer]] = {
        "Leftover to take": ["3", "?", "2"],
        "Card to discard": ["x", "zz9", last_option_codes],  # the highest card, by its code
    }
    prompts = play_out(child, answers, screen)
    out = text(screen)
    check_the_end(child, out, tmp_path)
    assert "Leftovers face up: " in out
    assert "  ✗ 3 is not one of the options: type a number from 1 to 2" in out
    assert prompts.count("Leftover to take") == 3 and prompts.count("Card to discard") == 3
    assert "  ✗ 'x' is neither a number nor a card: type a number from 1 to 11" in out
    assert "  ✗ 'zz9' is neither a number nor a card" in out
    discarded = re.search(r"You take \S+ and discard (\S+)\.", out)
    menu = out.split("Your hand with ")[1].split("Card to discard")[0]
    assert discarded and menu.rstrip().endswith(discarded.group(1))  # the last one listed
    assert re.search(r"\w+ gave 1 card to you", out) or re.search(r"you gave \S+ to", out)


def test_ctrl_d_leaves_the_match_which_plays_on(tmp_path: Path) -> None:
    child, screen = start(tmp_path, "--seed", "5")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.wait()
    out = text(screen)
    assert child.exitstatus == 0 and "Traceback" not in out
    assert "You left the match. The referee plays your seat to the end" in out
    assert "left the match" in out.split("The match is over.")[-1]  # its note in the table
    assert "seat 0 (you) left:\n  problem: left the match at act " in out
    assert "crash" not in out and "stderr" not in out
    assert out.count("Your play [") == 1
    assert replay(read_log(tmp_path / "m.jsonl")).over


def test_ctrl_c_stops_the_match_and_every_bot(tmp_path: Path) -> None:
    assert sandbox_pids() == []
    child, screen = start(tmp_path, "--seed", "5")
    try:
        child.expect(PROMPT)
        assert sandbox_pids()  # the bots wait while the person thinks
        child.sendintr()
        child.expect(pexpect.EOF)
        child.wait()
    finally:
        child.close(force=True)
    out = text(screen)
    assert child.exitstatus == 130, out[-1000:]
    assert "referee: interrupted; every bot was stopped" in out
    assert "Traceback" not in out
    deadline = time.monotonic() + 5
    while sandbox_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_pids() == []
