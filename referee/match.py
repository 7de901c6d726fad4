"""One match between bots: the engine, the bot connections, time control, faults, the log.

Layers, from the bytes up:

* :class:`BotSession` frames a bot's stdout into lines (never more than 64 KiB buffered),
  keeps the last 64 KiB of its stderr, notices when the process exits even if a grandchild
  still holds the pipe, and times each request against ``move_ms`` plus the bank. A line
  is timed when it arrives, not when the runner gets to it, so a moment the referee spends
  elsewhere (another bot's reply, the log) is never charged to this bot. Lines nobody
  asked for are counted but only the first is kept, so a flooding bot cannot grow the
  referee's memory; it is faulted before its next request.
* :func:`run_match` drives a :class:`~referee.rules.Game`: it turns engine events into
  protocol messages (:mod:`referee.messages`), asks the seat to act, and turns every
  failure of a bot into a fault: the seat forfeits, its process is killed, and the
  engine's fallback policy plays it so the others' game stays valid.
* :func:`play_match` starts the bots in a sandbox, runs one match and always cleans up.

Events are queued per bot and written together with that bot's next request (or at the
end of the match): one write per request instead of one per event, and a bot that does
not read its stdin can only stall its own request, which its time limit bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from referee import messages as m
from referee.errors import BotFault, IllegalMove
from referee.matchlog import LogWriter
from referee.results import FaultInfo, MatchResult, SeatResult
from referee.rules.engine import GIVE, LEFTOVER, PLAY, Game, roles_for
from referee.rules.ruleset import ResolvedRules
from referee.sandbox.base import BotProcess, BotSpec, ExitInfo, Limits, Sandbox

LINE_CAP = m.MAX_LINE_BYTES
STDERR_CAP = 64 * 1024
UNASKED_CAP = 8
"""Lines nobody asked for after which a bot's output is discarded unread (it is faulted)."""
_BYE_GRACE_S = 1.0
_EXIT_SETTLE_S = 0.1


@dataclass(frozen=True)
class TimeControl:
    """Time per request, the per-match overage bank, and the start-up allowance (ms)."""

    move_ms: int = 1000
    bank_ms: int = 10_000
    hello_ms: int = 10_000

    def as_message(self) -> m.TimeControl:
        return m.TimeControl(move_ms=self.move_ms, bank_ms=self.bank_ms, hello_ms=self.hello_ms)


class _Marker:
    """Something other than a line arrived from the bot."""

    def __init__(self, what: str) -> None:
        self.what = what


_OVERLONG = _Marker("overlong")
_EOF = _Marker("eof")
_EXITED = _Marker("exited")


