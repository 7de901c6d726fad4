/* botkit.h: a small base for Arschloch / Président bots in C speaking protocol v1.
 *
 * Copy botkit.h and botkit.c next to your bot; they need nothing but the C standard
 * library (C99). Fill a bk_bot with your decisions and call bk_run():
 *
 *     #include "botkit.h"
 *
 *     static void my_play(bk_bot *bot, const bk_state *s, bk_cards *out) {
 *         (void)bot;
 *         if (s->legal.n > 0) *out = s->legal.plays[0];   // the lowest legal play
 *     }
 *
 *     int main(void) {
 *         bk_bot bot = bk_bot_default("my-bot");
 *         bot.on_play = my_play;
 *         return bk_run(&bot);
 *     }
 *
 * bk_run() reads one JSON message per line from stdin (getline: it never waits for more
 * than the line at hand), keeps a bk_state up to date, calls your functions when the
 * referee asks for a decision, writes one reply line per request and flushes it at once,
 * and returns on "bye" or end of input. Unknown message types and fields are ignored; a
 * line that is not JSON is skipped with a note on stderr. Log with bk_log() (stderr):
 * stdout is only for replies.
 *
 * The safety net: a decision the rules would refuse (a card you do not hold, a wrong
 * count, a pass when you lead, a leftover not offered) is replaced by a safe legal one, so
 * a bug costs a bad move, not a forfeit. It is never hidden: each time the kit writes one
 * line on stderr, "botkit: replaced " then a JSON object (protocol/SPEC.md, "the kits'
 * safety net"), which `referee bot check` fails and `referee play` warns about. Set
 * bot.safety_net = 0 to send your decisions as they are and get the referee's verdict.
 */
#ifndef BOTKIT_H
#define BOTKIT_H

#include <stddef.h>
#include <stdint.h>

#define BK_PROTOCOL 1
#define BK_MARKER "botkit: replaced "

#define BK_CARD_LEN 8    /* a card's text with its NUL: "10H" needs 4 */
#define BK_MAX_CARDS 64  /* cards in one list (a hand, the cards played in a round) */
#define BK_MAX_PLAYS 128 /* entries of a legal list */
#define BK_MAX_RANKS 16
#define BK_MAX_SEATS 16

/* ---- JSON: a parsed message, owned by its bk_doc --------------------------------- */

typedef enum { BK_NULL, BK_BOOL, BK_INT, BK_NUM, BK_STR, BK_ARR, BK_OBJ } bk_type;

typedef struct bk_json {
    bk_type type;
    int boolean;          /* BK_BOOL */
    int64_t integer;      /* BK_INT (a number without fraction or exponent that fits) */
    double number;        /* BK_INT and BK_NUM */
    const char *str;      /* BK_STR: NUL-terminated UTF-8 (may hold \0 from "\u0000") */
    size_t len;           /* BK_STR: bytes; BK_ARR, BK_OBJ: entries */
    struct bk_json **items;
    const char **keys;    /* BK_OBJ: the key of each item */
} bk_json;

typedef struct bk_doc bk_doc;

/* Parse one line of JSON; NULL when it is not JSON (or nests deeper than 128). */
bk_doc *bk_parse(const char *text, size_t len);
const bk_json *bk_root(const bk_doc *doc);
void bk_doc_free(bk_doc *doc);

/* Lookups that never fail: a missing key or a wrong type gives NULL or the fallback. */
const bk_json *bk_get(const bk_json *obj, const char *key);
const bk_json *bk_at(const bk_json *arr, size_t index);
size_t bk_len(const bk_json *arr_or_obj);
const char *bk_str(const bk_json *value, const char *fallback);
int64_t bk_int(const bk_json *value, int64_t fallback);
int bk_is_int(const bk_json *value);

/* ---- cards ---------------------------------------------------------------------- */

typedef struct { char s[BK_CARD_LEN]; } bk_card;
typedef struct { int n; bk_card c[BK_MAX_CARDS]; } bk_cards;
typedef struct { int n; bk_cards plays[BK_MAX_PLAYS]; } bk_plays;

/* The rank token of a card ("10H" -> "10") into out (BK_CARD_LEN bytes). */
void bk_rank_of(const char *card, char *out);
/* Append a card (ignored when the list is full or the text longer than a card). */
void bk_cards_add(bk_cards *list, const char *card);
int bk_cards_index(const bk_cards *list, const char *card);  /* -1 when absent */
int bk_cards_remove(bk_cards *list, const char *card);       /* 1 when removed */
/* Whether every card of cards is in pool, counting duplicates. */
int bk_takes_from(const bk_cards *pool, const bk_cards *cards);

