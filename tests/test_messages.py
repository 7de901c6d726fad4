"""referee.protocol.messages: building, encoding and parsing every protocol message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from bench.parser_bench import WORST_LINES
from referee.errors import BotFault
from referee.protocol import messages as m

RULES: dict[str, Any] = {
    "name": "arschloch",
    "deck": "skat32",
    "suits": ["C", "S", "H", "D"],
    "ranks": ["7", "8", "9", "10", "J", "Q", "K", "A"],
    "deal": "equal",
    "pass_rule": "reenter",
    "equal_rank": "forbidden",
    "top_card_ends_trick": True,
    "no_finish_on": ["A"],
    "start_card": "7C",
    "exchange": [2, 1],
    "return_choice": "choose",
    "leftovers": "swap",
    "scoring": "below",
    "target": 15,
    "rounds": None,
    "max_rounds": 100,
    "tie_break": "shared",
}

# One example of every referee-to-bot message, as the JSON object a bot reads.
TO_BOT: list[dict[str, Any]] = [
    {
        "type": "hello",
        "id": 1,
        "protocol": 1,
        "time": {"move_ms": 200, "bank_ms": 10000, "hello_ms": 5000},
    },
    {
        "type": "match_start",
        "match": "demo-1",
        "seat": 2,
        "players": ["a", "b", "c", "d"],
        "rules": {**RULES, "players": 4},
        "bank_ms": 10000,
        "seed": 8_417_230_925_417_113,
    },
    {
        "type": "round_start",
        "round": 1,
        "dealer": 0,
        "hand": ["7C", "8H", "8D", "JC", "QS", "KD", "AS", "10H"],
        "hand_sizes": [8, 8, 8, 8],
        "roles": None,
        "scores": [0, 0, 0, 0],
        "leftovers": [],
    },
    {
        "type": "round_start",
        "round": 2,
        "dealer": 3,
        "hand": ["7C"],
        "hand_sizes": [1, 1, 1],
        "roles": ["president", "citizen", "arschloch"],
        "scores": [2, 1, 0],
        "leftovers": ["9C", "KH"],
    },
    {
        "type": "act",
        "id": 7,
        "kind": "play",
        "hand": ["8H", "8D", "JC", "AS"],
        "trick": {"leader": 2, "count": 0, "top": []},
        "passed": [],
        "legal": [["8H"], ["8H", "8D"], ["JC"], ["AS"]],
        "bank_ms": 10000,
        "counts": [4, 8, 3, 0],
    },
    {
        "type": "act",
        "id": 8,
        "kind": "give",
        "hand": ["7C", "AS", "AD"],
        "to": 3,
        "count": 2,
        "counts": [3, 3, 3, 1],
    },
    {
        "type": "act",
        "id": 9,
        "kind": "leftover",
        "hand": ["7C", "AS"],
        "offer": ["9C", "KH"],
        "counts": [2, 2, 2],
    },
    {"type": "played", "seat": 2, "cards": ["8H", "8D"]},
    {"type": "passed", "seat": 0},
    {"type": "skipped", "seat": 1},
    {"type": "trick_end", "winner": 3, "reason": "top_card", "leader": 3},
    {"type": "finished", "seat": 3, "place": 1},
    {"type": "eliminated", "seat": 0, "place": 4, "cards": ["AC", "AS"]},
    {"type": "exchanged", "from": 0, "to": 3, "count": 2},
    {"type": "received", "from": 0, "cards": ["QS", "AD"]},
    {"type": "leftover_taken", "seat": 2, "card": "KH"},
    {"type": "fault", "seat": 1, "kind": "timeout", "detail": "no reply within move_ms + bank"},
    {"type": "round_end", "places": [3, 1, 2, 0], "points": [0, 2, 1, 3], "scores": [0, 2, 1, 3]},
    {
        "type": "match_end",
        "standings": [
            {"seat": 3, "name": "d", "place": 1, "score": 15, "forfeit": False},
            {"seat": 1, "name": "b", "place": 2, "score": 9, "forfeit": True},
        ],
    },
    {"type": "bye"},
]


def _id(msg: dict[str, Any]) -> str:
    return str(msg["type"]) + (f"-{msg['kind']}" if msg["type"] == "act" else "")


@pytest.mark.parametrize("msg", TO_BOT, ids=[_id(x) for x in TO_BOT])
def test_to_bot_round_trip_is_exact(msg: dict[str, Any]) -> None:
    model = m.parse_to_bot(msg)
    line = m.encode(model)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b", " not in line and b": " not in line, "encoding must be compact"
    assert json.loads(line) == msg
    assert m.parse_to_bot(line) == model


def test_every_to_bot_type_has_an_example() -> None:
    sent = {(x["type"], x.get("kind") if x["type"] == "act" else None) for x in TO_BOT}
    assert sent == {
        ("hello", None),
        ("match_start", None),
        ("round_start", None),
        ("act", "play"),
        ("act", "give"),
        ("act", "leftover"),
        ("played", None),
        ("passed", None),
        ("skipped", None),
        ("trick_end", None),
        ("finished", None),
        ("eliminated", None),
        ("exchanged", None),
        ("received", None),
        ("leftover_taken", None),
        ("fault", None),
        ("round_end", None),
        ("match_end", None),
        ("bye", None),
    }


def test_models_are_built_with_python_names_and_sent_with_protocol_names() -> None:
    line = m.encode(m.Exchanged(from_=1, to=2, count=2))
    assert line == b'{"type":"exchanged","from":1,"to":2,"count":2}\n'
    act = m.ActPlay(
        id=7,
        hand=["8H"],
        trick=m.Trick(leader=0, count=1, top=["7C"]),
        passed=[],
        legal=[["8H"], []],
        bank_ms=500,
        counts=[1, 3, 2],
    )
    assert json.loads(m.encode(act))["kind"] == "play"
    assert list(json.loads(m.encode(act))) == [
        "type",
        "id",
        "kind",
        "hand",
        "trick",
        "passed",
        "legal",
        "bank_ms",
        "counts",
    ]


def test_nullable_fields_are_sent_as_null() -> None:
    rules = m.Rules.model_validate(RULES)
    assert json.loads(m.encode(rules))["rounds"] is None
    start = m.RoundStart(
        round=1, dealer=0, hand=[], hand_sizes=[0, 0, 0], roles=None, scores=[0, 0, 0], leftovers=[]
    )
    assert json.loads(m.encode(start))["roles"] is None


def test_rules_keep_extra_keys_and_accept_points_tables() -> None:
    rules = m.Rules.model_validate({**RULES, "scoring": [2, 1, -1, -2], "players": 4})
    data = json.loads(m.encode(rules))
    assert data["players"] == 4 and data["scoring"] == [2, 1, -1, -2]
    with pytest.raises(ValidationError):
        m.Rules.model_validate({**RULES, "scoring": "above"})


def test_to_bot_models_refuse_bad_values() -> None:
    with pytest.raises(ValidationError):
        m.Played(seat=0, cards=["XY"])
    with pytest.raises(ValidationError):
        m.Played(seat=-1, cards=["7C"])
    with pytest.raises(ValidationError):
        m.parse_to_bot({"type": "act", "id": 1, "kind": "dance", "hand": []})
    with pytest.raises(ValidationError):
        m.parse_to_bot({"type": "nonsense"})


def test_to_bot_models_ignore_unknown_fields_and_are_frozen() -> None:
    played = m.parse_to_bot({"type": "played", "seat": 1, "cards": ["7C"], "future": 1})
    assert isinstance(played, m.Played)
    assert b"future" not in m.encode(played)
    with pytest.raises(ValidationError):
        played.seat = 2  # type: ignore[misc]


def test_encode_plain_mapping() -> None:
    assert m.encode({"type": "bye"}) == b'{"type":"bye"}\n'
    assert m.encode({"name": "café"}) == '{"name":"café"}\n'.encode()


# --- replies ------------------------------------------------------------------------------


def test_ready_reply() -> None:
    ready = m.parse_reply(b'{"id":1,"type":"ready","name":"bot","version":"2"}\n', 1, "hello")
    assert ready == m.Ready(id=1, type="ready", name="bot", version="2")
    bare = m.parse_reply(b'{"id":1,"type":"ready","name":"bot"}', 1, "hello")
    assert bare.version is None
    assert m.encode(bare) == b'{"id":1,"type":"ready","name":"bot"}\n'


def test_play_give_and_leftover_replies() -> None:
    play = m.parse_reply(b'{"id":7,"cards":["8H","8D"]}\n', 7, "play")
    assert isinstance(play, m.PlayReply) and play.cards == ["8H", "8D"]
    assert m.parse_reply(b'{"id":7,"cards":[]}', 7, "play").cards == []
    give = m.parse_reply(b'{"id":8,"cards":["7C"]}', 8, "give")
    assert isinstance(give, m.GiveReply)
    left = m.parse_reply(b'{"id":9,"take":"KH","discard":"7C"}', 9, "leftover")
    assert (left.take, left.discard) == ("KH", "7C")


def test_reply_cards_are_not_checked_against_the_deck() -> None:
    """A string that is no card is an illegal play, judged by the rules, not a protocol fault."""
    assert m.parse_reply(b'{"id":1,"cards":["ZZ"]}', 1, "play").cards == ["ZZ"]


def test_unknown_reply_fields_are_ignored() -> None:
    line = b'{"id":3,"cards":["7C"],"debug":{"thinking":[1,[2,[3]]]},"type":"x"}'
    assert m.parse_reply(line, 3, "play") == m.PlayReply(id=3, cards=["7C"])


def test_reply_round_trip() -> None:
    for reply, kind in [
        (m.PlayReply(id=4, cards=["10H"]), "play"),
        (m.GiveReply(id=5, cards=["7C", "8C"]), "give"),
        (m.LeftoverReply(id=6, take="AS", discard="7D"), "leftover"),
    ]:
        assert m.parse_reply(m.encode(reply), reply.id, kind) == reply  # type: ignore[attr-defined]


def _fault(line: bytes, expected_id: int = 7, kind: str = "play") -> BotFault:
    with pytest.raises(BotFault) as info:
        m.parse_reply(line, expected_id, kind)
    assert info.value.kind == "protocol"
    assert info.value.request_id == expected_id
    return info.value


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        (b'\xff{"id":7}', "reply is not valid UTF-8 (bad byte at offset 0)"),
        (b"\n", "reply is an empty line"),
        (b"pass", "reply is not valid JSON: Expecting value at column 1"),
        (b'{"id":7,"cards":[]', "reply is not valid JSON: Expecting ',' delimiter at column 19"),
        (b'{"id":7,"cards":[]} {}', "reply is not valid JSON: Extra data at column 21"),
        (b'["8H"]', "reply must be a JSON object, got a list"),
        (b'"hi"', "reply must be a JSON object, got a string"),
        (b"null", "reply must be a JSON object, got null"),
        (b'{"cards":[]}', "reply is missing field 'id'"),
        (b'{"id":"7","cards":[]}', "field 'id' must be an integer, got a string"),
        (b'{"id":7.0,"cards":[]}', "field 'id' must be an integer, got a number"),
        (b'{"id":true,"cards":[]}', "field 'id' must be an integer, got a boolean"),
        (b'{"id":8,"cards":[]}', "reply id 8 does not match request id 7"),
        (b'{"id":7}', "reply is missing field 'cards'"),
        (b'{"id":7,"cards":"8H"}', "field 'cards' must be a list of card strings, got a string"),
        (b'{"id":7,"cards":null}', "field 'cards' must be a list of card strings, got null"),
        (
            b'{"id":7,"cards":["8H",8]}',
            "field 'cards' must be a list of card strings; item 1 is a number",
        ),
    ],
)
def test_play_reply_protocol_faults(line: bytes, detail: str) -> None:
    assert _fault(line).detail == detail


def test_ready_and_leftover_faults() -> None:
    assert _fault(b'{"id":7,"type":"ready"}', kind="hello").detail == (
        "reply is missing field 'name'"
    )
    assert _fault(b'{"id":7,"type":"hi","name":"x"}', kind="hello").detail == (
        'field \'type\' must be the string "ready", got "hi"'
    )
    assert _fault(b'{"id":7,"name":"x"}', kind="hello").detail == "reply is missing field 'type'"
    assert _fault(b'{"id":7,"type":"ready","name":5}', kind="hello").detail == (
        "field 'name' must be a string, got a number"
    )
    assert _fault(b'{"id":7,"take":"AS","discard":["7C"]}', kind="leftover").detail == (
        "field 'discard' must be a card string, got a list"
    )


def test_fault_keeps_the_offending_line_cut_to_200_bytes() -> None:
    line = b'{"id":7,"cards":"' + b"x" * 500 + b'"}'
    fault = _fault(line)
    assert fault.reply == line[:200].decode()


def test_over_long_line_is_a_fault() -> None:
    line = b'{"id":7,"cards":[],"pad":"' + b"x" * m.MAX_LINE_BYTES + b'"}'
    assert _fault(line).detail == (f"reply line is {len(line)} bytes; the limit is 65536")
    just_fits = b'{"id":7,"cards":[],"p":"' + b"x" * (m.MAX_LINE_BYTES - 26) + b'"}'
    assert len(just_fits) == m.MAX_LINE_BYTES
    assert m.parse_reply(just_fits + b"\n", 7, "play").cards == []


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_huge_nesting_is_a_fault_not_a_crash(opener: bytes) -> None:
    depth = 60_000 // len(opener)
    line = b'{"id":7,"cards":[],"x":' + opener * depth
    assert "deep" in _fault(line).detail


def test_nesting_limit_is_exact_and_ignores_brackets_in_strings() -> None:
    def nested(depth: int) -> bytes:
        # the reply object itself is level 1
        inner = b"[" * (depth - 1) + b"]" * (depth - 1)
        return b'{"id":7,"cards":[],"x":' + inner + b"}"

    assert m.parse_reply(nested(m.MAX_NESTING), 7, "play").cards == []
    assert _fault(nested(m.MAX_NESTING + 1)).detail == (
        f"reply nests arrays/objects {m.MAX_NESTING + 1} deep; the limit is {m.MAX_NESTING}"
    )
    brackets_in_text = b'{"id":7,"cards":[],"note":"' + b"[[[[" * 100 + b'"}'
    assert m.parse_reply(brackets_in_text, 7, "play").cards == []


def test_absurd_number_is_a_fault() -> None:
    detail = _fault(b'{"id":' + b"9" * 5000 + b',"cards":[]}').detail
    assert detail == "reply holds an integer of more than 4300 digits"


# --- hostile lines ----------------------------------------------------------------------
# The worst lines we could construct for the parser live in bench/parser_bench.py, which
# times each at 64 KiB and 16 KiB beside an ordinary reply; here only the verdict on each
# is checked. The first one took the old parser 18 s.

CAP = m.MAX_LINE_BYTES
DEEP = "reply nests arrays/objects {} deep; the limit is 64"
VERDICTS: dict[str, str | None] = {  # None: accepted
    "escaped quotes, unterminated, after brackets": DEEP.format(65),
    "escaped quotes, unterminated": (
        "reply is not valid JSON: Unterminated string starting at at column 24"
    ),
    "escaped quotes, closed": None,
    "escaped backslashes then a quote": None,
    "opening brackets only": DEEP.format(CAP),
    "opening braces only": DEEP.format(CAP),
    "alternating [ and quote": DEEP.format(CAP // 4),  # every other [ is inside a string
    "brackets inside one long string": None,
    "empty lists, flat": None,
    "nested to the limit, many times": None,
    "one level past the limit at the end": DEEP.format(65),
    "a 64 KiB integer": "reply holds an integer of more than 4300 digits",
    "integers at the digit cap": None,
    "a 64 KiB float": None,
    "a 64 KiB exponent": "reply holds a number out of range: 1e999999999999999...",
    "a 64 KiB negative exponent": None,
    "floats, many": None,
    "cards: all numbers": "field 'cards' must be a list of card strings; item 0 is a number",
    "cards: strings then a number last": (
        f"field 'cards' must be a list of card strings; item {(CAP - 20) // 5} is a number"
    ),
    "unicode escapes": None,
    "backslashes only, after brackets": DEEP.format(65),
}


def _fill(head: bytes, unit: bytes, tail: bytes = b"") -> bytes:
    """``head`` + ``unit`` repeated + ``tail``, as close to the 64 KiB cap as units allow."""
    return head + unit * ((CAP - len(head) - len(tail)) // len(unit)) + tail


def test_every_worst_line_has_a_verdict() -> None:
    assert set(VERDICTS) == set(WORST_LINES)


@pytest.mark.parametrize("name", list(VERDICTS))
def test_worst_lines_get_the_right_verdict(name: str) -> None:
    line, detail = WORST_LINES[name](CAP), VERDICTS[name]
    assert CAP - 4300 < len(line) <= CAP
    if detail is None:
        assert m.parse_reply(line, 7, "play").cards == []
    else:
        assert _fault(line).detail == detail


@pytest.mark.parametrize(
    ("literal", "detail"),
    [
        (b"NaN", "reply is not valid JSON: NaN is not a JSON value"),
        (b"Infinity", "reply is not valid JSON: Infinity is not a JSON value"),
        (b"-Infinity", "reply is not valid JSON: -Infinity is not a JSON value"),
        (b"1e999", "reply holds a number out of range: 1e999"),
        (b"-1e999", "reply holds a number out of range: -1e999"),
        (b"1" * 400 + b".0", "reply holds a number out of range: 11111111111111111..."),
    ],
)
def test_json_is_strict(literal: bytes, detail: str) -> None:
    """Python's json accepts these; a reply may not hold them, not even in an unknown field."""
    assert _fault(b'{"id":7,"cards":[],"debug":' + literal + b"}").detail == detail
    assert _fault(b'{"id":' + literal + b',"cards":[]}').detail == detail


