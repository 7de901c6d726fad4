"""botkit: a small base for Arschloch / Président bots speaking protocol v1.

Copy this one file next to your bot; it needs nothing but the Python standard library
(3.8+). Subclass :class:`Bot`, override the decisions you care about, and call ``run()``::

    from botkit import Bot

    class MyBot(Bot):
        name = "my-bot"

        def on_play(self, state):
            return state.legal[-1] if state.leading else []   # highest single or pass

    if __name__ == "__main__":
        MyBot().run()

``run()`` reads one JSON message per line from stdin, keeps a :class:`GameState` up to
date, calls your methods when the referee asks for a decision, writes one reply line per
request (flushed at once) and returns on ``bye`` or end of input. Unknown message types and
fields are ignored. Log with :func:`log` (stderr); stdout is only for replies.

The safety net: if a decision method raises, or returns cards that are not a legal play,
the kit answers with a safe legal choice instead, so a bug costs a bad move, not a forfeit.
It never hides the bug: each time, it writes one marker line on stderr (:data:`MARKER`,
then a JSON object; protocol/SPEC.md, "the kits' safety net"), which the referee counts:
``referee bot check`` fails a bot whose decisions were replaced, and ``referee play`` and
the tournament pages warn about it. Set ``safety_net = False`` on your bot to get the
referee's own verdict (a forfeit that explains the move) while testing.
"""

import json
import random
import sys
import traceback

PROTOCOL = 1
MARKER = "botkit: replaced "
"""Starts the stderr line the safety net writes for each decision it replaces."""
ROLES_GIVING_BACK = ("president", "vice_president")
# Message types whose on_<type> name is a decision method or the catch-all, not a hook.
_NOT_EVENT_HOOKS = ("act", "hello", "play", "give", "leftover", "event")


def log(*parts):
    """Write a line to stderr (the bot's log; the referee keeps the first 64 KiB)."""
    print(*parts, file=sys.stderr, flush=True)


def rank_of(card):
    """The rank token of a card: ``"10H"`` -> ``"10"``, ``"QD"`` -> ``"Q"``."""
    return card[:-1]


def suit_of(card):
    """The suit letter of a card: ``"10H"`` -> ``"H"``."""
    return card[-1]


def sort_cards(cards, ranks, suits=None):
    """Cards sorted low to high by ``ranks`` (low -> high), then by suit order."""
    order = {r: i for i, r in enumerate(ranks)}
    suit_order = {s: i for i, s in enumerate(suits or [])}
    return sorted(cards, key=lambda c: (order.get(rank_of(c), -1), suit_order.get(suit_of(c), 0)))


def groups_by_rank(cards, ranks, suits=None):
    """``{rank: [cards]}`` for the ranks present, ordered low to high (cards by suit order)."""
    groups = {}
    for card in sort_cards(cards, ranks, suits):
        groups.setdefault(rank_of(card), []).append(card)
    return groups


def takes_from(pool, cards):
    """Whether every card of ``cards`` is in ``pool``, counting duplicates."""
    pool = list(pool)
    for card in cards:
        if card not in pool:
            return False
        pool.remove(card)
    return True


def rank_key(cards):
    """The sorted rank tokens of a play, to compare plays regardless of suits."""
    return tuple(sorted(rank_of(c) for c in cards))


def _marker_json(marker):
    """The safety net's marker as one line of JSON, whatever the decision was made of."""
    try:
        line = json.dumps(marker, separators=(",", ":"), default=repr)
        if len(line) <= 1000:
            return line
    except (TypeError, ValueError):  # keys that are not strings, a cycle
        pass
    marker["decided"] = repr(marker["decided"])[:200]
    return json.dumps(marker, separators=(",", ":"), default=repr)


