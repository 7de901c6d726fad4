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

from referee.tournament.file import load_tournament
from referee.tournament.scheduler import gauntlet, round_robin, schedule
from referee.tournament.seating import BALANCED_DEALS

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


def test_with_rotations_every_rotation_of_a_deal_shares_its_seed_and_seats_each_bot_once() -> None:
    specs = round_robin(NAMES, 4, 2, seed=1, secret=SECRET, duplicate="rotations")
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
        "from referee.tournament.scheduler import round_robin;"
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
    first = round_robin(["a", "b", "c"], 3, 1, seed=1, secret=SECRET, duplicate="rotations")[0]
    assert first.key.startswith("rr/") and first.key.endswith("/d000/r0")
    assert first.table == ("a", "b", "c")
    message = b'["deal",1,"rr/303cb236ca90/d000"]'
    by_hand = int.from_bytes(hmac.new(SECRET, message, hashlib.sha256).digest()[:16], "big")
    assert (first.key, first.deal_seed) == (
        "rr/303cb236ca90/d000/r0",
        128665967867475966477723384231812317007,
    )
    assert first.deal_seed == by_hand
    # With deals shared across tables (the default) the seed is keyed by the deal's id the
    # same way: HMAC-SHA256(secret, '["deal",<seed>,<deal id>]').
    shared = round_robin(["a", "b", "c"], 3, 1, seed=1, secret=SECRET)[0]
    assert (shared.key, shared.table) == (first.key, first.table)
    assert shared.deal_id.startswith("deal/") and len(shared.deal_id) == 5 + 24
    message = b'["deal",1,"' + shared.deal_id.encode() + b'"]'
    by_hand = int.from_bytes(hmac.new(SECRET, message, hashlib.sha256).digest()[:16], "big")
    assert shared.deal_seed == by_hand


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
    from referee.specs import deal_key

    assert deal_key("rr/0123456789ab/d000/r2") == "rr/0123456789ab/d000"
    assert deal_key("rr/0123456789ab/d000/r0") == deal_key("rr/0123456789ab/d000/r3")
    assert deal_key("rr/0123456789ab/d001/r0") != deal_key("rr/0123456789ab/d000/r0")
    assert deal_key("g/0123456789ab/m0003/d000/r1") == "g/0123456789ab/m0003/d000"


def _offsets(specs: list) -> Counter[tuple[str, str, int]]:  # type: ignore[type-arg]
    """How often each ordered pair sat at each clockwise offset, over ``specs``."""
    counts: Counter[tuple[str, str, int]] = Counter()
    for s in specs:
        k = len(s.table)
        for i, a in enumerate(s.table):
            for j, b in enumerate(s.table):
                if i != j:
                    counts[(a, b, (j - i) % k)] += 1
    return counts


@pytest.mark.parametrize("k", [3, 4, 5, 6])
def test_every_table_is_exactly_balanced_after_the_stated_number_of_deals(k: int) -> None:
    """Each ordered pair sits at each offset equally often, table by table, and over the
    tournament; fewer deals are not balanced (the stated number is the cycle, not a bound)."""
    names = [f"bot{i}" for i in range(k + 1)]
    deals = BALANCED_DEALS[k]
    specs = round_robin(names, k, deals, seed=3, secret=SECRET)
    by_table: dict[frozenset[str], list] = {}  # type: ignore[type-arg]
    for s in specs:
        by_table.setdefault(frozenset(s.table), []).append(s)
    for table_specs in by_table.values():
        counts = _offsets(table_specs)
        assert len(counts) == k * (k - 1) * (k - 1)  # every pair at every offset
        assert len(set(counts.values())) == 1
    whole = _offsets(specs)
    assert len(set(whole.values())) == 1
    short = _offsets(round_robin(names[:k], k, deals - 1, seed=3, secret=SECRET))
    assert len(short) < k * (k - 1) * (k - 1) or len(set(short.values())) > 1


def test_balance_holds_from_any_deal_on_and_the_seating_cycles() -> None:
    names = ["a", "b", "c", "d"]
    specs = round_robin(names, 4, 3 * BALANCED_DEALS[4], seed=11, secret=SECRET)
    for start in range(2 * BALANCED_DEALS[4] + 1):
        window = [s for s in specs if start <= s.deal < start + BALANCED_DEALS[4]]
        assert len(set(_offsets(window).values())) == 1
    base = {s.deal: s.table for s in specs if s.rotation == 0}
    assert len({base[d] for d in range(BALANCED_DEALS[4])}) == BALANCED_DEALS[4]
    assert base[0] == base[BALANCED_DEALS[4]]


def test_the_starting_order_varies_between_tables_and_follows_the_seed() -> None:
    names = [f"bot{i}" for i in range(7)]
    first = {
        frozenset(s.table): s.table
        for s in round_robin(names, 4, 1, seed=1, secret=SECRET)
        if s.rotation == 0
    }
    orders = {tuple(sorted(t).index(name) for name in t) for t in first.values()}
    assert len(orders) == 6  # 35 tables start all over the cycle, not in sorted order
    other = {
        frozenset(s.table): s.table
        for s in round_robin(names, 4, 1, seed=2, secret=SECRET)
        if s.rotation == 0
    }
    assert first != other


def test_a_gauntlet_table_is_balanced_too() -> None:
    specs = gauntlet("carol", NAMES, 4, matches=3, deals=BALANCED_DEALS[4], seed=2, secret=SECRET)
    by_draw: dict[str, list] = {}  # type: ignore[type-arg]
    for s in specs:
        by_draw.setdefault(s.key.split("/")[2], []).append(s)
    assert len(by_draw) == 3
    for table_specs in by_draw.values():
        assert len(set(_offsets(table_specs).values())) == 1


