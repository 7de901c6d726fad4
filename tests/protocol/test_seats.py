"""Seating a table (referee.protocol.seats.seated): what it refuses, what it cleans up.

In-memory bots (referee.testing.FakeSandbox) on a fake clock: a bot that never answers is
waited out in virtual time.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from referee.match.runner import play_match
from referee.protocol.seats import SessionPool, seated
from referee.rules import RuleSet
from referee.sandbox import Limits, load_bot
from referee.specs import TimeControl
from referee.testing import FakeClock, FakeSandbox, polite_bot, spec

RULES3 = RuleSet.preset("arschloch", target=3).resolve(3)
TC = TimeControl(move_ms=200, bank_ms=200, hello_ms=1000)
POLITE = Path(__file__).resolve().parents[1] / "bots" / "polite.py"


def _ended(sandbox: FakeSandbox) -> list[bool]:
    return [proc.ended is not None for proc in sandbox.started]


class _Broken(Exception):
    """Raised inside a seated block: the match broke off."""


def test_a_pooled_table_has_the_pools_settings_and_refuses_others() -> None:
    sandbox = FakeSandbox({"a": polite_bot})
    pool = SessionPool(sandbox, Limits(), TC)
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"time_control": TimeControl(move_ms=999)}, "a pooled match plays on the pool's time"),
        ({"limits": Limits(memory_mb=64)}, "the pool's bots run with memory 512 MiB"),
        ({"clock": FakeClock()}, "runs on the pool's clock"),
        ({"stage": True}, "a pool's bots outlive the table"),
        ({"sandbox": sandbox}, "either from a sandbox or from a pool"),
    ]

    async def go() -> None:
        for kwargs, says in refusals:
            with pytest.raises(ValueError, match=says):
                async with seated([spec("a")] * 3, pool=pool, **kwargs):
                    pass
        async with seated([spec("a")] * 3, pool=pool, time_control=TC, limits=Limits()) as table:
            assert table.time_control is pool.time_control and table.request_ids is pool.ids
        await pool.aclose()

    asyncio.run(go())
    assert len(sandbox.started) == 3, "the refusals started nothing"


def test_a_table_needs_a_sandbox_or_a_pool() -> None:
    async def go() -> None:
        async with seated([spec("a")] * 3):
            pass

    with pytest.raises(ValueError, match="either from a sandbox or from a pool"):
        asyncio.run(go())


def test_bots_borrowed_for_a_match_that_broke_off_are_stopped_not_kept() -> None:
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    bots = [spec("a"), spec("b"), spec("c")]
    pool = SessionPool(sandbox, Limits(), TC)

    async def go() -> None:
        with pytest.raises(_Broken):
            async with seated(bots, pool=pool, deal_key="d1"):
                raise _Broken()
        assert _ended(sandbox) == [True] * 3
        async with seated(bots, pool=pool, deal_key="d2") as table:
            await play_match(table, RULES3, 2, match_id="m2")
        assert len(sandbox.started) == 6, "fresh processes for the next match"
        assert _ended(sandbox)[3:] == [False] * 3, "given back, still running"
        await pool.aclose()

    asyncio.run(go())
    assert all(_ended(sandbox))


def test_bots_started_for_a_table_are_told_bye_and_stopped_however_the_block_ends() -> None:
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    bots = [spec("a"), spec("b"), spec("c")]

    async def broken() -> None:
        async with seated(bots, sandbox=sandbox, time_control=TC):
            raise _Broken()

    with pytest.raises(_Broken):
        asyncio.run(broken())
    assert all(_ended(sandbox))
    assert [proc.received[-1]["type"] for proc in sandbox.started] == ["bye"] * 3


def _never_answers(what: str) -> Any:
    """A bot that greets (unless ``what`` is ``hello``) and then never answers."""

    def factory() -> Any:
        greet = polite_bot("silent")
        return lambda msg: greet(msg) if msg["type"] == "hello" and what != "hello" else None

    return factory


@pytest.mark.parametrize("during", ["hello", "act"])
def test_a_cancelled_table_stops_every_bot_even_one_being_greeted(during: str) -> None:
    """Ctrl-C and SIGTERM cancel the main task (referee.interrupts): the seating's cleanup
    must stop every bot, the one still answering ``hello`` included."""
    sandbox = FakeSandbox({"silent": _never_answers(during), "b": polite_bot, "c": polite_bot})
    clock = FakeClock()
    patient = TimeControl(move_ms=60_000, bank_ms=0, hello_ms=60_000)

    async def go() -> None:
        async def play() -> None:
            bots = [spec("silent"), spec("b"), spec("c")]
            async with seated(bots, sandbox=sandbox, time_control=patient, clock=clock) as t:
                await play_match(t, RULES3, 1, match_id="cut")

        match = asyncio.create_task(play())
        await clock.sleep(5)  # long enough to be waiting for the silent bot
        assert len(sandbox.started) == 3 and not match.done()
        match.cancel()
        with pytest.raises(asyncio.CancelledError):
            await match

    clock.run(go())
    assert clock.monotonic() == 5
    assert all(_ended(sandbox))


def test_a_pooled_table_cancelled_while_a_bot_starts_stops_the_idle_ones_it_took() -> None:
    """A pooled match takes its idle bots out of the pool, then starts the bots it lacks:
    cancelled then (Ctrl-C, a cluster's stop), the idle ones it took must be stopped too,
    since they are neither lent to the match nor back in the pool."""
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "silent": _never_answers("hello")})
    clock = FakeClock()
    patient = TimeControl(move_ms=60_000, bank_ms=0, hello_ms=60_000)
    pool = SessionPool(sandbox, Limits(), patient, clock=clock)

    async def go() -> None:
        async with seated([spec("a"), spec("b"), spec("a")], pool=pool, deal_key="d1"):
            pass
        assert not any(_ended(sandbox)), "kept for the next match"

        async def next_match() -> None:
            async with seated([spec("a"), spec("b"), spec("silent")], pool=pool, deal_key="d2"):
                pass

        match = asyncio.create_task(next_match())
        await clock.sleep(5)  # the idle a and b are taken; silent is being greeted
        assert len(sandbox.started) == 4 and not match.done()
        match.cancel()
        with pytest.raises(asyncio.CancelledError):
            await match
        await pool.aclose()

    clock.run(go())
    assert all(_ended(sandbox)), [p.spec.name for p in sandbox.started if p.ended is None]


def test_a_staged_table_plays_private_copies_and_removes_them() -> None:
    bot = load_bot(POLITE)
    sandbox = FakeSandbox({bot.name: polite_bot})
    seen: list[Path] = []

    async def go() -> None:
        async with seated([bot] * 3, sandbox=sandbox, stage=True, time_control=TC) as table:
            seen.extend(s.spec.folder for s in table.bots)
            assert all(folder.is_dir() and folder != bot.folder for folder in seen)
            assert len(set(seen)) == 3, "one copy per seat"
            await play_match(table, RULES3, 1, match_id="staged")

    asyncio.run(go())
    assert seen and not any(folder.exists() for folder in seen)
    assert POLITE.is_file(), "the original is untouched"


# --- warm starts: the next match's bots started while this one plays ---------------------

ROTATION_0 = ("a", "b", "c")
ROTATION_1 = ("b", "c", "a")


def _procs(sessions: Any) -> set[int]:
    return {id(s.channel.proc) for s in sessions}


def test_a_warm_pool_starts_the_next_rotations_bots_during_the_match_never_reusing_them() -> None:
    """Told that the next match is another rotation of the same deal, the pool starts three
    fresh processes while this match plays; the next match takes them, greeted, starting
    nothing; none of this match's processes plays the other rotation."""
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    pool = SessionPool(sandbox, Limits(), TC)
    first = [spec(n) for n in ROTATION_0]
    second = [spec(n) for n in ROTATION_1]

    async def go() -> None:
        async with seated(first, pool=pool, deal_key="d1") as table:
            pool.warm(second, "d1")
            assert len(sandbox.started) == 3, "warm returns at once"
            await play_match(table, RULES3, 1, match_id="r0")
            assert len(sandbox.started) == 6, "started while the match played"
        played = _procs(table.bots)
        async with seated(second, pool=pool, deal_key="d1") as again:
            assert len(sandbox.started) == 6, "the match started nothing itself"
            assert not _procs(again.bots) & played, "a process played two rotations of d1"
            assert all(s.fault is None for s in again.bots)
            await play_match(again, RULES3, 2, match_id="r1")
        assert pool.warmed == 3
        await pool.aclose()

    asyncio.run(go())
    assert all(_ended(sandbox))
    for proc in sandbox.started[3:]:
        kinds = [msg["type"] for msg in proc.received]
        assert kinds.count("hello") == 1 and kinds.count("match_start") == 1, kinds


def test_a_warm_pool_keeps_within_its_idle_cap_making_room_first() -> None:
    """A cap of one idle process: one started ahead, the rest when the match comes; an
    idle process the next match cannot use is stopped to make room."""
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    pool = SessionPool(sandbox, Limits(), TC, max_idle_total=1)
    first = [spec(n) for n in ROTATION_0]
    second = [spec(n) for n in ROTATION_1]

    async def go() -> None:
        async with seated(first, pool=pool, deal_key="d0") as table:
            await play_match(table, RULES3, 0, match_id="d0")
        assert sum(p.ended is None for p in sandbox.started) == 1, "one kept idle"
        async with seated(first, pool=pool, deal_key="d1") as table:
            assert len(sandbox.started) == 5, "the one kept played d1; two fresh"
            pool.warm(second, "d1")
            await play_match(table, RULES3, 1, match_id="r0")
        assert pool.warmed == 1 and len(sandbox.started) == 6
        async with seated(second, pool=pool, deal_key="d1") as again:
            assert len(sandbox.started) == 8, "one warm, two started for the match"
            await play_match(again, RULES3, 2, match_id="r1")
        await pool.aclose()

    asyncio.run(go())
    assert all(_ended(sandbox))


def test_a_bot_that_fails_hello_when_started_ahead_is_not_seated() -> None:
    """The warm start of a bot whose second process never greets: the match starts its own
    process rather than seat a faulted one, and nobody forfeits."""
    starts = {"a": 0}

    def flaky() -> Any:
        starts["a"] += 1
        return _never_answers("hello")() if starts["a"] == 2 else polite_bot("a")

    sandbox = FakeSandbox({"a": flaky, "b": polite_bot, "c": polite_bot})
    clock = FakeClock()
    pool = SessionPool(sandbox, Limits(), TC, clock=clock)
    first = [spec(n) for n in ROTATION_0]
    second = [spec(n) for n in ROTATION_1]

    async def go() -> None:
        async with seated(first, pool=pool, deal_key="d1") as table:
            pool.warm(second, "d1")
            await play_match(table, RULES3, 1, match_id="r0")
        async with seated(second, pool=pool, deal_key="d1") as again:
            assert all(s.fault is None for s in again.bots)
            result = await play_match(again, RULES3, 2, match_id="r1")
        assert not any(s.forfeit for s in result.standings)
        assert starts["a"] == 3, "started again for the match"
        await pool.aclose()

    clock.run(go())
    assert all(_ended(sandbox))


def test_closing_a_pool_stops_the_bots_it_is_starting_ahead() -> None:
    """Closed (the worker exits) while bots start ahead: whatever was started is stopped."""

    class Slow(FakeSandbox):
        async def start(self, bot: Any, limits: Limits) -> Any:
            await asyncio.sleep(0.01)
            return await super().start(bot, limits)

    sandbox = Slow({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    pool = SessionPool(sandbox, Limits(), TC)

    async def go() -> None:
        async with seated([spec(n) for n in ROTATION_0], pool=pool, deal_key="d1"):
            pool.warm([spec(n) for n in ROTATION_1], "d1")
        await asyncio.sleep(0.005)  # half-way through their start
        await pool.aclose()
        await asyncio.sleep(0.05)  # long enough for a start that was not stopped to end
        assert all(_ended(sandbox)), "a bot started ahead outlived its pool"

    asyncio.run(go())


def test_a_warm_start_never_stops_an_idle_process_the_coming_match_would_take() -> None:
    """At its cap, a pool makes room for a warm start with idle processes the coming match
    cannot use or has no seat for, never with one it would take."""
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    pool = SessionPool(sandbox, Limits(), TC, max_idle_total=3)

    async def settle() -> None:
        for _ in range(20):
            await asyncio.sleep(0)

    def alive() -> list[str]:
        return sorted(p.spec.name for p in sandbox.started if p.ended is None)

    async def go() -> None:
        async with seated([spec("a"), spec("a"), spec("c")], pool=pool, deal_key="d0") as table:
            await play_match(table, RULES3, 0, match_id="d0")
        assert alive() == ["a", "a", "c"]
        pool.warm([spec("a"), spec("b"), spec("c")], "d1")  # one a is spare: room for b
        await settle()
        assert len(sandbox.started) == 4 and alive() == ["a", "b", "c"]
        pool.warm([spec("a"), spec("a"), spec("b"), spec("c")], "d1")  # none spare: no room
        await settle()
        assert len(sandbox.started) == 4 and alive() == ["a", "b", "c"]
        await pool.aclose()

    asyncio.run(go())


def test_closing_behind_counts_against_the_cap_and_makes_room_when_done() -> None:
    """``close_behind``: a process given up is stopped in the background, counted as kept
    until it is gone (the memory budget counts it), and its room then goes to what the
    coming match still lacks; a process serves one block only, as in bot check's pool."""
    stopping = asyncio.Event()

    live: set[int] = set()  # processes started and not cleaned up (a container not removed)

    class SlowStop(FakeSandbox):
        async def start(self, bot: Any, limits: Limits) -> Any:
            proc = await super().start(bot, limits)
            cleanup = proc.cleanup
            live.add(id(proc))

            async def slow_cleanup() -> Any:
                # Bounded: a failed assertion's cleanup must not wait for ever.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), 5)
                live.discard(id(proc))
                return await cleanup()

            proc.cleanup = slow_cleanup  # type: ignore[method-assign]
            return proc

    sandbox = SlowStop({"a": polite_bot})
    pool = SessionPool(sandbox, Limits(), TC, max_matches=1, max_idle_total=2, close_behind=True)

    def alive() -> int:
        return len(live)

    async def settle() -> None:
        for _ in range(20):
            await asyncio.sleep(0)

    async def go() -> None:
        async with seated([spec("a")], pool=pool) as table:
            pool.warm([spec("a")] * 3, None)
            await settle()
            assert len(sandbox.started) == 3, "two ahead: the cap"
            used = _procs(table.bots)
        await settle()
        assert alive() == 3, "the used one is being stopped behind, and counted"
        async with seated([spec("a")], pool=pool) as table:
            assert not _procs(table.bots) & used, "a fresh process for each block"
            pool.warm([spec("a")] * 3, None)
            await settle()
            assert len(sandbox.started) == 3, "no room while one is being stopped"
            stopping.set()
            await settle()
            assert len(sandbox.started) == 4, "its room went to the coming match"
            assert alive() == 3
        await pool.aclose()
        assert alive() == 0

    asyncio.run(go())


def test_a_pooled_process_never_serves_two_matches_of_one_compared_deal() -> None:
    """Both halves of a ``referee compare`` pair and all their rotations are one deal: a
    process kept between matches serves at most one of them, and is reused for others."""
    from referee.tournament.scheduler import HALVES, compare

    names = ["new", "old", "f1", "f2"]
    sandbox = FakeSandbox({name: polite_bot for name in names})
    pool = SessionPool(sandbox, Limits(), TC, max_idle=4)
    specs = compare("new", "old", ["f1", "f2"], 3, 3, 0, b"x" * 32)
    specs.sort(key=lambda s: (s.rotation, HALVES.index(s.key.split("/")[2]), s.deal))
    served: dict[int, list[str]] = {}

    async def go() -> None:
        for match in specs:
            bots = [spec(name) for name in match.table]
            async with seated(bots, pool=pool, deal_key=match.deal_id) as table:
                for session in table.bots:
                    served.setdefault(id(session), []).append(match.deal_id)
                await play_match(table, RULES3, match.match_seed, match_id=match.key)
        await pool.aclose()

    asyncio.run(go())
    assert len(specs) == 18
    assert all(len(deals) == len(set(deals)) for deals in served.values())
    assert max(len(deals) for deals in served.values()) > 1, "processes were reused"
