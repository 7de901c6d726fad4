"""Small tournaments of instant, deterministic bots, and checks that nothing is left behind.

The bots differ in strategy (so results are not all ties) but none uses randomness or the
clock: the same match gives the same result on every run, whatever the worker count.
Every bot name carries this test session's marker, so a leftover bot process (whose
bubblewrap command line or working folder names its staged copy) can be found.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

MARKER = f"tt{uuid.uuid4().hex[:8]}"
REPO = Path(__file__).resolve().parents[2]
REFEREE = REPO / ".venv" / "bin" / "referee"
TEST_BOTS = REPO / "tests" / "bots"

BOT_TEMPLATE = """\
import json
import sys

STRATEGY = {strategy!r}


def choose(legal):
    if STRATEGY == "last":
        return legal[-1]
    if STRATEGY == "pass" and [] in legal:
        return []
    if STRATEGY == "pairs":
        return max(legal, key=len)
    if STRATEGY == "lowest":
        return next((play for play in legal if play), [])
    return legal[0]


for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        reply = {{"type": "ready", "name": STRATEGY}}
    elif msg.get("type") == "act":
        hand = msg.get("hand") or []
        if msg["kind"] == "give":
            reply = {{"cards": hand[: msg["count"]]}}
        elif msg["kind"] == "leftover":
            reply = {{"take": msg["offer"][0], "discard": hand[0]}}
        else:
            reply = {{"cards": choose(msg.get("legal") or [[]])}}
    elif msg.get("type") == "bye":
        break
    else:
        continue
    reply["id"] = msg["id"]
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""

STRATEGIES = ("first", "last", "pass", "pairs", "first")

FAST_RULES = '{ preset = "arschloch", target = 3 }'


def write_bot(folder: Path, name: str, strategy: str) -> Path:
    """A deterministic single-file bot called ``name`` (its file stem)."""
    path = folder / f"{name}.py"
    path.write_text(BOT_TEMPLATE.format(strategy=strategy))
    return path


def write_tournament(
    folder: Path,
    *,
    bots: int = 4,
    table_size: int = 3,
    deals: int = 1,
    name: str = "t",
    extra: str = "",
    fmt: str = 'format = "round-robin"',
    time_section: str = "move_ms = 2000\nbank_ms = 5000\nhello_ms = 10000",
    names: Sequence[str] = (),
) -> Path:
    """A tournament file of ``bots`` deterministic bots in ``folder``; returns its path.

    ``names`` are display names for the first bots: match keys (and so the deals) depend on
    the entrants' names, which otherwise carry this session's random marker.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bots").mkdir(exist_ok=True)
    entries = []
    for i in range(bots):
        bot_name = f"{MARKER}-{chr(ord('a') + i)}"
        write_bot(folder / "bots", bot_name, STRATEGIES[i % len(STRATEGIES)])
        display = f'name = "{names[i]}"\n' if i < len(names) else ""
        entries.append(f'[[bots]]\npath = "bots/{bot_name}.py"\n{display}')
    text = (
        f'name = "{name}"\nrules = {FAST_RULES}\ntable_size = {table_size}\n'
        f"{fmt}\ndeals = {deals}\nseed = 7\n{extra}\n"
        f'[time]\n{time_section}\n\n[sandbox]\nbackend = "process"\nmemory_mb = 256\n\n'
        + "\n".join(entries)
    )
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def leftover_processes(marker: str = MARKER) -> list[int]:
    """Pids of processes naming ``marker`` in their command line, environment or folder."""
    found = []
    needle = marker.encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(proc / "cwd").encode()
        except OSError:
            cwd = b""
        if needle in _read(proc / "cmdline") + _read(proc / "environ") + cwd:
            found.append(int(proc.name))
    return found


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Every test must leave no bot, worker or runner process behind."""
    yield
    try:
        wait_for(lambda: not leftover_processes(), 15.0, "processes of the test to end")
    except AssertionError:
        pids = leftover_processes()
        details = [_read(Path(f"/proc/{p}/cmdline")).replace(b"\0", b" ")[:200] for p in pids]
        pytest.fail(f"processes left behind: {pids} {details}")


def timeless(board: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard (as JSON data) without the times it was played and published, nor the
    bots' reply times (they differ by run); each bot's count of replies stays."""
    for key in ("played_from", "played_to", "published"):
        board["settings"].pop(key)
    board["reply_times"] = {name: t["replies"] for name, t in board["reply_times"].items()}
    return board
