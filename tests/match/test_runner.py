"""Fast match-runner tests with in-memory bots (referee.testing.FakeSandbox).

They run in virtual time (referee.testing.FakeClock): a timeout is waited out at once, and
a bot that takes its time says so by moving the clock.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main as cli_main
from referee.errors import InfrastructureError
from referee.match.runner import EventTranslator, _act_play_line, play_match
from referee.matchlog import read_log
from referee.protocol import messages as m
from referee.protocol.channel import UNASKED_CAP
from referee.protocol.seats import SessionPool, seated
from referee.protocol.session import BotSession, distinct_names
from referee.results import MatchResult
from referee.rules import RuleSet, replay
from referee.rules import events as ev
from referee.rules.engine import EngineMemo, Game
from referee.sandbox import BotSpec, ExitInfo, Limits
from referee.specs import TimeControl
from referee.testing import FakeBotProcess, FakeClock, FakeSandbox, lowest_bot, polite_bot, spec

RULES3 = RuleSet.preset("arschloch", target=5).resolve(3)
FAST = TimeControl(move_ms=200, bank_ms=200, hello_ms=1000)


def run(
    handlers: dict[str, Any],
    tc: TimeControl = FAST,
    rules: Any = RULES3,
    tmp: Any = None,
    clock: FakeClock | None = None,
) -> Any:
    sandbox = FakeSandbox(handlers)
    log = tmp / "m.jsonl" if tmp is not None else None
    clock = clock or FakeClock()

    async def go() -> MatchResult:
        bots = [spec(n) for n in handlers]
        async with seated(bots, sandbox=sandbox, time_control=tc, clock=clock) as table:
            return await play_match(table, rules, 3, match_id="test-3", log_path=log)

    return clock.run(go()), sandbox


async def pooled(
    pool: SessionPool, bots: Sequence[BotSpec], seed: int, match_id: str, deal_key: str
) -> MatchResult:
    """One match of ``bots`` borrowed from ``pool`` (and given back)."""
    async with seated(bots, pool=pool, deal_key=deal_key) as table:
        return await play_match(table, RULES3, seed, match_id=match_id)


def test_act_play_line_matches_the_model() -> None:
    args: dict[str, Any] = dict(
        id=7,
        hand=["8H", "8D", "JC", "AS"],
        trick={"leader": 2, "count": 0, "top": []},
        passed=[],
        legal=[["8H"], ["8H", "8D"], ["JC"], ["AS"]],
        bank_ms=10000,
        counts=[4, 7, 0, 5],
    )
    line = _act_play_line(7, args["hand"], args["trick"], [], args["legal"], 10000, [4, 7, 0, 5])
    model = m.ActPlay(**args)  # validated
    assert json.loads(line) == json.loads(m.encode(model))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    args.update(passed=[0, 3], trick={"leader": 1, "count": 1, "top": ["7C"]})
    line = _act_play_line(7, args["hand"], args["trick"], [0, 3], args["legal"], 0, [4, 7, 0, 5])
    args["bank_ms"] = 0
    assert line == m.encode(m.ActPlay(**args)), "byte for byte, as the model writes it"


def test_a_public_event_is_encoded_once_per_codec_in_that_codecs_card_names() -> None:
    """The memo of encoded events is the codec's own (it was keyed by id() of a codec, an
    id that an evicted codec could pass on to another deck's), and the codec is the engine
    memo's: shared by the games its owner plays, never by a game that has its own."""
    played = ev.Played("played", 0, (0,))  # card 0: the lowest card, whatever the deck
    seen: dict[Any, Any] = {}
    engine_memo = EngineMemo()
    for preset in ("arschloch", "arschloch-52", "trou-du-cul", "arschloch"):
        game = Game(RuleSet.preset(preset).resolve(3), ["a", "b", "c"], 1, memo=engine_memo)
        memo = game.codec.encodings()
        expected = b'{"type":"played","seat":0,"cards":["%s"]}\n' % game.codec.names[0].encode()
        assert EventTranslator(game).messages(played) == [(None, expected)]
        assert memo[played] == expected
        seen.setdefault(preset, memo)
        assert seen[preset] is memo  # one memo for every game of one deck and rank order
    assert [seen[p][played] for p in seen] == [
        b'{"type":"played","seat":0,"cards":["7C"]}\n',
        b'{"type":"played","seat":0,"cards":["2C"]}\n',
        b'{"type":"played","seat":0,"cards":["3C"]}\n',
    ]
    alone = Game(RuleSet.preset("arschloch").resolve(3), ["a", "b", "c"], 1)
    assert alone.codec.encodings() is not seen["arschloch"]  # no memo given: its own


