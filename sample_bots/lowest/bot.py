"""lowest: always the cheapest legal move, with no look-ahead.

Leads every card of its lowest rank, follows with the lowest rank that beats the table,
passes when nothing beats it, gives back its lowest cards and takes the highest leftover.
A fair baseline: it never wastes a high card on purpose, but it breaks pairs to follow and
does not plan its last cards.
"""

from botkit import Bot


class LowestBot(Bot):
    name = "lowest"
    version = "1"

    def on_play(self, state):
        plays = [p for p in state.legal if p]
        if not plays:
            return []
        lowest = min(state.rank_index(p[0]) for p in plays)
        # `legal` holds one entry per count for a rank when leading: take the largest.
        return max((p for p in plays if state.rank_index(p[0]) == lowest), key=len)

    # Giving back the lowest cards and taking the highest leftover are the kit's defaults.


if __name__ == "__main__":
    LowestBot().run()
