"""Balanced tables: every bot plays equally often, every pair of bots meets equally often."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from math import comb
from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.executors import AttemptEvent, Executor, MatchTask
from referee.executors.base import SandboxPlan
from referee.runs.tournament import run_tournament
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.design import balanced_design, design_size, pair_counts
from referee.tournament.file import load_tournament
from referee.tournament.scheduler import round_robin, schedule
from referee.tournament.seating import BALANCED_DEALS
from referee.tournament.store import Store

from .conftest import REPO, write_tournament

SECRET = bytes(range(32))
NAMES = [f"bot{i:02d}" for i in range(8)]


def _check(n: int, k: int, seed: int, *, exact: bool) -> tuple[tuple[int, ...], ...]:
    """The design for ``n`` bots at ``k``: every bot at the same number of tables, and every
    pair exactly ``lambda`` times (``exact``) or within one of it, where it meets at least
    once; as small as the smallest exact design, or the complete round robin."""
    design = balanced_design(n, k, seed)
    size = design_size(n, k)
    assert all(len(set(table)) == k == len(table) for table in design)
    assert all(0 <= bot < n for table in design for bot in table)
    plays = Counter(bot for table in design for bot in table)
    assert len(plays) == n and len(set(plays.values())) == 1
    counts = pair_counts(design)
    meetings = [counts.get(pair, 0) for pair in itertools.combinations(range(n), 2)]
    if len(design) == comb(n, k):
        assert set(meetings) == {comb(n - 2, k - 2)}
        return design
    lam = len(design) * k * (k - 1) // (n * (n - 1))
    assert len(design) in (size.tables, 2 * size.tables)
    if exact:
        assert set(meetings) == {lam}
        assert len(design) == size.tables
    assert min(meetings) >= max(1, lam - 1) and max(meetings) <= lam + 1
    return design


@pytest.mark.parametrize(
    ("n", "k", "lam", "tables", "per_bot"),
    [
        (8, 4, 3, 14, 7),  # the planes of AG(3, 2)
        (12, 4, 3, 33, 11),
        (13, 4, 1, 13, 4),  # the lines of PG(2, 3)
        (7, 3, 1, 7, 3),  # the Fano plane
        (9, 3, 1, 12, 4),
        (16, 6, 2, 16, 6),  # lambda = 1 would give 8 tables: fewer than bots (Fisher)
        (5, 4, 3, 5, 4),
    ],
)
def test_the_smallest_design_the_counting_conditions_allow(
    n: int, k: int, lam: int, tables: int, per_bot: int
) -> None:
    size = design_size(n, k)
    assert (size.lam, size.tables, size.per_bot) == (lam, tables, per_bot)


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("n", range(4, 13))
def test_small_fields_at_3_and_4_get_an_exact_design(n: int, k: int) -> None:
    _check(n, k, seed=1, exact=True)


@pytest.mark.parametrize(("n", "k"), [(n, k) for k in (5, 6) for n in range(k, 13)])
def test_small_fields_at_5_and_6_are_balanced(n: int, k: int) -> None:
    _check(n, k, seed=1, exact=True)


@pytest.mark.parametrize(
    ("n", "k", "exact"),
    [(n, 3, True) for n in (14, 17, 20, 23)]
    + [(n, 4, True) for n in (14, 17, 20, 22, 24)]
    + [(n, 5, n != 15) for n in (14, 15, 16)]
    + [(n, 6, n in (14, 16)) for n in (13, 14, 15, 16)],
)
@pytest.mark.slow
def test_larger_fields_are_balanced(n: int, k: int, exact: bool) -> None:
    """Exact wherever the search is meant to find the design; within one everywhere."""
    _check(n, k, seed=1, exact=exact)


def test_eight_bots_at_four_meet_three_times_in_14_tables_not_70() -> None:
    design = _check(8, 4, seed=0, exact=True)
    assert len(design) == 14


@pytest.mark.slow
def test_a_design_that_does_not_exist_is_within_one() -> None:
    """No 2-(15, 5, 2) exists (it would be the residual of a symmetric 2-(22, 7, 2), which
    Bruck-Ryser-Chowla rules out; Hall-Connor makes every such residual embed)."""
    design = _check(15, 5, seed=1, exact=False)
    assert len(design) == 21
    assert set(pair_counts(design).values()) >= {1, 3}


@pytest.mark.slow
def test_a_field_too_large_for_the_search_never_falls_back_to_millions_of_tables() -> None:
    """64 bots at tables of 6: the complete round robin is 75 million tables. The search
    reaches neither guarantee there; the referee plays the tables it found in which every
    pair meets, each bot at the same number of them."""
    design = balanced_design(64, 6, seed=1)
    size = design_size(64, 6)
    assert len(design) == size.tables < comb(64, 6)
    counts = pair_counts(design)
    assert len(counts) == comb(64, 2) and min(counts.values()) >= 1
    assert set(Counter(bot for table in design for bot in table).values()) == {size.per_bot}


def test_the_seed_decides_the_design_and_nothing_else_does() -> None:
    cached = balanced_design(8, 4, 1)
    # computed afresh, past the cache: the same tables, not merely the same object
    fresh = balanced_design.__wrapped__(8, 4, 1)
    assert fresh is not cached and fresh == cached
    designs = {balanced_design(8, 4, seed) for seed in range(6)}
    assert len(designs) > 1


def test_the_design_is_pinned() -> None:
    """A golden design: a change here reseats every balanced tournament (and orphans its
    stored results), so it must be on purpose."""
    assert balanced_design(8, 4, 1) == (
        (0, 1, 2, 3),
        (0, 1, 3, 7),
        (0, 1, 5, 6),
        (0, 2, 4, 6),
        (0, 2, 5, 7),
        (0, 3, 4, 5),
        (0, 4, 6, 7),
        (1, 2, 4, 5),
        (1, 2, 4, 7),
        (1, 3, 4, 6),
        (1, 5, 6, 7),
        (2, 3, 5, 6),
        (2, 3, 6, 7),
        (3, 4, 5, 7),
    )


def test_the_design_is_identical_in_another_interpreter() -> None:
    code = "from referee.tournament.design import balanced_design; print(balanced_design(12, 4, 5))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "321", "PATH": "/usr/bin:/bin"},
        cwd=REPO,
    ).stdout.strip()
    assert out == str(balanced_design(12, 4, 5))


def test_a_balanced_round_robin_plays_the_design_tables_with_their_full_round_robin_keys() -> None:
    specs = round_robin(NAMES, 4, 2, seed=3, secret=SECRET, tables="balanced")
    assert len(specs) == 14 * 2 * 4
    tables = Counter(frozenset(s.table) for s in specs)
    assert len(tables) == 14 and set(tables.values()) == {8}
    plays = Counter(name for s in specs for name in s.table)
    assert set(plays.values()) == {7 * 2 * 4}  # every bot: 7 tables x 2 deals x 4 rotations
    meets = Counter(pair for table in tables for pair in itertools.combinations(sorted(table), 2))
    assert len(meets) == 28 and set(meets.values()) == {3}
    full = {s.key: s for s in round_robin(NAMES, 4, 2, seed=3, secret=SECRET)}
    # Same keys and seats as in the full one (which tables share a deal depends on the set).
    assert all((full[s.key].table, full[s.key].deal) == (s.table, s.deal) for s in specs)
    assert specs == round_robin(
        list(reversed(NAMES)), 4, 2, seed=3, secret=SECRET, tables="balanced"
    )


def test_every_balanced_table_is_seat_balanced_after_the_stated_deals() -> None:
    specs = round_robin(NAMES, 4, BALANCED_DEALS[4], seed=3, secret=SECRET, tables="balanced")
    by_table: dict[frozenset[str], Counter[tuple[str, str, int]]] = {}
    for s in specs:
        offsets = by_table.setdefault(frozenset(s.table), Counter())
        for i, a in enumerate(s.table):
            for j, b in enumerate(s.table):
                if i != j:
                    offsets[a, b, (j - i) % 4] += 1
    assert len(by_table) == 14
    for offsets in by_table.values():
        assert len(offsets) == 4 * 3 * 3 and len(set(offsets.values())) == 1


def test_the_tournament_file_chooses_balanced_tables(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=8, table_size=4, extra='tables = "balanced"')
    t = load_tournament(path)
    assert len(schedule(t, SECRET)) == 14 * 4
    settings = t.settings()
    assert settings["tables"] == "balanced" and settings["field"] == sorted(t.entrants)
    plain = load_tournament(write_tournament(tmp_path / "all", bots=8, table_size=4))
    assert len(schedule(plain, SECRET)) == 70 * 4
    assert "tables" not in plain.settings()  # stores made before the option stay valid


def test_balanced_tables_are_refused_in_a_gauntlet(tmp_path: Path) -> None:
    first = load_tournament(write_tournament(tmp_path / "f", bots=5)).entrants[0]
    path = write_tournament(
        tmp_path,
        bots=5,
        fmt=f'format = "gauntlet"\ncandidate = "{first}"\nmatches = 3',
        extra='tables = "balanced"',
    )
    with pytest.raises(UsageError, match='tables: only allowed when format = "round-robin"'):
        load_tournament(path)


def test_an_unknown_tables_value_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=5, extra='tables = "some"')
    with pytest.raises(UsageError, match=r"tables: got 'some'.*'all' or 'balanced'"):
        load_tournament(path)


FANO_BOTS = [f"fb{i}" for i in range(7)]


def _fano_tournament(folder: Path, bots: list[str]) -> Path:
    """``bots`` (fake files, played in memory) in a balanced round robin at tables of 3."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in bots:
        (folder / f"{name}.py").write_text("# played in memory by the tests\n")
        entries.append(f'[[bots]]\npath = "{name}.py"\nname = "{name}"\n')
    path = folder / "fano.toml"
    path.write_text(
        'name = "fano"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\n'
        'tables = "balanced"\ndeals = 1\nseed = 2\n\n[sandbox]\nbackend = "process"\n\n'
        + "\n".join(entries)
    )
    return path