def test_finite_numbers_in_unknown_fields_are_fine() -> None:
    line = b'{"id":7,"cards":[],"debug":[0.5,-2,1e308,1e-999,12345678901234567890]}'
    assert m.parse_reply(line, 7, "play").cards == []


def test_nesting_matches_a_plain_state_machine() -> None:
    """The byte-operation scan agrees with the obvious loop on JSON of every shape.

    Whole lines and lines cut anywhere (inside a string, after a backslash, with brackets
    left open), which also takes the scan's other path, the one for few closing brackets.
    With the limit at 0 the early exits for lines with few brackets never apply, so the
    whole scan is compared.
    """
    from hypothesis import given, settings
    from hypothesis import strategies as st

    texts = st.text(alphabet='[]{}"\\ax\u00e9', max_size=8)
    values = st.recursive(
        st.none() | st.integers() | texts,
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(texts, kids, max_size=4),
        max_leaves=60,
    )

    def depth(line: bytes) -> int:
        deepest = level = 0
        in_string = escaped = False
        for byte in line:  # no byte of a multi-byte UTF-8 character is ASCII
            char = chr(byte)
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in "[{":
                level += 1
                deepest = max(deepest, level)
            elif char in "]}":
                level -= 1
        return deepest

    @settings(max_examples=300, deadline=None)
    @given(values, st.floats(0, 1))
    def check(value: object, cut: float) -> None:
        line = json.dumps({"x": value}, ensure_ascii=False).encode()
        assert m._nesting(line, limit=0) == depth(line)
        part = line[: int(len(line) * cut)]
        assert m._nesting(part, limit=0) == depth(part)

    check()


