/* c-lowest: the "lowest" strategy in C, built by `make` (bot.toml's build).
 * Leads every card of its lowest rank, follows with the lowest rank that beats the table,
 * passes otherwise; gives back its lowest cards and takes the highest leftover (kit
 * defaults). The same play as sample_bots/lowest. */
#include "botkit.h"

/* state->legal lists every legal play, low to high by rank; the pass (an empty play) is
 * last when you may pass. Fill out with the cards to play; leave it empty to pass. */
static void play_lowest(bk_bot *bot, const bk_state *state, bk_cards *out) {
    const bk_cards *best = NULL;
    int lowest = -1;
    (void)bot;
    for (int i = 0; i < state->legal.n; i++) {
        const bk_cards *play = &state->legal.plays[i];
        if (play->n == 0) continue;
        int rank = bk_rank_index(state, play->c[0].s);
        /* When leading, legal has one entry per count of a rank: take the largest. */
        if (best == NULL || rank < lowest || (rank == lowest && play->n > best->n)) {
            best = play;
            lowest = rank;
        }
    }
    if (best != NULL) *out = *best;
}

int main(void) {
    bk_bot bot = bk_bot_default("c-lowest");
    bot.version = "1";
    bot.safety_net = 1; /* 0: a mistake forfeits the match, with the referee's explanation */
    bot.on_play = play_lowest;
    return bk_run(&bot);
}
