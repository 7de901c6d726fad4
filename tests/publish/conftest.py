"""Tournaments for the publishing tests, played in this process with fake bots.

The matches are real (engine, match runner, coordinator, store, logs); only the bots are
in-memory handlers (:class:`referee.testing.InProcessExecutor`), so a whole tournament takes
well under a second. One bot has a hostile name and faults with a hostile reply line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from referee.runs.tournament import run_tournament
from referee.testing import Handler, InProcessExecutor, Replies, lowest_bot, polite_bot
from referee.tournament.file import Tournament, load_tournament

HOSTILE_NAME = "<img src=x onerror=alert(1)>"
HOSTILE_REPLY = b"</script><img src=x onerror=alert(3)><!-- \xe2\x80\xa8 done"
NAMES = ("polite", "lowest", HOSTILE_NAME, "steady")


def garbage_bot(name: str, after: int = 3) -> Handler:
    """Plays like ``polite`` for ``after`` requests, then answers with a hostile line."""
    inner = polite_bot(name)
    asked = 0

    def handle(msg: dict[str, Any]) -> Replies:
        nonlocal asked
        if msg.get("type") == "act":
            asked += 1
            if asked > after:
                return HOSTILE_REPLY + b"\n"
        return inner(msg)

    return handle


HANDLERS: dict[str, Callable[[], Handler]] = {
    "polite": lambda: polite_bot("polite"),
    "lowest": lambda: lowest_bot("lowest"),
    HOSTILE_NAME: lambda: garbage_bot(HOSTILE_NAME),
    "steady": lambda: lowest_bot("steady"),
}


FAST_RULES = '{ preset = "arschloch", target = 3 }'


def write_fake_tournament(
    folder: Path,
    *,
    deals: int = 2,
    extra: str = "",
    rules: str = FAST_RULES,
    table_size: int = 3,
    names: tuple[str, ...] = NAMES,
) -> Path:
    """A tournament file of the fake bots (the four of :data:`NAMES` unless ``names`` are
    given), three at a table (files that never run)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for i, name in enumerate(names):
        bot = folder / f"bot{i}.py"
        bot.write_text(f"# fake bot {i}: played in memory by the tests\n")
        toml_name = name.replace("\\", "\\\\").replace('"', '\\"')
        entries.append(f'[[bots]]\npath = "{bot.name}"\nname = "{toml_name}"\n')
    path = folder / "fake.toml"
    path.write_text(
        f'name = "fake"\nrules = {rules}\ntable_size = {table_size}\n'
        f"deals = {deals}\nseed = 5\n{extra}\n"
        '[sandbox]\nbackend = "process"\n\n' + "\n".join(entries)
    )
    return path


def play_fake(
    path: Path,
    handlers: Mapping[str, Callable[[], Handler]] | None = None,
    deal_secret: bytes | None = None,
) -> Tournament:
    """Play every match of the fake tournament at ``path`` in this process (its bots by
    ``handlers``, :data:`HANDLERS` by default), on a fresh deal secret unless
    ``deal_secret`` fixes the cards."""
    spec = load_tournament(path)
    summary = run_tournament(
        spec, InProcessExecutor(handlers or HANDLERS), restart=True, deal_secret=deal_secret
    )
    assert summary.done == summary.total and not summary.failed
    return spec


@pytest.fixture(scope="module")
def fake_tournament(tmp_path_factory: pytest.TempPathFactory) -> Tournament:
    """A finished fake tournament (4 bots, 3 per table, 2 deals: 24 matches)."""
    return play_fake(write_fake_tournament(tmp_path_factory.mktemp("fake")))
