"""The results store (idempotent results, resume states, refusals) and TrueSkill replay."""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from referee.errors import UsageError
from referee.ranking.ratings import (
    EntrantRating,
    Rater,
    make_environment,
    rate,
    rating_places,
    replay_order,
)
from referee.results import FaultInfo, MatchResult, SeatResult
from referee.specs import EntrantRecord, RatingSettings, StoredMatch, StoredSeat
from referee.tournament.scheduler import round_robin
from referee.tournament.store import SCHEMA_VERSION, RunLock, Store, wipe

NAMES = ["a", "b", "c", "d"]


def _result(
    key: str, table: tuple[str, ...], places: list[int], fault_seat: int | None = None
) -> MatchResult:
    standings = [
        SeatResult(
            seat=seat,
            name=name,
            place=places[seat],
            score=10 - places[seat],
            forfeit=seat == fault_seat,
            fault=FaultInfo(kind="timeout", detail="slow") if seat == fault_seat else None,
        )
        for seat, name in enumerate(table)
    ]
    standings.sort(key=lambda s: (s.place, s.seat))
    return MatchResult(
        match=key, seed=1, rules="arschloch", rounds=2, log=None, standings=standings
    )


def test_store_records_each_result_once_however_often_it_is_stored(tmp_path: Path) -> None:
    specs = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))
    with Store(tmp_path) as store:
        store.add_matches(specs, store.deal_secret())
        store.add_matches(specs, store.deal_secret())  # scheduling again keeps states
        spec = specs[0]
        store.mark_running(spec.key)
        first = store.record_result(spec.key, _result(spec.key, spec.table, [3, 2, 1]), spec.table)
        # A match computed twice (a worker thought lost) is stored once: the first stands.
        again = store.record_result(spec.key, _result(spec.key, spec.table, [1, 2, 3]), spec.table)
        assert first is not None and again is None
        assert store.counts() == {"pending": len(specs) - 1, "running": 0, "done": 1, "failed": 0}
        [done] = store.completed()
        assert [s.place for s in done.seats] == [1, 2, 3]
        assert done.seats[0].name == spec.table[2]
        assert store.attempts()[spec.key] == 1
        assert store.chain_head() == (1, first)
    rows = (
        sqlite3.connect(tmp_path / "results.sqlite")
        .execute("SELECT COUNT(*) FROM results")
        .fetchone()
    )
    assert rows == (3,)


def test_a_running_match_stays_to_be_played_and_failures_are_recorded(tmp_path: Path) -> None:
    specs = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))
    with Store(tmp_path) as store:
        store.add_matches(specs, store.deal_secret())
        store.mark_running(specs[0].key)
        store.mark_running(specs[1].key)
        store.record_failure(specs[1].key, "sandbox down", final=False)
        store.mark_running(specs[2].key)
        store.record_failure(specs[2].key, "sandbox down", final=True)
    with Store(tmp_path) as store:  # as after a killed coordinator
        counts = store.counts()
        assert counts["running"] == 1 and counts["failed"] == 1 and counts["done"] == 0
        assert store.done_keys() == set()
        assert store.completed() == []


def test_seat_rows_must_cover_the_table(tmp_path: Path) -> None:
    spec = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))[0]
    with Store(tmp_path) as store:
        store.add_matches([spec], store.deal_secret())
        bad = _result(spec.key, spec.table[:2], [1, 2])
        with pytest.raises(ValueError, match="standings do not cover"):
            store.record_result(spec.key, bad, spec.table)
        assert store.counts()["done"] == 0


def test_changed_or_removed_bots_and_changed_settings_are_refused(tmp_path: Path) -> None:
    records = [EntrantRecord(n, "1", n * 64, f"/bots/{n}") for n in NAMES]
    with Store(tmp_path) as store:
        store.check_entrants(records)
        store.save_entrants(records)
        store.check_settings({"seed": 1})
        store.check_settings({"seed": 1})
        store.check_entrants([*records, EntrantRecord("e", None, "e" * 64, "/bots/e")])
        changed = [EntrantRecord("a", "1", "f" * 64, "/bots/a"), *records[1:]]
        with pytest.raises(
            UsageError, match=r"'a' changed since its results were stored .*--restart"
        ):
            store.check_entrants(changed)
        with pytest.raises(UsageError, match="'d' has results but is no longer in the tournament"):
            store.check_entrants(records[:3])
        with pytest.raises(UsageError, match=r"other settings \(seed changed\)"):
            store.check_settings({"seed": 2})
    wipe(tmp_path)
    with Store(tmp_path) as store:
        store.check_entrants(changed)
        assert store.entrants() == {}


def test_one_run_at_a_time(tmp_path: Path) -> None:
    with RunLock(tmp_path), pytest.raises(UsageError, match="another run"), RunLock(tmp_path):
        pass
    with RunLock(tmp_path):
        pass


