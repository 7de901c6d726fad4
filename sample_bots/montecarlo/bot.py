"""montecarlo: determinised Monte Carlo search; the strongest sample bot.

On each play it has a choice about, the bot:

1. **Works out what it knows.** Its own hand, every card played, eliminated, discarded by
   itself or left face up, how many cards each seat holds (the ``counts`` of an ``act``
   when the referee sends them, else its own count from ``round_start`` and the events),
   and what the exchange gave away: the cards it handed over sit in the receiver's hand,
   and a seat that had to give up its best cards holds nothing above the lowest of them
   (one that gave back its lowest cards, nothing below the highest).
2. **Deals the unseen cards** at random to the other seats, in their known numbers and
   within those bounds, the rest face down out of play (a *determinisation*). A deal that
   leaves a seat with only ``no_finish_on`` ranks is drawn again: that seat would be out.
3. **Plays every candidate on the same deals** and then the round to its end with a fast
   rollout policy, the ``heuristic`` sample bot's rules on rank counts (``mcsim``), for
   every seat. A candidate's worth is the mean of the points its finishing place earns
   (under ``rules.scoring``), plus a little for the place itself.
4. **Stops well inside the clock**: about 60 ms per decision, never more than 40 % of
   ``move_ms``. Candidates clearly worse than the best on the deals so far are dropped,
   so the time goes to the close calls. The heuristic's own choice keeps a small bonus:
   the search must find it worse before it plays something else.

Every rule comes from ``match_start.rules``, so it plays every preset. A single legal
choice is answered at once. Giving back cards and leftovers follow the heuristic's hand
value: give the cards whose loss costs least, take and discard to raise it most.
"""

import itertools
import time

from botkit import Bot, log
from belief import Knowledge, Sampler
from mcsim import Rules, Table, policy, rollout

BUDGET_MS = 60.0  # aim per decision
MOVE_SHARE = 0.4  # never more than this share of move_ms
DEFAULT_BONUS = 0.1  # in points: what the search must gain to overrule the heuristic
MIN_SAMPLES = 6  # deals before a candidate may be dropped
EXPLAIN_TRIES = 8  # hands drawn per seat to explain its decisions (belief.Sampler)
ROLES_TAKING_BEST = ("president", "vice_president")


