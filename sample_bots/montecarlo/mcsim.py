"""mcsim: the Monte Carlo bot's own fast model of one round, on rank counts.

Suits never matter once a round is under way, so a hand here is a list of counts by rank
index (low to high in ``rules.ranks``) and a play is one int, ``rank << 3 | count``, with 0
for a pass (the same codes as the referee's engine, which the property tests compare
against). Everything the referee's rules say about a trick is modelled: ``pass_rule``
(``reenter``/``out``), ``equal_rank`` (``forbidden``/``skip_next``), ``top_card_ends_trick``
(no card still held outranks the play), ``no_finish_on`` (a hand left with only those ranks
is eliminated to the lowest free place), and the turn order, which never jumps over the
seat of the last play even when it has finished.

Three parts:

* :class:`Rules`: the ``rules`` object of ``match_start``, compiled for speed.
* :class:`Table`: one round from some position to its end (``legal``, ``play``).
* :func:`policy`: the rollout policy, a transcription of the ``heuristic`` sample bot onto
  counts. It decides from what the seat to act could know (its hand and, per rank, how
  many cards are still unseen to it), so in a rollout every seat plays as that bot would.

Standard library only: the bot runs with a plain ``python3`` in the sandbox.
"""

# The heuristic sample bot's weights (sample_bots/heuristic/bot.py), kept equal: the tests
# compare the two players decision by decision.
BOSS_VALUE = 0.6
HIGH_BONUS = 1.2
FORBIDDEN_PENALTY = 0.3
CARD_BONUS = 0.05
LEAD_VALUE = 0.4
LEAD_VALUE_LATE = 0.5
THREAT_BONUS = 0.5
NO_THREAT = 99


class Rules:
    """The parts of a ``rules`` object that decide play, precomputed for the inner loops."""

    __slots__ = (
        "any_forbidden",
        "forbidden",
        "index",
        "n",
        "nranks",
        "out",
        "points",
        "ranks",
        "skip",
        "suits",
        "threshold",
        "top_ends",
        "value_by_place",
    )

    def __init__(self, rules, players):
        self.ranks = [str(r) for r in rules.get("ranks", [])]
        self.suits = [str(s) for s in rules.get("suits", [])]
        self.nranks = len(self.ranks)
        self.index = {r: i for i, r in enumerate(self.ranks)}
        finish = set(rules.get("no_finish_on") or [])
        self.forbidden = [r in finish for r in self.ranks]
        self.any_forbidden = any(self.forbidden)
        self.skip = rules.get("equal_rank") == "skip_next"
        self.out = rules.get("pass_rule") == "out"
        self.top_ends = bool(rules.get("top_card_ends_trick"))
        self.threshold = 0.05 if self.out else 0.15
        self.n = players
        scoring = rules.get("scoring")
        if isinstance(scoring, list) and len(scoring) == players:
            self.points = [float(p) for p in scoring]
        else:
            self.points = [float(players - 1 - i) for i in range(players)]
        # What a finishing place is worth to the search: the round's points, plus a little
        # for the place itself, which decides the next exchange when points are equal.
        spread = max(1.0, max(self.points) - min(self.points))
        self.value_by_place = [
            0.0,
            *(
                self.points[i] + 0.25 * spread * (players - 1 - i) / max(1, players - 1)
                for i in range(players)
            ),
        ]

    def rank_of(self, card):
        """The rank index of a card string (``-1`` if it is not of this deck)."""
        return self.index.get(card[:-1], -1)

    def group_value(self, rank, count, above):
        """The heuristic's worth of holding ``count`` cards of ``rank``.

        ``above`` is the most cards of one rank the others may hold above ``rank`` (from
        ``rank`` itself under ``skip_next``): fewer than ``count`` makes the group a boss.
        """
        if count == 0:
            return 0.0
        if above < count:
            return BOSS_VALUE
        pos = rank / max(1, self.nranks - 1)
        value = -1.0 + HIGH_BONUS * pos * pos
        if self.forbidden[rank]:
            value -= FORBIDDEN_PENALTY
        return value


