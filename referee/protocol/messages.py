"""The bot protocol, v1, as pydantic models: the referee's side of the contract.

Every line the referee writes to a bot is built from one of the *to-bot* models below and
turned into bytes by :func:`encode`; every line a bot writes is read by :func:`parse_reply`,
which either returns a reply model or raises :class:`~referee.errors.BotFault` of kind
``protocol`` with a detail written for the bot's author.

The two directions are deliberately asymmetric:

* **To-bot models** (``Hello`` … ``Bye``) are frozen, validated when built (so a referee bug
  shows up here, not in a bot), and ignore unknown keys when parsed, so a newer referee's
  transcript still loads. Fields that may be null are always sent, as ``null``.
* **Reply models** (``Ready``, ``PlayReply``, ``GiveReply``, ``LeftoverReply``) are strict:
  ``1.0`` or ``"1"`` is not an id and ``true`` is not an integer. Unknown fields, such as a
  ``debug`` note, are ignored. Whether the cards are real cards of the hand is not checked
  here: that is the rules' job and an *illegal* fault, not a protocol one.

``protocol/schema/`` holds JSON Schema files generated from these models
(``referee/data/make_schemas.py``) and ``protocol/SPEC.md`` explains them to bot authors.
"""

from __future__ import annotations

import codecs
import itertools
import json
import operator
import re
import sys
from array import array
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeAlias, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
)

from referee.errors import BotFault, FaultKind
from referee.specs import TimeControl

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "PROTOCOL_VERSION",
    "REPLY_KINDS",
    "SEED_LIMIT",
    "Act",
    "ActGive",
    "ActLeftover",
    "ActPlay",
    "Bye",
    "Eliminated",
    "Exchanged",
    "Fault",
    "Finished",
    "GiveReply",
    "Hello",
    "LeftoverReply",
    "LeftoverTaken",
    "MatchEnd",
    "MatchStart",
    "Passed",
    "PlayReply",
    "Played",
    "Ready",
    "Received",
    "Reply",
    "ReplyKind",
    "Role",
    "RoundEnd",
    "RoundStart",
    "Rules",
    "Skipped",
    "Standing",
    "TimeControl",
    "ToBot",
    "Trick",
    "TrickEnd",
    "encode",
    "parse_reply",
    "parse_to_bot",
    "reply_excerpt",
]

PROTOCOL_VERSION: Literal[1] = 1
"""The protocol version sent in ``hello``."""

MAX_LINE_BYTES = 64 * 1024
"""The longest line a bot may write, in bytes, not counting the terminating newline."""

MAX_NESTING = 64
"""The deepest nesting of arrays and objects accepted in a reply (a reply needs 2)."""

_REPLY_CUT = 200  # the fault record keeps this much of an offending line (PROTOCOL.md)

Role = Literal["president", "vice_president", "citizen", "vice_arschloch", "arschloch"]
ReplyKind = Literal["hello", "play", "give", "leftover"]
REPLY_KINDS: tuple[ReplyKind, ...] = ("hello", "play", "give", "leftover")

Card = Annotated[
    str,
    Field(
        pattern=r"^(?:[2-9]|1[0-2]?|[JQKA])[CSHDOEB]$",
        description="rank token then one suit letter, e.g. 7C, 10H, QD, 1O, 12B",
    ),
]
Seat = Annotated[int, Field(ge=0, description="0-based seat number")]


class _ToBot(BaseModel):
    """Base of every message the referee sends."""

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        validate_by_name=True,
        serialize_by_alias=True,
        json_schema_serialization_defaults_required=True,
    )