def test_trailing_cr_is_tolerated_and_not_counted() -> None:
    fits = _fill(b'{"id":7,"cards":[],"p":"', b"x", b'"}')
    assert len(fits) == CAP
    assert m.parse_reply(fits + b"\r\n", 7, "play").cards == []
    assert m.parse_reply(fits + b"\r", 7, "play").cards == []
    over = fits[:-2] + b'x"}'
    assert _fault(over + b"\r\n").detail == f"reply line is {CAP + 1} bytes; the limit is {CAP}"


def test_the_recorded_line_is_cut_on_a_character_boundary() -> None:
    line = b'{"id":7,"cards":"' + "é".encode() * 300 + b'"}'
    fault = _fault(line)
    assert fault.reply is not None
    assert fault.reply == '{"id":7,"cards":"' + "é" * 91  # 17 + 91 * 2 = 199 bytes
    assert "\ufffd" not in fault.reply
    bad_byte = b'{"id":7,"cards":"\xff' + b"x" * 300
    assert _fault(bad_byte).reply == '{"id":7,"cards":"\ufffd' + "x" * 182
    short = '{"id":8,"cards":["\u2028"]}'.encode()
    assert _fault(short).reply == short.decode()


def test_unknown_kind_is_the_callers_bug() -> None:
    with pytest.raises(ValueError, match="unknown reply kind"):
        m.parse_reply(b'{"id":1}', 1, "dance")