class Table:
    """One round of play on rank counts: every seat's hand and the trick in progress.

    ``unseen`` counts, by rank, the cards a seat cannot see: those of the seats still in
    the round plus the dead ones (face-down leftovers, discards). The rollout policy reads
    it to tell a boss; ``held`` (the seats' cards only) decides ``top_card_ends_trick``.
    """

    __slots__ = (
        "active",
        "dealt",
        "hands",
        "held",
        "held_mask",
        "last",
        "n",
        "next_bottom",
        "next_top",
        "nheld",
        "passed",
        "place_of",
        "rules",
        "top_count",
        "top_rank",
        "turn",
        "unseen",
    )

    def __init__(self, rules, hands, dead, *, turn, last=-1, top_rank=-1, top_count=0,
                 passed=0, place_of=None, next_top=None, next_bottom=None, dealt=None):
        """A position: ``hands`` by seat (counts by rank), ``dead`` counts by rank, the trick,
        and the places already taken (``next_top``/``next_bottom``: the next free place
        from the top, for a finisher, and from the bottom, for an eliminated hand)."""
        self.rules = rules
        self.n = n = len(hands)
        self.hands = hands
        self.nheld = [sum(h) for h in hands]
        nr = rules.nranks
        self.held = held = [0] * nr
        for h in hands:
            for r in range(nr):
                held[r] += h[r]
        self.unseen = [held[r] + dead[r] for r in range(nr)]
        self.held_mask = sum(1 << r for r in range(nr) if held[r])
        self.turn = turn
        self.last = last
        self.top_rank = top_rank
        self.top_count = top_count
        self.passed = passed
        self.place_of = list(place_of) if place_of is not None else [0] * n
        placed = sum(1 for p in self.place_of if p)
        self.active = n - placed
        self.next_top = next_top if next_top is not None else 1 + placed
        self.next_bottom = next_bottom if next_bottom is not None else n
        self.dealt = list(dealt) if dealt is not None else list(self.nheld)

    def copy(self):
        """An independent copy (hands and counters), for one rollout."""
        t = Table.__new__(Table)
        t.rules = self.rules
        t.n = self.n
        t.hands = [list(h) for h in self.hands]
        t.nheld = list(self.nheld)
        t.held = list(self.held)
        t.unseen = list(self.unseen)
        t.held_mask = self.held_mask
        t.turn = self.turn
        t.last = self.last
        t.top_rank = self.top_rank
        t.top_count = self.top_count
        t.passed = self.passed
        t.place_of = list(self.place_of)
        t.active = self.active
        t.next_top = self.next_top
        t.next_bottom = self.next_bottom
        t.dealt = self.dealt
        return t

    # -- the rules -----------------------------------------------------------------------

    def legal(self):
        """Legal plays of the seat to act, as codes: by rank then count, a pass (0) last."""
        h = self.hands[self.turn]
        if self.last < 0:
            return [r << 3 | k for r, c in enumerate(h) for k in range(1, c + 1)]
        k = self.top_count
        lo = self.top_rank if self.rules.skip else self.top_rank + 1
        moves = [r << 3 | k for r in range(lo, len(h)) if h[r] >= k]
        moves.append(0)
        return moves

    def next_turn(self, seat):
        """The next seat that may act after ``seat``, or -1 when the trick is over."""
        n, last, nheld, passed = self.n, self.last, self.nheld, self.passed
        j = seat
        for _ in range(n):
            j += 1
            if j == n:
                j = 0
            if j == last:
                return -1
            if nheld[j] and not passed >> j & 1:
                return j
        return -1

    def next_holder(self, seat):
        n = self.n
        for i in range(1, n + 1):
            j = (seat + i) % n
            if self.nheld[j]:
                return j
        return seat

    def end_trick(self):
        winner = self.last
        self.turn = winner if self.nheld[winner] else self.next_holder(winner)
        self.last = -1
        self.top_rank = -1
        self.top_count = 0
        self.passed = 0

    def play(self, code):
        """The seat to act plays ``code`` (0 passes), unchecked; True when the round ends."""
        seat = self.turn
        rules = self.rules
        if not code:
            if rules.out:
                self.passed |= 1 << seat
            nxt = self.next_turn(seat)
            if nxt < 0:
                self.end_trick()
            else:
                self.turn = nxt
            return False
        r = code >> 3
        k = code & 7
        hand = self.hands[seat]
        hand[r] -= k
        left = self.nheld[seat] - k
        self.nheld[seat] = left
        held = self.held
        held[r] -= k
        self.unseen[r] -= k
        if not held[r]:
            self.held_mask &= ~(1 << r)
        equal = r == self.top_rank
        self.last = seat
        self.top_rank = r
        self.top_count = k
        if not left:
            self.place_of[seat] = self.next_top
            self.next_top += 1
            self.active -= 1
        elif rules.any_forbidden and self.only_forbidden(hand):
            self.eliminate(seat)
        if self.active <= 1:
            self.finish_round()
            return True
        if rules.top_ends and not self.held_mask >> (r + 1):
            self.end_trick()
            return False
        nxt = self.next_turn(seat)
        if nxt >= 0 and equal and rules.skip:
            nxt = self.next_turn(nxt)
        if nxt < 0:
            self.end_trick()
        else:
            self.turn = nxt
        return False

    def only_forbidden(self, hand):
        forbidden = self.rules.forbidden
        return all(forbidden[r] or not c for r, c in enumerate(hand))

    def eliminate(self, seat):
        """Out at the lowest free place; the hand's cards leave the game, face up."""
        hand = self.hands[seat]
        for r, c in enumerate(hand):
            if c:
                self.held[r] -= c
                self.unseen[r] -= c
                if not self.held[r]:
                    self.held_mask &= ~(1 << r)
                hand[r] = 0
        self.nheld[seat] = 0
        self.place_of[seat] = self.next_bottom
        self.next_bottom -= 1
        self.active -= 1

    def finish_round(self):
        for s in range(self.n):
            if not self.place_of[s]:
                self.place_of[s] = self.next_top
                self.next_top += 1