class _FromBot(BaseModel):
    """Base of every reply a bot sends: strict types, unknown fields ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


# --- shared parts -----------------------------------------------------------------------


class Rules(_ToBot):
    """The ruleset of one match, resolved for its table size (PROTOCOL.md "The rules object").

    Keys may be added in later versions, so unknown keys are kept and passed on.
    """

    model_config = ConfigDict(extra="allow")

    name: str
    deck: Literal["skat32", "french52", "spanish40"]
    suits: list[str] = Field(description="suit letters in the deck's order")
    ranks: list[str] = Field(description="rank tokens, low to high")
    deal: Literal["equal", "all"]
    pass_rule: Literal["reenter", "out"]
    equal_rank: Literal["forbidden", "skip_next"]
    top_card_ends_trick: bool
    no_finish_on: list[str] = Field(description="ranks a hand may not be emptied with")
    start_card: Card
    exchange: list[int] = Field(description="cards exchanged: 1st/last place, then 2nd/…")
    return_choice: Literal["choose", "lowest"]
    leftovers: Literal["out", "swap"]
    scoring: Literal["below"] | list[int] = Field(
        description='"below" (one point per player placed after you) or points by place'
    )
    target: int | None
    rounds: int | None
    max_rounds: int
    tie_break: Literal["shared", "last_round"]


class Trick(_ToBot):
    """The trick on the table when a bot is asked to play."""

    leader: Seat
    count: int = Field(ge=0, le=4, description="cards per play in this trick; 0 if you lead")
    top: list[Card] = Field(description="the cards to beat; [] when you lead")


class Standing(_ToBot):
    """One line of the final standings of a match."""

    seat: Seat
    name: str
    place: int = Field(ge=1, description="1 is best; shared on ties")
    score: int
    forfeit: bool


# --- referee -> bot: requests -----------------------------------------------------------


_COUNTS = "cards held now, by seat (protocol 1.1; absent from a 1.0 referee)"


class Hello(_ToBot):
    """First request to a bot process; answer with ready within hello_ms."""

    type: Literal["hello"] = "hello"
    id: int
    protocol: Literal[1] = PROTOCOL_VERSION
    time: TimeControl


class ActPlay(_ToBot):
    """Your turn in a trick: lead, follow, or pass (cards [], never when leading)."""

    type: Literal["act"] = "act"
    id: int
    kind: Literal["play"] = "play"
    hand: list[Card]
    trick: Trick
    passed: list[Seat] = Field(description="seats out of this trick (pass_rule out)")
    legal: list[list[Card]] = Field(
        description="every legal play, one per multiset of ranks, sorted; [] is a pass"
    )
    bank_ms: int = Field(ge=0, description="time left in your bank")
    counts: list[int] = Field(description=_COUNTS)


class ActGive(_ToBot):
    """Choose the cards to give back in the exchange, after receiving."""

    type: Literal["act"] = "act"
    id: int
    kind: Literal["give"] = "give"
    hand: list[Card]
    to: Seat
    count: int = Field(ge=1)
    counts: list[int] = Field(description=_COUNTS)


class ActLeftover(_ToBot):
    """Take one face-up leftover and discard one card of your hand afterwards."""

    type: Literal["act"] = "act"
    id: int
    kind: Literal["leftover"] = "leftover"
    hand: list[Card]
    offer: list[Card] = Field(min_length=1, description="the face-up leftovers still there")
    counts: list[int] = Field(description=_COUNTS)


# --- referee -> bot: events -------------------------------------------------------------


SEED_LIMIT = 2**53
"""``match_start``'s ``seed`` is below this: a JSON number every language reads exactly."""


class MatchStart(_ToBot):
    """A match begins: your seat, everybody's names, the rules, and a seed for your own
    random choices (protocol 1.2)."""

    type: Literal["match_start"] = "match_start"
    match: str
    seat: Seat
    players: list[str] = Field(description="names by seat")
    rules: Rules
    bank_ms: int = Field(ge=0)
    seed: int = Field(
        ge=0,
        lt=SEED_LIMIT,
        description="a seed for your own random choices, the same for your seat wherever "
        "the same cards are dealt to it; it tells nothing of the cards (protocol 1.2; "
        "absent from an older referee)",
    )


class RoundStart(_ToBot):
    """Cards are dealt; sent before leftovers and the exchange."""

    type: Literal["round_start"] = "round_start"
    round: int = Field(ge=1)
    dealer: Seat
    hand: list[Card]
    hand_sizes: list[int] = Field(description="cards held, by seat")
    roles: list[Role] | None = Field(description="roles from the last round by seat; null first")
    scores: list[int] = Field(description="match totals, by seat")
    leftovers: list[Card] = Field(description="face-up cards offered this round, or []")


class Played(_ToBot):
    """A seat played cards."""

    type: Literal["played"] = "played"
    seat: Seat
    cards: list[Card]


class Passed(_ToBot):
    """A seat passed."""

    type: Literal["passed"] = "passed"
    seat: Seat


class Skipped(_ToBot):
    """A seat lost its turn to an equal-rank play (equal_rank skip_next)."""

    type: Literal["skipped"] = "skipped"
    seat: Seat


class TrickEnd(_ToBot):
    """A trick is over; leader leads the next one."""

    type: Literal["trick_end"] = "trick_end"
    winner: Seat
    reason: Literal["all_passed", "top_card"]
    leader: Seat


