"""Replaying a match log through the engine.

A log holds the deals and every decision; replaying re-applies the decisions to a fresh
:class:`~referee.rules.engine.Game` and checks that every line the engine produces is the
line in the log. The first line that differs raises :class:`~referee.errors.ReplayMismatch`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from referee.errors import IllegalMove, RefereeError, ReplayMismatch, RulesError
from referee.rules.engine import GIVE, LEFTOVER, PLAY, SHUFFLE_ID, EngineMemo, Game
from referee.rules.ruleset import ResolvedRules

# The log lines that record a decision: the kind asked for, and which field names the seat.
_DECISIONS = {
    "played": (PLAY, "seat"),
    "passed": (PLAY, "seat"),
    "exchange": (GIVE, "from"),
    "leftover": (LEFTOVER, "seat"),
}


def game_from_header(
    header: dict[str, Any], deals: dict[int, dict[str, Any]], memo: EngineMemo | None = None
) -> Game:
    """A Game set up from a log's first line, dealing the logged hands."""
    if header.get("type") != "log":
        raise ReplayMismatch(1, "a 'log' header", header.get("type"))
    if header.get("version") != 1:
        raise RefereeError(f"unsupported match log version {header.get('version')!r}")
    players = header.get("players")
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise RefereeError("log header: 'players' must be a list of names")
    rules = ResolvedRules.from_protocol(header.get("rules") or {}, len(players))
    seed = header.get("seed")
    if not isinstance(seed, int):
        raise RefereeError("log header: 'seed' must be an integer")
    memo = memo if memo is not None else EngineMemo()
    ids = memo.codec(rules.deck, tuple(rules.ranks)).ids
    seeded = header.get("shuffle") == SHUFFLE_ID

    def logged_deal(round_no: int, dealer: int) -> tuple[list[list[int]], list[int]]:
        line = deals.get(round_no)
        if line is None:
            raise RefereeError(f"the log has no deal for round {round_no}")
        try:
            hands = [[ids[c] for c in hand] for hand in line["hands"]]
            leftovers = [ids[c] for c in line["leftovers"]]
        except (KeyError, TypeError) as exc:
            raise RefereeError(f"round {round_no}: bad card in the logged deal: {exc}") from None
        return hands, leftovers

    if seeded:
        return Game(rules, players, seed, memo=memo)
    return Game(rules, players, seed, deals=logged_deal, memo=memo)


def replay(lines: Iterable[dict[str, Any]], *, memo: EngineMemo | None = None) -> Game:
    """Replay parsed log lines; returns the finished Game or raises ReplayMismatch.

    ``memo`` is the engine's (:class:`~referee.rules.engine.EngineMemo`), when the caller
    replays many logs.
    """
    rows = list(lines)
    if not rows:
        raise RefereeError("the match log is empty")
    deals = {row["round"]: row for row in rows if row.get("type") == "deal" and "round" in row}
    try:
        game = game_from_header(rows[0], deals, memo)
    except RulesError as exc:
        raise RefereeError(f"log header: {exc}") from None
    produced = 0  # engine events already compared
    for line_no, row in enumerate(rows[1:], start=2):
        events = game.events
        if produced == len(events):
            _apply(game, row, line_no)
            events = game.events
            if produced == len(events):
                raise ReplayMismatch(line_no, row, None, "the engine produced nothing")
        got = game.event_dict(events[produced])
        if got != row:
            raise ReplayMismatch(line_no, row, got)
        produced += 1
    if produced != len(game.events):
        extra = game.event_dict(game.events[produced])
        raise ReplayMismatch(len(rows) + 1, None, extra, "the log ends early")
    if not game.over:
        raise ReplayMismatch(len(rows) + 1, None, game.pending, "the match is not over")
    return game


def _apply(game: Game, row: dict[str, Any], line_no: int) -> None:
    kind = row.get("type")
    pending = game.pending
    try:
        if kind == "fault":
            game.forfeit(
                row["seat"],
                row["kind"],
                row["detail"],
                request_id=row.get("id"),
                reply=row.get("reply"),
                elapsed_ms=row.get("elapsed_ms"),
            )
            return
        decision = _DECISIONS.get(kind) if isinstance(kind, str) else None
        if decision is None or pending is None:
            raise ReplayMismatch(line_no, row, game.pending, "not a decision the engine awaits")
        want, seat_field = decision
        if pending != (want, row.get(seat_field)):
            raise ReplayMismatch(line_no, row, pending, "the engine awaits another decision")
        game.decide(want, pending[1], row)
    except IllegalMove as exc:
        raise ReplayMismatch(line_no, row, None, f"illegal: {exc.reason}") from None
    except (KeyError, TypeError) as exc:
        raise ReplayMismatch(line_no, row, None, f"malformed line: {exc}") from None
