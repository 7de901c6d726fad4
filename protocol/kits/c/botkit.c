/* botkit.c: the kit's JSON reader and writer, state, request loop and safety net.
 * See botkit.h for how to use it. C99 and the standard library only. */
#define _POSIX_C_SOURCE 200809L
#include "botkit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BK_MAX_DEPTH 128

/* ---- an arena: every node and string of a message, freed at once ----------------- */

typedef union { long double ld; void *p; int64_t i; double d; } bk_align;

typedef struct bk_chunk {
    struct bk_chunk *next;
    size_t used, size;
    bk_align data[];
} bk_chunk;

struct bk_doc {
    bk_chunk *chunks;
    bk_json *root;
};

static void *bk_oom(void) {
    fputs("botkit: out of memory\n", stderr);
    exit(1);
}

static void *bk_alloc(bk_doc *doc, size_t size) {
    size = (size + sizeof(bk_align) - 1) / sizeof(bk_align) * sizeof(bk_align);
    bk_chunk *c = doc->chunks;
    if (c == NULL || c->size - c->used < size) {
        size_t want = size > 16384 ? size : 16384;
        c = malloc(sizeof(bk_chunk) + want);
        if (c == NULL) return bk_oom();
        c->size = want;
        c->used = 0;
        c->next = doc->chunks;
        doc->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

void bk_doc_free(bk_doc *doc) {
    if (doc == NULL) return;
    for (bk_chunk *c = doc->chunks, *next; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(doc);
}

const bk_json *bk_root(const bk_doc *doc) { return doc ? doc->root : NULL; }

/* ---- the parser: strict enough for the referee's lines, never crashing on others ---- */

typedef struct {
    const char *p, *end;
    bk_doc *doc;
    int depth;
} bk_parser;

static bk_json *bk_value(bk_parser *ps);

static void bk_ws(bk_parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int bk_hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t bk_utf8(unsigned cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string at ps->p (on the opening quote); NULL when malformed. */
static char *bk_string(bk_parser *ps, size_t *len) {
    const char *start = ++ps->p;
    while (ps->p < ps->end && *ps->p != '"') ps->p += (*ps->p == '\\') ? 2 : 1;
    if (ps->p >= ps->end) return NULL;
    char *out = bk_alloc(ps->doc, (size_t)(ps->p - start) + 1), *o = out;
    for (const char *q = start; q < ps->p; q++) {
        if ((unsigned char)*q < 0x20) return NULL;
        if (*q != '\\') { *o++ = *q; continue; }
        q++;
        switch (*q) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (ps->p - q < 5 || !bk_hex4(q + 1, &cp)) return NULL;
            q += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p - q >= 7 && q[1] == '\\' && q[2] == 'u' &&
                bk_hex4(q + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            } else if (cp >= 0xD800 && cp < 0xE000) {
                cp = 0xFFFD; /* a lone surrogate */
            }
            o += bk_utf8(cp, o); /* never longer than the 6 escaped bytes it replaces */
            break;
        }
        default: return NULL;
        }
    }
    *o = '\0';
    *len = (size_t)(o - out);
    ps->p++;
    return out;
}

static bk_json *bk_node(bk_parser *ps, bk_type type) {
    bk_json *v = bk_alloc(ps->doc, sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = type;
    return v;
}

static bk_json *bk_number(bk_parser *ps) {
    const char *start = ps->p;
    int is_int = 1;
    if (ps->p < ps->end && *ps->p == '-') ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return NULL;
    while (ps->p < ps->end && *ps->p != '\0' && strchr("0123456789+-.eE", *ps->p) != NULL) {
        if (strchr(".eE", *ps->p) != NULL) is_int = 0;
        ps->p++;
    }
    char buf[64];
    size_t n = (size_t)(ps->p - start);
    if (n >= sizeof buf) is_int = 0, n = sizeof buf - 1; /* huge: kept as an approximation */
    memcpy(buf, start, n);
    buf[n] = '\0';
    bk_json *v = bk_node(ps, BK_NUM);
    v->number = strtod(buf, NULL);
    if (is_int && n < 19) { /* up to 18 digits always fit an int64_t */
        v->type = BK_INT;
        v->integer = strtoll(buf, NULL, 10);
    }
    return v;
}

/* The items of an array or object at ps->p (on the bracket); NULL when malformed. */
static bk_json *bk_container(bk_parser *ps, int is_obj) {
    char close = is_obj ? '}' : ']';
    size_t n = 0, cap = 8;
    bk_json **items = malloc(cap * sizeof *items);
    const char **keys = malloc(cap * sizeof *keys);
    bk_json *v = NULL;
    if (items == NULL || keys == NULL) bk_oom();
    if (++ps->depth > BK_MAX_DEPTH) goto done;
    ps->p++;
    bk_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
    } else {
        for (;;) {
            const char *key = NULL;
            size_t klen;
            bk_ws(ps);
            if (is_obj) {
                if (ps->p >= ps->end || *ps->p != '"' || !(key = bk_string(ps, &klen))) goto done;
                bk_ws(ps);
                if (ps->p >= ps->end || *ps->p++ != ':') goto done;
            }
            bk_json *item = bk_value(ps);
            if (item == NULL) goto done;
            if (n == cap) {
                cap *= 2;
                items = realloc(items, cap * sizeof *items);
                keys = realloc(keys, cap * sizeof *keys);
                if (items == NULL || keys == NULL) bk_oom();
            }
            items[n] = item;
            keys[n++] = key;
            bk_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == close) { ps->p++; break; }
            goto done;
        }
    }
    v = bk_node(ps, is_obj ? BK_OBJ : BK_ARR);
    v->len = n;
    v->items = bk_alloc(ps->doc, (n ? n : 1) * sizeof *items);
    memcpy(v->items, items, n * sizeof *items);
    if (is_obj) {
        v->keys = bk_alloc(ps->doc, (n ? n : 1) * sizeof *keys);
        memcpy(v->keys, keys, n * sizeof *keys);
    }
done:
    ps->depth--;
    free(items);
    free(keys);
    return v;
}

static int bk_word(bk_parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

static bk_json *bk_value(bk_parser *ps) {
    bk_ws(ps);
    if (ps->p >= ps->end) return NULL;
    switch (*ps->p) {
    case '{': return bk_container(ps, 1);
    case '[': return bk_container(ps, 0);
    case '"': {
        size_t len;
        char *s = bk_string(ps, &len);
        if (s == NULL) return NULL;
        bk_json *v = bk_node(ps, BK_STR);
        v->str = s;
        v->len = len;
        return v;
    }
    case 't':
    case 'f': {
        int truth = *ps->p == 't';
        if (!bk_word(ps, truth ? "true" : "false")) return NULL;
        bk_json *v = bk_node(ps, BK_BOOL);
        v->boolean = truth;
        return v;
    }
    case 'n': return bk_word(ps, "null") ? bk_node(ps, BK_NULL) : NULL;
    default: return bk_number(ps);
    }
}

bk_doc *bk_parse(const char *text, size_t len) {
    bk_doc *doc = calloc(1, sizeof *doc);
    if (doc == NULL) return bk_oom();
    bk_parser ps = {text, text + len, doc, 0};
    doc->root = bk_value(&ps);
    bk_ws(&ps);
    if (doc->root == NULL || ps.p != ps.end) {
        bk_doc_free(doc);
        return NULL;
    }
    return doc;
}

const bk_json *bk_get(const bk_json *obj, const char *key) {
    if (obj == NULL || obj->type != BK_OBJ) return NULL;
    for (size_t i = obj->len; i-- > 0;) /* the last of duplicate keys, as Python's json */
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const bk_json *bk_at(const bk_json *arr, size_t index) {
    if (arr == NULL || arr->type != BK_ARR || index >= arr->len) return NULL;
    return arr->items[index];
}

size_t bk_len(const bk_json *v) {
    return v != NULL && (v->type == BK_ARR || v->type == BK_OBJ) ? v->len : 0;
}

const char *bk_str(const bk_json *v, const char *fallback) {
    return v != NULL && v->type == BK_STR ? v->str : fallback;
}

int bk_is_int(const bk_json *v) { return v != NULL && v->type == BK_INT; }

int64_t bk_int(const bk_json *v, int64_t fallback) { return bk_is_int(v) ? v->integer : fallback; }

/* Small seat numbers and counts: anything else (a string, 1e9) gives the fallback. */
static int bk_small(const bk_json *v, int fallback) {
    int64_t n = bk_int(v, fallback);
    return n >= -1000000 && n <= 1000000 ? (int)n : fallback;
}

static int bk_seat_ok(const bk_state *s, int seat) { return seat >= 0 && seat < s->n_players; }

/* ---- the writer ------------------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len, cap;
} bk_buf;

static void bk_put(bk_buf *b, const char *text, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (b->data == NULL) bk_oom();
    }
    memcpy(b->data + b->len, text, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void bk_puts(bk_buf *b, const char *text) { bk_put(b, text, strlen(text)); }

/* The length of a valid UTF-8 sequence at p (at most n bytes), 0 when invalid. */
static size_t bk_utf8_len(const unsigned char *p, size_t n) {
    size_t need = p[0] < 0xC2 ? 0 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : p[0] < 0xF5 ? 4 : 0;
    if (need == 0 || need > n) return 0;
    for (size_t i = 1; i < need; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (need == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))) return 0;
    if (need == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))) return 0;
    return need;
}

/* A JSON string: escapes what JSON needs, invalid UTF-8 becomes U+FFFD. */
static void bk_put_str(bk_buf *b, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    size_t n = strlen(text);
    bk_puts(b, "\"");
    for (size_t i = 0; i < n;) {
        unsigned char ch = p[i];
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\', esc[1] = (char)ch;
            bk_put(b, esc, 2);
        } else if (ch < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            bk_puts(b, esc);
        } else if (ch < 0x80) {
            bk_put(b, (const char *)p + i, 1);
        } else {
            size_t k = bk_utf8_len(p + i, n - i);
            if (k == 0) {
                bk_puts(b, "\\ufffd");
                i++;
                continue;
            }
            bk_put(b, (const char *)p + i, k);
            i += k;
            continue;
        }
        i++;
    }
    bk_puts(b, "\"");
}

