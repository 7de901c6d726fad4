"""montecarlo: determinised Monte Carlo search; the strongest sample bot.

On each play it has a choice about, the bot:

1. **Works out what it knows** (``belief.Knowledge``): its hand, every card played,
   eliminated, discarded by itself or left face up, each seat's card count (the ``counts``
   of an ``act``, else its own books), the cards it handed over in the exchange (they sit
   in the receiver's hand) and what the exchange showed (a seat that gave up its best cards
   holds nothing above the lowest of them), and every play and pass of the other seats.
2. **Deals the unseen cards** to the other seats, in their known numbers and within those
   bounds, then swaps cards until each seat's hand explains its plays and passes this
   round as the ``heuristic`` bot would have made them (``belief.Sampler``).
3. **Plays every candidate on the same deals** and the round on to its end with a fast
   rollout policy, the ``heuristic`` bot's rules on rank counts (``mcsim``), for every
   seat. A candidate is worth the mean points its finishing place earns under
   ``rules.scoring``, plus a little for the place itself.
4. **Stops well inside the clock**: about 60 ms a decision, never over 40 % of
   ``move_ms``, and less as the process nears its CPU-seconds limit. Candidates clearly worse than the best on the deals so far are dropped, so
   the time goes to the close calls; the heuristic's own choice keeps a small bonus.

Every rule comes from ``match_start.rules``, so it plays every preset. A single legal
choice is answered at once. Giving back cards and leftovers follow the heuristic's hand
value: give the cards whose loss costs least, take and discard to raise it most. The
bookkeeping never takes the bot down: a message it cannot follow is logged and skipped,
and a search that cannot trust its books plays the heuristic's choice.
"""

import itertools
import time
import traceback

from belief import Knowledge, Sampler, counts_by_rank
from botkit import Bot, log
from mcsim import Rules, Table, policy, rollout

BUDGET_MS = 60.0  # aim per decision
MOVE_SHARE = 0.4  # never more than this share of move_ms
DEFAULT_BONUS = 0.05  # in points: what the search must gain to overrule the heuristic
MIN_SAMPLES = 6  # deals before a candidate may be dropped
EXPLAIN_SWAPS = 24  # swaps tried per seat to explain its decisions (belief.Sampler)
MIN_SEARCH_MS = 8.0  # with less time than this, play the heuristic's choice unsearched
PRUNE_SIGMAS = 2.0  # how clearly worse (in standard errors) a dropped candidate is


