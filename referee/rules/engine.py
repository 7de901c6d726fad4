"""The game engine: a pure, deterministic state machine for one match.

``Game(rules, players, seed)`` deals, runs leftovers, exchanges, tricks, finishing,
elimination, round and match ends, and stops whenever a seat must decide something. The
caller reads :attr:`Game.pending`, answers with :meth:`Game.play`, :meth:`Game.give` or
:meth:`Game.leftover` (card strings, validated: an illegal decision raises
:class:`~referee.errors.IllegalMove` and changes nothing), and reads what happened from
:attr:`Game.events`. A seat that faults is handed to the fallback policy with
:meth:`Game.forfeit`; the engine then decides for it.

There is no I/O, no clock and no global random state: the same rules, seed and decisions
give the same events on every machine. Nor is there a module-wide memo: what a game may
remember from earlier games (its card codec, the legal moves of each rank-count mask, the
play events) is an :class:`EngineMemo` its caller owns and passes to every game it plays
(a worker holds one for all its matches, ``referee verify`` one for every log); a game
given none makes its own. Cards are ints inside (see :mod:`.cards`); events
are named tuples (:mod:`.events`), turned into the match log's JSON objects by their ``log``.

The setup of each round (deal, leftovers, exchange, elimination) is one generator
(:meth:`Game._flow`) that yields at every decision, so it reads in the order of RULES.md
§4.8; the tricks, where the time goes, are a plain step function (:meth:`Game._apply`).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Generator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from referee.errors import FaultKind, IllegalMove, RefereeError
from referee.rules.cards import DECKS, CardCodec
from referee.rules.events import (
    Deal,
    Eliminated,
    Event,
    Exchange,
    Fault,
    Finished,
    Leftover,
    MatchEnd,
    Passed,
    Played,
    RoundEnd,
    Skipped,
    TrickEnd,
)
from referee.rules.ruleset import ResolvedRules

PLAY: Final = "play"
GIVE: Final = "give"
LEFTOVER: Final = "leftover"
_TRICKS: Final = "tricks"

ROLE_NAMES = ("president", "vice_president", "citizen", "vice_arschloch", "arschloch")

_new = tuple.__new__  # events on the hot path: see referee.rules.events
Decision = tuple[int, ...]
# A deal source returns (hands in dealt order, leftovers) for (round, dealer).
DealSource = Callable[[int, int], tuple[list[list[int]], list[int]] | None]
_Flow = Generator[tuple[str, int], Decision, None]


def roles_for(places: Sequence[int], n: int) -> list[str]:
    """Role names by seat from a round's places (seats in place order)."""
    roles = ["citizen"] * n
    roles[places[0]] = "president"
    roles[places[-1]] = "arschloch"
    if n >= 4:
        roles[places[1]] = "vice_president"
        roles[places[-2]] = "vice_arschloch"
    return roles


