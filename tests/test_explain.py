"""Fault explanations: the request, the line, what was expected, the usual causes, stderr."""

from __future__ import annotations

from typing import Any

from referee.explain import (
    HINTS,
    explain_fault,
    explain_replacements,
    fault_summary,
    replacements_summary,
    stderr_lines,
)
from referee.results import FaultInfo, KitReplacement

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


# -- what the kit replaced, and a person leaving ---------------------------------------------


def _note(**fields: Any) -> KitReplacement:
    return KitReplacement(**fields)


def test_replaced_decisions_are_told_with_the_rule_they_broke() -> None:
    notes = [
        _note(
            request_id=12,
            kind="play",
            decided=["9C"],
            sent=[],
            why="not allowed",
            request=PAIR_TRICK,
        ),
        _note(
            request_id=15,
            kind="give",
            decided=None,
            sent=["7C", "8C"],
            why="raised",
            error="ValueError: bad",
        ),
        _note(
            request_id=18,
            kind="leftover",
            decided=["ZZ", "7C"],
            sent=["KH", "7C"],
            why="not allowed",
        ),
    ]
    assert replacements_summary(4, notes) == (
        "your kit replaced 4 of your decisions: act 12 (play) 9C → [] (a pass) (not allowed: "
        "has 1 card; the trick needs 2); act 15 (give) nothing (it raised) → 7C 8C (raised "
        "ValueError: bad); act 18 (leftover) take ZZ, discard 7C → take KH, discard 7C (not "
        "allowed here); 1 more"
    )
    lines = explain_replacements(4, notes)
    assert lines[0] == (
        "problem: the bot's kit replaced 4 of its decisions with safe ones (its safety net): a "
        "tournament plays the safe ones and warns about it on the bot's page"
    )
    assert lines[1].startswith("request: act 12, kind play: hand 7C 9C 9H KD; to beat 8S 8D")
    assert lines[2] == "decided: 9C (not allowed: has 1 card; the trick needs 2)"
    assert lines[3] == "the kit sent: [] (a pass)"
    assert lines[4] == "also replaced: act 15 (give), act 18 (leftover), 1 more"
    assert lines[5].startswith("hint: the kit writes each one on stderr")


def test_one_replaced_decision_without_its_request_is_told_by_its_id() -> None:
    lines = explain_replacements(
        1, [_note(request_id=3, kind="play", decided=["AS"], sent=["7C"], why="not allowed")]
    )
    assert lines[0].startswith("problem: the bot's kit replaced 1 of its decisions with")
    assert lines[1:4] == [
        "request: act 3 (play)",
        "decided: AS (not allowed here)",
        "the kit sent: 7C",
    ]
    assert replacements_summary(1, []) == "your kit replaced 1 of your decisions: 1 more"


def test_what_a_kit_wrote_is_shown_safely_and_cut() -> None:
    hostile = _note(
        request_id=None,
        kind="pl\x1bay",
        decided={"a": "\x1b[2J" * 50},
        sent=["\x07"],
        why="\x1b[31m",
    )
    text = replacements_summary(1, [hostile])
    assert "\x1b" not in text and "\x07" not in text
    assert "act ? (pl\\x1bay)" in text and "…" in text


def test_a_person_leaving_is_told_as_leaving() -> None:
    fault = FaultInfo(
        kind="left",
        detail="the person left the match (end of input)",
        request_id=12,
        request=PAIR_TRICK,
        round=2,
    )
    assert fault_summary(fault) == "left the match at act 12 (play, round 2)"
    assert explain_fault(fault, "") == [
        "problem: left the match at act 12 (play, round 2)",
        "the referee's fallback policy played the seat to the end",
    ]


def test_a_kill_from_outside_and_a_refused_fork_are_hinted() -> None:
    detail = (
        "the bot exited while a request was outstanding (SIGKILL: killed, not by the referee, "
        "and its cgroup counted no out-of-memory kill; memory.oom_control oom_kill 0, "
        "pids.events max 2 (its process limit refused it a new process 2 times))"
    )
    fault = FaultInfo(kind="crash", detail=detail, request_id=12, request=PAIR_TRICK)
    hints = [line for line in explain_fault(fault) if line.startswith("hint:")]
    assert hints == [
        f"hint: {HINTS['crash']}",
        f"hint: {HINTS['outside_kill']}",
        f"hint: {HINTS['pids']}",
    ]
    assert detail in explain_fault(fault)[0], "the text says who sent the kill"