class MonteCarloBot(Bot):
    name = "montecarlo"
    version = "1"
    budget_ms = BUDGET_MS
    min_search_ms = MIN_SEARCH_MS

    def __init__(self, seed=None):
        super().__init__(seed)
        self.sim = None  # mcsim.Rules of the match
        self.know = None  # belief.Knowledge of the round
        self.counts = None  # the last act's counts, if it had them
        self.started = time.perf_counter()
        self.decisions = 0  # searches made, and deals they looked at (for the log)
        self.samples = 0
        self._match_base = (0, 0)

    # -- following the game ---------------------------------------------------------------

    def handle(self, msg):
        self.started = time.perf_counter()
        if msg.get("type") == "act":
            counts = msg.get("counts")
            self.counts = counts if isinstance(counts, list) else None
        self._books("before", msg)
        reply = super().handle(msg)
        self._books("after", msg, reply)
        return reply

    def _books(self, step, msg, *reply):
        """Feed the round's knowledge; a message it cannot follow is logged, not fatal."""
        if self.know is None:
            return
        try:
            getattr(self.know, step)(msg, self.state, *reply)
        except Exception:
            log("montecarlo: could not follow a message; continuing\n" + traceback.format_exc())

    def on_match_start(self, state, msg):
        self.sim = Rules(state.rules, len(state.players)) if state.ranks else None
        self.know = None
        self._match_base = (self.decisions, self.samples)

    def on_round_start(self, state, msg):
        if self.sim is not None:
            self.know = Knowledge(self.sim, state.seat, len(state.players), state.hand_sizes)

    def on_match_end(self, state, msg):
        decisions = self.decisions - self._match_base[0]
        if decisions:
            deals = (self.samples - self._match_base[1]) / decisions
            log(f"montecarlo: {decisions} searched decisions, {deals:.1f} deals each on average")

    # -- a play ---------------------------------------------------------------------------

    def on_play(self, state):
        if len(state.legal) <= 1 or self.sim is None or self.know is None:
            return state.legal[0] if state.legal else []
        if self.deadline() - time.perf_counter() < self.min_search_ms / 1000.0:
            return self.cards_for(self.heuristic_code())  # too little time to search
        code = self.search()
        return self.cards_for(code if code is not None else self.heuristic_code())

    def cards_for(self, code):
        if not code:
            return []
        rank, count = code >> 3, code & 7
        hand = self.state.sort_cards(self.state.hand)
        return [c for c in hand if self.sim.rank_of(c) == rank][:count]

    def deadline(self):
        time_control = self.state.time if isinstance(self.state.time, dict) else {}
        move_ms = time_control.get("move_ms")
        budget = self.budget_ms * cpu_share_left()
        if isinstance(move_ms, (int, float)) and move_ms > 0:
            budget = min(budget, MOVE_SHARE * move_ms)
        return self.started + budget / 1000.0

    def table(self, hands, dead):
        """The current position with these hands (counts by rank) and face-down cards."""
        state, know = self.state, self.know
        n = len(state.players)
        places = [0] * n
        for seat, place in state.places.items():
            if isinstance(seat, int) and 0 <= seat < n and isinstance(place, int):
                places[seat] = place
        last = -1
        if state.top:
            last = state.last_player if state.last_player is not None else state.leader
        passed = sum(1 << s for s in set(state.trick_passed) if isinstance(s, int) and 0 <= s < n)
        return Table(
            self.sim,
            hands,
            dead,
            turn=state.seat,
            last=last if isinstance(last, int) and 0 <= last < n else -1,
            top_rank=self.sim.rank_of(state.top[0]) if state.top else -1,
            top_count=len(state.top),
            passed=passed,
            place_of=places,
            next_top=1 + know.finished,
            next_bottom=n - know.eliminated,
            dealt=know.dealt,
        )

    def heuristic_code(self):
        """The rollout policy's play from what is in view alone (no deal drawn)."""
        n = len(self.state.players)
        hands = [[0] * self.sim.nranks for _ in range(n)]
        hands[self.state.seat] = counts_by_rank(self.sim, self.state.hand)
        table = self.table(hands, self.know.unseen(self.state))
        table.nheld = self.know.seat_counts(self.state, self.counts)
        return policy(table)

    def search(self):
        """The best play's code by determinised Monte Carlo; None if the books disagree."""
        model = self.know.model(self.state, self.counts)
        if model is None:
            log("montecarlo: the card books do not add up; playing the heuristic's choice")
            return None
        sampler = self.sampler(model)
        root = self.table(*sampler.draw())
        legal = {(self.sim.rank_of(p[0]), len(p)) for p in self.state.legal if p}
        candidates = [c for c in root.legal() if not c or (c >> 3, c & 7) in legal]
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        default = policy(root)
        if default not in candidates:
            default = candidates[0]
        history = self.evaluate(root, sampler, candidates, default)
        self.decisions += 1
        self.samples += len(history[default])

        def worth(code):
            values = history[code]
            return sum(values) / len(values) + (DEFAULT_BONUS if code == default else 0.0)

        return max((c for c in candidates if history[c]), key=worth)

    def evaluate(self, root, sampler, candidates, default):
        """Each candidate's values, one per deal, every surviving candidate on every deal."""
        me, values = self.state.seat, self.sim.value_by_place
        deadline = self.deadline()
        history = {c: [] for c in candidates}
        alive = list(candidates)
        world = root
        while True:
            results = []
            for code in alive:
                table = world.copy()
                if table.play(code) or table.place_of[me]:
                    results.append(values[table.place_of[me]])
                else:
                    results.append(values[rollout(table, me)])
                if history[default] and time.perf_counter() > deadline:
                    return history  # a deal cut short would pair badly: dropped
            for code, value in zip(alive, results):
                history[code].append(value)
            if time.perf_counter() > deadline:
                return history
            done = len(history[default])
            if done >= MIN_SAMPLES and done % 2 == 0:
                alive = prune(alive, history, default)
                if len(alive) == 1:
                    return history
            world = self.table(*sampler.draw())

    def sampler(self, model):
        pool, known, needs = model
        mine = counts_by_rank(self.sim, self.state.hand)
        return Sampler(
            self.sim, self.know, self.state.seat, pool, known, needs, mine, self.random,
            EXPLAIN_SWAPS, self.state.faulted,
        )  # fmt: skip

    # -- exchanges and leftovers: the heuristic's hand value ------------------------------

    def hand_value(self, cards, above):
        counts = counts_by_rank(self.sim, cards)
        return sum(self.sim.group_value(r, c, above[r]) for r, c in enumerate(counts) if c)

    def above(self):
        """For each rank, the most unseen cards of one rank that beat it (a boss test)."""
        unseen = self.know.unseen(self.state) if self.know else [0] * self.sim.nranks
        out, best = [0] * len(unseen), 0
        for r in range(len(unseen) - 1, -1, -1):
            if self.sim.skip:
                best = max(best, unseen[r])
            out[r] = best
            best = max(best, unseen[r])
        return out

    def stuck(self, cards):
        """A hand of only no_finish_on ranks is eliminated at once."""
        forbidden = self.sim.forbidden
        return bool(cards) and all(forbidden[self.sim.rank_of(c)] for c in cards)

    def on_give(self, state, to, count):
        if self.sim is None or self.know is None:
            return super().on_give(state, to, count)
        hand = state.sort_cards(state.hand)
        above = self.above()
        best, best_value = hand[:count], None
        for combo in itertools.combinations(range(len(hand)), count):
            rest = [c for i, c in enumerate(hand) if i not in combo]
            if self.stuck(rest):
                continue
            value = self.hand_value(rest, above)
            if best_value is None or value > best_value + 1e-9:
                best, best_value = [hand[i] for i in combo], value
        return best

    def on_leftover(self, state, offer):
        if self.sim is None or self.know is None:
            return super().on_leftover(state, offer)
        above = self.above()
        best, best_value = None, None
        for take in offer:
            after = [*state.hand, take]
            for discard in state.sort_cards(set(after)):
                rest = list(after)
                rest.remove(discard)
                if self.stuck(rest):
                    continue
                value = self.hand_value(rest, above)
                if best_value is None or value > best_value + 1e-9:
                    best, best_value = (take, discard), value
        return best if best is not None else super().on_leftover(state, offer)