def test_public_names() -> None:
    assert set(m.__all__) <= set(dir(m))
    for name in ("encode", "parse_reply", "parse_to_bot", "Rules", "ActPlay", "PlayReply"):
        assert name in m.__all__


# --- the fast path for play and give replies ---------------------------------------------
# parse_reply takes a short cut for replies of the usual shape (messages._cards_reply);
# every line must get the verdict the full parse (messages._parse_reply) gives it.


def _verdict(parse: Any, line: bytes, kind: str) -> tuple[Any, ...]:
    try:
        reply = parse(line)
    except BotFault as fault:
        return ("fault", fault.kind, fault.detail, fault.request_id, fault.reply)
    return ("reply", type(reply).__name__, reply.model_dump(), reply.model_fields_set)


def _same_verdict(line: bytes, kind: str = "play", expected_id: int = 7) -> tuple[Any, ...]:
    fast = _verdict(lambda raw: m.parse_reply(raw, expected_id, kind), line, kind)
    full = _verdict(
        lambda raw: m._parse_reply(raw, m._body(raw), expected_id, m._REPLY_MODELS[kind]),
        line,
        kind,
    )
    assert fast == full, line
    return fast


USUAL_REPLIES = [
    b'{"id":7,"cards":["7C","7H"]}',
    b'{"id": 7, "cards": ["10H"]}\n',
    b'{"cards": [], "id": 7}\r\n',
    b' \t{ "cards" :[ "QD" , "QS" ,"QH"] , "id":7 }  ',
    b'{"id":7,"cards":["12B","1O"]}',
]


