"""What a match records so that a fault, or a mistake the kit hid, is told from what happened.

Scripted bots on the in-memory sandbox: a bot that answered requests in time and then spent
its bank, one that never answered, one that answers events, one that forgot the id, and
bots whose kit replaced decisions (the marker lines on stderr, protocol/SPEC.md: the kits'
safety net). The real kits and processes are in tests/test_kits.py and tests/test_bot_check.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from referee.explain import HINTS, explain_fault, fault_summary
from referee.match.runner import play_match
from referee.protocol.channel import LineChannel
from referee.protocol.kit import KIT_MARKER, KIT_NOTES, read_marker
from referee.protocol.seats import SessionPool, seated
from referee.results import MatchResult, SeatResult
from referee.rules import RuleSet
from referee.sandbox import Limits
from referee.specs import TimeControl
from referee.testing import FakeBotProcess, FakeClock, FakeSandbox, Stderr, polite_bot, spec

RULES3 = RuleSet.preset("arschloch", target=5).resolve(3)
FAST = TimeControl(move_ms=100, bank_ms=100, hello_ms=1000)
ROOMY = TimeControl(move_ms=10_000, bank_ms=10_000, hello_ms=10_000)
"""For tests of counting, not of time: on a loaded machine (CI beside other runs) a fake bot
may wait past FAST's 200 ms, forfeit, and end the match early."""


def play(handlers: dict[str, Any], tc: TimeControl = FAST, clock: FakeClock | None = None) -> Any:
    sandbox = FakeSandbox(handlers)
    clock = clock or FakeClock()

    async def go() -> MatchResult:
        bots = [spec(n) for n in handlers]
        async with seated(bots, sandbox=sandbox, time_control=tc, clock=clock) as table:
            return await play_match(table, RULES3, 3, match_id="hints", log_path=None)

    return clock.run(go())


def seat0(result: MatchResult) -> SeatResult:
    return next(st for st in result.standings if st.seat == 0)


def hints(lines: Sequence[str]) -> list[str]:
    return [line.removeprefix("hint: ") for line in lines if line.startswith("hint: ")]


# -- timeouts: slow, or never flushed --------------------------------------------------------


def test_a_bot_that_answered_in_time_then_spent_its_bank_is_told_it_is_too_slow() -> None:
    clock = FakeClock()

    def slowing() -> Any:
        inner = polite_bot("slowing")
        acts = 0

        def handle(msg: dict[str, Any]) -> Any:
            nonlocal acts
            if msg.get("type") == "act":
                acts += 1
                if acts > 4:
                    clock.advance(0.13)  # 30 ms over move_ms each: the bank runs out
            return inner(msg)

        return handle

    result = play({"slowing": slowing, "b": polite_bot, "c": polite_bot}, clock=clock)
    fault = seat0(result).fault
    assert fault is not None and fault.kind == "timeout" and fault.reply is None
    assert fault.answered is not None and fault.answered >= 5  # 4 quick, then slow ones
    lines = explain_fault(fault, "")
    assert hints(lines) == [
        f"too slow: answered {fault.answered} requests in time, then spent its bank; think "
        "less per move (every act carries bank_ms, the time left in the bank: stop well "
        "before move_ms)"
    ]
    assert HINTS["flush"] not in hints(lines)


def test_a_bot_that_never_answered_is_told_to_flush() -> None:
    def greets_only() -> Any:
        greet = polite_bot("mute")
        return lambda msg: greet(msg) if msg.get("type") == "hello" else None

    fault = seat0(play({"mute": greets_only, "b": polite_bot, "c": polite_bot})).fault
    assert fault is not None and fault.kind == "timeout" and fault.answered == 0
    assert hints(explain_fault(fault, "")) == [HINTS["flush"]]


def test_one_request_answered_is_said_in_the_singular() -> None:
    def once() -> Any:
        inner = polite_bot("once")
        acts = 0

        def handle(msg: dict[str, Any]) -> Any:
            nonlocal acts
            acts += msg.get("type") == "act"
            return None if acts > 1 else inner(msg)

        return handle

    fault = seat0(play({"once": once, "b": polite_bot, "c": polite_bot})).fault
    assert fault is not None and fault.answered == 1
    assert hints(explain_fault(fault))[0].startswith("too slow: answered 1 request in time")


def test_a_fault_at_hello_counts_no_answers() -> None:
    fault = seat0(play({"mute": lambda: lambda msg: None, "b": polite_bot, "c": polite_bot})).fault
    assert fault is not None and fault.answered is None
    assert HINTS["flush"] in hints(explain_fault(fault))


