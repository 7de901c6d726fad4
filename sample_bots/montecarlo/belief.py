"""belief: what the Monte Carlo bot knows about the hidden hands, and deals consistent with it.

:class:`Knowledge` collects the facts of one round: cards known to sit in a seat's hand
(those this bot handed over in the exchange), bounds on a seat's other cards (a seat that
gave up its best cards holds nothing above the lowest of them; one that gave back its
lowest, nothing below the highest), and every play and pass of the other seats with the
public position it was made in.

:class:`Sampler` deals the unseen cards (a *determinisation*): each other seat gets its
known cards plus random unseen ones up to its card count, within its bounds, the rest lie
face down out of play. Then it tries to explain what the seat did: with the hand drawn (and
the cards the seat played since put back), would the rollout policy, the ``heuristic`` bot's
rules, have made each of the seat's plays and passes this round? Cards are swapped with
unseen ones, a swap kept when the hand explains at least as many decisions as before; most
swaps take out a card of the rank the policy would have played instead of what the seat did
(a lead of a single nine from a hand with a seven: the seven goes). Against ``heuristic``
bots this narrows the hands a lot; against bots that play otherwise it costs little: no
hand explains them much better than another, and the deals stay about uniform.
"""

from mcsim import Table, policy

IMPOSSIBLE = 1000  # mismatches charged to a hand that the rules would have eliminated
HINTED_SWAPS = 0.75  # share of swaps aimed at the rank the policy would have played


class Observed:
    """One play or pass of another seat, with what the rollout policy needs to redo it."""

    __slots__ = ("code", "last", "nheld", "plays_before", "top_count", "top_rank", "unseen")

    def __init__(self, code, plays_before, top_rank, top_count, last, nheld, unseen):
        self.code = code
        self.plays_before = plays_before
        self.top_rank = top_rank
        self.top_count = top_count
        self.last = last
        self.nheld = nheld
        self.unseen = unseen