def test_every_line_sent_is_valid_protocol(tmp_path: Any) -> None:
    result, sandbox = run({"a": lowest_bot, "b": polite_bot, "c": polite_bot}, tmp=tmp_path)
    for proc in sandbox.started:
        for msg in proc.received:
            m.parse_to_bot(msg)
        assert proc.received[0]["type"] == "hello"
        assert proc.received[-1]["type"] == "bye"
    lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    replay(lines)
    assert not any(s.forfeit for s in result.standings)


def test_each_seat_sees_only_its_own_hand() -> None:
    _result, sandbox = run({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    hands = [
        {tuple(msg["hand"]) for msg in proc.received if msg["type"] == "round_start"}
        for proc in sandbox.started
    ]
    assert not (hands[0] & hands[1]) and not (hands[1] & hands[2])
    received = [
        msg for proc in sandbox.started for msg in proc.received if msg["type"] == "received"
    ]
    exchanged = [msg for msg in sandbox.started[0].received if msg["type"] == "exchanged"]
    assert exchanged and all("cards" not in msg for msg in exchanged)
    assert len(received) == len(exchanged)


def test_slow_replies_spend_the_bank_then_time_out() -> None:
    clock = FakeClock()

    def slow() -> Any:
        inner = polite_bot("slow")

        def handle(msg: dict[str, Any]) -> Any:
            if msg.get("type") == "act":
                clock.advance(0.12)  # 120 ms of a 100 ms move: 20 ms from the bank each time
            return inner(msg)

        return handle

    tc = TimeControl(move_ms=100, bank_ms=50, hello_ms=1000)
    result, sandbox = run({"slow": slow, "b": polite_bot, "c": polite_bot}, tc=tc, clock=clock)
    seat0 = result.standings[-1]
    assert seat0.seat == 0 and seat0.fault is not None
    # The third reply's 120 ms pass inside write(), past the 110 ms left: the budget's
    # timer goes off before the line is read.
    assert seat0.fault.kind == "timeout"
    assert seat0.fault.detail == "no reply within 110 ms (move_ms + bank left)"
    assert seat0.fault.elapsed_ms == 120
    banks = [msg["bank_ms"] for msg in sandbox.started[0].received if msg.get("kind") == "play"]
    assert banks == [50, 30, 10]


def test_a_bot_that_never_answers_times_out_after_move_ms_plus_its_bank() -> None:
    def greets_only() -> Any:
        greet = polite_bot("mute")
        return lambda msg: greet(msg) if msg.get("type") == "hello" else None

    clock = FakeClock()
    result, _ = run({"mute": greets_only, "b": polite_bot, "c": polite_bot}, clock=clock)
    seat0 = next(s for s in result.standings if s.seat == 0)
    assert seat0.fault is not None and seat0.fault.kind == "timeout"
    assert seat0.fault.detail == "no reply within 400 ms (move_ms + bank left)"
    assert seat0.fault.elapsed_ms == 400  # to the millisecond: the clock waited it out
    assert clock.monotonic() >= 0.4


def test_unsolicited_line_is_a_protocol_fault() -> None:
    def chatty() -> Any:
        inner = polite_bot("chatty")

        def handle(msg: dict[str, Any]) -> Any:
            out = inner(msg)
            if msg.get("type") == "act":
                return json.dumps(out).encode() + b"\n" + b'{"note":"hi"}\n'
            return out

        return handle

    result, _ = run({"chatty": chatty, "b": polite_bot, "c": polite_bot})
    fault = next(s.fault for s in result.standings if s.seat == 0)
    assert fault is not None and fault.kind == "protocol"
    assert "no request was outstanding" in fault.detail


def test_hello_without_ready_is_a_fault_and_the_match_still_runs() -> None:
    def mute() -> Any:
        return lambda msg: None

    clock = FakeClock()
    result, _ = run({"mute": mute, "b": polite_bot, "c": polite_bot}, clock=clock)
    seat0 = next(s for s in result.standings if s.seat == 0)
    assert seat0.forfeit and seat0.fault is not None
    assert seat0.fault.detail == "timed out answering hello after 1000 ms"
    assert seat0.fault.elapsed_ms == 1000
    assert result.rounds >= 1


def test_distinct_names() -> None:
    assert distinct_names(["a", "b", "a", "a"]) == ["a#1", "b", "a#2", "a#3"]
    assert distinct_names(["x", "y", "z"]) == ["x", "y", "z"]


def test_session_pool_reuses_processes_but_never_across_rotations_of_a_deal() -> None:
    from referee.sandbox import Limits

    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    bots = [spec("a"), spec("b"), spec("c")]

    async def go() -> None:
        pool = SessionPool(sandbox, Limits(), FAST)
        await pooled(pool, bots, 1, "m1", "deal-1")
        assert len(sandbox.started) == 3
        await pooled(pool, bots, 2, "m2", "deal-2")
        assert len(sandbox.started) == 3, "a new deal reuses the processes"
        await pooled(pool, bots[1:] + bots[:1], 1, "m1r", "deal-1")
        assert len(sandbox.started) == 6, "another rotation of deal-1 needs fresh processes"
        await pool.aclose()

    asyncio.run(go())
    first = sandbox.started[0].received
    assert [msg["type"] for msg in first].count("hello") == 1
    assert [msg["type"] for msg in first].count("match_start") == 2
    assert first[-1]["type"] == "bye"


def test_session_pool_freezes_idle_bots_and_thaws_them_before_the_next_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every bot is frozen between matches and thawed before its next match_start (and
    before its bye): nothing is ever written to a frozen bot."""

    async def freeze(self: FakeBotProcess) -> None:
        self.received.append({"type": "(frozen)"})

    async def thaw(self: FakeBotProcess) -> None:
        if self.received and self.received[-1]["type"] == "(frozen)":
            self.received.append({"type": "(thawed)"})

    monkeypatch.setattr(FakeBotProcess, "freeze", freeze)
    monkeypatch.setattr(FakeBotProcess, "thaw", thaw)
    sandbox = FakeSandbox({"a": polite_bot, "b": polite_bot, "c": polite_bot})
    bots = [spec("a"), spec("b"), spec("c")]

    async def go() -> None:
        pool = SessionPool(sandbox, Limits(), FAST)
        for n in (1, 2):
            await pooled(pool, bots, n, f"m{n}", f"d{n}")
        await pool.aclose()

    asyncio.run(go())
    assert len(sandbox.started) == 3
    for process in sandbox.started:
        kinds = [msg["type"] for msg in process.received]
        assert kinds.count("(frozen)") == 2 and kinds.count("(thawed)") == 2, kinds
        for i, kind in enumerate(kinds):
            if kind == "(frozen)":
                assert kinds[i + 1] == "(thawed)", kinds  # nothing reaches a frozen bot
        second = [i for i, kind in enumerate(kinds) if kind == "match_start"][1]
        assert kinds[second - 1] == "(thawed)"
        assert kinds[-2:] == ["(thawed)", "bye"]


def test_session_pool_drops_a_faulted_process() -> None:
    from referee.sandbox import Limits

    def flaky() -> Any:
        inner = polite_bot("flaky")
        state = {"acts": 0}

        def handle(msg: dict[str, Any]) -> Any:
            if msg.get("type") == "act":
                state["acts"] += 1
                if state["acts"] == 3:
                    return b"oops\n"
            return inner(msg)

        return handle

    sandbox = FakeSandbox({"flaky": flaky, "b": polite_bot, "c": polite_bot})
    bots = [spec("flaky"), spec("b"), spec("c")]

    async def go() -> None:
        pool = SessionPool(sandbox, Limits(), FAST)
        result = await pooled(pool, bots, 1, "m1", "d1")
        assert result.standings[-1].fault is not None
        await pooled(pool, bots, 2, "m2", "d2")
        await pool.aclose()

    asyncio.run(go())
    assert [p.spec.name for p in sandbox.started] == ["flaky", "b", "c", "flaky"]


def test_session_pool_keeps_every_seat_of_a_bot_that_fills_the_table() -> None:
    from referee.sandbox import Limits

    sandbox = FakeSandbox({"a": polite_bot})
    bots = [spec("a"), spec("a"), spec("a")]

    async def go() -> None:
        pool = SessionPool(sandbox, Limits(), FAST, max_idle=1)
        for i in range(3):
            await pooled(pool, bots, i, f"m{i}", f"d{i}")
        await pool.aclose()

    asyncio.run(go())
    assert len(sandbox.started) == 3


def test_session_pool_keeps_at_most_max_idle_total_closing_the_longest_idle() -> None:
    """Each idle process holds a memory limit's worth of promise: the pool keeps a bounded
    number in all, whatever the number of bots a worker meets."""
    names = [f"b{i}" for i in range(9)]
    sandbox = FakeSandbox({n: polite_bot for n in names})

    async def alive() -> int:
        return sum([await p.wait(0) is None for p in sandbox.started])

    async def go() -> None:
        pool = SessionPool(sandbox, Limits(), FAST, max_idle_total=4)
        for i, first in enumerate((0, 3, 6)):
            table = [spec(n) for n in names[first : first + 3]]
            await pooled(pool, table, i, f"m{i}", f"d{i}")
            assert await alive() == min(4, 3 * (i + 1))
        kept = [p.spec.name for p in sandbox.started if await p.wait(0) is None]
        assert kept == ["b5", "b6", "b7", "b8"], "the longest idle went first"
        # The default: as many as the largest table seated.
        default = SessionPool(sandbox, Limits(), FAST)
        for i, first in enumerate((0, 3)):
            table = [spec(n) for n in names[first : first + 3]]
            await pooled(default, table, i, f"n{i}", f"e{i}")
        assert await alive() == 4 + 3
        await default.aclose()
        await pool.aclose()
        assert await alive() == 0

    asyncio.run(go())


class _KilledForMemory(FakeBotProcess):
    """A fake bot that the kernel kills at its first ``act``: ``outside`` its own limit
    (memory ran out above it) or at it."""

    outside = True
    reaped = False

    async def cleanup(self) -> ExitInfo:
        self.reaped = True
        return await super().cleanup()

    async def write(self, data: bytes) -> None:
        if b'"type":"act"' in data and self._exit is None:
            self._exit = ExitInfo(
                returncode=-9, signal=9, oom_killed=not self.outside, outside_oom=self.outside
            )
            self.stdout.feed_eof()
            self.stderr.feed_eof()
            self._done.set()
            raise BrokenPipeError("killed")
        await super().write(data)


@pytest.mark.parametrize("outside", [True, False])
def test_a_bot_killed_for_memory_outside_its_limit_fails_the_match_on_our_side(
    outside: bool,
) -> None:
    class Sandbox(FakeSandbox):
        async def start(self, bot: Any, limits: Limits) -> FakeBotProcess:
            if bot.name != "victim":
                return await super().start(bot, limits)
            proc = _KilledForMemory(bot, polite_bot())
            proc.outside = outside
            self.started.append(proc)
            return proc

    sandbox = Sandbox({"a": polite_bot, "b": polite_bot})
    bots = [spec("victim"), spec("a"), spec("b")]
    pool = SessionPool(sandbox, Limits(), FAST)

    async def go() -> MatchResult:
        try:
            return await pooled(pool, bots, 1, "m", "d")
        finally:
            await pool.aclose()

    if outside:
        with pytest.raises(
            InfrastructureError,
            match="killed by the kernel's out-of-memory killer within its own memory limit",
        ):
            asyncio.run(go())
    else:
        seat0 = next(st for st in asyncio.run(go()).standings if st.seat == 0)
        assert seat0.fault is not None and seat0.fault.kind == "crash"
        assert seat0.fault.detail.endswith("(killed at the memory limit)")
    victim = sandbox.started[0]
    assert isinstance(victim, _KilledForMemory) and victim.reaped, "its cgroup, uid, scratch"
    for proc in sandbox.started:
        assert asyncio.run(proc.wait(0)) is not None


# --- framing, unasked lines, clocks and logs under attack -----------------------------


def _sessions_and_result(
    handlers: dict[str, Any], tc: TimeControl = FAST, log: Any = None, clock: Any = None
) -> tuple[list[BotSession], MatchResult]:
    """Like ``run``, but keeps the sessions (closed) so a test can look inside them."""
    sandbox = FakeSandbox(handlers)
    clock = clock or FakeClock()

    async def go() -> tuple[list[BotSession], MatchResult]:
        bots = [spec(n) for n in handlers]
        async with seated(bots, sandbox=sandbox, time_control=tc, clock=clock) as table:
            result = await play_match(table, RULES3, 3, match_id="m", log_path=log)
        return list(table.bots), result

    return clock.run(go())


def _on_first_act(answer: Callable[[dict[str, Any], Any], Any]) -> Callable[[], Any]:
    """A polite bot whose first ``act`` is answered by ``answer(msg, polite_reply)``."""

    def factory() -> Any:
        inner = polite_bot("odd")
        state = {"done": False}

        def handle(msg: dict[str, Any]) -> Any:
            out = inner(msg)
            if msg.get("type") == "act" and not state["done"]:
                state["done"] = True
                return answer(msg, out)
            return out

        return handle

    return factory


def test_a_flood_of_unasked_lines_is_faulted_and_not_kept() -> None:
    lines = 200_000  # 2.8 MB
    flood = _on_first_act(
        lambda _msg, out: json.dumps(out).encode() + b"\n" + b'{"note":"hi"}\n' * lines
    )
    sessions, result = _sessions_and_result({"flood": flood, "b": polite_bot, "c": polite_bot})
    fault = result.standings[-1].fault
    assert result.standings[-1].seat == 0 and fault is not None and fault.kind == "protocol"
    said = re.fullmatch(
        r"sent (\d+) lines nobody asked for \(no request was outstanding\)", fault.detail
    )
    assert said is not None, fault.detail
    assert UNASKED_CAP <= int(said[1]) <= lines
    flooder = sessions[0]
    assert flooder.channel.unasked_line == b'{"note":"hi"}'
    assert flooder.channel.held_lines() == 0, "a line nobody asked for was kept"
    assert not any(s.fault for s in sessions[1:])
    assert result.rounds >= 1 and len(result.standings) == 3


def test_lines_nobody_asked_for_are_faulted_before_the_next_request() -> None:
    """Even when that bot is not asked again for a while, the fault comes at once."""
    extra = _on_first_act(lambda _msg, out: json.dumps(out).encode() + b"\n" + b"{}\n" * 3)
    _sessions, result = _sessions_and_result({"x": extra, "b": polite_bot, "c": polite_bot})
    fault = result.standings[-1].fault
    assert fault is not None
    assert fault.detail == "sent 3 lines nobody asked for (no request was outstanding)"


def test_a_referee_stall_after_the_line_arrived_is_not_charged_to_the_bot() -> None:
    """The runner blocks the loop for 0.6 s between a reply's arrival and its parsing.

    The bot answered at once; with 200 + 200 ms to answer it must be neither timed out nor
    charged: its next ``act`` still shows the whole bank.
    """
    clock = FakeClock()

    def stall(_msg: dict[str, Any], out: dict[str, Any]) -> bytes:
        loop = asyncio.get_running_loop()
        # Runs after the reader has taken the line (its wake-up is queued first) and
        # before the runner gets it back; 0.6 s pass meanwhile, as in a blocked loop.
        loop.call_soon(loop.call_soon, clock.advance, 0.6)
        return json.dumps(out).encode() + b"\n"

    sessions, result = _sessions_and_result(
        {"a": _on_first_act(stall), "b": polite_bot, "c": polite_bot}, clock=clock
    )
    assert not any(s.forfeit for s in result.standings), result.standings
    proc = sessions[0].channel.proc
    assert isinstance(proc, FakeBotProcess)
    banks = [msg["bank_ms"] for msg in proc.received if msg.get("kind") == "play"]
    assert len(banks) > 1 and set(banks) == {FAST.bank_ms}


def _padded_reply(msg: dict[str, Any], out: dict[str, Any], size: int) -> bytes:
    """``out`` with a ``pad`` field making the line ``size`` bytes before its CR LF."""
    line = json.dumps({**out, "pad": ""}, separators=(",", ":")).encode()
    return line[:-2] + b"x" * (size - len(line)) + b'"}' + b"\r\n"


def test_a_crlf_line_of_exactly_the_cap_is_accepted() -> None:
    at_cap = _on_first_act(lambda msg, out: _padded_reply(msg, out, m.MAX_LINE_BYTES))
    _sessions, result = _sessions_and_result({"a": at_cap, "b": polite_bot, "c": polite_bot})
    assert not any(s.forfeit for s in result.standings), result.standings


def test_a_crlf_line_one_byte_over_the_cap_is_refused() -> None:
    over = _on_first_act(lambda msg, out: _padded_reply(msg, out, m.MAX_LINE_BYTES + 1))
    _sessions, result = _sessions_and_result({"a": over, "b": polite_bot, "c": polite_bot})
    fault = result.standings[-1].fault
    assert fault is not None and fault.kind == "protocol"
    assert fault.detail == f"reply line longer than {m.MAX_LINE_BYTES} bytes"


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ('{{"id":{id},"cards":["7\u2028C"]}}', "illegal"),  # a bad card holding U+2028
        ('{{"id":{id},"cards":["7C\u2029"]}}', "illegal"),
        ('{{"id":{id},"cards":"7C","note":"\x85"}}', "protocol"),  # U+0085, unknown field
        ('{{"id":{id},"cards":["7C"],"note":"a\rb"}}', "protocol"),  # raw CR: not JSON
        ('{{"id":{id},"cards":"\x0b\x0c\x1c\x1d\x1e\u2028"}}', "protocol"),
    ],
)
def test_a_fault_holding_line_breaks_leaves_a_log_that_replays(
    reply: str, kind: str, tmp_path: Path
) -> None:
    bad = _on_first_act(lambda msg, _out: (reply.format(id=msg["id"]) + "\n").encode())
    log = tmp_path / "m.jsonl"
    _sessions, result = _sessions_and_result({"a": bad, "b": polite_bot, "c": polite_bot}, log=log)
    fault = result.standings[-1].fault
    assert fault is not None and fault.kind == kind
    text = log.read_text(encoding="utf-8")
    assert len(text.splitlines()) == text.count("\n"), "a log line holds a line break"
    lines = read_log(log)
    (faulted,) = [x for x in lines if x["type"] == "fault"]
    assert faulted["reply"] == reply.format(id=faulted["id"])
    replay(lines)
    out = CliRunner().invoke(cli_main, ["replay", "--check-only", str(log)])
    assert out.exit_code == 0, out.output
    assert ": ok," in out.output


def test_spec_states_the_limits_the_referee_enforces() -> None:
    import sys

    text = (Path(__file__).resolve().parents[2] / "protocol" / "SPEC.md").read_text()
    assert f"after {UNASKED_CAP} such lines" in text
    assert f"at most {m.MAX_LINE_BYTES:,} bytes, not counting the `\\n` nor a `\\r`" in text
    assert f"nest at most {m.MAX_NESTING} levels" in text
    assert f"no integer of more than {sys.get_int_max_str_digits():,} digits" in text