@pytest.mark.parametrize("line", USUAL_REPLIES)
@pytest.mark.parametrize("kind", ["play", "give"])
def test_usual_replies_take_the_fast_path_to_the_same_reply(line: bytes, kind: str) -> None:
    assert m._cards_reply(m._body(line), 7, kind) is not None, "the fast path took it"
    assert _same_verdict(line, kind)[0] == "reply"


UNUSUAL_REPLIES = [
    b'{"id":8,"cards":["7C"]}',  # another id: the full parse describes it
    b'{"id":07,"cards":[]}',  # a leading zero is not JSON
    b'{"id":-0,"cards":[]}',
    b'{"id":7.0,"cards":[]}',
    b'{"id":7,"cards":["7C"],"id":8}',  # a repeated key: the last wins
    b'{"id":7,"cards":["7C",]}',
    b'{"id":7,"cards":["7\\u0043"]}',  # an escape: left to the full parse
    b'{"id":7,"cards":["\xc3\xa9"]}',
    b'{"id":7,"cards":["7C"]',
    b'{"id":7,"cards":["7C"]}}',
    b'{"id":7,"cards":["7C"],}',
    b'{"id":7,,"cards":[]}',
    b'{"id":7 "cards":[]}',
    b'{"id":7,"cards":[["7C"]]}',
    b'{"id":7,"cards":[7]}',
    b'{"id":7,"cards":["7C"] ,"debug":"x"}',
    b'{"id":7,"cards":["7C"]}\x00',
    b'{"id":7,"cards":["7C"]}\x0b',  # not JSON whitespace
    b'{"id":7\r,"cards":[]}',
    b'{"id":7,"cards":["AAAAAAAAA"]}',  # longer than any card: the full parse takes it
    b'{"id":7,"cards":["7C"]}\n\n',
    b'{"id":7,"cards":[' + b'"7C",' * 13000 + b'"7C"]}',  # over 64 KiB
    b'{"id":7,"cards":[' + b'"7C",' * 13100 + b'"7C"]}',
    b'{"id":123456789012345678901234567890,"cards":[]}',
]