class Knowledge:
    """What one seat knows about the other hands in the current round.

    Fed every message of the round: :meth:`before` sees it before the kit updates its
    ``GameState`` (a play is judged in the position it was made in), :meth:`after` once it
    has. ``rules`` is an :class:`mcsim.Rules`; ``state`` the kit's ``GameState``.
    """

    def __init__(self, rules, seat, players, hand_sizes):
        self.rules = rules
        self.seat = seat
        self.n = n = players
        nranks = rules.nranks
        self.per_rank = len(rules.suits) or 4
        self.known = [[] for _ in range(n)]  # cards known to be in each seat's hand
        self.cap = [nranks - 1] * n  # highest rank the seat's other cards may have
        self.floor = [0] * n  # lowest rank the seat's other cards may have
        self.dealt = list(hand_sizes) if len(hand_sizes) == n else [0] * n
        self.finished = 0
        self.eliminated = 0
        self.gone = [0] * nranks  # cards out of every hand in view of all: played, eliminated
        self.plays = [[] for _ in range(n)]  # each seat's plays this round, as codes
        self.observed = [[] for _ in range(n)]  # each seat's decisions this round
        self._hand_before = None

    # -- following the round -------------------------------------------------------------

    def before(self, msg, state):
        kind = msg.get("type")
        if kind in ("played", "passed"):
            self._observe(msg, state)
        elif kind == "exchanged" and msg.get("from") == self.seat:
            self._hand_before = list(state.hand)

    def after(self, msg, state, reply):
        kind = msg.get("type")
        if kind == "played":
            seat, cards = msg.get("seat"), msg.get("cards")
            code = self.code_of(cards)
            if code is not None and self._is_seat(seat):
                self.plays[seat].append(code)
                self.gone[code >> 3] += code & 7
                for card in cards:
                    self._forget(card)
        elif kind == "finished":
            self.finished += 1
        elif kind == "eliminated":
            self._eliminated(msg)
        elif kind == "received":
            self._received(msg, state)
        elif kind == "exchanged" and self._hand_before is not None:
            gone = [c for c in self._hand_before if c not in state.hand]
            self._hand_before = None
            self._gave(msg.get("to"), gone)  # handed over automatically: the kit removed them
        elif kind == "act" and msg.get("kind") == "give" and isinstance(reply, dict):
            self._gave(msg.get("to"), reply.get("cards") or [])

    def _is_seat(self, seat):
        return isinstance(seat, int) and 0 <= seat < self.n

    def code_of(self, cards):
        """A play's code (``rank << 3 | count``), or None unless it is 1-4 cards of one rank."""
        if not isinstance(cards, list) or not 0 < len(cards) <= 4:
            return None
        ranks = {self.rules.rank_of(c) if isinstance(c, str) else -1 for c in cards}
        if len(ranks) != 1 or -1 in ranks:
            return None
        return ranks.pop() << 3 | len(cards)

    def _observe(self, msg, state):
        """Record another seat's play or pass with the position it was made in."""
        seat = msg.get("seat")
        if not self._is_seat(seat) or seat == self.seat or len(state.hand_sizes) != self.n:
            return
        code = self.code_of(msg.get("cards")) if msg.get("type") == "played" else 0
        if code is None:
            return
        rules = self.rules
        top_rank = rules.rank_of(state.top[0]) if state.top else -1
        last = -1
        if state.top:
            last = state.last_player if state.last_player is not None else state.leader
        face_up = counts_by_rank(rules, state.leftovers)
        unseen = [max(0, self.per_rank - g - f) for g, f in zip(self.gone, face_up)]
        self.observed[seat].append(
            Observed(
                code,
                len(self.plays[seat]),
                top_rank,
                len(state.top),
                last if self._is_seat(last) else -1,
                list(state.hand_sizes),
                unseen,
            )
        )

    def _forget(self, card):
        for cards in self.known:
            if card in cards:
                cards.remove(card)
                return

    def _gave(self, to, cards):
        if self._is_seat(to):
            self.known[to].extend(c for c in cards if isinstance(c, str))

    def _eliminated(self, msg):
        self.eliminated += 1
        for r in counts_to_ranks(counts_by_rank(self.rules, msg.get("cards") or [])):
            self.gone[r] += 1
        if self._is_seat(msg.get("seat")):
            self.known[msg["seat"]] = []

    def _received(self, msg, state):
        """Cards from the exchange bound what the giver kept (see the module docstring)."""
        giver, cards = msg.get("from"), msg.get("cards") or []
        ranks = [self.rules.rank_of(c) for c in cards if isinstance(c, str)]
        ranks = [r for r in ranks if r >= 0]
        roles = state.roles
        if not self._is_seat(giver) or not ranks or not roles or len(roles) != self.n:
            return
        for card in cards:
            self._forget(card)
        if roles[self.seat] in ("president", "vice_president"):
            self.cap[giver] = min(self.cap[giver], min(ranks))  # it gave up its best cards
        elif state.rules.get("return_choice") == "lowest":
            self.floor[giver] = max(self.floor[giver], max(ranks))  # it gave back its lowest

    # -- the hidden cards as numbers ------------------------------------------------------

    def unseen(self, state):
        """Per rank, the cards out of view: in the other hands, or face down out of play."""
        rules = self.rules
        gone = counts_by_rank(rules, [*state.played, *state.out_of_play, *state.leftovers])
        mine = counts_by_rank(rules, state.hand)
        return [max(0, self.per_rank - g - m) for g, m in zip(gone, mine)]

    def seat_counts(self, state, counts=None):
        """Each seat's card count: the act's ``counts`` when given, else the kit's books."""
        n = self.n
        usable = counts if isinstance(counts, list) and len(counts) == n else state.hand_sizes
        out = [c if isinstance(c, int) and c >= 0 else 0 for c in usable]
        if len(out) != n:
            out = [0] * n
        out[self.seat] = len(state.hand)
        for seat in state.places:
            if self._is_seat(seat):
                out[seat] = 0
        return out

    def model(self, state, counts=None):
        """``(pool, known, needs)``: the unseen cards (as ranks) to deal, the known ranks by
        seat, and how many more cards each seat holds; None if the books do not add up."""
        sizes = self.seat_counts(state, counts)
        for trust_known in (True, False):
            unseen = self.unseen(state)
            known = [[] for _ in sizes]
            needs = [0] * self.n
            for s, size in enumerate(sizes):
                if s == self.seat or not size:
                    continue
                cards = self.known[s] if trust_known else []
                ranks = []
                for r in (self.rules.rank_of(c) for c in cards[:size]):
                    if r >= 0 and unseen[r] > 0:
                        unseen[r] -= 1
                        ranks.append(r)
                known[s] = ranks
                needs[s] = size - len(ranks)
            pool = counts_to_ranks(unseen)
            if len(pool) >= sum(needs):
                return pool, known, needs
        return None


def counts_by_rank(rules, cards):
    """Counts by rank index of the cards of this deck among ``cards``."""
    out = [0] * rules.nranks
    for card in cards:
        r = rules.rank_of(card) if isinstance(card, str) else -1
        if r >= 0:
            out[r] += 1
    return out


def counts_to_ranks(counts):
    """``[0, 2, 1]`` -> ``[1, 1, 2]``: one rank index per card."""
    return [r for r, c in enumerate(counts) for _ in range(c)]