class Finished(_ToBot):
    """A seat emptied its hand and took a place."""

    type: Literal["finished"] = "finished"
    seat: Seat
    place: int = Field(ge=1)


class Eliminated(_ToBot):
    """A seat holds only no_finish_on ranks: out at once, at the lowest free place."""

    type: Literal["eliminated"] = "eliminated"
    seat: Seat
    place: int = Field(ge=1)
    cards: list[Card] = Field(description="the forbidden cards it held; out of play")


class Exchanged(_ToBot):
    """Public: count cards went from one seat to another in the exchange."""

    type: Literal["exchanged"] = "exchanged"
    from_: Seat = Field(alias="from")
    to: Seat
    count: int = Field(ge=1)


class Received(_ToBot):
    """Private: these cards were added to your hand."""

    type: Literal["received"] = "received"
    from_: Seat = Field(alias="from")
    cards: list[Card]


class LeftoverTaken(_ToBot):
    """Public: a seat took a face-up leftover (its discard stays hidden)."""

    type: Literal["leftover_taken"] = "leftover_taken"
    seat: Seat
    card: Card


class Fault(_ToBot):
    """Public: a seat forfeited; the fallback policy plays it from now on."""

    type: Literal["fault"] = "fault"
    seat: Seat
    kind: FaultKind
    detail: str


class RoundEnd(_ToBot):
    """A round is over."""

    type: Literal["round_end"] = "round_end"
    places: list[Seat] = Field(description="seats in place order, 1st first")
    points: list[int] = Field(description="points of this round, by seat")
    scores: list[int] = Field(description="match totals, by seat")


class MatchEnd(_ToBot):
    """A match is over. Another match_start or bye follows."""

    type: Literal["match_end"] = "match_end"
    standings: list[Standing]


class Bye(_ToBot):
    """No more matches: exit now."""

    type: Literal["bye"] = "bye"


# --- bot -> referee ---------------------------------------------------------------------


class Ready(_FromBot):
    """The answer to hello."""

    id: StrictInt
    type: Literal["ready"]
    name: StrictStr
    version: StrictStr | None = Field(default=None, exclude_if=lambda v: v is None)


class PlayReply(_FromBot):
    """The answer to act kind play; cards [] is a pass."""

    id: StrictInt
    cards: list[StrictStr]


class GiveReply(_FromBot):
    """The answer to act kind give: the cards given back."""

    id: StrictInt
    cards: list[StrictStr]


class LeftoverReply(_FromBot):
    """The answer to act kind leftover: the card taken and the card discarded."""

    id: StrictInt
    take: StrictStr
    discard: StrictStr


Act: TypeAlias = ActPlay | ActGive | ActLeftover
ToBot: TypeAlias = (
    Hello
    | ActPlay
    | ActGive
    | ActLeftover
    | MatchStart
    | RoundStart
    | Played
    | Passed
    | Skipped
    | TrickEnd
    | Finished
    | Eliminated
    | Exchanged
    | Received
    | LeftoverTaken
    | Fault
    | RoundEnd
    | MatchEnd
    | Bye
)
Reply: TypeAlias = Ready | PlayReply | GiveReply | LeftoverReply

_REPLY_MODELS: dict[str, type[Reply]] = {
    "hello": Ready,
    "play": PlayReply,
    "give": GiveReply,
    "leftover": LeftoverReply,
}

# What each reply field must hold, in the words of a fault detail.
_EXPECTED: dict[str, str] = {
    "id": "an integer",
    "type": 'the string "ready"',
    "name": "a string",
    "version": "a string",
    "cards": "a list of card strings",
    "take": "a card string",
    "discard": "a card string",
}


# --- encoding ---------------------------------------------------------------------------


def encode(msg: BaseModel | Mapping[str, Any]) -> bytes:
    """One compact JSON line (``\\n``-terminated UTF-8) for a message.

    Models are serialised by pydantic-core straight to bytes, field names by alias
    (``from``), nulls kept except where a field is optional (``Ready.version``).
    A mapping is dumped as it is, unchecked: the escape hatch for a message that is
    already a plain dict, such as a line from a transcript.

    Building and encoding a model costs about what ``json.dumps`` of the same plain dict
    does (docs/performance.md): validation is nearly free next to the dump, so the referee
    builds models and needs no dict fast path. Encode an event once and write the same
    bytes to every bot.
    """
    if isinstance(msg, BaseModel):
        return msg.__pydantic_serializer__.to_json(msg) + b"\n"
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _act_tag(data: Any) -> str | None:
    """Discriminator of :data:`ToBot`: the ``type``, refined by ``kind`` for ``act``."""
    if isinstance(data, dict):
        kind, act_kind = data.get("type"), data.get("kind")
    else:
        kind, act_kind = getattr(data, "type", None), getattr(data, "kind", None)
    if kind == "act":
        return f"act:{act_kind}"
    return kind if isinstance(kind, str) else None