@pytest.mark.parametrize("line", UNUSUAL_REPLIES)
@pytest.mark.parametrize("kind", ["play", "give", "leftover", "hello"])
def test_unusual_replies_get_the_full_parses_verdict(line: bytes, kind: str) -> None:
    _same_verdict(line, kind)


@pytest.mark.parametrize("name", list(VERDICTS))
def test_the_worst_lines_get_the_full_parses_verdict(name: str) -> None:
    _same_verdict(WORST_LINES[name](CAP))


def test_generated_replies_get_the_full_parses_verdict() -> None:
    """Lines built from the pieces of the usual shape, and the same lines cut or with a
    byte changed, on both paths."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    # Half the lines from the usual pieces only, half with odd ones: both paths are taken.
    good_space = st.sampled_from(["", " ", "\t", "  ", "\r", "\n"])
    any_space = st.sampled_from(["", " ", "\t", "\r", "\n", "\x0b", "\xa0", "\x00"])
    good_number = st.just("7")
    any_number = st.sampled_from(["7", "07", "-7", "-0", "7.0", "1e1", "70", "true", '"7"'])
    usual = st.sampled_from(["7C", "10H", "QD", "1O", "12B", "AS"])
    odd = st.text(alphabet="0123456789AHQSCDOEBhz\\\"' é,[]", min_size=0, max_size=9)

    def cards_of(card: Any, space: Any) -> Any:
        return st.lists(st.tuples(space, card, space), max_size=5).map(
            lambda items: ",".join(f'{a}"{c}"{b}' for a, c, b in items)
        )

    @st.composite
    def lines(draw: Any) -> bytes:
        # Half the lines are of usual pieces only; the other half has one odd piece (or a
        # cut, or a byte changed) among usual ones, so that each odd thing is to blame.
        odd_one = draw(st.sampled_from(["none"] * 6 + ["space", "number", "card", "debug"]))
        odd_one = odd_one if draw(st.booleans()) else "none"
        at = draw(st.integers(0, 9))
        sp = [draw(any_space if odd_one == "space" and i == at else good_space) for i in range(10)]
        number = draw(any_number if odd_one == "number" else good_number)
        card = st.one_of(usual, odd) if odd_one == "card" else usual
        id_field = f'"id"{sp[0]}:{sp[1]}{number}'
        cards_field = f'"cards"{sp[2]}:{sp[3]}[{sp[4]}{draw(cards_of(card, good_space))}]'
        fields = [id_field, cards_field]
        if draw(st.booleans()):
            fields.reverse()
        if odd_one == "debug":
            fields.insert(draw(st.integers(0, 2)), '"debug":"x"')
        text = f"{sp[5]}{{{sp[6]}" + f"{sp[7]},{sp[8]}".join(fields) + "}" + sp[9]
        line = text.encode()
        change = draw(st.integers(0, 5))
        if change == 0:
            line = line[: draw(st.integers(0, len(line) - 1))]
        elif change == 1:
            at = draw(st.integers(0, len(line) - 1))
            line = line[:at] + bytes([draw(st.integers(0, 255))]) + line[at + 1 :]
        return line + draw(st.sampled_from([b"", b"\n", b"\r\n"]))

    fast = []

    @settings(max_examples=800, deadline=None, derandomize=True)
    @given(lines(), st.sampled_from(["play", "give"]))
    def check(line: bytes, kind: str) -> None:
        fast.append(m._cards_reply(m._body(line), 7, kind) is not None)
        _same_verdict(line, kind)

    check()
    assert 0.1 < sum(fast) / len(fast) < 0.9, "both paths were taken, often"