static void bk_put_int(bk_buf *b, int64_t n) {
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)n);
    bk_puts(b, num);
}

static void bk_put_cards(bk_buf *b, const bk_cards *cards) {
    bk_puts(b, "[");
    for (int i = 0; i < cards->n; i++) {
        if (i) bk_puts(b, ",");
        bk_put_str(b, cards->c[i].s);
    }
    bk_puts(b, "]");
}

/* ---- cards ------------------------------------------------------------------------ */

void bk_rank_of(const char *card, char *out) {
    size_t n = strlen(card);
    n = n == 0 ? 0 : n - 1;
    if (n >= BK_CARD_LEN) n = BK_CARD_LEN - 1;
    memcpy(out, card, n);
    out[n] = '\0';
}

void bk_cards_add(bk_cards *list, const char *card) {
    if (list->n >= BK_MAX_CARDS || strlen(card) >= BK_CARD_LEN) return;
    strcpy(list->c[list->n++].s, card);
}

int bk_cards_index(const bk_cards *list, const char *card) {
    for (int i = 0; i < list->n; i++)
        if (strcmp(list->c[i].s, card) == 0) return i;
    return -1;
}

int bk_cards_remove(bk_cards *list, const char *card) {
    int i = bk_cards_index(list, card);
    if (i < 0) return 0;
    memmove(&list->c[i], &list->c[i + 1], (size_t)(list->n - i - 1) * sizeof list->c[0]);
    list->n--;
    return 1;
}