_TO_BOT_TAGS: dict[str, type[_ToBot]] = {
    "hello": Hello,
    "act:play": ActPlay,
    "act:give": ActGive,
    "act:leftover": ActLeftover,
    "match_start": MatchStart,
    "round_start": RoundStart,
    "played": Played,
    "passed": Passed,
    "skipped": Skipped,
    "trick_end": TrickEnd,
    "finished": Finished,
    "eliminated": Eliminated,
    "exchanged": Exchanged,
    "received": Received,
    "leftover_taken": LeftoverTaken,
    "fault": Fault,
    "round_end": RoundEnd,
    "match_end": MatchEnd,
    "bye": Bye,
}

_to_bot_adapter: TypeAdapter[ToBot] = TypeAdapter(
    Annotated[
        Annotated[Hello, Tag("hello")]
        | Annotated[ActPlay, Tag("act:play")]
        | Annotated[ActGive, Tag("act:give")]
        | Annotated[ActLeftover, Tag("act:leftover")]
        | Annotated[MatchStart, Tag("match_start")]
        | Annotated[RoundStart, Tag("round_start")]
        | Annotated[Played, Tag("played")]
        | Annotated[Passed, Tag("passed")]
        | Annotated[Skipped, Tag("skipped")]
        | Annotated[TrickEnd, Tag("trick_end")]
        | Annotated[Finished, Tag("finished")]
        | Annotated[Eliminated, Tag("eliminated")]
        | Annotated[Exchanged, Tag("exchanged")]
        | Annotated[Received, Tag("received")]
        | Annotated[LeftoverTaken, Tag("leftover_taken")]
        | Annotated[Fault, Tag("fault")]
        | Annotated[RoundEnd, Tag("round_end")]
        | Annotated[MatchEnd, Tag("match_end")]
        | Annotated[Bye, Tag("bye")],
        Discriminator(_act_tag),
    ]
)


def parse_to_bot(data: bytes | str | Mapping[str, Any]) -> ToBot:
    """Validate a referee-to-bot message (a JSON line or a decoded object).

    For tests and transcript replay; raises :class:`pydantic.ValidationError` when the
    message is not one of the protocol's.
    """
    if isinstance(data, bytes | str):
        return _to_bot_adapter.validate_json(data)
    return _to_bot_adapter.validate_python(dict(data))


# --- parsing replies --------------------------------------------------------------------


@overload
def parse_reply(line: bytes, expected_id: int, kind: Literal["hello"]) -> Ready: ...
@overload
def parse_reply(line: bytes, expected_id: int, kind: Literal["play"]) -> PlayReply: ...
@overload
def parse_reply(line: bytes, expected_id: int, kind: Literal["give"]) -> GiveReply: ...
@overload
def parse_reply(line: bytes, expected_id: int, kind: Literal["leftover"]) -> LeftoverReply: ...
@overload
def parse_reply(line: bytes, expected_id: int, kind: str) -> Reply: ...
def parse_reply(line: bytes, expected_id: int, kind: str) -> Reply:
    """Read one reply line to the request ``expected_id`` of the given ``kind``.

    ``kind`` is ``"hello"`` for the answer to ``hello``, else the ``act`` kind (``play``,
    ``give``, ``leftover``). A trailing newline is allowed. Raises ``BotFault("protocol",
    detail)`` when the line is not a well-formed reply (the fault carries ``request_id``
    and the line cut to 200 bytes); raises ``ValueError`` for an unknown ``kind``, which is
    the caller's bug. The cards are not checked against the hand or the rules.
    """
    model = _REPLY_MODELS.get(kind)
    if model is None:
        raise ValueError(f"unknown reply kind {kind!r} (allowed: {', '.join(REPLY_KINDS)})")
    body = _body(line)
    if kind in _CARDS_MODELS and len(body) <= MAX_LINE_BYTES:
        reply = _cards_reply(body, expected_id, kind)
        if reply is not None:
            return reply
    return _parse_reply(line, body, expected_id, model)


