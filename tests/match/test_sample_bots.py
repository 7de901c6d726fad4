"""Every sample bot plays every preset at 3 to 6 players without a fault."""

from __future__ import annotations

import tomllib

import pytest

from referee.rules import PRESETS, replay
from tests.match.conftest import SAMPLES, sandbox_pids

pytestmark = pytest.mark.slow

# montecarlo searches for about 60 ms a move, which would make these whole matches last
# minutes; tests/match/test_montecarlo_matches.py plays it in every preset at 3 and 6 seats.
# The compiled samples (a build step) play once built: tests/test_compiled_samples.py.
SAMPLE_BOTS = sorted(
    p
    for p in SAMPLES.iterdir()
    if (p / "bot.toml").exists()
    and p.name != "montecarlo"
    and "build" not in tomllib.loads((p / "bot.toml").read_text())
)


def test_there_are_sample_bots_in_two_languages() -> None:
    names = {p.name for p in SAMPLE_BOTS}
    assert {"random", "lowest", "heuristic"} <= names
    commands = {
        (p / "bot.toml").read_text().split("command", 1)[1].split("\n")[0] for p in SAMPLE_BOTS
    }
    assert any("node" in c for c in commands)


@pytest.mark.parametrize("players", [3, 4, 5, 6])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_sample_bots_play_without_fault(play, preset: str, players: int) -> None:  # type: ignore[no-untyped-def]
    bots = SAMPLE_BOTS
    # Every bot sits at every (preset, size): at 3 players that takes two tables.
    tables = [
        [bots[(i + k) % len(bots)] for i in range(players)] for k in range(0, len(bots), players)
    ]
    for k, table in enumerate(tables):
        played = play(table, preset=preset, seed=players * 10 + k)
        faults = [s.fault for s in played.result.standings if s.fault is not None]
        assert not faults, (faults, played.stderr)
        replay(played.log)
    assert sandbox_pids() == []
