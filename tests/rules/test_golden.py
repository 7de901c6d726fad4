"""The reference logs of the design (one per preset, two with a fault) replay line for line."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from referee.errors import ReplayMismatch
from referee.rules import replay

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.jsonl"))


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_preset_has_a_reference_log() -> None:
    presets = {load(p)[0]["rules"]["name"] for p in GOLDEN}
    assert presets == {
        "arschloch",
        "arschloch-high10",
        "arschloch-52",
        "trou-du-cul",
        "president-es",
    }


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_reference_log_replays(path: Path) -> None:
    lines = load(path)
    game = replay(lines)
    assert game.over
    assert [game.event_dict(e) for e in game.events] == lines[1:]
    assert lines[-1]["type"] == "match_end"


def test_two_reference_logs_hold_a_fault() -> None:
    with_fault = [p.stem for p in GOLDEN if any(r["type"] == "fault" for r in load(p))]
    assert len(with_fault) == 2


@pytest.mark.parametrize("path", GOLDEN[:2], ids=lambda p: p.stem)
def test_a_changed_consequence_is_caught_at_its_line(path: Path) -> None:
    lines = load(path)
    idx = next(i for i, r in enumerate(lines) if r["type"] == "trick_end")
    bad = copy.deepcopy(lines)
    bad[idx]["leader"] = (bad[idx]["leader"] + 1) % len(lines[0]["players"])
    with pytest.raises(ReplayMismatch) as err:
        replay(bad)
    assert err.value.line_no == idx + 1


def test_an_illegal_logged_play_is_caught() -> None:
    lines = load(GOLDEN[0])
    idx = next(i for i, r in enumerate(lines) if r["type"] == "played" and i > 5)
    bad = copy.deepcopy(lines)
    bad[idx]["cards"] = ["7C", "7C"]
    with pytest.raises(ReplayMismatch, match="illegal"):
        replay(bad)


def test_a_truncated_log_is_caught() -> None:
    lines = load(GOLDEN[0])[:-3]
    with pytest.raises(ReplayMismatch):
        replay(lines)