int bk_takes_from(const bk_cards *pool, const bk_cards *cards) {
    bk_cards left = *pool;
    for (int i = 0; i < cards->n; i++)
        if (!bk_cards_remove(&left, cards->c[i].s)) return 0;
    return 1;
}

/* A JSON array of strings as cards (entries that are not card strings are left out). */
static void bk_read_cards(const bk_json *arr, bk_cards *out) {
    out->n = 0;
    for (size_t i = 0; i < bk_len(arr); i++) {
        const char *card = bk_str(bk_at(arr, i), NULL);
        if (card != NULL) bk_cards_add(out, card);
    }
}

/* ---- the rules, as helpers -------------------------------------------------------- */

int bk_leading(const bk_state *s) { return s->top.n == 0; }

int bk_rank_index(const bk_state *s, const char *card_or_rank) {
    char rank[BK_CARD_LEN];
    for (int i = 0; i < s->n_ranks; i++)
        if (strcmp(s->ranks[i], card_or_rank) == 0) return i;
    bk_rank_of(card_or_rank, rank);
    for (int i = 0; i < s->n_ranks; i++)
        if (strcmp(s->ranks[i], rank) == 0) return i;
    return -1;
}

static int bk_suit_index(const bk_state *s, const char *card) {
    size_t n = strlen(card);
    for (int i = 0; n > 0 && i < s->n_suits; i++)
        if (strcmp(s->suits[i], card + n - 1) == 0) return i;
    return -1;
}

