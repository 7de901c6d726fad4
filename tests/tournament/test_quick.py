"""``play --matches``'s tournament: one table of the given bots, whole seat rotations, the
tournament's rule on cards by default, and a plan that ``verify`` could recompute."""

from __future__ import annotations

import dataclasses
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from referee.errors import UsageError
from referee.sandbox import BotSpec, load_bot
from referee.specs import TimeControl
from referee.tournament.file import Tournament
from referee.tournament.model import Plan
from referee.tournament.quick import deals_for, quick_tournament
from referee.tournament.scheduler import schedule

SECRET = bytes.fromhex("ab" * 32)


def _bots(*names: str) -> list[BotSpec]:
    return [load_bot(f"@{name}") for name in names]


def _quick(
    bots: list[BotSpec], tmp_path: Path, paths: list[str] | None = None, **given: Any
) -> Tournament:
    """The quick tournament of ``bots`` (named ``@name`` unless ``paths``), with ``play``'s
    defaults and ``given`` settings."""
    settings: dict[str, Any] = dict(
        preset="arschloch",
        max_rounds=None,
        matches=6,
        seed=0,
        duplicate="tables",
        time_control=TimeControl(),
        backend="process",
        memory_mb=512,
        images=(),
        folder=tmp_path,
    )
    settings.update(given)
    return quick_tournament(bots, paths or [f"@{bot.name}" for bot in bots], **settings)


@pytest.mark.parametrize(
    ("matches", "seats", "deals"), [(6, 3, 2), (5, 4, 2), (8, 4, 2), (1, 6, 1), (7, 6, 2)]
)
def test_matches_are_rounded_up_to_whole_seat_rotations(
    matches: int, seats: int, deals: int
) -> None:
    assert deals_for(matches, seats) == deals


def test_a_table_of_the_bots_every_bot_at_every_seat_each_match_its_own_cards(
    tmp_path: Path,
) -> None:
    t = _quick(_bots("heuristic", "lowest", "random", "js-lowest"), tmp_path, matches=24)
    assert t.file.table_size == 4 and t.file.deals == 6 and t.rules.players == 4
    specs = schedule(t, SECRET)
    assert len(specs) == 24 and {len(set(spec.table)) for spec in specs} == {4}
    seats = Counter((name, seat) for spec in specs for seat, name in enumerate(spec.table))
    assert set(seats.values()) == {6}  # 6 deals x each seat once
    # Six deals at 4 seats are a whole balanced cycle: every ordered pair at every offset.
    offsets = Counter(
        (spec.table[i], spec.table[(i + off) % 4], off)
        for spec in specs
        for i in range(4)
        for off in (1, 2, 3)
    )
    assert len(offsets) == 4 * 3 * 3 and len(set(offsets.values())) == 1
    # No bot meets the same cards twice: one deal per match.
    assert len({spec.deal_id for spec in specs}) == 24
    assert len({spec.deal_seed for spec in specs}) == 24
    assert t.warnings() == [
        "[authors] apart = false: entrants of one author may share a table "
        "and a deal, and so what they see"
    ]


def test_rotations_share_a_deal_among_a_table_deals_rotations(tmp_path: Path) -> None:
    t = _quick(_bots("heuristic", "lowest", "random"), tmp_path, duplicate="rotations")
    specs = schedule(t, SECRET)
    assert len(specs) == 6 and len({spec.deal_id for spec in specs}) == 2
    assert any("rotations" in warning for warning in t.warnings())


def test_copies_of_one_bot_take_seats_under_their_own_names(tmp_path: Path) -> None:
    heuristic, lowest = _bots("heuristic", "lowest")
    bots = [dataclasses.replace(heuristic, name=f"heuristic#{i}") for i in (1, 2)] + [lowest]
    t = _quick(bots, tmp_path, paths=["@heuristic", "@heuristic", "@lowest"])
    assert t.entrants == ["heuristic#1", "heuristic#2", "lowest"]
    assert t.twins() == [("heuristic#1", "heuristic#2")] and t.file.allow_twins
    assert t.authors_apart() is None
    assert len(schedule(t, SECRET)) == 6
    with pytest.raises(ValueError, match="distinct"):
        _quick([heuristic, heuristic, lowest], tmp_path)


def test_the_stored_plan_recomputes_the_same_schedule(tmp_path: Path) -> None:
    t = _quick(
        _bots("heuristic", "lowest", "random"),
        tmp_path,
        seed=5,
        max_rounds=3,
        paths=['weird "dir"\\\n\x1b[31m/bot', "@lowest", "@random"],
    )
    source = tomllib.loads(t.source)
    assert source["rules"] == {"preset": "arschloch", "max_rounds": 3}
    assert source["bots"][0]["path"] == 'weird "dir"\\\\n\\x1b[31m/bot'
    assert t.rules.max_rounds == 3 and t.file.seed == 5
    plan = Plan.from_json(t.plan().to_json(), tmp_path)
    assert schedule(plan, SECRET) == schedule(t, SECRET)


def test_rules_that_do_not_fit_are_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown preset 'nope'"):
        _quick(_bots("heuristic", "lowest", "random"), tmp_path, preset="nope")
