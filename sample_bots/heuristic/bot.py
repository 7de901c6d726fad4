"""heuristic: a careful rule-based player; the strongest sample bot.

How it thinks, in order of priority:

1. **Go out** when a legal play empties the hand.
2. **Plan the exit.** A group is a *boss* when the cards still unseen (not in this hand, not
   played, not out of play) cannot beat it. With the lead, a hand whose groups are all
   bosses except at most one can be played out: bosses first (``no_finish_on`` ranks before
   the others, since they may not be the last play), the remaining group last. When
   following, a boss play that wins the trick and leaves such a hand is taken at once.
3. **Never get stuck** with only ``no_finish_on`` ranks (that is an elimination to the
   lowest place): plays that would leave such a hand are refused.
4. Otherwise judge each play by a static **hand value**: every group that is not a boss costs
   about one lead to get rid of, less the higher its rank; a boss is an asset. Follow with
   the play that improves the hand most (usually the lowest group of exactly the trick's
   size, so pairs and triples are not broken), spend a boss only when taking the lead is
   worth it (late in the round, or an opponent is close to going out), and pass otherwise.
   Lead the lowest group that is not a boss, in full, avoiding a group size that lets an
   opponent with that many cards go out.

Exchanges give back the cards whose loss lowers the hand value least; leftovers are taken
and discarded to raise it most.
"""

import itertools

from botkit import Bot, log, rank_of

BOSS_VALUE = 0.6  # a boss group: a certain trick, so a lead when needed
HIGH_BONUS = 1.2  # how much a high non-boss group is worth on top of its -1 liability
FORBIDDEN_PENALTY = 0.3  # a no_finish_on group must go before the end: a little worse
CARD_BONUS = 0.05  # shedding cards without removing a group is worth a little
LEAD_VALUE = 0.4  # winning the trick for sure, early in the round
LEAD_VALUE_LATE = 0.5  # ... added as the hand empties
THREAT_BONUS = 0.5  # ... added when an opponent is close to going out
THRESHOLD = {"reenter": 0.15, "out": 0.05}  # a pass under "out" is final for the trick


def remove(cards, play):
    rest = list(cards)
    for card in play:
        rest.remove(card)
    return rest


class HeuristicBot(Bot):
    name = "heuristic"
    version = "1"

    # -- evaluation -------------------------------------------------------------------

    def group_value(self, state, rank, count):
        if count == 0:
            return 0.0
        if state.is_boss(rank, count):
            return BOSS_VALUE
        pos = state.rank_index(rank) / max(1, len(state.ranks) - 1)
        value = -1.0 + HIGH_BONUS * pos * pos
        if state.forbidden_finish(rank):
            value -= FORBIDDEN_PENALTY
        return value

    def hand_value(self, state, cards):
        return sum(self.group_value(state, r, len(g)) for r, g in state.groups_by_rank(cards).items())

    def stuck(self, state, rest):
        """A non-empty hand of only no_finish_on ranks is eliminated at once."""
        return bool(rest) and all(state.forbidden_finish(rank_of(c)) for c in rest)

    def exit_order(self, state, cards):
        """Groups to lead one after another to go out without losing the lead, or None."""
        groups = state.groups_by_rank(cards)
        bosses = [r for r, g in groups.items() if state.is_boss(r, len(g))]
        others = [r for r in groups if r not in bosses]
        if len(others) > 1:
            return None
        if others:
            last = others[0]
        else:
            allowed = [r for r in bosses if not state.forbidden_finish(r)]
            if not allowed:
                return None
            last = allowed[0]
        if state.forbidden_finish(last):
            return None
        first = [r for r in bosses if r != last]
        first.sort(key=lambda r: (not state.forbidden_finish(r), state.rank_index(r)))
        return [groups[r] for r in [*first, last]]

    def threat(self, state):
        """Cards held by the opponent closest to going out (a large number if none)."""
        sizes = [
            n for s, n in enumerate(state.hand_sizes) if s != state.seat and n > 0 and s not in state.places
        ]
        return min(sizes, default=99)

    # -- decisions --------------------------------------------------------------------

    def on_play(self, state):
        plays = [p for p in state.legal if p]
        if not plays:
            return []
        for play in plays:
            if len(play) == len(state.hand):
                return play
        if state.leading:
            return self.lead(state, plays)
        return self.follow(state, plays)

    def lead(self, state, plays):
        legal = {tuple(sorted(p)) for p in plays}

        def ok(play):
            return tuple(sorted(play)) in legal and not self.stuck(state, remove(state.hand, play))

        order = self.exit_order(state, state.hand)
        if order and ok(order[0]):
            return order[0]
        groups = state.groups_by_rank()
        threat = self.threat(state)
        candidates = [
            g
            for r, g in groups.items()
            if ok(g) and not state.is_boss(r, len(g)) and not state.forbidden_finish(r)
        ]
        if candidates:
            # The lowest group, unless its size would let a nearly-out opponent finish and
            # a similar group of another size exists.
            lowest = candidates[0]
            if len(lowest) >= threat:
                for g in candidates[1:3]:
                    if len(g) < threat:
                        return g
            return lowest
        safe = [p for p in plays if ok(p)] or plays
        # Nothing cheap to lead: play the lowest rank, as many cards as possible.
        low = min(state.rank_index(p[0]) for p in safe)
        return max((p for p in safe if state.rank_index(p[0]) == low), key=len)

    def follow(self, state, plays):
        hand = state.hand
        before = self.hand_value(state, hand)
        progress = 1.0 - len(hand) / max(1, self.dealt, len(hand))
        lead_value = LEAD_VALUE + LEAD_VALUE_LATE * progress
        if self.threat(state) <= 2:
            lead_value += THREAT_BONUS
        best, best_gain = [], THRESHOLD.get(state.rules.get("pass_rule"), 0.15)
        for play in plays:
            rest = remove(hand, play)
            if self.stuck(state, rest):
                continue
            rank = rank_of(play[0])
            wins = state.is_boss(rank, len(play))
            if wins and self.exit_order(state, rest):
                return play
            gain = self.hand_value(state, rest) - before + CARD_BONUS * len(play)
            if wins:
                gain += lead_value
            if gain > best_gain:
                best, best_gain = play, gain
        return best

    def on_give(self, state, to, count):
        hand = state.sort_cards(state.hand)
        best, best_value = None, None
        for combo in itertools.combinations(hand, count):
            rest = remove(hand, combo)
            if self.stuck(state, rest):
                continue
            value = self.hand_value(state, rest)
            if best_value is None or value > best_value + 1e-9:
                best, best_value = list(combo), value
        return best if best is not None else hand[:count]

    def on_leftover(self, state, offer):
        best, best_value = None, None
        for take in offer:
            after = [*state.hand, take]
            for discard in state.sort_cards(set(after)):
                rest = remove(after, [discard])
                if self.stuck(state, rest):
                    continue
                value = self.hand_value(state, rest)
                if best_value is None or value > best_value + 1e-9:
                    best, best_value = (take, discard), value
        if best is None:
            return super().on_leftover(state, offer)
        return best

    dealt = 1

    def on_round_start(self, state, msg):
        self.dealt = len(state.hand)

    def on_match_end(self, state, msg):
        mine = [row for row in msg.get("standings", []) if row.get("seat") == state.seat]
        log(f"heuristic: match {state.match} over: {mine}")


if __name__ == "__main__":
    HeuristicBot().run()