# -- the rollout policy: the heuristic sample bot on counts ----------------------------------


def _above(rules, hand, unseen):
    """For each rank, the most cards of one rank the others may hold that beat it."""
    nr = rules.nranks
    out = [0] * nr
    best = 0
    if rules.skip:
        for r in range(nr - 1, -1, -1):
            o = unseen[r] - hand[r]
            if o > best:
                best = o
            out[r] = best
    else:
        for r in range(nr - 1, -1, -1):
            out[r] = best
            o = unseen[r] - hand[r]
            if o > best:
                best = o
    return out


def _exit_first(rules, hand, above, skip_rank=-1, skip_count=0):
    """The first group of the heuristic's exit plan for ``hand`` (less ``skip_count`` cards
    of ``skip_rank``), as a code, or None when the hand cannot be played out that way.

    The plan: every group but at most one is a boss; bosses go first (``no_finish_on``
    ranks before the rest, low to high), the other group last.
    """
    forbidden = rules.forbidden
    bosses = []
    other = -1
    for r, c in enumerate(hand):
        if r == skip_rank:
            c -= skip_count
        if not c:
            continue
        if above[r] < c:
            bosses.append(r)
        elif other >= 0:
            return None
        else:
            other = r
    if other >= 0:
        last = other
    else:
        last = -1
        for r in bosses:
            if not forbidden[r]:
                last = r
                break
        if last < 0:
            return None
    if forbidden[last]:
        return None
    first = -1
    for r in bosses:  # forbidden bosses first, then the lowest
        if r != last and forbidden[r]:
            first = r
            break
    if first < 0:
        for r in bosses:
            if r != last:
                first = r
                break
    if first < 0:
        first = last
    c = hand[first] - (skip_count if first == skip_rank else 0)
    return first << 3 | c


