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
rules, have made each of the seat's plays and passes this round? A seat's hand is drawn a
few times and the one that explains most is kept. Against the ``heuristic`` bots this
narrows the hands a lot (a lead of a single nine says: no lower card that is not a boss);
against bots that play otherwise it costs little: every draw explains about as badly, and
the first is kept.
"""

from mcsim import Table, policy

IMPOSSIBLE = 1000  # mismatches charged to a hand that the rules would have eliminated


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
    """What one seat knows about the other hands in the current round."""

    def __init__(self, n, nranks, dealt):
        self.known = [[] for _ in range(n)]  # cards known to be in each seat's hand
        self.cap = [nranks - 1] * n  # highest rank the seat's other cards may have
        self.floor = [0] * n  # lowest rank the seat's other cards may have
        self.dealt = list(dealt) if len(dealt) == n else [0] * n
        self.finished = 0
        self.eliminated = 0
        self.gone = [0] * nranks  # cards out of every hand in view of all: played, eliminated
        self.plays = [[] for _ in range(n)]  # each seat's plays this round, as codes
        self.observed = [[] for _ in range(n)]  # each seat's decisions this round

    def forget_card(self, card):
        for cards in self.known:
            if card in cards:
                cards.remove(card)
                return

    def observe(self, seat, code, top_rank, top_count, last, nheld, per_rank, face_up):
        """Record a decision of ``seat`` made in the public position described."""
        unseen = [max(0, per_rank - g - f) for g, f in zip(self.gone, face_up)]
        self.observed[seat].append(
            Observed(code, len(self.plays[seat]), top_rank, top_count, last, list(nheld), unseen)
        )

    def played(self, seat, code):
        self.plays[seat].append(code)
        self.gone[code >> 3] += code & 7


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
        if need >= len(spots):
            return spots[:need]
        rng = self.rng
        pick = rng.sample(spots, need)
        hand = list(base)
        for i in pick:
            hand[cards[i]] += 1
        misses = self.mismatches(seat, hand)
        if not misses or not self.explain[seat] or not need:
            return pick
        outside = [i for i in spots if i not in set(pick)]
        if not outside:
            return pick
        for _ in range(self.tries):
            a = int(rng.random() * need)
            b = int(rng.random() * len(outside))
            old, new = cards[pick[a]], cards[outside[b]]
            if old == new:
                continue
            hand[old] -= 1
            hand[new] += 1
            trial = self.mismatches(seat, hand, misses + 1)
            if trial <= misses:
                pick[a], outside[b] = outside[b], pick[a]
                misses = trial
                if not misses:
                    break
            else:
                hand[old] += 1
                hand[new] -= 1
        return pick

    def mismatches(self, seat, hand, bound=IMPOSSIBLE + 1):
        """How many of the seat's decisions the policy would not have made with ``hand``
        (counting stops at ``bound``); :data:`IMPOSSIBLE` if the hand could not be held."""
        rules = self.rules
        if rules.any_forbidden and any(hand):
            forbidden = rules.forbidden
            if all(forbidden[r] or not c for r, c in enumerate(hand)):
                return IMPOSSIBLE
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
            if sum(then) != obs.nheld[seat] or policy(view) != obs.code:
                misses += 1
                if misses >= bound:
                    break
        return misses