def _stored(
    key: str, places: dict[str, int], forfeits: frozenset[str] = frozenset()
) -> StoredMatch:
    from referee.specs import MatchSpec

    table = tuple(places)
    spec = MatchSpec(key=key, table=table, deal=0, rotation=0, deal_seed=1, match_seed=1)
    seats = tuple(
        StoredSeat(i, n, places[n], 0, n in forfeits, "crash" if n in forfeits else None, None)
        for i, n in enumerate(table)
    )
    return StoredMatch(spec, seats)


def test_ratings_do_not_depend_on_the_order_matches_arrive() -> None:
    rng = random.Random(4)
    matches = []
    for i in range(40):
        table = rng.sample(NAMES, 3)
        places = rng.sample([1, 2, 3], 3)
        matches.append(_stored(f"k{i:03d}", dict(zip(table, places, strict=True))))
    first = rate(matches, NAMES)
    rng.shuffle(matches)
    assert rate(matches, NAMES) == first
    assert sum(r.matches for r in first) == 120
    assert [r.score for r in first] == sorted((r.score for r in first), reverse=True)


def test_shared_places_are_draws_and_the_winner_rises() -> None:
    [m] = [_stored("k", {"a": 1, "b": 1, "c": 3})]
    ratings = {r.name: r for r in rate([m], ["a", "b", "c"])}
    assert ratings["a"].mu == pytest.approx(ratings["b"].mu, rel=1e-3)  # TrueSkill iterates to 1e-4
    assert ratings["a"].mu > 25 > ratings["c"].mu
    assert ratings["a"].firsts == ratings["b"].firsts == 1
    strict = {r.name: r for r in rate([_stored("k", {"a": 1, "b": 2, "c": 3})], ["a", "b", "c"])}
    assert strict["a"].mu > strict["b"].mu


def test_records_count_places_forfeits_and_faults() -> None:
    matches = [
        _stored("k1", {"a": 1, "b": 2, "c": 3}, frozenset({"c"})),
        _stored("k2", {"a": 2, "b": 1, "c": 3}, frozenset({"c"})),
    ]
    ratings = {r.name: r for r in rate(matches, ["a", "b", "c", "idle"])}
    assert ratings["c"].forfeits == 2 and ratings["c"].faults == {"crash": 2}
    assert ratings["a"].avg_place == 1.5 and ratings["a"].firsts == 1
    assert ratings["idle"].matches == 0 and ratings["idle"].avg_place is None
    assert not ratings["idle"].rated and ratings["idle"].score == pytest.approx(0, abs=1e-9)


def test_the_environment_is_explicit_not_global() -> None:
    import trueskill

    env = make_environment(RatingSettings(draw_probability=0.3, tau=0.5))
    assert env.draw_probability == 0.3 and env.tau == 0.5
    assert trueskill.global_env().draw_probability == 0.1
    assert trueskill.global_env().tau == pytest.approx(25 / 300)


def test_the_default_environment_is_tuned_for_bots_that_do_not_change() -> None:
    from referee.rules import RuleSet

    env = make_environment()
    assert (env.mu, env.sigma, env.beta, env.tau) == (25.0, 25 / 3, 25 / 6, 0.0)
    assert env.draw_probability == 0.10
    # Rules that break every tie never share a place: no draw margin at all.
    president = RuleSet.preset("president-es").resolve(4)
    assert make_environment(rules=president).draw_probability == 0.0
    arschloch = RuleSet.preset("arschloch").resolve(4)
    assert make_environment(rules=arschloch).draw_probability == 0.10


def test_with_tau_zero_sigma_only_shrinks() -> None:
    """With ``tau = 0`` a bot's sigma never grows, and a drifting environment's does not
    shrink as far: the drift the default tau adds is what a fixed bot does not have."""
    rng = random.Random(9)
    matches = []
    for i in range(60):
        table = rng.sample(NAMES, 3)
        places = rng.sample([1, 2, 3], 3)
        matches.append(_stored(f"k{i:03d}", dict(zip(table, places, strict=True))))
    sigmas: dict[str, list[float]] = {n: [] for n in NAMES}
    for end in range(1, len(matches) + 1):
        for r in rate(matches[:end], NAMES):
            sigmas[r.name].append(r.sigma)
    for values in sigmas.values():
        assert all(b <= a + 1e-12 for a, b in itertools.pairwise(values))
    drifting = {
        r.name: r.sigma
        for r in rate(matches, NAMES, env=make_environment(RatingSettings(tau=25 / 300)))
    }
    fixed = {r.name: r.sigma for r in rate(matches, NAMES)}
    assert all(fixed[n] < drifting[n] for n in NAMES)