@dataclass
class BotSession:
    """A started bot: its process, framed stdout, captured stderr and fault state.

    ``lines`` holds what answers a request: ``(line, arrived)`` with the
    ``time.monotonic()`` at which the reader took the line from the pipe, or a marker. A
    line that comes while no request is waiting for one is counted in ``unasked``
    instead; the first is kept in ``unasked_line`` as evidence, and past
    :data:`UNASKED_CAP` the reader discards the bot's output without framing it.
    """

    spec: BotSpec
    proc: BotProcess
    name: str
    lines: asyncio.Queue[tuple[bytes, float] | _Marker] = field(default_factory=asyncio.Queue)
    unasked: int = 0
    unasked_line: bytes | None = None
    fault: BotFault | None = None
    ready_name: str | None = None
    exit_info: ExitInfo | None = None
    outbox: list[bytes] = field(default_factory=list)
    _stderr: bytearray = field(default_factory=bytearray)
    _stderr_dropped: int = 0
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _closed: bool = False
    _awaiting: bool = False  # a request was written and its answer has not arrived yet

    @classmethod
    async def start(
        cls, sandbox: Sandbox, spec: BotSpec, limits: Limits, name: str | None = None
    ) -> BotSession:
        """Start ``spec`` in ``sandbox`` and begin reading its output."""
        proc = await sandbox.start(spec, limits)
        session = cls(spec=spec, proc=proc, name=name or spec.name)
        session._tasks = [
            asyncio.create_task(session._read_stdout()),
            asyncio.create_task(session._read_stderr()),
            asyncio.create_task(session._watch_exit()),
        ]
        return session

    @property
    def alive(self) -> bool:
        return self.fault is None and not self._closed

    # -- reading ---------------------------------------------------------------

    async def _read_stdout(self) -> None:
        buf = bytearray()
        reader = self.proc.stdout
        discard = flooded = False
        try:
            while True:
                chunk = await reader.read(65536)
                arrived = time.monotonic()
                if not chunk:
                    self.lines.put_nowait(_EOF)
                    return
                if discard:
                    # Keep the stream flowing (and dropped) until the bot is gone; a flood
                    # is still counted, at C speed, for the fault detail.
                    if flooded:
                        self.unasked += chunk.count(b"\n")
                    continue
                buf += chunk
                start = 0
                while True:
                    nl = buf.find(b"\n", start)
                    if nl < 0:
                        break
                    end = nl - 1 if nl > start and buf[nl - 1] == 0x0D else nl
                    if end - start > LINE_CAP:  # a \r before the \n is not counted
                        self.lines.put_nowait(_OVERLONG)
                        discard = True
                        break
                    if self._awaiting:
                        self._awaiting = False
                        self.lines.put_nowait((bytes(buf[start:nl]), arrived))
                    else:
                        self.unasked += 1
                        if self.unasked_line is None:
                            self.unasked_line = bytes(buf[start:nl])
                        if self.unasked >= UNASKED_CAP:
                            self.unasked += buf.count(b"\n", nl + 1)
                            discard = flooded = True
                            break
                    start = nl + 1
                if discard:
                    buf.clear()
                    continue
                del buf[:start]
                if len(buf) > LINE_CAP + 1:
                    # Never buffer more than one line's worth (and its \r): a fault.
                    buf.clear()
                    discard = True
                    self.lines.put_nowait(_OVERLONG)
        except (ConnectionError, OSError):
            self.lines.put_nowait(_EOF)

    async def _read_stderr(self) -> None:
        reader = self.proc.stderr
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                self._stderr += chunk
                excess = len(self._stderr) - STDERR_CAP
                if excess > 0:
                    del self._stderr[:excess]
                    self._stderr_dropped += excess

    async def _watch_exit(self) -> None:
        info = await self.proc.wait()
        if info is None:
            return
        self.exit_info = info
        # Let a reply written just before the exit reach the queue first.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_EXIT_SETTLE_S):
                await asyncio.shield(self._tasks[0])
        self.lines.put_nowait(_EXITED)

    def stderr_tail(self, limit: int = STDERR_CAP) -> str:
        """The kept stderr (the last 64 KiB), decoded leniently."""
        text = bytes(self._stderr[-limit:]).decode("utf-8", errors="replace")
        if self._stderr_dropped and limit >= len(self._stderr):
            text = f"[… {self._stderr_dropped} earlier bytes dropped]\n" + text
        return text

    def reset_stderr(self) -> None:
        self._stderr.clear()
        self._stderr_dropped = 0

    # -- writing and requests --------------------------------------------------

    def queue(self, data: bytes) -> None:
        """Queue an event; it is written with the next request or at the match end."""
        if self.alive:
            self.outbox.append(data)

    def _crash(
        self, what: str, *, request_id: int | None = None, elapsed_ms: int | None = None
    ) -> BotFault:
        info = self.exit_info
        how = f" ({info.detail or info.describe()})" if info is not None else ""
        if info is not None and info.oom_killed:
            how = " (killed at the memory limit)"
        return BotFault("crash", f"{what}{how}", request_id=request_id, elapsed_ms=elapsed_ms)

    async def flush(self, timeout_s: float) -> None:
        """Write queued events; a bot that is gone or does not read gets a crash fault."""
        if not self.outbox:
            return
        data = b"".join(self.outbox)
        self.outbox.clear()
        try:
            async with asyncio.timeout(timeout_s):
                await self.proc.write(data)
        except (ConnectionError, OSError):
            raise self._crash("the bot closed its stdin or exited") from None
        except TimeoutError:
            raise BotFault(
                "timeout", f"the bot did not read its input for {timeout_s:.1f} s"
            ) from None

    async def request(
        self, data: bytes, request_id: int, kind: str, budget_ms: int
    ) -> tuple[m.Reply, bytes, int]:
        """Send a request (after queued events) and read its reply within ``budget_ms``.

        Returns the parsed reply, the raw line and the elapsed milliseconds; raises
        :class:`BotFault` for a timeout, a crash or a protocol fault.
        """
        if self.unasked:
            raise self.unasked_fault(request_id)
        self.outbox.append(data)
        payload = b"".join(self.outbox)
        self.outbox.clear()
        self._awaiting = True
        start = time.monotonic()
        deadline_s = budget_ms / 1000
        try:
            async with asyncio.timeout(deadline_s):
                # A failed write means the bot is gone; the reason shows up on the queue.
                with contextlib.suppress(ConnectionError, OSError):
                    await self.proc.write(payload)
                item = await self.lines.get()
        except TimeoutError:
            elapsed = _ms(start)
            raise BotFault(
                "timeout",
                f"no reply within {budget_ms} ms (move_ms + bank left)",
                request_id=request_id,
                elapsed_ms=elapsed,
            ) from None
        if isinstance(item, _Marker):
            elapsed = _ms(start)
            if item is _OVERLONG:
                raise BotFault(
                    "protocol",
                    f"reply line longer than {LINE_CAP} bytes",
                    request_id=request_id,
                    elapsed_ms=elapsed,
                )
            self.lines.put_nowait(item)
            if item is _EOF and self.exit_info is None:
                # Closed stdout: if the process is exiting, report how it ended.
                self.exit_info = await self.proc.wait(_EXIT_SETTLE_S * 2)
            what = "closed its stdout" if self.exit_info is None else "exited"
            raise self._crash(
                f"the bot {what} while a request was outstanding",
                request_id=request_id,
                elapsed_ms=elapsed,
            )
        line, arrived = item
        # Charged up to the line's arrival: the runner may get to it later (another bot's
        # reply, the log), and that time is the referee's, not the bot's.
        elapsed = int((arrived - start) * 1000)
        if elapsed > budget_ms:
            raise BotFault(
                "timeout",
                f"reply after {elapsed} ms; {budget_ms} ms were left (move_ms + bank)",
                request_id=request_id,
                reply=m.reply_excerpt(line),
                elapsed_ms=elapsed,
            )
        try:
            reply = m.parse_reply(line, request_id, kind)
        except BotFault as fault:
            fault.elapsed_ms = elapsed
            raise
        return reply, line, elapsed

    def unasked_fault(self, request_id: int | None = None) -> BotFault:
        """The protocol fault for the lines this bot wrote when no request was waiting."""
        n = self.unasked
        what = "a line" if n == 1 else f"{n} lines"
        return BotFault(
            "protocol",
            f"sent {what} nobody asked for (no request was outstanding)",
            request_id=request_id,
            reply=m.reply_excerpt(self.unasked_line) if self.unasked_line is not None else None,
        )

    async def hello(self, request_id: int, time_control: TimeControl, started: float) -> None:
        """Send ``hello`` and wait for ``ready`` within ``hello_ms`` counted from ``started``."""
        msg = m.encode(m.Hello(id=request_id, protocol=1, time=time_control.as_message()))
        left = time_control.hello_ms - _ms(started)
        try:
            reply, _, _ = await self.request(msg, request_id, "hello", max(left, 1))
        except BotFault as fault:
            if fault.kind == "timeout":
                fault.detail = f"timed out answering hello after {time_control.hello_ms} ms"
            raise
        assert isinstance(reply, m.Ready)
        self.ready_name = reply.name

    async def close(self, *, bye: bool = True) -> ExitInfo:
        """Say ``bye`` (if alive), give the bot a second to exit, then kill and reap it."""
        if not self._closed:
            self._closed = True
            if bye and self.fault is None:
                with contextlib.suppress(BotFault):
                    self.outbox.append(m.encode(m.Bye()))
                    await self.flush(_BYE_GRACE_S)
                await self.proc.close_stdin()
                await self.proc.wait(_BYE_GRACE_S)
        info = await self.proc.cleanup()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.exit_info is None:
            self.exit_info = info
        return info

    async def kill(self) -> None:
        """Kill now (after a fault): no bye, nothing more is sent."""
        self._closed = True
        await self.proc.kill()


