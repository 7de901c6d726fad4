"""Matchmaking (:mod:`referee.ranking.matchmaking`): a pure function of the stored state.

The planner is given states, never a store: the same state plans the same batch whatever
order the entrants come in; a batch seats each entrant once at most, tables of the table
size, no author twice; new entrants get placement tables against a spread of the field;
matchmaking draws tables around the most uncertain entrant with opponents near it. And, on
random leagues (hypothesis), two properties hold by construction: no entrant waits longer
than :func:`wait_bound` batches between tables (no starvation), and none is ever planned
beyond :func:`hog_cap` within the window (no hogging).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.ranking.matchmaking import (
    LeagueState,
    Standing,
    fair_tables,
    hog_cap,
    plan_batch,
    table_count,
    wait_bound,
)
from referee.tournament.model import LeagueSettings


def field(n: int, *, placed: bool = True, seed: int = 0) -> list[Standing]:
    """``n`` entrants with ratings spread out; ``placed``: past their placement."""
    rng = random.Random(seed)
    return [
        Standing(
            f"e{i:02d}",
            mu=25 + rng.gauss(0, 4),
            sigma=1.5 + rng.random(),
            matches=40 if placed else 0,
            placement=3 if placed else 0,
            last_batch=5,
        )
        for i in range(n)
    ]


def tables_of(
    state: LeagueState, knobs: LeagueSettings, k: int = 4, **kw: object
) -> list[tuple[str, ...]]:
    return [t.labels for t in plan_batch(state, knobs, table_size=k, seed=1, **kw).tables]  # type: ignore[arg-type]


def test_the_same_state_plans_the_same_batch_whatever_the_order() -> None:
    entrants = field(30)
    knobs = LeagueSettings(batch=5)
    first = plan_batch(LeagueState(6, tuple(entrants)), knobs, table_size=4, seed=9)
    shuffled = entrants[:]
    random.Random(3).shuffle(shuffled)
    again = plan_batch(LeagueState(6, tuple(shuffled)), knobs, table_size=4, seed=9)
    assert first == again
    other_seed = plan_batch(LeagueState(6, tuple(entrants)), knobs, table_size=4, seed=10)
    assert other_seed.tables != first.tables  # ties are broken by the seed, not by chance


def test_a_batch_seats_each_entrant_once_at_tables_of_the_table_size() -> None:
    for k in (3, 4, 5, 6):
        tables = tables_of(LeagueState(0, tuple(field(23))), LeagueSettings(batch=50), k)
        assert len(tables) == 23 // k
        seated = [label for table in tables for label in table]
        assert len(seated) == len(set(seated)) == k * len(tables)
        assert all(len(t) == k and list(t) == sorted(t) for t in tables)


def test_authors_kept_apart_never_share_a_table() -> None:
    entrants = [replace(s, author=f"a{i % 5}") for i, s in enumerate(field(20))]
    tables = tables_of(LeagueState(0, tuple(entrants)), LeagueSettings(batch=10))
    author = {s.label: s.author for s in entrants}
    assert len(tables) >= 4  # drawn greedily: the last table may not find four authors
    assert all(len({author[label] for label in t}) == 4 for t in tables)
    together = tables_of(
        LeagueState(0, tuple(entrants)), LeagueSettings(batch=10), authors_apart=False
    )
    assert any(len({author[label] for label in t}) < 4 for t in together)


def test_a_newcomer_is_placed_against_a_spread_of_the_field() -> None:
    entrants = field(40)
    ranked = sorted(entrants, key=lambda s: -s.score)
    newcomer = Standing("new", 25.0, 25 / 3, last_batch=5)
    plan = plan_batch(
        LeagueState(6, (*entrants, newcomer)), LeagueSettings(batch=3), table_size=4, seed=1
    )
    mine = next(t for t in plan.tables if "new" in t.labels)
    assert mine.kind == "placement" and mine.seed == "new"
    places = sorted(
        ranked.index(next(s for s in entrants if s.label == o)) for o in mine.labels if o != "new"
    )
    assert places[0] < 14 and places[-1] > 26  # one from the top third, one from the bottom
    assert plan.placement == ["new"]
    # Its next placement table is shifted along the ranking (the golden ratio's steps).
    later = replace(newcomer, placement=1)
    plan2 = plan_batch(
        LeagueState(7, (*entrants, later)), LeagueSettings(batch=3), table_size=4, seed=1
    )
    mine2 = next(t for t in plan2.tables if "new" in t.labels)
    assert set(mine2.labels) != set(mine.labels)


def test_matchmaking_seats_the_most_uncertain_with_a_neighbour_and_anchors() -> None:
    entrants = [
        Standing(f"e{i:02d}", 10.0 + i, 1.0, matches=50, placement=3, last_batch=9)
        for i in range(40)
    ]
    unsure = replace(entrants[20], sigma=3.0)  # mu 30, the least known
    entrants[20] = unsure
    entrants[0] = replace(entrants[0], last_batch=0)  # the fair table's seed, at mu 10
    knobs = LeagueSettings(batch=3, fair_share=0.01)  # one fair table, then matchmaking
    plan = plan_batch(LeagueState(10, tuple(entrants)), knobs, table_size=4, seed=2)
    drawn = next(t for t in plan.tables if t.kind == "matchmaking")
    assert drawn.seed == unsure.label
    mu = {s.label: s.mu for s in entrants}
    others = [mu[label] for label in drawn.labels if label != unsure.label]
    assert sum(abs(m - 30) <= 1 for m in others) == 1  # one neighbour in rating...
    assert any(abs(m - 30) > 4 for m in others)  # ...and anchors from across the field


def test_an_entrant_over_its_cap_is_left_out() -> None:
    entrants = field(12)
    knobs = LeagueSettings(batch=3, max_share=2.0, placement=0)
    cap = hog_cap(entrants, 48, knobs, 4)  # 48 matches in the window: 4 each on average
    hog = replace(entrants[0], recent=int(cap))
    plan = plan_batch(LeagueState(6, (hog, *entrants[1:]), 48), knobs, table_size=4, seed=1)
    assert plan.capped == (hog.label,)
    assert all(hog.label not in t.labels for t in plan.tables)
    assert len(plan.tables) == 2  # 11 eligible entrants fill two tables of 4


def test_a_newcomer_is_seated_in_its_first_batches_up_to_its_cap_and_no_further() -> None:
    """A newcomer joining a placed field, batches planned a window's tenth apart: it plays
    its placement tables in its first batches, then is drawn again and again (its sigma is
    the highest) until the cap on hogging holds it back; the same run plans the same."""

    def run() -> list[tuple[tuple[str, ...], ...]]:
        rng = random.Random(4)
        standings = {s.label: s for s in field(40)}
        standings["new"] = Standing("new", 25.0, 25 / 3, last_batch=5)
        knobs = LeagueSettings(batch=4, max_share=2.0)
        planned: list[dict[str, int]] = []
        seated = []
        for batch in range(6, 26):
            window = planned[-10:]  # the window holds the last 10 batches
            counts = {label: sum(b.get(label, 0) for b in window) for label in standings}
            state = LeagueState(
                batch,
                tuple(replace(s, recent=counts[s.label]) for s in standings.values()),
                sum(counts.values()),
            )
            cap = hog_cap(state.standings, state.window_seats, knobs, 4)
            plan = plan_batch(state, knobs, table_size=4, seed=3)
            this: dict[str, int] = {}
            for table in plan.tables:
                for label in table.labels:
                    assert counts[label] + 4 <= cap + 1e-9
                    this[label] = 4
                    standings[label] = _rated(
                        rng, standings[label], batch, label in plan.placement, 4
                    )
            planned.append(this)
            seated.append(tuple(t.labels for t in plan.tables))
        return seated

    seated = run()
    mine = [any("new" in t for t in tables) for tables in seated]
    assert all(mine[:4])  # three placement tables, then drawn as the most uncertain
    assert not all(mine)  # the cap holds it back at times
    assert sum(mine) >= len(mine) // 2  # still above its share: 16 seats for 41 entrants
    assert run() == seated


def test_the_bounds_are_what_the_docs_say() -> None:
    knobs = LeagueSettings()
    assert table_count(1000, knobs, 4) == 32 and fair_tables(32, knobs) == 8
    assert wait_bound(1000, knobs, 4) == 125
    assert wait_bound(10, knobs, 4) == 10
    assert hog_cap([], 0, knobs, 4) == 0.0


# --------------------------------------------------------------------------- properties


@st.composite
def leagues(draw: st.DrawFn) -> tuple[int, int, LeagueSettings, int]:
    k = draw(st.integers(3, 6))
    n = draw(st.integers(k, 48))
    knobs = LeagueSettings(
        batch=draw(st.integers(1, 12)),
        placement=draw(st.integers(0, 3)),
        fair_share=draw(st.sampled_from([0.01, 0.1, 0.25, 0.5, 1.0])),
        max_share=draw(st.sampled_from([1.0, 1.5, 2.0, 4.0])),
    )
    return n, k, knobs, draw(st.integers(0, 2**32))


def _rated(rng: random.Random, s: Standing, batch: int, placed: bool, k: int) -> Standing:
    """``s`` after a table: a result drawn at random moves its rating."""
    return replace(
        s,
        mu=s.mu + rng.gauss(0, 2),
        sigma=max(0.5, s.sigma * 0.9),
        matches=s.matches + k,
        placement=s.placement + placed,
        last_batch=batch,
    )


@settings(max_examples=60, deadline=None)
@given(leagues())
def test_no_entrant_waits_longer_than_the_bound(
    league: tuple[int, int, LeagueSettings, int],
) -> None:
    """Whatever the results, every entrant sits at a table at least once every
    ``wait_bound`` batches (the window never binds here: batches are hours apart)."""
    n, k, knobs, seed = league
    rng = random.Random(seed)
    standings = {
        s.label: s for s in (Standing(f"e{i}", 25.0, 25 / 3, last_batch=-1) for i in range(n))
    }
    bound = wait_bound(n, knobs, k)
    last = dict.fromkeys(standings, -1)
    for batch in range(3 * bound + 5):
        plan = plan_batch(
            LeagueState(batch, tuple(standings.values())), knobs, table_size=k, seed=seed
        )
        assert plan.capped == ()
        for table in plan.tables:
            for label in table.labels:
                standings[label] = _rated(rng, standings[label], batch, label in plan.placement, k)
                last[label] = batch
        waited = {label: batch - seen for label, seen in last.items()}
        assert max(waited.values()) <= bound, (batch, bound, waited)


@settings(max_examples=60, deadline=None)
@given(leagues(), st.lists(st.floats(0, 3000), min_size=40, max_size=40))
def test_no_entrant_is_ever_planned_beyond_its_cap(
    league: tuple[int, int, LeagueSettings, int], gaps: list[float]
) -> None:
    """Batches come at any pace: within every window, each entrant's planned matches stay
    within the cap the planner computed when it seated it."""
    n, k, knobs, seed = league
    rng = random.Random(seed)
    standings = {
        s.label: s for s in (Standing(f"e{i}", 25.0, 25 / 3, last_batch=-1) for i in range(n))
    }
    window = knobs.window_minutes * 60
    planned: list[tuple[float, str]] = []
    now = 0.0
    for batch, gap in enumerate(gaps):
        now += gap
        recent = [(t, label) for t, label in planned if t > now - window]
        counts = {label: k * sum(1 for _, other in recent if other == label) for label in standings}
        state = LeagueState(
            batch,
            tuple(replace(s, recent=counts[s.label]) for s in standings.values()),
            k * len(recent),
        )
        cap = hog_cap(state.standings, state.window_seats, knobs, k)
        plan = plan_batch(state, knobs, table_size=k, seed=seed)
        for table in plan.tables:
            for label in table.labels:
                assert counts[label] + k <= cap + 1e-9
                planned.append((now, label))
                standings[label] = _rated(rng, standings[label], batch, label in plan.placement, k)
        assert not set(plan.capped) & {label for t in plan.tables for label in t.labels}
        assert math.isfinite(cap)
