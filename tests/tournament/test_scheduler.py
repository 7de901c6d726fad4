"""The scheduler: match counts, duplicate rotations, stable keys and seeds."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
from collections import Counter
from math import comb
from pathlib import Path

import pytest

from referee.scheduler import gauntlet, round_robin, schedule
from referee.tournament import load_tournament

from .conftest import REPO, write_tournament

NAMES = ["eve", "alice", "dave", "carol", "bob"]
SECRET = bytes(range(32))


def test_round_robin_counts_every_subset_deal_and_rotation() -> None:
    specs = round_robin(NAMES, 4, 2, seed=1, secret=SECRET)
    assert len(specs) == comb(5, 4) * 2 * 4 == 40
    tables = Counter(frozenset(s.table) for s in specs)
    assert len(tables) == comb(5, 4)
    assert set(tables.values()) == {8}
    assert len({s.key for s in specs}) == 40


def test_every_rotation_of_a_deal_shares_its_seed_and_seats_each_bot_once() -> None:
    specs = round_robin(NAMES, 4, 2, seed=1, secret=SECRET)
    by_deal: dict[tuple[frozenset[str], int], list] = {}
    for s in specs:
        by_deal.setdefault((frozenset(s.table), s.deal), []).append(s)
    assert len(by_deal) == 10
    seeds = set()
    for group in by_deal.values():
        assert sorted(s.rotation for s in group) == [0, 1, 2, 3]
        assert len({s.deal_seed for s in group}) == 1
        assert all(s.match_seed == s.deal_seed for s in group)
        for seat in range(4):
            assert len({s.table[seat] for s in group}) == 4  # each bot holds each seat once
        base = group[0].table
        for s in group:
            r = s.rotation
            assert s.table == tuple(base[(i + r) % 4] for i in range(4))
        seeds.add(group[0].deal_seed)
    assert len(seeds) == 10  # different deals get different cards


def test_file_order_does_not_change_the_schedule() -> None:
    shuffled = round_robin(NAMES, 3, 2, seed=5, secret=SECRET)
    assert shuffled == round_robin(sorted(NAMES), 3, 2, seed=5, secret=SECRET)


def test_the_secret_decides_the_cards_and_nothing_else() -> None:
    """Keys and tables are public and the same for any secret; every deal's seed changes."""
    a = round_robin(NAMES, 3, 2, seed=1, secret=SECRET)
    b = round_robin(NAMES, 3, 2, seed=1, secret=bytes(32))
    assert [(s.key, s.table) for s in a] == [(s.key, s.table) for s in b]
    assert {s.deal_seed for s in a}.isdisjoint({s.deal_seed for s in b})
    assert all(s.deal_seed.bit_length() > 64 for s in a)  # far beyond any search


def test_keys_and_seeds_depend_on_the_tournament_seed() -> None:
    a = round_robin(NAMES, 3, 1, seed=1, secret=SECRET)
    b = round_robin(NAMES, 3, 1, seed=2, secret=SECRET)
    assert {s.key for s in a}.isdisjoint({s.key for s in b})
    assert {s.deal_seed for s in a}.isdisjoint({s.deal_seed for s in b})


def test_adding_a_deal_or_a_bot_keeps_existing_keys_and_seeds() -> None:
    small_run = round_robin(NAMES[:4], 3, 1, seed=3, secret=SECRET)
    big_run = round_robin(NAMES, 3, 2, seed=3, secret=SECRET)
    small = {(s.key, s.deal_seed, s.table) for s in small_run}
    big = {(s.key, s.deal_seed, s.table) for s in big_run}
    assert small < big


def test_keys_are_identical_in_another_interpreter() -> None:
    """No ``hash()`` (salted per process) and no random state: a fresh process agrees."""
    code = (
        "from referee.scheduler import round_robin;"
        "print('\\n'.join(f'{s.key} {s.deal_seed}' for s in round_robin("
        f"{NAMES!r}, 3, 2, seed=9, secret={SECRET!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"},
        cwd=REPO,
    ).stdout.split("\n")
    here = [f"{s.key} {s.deal_seed}" for s in round_robin(NAMES, 3, 2, seed=9, secret=SECRET)]
    assert out[: len(here)] == here


def test_key_format_is_pinned() -> None:
    """A golden key and seed: a change here orphans every stored result, so it must be on purpose.

    The seed is HMAC-SHA256(secret, '["deal",<tournament seed>,<deal key>]'), first 16 bytes,
    big-endian: anyone can re-derive it with a few lines in any language.
    """
    first = round_robin(["a", "b", "c"], 3, 1, seed=1, secret=SECRET)[0]
    assert first.key.startswith("rr/") and first.key.endswith("/d000/r0")
    assert first.table == ("a", "b", "c")
    message = b'["deal",1,"rr/303cb236ca90/d000"]'
    by_hand = int.from_bytes(hmac.new(SECRET, message, hashlib.sha256).digest()[:16], "big")
    assert (first.key, first.deal_seed) == (
        "rr/303cb236ca90/d000/r0",
        128665967867475966477723384231812317007,
    )
    assert first.deal_seed == by_hand


def test_gauntlet_seats_the_candidate_in_every_match() -> None:
    specs = gauntlet("carol", NAMES, 3, matches=4, deals=2, seed=1, secret=SECRET)
    assert len(specs) == 4 * 2 * 3
    assert all("carol" in s.table and len(set(s.table)) == 3 for s in specs)
    assert len({s.key for s in specs}) == len(specs)
    assert specs == gauntlet(
        "carol", list(reversed(NAMES)), 3, matches=4, deals=2, seed=1, secret=SECRET
    )
    draws = {frozenset(s.table) for s in specs}
    assert len(draws) > 1  # opponents vary between draws


def test_schedule_reads_the_tournament_file(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=5, table_size=4, deals=2)
    specs = schedule(load_tournament(path), SECRET)
    assert len(specs) == 40
    candidate = load_tournament(path).entrants[0]
    gauntlet_file = write_tournament(
        tmp_path / "g",
        bots=5,
        table_size=3,
        fmt=f'format = "gauntlet"\ncandidate = "{candidate}"\nmatches = 3',
    )
    assert len(schedule(load_tournament(gauntlet_file), SECRET)) == 3 * 1 * 3


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_every_table_size_rotates_fully(k: int) -> None:
    names = [f"bot{i}" for i in range(6)]
    specs = round_robin(names, k, 1, seed=0, secret=SECRET)
    assert len(specs) == comb(6, k) * k
    assert Counter(s.rotation for s in specs) == dict.fromkeys(range(k), comb(6, k))


def test_deal_key_is_shared_by_the_rotations_of_a_deal_only() -> None:
    from referee.scheduler import deal_key

    assert deal_key("rr/0123456789ab/d000/r2") == "rr/0123456789ab/d000"
    assert deal_key("rr/0123456789ab/d000/r0") == deal_key("rr/0123456789ab/d000/r3")
    assert deal_key("rr/0123456789ab/d001/r0") != deal_key("rr/0123456789ab/d000/r0")
    assert deal_key("g/0123456789ab/m0003/d000/r1") == "g/0123456789ab/m0003/d000"