class Sampler:
    """Draws determinisations for one decision (see the module docstring)."""

    def __init__(self, rules, know, me, pool, known, needs, mine, rng, tries, faulted=()):
        self.rules = rules
        self.know = know
        self.me = me
        self.pool = pool
        self.needs = needs
        self.rng = rng
        self.tries = tries
        n = len(needs)
        nr = rules.nranks
        self.base = [[0] * nr for _ in range(n)]
        self.base[me] = list(mine)
        for s in range(n):
            for r in known[s]:
                self.base[s][r] += 1
        self.explain = [
            s != me and s not in faulted and bool(know.observed[s]) for s in range(n)
        ]
        bounded = [
            s for s in range(n) if needs[s] and (know.cap[s] < nr - 1 or know.floor[s] > 0)
        ]
        rest = sorted(
            (s for s in range(n) if needs[s] and s not in bounded),
            key=lambda s: -len(know.observed[s]),
        )
        self.order = bounded + rest
        view = Table.__new__(Table)
        view.rules = rules
        view.n = n
        view.hands = [None] * n
        view.dealt = self.know.dealt
        view.passed = 0
        self.view = view
        self.hint = -1  # the rank behind the latest decision the last hand failed to explain

    def draw(self):
        """``(hands, dead)``: counts by rank for every seat, and for the face-down cards."""
        rng, needs, know = self.rng, self.needs, self.know
        cards = list(self.pool)
        rng.shuffle(cards)
        hands = [list(h) for h in self.base]
        for s in self.order:
            need = needs[s]
            lo, hi = know.floor[s], know.cap[s]
            spots = [i for i, r in enumerate(cards) if lo <= r <= hi]
            if len(spots) < need:
                spots = list(range(len(cards)))  # the bounds cannot be met: drop them
            pick = self._best_hand(s, hands[s], cards, spots, need)
            for i in pick:
                hands[s][cards[i]] += 1
            chosen = set(pick)
            cards = [r for i, r in enumerate(cards) if i not in chosen]
        dead = [0] * self.rules.nranks
        for r in cards:
            dead[r] += 1
        return hands, dead

    def _best_hand(self, seat, base, cards, spots, need):
        """Indices into ``cards`` for the seat: a random draw, then improved by swaps of one
        card with an unseen one, kept when they explain at least as many decisions."""
        if not need or need >= len(spots):
            return spots[:need]
        rng = self.rng
        pick = rng.sample(spots, need)
        hand = list(base)
        for i in pick:
            hand[cards[i]] += 1
        misses = self.mismatches(seat, hand)
        if not misses or (misses < IMPOSSIBLE and not self.explain[seat]):
            return pick
        outside = [i for i in spots if i not in set(pick)]
        if not outside:
            return pick
        for _ in range(self.tries):
            a, hinted = self._swap_out(cards, pick)
            b = int(rng.random() * len(outside))
            old, new = cards[pick[a]], cards[outside[b]]
            if old == new:
                continue
            hand[old] -= 1
            hand[new] += 1
            hint = self.hint
            trial = self.mismatches(seat, hand, misses + 1)
            # A swap that explains as much is kept if it was random (the deals keep mixing)
            # or if it moved the blame to another rank (one culprit fewer).
            if trial < misses or (trial == misses and (not hinted or self.hint != hint)):
                pick[a], outside[b] = outside[b], pick[a]
                misses = trial
                if not misses:
                    break
            else:
                hand[old] += 1
                hand[new] -= 1
                self.hint = hint
        return pick

    def _swap_out(self, cards, pick):
        """Which drawn card to swap out: mostly one of the rank the policy would have played
        instead of what the seat did (that card is the likely culprit), else any."""
        rng = self.rng
        hint = self.hint
        if hint >= 0 and rng.random() < HINTED_SWAPS:
            culprits = [a for a, i in enumerate(pick) if cards[i] == hint]
            if culprits:
                return culprits[int(rng.random() * len(culprits))], True
        return int(rng.random() * len(pick)), False

    def mismatches(self, seat, hand, bound=IMPOSSIBLE + 1):
        """How many of the seat's decisions the policy would not have made with ``hand``
        (counting stops at ``bound``); :data:`IMPOSSIBLE` if the hand could not be held."""
        rules = self.rules
        if rules.any_forbidden and any(hand):
            forbidden = rules.forbidden
            if all(forbidden[r] or not c for r, c in enumerate(hand)):
                return IMPOSSIBLE
        self.hint = -1
        if not self.explain[seat]:
            return 0
        view = self.view
        view.turn = seat
        then = list(hand)
        view.hands[seat] = then
        plays = self.know.plays[seat]
        put_back = len(plays)
        misses = 0
        for obs in reversed(self.know.observed[seat]):
            while put_back > obs.plays_before:
                put_back -= 1
                code = plays[put_back]
                then[code >> 3] += code & 7
            view.last = obs.last
            view.top_rank = obs.top_rank
            view.top_count = obs.top_count
            view.nheld = obs.nheld
            view.unseen = obs.unseen
            if sum(then) != obs.nheld[seat]:
                misses += 1
            else:
                code = policy(view)
                if code != obs.code:
                    if not misses:
                        self.hint = code >> 3 if code else -1
                    misses += 1
            if misses >= bound:
                break
        return misses