def test_forfeits_share_the_last_place_and_no_forfeit_is_a_first() -> None:
    one = _stored("k1", {"a": 1, "b": 2, "c": 3, "d": 4}, frozenset({"c", "d"}))
    assert rating_places(one) == [("a", 1), ("b", 2), ("c", 3), ("d", 3)]
    ratings = {r.name: r for r in rate([one], NAMES)}
    assert ratings["c"].mu == pytest.approx(ratings["d"].mu, rel=1e-3)  # a draw among them
    assert ratings["c"].mu < ratings["b"].mu
    # Everybody forfeited: the engine still numbers the places 1..4 (by forfeit order).
    everyone = _stored("k2", {"a": 1, "b": 2, "c": 3, "d": 4}, frozenset(NAMES))
    assert {place for _, place in rating_places(everyone)} == {1}
    ratings = {r.name: r for r in rate([everyone], NAMES)}
    assert all(r.firsts == 0 and r.forfeits == 1 for r in ratings.values())
    assert len({round(r.mu, 3) for r in ratings.values()}) == 1


def test_bots_without_a_match_are_unrated_and_listed_last() -> None:
    ratings = rate([_stored("k", {"a": 3, "b": 2, "c": 1})], ["zed", "a", "b", "c", "idle"])
    assert [r.name for r in ratings] == ["c", "b", "a", "idle", "zed"]
    assert [r.rated for r in ratings] == [True, True, True, False, False]


def test_play_offs_are_replayed_after_the_scheduled_matches() -> None:
    keys = ["rr/x/d000/r0", "po/1000/y/d9/r0", "po/000/y/d001/r0", "g/z/m0000/d000/r0"]
    assert sorted(keys, key=replay_order) == [
        "g/z/m0000/d000/r0",
        "rr/x/d000/r0",
        "po/000/y/d001/r0",
        "po/1000/y/d9/r0",
    ]


def test_ratings_and_the_leaderboard_never_import_the_match_runner() -> None:
    """Data flows one way: computing a leaderboard or planning play-offs needs no sandbox."""
    import subprocess
    import sys

    code = (
        "import sys, referee.publish, referee.ranking.playoff, referee.ranking.intervals, referee.ranking.ratings;"
        "print(sorted(m for m in sys.modules if m in ('referee.match.runner', 'referee.sandbox')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_fault_keeps_its_evidence_and_the_bots_stderr(tmp_path: Path) -> None:
    spec = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))[0]
    fault = FaultInfo(
        kind="protocol", detail="not JSON", request_id=7, reply="hi\u2028<b>", elapsed_ms=3
    )
    standings = [
        SeatResult(
            seat=s, name=n, place=s + 1, score=0, forfeit=s == 1, fault=fault if s == 1 else None
        )
        for s, n in enumerate(spec.table)
    ]
    result = MatchResult(
        match=spec.key,
        seed=1,
        rules="arschloch",
        rounds=1,
        log=None,
        standings=standings,
        stderr_tails={1: "started\nboom"},
    )
    with Store(tmp_path) as store:
        store.add_matches([spec], store.deal_secret())
        assert store.fault_reports() == []
        store.record_result(spec.key, result, spec.table)
    with Store(tmp_path) as store:
        [kept] = store.fault_reports()
        [done] = store.completed()
    assert kept.key == spec.key and kept.seat == 1 and kept.name == spec.table[1]
    assert (kept.kind, kept.detail, kept.request_id, kept.reply, kept.elapsed_ms) == (
        "protocol",
        "not JSON",
        7,
        "hi\u2028<b>",
        3,
    )
    assert kept.stderr == "started\nboom"
    assert [s.fault_kind for s in done.seats if s.forfeit] == ["protocol"]


def test_a_store_of_the_previous_schema_is_refused_with_the_restart_hint(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "results.sqlite")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema', '2')")
    db.commit()
    db.close()
    want = rf"schema 2, this one reads {SCHEMA_VERSION}\); run with --restart"
    with pytest.raises(UsageError, match=want):
        Store(tmp_path)
    with pytest.raises(UsageError, match="check it with the version that wrote it"):
        Store(tmp_path, readonly=True)  # how verify opens it: nothing to restart