def _threat(table, seat):
    nheld = table.nheld
    best = NO_THREAT
    for s in range(table.n):
        if s != seat and nheld[s] and nheld[s] < best:
            best = nheld[s]
    return best


def _stuck_after(rules, hand, size, rank, k):
    """Whether playing ``k`` of ``rank`` leaves a non-empty hand of ``no_finish_on`` ranks."""
    if not rules.any_forbidden or size == k:
        return False
    forbidden = rules.forbidden
    for r, c in enumerate(hand):
        if r == rank:
            c -= k
        if c and not forbidden[r]:
            return False
    return True


def policy(table):
    """The heuristic sample bot's play for the seat to act, as a code (0 passes)."""
    rules = table.rules
    seat = table.turn
    hand = table.hands[seat]
    size = table.nheld[seat]
    above = _above(rules, hand, table.unseen)
    if table.last < 0:
        return _lead(table, rules, seat, hand, size, above)
    return _follow(table, rules, seat, hand, size, above)


def _lead(table, rules, seat, hand, size, above):
    forbidden = rules.forbidden
    groups = [r for r, c in enumerate(hand) if c]
    if len(groups) == 1 and not forbidden[groups[0]]:
        return groups[0] << 3 | size
    first = _exit_first(rules, hand, above)
    if first is not None and not _stuck_after(rules, hand, size, first >> 3, first & 7):
        return first
    threat = _threat(table, seat)
    candidates = [
        r
        for r in groups
        if above[r] >= hand[r]
        and not forbidden[r]
        and not _stuck_after(rules, hand, size, r, hand[r])
    ]
    if candidates:
        lowest = candidates[0]
        if hand[lowest] >= threat:
            for r in candidates[1:3]:
                if hand[r] < threat:
                    return r << 3 | hand[r]
        return lowest << 3 | hand[lowest]
    # Nothing cheap to lead: the lowest rank, as many cards as allowed.
    for r in groups:
        for k in range(hand[r], 0, -1):
            if not _stuck_after(rules, hand, size, r, k):
                return r << 3 | k
    r = groups[0]
    return r << 3 | hand[r]


def _follow(table, rules, seat, hand, size, above):
    k = table.top_count
    lo = table.top_rank if rules.skip else table.top_rank + 1
    nr = rules.nranks
    if size == k:
        for r in range(lo, nr):
            if hand[r] == k:
                return r << 3 | k  # goes out (a hand of one forbidden rank is gone already)
    best, best_gain = 0, rules.threshold
    lead_value = -1.0
    group_value = rules.group_value
    for r in range(lo, nr):
        c = hand[r]
        if c < k:
            continue
        if _stuck_after(rules, hand, size, r, k):
            continue
        wins = above[r] < k
        if wins and _exit_first(rules, hand, above, r, k) is not None:
            return r << 3 | k
        gain = group_value(r, c - k, above[r]) - group_value(r, c, above[r]) + CARD_BONUS * k
        if wins:
            if lead_value < 0:
                dealt = table.dealt[seat]
                progress = 1.0 - size / max(1, dealt, size)
                lead_value = LEAD_VALUE + LEAD_VALUE_LATE * progress
                if _threat(table, seat) <= 2:
                    lead_value += THREAT_BONUS
            gain += lead_value
        if gain > best_gain:
            best, best_gain = r << 3 | k, gain
    return best


def rollout(table, seat):
    """Play ``table`` on with the policy until ``seat`` has a place; returns that place."""
    place_of = table.place_of
    play = table.play
    while not place_of[seat]:
        if play(policy(table)):
            break
    return place_of[seat]
