"""Every seat's stderr kept beside the match log, and every reply's time (fake bots).

Each bot writes to stderr before it answers; the file beside the log must hold what each
wrote, each piece filed under the log line of the decision it led to, the last 64 KiB of a
flood with the cut counted, and invalid UTF-8 as U+FFFD. The match result carries each
seat's reply times and the bank it spent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from referee.match.runner import play_match
from referee.matchlog import read_log
from referee.protocol.channel import STDERR_CAP
from referee.protocol.seats import seated
from referee.results import MatchResult
from referee.rules import RuleSet
from referee.specs import TimeControl
from referee.stderrlog import MatchStderr, stderr_path
from referee.testing import FakeClock, FakeSandbox, Handler, Stderr, polite_bot, spec

RULES3 = RuleSet.preset("arschloch", target=5).resolve(3)
FAST = TimeControl(move_ms=200, bank_ms=200, hello_ms=1000)

# The log event a decision of each kind becomes, and the field naming who made it.
DECISION_EVENTS = {
    "play": ({"played", "passed"}, "seat"),
    "give": ({"exchange"}, "from"),
    "leftover": ({"leftover"}, "seat"),
}


def _play(
    handlers: dict[str, Callable[[], Handler]],
    log: Path,
    tc: TimeControl = FAST,
    clock: FakeClock | None = None,
) -> tuple[MatchResult, FakeSandbox, MatchStderr]:
    sandbox = FakeSandbox(handlers)
    clock = clock or FakeClock()

    async def go() -> MatchResult:
        bots = [spec(n) for n in handlers]
        async with seated(bots, sandbox=sandbox, time_control=tc, clock=clock) as table:
            return await play_match(table, RULES3, 3, match_id="test-3", log_path=log)

    result = clock.run(go())
    kept = MatchStderr.model_validate_json(stderr_path(log).read_bytes())
    return result, sandbox, kept


def _thinking(name: str, write: Callable[[dict[str, Any]], bytes]) -> Callable[[], Handler]:
    """A polite bot that writes ``write(request)`` to stderr before each reply."""

    def factory() -> Handler:
        inner = polite_bot(name)

        def handle(msg: dict[str, Any]) -> Any:
            out = inner(msg)
            if msg.get("type") == "act":
                return [Stderr(write(msg)), out]
            return out

        return handle

    return factory


def test_stderr_is_kept_beside_the_log_each_piece_at_the_move_it_led_to(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl"
    talker = _thinking("talker", lambda msg: f"act {msg['id']} {msg['kind']}\n".encode())
    result, sandbox, kept = _play({"talker": talker, "b": polite_bot, "c": polite_bot}, log)
    assert stderr_path(log) == tmp_path / "m.stderr.json"
    assert kept.match == "test-3" and kept.cap == STDERR_CAP
    assert [s.name for s in kept.seats] == ["talker", "b", "c"]
    acts = [msg for msg in sandbox.started[0].received if msg["type"] == "act"]
    talker_out = kept.seats[0]
    assert [p.text for p in talker_out.pieces] == [f"act {a['id']} {a['kind']}\n" for a in acts]
    assert talker_out.cut == 0 and talker_out.written == sum(len(p.text) for p in talker_out.pieces)
    lines = read_log(log)
    for piece, act in zip(talker_out.pieces, acts, strict=True):
        row = lines[piece.line - 1]  # numbered from 1, the header
        types, who = DECISION_EVENTS[act["kind"]]
        assert row["type"] in types and row[who] == 0, (piece, row)
    assert {a["kind"] for a in acts} >= {"play", "give"}  # exchanges are covered too
    assert [s.written for s in kept.seats[1:]] == [0, 0]
    assert all(not s.pieces for s in kept.seats[1:])
    assert not any(s.forfeit for s in result.standings)


def test_a_flood_keeps_the_last_64_kib_and_counts_the_cut(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl"
    chunk = b"FLOOD " + b"x" * 1017 + b"\n"  # 1 KiB
    floods = iter([chunk * 3000, b"after the flood\n"])  # 3,000 KiB at the first act
    flood = _thinking("flood", lambda _msg: next(floods, b""))
    result, _sandbox, kept = _play({"flood": flood, "b": polite_bot, "c": polite_bot}, log)
    seat = kept.seats[0]
    text = "".join(p.text for p in seat.pieces)
    assert seat.written == 3000 * 1024 + len(b"after the flood\n")
    assert seat.cut == seat.written - STDERR_CAP
    assert len(text.encode()) == STDERR_CAP
    assert text.endswith("after the flood\n") and text.startswith("x")
    assert len(seat.pieces) == 2 and seat.pieces[0].line < seat.pieces[1].line
    assert not any(s.forfeit for s in result.standings)


def test_invalid_utf8_is_replaced_and_a_character_split_across_moves_stays_whole(
    tmp_path: Path,
) -> None:
    log = tmp_path / "m.jsonl"
    parts = iter([b"bad \xff\xfe bytes \x1b[31mred\x1b[0m <b>x</b>\n", b"caf\xc3", b"\xa9\n"])
    odd = _thinking("odd", lambda _msg: next(parts, b""))
    _result, _sandbox, kept = _play({"odd": odd, "b": polite_bot, "c": polite_bot}, log)
    texts = [p.text for p in kept.seats[0].pieces]
    assert texts == [
        "bad \ufffd\ufffd bytes \x1b[31mred\x1b[0m <b>x</b>\n",  # kept as written: the site escapes
        "caf",
        "\u00e9\n",
    ]
    raw = stderr_path(log).read_text(encoding="utf-8")
    assert "\x1b" not in raw and "\\u001b" in raw  # JSON escapes control characters


def test_each_reply_time_and_the_bank_spent_are_in_the_result(tmp_path: Path) -> None:
    clock = FakeClock()

    def slow() -> Handler:
        inner = polite_bot("slow")

        def handle(msg: dict[str, Any]) -> Any:
            if msg.get("type") == "act":
                clock.advance(0.12)  # 120 ms of a 100 ms move: 20 ms from the bank each time
            return inner(msg)

        return handle

    tc = TimeControl(move_ms=100, bank_ms=50, hello_ms=1000)
    log = tmp_path / "m.jsonl"
    result, sandbox, _kept = _play({"slow": slow, "b": polite_bot, "c": polite_bot}, log, tc, clock)
    assert result.reply_ms[0] == [120, 120]  # the third timed out: no reply, the bank gone
    assert result.bank_spent_ms[0] == 50
    for seat in (1, 2):
        asked = [m for m in sandbox.started[seat].received if m["type"] == "act"]
        assert result.reply_ms[seat] == [0] * len(asked) and result.bank_spent_ms[seat] == 0
    dumped = json.loads(result.model_dump_json())
    assert dumped["reply_ms"]["0"] == [120, 120] and dumped["bank_spent_ms"]["0"] == 50