def test_play_off_deals_continue_the_table_cycle_and_are_keyed_by_round() -> None:
    from referee.specs import deal_key, playoff_round
    from referee.tournament.scheduler import playoff_deals

    table = ("d", "a", "c", "b")
    deal = playoff_deals(2, [(table, 4)], seed=5, secret=SECRET, duplicate="rotations")
    assert [s.rotation for s in deal] == [0, 1, 2, 3]
    assert all(playoff_round(s.key) == 2 for s in deal)
    assert playoff_round(round_robin(NAMES, 4, 1, seed=5, secret=SECRET)[0].key) is None
    assert len({deal_key(s.key) for s in deal}) == 1 and len({s.deal_seed for s in deal}) == 1
    assert deal[0].key.startswith("po/002/") and deal[0].key.endswith("/d004/r0")
    scheduled = round_robin(["a", "b", "c", "d"], 4, 6, seed=5, secret=SECRET)
    assert deal[0].table == next(s.table for s in scheduled if s.deal == 4 and s.rotation == 0)
    assert deal == playoff_deals(
        2, [(tuple(sorted(table)), 4)], seed=5, secret=SECRET, duplicate="rotations"
    )
    # Shared across tables by default: one table alone gets a deal per rotation.
    alone = playoff_deals(2, [(table, 4)], seed=5, secret=SECRET)
    assert [s.key for s in alone] == [s.key for s in deal]
    assert len({s.deal_id for s in alone}) == 4 and len({s.deal_seed for s in alone}) == 4


def _holders(specs: list) -> dict[str, list[str]]:  # type: ignore[type-arg]
    held: dict[str, list[str]] = {}
    for s in specs:
        held.setdefault(s.deal_id, []).extend(s.table)
    return held


@pytest.mark.parametrize(("bots", "k"), [(8, 4), (9, 3), (12, 3), (13, 4), (16, 4), (7, 3)])
def test_no_entrant_meets_the_same_cards_twice_and_every_table_rotation_gets_a_deal(
    bots: int, k: int
) -> None:
    names = [f"bot{i:02d}" for i in range(bots)]
    specs = round_robin(names, k, 2, seed=3, secret=SECRET)
    assert len(specs) == comb(bots, k) * 2 * k
    for deal_id, held in _holders(specs).items():
        assert len(held) == len(set(held)), f"{deal_id} dealt twice to one entrant"
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for s in specs:
        groups.setdefault(s.deal_id, []).append(s)
    for group in groups.values():
        assert len(group) <= k
        assert len({s.rotation for s in group}) == len(group)  # one rotation each
        assert len({s.deal_seed for s in group}) == 1 and len({s.deal for s in group}) == 1
    # Deals really are shared where the field allows: most deals go to k disjoint tables.
    sizes = Counter(len(group) for group in groups.values())
    assert max(sizes) == min(k, bots // k)
    if bots >= 2 * k:
        assert sizes[min(k, bots // k)] * min(k, bots // k) > len(specs) / 2
    # Each bot still holds each seat of each of its table deals once (seating unchanged).
    for s in specs:
        assert len(set(s.table)) == k
    by_slot: dict[str, list] = {}  # type: ignore[type-arg]
    for s in specs:
        by_slot.setdefault(s.key.rsplit("/r", 1)[0], []).append(s)
    for slot in by_slot.values():
        assert sorted(s.rotation for s in slot) == list(range(k))
        for seat in range(k):
            assert len({s.table[seat] for s in slot}) == k


def test_a_field_too_small_for_disjoint_tables_gets_a_deal_per_match() -> None:
    specs = round_robin(NAMES, 4, 2, seed=1, secret=SECRET)  # 5 bots: no two tables disjoint
    assert len({s.deal_id for s in specs}) == len(specs)
    assert len({s.deal_seed for s in specs}) == len(specs)
    g = gauntlet(
        "carol", [*NAMES, "fay", "gus", "hal"], 3, matches=4, deals=2, seed=1, secret=SECRET
    )
    assert len({s.deal_id for s in g}) == len(g)  # the candidate sits at every table


def test_entrants_of_one_author_never_share_a_table_or_a_deal() -> None:
    names = [f"bot{i:02d}" for i in range(12)]
    authors = {name: f"author{i // 2}" for i, name in enumerate(names)}  # six pairs
    specs = round_robin(names, 3, 1, seed=2, secret=SECRET, authors=authors)
    assert specs
    for s in specs:
        assert len({authors[n] for n in s.table}) == 3
    for held in _holders(specs).values():
        owners = [authors[n] for n in held]
        assert len(owners) == len(set(owners))
    # Without authors, the pairs do meet.
    free = round_robin(names, 3, 1, seed=2, secret=SECRET)
    assert any(len({authors[n] for n in s.table}) < 3 for s in free)
    assert len(free) > len(specs)


def test_sharing_deals_is_deterministic_whatever_the_file_order() -> None:
    names = [f"bot{i:02d}" for i in range(10)]
    assert round_robin(names, 4, 2, seed=7, secret=SECRET) == round_robin(
        list(reversed(names)), 4, 2, seed=7, secret=SECRET
    )
    assert round_robin(names, 4, 2, seed=7, secret=SECRET) != round_robin(
        names, 4, 2, seed=8, secret=SECRET
    )