class Game:
    """One match of the game between ``len(players)`` seats (3 to 6)."""

    # Slots: attribute access on the hot path is a little faster, and typos fail loudly.
    __slots__ = (
        "_above",
        "_any_forbidden",
        "_deals",
        "_dealt",
        "_finished",
        "_flow_gen",
        "_follow",
        "_forbidden",
        "_forbidden_mask",
        "_lead",
        "_next_bottom",
        "_next_table",
        "_next_top",
        "_out_rule",
        "_pass_events",
        "_play_pending",
        "_played",
        "_return_lowest",
        "_rng",
        "_skip_next",
        "_swap",
        "_top_ends",
        "_trick_ends",
        "active",
        "codec",
        "dealer",
        "deck_ids",
        "events",
        "fallback",
        "forfeits",
        "give_count",
        "give_to",
        "hands",
        "held_mask",
        "held_rank",
        "holding",
        "last",
        "last_places",
        "leader",
        "masks",
        "memo",
        "n",
        "nheld",
        "nranks",
        "offer",
        "passed",
        "pending",
        "place_of",
        "players",
        "prev_places",
        "round",
        "rules",
        "scores",
        "seed",
        "standings",
        "top_cards",
        "top_count",
        "top_rank",
        "turn",
    )

    def __init__(
        self,
        rules: ResolvedRules,
        players: Sequence[str],
        seed: int,
        *,
        deals: DealSource | None = None,
        memo: EngineMemo | None = None,
    ) -> None:
        n = len(players)
        if not 3 <= n <= 6:
            raise RefereeError(f"a match needs 3 to 6 players, got {n}")
        if rules.players is not None and rules.players != n:
            raise RefereeError(f"rules are resolved for {rules.players} players, not {n}")
        self.rules = rules
        self.players = list(players)
        self.seed = seed
        self.n = n
        self.memo = memo = memo if memo is not None else EngineMemo()
        self.codec = memo.codec(rules.deck, tuple(rules.ranks))
        self._lead = memo.lead
        self._follow = memo.follow
        self._played = memo.played
        self.nranks = len(rules.ranks)
        self._forbidden = [r in rules.no_finish_on for r in rules.ranks]
        self._any_forbidden = any(self._forbidden)
        self._forbidden_mask = sum(1 << r for r, f in enumerate(self._forbidden) if f)
        self._dealt: list[list[int]] = []
        self._out_rule = rules.pass_rule == "out"
        self._skip_next = rules.equal_rank == "skip_next"
        # The ranks that may follow a top rank: from it (an equal rank is allowed) or above it.
        self._above = _ABOVE if self._skip_next else _ABOVE[1:]
        self._top_ends = rules.top_card_ends_trick
        self._swap = rules.leftovers == "swap"
        self._return_lowest = rules.return_choice == "lowest"
        self._rng = random.Random(seed)
        self._deals = deals
        self.deck_ids = list(range(4 * self.nranks))

        self.events: list[Event] = []
        self.round = 0
        self.dealer = 0
        self.scores = [0] * n
        self.prev_places: list[int] | None = None
        self.last_places: list[int] = []
        self.fallback = [False] * n
        self.forfeits: list[int] = []
        self.standings: list[dict[str, Any]] | None = None

        # Per-round state; (re)initialised by _start_round.
        self.hands: list[list[list[int]]] = []
        self.nheld = [0] * n
        self.holding = 0
        self._next_table = _next_seat_table(n)
        self._play_pending = [(PLAY, s) for s in range(n)]
        self._pass_events, self._trick_ends, self._finished = _EVENT_TABLES[n]
        self.masks = [0] * n
        self.held_rank = [0] * self.nranks
        self.held_mask = 0
        self.offer: list[int] = []
        self.place_of = [0] * n
        self._next_top = 1
        self._next_bottom = n
        self.active = n
        # Trick state: ``last`` is the seat of the last play (-1 before the lead).
        self.leader = 0
        self.turn = 0
        self.last = -1
        self.top_rank = -1
        self.top_count = 0
        self.top_cards: Decision = ()
        self.passed = 0
        self.give_to = -1
        self.give_count = 0

        self.pending: tuple[str, int] | None = None
        self._flow_gen: _Flow = self._flow()
        self._advance(None)

    # ------------------------------------------------------------------ public API

    @property
    def over(self) -> bool:
        """True once the match has ended (``match_end`` is the last event)."""
        return self.pending is None

    def hand(self, seat: int) -> list[int]:
        """The seat's cards as ids, sorted low to high."""
        return [c for cards in self.hands[seat] for c in cards]

    def hand_names(self, seat: int) -> list[str]:
        """The seat's cards as strings, sorted low to high."""
        names = self.codec.names
        return [names[c] for cards in self.hands[seat] for c in cards]

    def counts(self) -> list[int]:
        """Every seat's number of cards right now, by seat (the ``counts`` of an ``act``)."""
        return list(self.nheld)

    def legal_plays(self, seat: int) -> list[list[str]]:
        """The ``legal`` list of an ``act`` for the seat to act: card strings, sorted by
        rank then count, lowest suits chosen, ``[]`` (a pass) last when not leading."""
        self._expect(PLAY, seat)
        names = self.codec.names
        hand = self.hands[seat]
        # The memoised move codes are already in this order.
        out = [
            [names[c] for c in hand[code >> 3][: code & 7]]
            for code in self.legal_move_codes()
            if code
        ]
        if self.last >= 0:
            out.append([])
        return out

    def trick_info(self) -> dict[str, Any]:
        """The ``trick`` object of an ``act``: leader, count and the cards to beat."""
        names = self.codec.names
        return {
            "leader": self.leader,
            "count": self.top_count,
            "top": [names[c] for c in self.top_cards],
        }

    def passed_seats(self) -> list[int]:
        """Seats out of the current trick (``pass_rule = out``)."""
        return [s for s in range(self.n) if self.passed >> s & 1]

    def roles(self) -> list[str] | None:
        """Roles by seat from the previous round, or None in round 1."""
        if self.prev_places is None:
            return None
        return roles_for(self.prev_places, self.n)

    def check_play(self, seat: int, cards: Sequence[str]) -> Decision:
        """Validate a play of the seat to act without applying it; returns the card ids.

        Raises :class:`IllegalMove` saying why (not held, wrong count, rank too low, ...).
        """
        self._expect(PLAY, seat)
        ids = self._parse(seat, cards)
        self._check_play(seat, ids)
        return ids

    def play(self, seat: int, cards: Sequence[str]) -> None:
        """The seat to act plays ``cards`` (``[]`` passes); raises IllegalMove if illegal."""
        self._resume(self.check_play(seat, cards))

    def give(self, seat: int, cards: Sequence[str]) -> None:
        """The receiving seat gives back ``cards`` in an exchange."""
        self._expect(GIVE, seat)
        ids = self._parse(seat, cards)
        if len(ids) != self.give_count:
            raise IllegalMove(
                f"wrong count: give back exactly {self.give_count} card(s), got {len(ids)}"
            )
        self._resume(ids)

    def leftover(self, seat: int, take: str, discard: str) -> None:
        """The seat takes one offered leftover and discards one hand card (maybe the taken)."""
        self._expect(LEFTOVER, seat)
        ids = self.codec.ids
        t = ids.get(take) if isinstance(take, str) else None
        if t is None or t not in self.offer:
            offered = " ".join(self.codec.names[c] for c in self.offer)
            raise IllegalMove(f"{take!r} is not an offered leftover (offered: {offered})")
        d = ids.get(discard) if isinstance(discard, str) else None
        if d is None or (d != t and d not in self.hands[seat][d >> 2]):
            raise IllegalMove(f"cannot discard {discard!r}: it is not in your hand")
        self._resume((t, d))

    def decide(self, kind: str, seat: int, fields: Mapping[str, Any]) -> None:
        """Apply a decision of ``kind`` in the protocol's words, checked like the above.

        ``fields`` holds what a reply (or a match log line) says: ``cards`` for a play
        (absent or ``[]`` is a pass) and for a give, ``take`` and ``discard`` for a
        leftover. The match runner and the replayer both decide through here.
        """
        if kind == PLAY:
            self.play(seat, fields.get("cards") or [])
        elif kind == GIVE:
            self.give(seat, fields["cards"])
        elif kind == LEFTOVER:
            self.leftover(seat, fields["take"], fields["discard"])
        else:
            raise ValueError(f"unknown decision kind {kind!r}")

    def forfeit(
        self,
        seat: int,
        kind: FaultKind,
        detail: str,
        *,
        request_id: int | None = None,
        reply: str | None = None,
        elapsed_ms: int | None = None,
    ) -> None:
        """Record a fault: the seat forfeits and the fallback policy plays it from now on."""
        if self.over or self.fallback[seat]:
            return
        self.fallback[seat] = True
        self.forfeits.append(seat)
        self.events.append(
            _new(Fault, ("fault", seat, kind, detail, request_id, reply, elapsed_ms))
        )
        pending = self.pending
        if pending is not None and pending[1] == seat:
            self._resume(self._fallback_decision(pending[0], seat))

    # ------------------------------------------------------------------ checks

    def _expect(self, kind: str, seat: int) -> None:
        if self.pending is None:
            raise RefereeError("the match is over")
        if self.pending != (kind, seat):
            raise RefereeError(f"not expecting {kind} from seat {seat}; waiting for {self.pending}")

    def _parse(self, seat: int, cards: Sequence[str]) -> Decision:
        ids = self.codec.ids
        hand = self.hands[seat]
        out: list[int] = []
        if isinstance(cards, str) or not isinstance(cards, (list, tuple)):
            raise IllegalMove("cards must be a list of card strings")
        for card in cards:
            c = ids.get(card) if isinstance(card, str) else None
            if c is None:
                raise IllegalMove(f"{card!r} is not a card of this deck")
            if c in out:
                raise IllegalMove(f"plays {card} twice")
            if c not in hand[c >> 2]:
                raise IllegalMove(f"{card} is not in your hand")
            out.append(c)
        return tuple(out)

    def _check_play(self, seat: int, ids: Decision) -> None:
        names = self.codec.names
        if not ids:
            if self.last < 0:
                raise IllegalMove("passing while leading: the leader must play")
            return
        rank = ids[0] >> 2
        for c in ids:
            if c >> 2 != rank:
                raise IllegalMove(f"mixed ranks: {names[ids[0]]} and {names[c]}")
        k = len(ids)
        rank_names = self.codec.rank_names
        if self.last >= 0:
            if k != self.top_count:
                raise IllegalMove(f"wrong count: the trick needs {self.top_count} card(s), got {k}")
            if rank < self.top_rank or (rank == self.top_rank and not self._skip_next):
                need = "beat or equal" if self._skip_next else "beat"
                raise IllegalMove(
                    f"rank too low: {rank_names[rank]} does not {need} {rank_names[self.top_rank]}"
                )
        if k == self.nheld[seat] and self._forbidden[rank]:
            raise IllegalMove(f"forbidden finish: you may not go out on {rank_names[rank]}")

    # ------------------------------------------------------------------ driving

    def _resume(self, decision: Decision) -> None:
        if self.pending is not None and self.pending[0] is PLAY:
            self._step(decision)
        else:
            self._advance(decision)

    def _advance(self, value: Decision | None) -> None:
        """Run the setup flow until it needs a decision or starts the tricks of a round."""
        try:
            request = self._flow_gen.send(value)  # type: ignore[arg-type]
        except StopIteration:
            self.pending = None
            return
        if request[0] is _TRICKS:
            self._new_trick(request[1])
            self.pending = (PLAY, request[1])
            if self.fallback[request[1]]:
                self._auto_play()
        else:
            self.pending = request

    def _step(self, cards: Decision) -> None:
        """Apply one play or pass of the seat to act, then let fallback seats play."""
        if self._apply(self.turn, cards):
            self._advance(None)
            return
        turn = self.turn
        self.pending = self._play_pending[turn]
        if self.fallback[turn]:
            self._auto_play()

    def _auto_play(self) -> None:
        while self.pending is not None and self.pending[0] is PLAY:
            seat = self.turn
            if not self.fallback[seat]:
                return
            if self._apply(seat, self._fallback_decision(PLAY, seat)):
                self._advance(None)
                return
            self.pending = self._play_pending[self.turn]

    def play_move(self, move: int) -> None:
        """Fast path for simulations: apply a move from :meth:`legal_move_codes`, unchecked."""
        turn = self.turn
        cards = tuple(self.hands[turn][move >> 3][: move & 7]) if move else ()
        if self._apply(turn, cards):
            self._advance(None)
            return
        turn = self.turn
        self.pending = self._play_pending[turn]
        if self.fallback[turn]:
            self._auto_play()

    def legal_move_codes(self) -> tuple[int, ...]:
        """Legal moves of the seat to act as ints ``rank << 3 | count``; ``0`` is a pass.

        Looked up from the seat's rank-count bit mask in a memo table, so a decision costs a
        dict look-up. (A play that would finish on a ``no_finish_on`` rank never shows up:
        such a hand would hold only that rank and has been eliminated already.)
        """
        mask = self.masks[self.turn]
        if self.last < 0:
            moves = self._lead.get(mask)
            if moves is None:
                moves = self.memo.lead_moves(mask)
            return moves
        k = self.top_count
        key = (mask >> _SHIFT[k]) & self._above[self.top_rank]
        moves = self._follow[k].get(key)
        if moves is None:
            moves = self.memo.follow_moves(key, k)
        return moves

    def _fallback_decision(self, kind: str, seat: int) -> Decision:
        """PROTOCOL.md's fallback: lead the lowest single, else pass; lowest back; best leftover."""
        if kind == PLAY:
            if self.last < 0:
                return (self.hand(seat)[0],)
            return ()
        if kind == GIVE:
            return tuple(self.hand(seat)[: self.give_count])
        take = max(self.offer)
        return (take, min([*self.hand(seat), take]))

    def _flow(self) -> _Flow:
        rules = self.rules
        while True:
            yield from self._round()
            if rules.target is not None and max(self.scores) >= rules.target:
                break
            if rules.rounds is not None and self.round >= rules.rounds:
                break
            if self.round >= rules.max_rounds:
                break
        self._match_end()

    # ------------------------------------------------------------------ a round

    def _deal(self, dealer: int) -> tuple[list[list[int]], list[int]]:
        if self._deals is not None:
            given = self._deals(self.round, dealer)
            if given is not None:
                return given
        # One draw of 32 random bits per card, read in a single call; sorting the deck by
        # them is a uniform shuffle (ties, about 1 in 10^8 per deal, keep deck order).
        size = len(self.deck_ids)
        keys = memoryview(self._rng.getrandbits(32 * size).to_bytes(4 * size, "little")).cast("I")
        deck = sorted(self.deck_ids, key=keys.__getitem__)
        n = self.n
        ndealt = len(deck) if self.rules.deal == "all" else len(deck) // n * n
        # One card at a time from the dealer's left: seat dealer+1 gets cards 0, n, 2n, ...
        hands = [deck[(s - dealer - 1) % n : ndealt : n] for s in range(n)]
        return hands, deck[ndealt:]

    def _round(self) -> _Flow:
        n = self.n
        self.round += 1
        prev = self.prev_places
        dealer = 0 if prev is None else prev[-1]
        self.dealer = dealer
        dealt, leftovers = self._deal(dealer)
        self._dealt = dealt
        if self._deals is not None:
            self._check_deal(dealt, leftovers)  # a deal from outside (a log) is checked
        hands: list[list[list[int]]] = [[[] for _ in range(self.nranks)] for _ in range(n)]
        self.hands = hands
        # Every card is dealt except the leftovers: four of each rank, less those.
        self.held_rank = held = [4] * self.nranks
        for c in leftovers:
            held[c >> 2] -= 1
        self.masks = masks = [0] * n
        for s in range(n):
            hand = hands[s]
            for c in sorted(dealt[s]):
                hand[c >> 2].append(c)
            masks[s] = sum([_COUNT_BITS[r][len(lst)] for r, lst in enumerate(hand)])
        self.held_mask = (1 << self.nranks) - 1
        for r in range(self.nranks):
            if not held[r]:
                self.held_mask &= ~(1 << r)
        self.nheld = [len(h) for h in dealt]
        self.holding = sum(1 << s for s in range(n) if dealt[s])
        self.active = n
        self.place_of = [0] * n
        self._next_top = 1
        self._next_bottom = n
        self.offer = []
        self.events.append(
            _new(Deal, ("deal", self.round, dealer, tuple(map(tuple, dealt)), tuple(leftovers)))
        )

        if prev is not None:
            if self._swap and leftovers:
                self.offer = sorted(leftovers)
                for seat in prev[2:]:
                    if not self.offer:
                        break
                    if self.fallback[seat]:
                        decision = self._fallback_decision(LEFTOVER, seat)
                    else:
                        decision = yield (LEFTOVER, seat)
                    take, discard = decision
                    self.offer.remove(take)
                    self._add(seat, [take])
                    self._remove(seat, [discard])
                    self.events.append(_new(Leftover, ("leftover", seat, take, discard)))
                self.offer = []
            for i, count in enumerate(self.rules.exchange):
                high, low = prev[i], prev[n - 1 - i]
                best = tuple(self.hand(low)[-count:])
                self._remove(low, best)
                self._add(high, best)
                self.events.append(_new(Exchange, ("exchange", low, high, best)))
                if self._return_lowest or self.fallback[high]:
                    back = tuple(self.hand(high)[:count])
                else:
                    self.give_to, self.give_count = low, count
                    back = yield (GIVE, high)
                self._remove(high, back)
                self._add(low, back)
                self.events.append(_new(Exchange, ("exchange", high, low, back)))

        if self._any_forbidden:
            for i in range(n):
                self._maybe_eliminate((dealer + 1 + i) % n)
        if self.active > 1:
            leader = self._start_holder() if prev is None else prev[-1]
            if not self.nheld[leader]:
                leader = self._next_holder(leader)
            yield (_TRICKS, leader)
        self._round_end()

    def _check_deal(self, dealt: list[list[int]], leftovers: list[int]) -> None:
        everything = sorted([c for h in dealt for c in h] + list(leftovers))
        if everything != self.deck_ids or len(dealt) != self.n:
            raise RefereeError(f"round {self.round}: the deal does not hold every card once")

    def _start_holder(self) -> int:
        """Who leads round 1: the start card's holder, else the lowest dealt card's."""
        start = self.codec.ids.get(self.rules.start_card)
        if start is not None:
            for s in range(self.n):
                if start in self.hands[s][start >> 2]:
                    return s
        lowest = min((min(h) if h else 1 << 30, s) for s, h in enumerate(self._dealt))
        return lowest[1]

    def _add(self, seat: int, cards: Sequence[int]) -> None:
        hand = self.hands[seat]
        for c in cards:
            r = c >> 2
            lst = hand[r]
            lst.append(c)
            lst.sort()
            self.held_rank[r] += 1
            self.held_mask |= 1 << r
            self.masks[seat] = self.masks[seat] & ~_RANK_BITS[r] | _COUNT_BITS[r][len(lst)]
        self.nheld[seat] += len(cards)

    def _remove(self, seat: int, cards: Sequence[int]) -> None:
        hand = self.hands[seat]
        for c in cards:
            r = c >> 2
            lst = hand[r]
            lst.remove(c)
            self.held_rank[r] -= 1
            if not self.held_rank[r]:
                self.held_mask &= ~(1 << r)
            self.masks[seat] = self.masks[seat] & ~_RANK_BITS[r] | _COUNT_BITS[r][len(lst)]
        self.nheld[seat] -= len(cards)

    def _maybe_eliminate(self, seat: int) -> None:
        """Out at once if every card left is of a ``no_finish_on`` rank (RULES.md §2)."""
        if not self.nheld[seat] or self.place_of[seat]:
            return
        if self.masks[seat] & _LAYER_MASK & ~self._forbidden_mask:
            return
        cards = tuple(self.hand(seat))
        self._remove(seat, cards)
        self.holding &= ~(1 << seat)
        place = self._next_bottom
        self._next_bottom -= 1
        self.place_of[seat] = place
        self.active -= 1
        self.events.append(_new(Eliminated, ("eliminated", seat, place, cards)))

    def _next_holder(self, seat: int) -> int:
        n = self.n
        for i in range(1, n + 1):
            j = (seat + i) % n
            if self.nheld[j]:
                return j
        return seat

    def _next_turn(self, seat: int) -> int:
        """The next seat that may act after ``seat``, or -1 when the trick is over."""
        return self._next_table[(seat * 7 + self.last + 1) << 6 | (self.holding & ~self.passed)]

    def _new_trick(self, leader: int) -> None:
        self.leader = self.turn = leader
        self.last = -1
        self.top_rank = -1
        self.top_count = 0
        self.top_cards = ()
        self.passed = 0

    def _end_trick(self, reason: str) -> None:
        winner = self.last
        leader = winner if self.nheld[winner] else self._next_holder(winner)
        self.events.append(self._trick_ends[reason][winner][leader])
        # _new_trick(leader), inlined: this runs after every trick.
        self.leader = self.turn = leader
        self.last = -1
        self.top_rank = -1
        self.top_count = 0
        self.top_cards = ()
        self.passed = 0

    def _apply(self, seat: int, cards: Decision) -> bool:
        """Apply a play (or a pass, ``()``) of ``seat``; True when it ends the round."""
        events = self.events
        if not cards:
            events.append(self._pass_events[seat])
            if self._out_rule:
                self.passed |= 1 << seat
            nxt = self._next_table[(seat * 7 + self.last + 1) << 6 | (self.holding & ~self.passed)]
            if nxt < 0:
                self._end_trick("all_passed")
            else:
                self.turn = nxt
            return False

        rank = cards[0] >> 2
        k = len(cards)
        equal = rank == self.top_rank
        hand = self.hands[seat][rank]
        if k == len(hand):
            hand.clear()
        elif hand[0] == cards[0] and k == 1:
            del hand[0]
        else:
            for c in cards:
                hand.remove(c)
        self.masks[seat] = self.masks[seat] & ~_RANK_BITS[rank] | _COUNT_BITS[rank][len(hand)]
        held = self.held_rank[rank] - k
        self.held_rank[rank] = held
        if not held:
            self.held_mask &= ~(1 << rank)
        nheld = self.nheld[seat] - k
        self.nheld[seat] = nheld
        played = self._played[seat].get(cards)
        if played is None:
            played = self.memo.played_event(seat, cards)
        events.append(played)
        self.last = seat
        self.top_rank = rank
        self.top_count = k
        self.top_cards = cards
        if not nheld:
            place = self._next_top
            self._next_top = place + 1
            self.place_of[seat] = place
            self.active -= 1
            self.holding &= ~(1 << seat)
            events.append(self._finished[seat][place])
        elif self._any_forbidden and not (self.masks[seat] & _LAYER_MASK & ~self._forbidden_mask):
            self._maybe_eliminate(seat)
        if self.active <= 1:
            # The skip an equal rank causes is still announced when the play ends the
            # round (the reference logs do so); it changes no outcome.
            if equal and self._skip_next:
                nxt = self._next_turn(seat)
                if nxt >= 0:
                    events.append(_new(Skipped, ("skipped", nxt)))
            return True
        if self._top_ends and not self.held_mask >> (rank + 1):
            self._end_trick("top_card")
            return False
        nxt = self._next_table[(seat * 7 + seat + 1) << 6 | (self.holding & ~self.passed)]
        if nxt >= 0 and equal and self._skip_next:
            events.append(_new(Skipped, ("skipped", nxt)))
            nxt = self._next_turn(nxt)
        if nxt < 0:
            self._end_trick("all_passed")
        else:
            self.turn = nxt
        return False

    def _round_end(self) -> None:
        n = self.n
        for s in range(n):
            if not self.place_of[s]:
                self.place_of[s] = self._next_top
                self._next_top += 1
        places = sorted(range(n), key=lambda s: self.place_of[s])
        scoring = self.rules.scoring
        if scoring == "below":
            points = [n - self.place_of[s] for s in range(n)]
        else:
            points = [scoring[self.place_of[s] - 1] for s in range(n)]
        for s in range(n):
            self.scores[s] += points[s]
        self.prev_places = places
        self.last_places = places
        self.events.append(_new(RoundEnd, ("round_end", places, points, list(self.scores))))

    def _match_end(self) -> None:
        n = self.n
        scores = self.scores
        forfeits = self.forfeits
        clean = [s for s in range(n) if not self.fallback[s]]
        place = {}
        if self.rules.tie_break == "last_round":
            last_place = {s: i for i, s in enumerate(self.last_places)}
            clean.sort(key=lambda s: (-scores[s], last_place[s]))
            for i, s in enumerate(clean):
                place[s] = i + 1
        else:
            for s in clean:
                place[s] = 1 + sum(1 for t in clean if scores[t] > scores[s])
        # Forfeits rank below every clean seat; the earliest forfeit ranks lowest.
        for i, s in enumerate(forfeits):
            place[s] = n - i
        order = sorted(range(n), key=lambda s: (place[s], s))
        self.standings = [
            {
                "seat": s,
                "name": self.players[s],
                "place": place[s],
                "score": scores[s],
                "forfeit": self.fallback[s],
            }
            for s in order
        ]
        self.events.append(_new(MatchEnd, ("match_end", self.standings)))

    # ------------------------------------------------------------------ the log

    def event_dict(self, ev: Event) -> dict[str, Any]:
        """An event as the match log's JSON object (PROTOCOL.md "Match log")."""
        return ev.log(self.codec.names)

    def header(self, match_id: str) -> dict[str, Any]:
        """The first line of the match log."""
        return {
            "type": "log",
            "version": 1,
            "match": match_id,
            "seed": self.seed,
            "players": list(self.players),
            "rules": self.rules.as_protocol(),
            "shuffle": SHUFFLE_ID if self._deals is None else None,
        }