def test_the_decisions_a_kit_replaced_are_counted_per_entrant(tmp_path: Path) -> None:
    first, second = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))[:2]

    def result(spec: Any, replaced: dict[int, int]) -> MatchResult:
        standings = [
            SeatResult(
                seat=s, name=n, place=s + 1, score=0, forfeit=False, kit_replaced=replaced.get(s, 0)
            )
            for s, n in enumerate(spec.table)
        ]
        return MatchResult(
            match=spec.key, seed=1, rules="arschloch", rounds=1, log=None, standings=standings
        )

    with Store(tmp_path) as store:
        store.add_matches([first, second], store.deal_secret())
        store.record_result(first.key, result(first, {0: 3}), first.table)
        assert store.kit_replacements() == {first.table[0]: (1, 3)}
        store.record_result(second.key, result(second, {0: 1, 2: 2}), second.table)
        counts = store.kit_replacements()
    expected: dict[str, tuple[int, int]] = {}
    for spec, replaced in ((first, {0: 3}), (second, {0: 1, 2: 2})):
        for seat, n in replaced.items():
            matches, decisions = expected.get(spec.table[seat], (0, 0))
            expected[spec.table[seat]] = (matches + 1, decisions + n)
    assert counts == expected and all(n > 0 for _, n in counts.values())


def test_a_snapshot_sees_one_state_while_the_run_commits_results(tmp_path: Path) -> None:
    specs = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))
    with Store(tmp_path) as writer, Store(tmp_path) as reader:
        writer.add_matches(specs, writer.deal_secret())
        with reader.snapshot():
            assert reader.counts()["done"] == 0
            spec = specs[0]
            writer.record_result(spec.key, _result(spec.key, spec.table, [1, 2, 3]), spec.table)
            assert reader.completed() == [] and reader.counts()["done"] == 0
        assert reader.counts()["done"] == 1 and len(reader.completed()) == 1


def test_a_rater_goes_on_from_its_last_replay_only_over_the_same_results() -> None:
    """The play-off loop re-rates after every round: its rater goes on from its last
    replay when that replay's matches start the new one, result for result, and replays
    from the start otherwise. Either way the ratings are those of a fresh replay."""
    rng = random.Random(11)
    matches = []
    for i in range(60):
        table = rng.sample(NAMES, 3)
        matches.append(
            _stored(f"k{i:03d}", dict(zip(table, rng.sample([1, 2, 3], 3), strict=True)))
        )
    rater = Rater()

    def replayed(*args: Any, **kw: Any) -> tuple[int, list[EntrantRating]]:
        """How many matches ``rater`` replayed for this call, and what it returned."""
        before = rater.steps
        result = rater.rate(*args, **kw)
        return rater.steps - before, result

    assert replayed(matches[:40], NAMES)[0] == 40
    steps, grown = replayed(matches, NAMES)
    assert steps == 20  # only the new results
    assert grown == rate(matches, NAMES)
    assert replayed(list(reversed(matches)), NAMES) == (0, grown)  # the replay order is its own

    changed = list(matches)
    first = changed[5]
    changed[5] = _stored(first.spec.key, {s.name: 4 - s.place for s in first.seats})
    for names, env in [
        (NAMES, None),  # one result differs in the prefix
        ([*NAMES, "e"], None),  # other entrants
        ([*NAMES, "e"], make_environment(RatingSettings(beta=3.0))),  # another environment
    ]:
        steps, result = replayed(changed, names, env=env)
        assert steps == 60
        assert result == rate(changed, names, env=env)
    steps, shorter = replayed(matches[:10], NAMES)  # fewer results than the last: from the start
    assert steps == 10 and shorter == rate(matches[:10], NAMES)


def test_a_fault_keeps_the_request_it_answered_and_cuts_a_huge_one(tmp_path: Path) -> None:
    from referee.tournament.store import MAX_REQUEST_BYTES

    specs = round_robin(NAMES, 3, 1, seed=1, secret=bytes(32))[:2]
    small = {"type": "act", "id": 12, "kind": "play", "hand": ["7C", "8H"], "legal": [["7C"]]}
    huge = {**small, "legal": [[f"{i}C"] for i in range(4000)]}
    with Store(tmp_path) as store:
        store.add_matches(specs, store.deal_secret())
        for spec, request in zip(specs, (small, huge), strict=True):
            fault = FaultInfo(
                kind="illegal",
                detail="x",
                request_id=12,
                reply="{}",
                elapsed_ms=1,
                request=request,
                round=3,
            )
            standings = [
                SeatResult(
                    seat=s,
                    name=n,
                    place=s + 1,
                    score=0,
                    forfeit=s == 0,
                    fault=fault if s == 0 else None,
                )
                for s, n in enumerate(spec.table)
            ]
            result = MatchResult(
                match=spec.key, seed=1, rules="arschloch", rounds=1, log=None, standings=standings
            )
            store.record_result(spec.key, result, spec.table)
    with Store(tmp_path) as store:
        kept = {f.key: f for f in store.fault_reports()}
    first, second = (kept[spec.key] for spec in specs)
    assert first.request == small and first.round == 3
    assert second.request is not None and second.round == 3
    assert second.request["hand"] == ["7C", "8H"] and second.request["id"] == 12
    assert second.request["legal"].startswith("4000 legal plays (left out")
    assert len(json.dumps(second.request)) < MAX_REQUEST_BYTES
