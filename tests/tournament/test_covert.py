"""Covert channels between copies of one bot learn nothing about a deal.

Copies of one bot run at the same time (idle pooled copies, parallel workers) and share
the kernel. A second red team had the rotation-0 copy of a deal write its hand into the
page cache of a shared read-only file, or into open-file-description locks on it, and the
later rotations' copies read it: every opponent's round-1 hand, in both sandboxes.
No uid, namespace or container closes such channels, so the schedule must not give them
anything to carry: under ``duplicate = "tables"`` (the default) no entrant ever meets the
same cards twice.

``tests/bots/covert/spy.py`` is the channel: it reads the slot of its table deal, writes
its own hand there, and when a hand it read turns out to be an opponent's (every card that
seat played in round 1 is in it, and no card another seat played) it says so on stderr and
answers garbage, which the referee records as a fault with the stderr as evidence. The
control, under ``duplicate = "rotations"``, shows that the channel carries hands.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.executors.local import LocalExecutor
from referee.matchlog import read_log
from referee.runs.tournament import run_tournament
from referee.tournament.file import load_tournament
from referee.tournament.store import Store
from tests.conftest import require_docker

from .conftest import TEST_BOTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SPY = TEST_BOTS / "covert"
POLITE = TEST_BOTS / "polite.py"
LEARNED = re.compile(r"LEARNED (\S+) seat (\d+): (.+)")


def _spy(folder: Path, channel: str) -> Path:
    """A copy of the spy with its 4 MiB pad, written back to disk so the cache is empty."""
    target = folder / "spy"
    shutil.copytree(SPY, target)
    (target / "bot.toml").write_text(f'name = "spy"\ncommand = "python3 spy.py {channel}"\n')
    with open(target / "pad.bin", "wb") as pad:
        pad.write(os.urandom(4 * 1024 * 1024))
        pad.flush()
        os.fsync(pad.fileno())
    return target


def _tournament(
    folder: Path, channel: str, *, duplicate: str, others: int, sandbox: str, deals: int = 2
) -> Path:
    folder.mkdir(parents=True)
    _spy(folder, channel)
    entries = ['[[bots]]\npath = "spy"\n']
    for i in range(others):
        shutil.copy(POLITE, folder / f"p{i}.py")
        entries.append(f'[[bots]]\npath = "p{i}.py"\n')
    path = folder / "t.toml"
    tables = 'tables = "balanced"\n' if others + 1 > 4 else ""
    path.write_text(
        f'name = "t"\nrules = {{ preset = "arschloch", target = 6 }}\ntable_size = 4\n'
        f'deals = {deals}\nseed = 3\nduplicate = "{duplicate}"\n{tables}'
        f"[time]\nmove_ms = 2000\nbank_ms = 10000\nhello_ms = 20000\n"
        f'[sandbox]\nbackend = "{sandbox}"\nmemory_mb = 256\n\n' + "\n".join(entries)
    )
    return path


def _learned(path: Path) -> list[tuple[str, int, list[str], list[list[str]]]]:
    """Every hand the spy says it learned, with the match's real round-1 hands."""
    found = []
    with Store(load_tournament(path).results_dir) as store:
        for fault in store.fault_reports():
            for key, seat, cards in LEARNED.findall(fault.stderr or ""):
                deal = next(
                    line for line in read_log(store.log_path(key)) if line["type"] == "deal"
                )
                found.append((key, int(seat), cards.split(), deal["hands"]))
    return found


def test_both_channels_carry_bits_between_processes(tmp_path: Path) -> None:
    """Outside any sandbox: what one process writes, another reads (so the channel is real;
    the process sandbox's seccomp filter denies the locks, tested with the sandbox)."""
    folder = _spy(tmp_path, "cache")
    code = (
        f"import sys; sys.path.insert(0, {str(folder)!r}); import spy\n"
        "deck = [r + s for r in '7 8 9 10 J Q K A'.split() for s in 'CSHD']\n"
        "hand = ['7C', '8S', '9H', '10D', 'JD', 'QC', 'KS', 'AH']\n"
        "word = spy.encode(hand, deck)\n"
        "if sys.argv[1] == 'write':\n"
        "    found = getattr(spy, sys.argv[2] + '_read')(5)\n"
        "    getattr(spy, sys.argv[2] + '_write')(5, word, found)\n"
        "    print('ready', flush=True); sys.stdin.readline()\n"
        "else:\n"
        "    print(spy.decode(getattr(spy, sys.argv[2] + '_read')(5), deck) == hand)\n"
    )
    for channel in ("cache", "lock"):
        writer = subprocess.Popen(
            [sys.executable, "-c", code, "write", channel],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
            reader = subprocess.run(
                [sys.executable, "-c", code, "read", channel], capture_output=True, text=True
            )
            assert reader.stdout == "True\n", (channel, reader.stderr)
        finally:
            writer.communicate("\n", timeout=10)


def test_the_channel_carries_hands_when_a_deal_is_played_in_every_rotation(
    tmp_path: Path,
) -> None:
    """The control: the same spy reads real hands when the rotations share a deal."""
    path = _tournament(tmp_path / "t", "cache", duplicate="rotations", others=3, sandbox="process")
    summary = run_tournament(load_tournament(path), LocalExecutor(1))
    assert summary.done == summary.total
    learned = _learned(path)
    assert learned, "the control never carried a hand: the channel itself is broken"
    for key, seat, cards, hands in learned:
        assert sorted(cards) == sorted(hands[seat]), f"{key}: a wrong hand was 'learned'"


@pytest.mark.parametrize("sandbox", ["process", "docker"])
@pytest.mark.parametrize("channel", ["cache", "lock"])
def test_no_copy_learns_anything_when_no_entrant_meets_the_same_cards_twice(
    tmp_path: Path, channel: str, sandbox: str
) -> None:
    """Deals shared across disjoint tables (the default), 8 entrants on balanced tables,
    two workers so that copies of the spy run at the same time. In Docker one deal a table
    (56 matches, each a container or two): the copies still overlap, at half the cost."""
    deals = 2
    if sandbox == "docker":
        require_docker().close()
        deals = 1
    path = _tournament(
        tmp_path / "t", channel, duplicate="tables", others=7, sandbox=sandbox, deals=deals
    )
    summary = run_tournament(load_tournament(path), LocalExecutor(2))
    assert summary.done == summary.total
    assert _learned(path) == []
