"""One match between bots: the engine, the bots' sessions, the clock, faults, the log.

The layers, from the bytes up: :mod:`referee.protocol.channel` frames a bot's streams into timed
lines; :mod:`referee.protocol.session` speaks the protocol over them (``hello``, one request at a
time, ``bye``) and keeps bots between matches; here a :class:`Match` drives a
:class:`~referee.rules.Game` with one session per seat, in named steps:

* **broadcast** the engine's new events to the seats (each event once, encoded by the
  :class:`EventTranslator`) and flush the log;
* **request** the decision the engine awaits from the seat to act, within ``move_ms`` plus
  what is left of its bank;
* **apply** the reply through the engine (:meth:`~referee.rules.Game.decide`, which the
  replayer uses too);
* **forfeit** a seat whose bot failed in any way: its process is killed, everyone is told,
  and the engine's fallback policy plays it so the others' game stays valid;
* **result**: the standings, the faults, the faulted bots' stderr reports, each seat's
  reply times and the bank it spent, and the decisions its bot kit replaced with safe ones
  (the marker lines the kit wrote on stderr, :mod:`referee.protocol.kit`): a mistake the
  kit's safety net hid is still told.

With a log, every seat's stderr goes beside it (:mod:`referee.stderrlog`), each piece filed
under the log line of the decision the bot was asked for when it wrote it: before each
request the seat is told that line (:meth:`Match._ask_toward`).

Events are queued per bot and written with that bot's next request (or at the end of the
match): one write per request instead of one per event, and a bot that does not read its
stdin can only stall its own request, which its time limit bounds.

:func:`play_match` plays one match at a table seated by :func:`referee.protocol.seats.seated`
(the one way to start or borrow bots, greet them and clean up), on the time control and the
clock they were greeted with. :func:`play_once` is a command's match: seated, played, the
sandbox closed, stopping cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from referee.clock import Clock, MonotonicClock
from referee.errors import BotFault, IllegalMove, InfrastructureError
from referee.matchlog import LogWriter
from referee.protocol import messages as m
from referee.protocol.channel import STDERR_CAP
from referee.protocol.seats import Table, seated
from referee.protocol.session import SeatSession
from referee.results import FaultInfo, MatchResult, SeatResult
from referee.rules import events as ev
from referee.rules.engine import GIVE, LEFTOVER, PLAY, EngineMemo, Game, roles_for
from referee.rules.ruleset import ResolvedRules
from referee.sandbox.base import BotSpec, Limits, Sandbox
from referee.specs import TimeControl
from referee.stderrlog import stderr_json, stderr_path

__all__ = ["EventTranslator", "Match", "bot_seed", "play_match", "play_once", "run_in_command"]

_STDERR_REPORT = 4096
_T = TypeVar("_T")
_Messages = list[tuple[int | None, bytes]]


def bot_seed(match_seed: int, seat: int) -> int:
    """``match_start``'s ``seed`` for ``seat`` (protocol 1.2): a seed for the bot's own random
    choices, below :data:`~referee.protocol.messages.SEED_LIMIT`.

    HMAC-SHA256, keyed by the match seed, of its own label and the seat. The match seed is
    derived from the deal secret (:mod:`referee.tournament.deals`), so this is too, under a
    label of its own: the same for a seat wherever the same cards are dealt to it (both
    halves of a ``referee compare`` pair, whose bots then draw the same random numbers),
    different from seat to seat, and one-way, so it tells a bot nothing of the match seed
    and nothing of the cards.
    """
    key = str(match_seed).encode("ascii")
    digest = hmac.new(key, b"referee bot seed\0%d" % seat, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % m.SEED_LIMIT


class EventTranslator:
    """Turns the engine's events into the lines each seat receives.

    Most events are public and read the same in the protocol as in the match log (a play,
    a pass, a trick's end, a fault without its log-only fields): they are encoded once from
    :meth:`~referee.rules.events.Played.log` and the common ones reused from a memo. The
    few that differ by seat have their own method below: a deal is each seat's own
    ``round_start``, an exchange tells the receiver which cards it got, a leftover hides
    the discard. The referee's own lines are correct by construction; the schema and
    transcript tests check them against :mod:`referee.protocol.messages`.
    """

    def __init__(self, game: Game) -> None:
        self.game = game
        self.names = game.codec.names
        self.roles: list[m.Role] | None = None
        self.scores = [0] * game.n
        # Shared by every game of this deck and rank order: an event's line is the same.
        self._memo = game.codec.encodings()
        self._special: dict[type, Callable[[Any], _Messages]] = {
            ev.Deal: self._deal,
            ev.Exchange: self._exchange,
            ev.Leftover: self._leftover,
            ev.Fault: self._fault,
            ev.RoundEnd: self._round_end,
        }

    def messages(self, event: ev.Event) -> _Messages:
        """``(seat or None for everyone, encoded line)`` pairs for one engine event."""
        kind = type(event)
        if kind in _MEMO_EVENTS:  # the common case first
            data = self._memo.get(event)
            if data is None:
                data = self._memo[event] = _line(event.log(self.names))
            return [(None, data)]
        special = self._special.get(kind)
        if special is not None:
            return special(event)
        return [(None, _line(event.log(self.names)))]

    def known_line(self, event: ev.Event) -> bytes | None:
        """The public line of ``event`` when it was encoded already and reads the same in
        the match log (a play, a pass, ...: the memo's); ``None`` otherwise."""
        return self._memo.get(event) if type(event) in _MEMO_EVENTS else None

    def _deal(self, deal: ev.Deal) -> _Messages:
        names = self.names
        swap = self.game.rules.leftovers == "swap" and deal.round > 1
        offer = [names[c] for c in sorted(deal.leftovers)] if swap else []
        sizes = [len(h) for h in deal.hands]
        return [
            (
                seat,
                m.encode(
                    m.RoundStart.model_construct(
                        round=deal.round,
                        dealer=deal.dealer,
                        hand=[names[c] for c in sorted(hand)],
                        hand_sizes=sizes,
                        roles=self.roles,
                        scores=list(self.scores),
                        leftovers=offer,
                    )
                ),
            )
            for seat, hand in enumerate(deal.hands)
        ]

    def _exchange(self, exchange: ev.Exchange) -> _Messages:
        giver, receiver, cards = exchange.giver, exchange.to, exchange.cards
        public = m.Exchanged.model_construct(from_=giver, to=receiver, count=len(cards))
        private = m.Received.model_construct(from_=giver, cards=[self.names[c] for c in cards])
        return [(None, m.encode(public)), (receiver, m.encode(private))]

    def _leftover(self, leftover: ev.Leftover) -> _Messages:
        taken = m.LeftoverTaken.model_construct(seat=leftover.seat, card=self.names[leftover.take])
        return [(None, m.encode(taken))]

    def _fault(self, fault: ev.Fault) -> _Messages:
        public = m.Fault.model_construct(seat=fault.seat, kind=fault.kind, detail=fault.detail)
        return [(None, m.encode(public))]

    def _round_end(self, end: ev.RoundEnd) -> _Messages:
        self.roles = cast(list[m.Role], roles_for(end.places, self.game.n))
        self.scores = list(end.scores)
        return [(None, _line(end.log(self.names)))]


def _line(data: dict[str, Any]) -> bytes:
    return _dumps(data).encode() + b"\n"


_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

_MEMO_EVENTS = frozenset({ev.Played, ev.Passed, ev.Skipped, ev.TrickEnd, ev.Finished})


def _act_play_line(
    request_id: int,
    hand: list[str],
    trick: dict[str, Any],
    passed: list[int],
    legal: list[list[str]],
    bank_ms: int,
    counts: list[int],
) -> bytes:
    """The ``act``/``play`` request, the most frequent line, exactly as :class:`m.ActPlay`.

    Written out directly because it is on every request's path (card strings are plain
    ASCII tokens, so they need no escaping); a test checks it against the model's encoding.
    """
    legal_json = ",".join(_cards_json(p) for p in legal)
    return (
        f'{{"type":"act","id":{request_id},"kind":"play","hand":{_cards_json(hand)},'
        f'"trick":{{"leader":{trick["leader"]},"count":{trick["count"]},'
        f'"top":{_cards_json(trick["top"])}}},"passed":{_ints_json(passed)},'
        f'"legal":[{legal_json}],"bank_ms":{bank_ms},"counts":{_ints_json(counts)}}}\n'
    ).encode()


def _cards_json(cards: list[str]) -> str:
    return '["' + '","'.join(cards) + '"]' if cards else "[]"


def _ints_json(numbers: list[int]) -> str:
    return "[" + ",".join(map(str, numbers)) + "]"


async def _settle_stderr() -> None:
    """Let the bots' stderr readers take what is already in their pipes.

    A kit writes its marker line on stderr before its reply on stdout, but the two are
    read by separate tasks: the marker of the match's last decision may still wait in its
    pipe when the match ends. A few turns of the loop let the readers take it.
    """
    for _ in range(3):
        await asyncio.sleep(0)


class Match:
    """One match with started (and greeted) bots, one session per seat (see the module).

    ``time_control`` must be the one the bots were greeted under, ``request_ids`` go on
    from their ``hello`` ids, and ``clock`` is the one their sessions are timed on (it
    times the match's duration): :func:`play_match` takes all three from the table.
    """

    def __init__(
        self,
        sessions: Sequence[SeatSession],
        rules: ResolvedRules,
        seed: int,
        match_id: str,
        time_control: TimeControl,
        *,
        log_path: Path | str | None = None,
        request_ids: itertools.count[int] | None = None,
        clock: Clock | None = None,
        memo: EngineMemo | None = None,
    ) -> None:
        self.sessions = list(sessions)
        self.rules = rules
        self.seed = seed
        self.match_id = match_id
        self.time_control = time_control
        self.log_path = log_path
        self.game = Game(rules, [s.name for s in sessions], seed, memo=memo)
        self.banks = [time_control.bank_ms] * len(sessions)
        self.reply_ms: list[list[int]] = [[] for _ in sessions]
        """Each seat's reply times (ms), in the order of its requests (replies that came)."""
        self.answered = [0] * len(sessions)
        """Requests each seat answered in time (a fault's history: slow, or never flushed)."""
        self.faults: dict[int, FaultInfo] = {}
        self._ids = request_ids or itertools.count(1)
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self._translator = EventTranslator(self.game)
        self._writer = LogWriter(log_path, self.game, match_id, self._translator.known_line)
        self._sent = 0  # engine events already broadcast
        self._started = False  # faults from now on are the match's, not the greeting's
        self._outboxes = self._live_outboxes()
        self._requests: dict[str, Callable[[int, int], bytes]] = {
            PLAY: self._act_play,
            GIVE: self._act_give,
            LEFTOVER: self._act_leftover,
        }

    async def play(self) -> MatchResult:
        """Play the match to its end and return the result; the log is always closed."""
        started = self.clock.monotonic()
        try:
            await self._start()
            sessions = self.sessions
            while (pending := self._broadcast()) is not None:
                if any(s.unasked for s in sessions) and await self._forfeit_unasked():
                    continue
                await self._turn(*pending)
            await self._deliver_the_rest()
            await _settle_stderr()
        finally:
            self._writer.close()
        self._write_stderr()
        return self._result(self.clock.monotonic() - started)

    # -- the steps -------------------------------------------------------------------------

    async def _start(self) -> None:
        """Forfeit seats whose bot failed already (at ``hello``), queue ``match_start``."""
        for seat, session in enumerate(self.sessions):
            if session.fault is not None:
                await self._forfeit(seat, session.fault)
            else:
                session.start_stderr_section()  # this match's stderr, apart from start-up's
            session.file_stderr_at(2)  # the first line after the header
        self._started = True
        players = [s.name for s in self.sessions]
        rules = m.Rules.model_validate(self.rules.as_protocol())
        for seat, session in enumerate(self.sessions):
            start = m.MatchStart(
                match=self.match_id,
                seat=seat,
                players=players,
                rules=rules,
                bank_ms=self.time_control.bank_ms,
                seed=bot_seed(self.seed, seat),
            )
            session.queue(m.encode(start))

    def _live_outboxes(self) -> tuple[list[list[bytes] | None], list[list[bytes]]]:
        """The outbox of each seat whose bot still plays (a forfeited seat is told nothing),
        by seat, and all of them; made again whenever a seat forfeits."""
        by_seat = [s.outbox if s.alive else None for s in self.sessions]
        return by_seat, [box for box in by_seat if box is not None]

    def _broadcast(self) -> tuple[str, int] | None:
        """Queue the engine's new events for the seats; returns the decision it awaits."""
        events = self.game.events
        if self._sent < len(events):
            outboxes, everyone = self._outboxes
            for event in events[self._sent :]:
                for target, data in self._translator.messages(event):
                    if target is None:
                        for box in everyone:
                            box.append(data)
                    elif (own := outboxes[target]) is not None:
                        own.append(data)
            self._sent = len(events)
        self._writer.maybe_flush()
        return self.game.pending

    async def _forfeit_unasked(self) -> bool:
        """Forfeit the bots that wrote lines nobody asked for; True when there was one.

        Faulted now rather than at the bot's next request, which may never come.
        """
        flooded = [i for i, s in enumerate(self.sessions) if s.unasked and s.alive]
        for seat in flooded:
            await self._forfeit(seat, self.sessions[seat].unasked_fault())
        return bool(flooded)

    async def _turn(self, kind: str, seat: int) -> None:
        """Ask ``seat`` for the decision of ``kind`` and apply it, or forfeit the seat."""
        rid = next(self._ids)
        line = self._requests[kind](rid, seat)
        budget = self.time_control.move_ms + self.banks[seat]
        session = self.sessions[seat]
        self._ask_toward(seat)
        try:
            reply, raw, elapsed = await session.request(line, rid, kind, budget)
            self.reply_ms[seat].append(elapsed)
            self.banks[seat] -= max(0, elapsed - self.time_control.move_ms)
            self._apply(kind, seat, reply, raw, rid, elapsed)
            self.answered[seat] += 1
        except BotFault as fault:
            if fault.kind == "timeout":
                self.banks[seat] = 0  # past move_ms and all of the bank
            await self._forfeit(seat, fault)

    def _ask_toward(self, seat: int) -> None:
        """File what the seat writes to stderr from now on under the log line its decision
        (or its fault) is about to take: the next event's (the header is line 1)."""
        self.sessions[seat].file_stderr_at(len(self.game.events) + 2)

    def _apply(
        self, kind: str, seat: int, reply: m.Reply, raw: bytes, rid: int, elapsed: int
    ) -> None:
        """The reply through the engine; an illegal one is the bot's fault."""
        try:
            self.game.decide(kind, seat, vars(reply))
        except IllegalMove as exc:
            raise BotFault(
                "illegal",
                exc.reason,
                request_id=rid,
                reply=m.reply_excerpt(raw),
                elapsed_ms=elapsed,
            ) from None

    async def _forfeit(self, seat: int, fault: BotFault) -> None:
        """The seat forfeits: recorded, announced by the engine, its bot killed."""
        session = self.sessions[seat]
        request = session.last_request_data()
        failed = request is not None and request.get("id") == fault.request_id
        self.faults[seat] = FaultInfo(
            kind=fault.kind,
            detail=fault.detail,
            request_id=fault.request_id,
            reply=fault.reply,
            elapsed_ms=fault.elapsed_ms,
            request=request,
            round=self.game.round if failed and request and request["type"] == "act" else None,
            answered=self.answered[seat] if self._started else None,
        )
        self.game.forfeit(
            seat,
            fault.kind,
            fault.detail,
            request_id=fault.request_id,
            reply=fault.reply,
            elapsed_ms=fault.elapsed_ms,
        )
        await session.forfeit(fault)
        self._outboxes = self._live_outboxes()

    async def _deliver_the_rest(self) -> None:
        """Write the last events (``round_end``, ``match_end``) to every bot still playing.

        Every decision is made by now: a bot gone at this point (even one the kernel killed
        for memory above its own limit, an ``InfrastructureError`` anywhere else) changes
        nothing of the result. What the bots write to stderr from now on is filed under
        ``match_end``, the last line.
        """
        for session in self.sessions:
            session.file_stderr_at(len(self.game.events) + 1)
        for session in self.sessions:
            if session.alive:
                try:
                    await session.flush(self.time_control.move_ms / 1000 + 1)
                except (BotFault, InfrastructureError):
                    await session.kill()

    def _result(self, duration_s: float) -> MatchResult:
        standings = self.game.standings or []
        kits = [session.kit_report() for session in self.sessions]
        return MatchResult(
            match=self.match_id,
            seed=self.seed,
            rules=self.rules.name,
            rounds=self.game.round,
            log=str(self.log_path) if self.log_path is not None else None,
            standings=[
                SeatResult(
                    seat=st["seat"],
                    name=st["name"],
                    place=st["place"],
                    score=st["score"],
                    forfeit=st["forfeit"],
                    fault=self.faults.get(st["seat"]),
                    kit_replaced=kits[st["seat"]][0],
                    kit_replacements=tuple(kits[st["seat"]][1]),
                )
                for st in standings
            ],
            duration_s=round(duration_s, 3),
            stderr_tails={
                seat: s.stderr_report(_STDERR_REPORT)
                for seat, s in enumerate(self.sessions)
                if s.fault is not None
            },
            reply_ms={seat: list(times) for seat, times in enumerate(self.reply_ms)},
            bank_spent_ms={
                seat: self.time_control.bank_ms - left for seat, left in enumerate(self.banks)
            },
        )

    def _write_stderr(self) -> None:
        """Every seat's stderr in this match, beside its log (:mod:`referee.stderrlog`)."""
        if self.log_path is None:
            return
        seats = []
        for session in self.sessions:
            kept = session.stderr_kept()
            seats.append((session.name, kept.pieces, kept.cut))
        text = stderr_json(self.match_id, STDERR_CAP, seats)
        stderr_path(self.log_path).write_text(text, encoding="utf-8")

    # -- the requests, by decision kind ----------------------------------------------------

    def _act_play(self, rid: int, seat: int) -> bytes:
        game = self.game
        return _act_play_line(
            rid,
            game.hand_names(seat),
            game.trick_info(),
            game.passed_seats(),
            game.legal_plays(seat),
            self.banks[seat],
            game.counts(),
        )

    def _act_give(self, rid: int, seat: int) -> bytes:
        game = self.game
        act = m.ActGive.model_construct(
            id=rid,
            hand=game.hand_names(seat),
            to=game.give_to,
            count=game.give_count,
            counts=game.counts(),
        )
        return m.encode(act)

    def _act_leftover(self, rid: int, seat: int) -> bytes:
        game = self.game
        offer = [game.codec.names[c] for c in game.offer]
        act = m.ActLeftover.model_construct(
            id=rid, hand=game.hand_names(seat), offer=offer, counts=game.counts()
        )
        return m.encode(act)


async def play_match(
    table: Table,
    rules: ResolvedRules,
    seed: int,
    *,
    match_id: str,
    log_path: Path | str | None = None,
    memo: EngineMemo | None = None,
) -> MatchResult:
    """Play one match at a seated ``table`` (:func:`~referee.protocol.seats.seated`).

    The match plays on the table's time control (the one its bots were greeted under), goes
    on with its request ids and times on its clock; the seating owns the bots' cleanup.
    ``memo`` is the engine's, when the caller plays many matches (a worker's).
    """
    match = Match(
        table.seats,
        rules,
        seed,
        match_id,
        table.time_control,
        log_path=log_path,
        request_ids=table.request_ids,
        clock=table.clock,
        memo=memo,
    )
    return await match.play()


def play_once(
    sandbox: Sandbox,
    bots: Sequence[BotSpec],
    rules: ResolvedRules,
    seed: int,
    *,
    match_id: str,
    time_control: TimeControl | None = None,
    limits: Limits | None = None,
    log_path: Path | str | None = None,
    people: Mapping[int, SeatSession] | None = None,
) -> MatchResult:
    """A command's match: stage ``bots`` (as loaded), seat, play, stop everything, unstage.

    Ctrl-C and SIGTERM stop the match with every bot and the staging folder cleaned up
    (:mod:`referee.interrupts`); the backend's own leftovers are removed too (the sandbox
    is closed at the end). ``people`` seats someone other than a bot (a person at the
    terminal) by seat number; the ``bots`` fill the other seats in order.
    """

    async def go() -> MatchResult:
        async with seated(
            bots,
            sandbox=sandbox,
            time_control=time_control,
            limits=limits,
            occupied=people,
            stage=True,
        ) as table:
            return await play_match(table, rules, seed, match_id=match_id, log_path=log_path)

    return run_in_command(go, sandbox)


def run_in_command(main: Callable[[], Awaitable[_T]], sandbox: Sandbox) -> _T:
    """A command's asyncio part: ``main()`` as the main task, then ``sandbox`` closed.

    Ctrl-C and SIGTERM cancel it, its cleanup runs (every seating stops its bots), and the
    command stops with :class:`~referee.interrupts.Terminated` or ``KeyboardInterrupt``
    (:mod:`referee.interrupts`); the backend's own leftovers go with the sandbox.
    """
    from referee import interrupts

    async def go() -> _T:
        try:
            return await main()
        finally:
            await asyncio.shield(sandbox.aclose())

    return interrupts.run(go())


def seat_of(result: MatchResult, seat: int) -> SeatResult:
    """The standing of ``seat`` in ``result``."""
    return next(st for st in result.standings if st.seat == seat)