def _ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


class EventTranslator:
    """Turns the engine's events into the messages each seat receives.

    Every line is built by a model of :mod:`referee.messages`. The referee's own messages are
    correct by construction, so they are built with ``model_construct`` (no re-validation;
    the schema tests check the shapes), and the common public events (a play, a pass, a
    trick's end) are encoded once per distinct event and reused from a memo.
    """

    def __init__(self, game: Game) -> None:
        self.game = game
        self.n = game.n
        self.names = game.codec.names
        self.roles: list[m.Role] | None = None
        self.scores = [0] * game.n
        self._memo = _EVENT_MEMO.setdefault(id(game.codec), {})
        if len(self._memo) > 50_000:
            self._memo.clear()

    def messages(self, ev: tuple[Any, ...]) -> list[tuple[int | None, bytes]]:
        """``(seat or None for everyone, encoded line)`` pairs for one engine event."""
        t = ev[0]
        if t in _MEMO_EVENTS:
            data = self._memo.get(ev)
            if data is None:
                data = self._encode_public(ev)
                self._memo[ev] = data
            return [(None, data)]
        names = self.names
        if t == "deal":
            _, round_no, dealer, hands, leftovers = ev
            swap = self.game.rules.leftovers == "swap" and round_no > 1
            offer = [names[c] for c in sorted(leftovers)] if swap else []
            sizes = [len(h) for h in hands]
            return [
                (
                    seat,
                    m.encode(
                        m.RoundStart.model_construct(
                            round=round_no,
                            dealer=dealer,
                            hand=[names[c] for c in sorted(hand)],
                            hand_sizes=sizes,
                            roles=self.roles,
                            scores=list(self.scores),
                            leftovers=offer,
                        )
                    ),
                )
                for seat, hand in enumerate(hands)
            ]
        if t == "eliminated":
            msg_el = m.Eliminated.model_construct(
                seat=ev[1], place=ev[2], cards=[names[c] for c in ev[3]]
            )
            return [(None, m.encode(msg_el))]
        if t == "leftover":
            taken = m.LeftoverTaken.model_construct(seat=ev[1], card=names[ev[2]])
            return [(None, m.encode(taken))]
        if t == "exchange":
            _, giver, receiver, cards = ev
            public = m.Exchanged.model_construct(from_=giver, to=receiver, count=len(cards))
            private = m.Received.model_construct(from_=giver, cards=[names[c] for c in cards])
            return [(None, m.encode(public)), (receiver, m.encode(private))]
        if t == "fault":
            return [(None, m.encode(m.Fault.model_construct(seat=ev[1], kind=ev[2], detail=ev[3])))]
        if t == "round_end":
            _, places, points, scores = ev
            self.roles = cast(list[m.Role], roles_for(places, self.n))
            self.scores = list(scores)
            msg_re = m.RoundEnd.model_construct(places=places, points=points, scores=scores)
            return [(None, m.encode(msg_re))]
        if t == "match_end":
            standings = [m.Standing.model_construct(**st) for st in ev[1]]
            return [(None, m.encode(m.MatchEnd.model_construct(standings=standings)))]
        raise ValueError(f"no message for engine event {t!r}")

    def _encode_public(self, ev: tuple[Any, ...]) -> bytes:
        t = ev[0]
        msg: m.ToBot
        if t == "played":
            msg = m.Played.model_construct(seat=ev[1], cards=[self.names[c] for c in ev[2]])
        elif t == "passed":
            msg = m.Passed.model_construct(seat=ev[1])
        elif t == "skipped":
            msg = m.Skipped.model_construct(seat=ev[1])
        elif t == "trick_end":
            msg = m.TrickEnd.model_construct(winner=ev[1], reason=ev[2], leader=ev[3])
        else:
            msg = m.Finished.model_construct(seat=ev[1], place=ev[2])
        return m.encode(msg)