def _cpu_limit():
    """The process's CPU-seconds limit (the sandbox sets one), or None."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    except (ImportError, OSError, ValueError):
        return None
    return soft if 0 < soft != resource.RLIM_INFINITY else None


CPU_LIMIT = _cpu_limit()


def cpu_share_left():
    """How much of its usual time a search may take: all of it until half the process's
    CPU seconds are spent, then less and less, and none past 80 %. One process may serve
    many long matches (a tournament reuses it); hitting the limit would be a crash."""
    if CPU_LIMIT is None:
        return 1.0
    used = time.process_time() / CPU_LIMIT
    return max(0.0, min(1.0, (0.8 - used) / 0.3))


def prune(alive, history, default):
    """The candidates not clearly worse than the best on the same deals (paired)."""
    means = {c: sum(history[c]) / len(history[c]) for c in alive}
    best = max(alive, key=means.__getitem__)
    keep = []
    for c in alive:
        if c in (best, default):
            keep.append(c)
            continue
        diffs = [a - b for a, b in zip(history[best], history[c])]
        k = len(diffs)
        mean = sum(diffs) / k
        var = sum((d - mean) ** 2 for d in diffs) / max(1, k - 1)
        if mean <= PRUNE_SIGMAS * (var / k) ** 0.5 + 1e-9:
            keep.append(c)
    return keep


if __name__ == "__main__":
    MonteCarloBot().run()