# -- replies to events ---------------------------------------------------------------------


def answers_events(reply: Any) -> Any:
    """A polite bot that also writes ``reply(msg)`` for every event it is sent."""

    def factory() -> Any:
        inner = polite_bot("chatty")

        def handle(msg: dict[str, Any]) -> Any:
            if "id" in msg:
                return inner(msg)
            return reply(msg)

        return handle

    return factory


@pytest.mark.parametrize(
    "reply",
    [
        lambda msg: {"id": msg.get("id"), "cards": []},  # Python's msg.get("id"): null
        lambda msg: {"cards": []},  # JavaScript's undefined: left out
        lambda msg: {"type": "ok", "seen": msg["type"]},
        lambda msg: {"id": 0, "cards": []} if msg["type"] == "round_start" else None,
    ],
)
def test_a_reply_to_an_event_is_named_so(reply: Any) -> None:
    result = play({"chatty": answers_events(reply), "b": polite_bot, "c": polite_bot})
    fault = seat0(result).fault
    assert fault is not None and fault.kind == "protocol"
    assert fault.detail.startswith("replied to an event; events need no answer (this line came")
    assert f"before request {fault.request_id}; its reply to the request came later)" in (
        fault.detail
    )
    lines = explain_fault(fault, "")
    assert "missing field" not in "\n".join(lines)
    assert hints(lines) == [HINTS["event_reply"]]
    assert "common mistakes: answering events" in HINTS["event_reply"]


def test_a_reply_that_forgot_its_id_is_not_taken_for_an_event_reply() -> None:
    def forgetful() -> Any:
        inner = polite_bot("forgetful")

        def handle(msg: dict[str, Any]) -> Any:
            out: Any = inner(msg)
            if msg.get("type") == "act":
                out = {k: v for k, v in out.items() if k != "id"}
            return out

        return handle

    fault = seat0(play({"forgetful": forgetful, "b": polite_bot, "c": polite_bot})).fault
    assert fault is not None and fault.detail == "reply is missing field 'id'"
    assert hints(explain_fault(fault)) == [HINTS["shape"]]


def test_a_reply_to_the_last_events_of_a_match_is_named_at_the_next_match() -> None:
    """``round_end`` and ``match_end`` come with no request after them: a bot answering
    them writes lines nobody asked for, found when its process plays its next match."""
    thanks = answers_events(lambda msg: {"thanks": True} if msg["type"] == "match_end" else None)
    sandbox = FakeSandbox({"thanks": thanks, "b": polite_bot, "c": polite_bot})
    bots = [spec("thanks"), spec("b"), spec("c")]

    async def go() -> list[MatchResult]:
        pool = SessionPool(sandbox, Limits(), FAST)
        results = []
        for n in (1, 2):
            async with seated(bots, pool=pool, deal_key=f"deal-{n}") as table:
                results.append(await play_match(table, RULES3, n, match_id=f"m{n}"))
        await pool.aclose()
        return results

    first, second = asyncio.run(go())
    assert seat0(first).fault is None
    fault = seat0(second).fault
    assert fault is not None and fault.kind == "protocol" and fault.request_id is None
    assert fault.detail == (
        "replied to an event; events need no answer (a line after the last events, when no "
        "request was outstanding)"
    )
    assert fault_summary(fault) == f"protocol: the bot {fault.detail}"
    assert hints(explain_fault(fault)) == [HINTS["event_reply"]]


def test_a_stray_line_after_a_reply_is_still_one_nobody_asked_for() -> None:
    def twice() -> Any:
        inner = polite_bot("twice")

        def handle(msg: dict[str, Any]) -> Any:
            out = inner(msg)
            if msg.get("type") == "act":
                return [out, {"id": msg["id"], "cards": []}]
            return out

        return handle

    fault = seat0(play({"twice": twice, "b": polite_bot, "c": polite_bot})).fault
    assert fault is not None
    assert fault.detail == "sent a line nobody asked for (no request was outstanding)"


# -- the kits' safety net: marker lines on stderr ----------------------------------------------


def marker(msg: dict[str, Any], decided: Any, sent: Any, why: str = "not allowed") -> Stderr:
    data = {"id": msg["id"], "kind": msg["kind"], "decided": decided, "sent": sent, "why": why}
    return Stderr(KIT_MARKER + json.dumps(data).encode() + b"\n")