class GameState:
    """Everything a bot can know, kept up to date from the messages it receives.

    The hand is tracked from ``round_start``, ``received``, your own plays, gives and
    leftover choices, and is overwritten by the ``hand`` of every ``act`` (the referee's copy
    wins). Cards you give automatically in an exchange are inferred (best cards when you give
    up, lowest when you return); the next ``act`` corrects any guess.
    """

    def __init__(self):
        self.time = {}
        self._rank_pos = {}
        self.reset_match()

    # -- lifecycle ------------------------------------------------------------------------

    def reset_match(self):
        """Forget the current match (called on ``match_start``)."""
        self.match = None
        self.seat = 0
        self.players = []
        self.rules = {}
        self.ranks = []
        self.suits = []
        self._rank_pos = {}
        self.bank_ms = 0
        self.scores = []
        self.standings = None
        self.faulted = set()
        self.reset_round()

    def reset_round(self):
        """Forget the current round (called on ``round_start``)."""
        self.round = 0
        self.dealer = 0
        self.hand = []
        self.hand_sizes = [0] * len(self.players)
        self.roles = None
        self.leftovers = []
        self.played = []
        self.out_of_play = []
        self.places = {}
        self.last_places = None
        self.request_id = None
        self.kind = None
        self.legal = []
        self._given = None
        self.new_trick(None)

    def new_trick(self, leader):
        """Start a fresh trick led by ``leader``."""
        self.leader = leader
        self.top = []
        self.count = 0
        self.last_player = None
        self.passed = set()
        self.trick_passed = []

    # -- the rules, as helpers ------------------------------------------------------------

    @property
    def n_players(self):
        return len(self.players)

    @property
    def leading(self):
        """True when you are asked to play and there is nothing to beat."""
        return not self.top

    def rank_index(self, card_or_rank):
        """Position of a rank (or a card's rank) in the order low -> high; -1 if unknown."""
        token = card_or_rank if card_or_rank in self._rank_pos else rank_of(card_or_rank)
        return self._rank_pos.get(token, -1)

    def sort_cards(self, cards):
        """Cards sorted low to high in this match's rank order, then suit order."""
        return sort_cards(cards, self.ranks, self.suits)

    def groups_by_rank(self, cards=None):
        """``{rank: [cards]}`` of ``cards`` (default: your hand), low to high."""
        return groups_by_rank(self.hand if cards is None else cards, self.ranks, self.suits)

    def beats(self, rank, top_rank):
        """Whether ``rank`` may be played on ``top_rank`` (equal only under skip_next)."""
        if self.rules.get("equal_rank") == "skip_next":
            return self.rank_index(rank) >= self.rank_index(top_rank)
        return self.rank_index(rank) > self.rank_index(top_rank)

    def forbidden_finish(self, rank):
        """Whether a play emptying the hand may not contain ``rank`` (``no_finish_on``)."""
        return rank in self.rules.get("no_finish_on", [])

    def unseen(self, rank):
        """Cards of ``rank`` that may still be in another player's hand.

        Counts every card of the rank minus yours, those played, eliminated, discarded by
        you, and face-up leftovers still on the table. Unknown face-down cards count as
        unseen, so this is an upper bound.
        """
        known = sum(1 for c in self.hand if rank_of(c) == rank)
        known += sum(1 for c in self.played if rank_of(c) == rank)
        known += sum(1 for c in self.out_of_play if rank_of(c) == rank)
        known += sum(1 for c in self.leftovers if rank_of(c) == rank)
        return max(0, len(self.suits) - known)

    def is_boss(self, rank, count=1):
        """True when no other player can beat ``count`` cards of ``rank`` any more."""
        start = self.rank_index(rank)
        if self.rules.get("equal_rank") != "skip_next":
            start += 1
        return all(self.unseen(r) < count for r in self.ranks[start:])

    def opponents_cards(self):
        """Cards held by the other players, by seat (0 for you)."""
        return [0 if s == self.seat else n for s, n in enumerate(self.hand_sizes)]

    # -- updating -------------------------------------------------------------------------

    def apply(self, msg):
        """Update the state from one referee message (any type; unknown ones are ignored)."""
        kind = msg.get("type")
        handler = getattr(self, "_on_" + str(kind), None)
        if handler is not None:
            handler(msg)

    def _remove(self, cards):
        for card in cards:
            if card in self.hand:
                self.hand.remove(card)

    def _on_hello(self, msg):
        self.time = msg.get("time", {})

    def _on_match_start(self, msg):
        self.reset_match()
        self.match = msg.get("match")
        self.seat = msg.get("seat", 0)
        self.players = list(msg.get("players", []))
        self.rules = dict(msg.get("rules", {}))
        self.ranks = list(self.rules.get("ranks", []))
        self.suits = list(self.rules.get("suits", []))
        self._rank_pos = {r: i for i, r in enumerate(self.ranks)}
        self.bank_ms = msg.get("bank_ms", 0)
        self.scores = [0] * len(self.players)
        self.reset_round()

    def _on_round_start(self, msg):
        self.reset_round()
        self.round = msg.get("round", 0)
        self.dealer = msg.get("dealer", 0)
        self.hand = list(msg.get("hand", []))
        self.hand_sizes = list(msg.get("hand_sizes", []))
        self.roles = msg.get("roles")
        self.scores = list(msg.get("scores", self.scores))
        self.leftovers = list(msg.get("leftovers", []))

    def _on_act(self, msg):
        self.request_id = msg.get("id")
        self.kind = msg.get("kind")
        if "hand" in msg:
            self.hand = list(msg["hand"])
        counts = msg.get("counts")
        if isinstance(counts, list) and len(counts) == len(self.hand_sizes):
            # Protocol 1.1: the referee's own counts replace the kit's bookkeeping.
            self.hand_sizes = [n if isinstance(n, int) else 0 for n in counts]
        if self.kind == "play":
            trick = msg.get("trick", {})
            self.leader = trick.get("leader", self.leader)
            self.top = list(trick.get("top", []))
            self.count = trick.get("count", len(self.top))
            self.trick_passed = list(msg.get("passed", []))
            self.legal = [list(p) for p in msg.get("legal", [])]
            self.bank_ms = msg.get("bank_ms", self.bank_ms)

    def _on_played(self, msg):
        seat, cards = msg.get("seat"), list(msg.get("cards", []))
        self.played.extend(cards)
        if seat == self.seat:
            self._remove(cards)
        if isinstance(seat, int) and 0 <= seat < len(self.hand_sizes):
            self.hand_sizes[seat] = max(0, self.hand_sizes[seat] - len(cards))
        self.top, self.count, self.last_player = cards, len(cards), seat

    def _on_passed(self, msg):
        self.passed.add(msg.get("seat"))

    def _on_trick_end(self, msg):
        self.new_trick(msg.get("leader"))

    def _on_finished(self, msg):
        self.places[msg.get("seat")] = msg.get("place")

    def _on_eliminated(self, msg):
        seat = msg.get("seat")
        self.places[seat] = msg.get("place")
        self.out_of_play.extend(msg.get("cards", []))
        if seat == self.seat:
            self.hand = []
        if isinstance(seat, int) and 0 <= seat < len(self.hand_sizes):
            self.hand_sizes[seat] = 0

    def _on_exchanged(self, msg):
        giver, taker, count = msg.get("from"), msg.get("to"), msg.get("count", 0)
        for seat, delta in ((giver, -count), (taker, count)):
            if isinstance(seat, int) and 0 <= seat < len(self.hand_sizes):
                self.hand_sizes[seat] += delta
        if giver != self.seat:
            return
        if self._given is not None:  # we chose these cards and removed them when replying
            self._given = None
            return
        mine = self.sort_cards(self.hand)
        returning = self.roles and self.roles[self.seat] in ROLES_GIVING_BACK
        self._remove(mine[:count] if returning else mine[len(mine) - count :])

    def _on_received(self, msg):
        self.hand.extend(msg.get("cards", []))

    def _on_leftover_taken(self, msg):
        if msg.get("card") in self.leftovers:
            self.leftovers.remove(msg["card"])

    def _on_fault(self, msg):
        self.faulted.add(msg.get("seat"))

    def _on_round_end(self, msg):
        self.scores = list(msg.get("scores", self.scores))
        self.last_places = list(msg.get("places", []))

    def _on_match_end(self, msg):
        self.standings = msg.get("standings")

    # -- checking a decision --------------------------------------------------------------

    def is_legal_play(self, cards):
        """Whether ``cards`` is a play the referee accepts now (cards in hand, in ``legal``)."""
        if not takes_from(self.hand, cards):
            return False
        return rank_key(cards) in {rank_key(p) for p in self.legal}


