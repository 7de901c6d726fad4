/* A bot for the Arschloch referee (protocol: `referee protocol spec`): edit this file.
 *
 * It plays the lowest legal play: it leads every card of its lowest rank, follows with the
 * lowest rank that beats the table and passes when nothing does; it gives back its lowest
 * cards and takes the highest leftover (the kit's defaults, bk_default_give and
 * bk_default_leftover). The kit (botkit.h, botkit.c) reads the referee's lines, keeps the
 * state and writes your answers, one flushed line each.
 *
 * The kit's safety net: when a decision of yours is not allowed (a card you do not hold,
 * the wrong number of cards, a pass when you lead), botkit sends a safe legal choice
 * instead and writes a line "botkit: replaced {...}" on stderr; `referee bot check` fails
 * the bot and `referee play` warns. Set bot.safety_net = 0 while testing to see the
 * referee's own verdict (a forfeit that explains the move). Log with bk_log (stderr):
 * never print to stdout.
 */
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
    bk_bot bot = bk_bot_default("{name}");
    bot.version = "1";
    bot.safety_net = 1; /* 0: a mistake forfeits the match, with the referee's explanation */
    bot.on_play = play_lowest;
    return bk_run(&bot);
}