def _act_play_line(
    request_id: int,
    hand: list[str],
    trick: dict[str, Any],
    passed: list[int],
    legal: list[list[str]],
    bank_ms: int,
) -> bytes:
    """The ``act``/``play`` request, the most frequent line, exactly as :class:`m.ActPlay`.

    Written out directly because it is on every request's path (card strings are plain
    ASCII tokens, so they need no escaping); a test checks it against the model's encoding.
    """
    legal_json = ",".join(_cards_json(p) for p in legal)
    return (
        f'{{"type":"act","id":{request_id},"kind":"play","hand":{_cards_json(hand)},'
        f'"trick":{{"leader":{trick["leader"]},"count":{trick["count"]},'
        f'"top":{_cards_json(trick["top"])}}},"passed":{_dumps(passed)},'
        f'"legal":[{legal_json}],"bank_ms":{bank_ms}}}\n'
    ).encode()


def _cards_json(cards: list[str]) -> str:
    return '["' + '","'.join(cards) + '"]' if cards else "[]"


_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

_MEMO_EVENTS = frozenset({"played", "passed", "skipped", "trick_end", "finished"})
# Encoded public events by card codec (the same event reads the same in every match).
_EVENT_MEMO: dict[int, dict[tuple[Any, ...], bytes]] = {}