void bk_sort_cards(const bk_state *s, bk_cards *cards) {
    for (int i = 1; i < cards->n; i++) { /* insertion sort: stable, and lists are short */
        bk_card key = cards->c[i];
        int kr = bk_rank_index(s, key.s), ks = bk_suit_index(s, key.s), j = i - 1;
        while (j >= 0) {
            int r = bk_rank_index(s, cards->c[j].s), su = bk_suit_index(s, cards->c[j].s);
            if (r < kr || (r == kr && su <= ks)) break;
            cards->c[j + 1] = cards->c[j];
            j--;
        }
        cards->c[j + 1] = key;
    }
}

int bk_beats(const bk_state *s, int rank, int top_rank) {
    return s->skip_next ? rank >= top_rank : rank > top_rank;
}

int bk_forbidden_finish(const bk_state *s, const char *rank) {
    return bk_cards_index(&s->no_finish_on, rank) >= 0;
}

static int bk_count_rank(const bk_cards *list, const char *rank) {
    char r[BK_CARD_LEN];
    int n = 0;
    for (int i = 0; i < list->n; i++) {
        bk_rank_of(list->c[i].s, r);
        n += strcmp(r, rank) == 0;
    }
    return n;
}

int bk_unseen(const bk_state *s, const char *rank) {
    int known = bk_count_rank(&s->hand, rank) + bk_count_rank(&s->played, rank) +
                bk_count_rank(&s->out_of_play, rank) + bk_count_rank(&s->leftovers, rank);
    return s->n_suits - known > 0 ? s->n_suits - known : 0;
}

int bk_is_boss(const bk_state *s, const char *rank, int count) {
    int start = bk_rank_index(s, rank) + (s->skip_next ? 0 : 1);
    for (int r = start < 0 ? 0 : start; r < s->n_ranks; r++)
        if (bk_unseen(s, s->ranks[r]) >= count) return 0;
    return 1;
}

/* The sorted rank indexes of a play, to compare plays whatever their suits. */
static void bk_rank_key(const bk_state *s, const bk_cards *cards, int *key) {
    for (int i = 0; i < cards->n; i++) {
        int r = bk_rank_index(s, cards->c[i].s), j = i - 1;
        while (j >= 0 && key[j] > r) key[j + 1] = key[j], j--;
        key[j + 1] = r;
    }
}

int bk_is_legal_play(const bk_state *s, const bk_cards *cards) {
    int want[BK_MAX_CARDS], key[BK_MAX_CARDS];
    if (!bk_takes_from(&s->hand, cards)) return 0;
    for (int i = 0; i < cards->n; i++)
        if (bk_rank_index(s, cards->c[i].s) < 0) return 0;
    bk_rank_key(s, cards, want);
    for (int p = 0; p < s->legal.n; p++) {
        const bk_cards *play = &s->legal.plays[p];
        if (play->n != cards->n) continue;
        bk_rank_key(s, play, key);
        if (memcmp(key, want, (size_t)cards->n * sizeof *key) == 0) return 1;
    }
    return 0;
}

/* ---- updating the state ------------------------------------------------------------ */

