"""Fault explanations: the request, the line, what was expected, the usual causes, stderr."""

from __future__ import annotations

from referee.protocol.explain import HINTS, explain_fault, fault_summary, stderr_lines
from referee.results import FaultInfo

PAIR_TRICK = {
    "type": "act",
    "id": 12,
    "kind": "play",
    "hand": ["7C", "9C", "9H", "KD"],
    "trick": {"leader": 1, "count": 2, "top": ["8S", "8D"]},
    "passed": [],
    "legal": [["9C", "9H"], []],
    "bank_ms": 10000,
}
HELLO = {"type": "hello", "id": 1, "protocol": 1, "time": {"hello_ms": 500}}


def test_a_wrong_card_count_is_said_in_words_with_the_request_and_the_line() -> None:
    fault = FaultInfo(
        kind="illegal",
        detail="wrong count: the trick needs 2 card(s), got 1",
        request_id=12,
        reply='{"id":12,"cards":["9C"]}',
        elapsed_ms=3,
        request=PAIR_TRICK,
        round=2,
    )
    lines = explain_fault(fault, "")
    assert (
        lines[0]
        == "problem: illegal: reply to act 12 (play, round 2) has 1 card; the trick needs 2"
    )
    assert "request: act 12, kind play, round 2: hand 7C 9C 9H KD; to beat 8S 8D" in lines[1]
    assert lines[2] == 'reply (after 3 ms): {"id":12,"cards":["9C"]}'
    assert lines[3].startswith("expected: 2 card(s) of one rank that beat 8S 8D, or [] to pass")
    assert '{"id":12,"cards":["9C","9H"]}' in lines[3]
    assert f"hint: {HINTS['legal']}" in lines


def test_a_give_with_too_few_cards() -> None:
    request = {"type": "act", "id": 7, "kind": "give", "hand": ["7C", "AS"], "to": 2, "count": 2}
    fault = FaultInfo(
        kind="illegal",
        detail="wrong count: give back exactly 2 card(s), got 1",
        request_id=7,
        reply='{"id":7,"cards":["7C"]}',
        request=request,
        round=3,
    )
    assert fault_summary(fault).endswith("gives 1 card; the exchange needs exactly 2")
    assert any(line.startswith("expected: exactly 2 card(s)") for line in explain_fault(fault))


def test_no_reply_at_all_hints_at_flushing_and_at_hello_at_a_slow_start() -> None:
    fault = FaultInfo(
        kind="timeout",
        detail="timed out answering hello after 500 ms",
        request_id=1,
        elapsed_ms=500,
        request=HELLO,
    )
    lines = explain_fault(fault, "loading\nstill loading")
    assert lines[0] == "problem: timeout at hello 1: timed out answering hello after 500 ms"
    assert "reply: none (after 500 ms)" in lines
    assert f"hint: {HINTS['flush']}" in lines and f"hint: {HINTS['slow_start']}" in lines
    assert "flush=True" in HINTS["flush"]
    assert lines[-3:] == ["stderr before hello:", "  loading", "  still loading"]


def test_a_late_reply_is_slowness_not_buffering() -> None:
    fault = FaultInfo(
        kind="timeout",
        detail="reply after 1200 ms; 1000 ms were left (move_ms + bank)",
        request_id=12,
        reply='{"id":12,"cards":[]}',
        elapsed_ms=1200,
        request=PAIR_TRICK,
    )
    hints = [line for line in explain_fault(fault) if line.startswith("hint:")]
    assert hints == [f"hint: {HINTS['slow']}"]


def test_a_line_that_is_not_json_hints_at_a_debug_print() -> None:
    fault = FaultInfo(
        kind="protocol",
        detail="reply is not valid JSON: Expecting value at column 1",
        request_id=12,
        reply="thinking about \x1b[2Jit",
        elapsed_ms=0,
        request=PAIR_TRICK,
    )
    lines = explain_fault(fault)
    assert "reply (after 0 ms): thinking about \\x1b[2Jit" in lines
    assert f"hint: {HINTS['debug_print']}" in lines
    assert all("\x1b" not in line for line in lines)


def test_a_line_between_requests_names_the_last_request() -> None:
    fault = FaultInfo(
        kind="protocol",
        detail="sent a line nobody asked for (no request was outstanding)",
        reply="debug",
        request=PAIR_TRICK,
    )
    lines = explain_fault(fault)
    assert (
        lines[0]
        == "problem: protocol: the bot sent a line nobody asked for (no request was outstanding)"
    )
    assert lines[1].startswith("last request before it: act 12, kind play")
    assert f"hint: {HINTS['debug_print']}" in lines


def test_stderr_before_the_match_survives_a_long_match_part() -> None:
    during = "\n".join(f"move {i}" for i in range(100))
    report = f"[before the match]\nloading weights\nfound 3 files\n[during the match]\n{during}"
    lines = stderr_lines(report, max_lines=5)
    assert lines[:3] == ["stderr before the match:", "  loading weights", "  found 3 files"]
    assert lines[3] == "stderr during the match, last 5 of 100 lines:"
    assert lines[4:] == [f"  move {i}" for i in range(95, 100)]


def test_no_stderr_is_said() -> None:
    assert stderr_lines(None) == ["stderr: (the bot wrote nothing to stderr)"]