# Names the deal procedure (the deck sorted by Mersenne Twister keys, dealt from the dealer's left)
# so a replayer knows the deals can be re-derived from the seed.
SHUFFLE_ID: Final = "sort-by-random-bits/1"


# Events are values: the same pass, trick end or finish is one shared object, made once
# (a named tuple costs more to make than the plain tuple it replaced; sharing more than
# makes up for it: measured in instructions, the engine is faster than with plain tuples).
# For every table size they are few (120 at six seats), so they are made at import, one
# read-only table per size: constants, not a cache (nothing is ever added to them).
_EventTables = tuple[
    tuple[Passed, ...],
    Mapping[str, tuple[tuple[TrickEnd, ...], ...]],
    tuple[tuple[Finished, ...], ...],
]


def _event_tables(n: int) -> _EventTables:
    """The pass, trick-end and finish events of an ``n``-seat table."""
    seats = range(n)
    return (
        tuple(Passed("passed", s) for s in seats),
        MappingProxyType(
            {
                reason: tuple(
                    tuple(TrickEnd("trick_end", w, reason, lead) for lead in seats) for w in seats
                )
                for reason in ("all_passed", "top_card")
            }
        ),
        tuple(tuple(Finished("finished", s, p) for p in range(n + 1)) for s in seats),
    )


