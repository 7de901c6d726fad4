"""A bot's fault told for its author: what was asked, what came back, what was expected.

``referee play``, ``referee submit`` and ``referee bot check`` all explain a forfeit with
:func:`explain_fault`, so the wording is the same everywhere. A fault record
(:class:`~referee.results.FaultInfo`) holds the evidence: the request the bot was sent
(``hello`` or an ``act``), the line it answered with, the time it took; the explanation
adds what a right answer would have been and the usual causes of this kind of fault (an
unflushed stdout, a debug print on stdout, a crash), then the bot's stderr, its start-up
output and this match's each shown apart, so that a long match never hides what the bot
said before ``hello``.

The hints follow what happened: a bot that answered requests in time and then spent its
bank was slow, one that never answered may not flush; a line written in reply to an event
is named so. A person who left a ``--human`` match left: nothing to explain.

:func:`explain_replacements` tells the decisions a bot's kit replaced with safe ones (the
kits' safety net, :mod:`referee.protocol.kit`): no fault, but a mistake all the same.

Everything a bot chose (its reply, its stderr, card strings echoed back) passes through
:func:`~referee.text.printable`; the lines returned are safe to print as they are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from referee.errors import OUTSIDE_KILL, FaultKind
from referee.results import FaultInfo, KitReplacement
from referee.specs import StoredFault
from referee.stderrlog import split_stderr_report
from referee.text import printable

__all__ = [
    "HINTS",
    "explain_fault",
    "explain_replacements",
    "fault_summary",
    "replacements_summary",
    "stderr_lines",
    "stored_fault_info",
]

_REPLY_CUT = 200  # the fault record keeps this many bytes of the offending line

HINTS = {
    "flush": (
        "no line arrived at all: if the bot had decided, its reply is probably still in its "
        "output buffer. Flush stdout after every line (Python: print(..., flush=True); "
        "C/C++: fflush(stdout); Perl: $| = 1; Java: System.out.flush(); Rust: "
        "stdout().flush()). Every sandbox runs a bot with the same environment, which no "
        "longer sets PYTHONUNBUFFERED: a Python bot that passed without flushing before "
        "must flush now"
    ),
    "slow_start": (
        "a slow start (an interpreter, a model to load, a compile) must fit in hello_ms; "
        "answer hello first and load afterwards, or ask for a longer hello_ms"
    ),
    "slow": (
        "the reply came, but too late: every act carries bank_ms, the time left in the "
        "bank; stop thinking well before move_ms"
    ),
    "spent_bank": (
        "too slow: answered {answered} in time, then spent its bank; think less per move "
        "(every act carries bank_ms, the time left in the bank: stop well before move_ms)"
    ),
    "event_reply": (
        "only a message with an id is a request, answered with one line; the others "
        "(match_start, round_start, played, ...) are events: read them and write nothing "
        "(protocol/SPEC.md, common mistakes: answering events)"
    ),
    "debug_print": (
        "a debug print on stdout? stdout carries protocol lines only, one reply per request: "
        "write logs and debug output to stderr"
    ),
    "stray_id": (
        "each reply carries the id of the request it answers; an earlier id means the bot "
        "answered one request twice or printed an extra line"
    ),
    "crash": "the bot exited while it was asked something: its stderr below says why",
    "crash_start": (
        "it exited before answering hello: a missing interpreter, library or file? (the "
        "docker sandbox has only the image's libraries; the process sandbox only the "
        "machine's)"
    ),
    "memory": "it reached the memory limit",
    "outside_kill": (
        "a SIGKILL the referee did not send and no memory limit explains (its cgroup's "
        "counters follow the fault's text): the bot's own, or another process of the machine"
    ),
    "pids": "its process limit refused it a new process: start fewer processes or threads",
    "legal": "play only what the request lists in legal: the list holds every legal play",
    "shape": "protocol/SPEC.md shows each reply; unknown fields are ignored, missing ones not",
}


def explain_fault(fault: FaultInfo, stderr: str | None = None, *, max_lines: int = 12) -> list[str]:
    """The lines that explain ``fault`` (and the bot's ``stderr`` report), ready to print.

    ``stderr`` is the report a match keeps for a faulted seat (its start-up output and this
    match's); each part shows at most its last ``max_lines`` lines.
    """
    request = _failed_request(fault)
    lines = [f"problem: {fault_summary(fault)}"]
    if fault.kind == "left":
        return [*lines, "the referee's fallback policy played the seat to the end"]
    if request is not None:
        lines.append(f"request: {_describe_request(request, fault.round)}")
    elif fault.request is not None:
        lines.append(f"last request before it: {_describe_request(fault.request, None)}")
    lines.append(_describe_reply(fault))
    if request is not None:
        lines.append(f"expected: {_expected(request)}")
    lines += [f"hint: {_hint(key, fault)}" for key in _hints(fault, request)]
    at_hello = fault.request is None or fault.request.get("type") == "hello"
    lines += stderr_lines(stderr, at_hello=at_hello, max_lines=max_lines)
    return lines


def stored_fault_info(fault: StoredFault) -> FaultInfo:
    """A stored fault as its match reported it, to be explained (its stderr report is
    :attr:`StoredFault.stderr`, passed apart)."""
    return FaultInfo(
        kind=cast(FaultKind, fault.kind),
        detail=fault.detail,
        request_id=fault.request_id,
        reply=fault.reply,
        elapsed_ms=fault.elapsed_ms,
        request=fault.request,
        round=fault.round,
    )


def fault_summary(fault: FaultInfo) -> str:
    """One line: which request, and what was wrong with the answer (or its absence)."""
    request = _failed_request(fault)
    detail = printable(fault.detail)
    if fault.kind == "left":
        return "left the match" + (f" at {_request_name(request, fault.round)}" if request else "")
    if request is None:
        if fault.kind == "protocol" and fault.detail.startswith(("sent ", "replied to an event")):
            return f"protocol: the bot {detail}"
        return f"{fault.kind}: {detail}"
    what = _request_name(request, fault.round)
    counted = _count_problem(request, fault.reply) if fault.kind == "illegal" else None
    if counted:
        return f"illegal: reply to {what} {counted}"
    return f"{fault.kind} at {what}: {detail}"


def stderr_lines(stderr: str | None, *, at_hello: bool = False, max_lines: int = 12) -> list[str]:
    """The bot's stderr report as labelled, indented parts of at most ``max_lines`` each."""
    startup, current = split_stderr_report(stderr or "")
    if at_hello:
        startup, current = (startup + "\n" + current).strip(), ""
    parts = [
        ("stderr before hello" if at_hello else "stderr before the match", startup),
        ("stderr during the match", current),
    ]
    out: list[str] = []
    for label, text in parts:
        rows = text.strip().splitlines()
        if not rows:
            continue
        cut = f", last {max_lines} of {len(rows)} lines" if len(rows) > max_lines else ""
        out.append(f"{label}{cut}:")
        out += ["  " + printable(row) for row in rows[-max_lines:]]
    if not out:
        out.append("stderr: (the bot wrote nothing to stderr)")
    return out


# -- the parts ---------------------------------------------------------------------------


def _failed_request(fault: FaultInfo) -> dict[str, Any] | None:
    """The request the bot failed, when the record has it (not for a line between requests)."""
    request = fault.request
    if request is None or fault.request_id is None or request.get("id") != fault.request_id:
        return None
    return request


def _request_name(request: dict[str, Any], round_no: int | None) -> str:
    """``hello 1`` or ``act 12 (play, round 2)``."""
    if request.get("type") == "hello":
        return f"hello {request.get('id')}"
    where = f", round {round_no}" if round_no is not None else ""
    return f"act {request.get('id')} ({request.get('kind')}{where})"


def _cards(cards: Any) -> str:
    if not isinstance(cards, list) or not cards:
        return "—"
    return " ".join(printable(str(c)) for c in cards)


def _describe_request(request: dict[str, Any], round_no: int | None) -> str:
    """Kind, id, round and the facts the bot decided on, in one line."""
    if request.get("type") == "hello":
        budget = request.get("time", {}).get("hello_ms")
        return f"hello {request.get('id')} (answer with ready within hello_ms = {budget} ms)"
    kind = request.get("kind")
    head = f"act {request.get('id')}, kind {kind}"
    if round_no is not None:
        head += f", round {round_no}"
    facts = [f"hand {_cards(request.get('hand'))}"]
    if kind == "play":
        trick = request.get("trick", {})
        if trick.get("count"):
            facts.append(f"to beat {_cards(trick.get('top'))} ({trick.get('count')} card(s))")
        else:
            facts.append("you lead")
        facts.append(f"{len(request.get('legal', []))} legal plays")
    elif kind == "give":
        facts.append(f"give back {request.get('count')} to seat {request.get('to')}")
    elif kind == "leftover":
        facts.append(f"offer {_cards(request.get('offer'))}")
    return f"{head}: " + "; ".join(facts)


def _describe_reply(fault: FaultInfo) -> str:
    """``reply (after 3 ms): <the line>``, or ``reply: none (...)``."""
    took = f"after {fault.elapsed_ms} ms" if fault.elapsed_ms is not None else ""
    if fault.reply is None:
        return f"reply: none ({took})" if took else "reply: none"
    cut = "  [cut to its first 200 bytes]" if len(fault.reply.encode()) >= _REPLY_CUT - 3 else ""
    where = f" ({took})" if took else ""
    return f"reply{where}: {printable(fault.reply)}{cut}"


def _expected(request: dict[str, Any]) -> str:
    """A right answer to ``request``, in words and with an example."""
    rid = request.get("id")
    if request.get("type") == "hello":
        return f'one line {{"type":"ready","id":{rid},"name":"..."}} within hello_ms'
    kind = request.get("kind")
    hand = [c for c in request.get("hand", []) if isinstance(c, str)]
    if kind == "play":
        legal = [p for p in request.get("legal", []) if isinstance(p, list)]
        plays = [p for p in legal if p]
        example = json.dumps({"id": rid, "cards": plays[0] if plays else []}, separators=(",", ":"))
        trick = request.get("trick", {})
        if not trick.get("count"):
            what = "a lead (any play from legal; passing is not allowed when you lead)"
        else:
            what = (
                f"{trick.get('count')} card(s) of one rank that beat {_cards(trick.get('top'))}"
                + (", or [] to pass" if [] in legal else "")
            )
        return f"{what}: one of the {len(legal)} entries of legal, e.g. {example}"
    if kind == "give":
        count = request.get("count", 0)
        example = json.dumps({"id": rid, "cards": hand[:count]}, separators=(",", ":"))
        return f"exactly {count} card(s) of your hand to give back, e.g. {printable(example)}"
    offer = [c for c in request.get("offer", []) if isinstance(c, str)]
    take = offer[0] if offer else "?"
    reply = {"id": rid, "take": take, "discard": hand[0] if hand else take}
    example = printable(json.dumps(reply, separators=(",", ":")))
    return (
        f"take one of {_cards(offer)} and discard one card of your hand (or the card taken), "
        f"e.g. {example}"
    )


def _count_problem(request: dict[str, Any], reply: str | None) -> str | None:
    """'has 1 card; the trick needs 2' when a reply holds the wrong number of cards."""
    cards = _reply_field(reply, "cards")
    if not isinstance(cards, list):
        return None
    got = f"{len(cards)} card{'' if len(cards) == 1 else 's'}"
    kind = request.get("kind")
    need = request.get("trick", {}).get("count") if kind == "play" else request.get("count")
    if kind == "play" and cards and need and len(cards) != need:
        return f"has {got}; the trick needs {need}"
    if kind == "give" and isinstance(need, int) and len(cards) != need:
        return f"gives {got}; the exchange needs exactly {need}"
    return None


def _reply_field(reply: str | None, name: str) -> Any:
    if reply is None:
        return None
    try:
        data = json.loads(reply)
    except ValueError:
        return None
    return data.get(name) if isinstance(data, dict) else None


def _hint(key: str, fault: FaultInfo) -> str:
    """The text of hint ``key`` for ``fault`` (some name what the bot did)."""
    if key == "spent_bank":
        n = fault.answered or 0
        return HINTS[key].format(answered=f"{n} request{'' if n == 1 else 's'}")
    return HINTS[key]


def _hints(fault: FaultInfo, request: dict[str, Any] | None) -> list[str]:
    """The usual causes of this fault, most likely first, from what happened: a bot that
    answered requests in time before it ran out was slow; one that never answered any may
    not flush its output."""
    at_hello = fault.request is None or fault.request.get("type") == "hello"
    detail = fault.detail
    if fault.kind == "timeout":
        if fault.reply is not None:
            return ["slow"]
        if at_hello:
            return ["flush", "slow_start"]
        return ["spent_bank"] if fault.answered else ["flush"]
    if fault.kind == "protocol":
        if detail.startswith("replied to an event"):
            return ["event_reply"]
        if "does not match request id" in detail:
            return ["stray_id", "debug_print"]
        if "missing field" in detail or "must be" in detail:
            return ["shape"]
        return ["debug_print"]
    if fault.kind == "crash":
        keys = ["crash_start" if at_hello else "crash"]
        keys += ["memory"] if "memory limit" in detail else []
        keys += ["outside_kill"] if OUTSIDE_KILL in detail else []
        return [*keys, "pids"] if "process limit refused" in detail else keys
    if request is not None and request.get("kind") == "play":
        return ["legal"]
    return []


# -- the kits' safety net ------------------------------------------------------------------

_KIT_HINT = (
    'hint: the kit writes each one on stderr (a line "botkit: replaced {...}", '
    "protocol/SPEC.md: the kits' safety net); to see the referee's own verdict on the first, "
    "turn the net off: safety_net = False (Python), bot.safetyNet = false (JavaScript)"
)


def replacements_summary(count: int, notes: Sequence[KitReplacement], *, shown: int = 3) -> str:
    """``your kit replaced 3 of your decisions: act 12 (play) 8H → [] (a pass) (...); ...``"""
    told = [
        f"{_replaced_name(n)} {_decision(n.decided, n.kind, n.why)} → "
        f"{_decision(n.sent, n.kind)} ({_replaced_why(n)})"
        for n in notes[:shown]
    ]
    if count > len(told):
        told.append(f"{count - len(told)} more")
    what = f"your kit replaced {count} of your decisions"
    return f"{what}: " + "; ".join(told)


def explain_replacements(count: int, notes: Sequence[KitReplacement]) -> list[str]:
    """The lines that tell the decisions a bot's kit replaced (its safety net), ready to
    print: how many, the first one with its request, what was decided and what was sent."""
    lines = [
        f"problem: the bot's kit replaced {count} of its decisions with safe ones (its "
        "safety net): a tournament plays the safe ones and warns about it on the bot's page"
    ]
    if notes:
        first = notes[0]
        if first.request is not None:
            lines.append(f"request: {_describe_request(first.request, None)}")
        else:
            lines.append(f"request: {_replaced_name(first)}")
        decided = _decision(first.decided, first.kind, first.why)
        lines.append(f"decided: {decided} ({_replaced_why(first)})")
        lines.append(f"the kit sent: {_decision(first.sent, first.kind)}")
        others = [_replaced_name(n) for n in notes[1:]]
        if count > len(notes):
            others.append(f"{count - len(notes)} more")
        if others:
            lines.append(f"also replaced: {', '.join(others)}")
    lines.append(_KIT_HINT)
    return lines


def _replaced_name(note: KitReplacement) -> str:
    rid = note.request_id if note.request_id is not None else "?"
    kind = f" ({printable(note.kind)})" if note.kind else ""
    return f"act {rid}{kind}"


def _decision(value: Any, kind: str | None, why: str = "") -> str:
    """What was decided or sent: cards as cards, anything else as its JSON (cut)."""
    if why == "raised":
        return "nothing (it raised)"
    if isinstance(value, list) and all(isinstance(c, str) for c in value):
        if kind == "leftover" and len(value) == 2:
            return f"take {printable(value[0])}, discard {printable(value[1])}"
        return _cards(value) if value else "[] (a pass)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return printable(text if len(text) <= 80 else text[:79] + "…")


def _replaced_why(note: KitReplacement) -> str:
    """Why the kit replaced it: the rule it broke where the request says, else its words."""
    if note.why == "raised":
        return f"raised {printable(note.error or 'an exception')}"
    if note.request is not None and note.why == "not allowed":
        counted = _count_problem(note.request, json.dumps({"cards": note.decided}))
        if counted:
            return f"not allowed: {counted}"
    return printable(note.why or "not allowed") + " here"