class MonteCarloBot(Bot):
    name = "montecarlo"
    version = "1"
    budget_ms = BUDGET_MS

    def __init__(self, seed=None):
        super().__init__(seed)
        self.sim = None
        self.know = None
        self.counts = None
        self.started = time.perf_counter()
        self.decisions = 0
        self.samples = 0

    # -- bookkeeping --------------------------------------------------------------------

    def handle(self, msg):
        self.started = time.perf_counter()
        state = self.state
        kind = msg.get("type")
        before = None
        if kind == "exchanged" and msg.get("from") == state.seat:
            before = list(state.hand)
        if kind in ("played", "passed") and self.know is not None:
            self._observe(msg)
        if kind == "act":
            counts = msg.get("counts")
            ok = isinstance(counts, list) and all(isinstance(c, int) for c in counts)
            self.counts = list(counts) if ok else None
        reply = super().handle(msg)
        if before is not None and self.know is not None:
            self._gave(msg.get("to"), [c for c in before if c not in state.hand])
        if reply is not None and msg.get("kind") == "give" and self.know is not None:
            self._gave(msg.get("to"), reply.get("cards", []))
        return reply

    def _observe(self, msg):
        """Record another seat's play or pass with the position it was made in."""
        state, sim = self.state, self.sim
        seat = msg.get("seat")
        n = len(self.know.plays)
        if not isinstance(seat, int) or not 0 <= seat < n or seat == state.seat:
            return
        code = self.code_of(msg.get("cards") or []) if msg.get("type") == "played" else 0
        if code is None or len(state.hand_sizes) != n:
            return
        last = -1
        if state.top:
            last = state.last_player if state.last_player is not None else state.leader
        self.know.observe(
            seat,
            code,
            sim.rank_of(state.top[0]) if state.top else -1,
            len(state.top),
            last if isinstance(last, int) else -1,
            state.hand_sizes,
            len(sim.suits) or 4,
            self.counts_by_rank(state.leftovers),
        )

    def code_of(self, cards):
        """A play's code (rank << 3 | count), or None if the cards are not one rank."""
        if not isinstance(cards, list) or not cards or not all(isinstance(c, str) for c in cards):
            return None
        ranks = {self.sim.rank_of(c) for c in cards}
        if len(ranks) != 1 or -1 in ranks or len(cards) > 7:
            return None
        return ranks.pop() << 3 | len(cards)

    def _gave(self, to, cards):
        if isinstance(to, int) and 0 <= to < len(self.know.known):
            self.know.known[to].extend(cards)

    def on_match_start(self, state, msg):
        self.sim = Rules(state.rules, len(state.players)) if state.ranks else None
        self.know = None

    def on_round_start(self, state, msg):
        if self.sim is None:
            return
        self.know = Knowledge(len(state.players), self.sim.nranks, state.hand_sizes)

    def on_received(self, state, msg):
        know, sim = self.know, self.sim
        giver = msg.get("from")
        if know is None or not isinstance(giver, int) or not 0 <= giver < len(know.cap):
            return
        ranks = [sim.rank_of(c) for c in msg.get("cards", []) if isinstance(c, str)]
        ranks = [r for r in ranks if r >= 0]
        if not ranks or state.roles is None or giver >= len(state.roles):
            return
        for card in msg.get("cards", []):
            know.forget_card(card)
        if state.roles[state.seat] in ROLES_TAKING_BEST:
            know.cap[giver] = min(know.cap[giver], min(ranks))  # it gave its best cards
        elif state.rules.get("return_choice") == "lowest":
            know.floor[giver] = max(know.floor[giver], max(ranks))  # it gave its lowest

    def on_played(self, state, msg):
        if self.know is None:
            return
        seat, cards = msg.get("seat"), msg.get("cards") or []
        code = self.code_of(cards)
        if code is not None and isinstance(seat, int) and 0 <= seat < len(self.know.plays):
            self.know.played(seat, code)
            for card in cards:
                self.know.forget_card(card)

    def on_finished(self, state, msg):
        if self.know is not None:
            self.know.finished += 1

    def on_eliminated(self, state, msg):
        if self.know is not None:
            self.know.eliminated += 1
            for card in msg.get("cards") or []:
                r = self.sim.rank_of(card) if isinstance(card, str) else -1
                if r >= 0:
                    self.know.gone[r] += 1
            seat = msg.get("seat")
            if isinstance(seat, int) and 0 <= seat < len(self.know.known):
                self.know.known[seat] = []

    def on_match_end(self, state, msg):
        if self.decisions:
            log(
                f"montecarlo: {self.decisions} searched decisions, "
                f"{self.samples / self.decisions:.1f} deals each on average"
            )
        self.decisions = self.samples = 0

    # -- what is known, as numbers --------------------------------------------------------

    def counts_by_rank(self, cards):
        out = [0] * self.sim.nranks
        for card in cards:
            r = self.sim.rank_of(card)
            if r >= 0:
                out[r] += 1
        return out

    def unseen_by_rank(self):
        """Per rank, the cards not in view: in the other hands, or face down out of play."""
        state = self.state
        gone = self.counts_by_rank([*state.played, *state.out_of_play, *state.leftovers])
        per_rank = len(self.sim.suits) or 4
        mine = self.counts_by_rank(state.hand)
        return [max(0, per_rank - g - m) for g, m in zip(gone, mine)]

    def seat_counts(self):
        state = self.state
        n = len(state.players)
        counts = self.counts if self.counts is not None and len(self.counts) == n else None
        counts = list(counts or state.hand_sizes)
        if len(counts) != n:
            counts = [0] * n
        counts[state.seat] = len(state.hand)
        for seat in state.places:
            if isinstance(seat, int) and 0 <= seat < n:
                counts[seat] = 0
        return counts

    def world_model(self):
        """``(pool, known, needs)``: the unseen cards by rank still to deal, the known ranks
        by seat, and how many unknown cards each seat holds; None if the books disagree."""
        know, sim = self.know, self.sim
        counts = self.seat_counts()
        me = self.state.seat
        for use_known in (True, False):
            unseen = self.unseen_by_rank()
            known = [[] for _ in counts]
            needs = [0] * len(counts)
            for s, count in enumerate(counts):
                if s == me or not count:
                    continue
                cards = know.known[s] if use_known else []
                ranks = [sim.rank_of(c) for c in cards][:count]
                ranks = [r for r in ranks if r >= 0 and unseen[r] > 0]
                for r in ranks:
                    unseen[r] -= 1
                known[s] = ranks
                needs[s] = count - len(ranks)
            pool = [r for r, c in enumerate(unseen) for _ in range(c)]
            if len(pool) >= sum(needs):
                return pool, known, needs
        return None

    # -- decisions ------------------------------------------------------------------------

    def deadline(self):
        move_ms = self.state.time.get("move_ms") if isinstance(self.state.time, dict) else None
        budget = self.budget_ms
        if isinstance(move_ms, (int, float)) and move_ms > 0:
            budget = min(budget, MOVE_SHARE * move_ms)
        return self.started + budget / 1000.0

    def root_table(self, hands, dead):
        state, know = self.state, self.know
        n = len(state.players)
        places = [0] * n
        for seat, place in state.places.items():
            if isinstance(seat, int) and 0 <= seat < n and isinstance(place, int):
                places[seat] = place
        last = -1
        if state.top:
            last = state.last_player if state.last_player is not None else state.leader
        top = self.sim.rank_of(state.top[0]) if state.top else -1
        passed = 0
        for seat in state.trick_passed:
            if isinstance(seat, int) and 0 <= seat < n:
                passed |= 1 << seat
        return Table(
            self.sim,
            hands,
            dead,
            turn=state.seat,
            last=last if isinstance(last, int) else -1,
            top_rank=top,
            top_count=len(state.top),
            passed=passed,
            place_of=places,
            next_top=1 + know.finished,
            next_bottom=n - know.eliminated,
            dealt=know.dealt if len(know.dealt) == n else None,
        )

    def on_play(self, state):
        plays = state.legal
        if len(plays) <= 1 or self.sim is None or self.know is None:
            return plays[0] if plays else []
        code = self.search()
        if code is None:
            return self.heuristic_play()
        return self.cards_for(code)

    def cards_for(self, code):
        if not code:
            return []
        rank, count = code >> 3, code & 7
        cards = [c for c in self.state.sort_cards(self.state.hand) if self.sim.rank_of(c) == rank]
        return cards[:count]

    def heuristic_play(self):
        """The rollout policy's choice from what is in view (no deal drawn)."""
        sim = self.sim
        n = len(self.state.players)
        hands = [[0] * sim.nranks for _ in range(n)]
        hands[self.state.seat] = self.counts_by_rank(self.state.hand)
        table = self.root_table(hands, self.unseen_by_rank())
        table.nheld = self.seat_counts()
        return self.cards_for(policy(table))

    def search(self):
        """The best play code by determinised Monte Carlo, or None if nothing is known."""
        model = self.world_model()
        if model is None:
            log("montecarlo: the card books do not add up; playing the heuristic's choice")
            return None
        sim, me = self.sim, self.state.seat
        sampler = self.sampler(model)
        root = self.root_table(*sampler.draw())
        candidates = root.legal()
        legal = {tuple(sorted(sim.rank_of(c) for c in p)) for p in self.state.legal}
        candidates = [c for c in candidates if ((c >> 3,) * (c & 7)) in legal]
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        default = self.default_choice(root, candidates)
        deadline = self.deadline()
        totals = {c: 0.0 for c in candidates}
        alive = list(candidates)
        samples = 0
        values = sim.value_by_place
        history = {c: [] for c in candidates}
        while True:
            world = root if samples == 0 else self.root_table(*sampler.draw())
            results = []
            for code in alive:
                table = world.copy()
                if table.play(code) or table.place_of[me]:
                    place = table.place_of[me]
                else:
                    place = rollout(table, me)
                results.append(values[place])
                if time.perf_counter() > deadline and samples > 0:
                    break
            if len(results) < len(alive):
                break  # out of time in the middle of a deal: it would pair badly
            for code, value in zip(alive, results):
                totals[code] += value
                history[code].append(value)
            samples += 1
            if time.perf_counter() > deadline:
                break
            if samples >= MIN_SAMPLES and samples % 2 == 0:
                alive = self.prune(alive, history, default)
                if len(alive) == 1:
                    break
        self.decisions += 1
        self.samples += samples

        def worth(code):
            mean = totals[code] / max(1, len(history[code]))
            return mean + (DEFAULT_BONUS if code == default else 0.0)

        return max(alive, key=worth)

    def default_choice(self, root, candidates):
        """The heuristic's play in this position (from what the seat can see)."""
        code = policy(root)
        return code if code in candidates else candidates[0]

    @staticmethod
    def prune(alive, history, default):
        """Keep the candidates not clearly worse than the best on the same deals."""
        means = {c: sum(history[c]) / len(history[c]) for c in alive}
        best = max(alive, key=lambda c: means[c])
        keep = []
        for c in alive:
            if c in (best, default):
                keep.append(c)
                continue
            diffs = [a - b for a, b in zip(history[best], history[c])]
            k = len(diffs)
            mean = sum(diffs) / k
            var = sum((d - mean) ** 2 for d in diffs) / max(1, k - 1)
            if mean <= 2.0 * (var / k) ** 0.5 + 1e-9:
                keep.append(c)
        return keep

    def sampler(self, model):
        pool, known, needs = model
        mine = self.counts_by_rank(self.state.hand)
        return Sampler(
            self.sim, self.know, self.state.seat, pool, known, needs, mine, self.random,
            EXPLAIN_TRIES, self.state.faulted,
        )

    # -- exchanges and leftovers: the heuristic's hand value ------------------------------

    def hand_value(self, counts, above):
        return sum(self.sim.group_value(r, c, above[r]) for r, c in enumerate(counts) if c)

    def above_for(self, mine):
        """For each rank, the most cards of one rank the others may hold that beat it."""
        holders = self.unseen_by_rank()
        out = [0] * len(mine)
        best = 0
        for r in range(len(mine) - 1, -1, -1):
            if self.sim.skip and holders[r] > best:
                best = holders[r]
            out[r] = best
            if not self.sim.skip and holders[r] > best:
                best = holders[r]
        return out

    def stuck(self, counts):
        forbidden = self.sim.forbidden
        return any(counts) and all(forbidden[r] or not c for r, c in enumerate(counts))

    def on_give(self, state, to, count):
        if self.sim is None:
            return super().on_give(state, to, count)
        hand = state.sort_cards(state.hand)
        above = self.above_for(self.counts_by_rank(hand))
        best, best_value = None, None
        for combo in itertools.combinations(range(len(hand)), count):
            rest = [c for i, c in enumerate(hand) if i not in combo]
            counts = self.counts_by_rank(rest)
            if self.stuck(counts):
                continue
            value = self.hand_value(counts, above)
            if best_value is None or value > best_value + 1e-9:
                best, best_value = [hand[i] for i in combo], value
        return best if best is not None else hand[:count]

    def on_leftover(self, state, offer):
        if self.sim is None:
            return super().on_leftover(state, offer)
        above = self.above_for(self.counts_by_rank(state.hand))
        best, best_value = None, None
        for take in offer:
            after = [*state.hand, take]
            for discard in state.sort_cards(set(after)):
                rest = list(after)
                rest.remove(discard)
                counts = self.counts_by_rank(rest)
                if self.stuck(counts):
                    continue
                value = self.hand_value(counts, above)
                if best_value is None or value > best_value + 1e-9:
                    best, best_value = (take, discard), value
        return best if best is not None else super().on_leftover(state, offer)


if __name__ == "__main__":
    MonteCarloBot().run()