def kit_on_follow() -> Any:
    """A polite bot whose 'kit' replaces its lowest card played to follow, and says so."""
    inner = polite_bot("kit")

    def handle(msg: dict[str, Any]) -> Any:
        out: Any = inner(msg)
        if msg.get("type") == "act" and msg["kind"] == "play" and msg["trick"]["count"]:
            return [marker(msg, msg["hand"][:1], out["cards"]), Stderr(b"my own log\n"), out]
        return out

    return handle


def test_the_decisions_a_kit_replaced_are_counted_with_their_requests() -> None:
    result = play({"kit": kit_on_follow, "b": polite_bot, "c": polite_bot})
    mine = seat0(result)
    assert mine.fault is None and mine.kit_replaced >= 1
    assert len(mine.kit_replacements) == min(mine.kit_replaced, KIT_NOTES)
    first = mine.kit_replacements[0]
    assert first.why == "not allowed" and first.kind == "play" and first.request is not None
    assert first.request["id"] == first.request_id and first.request["trick"]["count"] >= 1
    assert first.decided == first.request["hand"][:1]
    assert all(st.kit_replaced == 0 for st in result.standings if st.seat != 0)


def test_the_count_is_per_match() -> None:
    sandbox = FakeSandbox({"kit": kit_on_follow, "b": polite_bot, "c": polite_bot})
    bots = [spec("kit"), spec("b"), spec("c")]

    async def go() -> list[MatchResult]:
        pool = SessionPool(sandbox, Limits(), ROOMY)
        results: list[MatchResult] = []
        for n in (3, 3):
            async with seated(bots, pool=pool, deal_key=f"deal-{len(results)}") as table:
                results.append(await play_match(table, RULES3, n, match_id=f"m{len(results)}"))
        await pool.aclose()
        return results

    first, second = asyncio.run(go())
    assert len(sandbox.started) == 3  # one process played both
    assert not any(st.forfeit for m in (first, second) for st in m.standings)
    assert seat0(first).kit_replaced == seat0(second).kit_replaced >= 1


def _channel_counts(pieces: Sequence[bytes]) -> tuple[int, list[bytes]]:
    """Feed ``pieces`` to a channel's stderr one read at a time; its marker count and notes."""

    async def go() -> tuple[int, list[bytes]]:
        proc = FakeBotProcess(spec("x"), lambda msg: None)
        channel = LineChannel(proc)
        for piece in pieces:
            proc.stderr.feed_data(piece)
            for _ in range(3):
                await asyncio.sleep(0)
        proc.stderr.feed_eof()
        for _ in range(3):
            await asyncio.sleep(0)
        counted = channel.kit_replaced, list(channel.kit_notes)
        await channel.close()
        return counted

    return asyncio.run(go())


STDERR = (
    b"thinking\n"
    + KIT_MARKER
    + b'{"id":4,"kind":"play","decided":["8H"],"sent":[],"why":"not allowed"}\n'
    + b"not a marker: "
    + KIT_MARKER
    + b"{}\n"
    + b"  "
    + KIT_MARKER
    + b"{}\n"
    + KIT_MARKER
    + b'{"id":9,"kind":"give","decided":null,"sent":["7C"],"why":"raised"}\n'
    + b"done\n"
)


def test_markers_are_counted_only_at_a_line_start_however_the_stream_is_cut() -> None:
    for cut in range(1, len(STDERR)):
        count, notes = _channel_counts([STDERR[:cut], STDERR[cut:]])
        assert count == 2, cut
        assert [read_marker(n).request_id for n in notes] == [4, 9], cut
    count, _ = _channel_counts([bytes([b]) for b in STDERR])
    assert count == 2


def test_a_flood_of_markers_is_counted_and_only_the_first_are_kept() -> None:
    line = KIT_MARKER + b'{"id":1}\n'
    count, notes = _channel_counts([line * 50_000, b"x" * 200_000 + b"\n", line * 3, KIT_MARKER])
    assert count == 50_004  # the last one has no end of line: counted at the end of stderr
    assert len(notes) == KIT_NOTES
    assert _channel_counts([b"x" * 200_000, line])[0] == 0  # mid-line: not a marker


def test_a_marker_the_referee_cannot_read_still_counts() -> None:
    count, notes = _channel_counts([KIT_MARKER + b"{not json\n", KIT_MARKER + b"[1,2]\n"])
    assert count == 2
    assert [read_marker(n).why for n in notes] == ["unreadable marker"] * 2