def distinct_names(names: Sequence[str]) -> list[str]:
    """Seat names made distinct: a bot taking several seats becomes ``name#2``, ``name#3``."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if counts[name] == 1:
            out.append(name)
            continue
        seen[name] = seen.get(name, 0) + 1
        out.append(f"{name}#{seen[name]}")
    return out


async def run_match(
    sessions: Sequence[BotSession],
    rules: ResolvedRules,
    seed: int,
    match_id: str,
    time_control: TimeControl,
    *,
    log_path: Path | str | None = None,
    request_ids: itertools.count[int] | None = None,
) -> MatchResult:
    """Play one match with already started (and greeted) bots, one per seat."""
    started = time.monotonic()
    ids = request_ids or itertools.count(1)
    game = Game(rules, [s.name for s in sessions], seed)
    writer = LogWriter(log_path, game, match_id)
    translator = EventTranslator(game)
    banks = [time_control.bank_ms] * len(sessions)
    faults: dict[int, FaultInfo] = {}
    for s in sessions:
        if s.fault is None:  # keep what a bot that failed hello wrote: it explains why
            s.reset_stderr()

    async def fault(seat: int, f: BotFault) -> None:
        session = sessions[seat]
        session.fault = f
        session.outbox.clear()
        faults[seat] = FaultInfo(kind=f.kind, detail=f.detail)
        game.forfeit(
            seat,
            f.kind,
            f.detail,
            request_id=f.request_id,
            reply=f.reply,
            elapsed_ms=f.elapsed_ms,
        )
        await session.kill()

    try:
        for seat, s in enumerate(sessions):
            if s.fault is not None:  # failed before the match (e.g. hello)
                await fault(seat, s.fault)
        for seat, s in enumerate(sessions):
            s.queue(
                m.encode(
                    m.MatchStart(
                        match=match_id,
                        seat=seat,
                        players=[x.name for x in sessions],
                        rules=m.Rules.model_validate(rules.as_protocol()),
                        bank_ms=time_control.bank_ms,
                    )
                )
            )
        sent = 0
        while True:
            events = game.events
            for ev in events[sent:]:
                for target, data in translator.messages(ev):
                    if target is None:
                        for s in sessions:
                            s.queue(data)
                    else:
                        sessions[target].queue(data)
            sent = len(events)
            writer.maybe_flush()
            pending = game.pending
            if pending is None:
                break
            unasked = [i for i, s in enumerate(sessions) if s.unasked and s.alive]
            if unasked:
                # Faulted now rather than at the bot's next request, which may never come.
                for other in unasked:
                    await fault(other, sessions[other].unasked_fault())
                continue
            kind, seat = pending
            session = sessions[seat]
            rid = next(ids)
            hand = game.hand_names(seat)
            budget = time_control.move_ms + banks[seat]
            if kind == PLAY:
                line = _act_play_line(
                    rid,
                    hand,
                    game.trick_info(),
                    game.passed_seats(),
                    game.legal_plays(seat),
                    banks[seat],
                )
            elif kind == GIVE:
                line = m.encode(
                    m.ActGive.model_construct(
                        id=rid, hand=hand, to=game.give_to, count=game.give_count
                    )
                )
            else:
                line = m.encode(
                    m.ActLeftover.model_construct(
                        id=rid, hand=hand, offer=[game.codec.names[c] for c in game.offer]
                    )
                )
            try:
                reply, raw, elapsed = await session.request(line, rid, kind, budget)
                banks[seat] -= max(0, elapsed - time_control.move_ms)
                try:
                    if kind == PLAY:
                        assert isinstance(reply, m.PlayReply)
                        game.play(seat, reply.cards)
                    elif kind == GIVE:
                        assert isinstance(reply, m.GiveReply)
                        game.give(seat, reply.cards)
                    else:
                        assert kind == LEFTOVER and isinstance(reply, m.LeftoverReply)
                        game.leftover(seat, reply.take, reply.discard)
                except IllegalMove as exc:
                    raise BotFault(
                        "illegal",
                        exc.reason,
                        request_id=rid,
                        reply=m.reply_excerpt(raw),
                        elapsed_ms=elapsed,
                    ) from None
            except BotFault as f:
                await fault(seat, f)
        # Deliver the rest (round_end, match_end) to every bot still playing.
        for s in sessions:
            if s.alive:
                try:
                    await s.flush(time_control.move_ms / 1000 + 1)
                except BotFault:
                    await s.kill()
    finally:
        writer.close()

    standings = game.standings or []
    return MatchResult(
        match=match_id,
        seed=seed,
        rules=rules.name,
        rounds=game.round,
        log=str(log_path) if log_path is not None else None,
        standings=[
            SeatResult(
                seat=st["seat"],
                name=st["name"],
                place=st["place"],
                score=st["score"],
                forfeit=st["forfeit"],
                fault=faults.get(st["seat"]),
            )
            for st in standings
        ],
        duration_s=round(time.monotonic() - started, 3),
        stderr_tails={
            seat: s.stderr_tail(4096) for seat, s in enumerate(sessions) if s.fault is not None
        },
    )


async def start_sessions(
    sandbox: Sandbox,
    bots: Sequence[BotSpec],
    limits: Limits,
    time_control: TimeControl,
    *,
    names: Sequence[str] | None = None,
    request_ids: itertools.count[int] | None = None,
) -> list[BotSession]:
    """Start every bot and greet it; a bot that fails ``hello`` carries its fault.

    Cancelled half-way (Ctrl-C, SIGTERM), it stops every bot it started before it returns.
    """
    ids = request_ids or itertools.count(1)
    seat_names = list(names) if names is not None else distinct_names([b.name for b in bots])

    async def one(spec: BotSpec, name: str) -> BotSession:
        started = time.monotonic()
        # A start cut off half-way can leave its process behind (asyncio's subprocess_exec
        # may hang when cancelled): it is short, so let it finish, then stop the bot.
        starting = asyncio.ensure_future(BotSession.start(sandbox, spec, limits, name))
        try:
            session = await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await (await starting).close(bye=False)
            raise
        try:
            await session.hello(next(ids), time_control, started)
        except BotFault as f:
            session.fault = f
            await session.kill()
        except BaseException:
            await asyncio.shield(session.close(bye=False))
            raise
        return session

    starting = [asyncio.ensure_future(one(b, n)) for b, n in zip(bots, seat_names, strict=True)]
    try:
        results = await asyncio.gather(*starting, return_exceptions=True)
    except asyncio.CancelledError:
        started = [
            t.result() for t in starting if t.done() and not t.cancelled() and not t.exception()
        ]
        await asyncio.shield(asyncio.gather(*(s.close(bye=False) for s in started)))
        raise
    sessions = [r for r in results if isinstance(r, BotSession)]
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        for s in sessions:
            await s.close(bye=False)
        raise errors[0]
    return sessions


async def play_match(
    sandbox: Sandbox,
    bots: Sequence[BotSpec],
    rules: ResolvedRules,
    seed: int,
    *,
    match_id: str | None = None,
    time_control: TimeControl | None = None,
    limits: Limits | None = None,
    log_path: Path | str | None = None,
) -> MatchResult:
    """Start the bots, play one match, and always stop every process of it."""
    tc = time_control or TimeControl()
    ids = itertools.count(1)
    sessions: list[BotSession] = []
    try:
        sessions = await start_sessions(sandbox, bots, limits or Limits(), tc, request_ids=ids)
        return await run_match(
            sessions,
            rules,
            seed,
            match_id or f"match-{seed}",
            tc,
            log_path=log_path,
            request_ids=ids,
        )
    finally:
        await asyncio.shield(_close_all(sessions))


async def _close_all(sessions: Sequence[BotSession]) -> None:
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


class SessionPool:
    """Keeps bot processes (or containers) alive between consecutive matches, like cutechess.

    A session goes back to the pool after a match it finished without a fault, and is
    handed out again for a later match of the same bot, greeted already. Two rules keep
    duplicate play fair: a session never serves two seat rotations of the same deal (it
    would know the others' hands), so a match names its ``deal_key``; and a fault always
    ends the process. ``max_matches`` bounds how many matches one process serves, and
    ``max_idle`` how many idle processes of one bot are kept.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        limits: Limits,
        time_control: TimeControl,
        *,
        max_matches: int = 50,
        max_idle: int = 2,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.time_control = time_control
        self.max_matches = max_matches
        self.max_idle = max_idle
        self._idle: dict[tuple[str, str], list[BotSession]] = {}
        self._deals: dict[int, set[str]] = {}
        self._served: dict[int, int] = {}
        self._width: dict[tuple[str, str], int] = {}  # most seats one bot took in a match
        self._ids = itertools.count(1)
        self.started = 0

    @staticmethod
    def _key(spec: BotSpec) -> tuple[str, str]:
        return (spec.name, spec.sha256 or str(spec.folder))

    async def acquire(self, bots: Sequence[BotSpec], deal_key: str | None) -> list[BotSession]:
        """One greeted session per seat: reused when possible, else started now."""
        names = distinct_names([b.name for b in bots])
        for key in {self._key(b) for b in bots}:
            seats = sum(1 for b in bots if self._key(b) == key)
            self._width[key] = max(self._width.get(key, 1), seats)
        chosen: list[BotSession | None] = []
        for spec in bots:
            idle = self._idle.get(self._key(spec), [])
            pick = next(
                (
                    s
                    for s in idle
                    if s.alive and (deal_key is None or deal_key not in self._deals[id(s)])
                ),
                None,
            )
            if pick is not None:
                idle.remove(pick)
            chosen.append(pick)
        missing = [i for i, s in enumerate(chosen) if s is None]
        if missing:
            fresh = await start_sessions(
                self.sandbox,
                [bots[i] for i in missing],
                self.limits,
                self.time_control,
                names=[names[i] for i in missing],
                request_ids=self._ids,
            )
            self.started += len(fresh)
            for i, session in zip(missing, fresh, strict=True):
                self._deals[id(session)] = set()
                self._served[id(session)] = 0
                chosen[i] = session
        sessions = [s for s in chosen if s is not None]
        for session, name in zip(sessions, names, strict=True):
            session.name = name
            if deal_key is not None:
                self._deals[id(session)].add(deal_key)
        return sessions

    async def release(self, sessions: Sequence[BotSession]) -> None:
        """Return healthy sessions to the pool; close faulted, worn-out or surplus ones.

        At most ``max_idle`` idle processes are kept per seat a bot takes: the newest, since
        an older one has seen more deals and can serve fewer of the matches to come.
        """
        closing: list[BotSession] = []
        for session in sessions:
            self._served[id(session)] = self._served.get(id(session), 0) + 1
            if session.alive and self._served[id(session)] < self.max_matches:
                key = self._key(session.spec)
                idle = self._idle.setdefault(key, [])
                idle.append(session)
                while len(idle) > self.max_idle * self._width.get(key, 1):
                    closing.append(idle.pop(0))
            else:
                closing.append(session)
        if closing:
            await asyncio.gather(*(self._close(s) for s in closing), return_exceptions=True)

    async def _close(self, session: BotSession) -> None:
        self._deals.pop(id(session), None)
        self._served.pop(id(session), None)
        await session.close()

    async def aclose(self) -> None:
        """Say ``bye`` to every idle bot and stop it."""
        idle = [s for group in self._idle.values() for s in group]
        self._idle.clear()
        await asyncio.gather(*(self._close(s) for s in idle), return_exceptions=True)

    async def play(
        self,
        bots: Sequence[BotSpec],
        rules: ResolvedRules,
        seed: int,
        *,
        match_id: str,
        deal_key: str | None = None,
        log_path: Path | str | None = None,
    ) -> MatchResult:
        """Play one match with pooled sessions."""
        sessions = await self.acquire(bots, deal_key)
        try:
            result = await run_match(
                sessions,
                rules,
                seed,
                match_id,
                self.time_control,
                log_path=log_path,
                request_ids=self._ids,
            )
        except BaseException:
            # A match that broke off leaves its bots mid-conversation: never reuse them.
            await asyncio.shield(asyncio.gather(*(self._close(s) for s in sessions)))
            raise
        await asyncio.shield(self.release(sessions))
        return result