/* ---- the state the protocol gives ------------------------------------------------ */

typedef struct {
    /* hello */
    int64_t move_ms, hello_ms;
    /* match_start */
    char match[128];
    int seat;
    int n_players;
    char players[BK_MAX_SEATS][64];
    const bk_json *rules;           /* the whole rules object (alive until the next match) */
    int n_ranks;
    char ranks[BK_MAX_RANKS][BK_CARD_LEN]; /* low -> high */
    int n_suits;
    char suits[BK_MAX_RANKS][BK_CARD_LEN];
    int skip_next;                  /* rules.equal_rank == "skip_next" */
    bk_cards no_finish_on;          /* ranks a last play may not contain */
    int64_t bank_ms;                /* time bank left (ms) */
    int64_t seed;                   /* match_start's seed; has_seed 0 before revision 1.2 */
    int has_seed;
    /* round_start and the events of the round */
    int round, dealer;
    bk_cards hand;                  /* your cards; replaced by every act's hand */
    int hand_sizes[BK_MAX_SEATS];   /* cards by seat (act's counts win) */
    int has_roles;
    char roles[BK_MAX_SEATS][24];   /* last round's roles by seat; has_roles 0 in round 1 */
    int scores[BK_MAX_SEATS];
    bk_cards leftovers;             /* face-up leftovers still on the table */
    bk_cards played;                /* every card played this round */
    bk_cards out_of_play;           /* eliminated cards and your own discards */
    int places[BK_MAX_SEATS];       /* 0 until the seat finished */
    /* the current trick */
    int leader;                     /* -1 when unknown */
    bk_cards top;                   /* what to beat; empty when you lead */
    int count;                      /* cards each play of the trick has */
    int passed[BK_MAX_SEATS];       /* passed in this trick (events) */
    /* the request being answered */
    int64_t request_id;
    char kind[16];                  /* "play", "give", "leftover" */
    bk_plays legal;                 /* act play: every legal play, low to high, [] last */
    int give_to, give_count;        /* act give */
    bk_cards offer;                 /* act leftover */
    /* private */
    bk_doc *match_doc;
    int gave;
} bk_state;

int bk_leading(const bk_state *s);                         /* nothing to beat */
int bk_rank_index(const bk_state *s, const char *card_or_rank); /* -1 when unknown */
void bk_sort_cards(const bk_state *s, bk_cards *cards);    /* low -> high, then suit */
/* Whether rank (index) may be played on top_rank (equal only under skip_next). */
int bk_beats(const bk_state *s, int rank, int top_rank);
int bk_forbidden_finish(const bk_state *s, const char *rank);
/* Cards of rank that may still be in another hand (an upper bound). */
int bk_unseen(const bk_state *s, const char *rank);
/* Whether nobody else can beat count cards of rank any more. */
int bk_is_boss(const bk_state *s, const char *rank, int count);
/* Whether cards is a play the referee accepts now (cards in hand, ranks in legal). */
int bk_is_legal_play(const bk_state *s, const bk_cards *cards);

/* ---- the bot -------------------------------------------------------------------- */

typedef struct bk_bot bk_bot;
struct bk_bot {
    const char *name;
    const char *version;  /* NULL: not sent */
    int safety_net;       /* 1: replace a refused decision (and say so on stderr) */
    /* Decisions; NULL keeps the default (the referee's fallback policy). out starts empty. */
    void (*on_play)(bk_bot *bot, const bk_state *s, bk_cards *out);
    void (*on_give)(bk_bot *bot, const bk_state *s, int to, int count, bk_cards *out);
    void (*on_leftover)(bk_bot *bot, const bk_state *s, const bk_cards *offer,
                        bk_card *take, bk_card *discard);
    /* Called for every message after the state is updated (msg is freed afterwards). */
    void (*on_event)(bk_bot *bot, const bk_state *s, const bk_json *msg);
    void *user;           /* yours */
    bk_state state;
    uint64_t rng;
};

bk_bot bk_bot_default(const char *name);
/* Serve the referee until bye or end of input; 0. */
int bk_run(bk_bot *bot);
/* A number in [0, 1), reseeded at every match_start from its seed (or match id and seat). */
double bk_random(bk_bot *bot);
/* printf to stderr, one line. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void bk_log(const char *fmt, ...);

/* The defaults, to call from your own decisions. */
void bk_default_play(const bk_state *s, bk_cards *out);
void bk_default_give(const bk_state *s, int count, bk_cards *out);
void bk_default_leftover(const bk_state *s, const bk_cards *offer, bk_card *take,
                         bk_card *discard);

#endif
