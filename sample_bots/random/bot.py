"""random: a uniformly random legal play; random gives and leftover choices.

The weakest sample bot, and a good opponent for checking that a new bot beats chance.
"""

from botkit import Bot


class RandomBot(Bot):
    name = "random"
    version = "1"

    def on_play(self, state):
        # Every entry of `legal` (the pass included, when allowed) is equally likely.
        return list(self.random.choice(state.legal))

    def on_give(self, state, to, count):
        return self.random.sample(state.hand, count)

    def on_leftover(self, state, offer):
        take = self.random.choice(offer)
        return take, self.random.choice([*state.hand, take])


if __name__ == "__main__":
    RandomBot().run()