class Bot:
    """Base class of a bot: override the ``on_*`` decisions and event hooks you need.

    Decisions (return the reply's content):

    * ``on_play(state) -> list of cards`` (``[]`` passes; not allowed when leading)
    * ``on_give(state, to, count) -> list of count cards`` to give back
    * ``on_leftover(state, offer) -> (take, discard)``

    Event hooks ``on_<type>(state, msg)`` (e.g. ``on_played``, ``on_round_end``) are called
    after the state is updated; ``on_event(state, msg)`` is called for every message.
    """

    name = "botkit-bot"
    version = None
    safety_net = True
    reseed = True  # seed self.random from match_start's seed (or match id and seat) each match

    def __init__(self, seed=None):
        self.state = GameState()
        self.random = random.Random(seed)

    # -- decisions: the defaults are the referee's fallback policy -------------------------

    def on_play(self, state):
        """Lead the single lowest card; otherwise pass."""
        if state.leading:
            return [state.sort_cards(state.hand)[0]]
        return []

    def on_give(self, state, to, count):
        """Give back the lowest cards."""
        return state.sort_cards(state.hand)[:count]

    def on_leftover(self, state, offer):
        """Take the highest offered card; discard the lowest card afterwards."""
        take = state.sort_cards(offer)[-1]
        return take, state.sort_cards([*state.hand, take])[0]

    def on_event(self, state, msg):
        """Called for every message after the state is updated."""

    # -- plumbing -------------------------------------------------------------------------

    def handle(self, msg):
        """Process one message; return the reply object for a request, else None."""
        state = self.state
        try:
            state.apply(msg)
        except Exception:  # a malformed message must not take the bot down
            log("botkit: could not follow a message; continuing\n" + traceback.format_exc())
        kind = msg.get("type")
        if kind == "match_start" and self.reseed:
            # Protocol 1.2's seed: the same for this seat on the same cards, so both halves
            # of a `referee compare` pair draw alike. Before 1.2, the match id and seat.
            seed = msg.get("seed")
            if not isinstance(seed, int) or isinstance(seed, bool):
                seed = "%s:%s" % (msg.get("match"), msg.get("seat"))
            self.random.seed(seed)
        self.on_event(state, msg)
        if kind not in _NOT_EVENT_HOOKS:
            hook = getattr(self, "on_" + str(kind), None)
            if callable(hook):
                hook(state, msg)
        if kind == "hello":
            reply = {"id": msg.get("id"), "type": "ready", "name": self.name}
            if self.version is not None:
                reply["version"] = str(self.version)
            return reply
        if kind == "act":
            return self._act(msg)
        return None

    def _act(self, msg):
        state, kind, rid = self.state, msg.get("kind"), msg.get("id")
        if kind == "play":
            cards = self._decide(
                msg, lambda: self.on_play(state), state.is_legal_play, self._safe_play
            )
            state._remove(cards)
            return {"id": rid, "cards": list(cards)}
        if kind == "give":
            to, count = msg.get("to"), msg.get("count", 0)

            def ok(cards):
                return len(cards) == count and takes_from(state.hand, cards)

            cards = self._decide(
                msg,
                lambda: self.on_give(state, to, count),
                ok,
                lambda: Bot.on_give(self, state, to, count),
            )
            state._remove(cards)
            state._given = list(cards)
            return {"id": rid, "cards": list(cards)}
        if kind == "leftover":
            offer = list(msg.get("offer", []))

            def ok(choice):
                take, discard = choice
                return take in offer and discard in [*state.hand, take]

            take, discard = self._decide(
                msg,
                lambda: tuple(self.on_leftover(state, offer)),
                ok,
                lambda: Bot.on_leftover(self, state, offer),
            )
            state.hand.append(take)
            state._remove([discard])
            state.out_of_play.append(discard)
            return {"id": rid, "take": take, "discard": discard}
        log(f"botkit: unknown act kind {kind!r}; answering with an empty play")
        return {"id": rid, "cards": []}

    def _decide(self, msg, decide, is_ok, fallback):
        """Your decision, or (the safety net) a safe one, said on stderr with a marker line."""
        if not self.safety_net:
            return decide()
        choice = error = trace = None
        try:
            choice = decide()
            if is_ok(choice):
                return choice
        except Exception as exc:
            error, trace = exc, traceback.format_exc()
        safe = fallback()
        marker = {"id": msg.get("id"), "kind": msg.get("kind"), "decided": choice, "sent": safe}
        marker["why"] = "not allowed" if error is None else "raised"
        if error is not None:
            marker["error"] = ("%s: %s" % (type(error).__name__, error))[:200]
        log(MARKER + _marker_json(marker))
        if trace is not None:
            log(trace.rstrip())
        return safe

    def _safe_play(self):
        state = self.state
        if not state.leading and [] in state.legal:
            return []
        if state.legal:
            return [c for c in state.legal[0]]
        return Bot.on_play(self, state)

    def run(self, stdin=None, stdout=None):
        """Serve the referee until ``bye`` or end of input."""
        stdin = stdin or sys.stdin.buffer
        stdout = stdout or sys.stdout.buffer
        while True:
            line = stdin.readline()
            if not line:
                return
            try:
                msg = json.loads(line)
            except ValueError:
                log(f"botkit: ignoring a line that is not JSON: {line[:80]!r}")
                continue
            if not isinstance(msg, dict):
                continue
            reply = self.handle(msg)
            if reply is not None:
                stdout.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
                stdout.flush()
            if msg.get("type") == "bye":
                return