static void bk_copy_text(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (n >= size) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void bk_new_trick(bk_state *s, int leader) {
    s->leader = leader;
    s->top.n = 0;
    s->count = 0;
    memset(s->passed, 0, sizeof s->passed);
}

static void bk_reset_round(bk_state *s) {
    s->round = s->dealer = 0;
    s->hand.n = s->leftovers.n = s->played.n = s->out_of_play.n = s->offer.n = 0;
    memset(s->hand_sizes, 0, sizeof s->hand_sizes);
    memset(s->places, 0, sizeof s->places);
    s->has_roles = 0;
    s->legal.n = 0;
    s->gave = 0;
    bk_new_trick(s, -1);
}

static void bk_on_match_start(bk_state *s, const bk_json *msg, bk_doc *doc) {
    const bk_json *players = bk_get(msg, "players"), *rules = bk_get(msg, "rules");
    bk_copy_text(s->match, sizeof s->match, bk_str(bk_get(msg, "match"), ""));
    s->seat = bk_small(bk_get(msg, "seat"), 0);
    s->n_players = (int)(bk_len(players) < BK_MAX_SEATS ? bk_len(players) : BK_MAX_SEATS);
    for (int i = 0; i < s->n_players; i++)
        bk_copy_text(s->players[i], sizeof s->players[i], bk_str(bk_at(players, (size_t)i), ""));
    s->rules = rules;
    s->n_ranks = s->n_suits = 0;
    for (size_t i = 0; i < bk_len(bk_get(rules, "ranks")) && s->n_ranks < BK_MAX_RANKS; i++)
        bk_copy_text(s->ranks[s->n_ranks++], BK_CARD_LEN,
                     bk_str(bk_at(bk_get(rules, "ranks"), i), ""));
    for (size_t i = 0; i < bk_len(bk_get(rules, "suits")) && s->n_suits < BK_MAX_RANKS; i++)
        bk_copy_text(s->suits[s->n_suits++], BK_CARD_LEN,
                     bk_str(bk_at(bk_get(rules, "suits"), i), ""));
    s->skip_next = strcmp(bk_str(bk_get(rules, "equal_rank"), ""), "skip_next") == 0;
    bk_read_cards(bk_get(rules, "no_finish_on"), &s->no_finish_on);
    s->bank_ms = bk_int(bk_get(msg, "bank_ms"), 0);
    s->has_seed = bk_is_int(bk_get(msg, "seed"));
    s->seed = bk_int(bk_get(msg, "seed"), 0);
    memset(s->scores, 0, sizeof s->scores);
    bk_doc_free(s->match_doc);
    s->match_doc = doc; /* keeps s->rules alive */
    bk_reset_round(s);
}

static void bk_on_round_start(bk_state *s, const bk_json *msg) {
    const bk_json *sizes = bk_get(msg, "hand_sizes"), *roles = bk_get(msg, "roles");
    const bk_json *scores = bk_get(msg, "scores");
    bk_reset_round(s);
    s->round = bk_small(bk_get(msg, "round"), 0);
    s->dealer = bk_small(bk_get(msg, "dealer"), 0);
    bk_read_cards(bk_get(msg, "hand"), &s->hand);
    for (int i = 0; i < s->n_players; i++) {
        s->hand_sizes[i] = bk_small(bk_at(sizes, (size_t)i), 0);
        if (bk_at(scores, (size_t)i) != NULL) s->scores[i] = bk_small(bk_at(scores, (size_t)i), 0);
        bk_copy_text(s->roles[i], sizeof s->roles[i], bk_str(bk_at(roles, (size_t)i), ""));
    }
    s->has_roles = bk_len(roles) > 0;
    bk_read_cards(bk_get(msg, "leftovers"), &s->leftovers);
}

static void bk_on_act(bk_state *s, const bk_json *msg) {
    const bk_json *counts = bk_get(msg, "counts"), *trick = bk_get(msg, "trick");
    const bk_json *legal = bk_get(msg, "legal");
    s->request_id = bk_int(bk_get(msg, "id"), 0);
    bk_copy_text(s->kind, sizeof s->kind, bk_str(bk_get(msg, "kind"), ""));
    if (bk_get(msg, "hand") != NULL) bk_read_cards(bk_get(msg, "hand"), &s->hand);
    if (bk_len(counts) == (size_t)s->n_players) /* 1.1: the referee's counts win */
        for (int i = 0; i < s->n_players; i++)
            s->hand_sizes[i] = bk_small(bk_at(counts, (size_t)i), 0);
    if (strcmp(s->kind, "play") == 0) {
        s->leader = bk_small(bk_get(trick, "leader"), s->leader);
        bk_read_cards(bk_get(trick, "top"), &s->top);
        s->count = bk_small(bk_get(trick, "count"), s->top.n);
        s->legal.n = 0;
        for (size_t i = 0; i < bk_len(legal) && s->legal.n < BK_MAX_PLAYS; i++)
            bk_read_cards(bk_at(legal, i), &s->legal.plays[s->legal.n++]);
        s->bank_ms = bk_int(bk_get(msg, "bank_ms"), s->bank_ms);
    } else if (strcmp(s->kind, "give") == 0) {
        s->give_to = bk_small(bk_get(msg, "to"), 0);
        s->give_count = bk_small(bk_get(msg, "count"), 0);
    } else if (strcmp(s->kind, "leftover") == 0) {
        bk_read_cards(bk_get(msg, "offer"), &s->offer);
    }
}

static void bk_on_exchanged(bk_state *s, const bk_json *msg) {
    int from = bk_small(bk_get(msg, "from"), -1), to = bk_small(bk_get(msg, "to"), -1);
    int count = bk_small(bk_get(msg, "count"), 0);
    if (bk_seat_ok(s, from)) s->hand_sizes[from] -= count;
    if (bk_seat_ok(s, to)) s->hand_sizes[to] += count;
    if (from != s->seat) return;
    if (s->gave) { /* we chose these cards and removed them when replying */
        s->gave = 0;
        return;
    }
    /* Given automatically: the best cards when giving up, the lowest when returning. */
    const char *role = s->has_roles && bk_seat_ok(s, s->seat) ? s->roles[s->seat] : "";
    int returning = strcmp(role, "president") == 0 || strcmp(role, "vice_president") == 0;
    bk_cards mine = s->hand;
    bk_sort_cards(s, &mine);
    for (int i = 0; i < count && i < mine.n; i++)
        bk_cards_remove(&s->hand, mine.c[returning ? i : mine.n - 1 - i].s);
}

static void bk_on_played(bk_state *s, const bk_json *msg) {
    int seat = bk_small(bk_get(msg, "seat"), -1);
    bk_cards cards;
    bk_read_cards(bk_get(msg, "cards"), &cards);
    for (int i = 0; i < cards.n; i++) {
        bk_cards_add(&s->played, cards.c[i].s);
        if (seat == s->seat) bk_cards_remove(&s->hand, cards.c[i].s);
    }
    if (bk_seat_ok(s, seat)) {
        s->hand_sizes[seat] -= cards.n;
        if (s->hand_sizes[seat] < 0) s->hand_sizes[seat] = 0;
    }
    s->top = cards;
    s->count = cards.n;
}

/* Update the state from one message (unknown types and fields are ignored). */
static void bk_apply(bk_state *s, const bk_json *msg, bk_doc *doc, int *kept) {
    const char *type = bk_str(bk_get(msg, "type"), "");
    int seat = bk_small(bk_get(msg, "seat"), -1);
    if (strcmp(type, "hello") == 0) {
        s->move_ms = bk_int(bk_get(bk_get(msg, "time"), "move_ms"), 0);
        s->hello_ms = bk_int(bk_get(bk_get(msg, "time"), "hello_ms"), 0);
    } else if (strcmp(type, "match_start") == 0) {
        bk_on_match_start(s, msg, doc);
        *kept = 1;
    } else if (strcmp(type, "round_start") == 0) {
        bk_on_round_start(s, msg);
    } else if (strcmp(type, "act") == 0) {
        bk_on_act(s, msg);
    } else if (strcmp(type, "played") == 0) {
        bk_on_played(s, msg);
    } else if (strcmp(type, "passed") == 0) {
        if (bk_seat_ok(s, seat)) s->passed[seat] = 1;
    } else if (strcmp(type, "trick_end") == 0) {
        bk_new_trick(s, bk_small(bk_get(msg, "leader"), -1));
    } else if (strcmp(type, "finished") == 0 || strcmp(type, "eliminated") == 0) {
        bk_cards cards;
        bk_read_cards(bk_get(msg, "cards"), &cards);
        for (int i = 0; i < cards.n; i++) bk_cards_add(&s->out_of_play, cards.c[i].s);
        if (bk_seat_ok(s, seat)) {
            s->places[seat] = bk_small(bk_get(msg, "place"), 0);
            if (type[0] == 'e') s->hand_sizes[seat] = 0;
        }
        if (type[0] == 'e' && seat == s->seat) s->hand.n = 0;
    } else if (strcmp(type, "exchanged") == 0) {
        bk_on_exchanged(s, msg);
    } else if (strcmp(type, "received") == 0) {
        bk_cards cards;
        bk_read_cards(bk_get(msg, "cards"), &cards);
        for (int i = 0; i < cards.n; i++) bk_cards_add(&s->hand, cards.c[i].s);
    } else if (strcmp(type, "leftover_taken") == 0) {
        bk_cards_remove(&s->leftovers, bk_str(bk_get(msg, "card"), ""));
    } else if (strcmp(type, "round_end") == 0) {
        for (int i = 0; i < s->n_players && i < (int)bk_len(bk_get(msg, "scores")); i++)
            s->scores[i] = bk_small(bk_at(bk_get(msg, "scores"), (size_t)i), s->scores[i]);
    }
}

/* ---- decisions and the safety net --------------------------------------------------- */

void bk_log(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
    fflush(stderr);
}

void bk_default_play(const bk_state *s, bk_cards *out) {
    out->n = 0;
    if (!bk_leading(s) || s->hand.n == 0) return;
    bk_cards sorted = s->hand;
    bk_sort_cards(s, &sorted);
    bk_cards_add(out, sorted.c[0].s);
}

void bk_default_give(const bk_state *s, int count, bk_cards *out) {
    bk_cards sorted = s->hand;
    bk_sort_cards(s, &sorted);
    out->n = 0;
    for (int i = 0; i < count && i < sorted.n; i++) bk_cards_add(out, sorted.c[i].s);
}

void bk_default_leftover(const bk_state *s, const bk_cards *offer, bk_card *take,
                         bk_card *discard) {
    bk_cards sorted = *offer;
    bk_sort_cards(s, &sorted);
    memset(take, 0, sizeof *take);
    memset(discard, 0, sizeof *discard);
    if (sorted.n == 0) return;
    *take = sorted.c[sorted.n - 1];
    bk_cards all = s->hand;
    bk_cards_add(&all, take->s);
    bk_sort_cards(s, &all);
    *discard = all.c[0];
}

/* A safe play: pass when following and passing is allowed, else the lowest legal play. */
static void bk_safe_play(const bk_state *s, bk_cards *out) {
    for (int p = 0; !bk_leading(s) && p < s->legal.n; p++)
        if (s->legal.plays[p].n == 0) {
            out->n = 0;
            return;
        }
    if (s->legal.n > 0) *out = s->legal.plays[0];
    else bk_default_play(s, out);
}

/* The marker line of one replaced decision (protocol/SPEC.md, "the kits' safety net"). */
static void bk_marker(const bk_state *s, const bk_cards *decided, const bk_cards *sent) {
    bk_buf b = {0};
    bk_puts(&b, BK_MARKER "{\"id\":");
    bk_put_int(&b, s->request_id);
    bk_puts(&b, ",\"kind\":");
    bk_put_str(&b, s->kind);
    bk_puts(&b, ",\"decided\":");
    bk_put_cards(&b, decided);
    bk_puts(&b, ",\"sent\":");
    bk_put_cards(&b, sent);
    bk_puts(&b, ",\"why\":\"not allowed\"}\n");
    fputs(b.data, stderr);
    fflush(stderr);
    free(b.data);
}

/* A list your code filled, made safe to read: a count in range, every card terminated. */
static void bk_tidy(bk_cards *cards) {
    if (cards->n < 0) cards->n = 0;
    if (cards->n > BK_MAX_CARDS) cards->n = BK_MAX_CARDS;
    for (int i = 0; i < cards->n; i++) cards->c[i].s[BK_CARD_LEN - 1] = '\0';
}

static void bk_decide_play(bk_bot *bot, bk_cards *out) {
    bk_state *s = &bot->state;
    out->n = 0;
    if (bot->on_play != NULL) bot->on_play(bot, s, out);
    else bk_default_play(s, out);
    bk_tidy(out);
    if (!bot->safety_net || bk_is_legal_play(s, out)) return;
    bk_cards decided = *out;
    bk_safe_play(s, out);
    bk_marker(s, &decided, out);
}

static void bk_decide_give(bk_bot *bot, bk_cards *out) {
    bk_state *s = &bot->state;
    out->n = 0;
    if (bot->on_give != NULL) bot->on_give(bot, s, s->give_to, s->give_count, out);
    else bk_default_give(s, s->give_count, out);
    bk_tidy(out);
    if (!bot->safety_net || (out->n == s->give_count && bk_takes_from(&s->hand, out))) return;
    bk_cards decided = *out;
    bk_default_give(s, s->give_count, out);
    bk_marker(s, &decided, out);
}

static void bk_decide_leftover(bk_bot *bot, bk_card *take, bk_card *discard) {
    bk_state *s = &bot->state;
    memset(take, 0, sizeof *take);
    memset(discard, 0, sizeof *discard);
    if (bot->on_leftover != NULL) bot->on_leftover(bot, s, &s->offer, take, discard);
    else bk_default_leftover(s, &s->offer, take, discard);
    take->s[BK_CARD_LEN - 1] = discard->s[BK_CARD_LEN - 1] = '\0';
    bk_cards all = s->hand;
    bk_cards_add(&all, take->s);
    int ok = bk_cards_index(&s->offer, take->s) >= 0 && bk_cards_index(&all, discard->s) >= 0;
    if (!bot->safety_net || ok) return;
    bk_cards decided = {0}, sent = {0};
    bk_cards_add(&decided, take->s);
    bk_cards_add(&decided, discard->s);
    bk_default_leftover(s, &s->offer, take, discard);
    bk_cards_add(&sent, take->s);
    bk_cards_add(&sent, discard->s);
    bk_marker(s, &decided, &sent);
}

/* The reply to an act, and the hand updated with what it gives away. */
static void bk_act(bk_bot *bot, const bk_json *msg, bk_buf *b) {
    bk_state *s = &bot->state;
    bk_cards cards;
    bk_puts(b, "{\"id\":");
    bk_put_int(b, bk_int(bk_get(msg, "id"), 0));
    if (strcmp(s->kind, "leftover") == 0) {
        bk_card take, discard;
        bk_decide_leftover(bot, &take, &discard);
        bk_cards_add(&s->hand, take.s);
        bk_cards_remove(&s->hand, discard.s);
        bk_cards_add(&s->out_of_play, discard.s);
        bk_puts(b, ",\"take\":");
        bk_put_str(b, take.s);
        bk_puts(b, ",\"discard\":");
        bk_put_str(b, discard.s);
        bk_puts(b, "}");
        return;
    }
    if (strcmp(s->kind, "give") == 0) {
        bk_decide_give(bot, &cards);
        s->gave = 1;
    } else if (strcmp(s->kind, "play") == 0) {
        bk_decide_play(bot, &cards);
    } else {
        bk_log("botkit: unknown act kind \"%.40s\"; answering with an empty play", s->kind);
        cards.n = 0;
    }
    for (int i = 0; i < cards.n; i++) bk_cards_remove(&s->hand, cards.c[i].s);
    bk_puts(b, ",\"cards\":");
    bk_put_cards(b, &cards);
    bk_puts(b, "}");
}

/* ---- the generator ------------------------------------------------------------------ */

static uint64_t bk_splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double bk_random(bk_bot *bot) {
    return (double)(bk_splitmix(&bot->rng) >> 11) / 9007199254740992.0; /* 53 bits / 2^53 */
}

static void bk_reseed(bk_bot *bot) {
    const bk_state *s = &bot->state;
    if (s->has_seed) {
        bot->rng = (uint64_t)s->seed;
        return;
    }
    char text[160];
    snprintf(text, sizeof text, "%s:%d", s->match, s->seat);
    uint64_t h = 0xCBF29CE484222325ULL; /* FNV-1a of "match:seat" */
    for (const char *p = text; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001B3ULL;
    bot->rng = h;
}

/* ---- the loop ------------------------------------------------------------------------ */

bk_bot bk_bot_default(const char *name) {
    bk_bot bot;
    memset(&bot, 0, sizeof bot);
    bot.name = name;
    bot.safety_net = 1;
    bot.state.leader = -1;
    return bot;
}

/* Handle one message whose document is doc; returns the reply or NULL; frees doc unless the
 * state keeps it (match_start). */
static char *bk_handle_doc(bk_bot *bot, bk_doc *doc) {
    const bk_json *msg = bk_root(doc);
    const char *type = bk_str(bk_get(msg, "type"), "");
    int kept = 0;
    bk_buf b = {0};
    bk_apply(&bot->state, msg, doc, &kept);
    if (strcmp(type, "match_start") == 0) bk_reseed(bot);
    if (bot->on_event != NULL) bot->on_event(bot, &bot->state, msg);
    if (strcmp(type, "hello") == 0) {
        bk_puts(&b, "{\"id\":");
        bk_put_int(&b, bk_int(bk_get(msg, "id"), 0));
        bk_puts(&b, ",\"type\":\"ready\",\"name\":");
        bk_put_str(&b, bot->name != NULL ? bot->name : "botkit-bot");
        if (bot->version != NULL) {
            bk_puts(&b, ",\"version\":");
            bk_put_str(&b, bot->version);
        }
        bk_puts(&b, "}");
    } else if (strcmp(type, "act") == 0) {
        bk_act(bot, msg, &b);
    }
    if (!kept) bk_doc_free(doc);
    return b.data;
}

int bk_run(bk_bot *bot) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    /* getline returns as soon as one whole line is there: it never waits for the next. */
    while ((n = getline(&line, &cap, stdin)) > 0) {
        bk_doc *doc = bk_parse(line, (size_t)n);
        if (doc == NULL) {
            int shown = (int)strcspn(line, "\r\n");
            bk_log("botkit: ignoring a line that is not JSON: %.*s", shown < 80 ? shown : 80, line);
            continue;
        }
        if (bk_root(doc)->type != BK_OBJ) {
            bk_doc_free(doc);
            continue;
        }
        int bye = strcmp(bk_str(bk_get(bk_root(doc), "type"), ""), "bye") == 0;
        char *reply = bk_handle_doc(bot, doc);
        if (reply != NULL) {
            fputs(reply, stdout);
            fputc('\n', stdout);
            fflush(stdout); /* at once: the referee waits for this line */
            free(reply);
        }
        if (bye) break;
    }
    free(line);
    bk_doc_free(bot->state.match_doc);
    bot->state.match_doc = NULL;
    return 0;
}