_EVENT_TABLES: Final[Mapping[int, _EventTables]] = MappingProxyType(
    {n: _event_tables(n) for n in range(3, 7)}
)


# Rank-count masks: bit ``j * _LAYER + r`` of a seat's mask is set when it holds at least
# ``j + 1`` cards of rank ``r``. Layer ``j`` is then the set of ranks playable as a group of
# ``j + 1``, which makes legal plays a table look-up.
_LAYER: Final = 16
_MAX_RANKS: Final = 16
_RANK_BITS = [sum(1 << (j * _LAYER + r) for j in range(4)) for r in range(_MAX_RANKS)]
_COUNT_BITS = [
    [sum(1 << (j * _LAYER + r) for j in range(c)) for c in range(5)] for r in range(_MAX_RANKS)
]
_LAYER_MASK: Final = (1 << _LAYER) - 1
_ABOVE = [((1 << _LAYER) - 1) & ~((1 << lo) - 1) for lo in range(_MAX_RANKS + 1)]
_SHIFT = [0] + [_LAYER * (k - 1) for k in range(1, 5)]  # layer k - 1 holds the groups of k


class EngineMemo:
    """What games may remember from one another: their owner decides how long.

    Three memos, each mapping a key to an immutable value that is a pure function of the key,
    so no game can see another's state through them, only share work:

    - :meth:`codec`: one :class:`~referee.rules.cards.CardCodec` per deck and rank order
      (its mapping never changes; the match runner keeps its encoded public events in the
      codec's :meth:`~referee.rules.cards.CardCodec.encodings`, so they are shared as far as
      the codec is);
    - :attr:`lead` and :attr:`follow`: the legal moves of a rank-count mask (card ids, not
      names: the same for every deck), computed on first sight; a lead costs a loop over the
      mask's bits and a sort, a dict look-up once seen (the engine plays markedly fewer
      matches a second when every game starts with an empty memo: docs/performance.md);
    - :attr:`played`: the ``played`` event of each seat and cards, one shared object.

    Whoever plays many games holds one and passes it to each
    (:class:`~referee.executors.worker.Worker` for its matches, ``referee verify`` for its
    logs, the engine benchmark); a :class:`Game` given none makes its own, for itself. Each
    memo is emptied when it holds more than :data:`CAP` entries, so a long-lived owner's
    memory stays bounded.
    """

    CAP: Final = 200_000
    __slots__ = ("_codecs", "follow", "lead", "played")

    def __init__(self) -> None:
        self._codecs: dict[tuple[str, tuple[str, ...]], CardCodec] = {}
        self.lead: dict[int, tuple[int, ...]] = {}
        self.follow: tuple[dict[int, tuple[int, ...]], ...] = tuple({} for _ in range(5))
        self.played: tuple[dict[Decision, Played], ...] = tuple({} for _ in range(6))

    def codec(self, deck: str, ranks: tuple[str, ...]) -> CardCodec:
        """The codec of ``deck`` with ``ranks`` in this order (low to high)."""
        codec = self._codecs.get((deck, ranks))
        if codec is None:
            if len(self._codecs) > 64:
                self._codecs.clear()
            codec = self._codecs[deck, ranks] = CardCodec(DECKS[deck], ranks)
        return codec

    def lead_moves(self, mask: int) -> tuple[int, ...]:
        """The moves of a seat leading with ``mask``: every group it holds, by rank then
        count (:meth:`Game.legal_move_codes`); remembered."""
        found = []
        for j in range(4):
            layer = mask >> (j * _LAYER) & _LAYER_MASK
            while layer:
                low = layer & -layer
                found.append((low.bit_length() - 1) << 3 | (j + 1))
                layer ^= low
        found.sort()  # by rank, then count
        moves = tuple(found)
        if len(self.lead) > self.CAP:
            self.lead.clear()
        self.lead[mask] = moves
        return moves

    def follow_moves(self, key: int, k: int) -> tuple[int, ...]:
        """The moves of a seat following a group of ``k`` whose ranks above the top are
        ``key`` (one layer of its mask): each of those ranks, then the pass; remembered."""
        found = []
        bits = key
        while bits:
            low = bits & -bits
            found.append((low.bit_length() - 1) << 3 | k)
            bits ^= low
        found.append(0)
        moves = tuple(found)
        table = self.follow[k]
        if len(table) > self.CAP:
            table.clear()
        table[key] = moves
        return moves

    def played_event(self, seat: int, cards: Decision) -> Played:
        """The ``played`` event of ``seat`` playing ``cards``; remembered."""
        table = self.played[seat]
        if len(table) > self.CAP:
            table.clear()
        played: Played = _new(Played, ("played", seat, cards))
        table[cards] = played
        return played


# Not a cache of objects: a tuple of ints, a pure function of n (3 to 6), the same for every
# caller; made on first use (a few ms for six seats) rather than at import.
@functools.lru_cache(maxsize=8)
def _next_seat_table(n: int) -> tuple[int, ...]:
    """For every (seat, last player, seats still able to act): who acts next, or -1.

    Index ``(seat * 7 + last + 1) << 6 | able``, where ``able`` is the bit mask of seats that
    hold cards and have not passed out of the trick. The turn goes round the ring from
    ``seat``; reaching ``last``, the seat of the last play, ends the trick (RULES.md §1).
    """
    table = [-1] * (n * 7 << 6)
    for seat in range(n):
        for last in range(-1, n):
            for able in range(1 << n):
                j = seat
                for _ in range(n):
                    j = (j + 1) % n
                    if j == last:
                        break
                    if able >> j & 1:
                        table[(seat * 7 + last + 1) << 6 | able] = j
                        break
    return tuple(table)