class _StopsAfter(Executor):
    """Plays the first ``count`` tasks it is given and stops, as a killed run would."""

    max_attempts = 1

    def __init__(self, inner: InProcessExecutor, count: int) -> None:
        self.inner, self.count = inner, count

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        return self.inner.prepare(backend, images)

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        self.inner.run(tasks[: self.count], on_event)


def _stored(folder: Path) -> list[tuple[str, tuple[str, ...], tuple[int, ...]]]:
    with Store(folder) as store:
        return [
            (m.spec.key, m.spec.table, tuple(seat.place for seat in m.seats))
            for m in sorted(store.completed(), key=lambda m: m.spec.key)
        ]


def test_a_balanced_tournament_resumes_exactly_and_refuses_a_new_bot(tmp_path: Path) -> None:
    handlers = {
        name: (lambda name=name, i=i: (polite_bot if i % 2 else lowest_bot)(name))
        for i, name in enumerate([*FANO_BOTS, "fb7"])
    }
    secret = bytes(range(32, 64))
    whole = load_tournament(_fano_tournament(tmp_path / "whole", FANO_BOTS))
    summary = run_tournament(whole, InProcessExecutor(handlers), deal_secret=secret)
    assert summary.total == summary.done == 7 * 3  # the Fano plane: 7 tables, not 35
    reference = _stored(whole.results_dir)
    assert Counter(name for _, table, _ in reference for name in table) == dict.fromkeys(
        FANO_BOTS, 9
    )

    cut = load_tournament(_fano_tournament(tmp_path / "cut", FANO_BOTS))
    first = run_tournament(cut, _StopsAfter(InProcessExecutor(handlers), 8), deal_secret=secret)
    assert first.done == 8 < first.total
    resumed = run_tournament(cut, InProcessExecutor(handlers))
    assert (resumed.total, resumed.done, resumed.played) == (21, 21, 13)
    assert _stored(cut.results_dir) == reference

    grown = load_tournament(_fano_tournament(tmp_path / "cut", [*FANO_BOTS, "fb7"]))
    with pytest.raises(UsageError, match=r"field changed \(a balanced round robin's tables"):
        run_tournament(grown, InProcessExecutor(handlers))