def _body(line: bytes) -> bytes:
    """The line without its newline, and without a ``\\r`` before it (tolerated, and not
    counted: SPEC.md §2)."""
    body = line[:-1] if line.endswith(b"\n") else line
    return body[:-1] if body.endswith(b"\r") else body


def _parse_reply(line: bytes, body: bytes, expected_id: int, model: type[Reply]) -> Reply:
    """:func:`parse_reply` for any line: every check in turn, a fault at the first that fails."""

    def fault(detail: str) -> BotFault:
        return BotFault("protocol", detail, request_id=expected_id, reply=reply_excerpt(line))

    if len(body) > MAX_LINE_BYTES:
        raise fault(f"reply line is {len(body)} bytes; the limit is {MAX_LINE_BYTES}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fault(f"reply is not valid UTF-8 (bad byte at offset {exc.start})") from None
    if not text.strip():
        raise fault("reply is an empty line")
    depth = _nesting(body)
    if depth > MAX_NESTING:
        raise fault(f"reply nests arrays/objects {depth} deep; the limit is {MAX_NESTING}")
    try:
        data = _strict_json.decode(text)
    except _RefusedNumber as exc:
        raise fault(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise fault(f"reply is not valid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise fault("reply is nested too deeply to parse") from None
    except ValueError:  # an integer with more digits than Python converts (bounded work)
        limit = sys.get_int_max_str_digits()
        raise fault(f"reply holds an integer of more than {limit} digits") from None
    if not isinstance(data, dict):
        raise fault(f"reply must be a JSON object, got {_json_kind(data)}")

    if "id" not in data:
        raise fault("reply is missing field 'id'")
    reply_id = data["id"]
    if type(reply_id) is not int:
        raise fault(f"field 'id' must be an integer, got {_json_kind(reply_id)}")
    if reply_id != expected_id:
        raise fault(f"reply id {reply_id} does not match request id {expected_id}")
    cards = data.get("cards")
    if type(cards) is list and "cards" in model.model_fields:
        bad = _first_non_string(cards)
        if bad is not None:
            # Checked here: pydantic would build one error per bad item (50 ms for 32,000).
            expected = _EXPECTED["cards"]
            raise fault(f"field 'cards' must be {expected}; item {bad} is {_json_kind(cards[bad])}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise fault(_describe(exc, data)) from None


# The fast path: a play or give reply of the usual shape, ``{"id":N,"cards":[...]}`` or
# ``{"cards":[...],"id":N}``, with JSON whitespace anywhere between tokens, a plain decimal
# id and card strings of letters and digits only (no escapes). Such a line is valid strict
# JSON, two levels deep, ASCII, with nothing else in it, so the full parse could only
# accept it as the same reply; every other line takes the full parse, faults included. A
# test checks both paths against each other on generated and hostile lines (and so would
# notice a reply model that changed under this copy of its shape).
_WS = rb"[ \t\r\n]*"
_ID_FIELD = rb'"id"' + _WS + rb":" + _WS + rb"(?P<id>0|[1-9][0-9]{0,17})"
_TOKEN = rb'"[0-9A-Za-z]{1,8}"'
_CARDS_FIELD = (
    rb'"cards"'
    + _WS
    + rb":"
    + _WS
    + rb"\["
    + _WS
    + rb"(?P<cards>(?:"
    + _TOKEN
    + _WS
    + rb"(?:,"
    + _WS
    + _TOKEN
    + _WS
    + rb")*)?)\]"
)


def _object(first: bytes, second: bytes) -> re.Pattern[bytes]:
    return re.compile(_WS + rb"\{" + _WS + first + _WS + rb"," + _WS + second + _WS + rb"\}" + _WS)


_CARDS_REPLIES = (_object(_ID_FIELD, _CARDS_FIELD), _object(_CARDS_FIELD, _ID_FIELD))
_CARD = re.compile(r'"([0-9A-Za-z]+)"')
_CARDS_MODELS: dict[str, type[PlayReply] | type[GiveReply]] = {
    "play": PlayReply,
    "give": GiveReply,
}


def _cards_reply(body: bytes, expected_id: int, kind: str) -> PlayReply | GiveReply | None:
    """The reply, when ``body`` has the usual shape (see above) and the expected id; else
    ``None``, and the full parse decides (a wrong id is its fault to describe)."""
    for shape in _CARDS_REPLIES:
        match = shape.fullmatch(body)
        if match is not None:
            break
    else:
        return None
    if int(match["id"]) != expected_id:
        return None
    cards = _CARD.findall(match["cards"].decode("ascii"))
    return _CARDS_MODELS[kind].model_validate({"id": expected_id, "cards": cards})


def reply_excerpt(line: bytes) -> str:
    """The offending line as a fault records it: its first 200 bytes, decoded leniently.

    The cut never splits a character: an incomplete UTF-8 sequence at the cut is dropped
    rather than shown as U+FFFD, while invalid bytes elsewhere are replaced by U+FFFD. The
    result holds no lone surrogate, so it always fits a JSON log line.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(line[:_REPLY_CUT], final=len(line) <= _REPLY_CUT)


class _RefusedNumber(ValueError):
    """A number JSON allows in its grammar but a reply may not hold; the text is the detail."""


def _refuse_constant(name: str) -> Any:
    raise _RefusedNumber(f"reply is not valid JSON: {name} is not a JSON value")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if value - value != 0.0:  # inf (NaN cannot come from a JSON number literal)
        shown = literal if len(literal) <= 20 else literal[:17] + "..."
        raise _RefusedNumber(f"reply holds a number out of range: {shown}")
    return value


# Strict JSON (RFC 8259): NaN, Infinity and -Infinity are refused, and so is a number that
# only fits a float as infinity (1e999). Integers keep Python's own cap on digits
# (sys.get_int_max_str_digits, 4300), which bounds the work of converting them.
_strict_json = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def _first_non_string(items: list[Any]) -> int | None:
    """Index of the first item of a decoded list that is not a string, or None.

    Runs at C speed (``map``, ``set``, ``list.index``) even for 32,000 items.
    """
    types = list(map(type, items))
    odd = set(types) - {str}
    if not odd:
        return None
    return min(types.index(t) for t in odd)


# _nesting keeps only brackets, as signed steps: [ and { are +1, ] and } are -1 (0xff).
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")


def _nesting(body: bytes, limit: int = MAX_NESTING) -> int:
    r"""Deepest nesting of ``[``/``{`` outside strings, in linear time whatever the line.

    A line with at most ``limit`` brackets cannot nest deeper than that, so ordinary
    replies skip the rest (and 0 is returned: within the limit, the figure is not needed). The
    scan is the usual state machine (in a string, after a backslash, depth) run as a few
    whole-line byte operations, each linear and at C speed, instead of a loop in Python;
    no regular expression (the one that matched strings backtracked, and took seconds on
    64 KiB of escaped quotes; docs/performance.md, the reply parser):

    1. drop escape pairs: ``\\`` first, then ``\"``, so only real quotes are left
       (a run of backslashes pairs off from the left, as in JSON);
    2. split on ``"``: every other piece is outside a string (an unterminated string runs
       to the end of the line);
    3. keep only the brackets there, as steps of +1 and -1, and take the highest running
       sum: ``accumulate`` over a signed byte array or, when few brackets close, over the
       runs of opening ones between two closing ones (64 KiB of ``[`` is one run), each
       at C speed.

    For a line that is not JSON the figure may be off (a backslash outside a string is
    taken as an escape); the parser refuses such a line anyway, and deep nesting there is
    still caught by ``RecursionError``.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return 0
    unescaped = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    steps = outside.translate(_STEPS, _NOT_BRACKET)
    if steps.count(1) <= limit:
        return 0
    closes = steps.count(0xFF)
    if closes * 4 < len(steps):
        # The depth after the i-th close is the opens so far minus i.
        opens = itertools.accumulate(map(len, steps.split(b"\xff")))
        deepest: int = max(map(operator.sub, opens, itertools.count()))
    else:
        deepest = max(itertools.accumulate(array("b", steps)))
    return deepest


def _json_kind(value: object) -> str:
    """The JSON name of a decoded value, with an article, for fault details."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _describe(exc: ValidationError, data: dict[str, Any]) -> str:
    """A one-line fault detail for the first thing wrong with a reply."""
    error = exc.errors()[0]
    loc = error["loc"]
    field = str(loc[0]) if loc else "?"
    if error["type"] == "missing":
        return f"reply is missing field '{field}'"
    expected = _EXPECTED.get(field, "of another type")
    value = data.get(field)
    if len(loc) > 1 and isinstance(value, list) and isinstance(loc[1], int):
        item = value[loc[1]]
        return f"field '{field}' must be {expected}; item {loc[1]} is {_json_kind(item)}"
    if field == "type" and isinstance(value, str):
        return f"field 'type' must be {expected}, got {json.dumps(value[:40])}"
    return f"field '{field}' must be {expected}, got {_json_kind(value)}"
