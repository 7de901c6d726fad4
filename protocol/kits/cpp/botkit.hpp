// botkit.hpp: a small base for Arschloch / Président bots in C++17 speaking protocol v1.
//
// Copy this one header next to your bot; it needs nothing but the standard library.
// Subclass botkit::Bot, override the decisions you care about, and call run():
//
//     #include "botkit.hpp"
//
//     struct MyBot : botkit::Bot {
//         MyBot() : Bot("my-bot") {}
//         botkit::Cards onPlay(const botkit::GameState& s) override {
//             return s.legal.empty() ? botkit::Cards{} : s.legal.front();  // the lowest play
//         }
//     };
//
//     int main() { return MyBot().run(); }
//
// run() reads one JSON message per line from std::cin (std::getline: it never waits for more
// than the line at hand), keeps a GameState up to date, calls your methods when the referee
// asks for a decision, writes one reply line per request followed by std::flush, and returns
// on "bye" or end of input. Unknown message types and fields are ignored; a line that is not
// JSON is skipped with a note on stderr. Log with botkit::log() (std::cerr): std::cout is only
// for replies.
//
// The safety net: a decision the rules would refuse (a card you do not hold, a wrong count, a
// pass when you lead, a leftover not offered) or that throws is replaced by a safe legal one,
// so a bug costs a bad move, not a forfeit. It is never hidden: each time the kit writes one
// line on stderr, "botkit: replaced " then a JSON object (protocol/SPEC.md, "the kits' safety
// net"), which `referee bot check` fails and `referee play` warns about. Set safetyNet = false
// to send your decisions as they are and get the referee's own verdict.
#ifndef BOTKIT_HPP
#define BOTKIT_HPP

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace botkit {

constexpr int PROTOCOL = 1;
// Starts the stderr line the safety net writes for each decision it replaces.
constexpr const char* MARKER = "botkit: replaced ";

using Card = std::string;
using Cards = std::vector<Card>;

// ---- JSON: a parsed value; lookups never throw (a missing key gives a null value) -----

class Json {
public:
    enum class Type { Null, Bool, Int, Number, String, Array, Object };

    Type type = Type::Null;
    bool boolean = false;
    std::int64_t integer = 0;  // Int: a number without fraction or exponent that fits
    double number = 0;         // Int and Number
    std::string str;
    std::vector<Json> items;          // Array items, Object values
    std::vector<std::string> keys;    // Object keys

    bool isNull() const { return type == Type::Null; }
    bool isInt() const { return type == Type::Int; }
    bool isString() const { return type == Type::String; }
    bool isArray() const { return type == Type::Array; }
    bool isObject() const { return type == Type::Object; }
    std::size_t size() const { return isArray() || isObject() ? items.size() : 0; }

    // The value of key (the last of duplicates), or a null value.
    const Json& operator[](const std::string& key) const {
        if (isObject())
            for (std::size_t i = keys.size(); i-- > 0;)
                if (keys[i] == key) return items[i];
        return null();
    }
    const Json& operator[](std::size_t index) const {
        return isArray() && index < items.size() ? items[index] : null();
    }
    bool has(const std::string& key) const { return &(*this)[key] != &null(); }
    std::string asString(const std::string& fallback = "") const {
        return isString() ? str : fallback;
    }
    std::int64_t asInt(std::int64_t fallback = 0) const { return isInt() ? integer : fallback; }
    // A small whole number (a seat, a count), else the fallback.
    int asSmall(int fallback = 0) const {
        return isInt() && integer >= -1000000 && integer <= 1000000 ? int(integer) : fallback;
    }
    // The strings of an array (other entries left out).
    Cards asCards() const {
        Cards out;
        if (!isArray()) return out;
        for (const Json& item : items)
            if (item.isString()) out.push_back(item.str);
        return out;
    }

    static const Json& null() {
        static const Json value;
        return value;
    }

    // Parse one line; throws std::runtime_error when it is not JSON (or nests past 128).
    static Json parse(const std::string& text) {
        Parser p{text, 0, 0};
        Json value = p.value();
        p.ws();
        if (p.pos != text.size()) p.fail();
        return value;
    }

private:
    struct Parser {
        const std::string& s;
        std::size_t pos;
        int depth;

        [[noreturn]] void fail() const { throw std::runtime_error("not JSON"); }
        void ws() {
            while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' ||
                                      s[pos] == '\r'))
                pos++;
        }
        bool word(const char* w) {
            std::string t(w);
            if (s.compare(pos, t.size(), t) != 0) return false;
            pos += t.size();
            return true;
        }
        unsigned hex4() {
            if (pos + 4 > s.size()) fail();
            unsigned v = 0;
            for (int i = 0; i < 4; i++) {
                char c = s[pos++];
                v <<= 4;
                if (c >= '0' && c <= '9') v |= unsigned(c - '0');
                else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
                else fail();
            }
            return v;
        }
        static void utf8(unsigned cp, std::string& out) {
            if (cp < 0x80) {
                out += char(cp);
            } else if (cp < 0x800) {
                out += char(0xC0 | (cp >> 6));
                out += char(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                out += char(0xE0 | (cp >> 12));
                out += char(0x80 | ((cp >> 6) & 0x3F));
                out += char(0x80 | (cp & 0x3F));
            } else {
                out += char(0xF0 | (cp >> 18));
                out += char(0x80 | ((cp >> 12) & 0x3F));
                out += char(0x80 | ((cp >> 6) & 0x3F));
                out += char(0x80 | (cp & 0x3F));
            }
        }
        std::string string() {
            std::string out;
            pos++;  // the opening quote
            for (;;) {
                if (pos >= s.size()) fail();
                char c = s[pos++];
                if (c == '"') return out;
                if (static_cast<unsigned char>(c) < 0x20) fail();
                if (c != '\\') {
                    out += c;
                    continue;
                }
                if (pos >= s.size()) fail();
                char e = s[pos++];
                switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && s.compare(pos, 2, "\\u") == 0) {
                        std::size_t back = pos;
                        pos += 2;
                        unsigned lo = hex4();
                        if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else pos = back;
                    }
                    if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;  // a lone surrogate
                    utf8(cp, out);
                    break;
                }
                default: fail();
                }
            }
        }
        Json number() {
            std::size_t start = pos;
            bool whole = true;
            if (pos < s.size() && s[pos] == '-') pos++;
            if (pos >= s.size() || s[pos] < '0' || s[pos] > '9') fail();
            while (pos < s.size() && std::string("0123456789+-.eE").find(s[pos]) != std::string::npos) {
                if (s[pos] == '.' || s[pos] == 'e' || s[pos] == 'E') whole = false;
                pos++;
            }
            std::string text = s.substr(start, pos - start);
            Json v;
            v.type = Type::Number;
            v.number = std::strtod(text.c_str(), nullptr);
            if (whole && text.size() < 19) {  // up to 18 digits always fit an int64_t
                v.type = Type::Int;
                v.integer = std::strtoll(text.c_str(), nullptr, 10);
            }
            return v;
        }
        Json container(bool object) {
            if (++depth > 128) fail();
            char close = object ? '}' : ']';
            Json v;
            v.type = object ? Type::Object : Type::Array;
            pos++;
            ws();
            if (pos < s.size() && s[pos] == close) {
                pos++;
                depth--;
                return v;
            }
            for (;;) {
                ws();
                if (object) {
                    if (pos >= s.size() || s[pos] != '"') fail();
                    v.keys.push_back(string());
                    ws();
                    if (pos >= s.size() || s[pos++] != ':') fail();
                }
                v.items.push_back(value());
                ws();
                if (pos < s.size() && s[pos] == ',') {
                    pos++;
                    continue;
                }
                if (pos < s.size() && s[pos] == close) {
                    pos++;
                    depth--;
                    return v;
                }
                fail();
            }
        }
        Json value() {
            ws();
            if (pos >= s.size()) fail();
            Json v;
            switch (s[pos]) {
            case '{': return container(true);
            case '[': return container(false);
            case '"':
                v.type = Type::String;
                v.str = string();
                return v;
            case 't':
            case 'f':
                v.type = Type::Bool;
                v.boolean = s[pos] == 't';
                if (!word(v.boolean ? "true" : "false")) fail();
                return v;
            case 'n':
                if (!word("null")) fail();
                return v;
            default: return number();
            }
        }
    };
};

// A JSON string: escapes what JSON needs; invalid UTF-8 becomes U+FFFD.
inline std::string quote(const std::string& text) {
    std::string out = "\"";
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out += esc;
        } else if (c < 0x80) {
            out += char(c);
        } else {
            std::size_t need = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
            bool ok = need > 0 && need <= n - i;
            for (std::size_t k = 1; ok && k < need; k++) ok = (p[i + k] & 0xC0) == 0x80;
            if (ok && need == 3) ok = !((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0));
            if (ok && need == 4) ok = !((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90));
            if (!ok) {
                out += "\\ufffd";
                i++;
                continue;
            }
            out.append(text, i, need);
            i += need;
            continue;
        }
        i++;
    }
    return out + "\"";
}

inline std::string quote(const Cards& cards) {
    std::string out = "[";
    for (std::size_t i = 0; i < cards.size(); i++) out += (i ? "," : "") + quote(cards[i]);
    return out + "]";
}

// ---- cards -------------------------------------------------------------------------

inline void log(const std::string& line) { std::cerr << line << std::endl; }

// The rank token of a card: "10H" -> "10".
inline std::string rankOf(const Card& card) { return card.empty() ? "" : card.substr(0, card.size() - 1); }
// The suit letter of a card: "10H" -> "H".
inline std::string suitOf(const Card& card) { return card.empty() ? "" : card.substr(card.size() - 1); }

// Whether every card of cards is in pool, counting duplicates.
inline bool takesFrom(Cards pool, const Cards& cards) {
    for (const Card& c : cards) {
        auto it = std::find(pool.begin(), pool.end(), c);
        if (it == pool.end()) return false;
        pool.erase(it);
    }
    return true;
}

inline void removeCards(Cards& from, const Cards& cards) {
    for (const Card& c : cards) {
        auto it = std::find(from.begin(), from.end(), c);
        if (it != from.end()) from.erase(it);
    }
}

// ---- the state the protocol gives ----------------------------------------------------

struct GameState {
    // hello
    std::int64_t moveMs = 0, helloMs = 0;
    // match_start
    std::string match;
    int seat = 0;
    std::vector<std::string> players;
    Json rules;                      // the whole rules object
    std::vector<std::string> ranks;  // low -> high
    std::vector<std::string> suits;
    std::int64_t bankMs = 0;         // time bank left (ms)
    bool hasSeed = false;            // match_start's seed (revision 1.2)
    std::int64_t seed = 0;
    // round_start and the events of the round
    int round = 0, dealer = 0;
    Cards hand;                      // your cards; replaced by every act's hand
    std::vector<int> handSizes;      // cards by seat (act's counts win)
    std::vector<std::string> roles;  // last round's roles by seat; empty in round 1
    std::vector<int> scores;
    Cards leftovers;                 // face-up leftovers still on the table
    Cards played;                    // every card played this round
    Cards outOfPlay;                 // eliminated cards and your own discards
    std::map<int, int> places;       // seat -> place, once finished
    // the current trick
    int leader = -1;
    Cards top;                       // what to beat; empty when you lead
    int count = 0;
    std::set<int> passed;            // passed in this trick (events)
    // the request being answered
    std::int64_t requestId = 0;
    std::string kind;                // "play", "give", "leftover"
    std::vector<Cards> legal;        // act play: every legal play, low to high, [] last
    int giveTo = 0, giveCount = 0;
    Cards offer;

    bool leading() const { return top.empty(); }
    int nPlayers() const { return int(players.size()); }

    // Position of a rank (or a card's rank) in the order low -> high; -1 if unknown.
    int rankIndex(const std::string& cardOrRank) const {
        auto it = std::find(ranks.begin(), ranks.end(), cardOrRank);
        if (it == ranks.end()) it = std::find(ranks.begin(), ranks.end(), rankOf(cardOrRank));
        return it == ranks.end() ? -1 : int(it - ranks.begin());
    }
    int suitIndex(const Card& card) const {
        auto it = std::find(suits.begin(), suits.end(), suitOf(card));
        return it == suits.end() ? -1 : int(it - suits.begin());
    }
    // Cards sorted low to high in this match's rank order, then suit order.
    Cards sortCards(Cards cards) const {
        std::stable_sort(cards.begin(), cards.end(), [this](const Card& a, const Card& b) {
            return std::make_pair(rankIndex(a), suitIndex(a)) < std::make_pair(rankIndex(b), suitIndex(b));
        });
        return cards;
    }
    // rank -> cards for the ranks present, ordered low to high.
    std::vector<std::pair<std::string, Cards>> groupsByRank(const Cards& cards) const {
        std::vector<std::pair<std::string, Cards>> groups;
        for (const Card& c : sortCards(cards)) {
            if (groups.empty() || groups.back().first != rankOf(c)) groups.push_back({rankOf(c), {}});
            groups.back().second.push_back(c);
        }
        return groups;
    }
    bool skipNext() const { return rules["equal_rank"].asString() == "skip_next"; }
    // Whether rank may be played on topRank (equal only under skip_next).
    bool beats(const std::string& rank, const std::string& topRank) const {
        int d = rankIndex(rank) - rankIndex(topRank);
        return skipNext() ? d >= 0 : d > 0;
    }
    bool forbiddenFinish(const std::string& rank) const {
        Cards ranksOut = rules["no_finish_on"].asCards();
        return std::find(ranksOut.begin(), ranksOut.end(), rank) != ranksOut.end();
    }
    // Cards of rank that may still be in another hand (an upper bound).
    int unseen(const std::string& rank) const {
        auto count = [&rank](const Cards& list) {
            return int(std::count_if(list.begin(), list.end(), [&rank](const Card& c) { return rankOf(c) == rank; }));
        };
        int known = count(hand) + count(played) + count(outOfPlay) + count(leftovers);
        return std::max(0, int(suits.size()) - known);
    }
    // Whether nobody else can beat count cards of rank any more.
    bool isBoss(const std::string& rank, int cards = 1) const {
        int start = std::max(0, rankIndex(rank) + (skipNext() ? 0 : 1));
        for (std::size_t r = std::size_t(start); r < ranks.size(); r++)
            if (unseen(ranks[r]) >= cards) return false;
        return true;
    }
    // Whether cards is a play the referee accepts now (cards in hand, ranks in legal).
    bool isLegalPlay(const Cards& cards) const {
        if (!takesFrom(hand, cards)) return false;
        auto key = [this](const Cards& play) {
            std::vector<int> k;
            for (const Card& c : play) k.push_back(rankIndex(c));
            std::sort(k.begin(), k.end());
            return k;
        };
        for (const Card& c : cards)
            if (rankIndex(c) < 0) return false;
        std::vector<int> want = key(cards);
        for (const Cards& play : legal)
            if (key(play) == want) return true;
        return false;
    }

    // Update the state from one message (unknown types and fields are ignored).
    void apply(const Json& msg) {
        std::string type = msg["type"].asString();
        int at = msg["seat"].asSmall(-1);
        if (type == "hello") {
            moveMs = msg["time"]["move_ms"].asInt();
            helloMs = msg["time"]["hello_ms"].asInt();
        } else if (type == "match_start") {
            match = msg["match"].asString();
            seat = msg["seat"].asSmall(0);
            players = msg["players"].asCards();
            rules = msg["rules"];
            ranks = rules["ranks"].asCards();
            suits = rules["suits"].asCards();
            bankMs = msg["bank_ms"].asInt();
            hasSeed = msg["seed"].isInt();
            seed = msg["seed"].asInt();
            scores.assign(players.size(), 0);
            resetRound();
        } else if (type == "round_start") {
            resetRound();
            round = msg["round"].asSmall();
            dealer = msg["dealer"].asSmall();
            hand = msg["hand"].asCards();
            for (std::size_t i = 0; i < handSizes.size(); i++) handSizes[i] = msg["hand_sizes"][i].asSmall();
            roles = msg["roles"].asCards();
            for (std::size_t i = 0; i < scores.size(); i++) scores[i] = msg["scores"][i].asSmall(scores[i]);
            leftovers = msg["leftovers"].asCards();
        } else if (type == "act") {
            onAct(msg);
        } else if (type == "played") {
            Cards cards = msg["cards"].asCards();
            played.insert(played.end(), cards.begin(), cards.end());
            if (at == seat) removeCards(hand, cards);
            if (seatOk(at)) handSizes[std::size_t(at)] = std::max(0, handSizes[std::size_t(at)] - int(cards.size()));
            top = cards;
            count = int(cards.size());
        } else if (type == "passed") {
            passed.insert(at);
        } else if (type == "trick_end") {
            newTrick(msg["leader"].asSmall(-1));
        } else if (type == "finished" || type == "eliminated") {
            places[at] = msg["place"].asSmall();
            if (type == "eliminated") {
                Cards cards = msg["cards"].asCards();
                outOfPlay.insert(outOfPlay.end(), cards.begin(), cards.end());
                if (seatOk(at)) handSizes[std::size_t(at)] = 0;
                if (at == seat) hand.clear();
            }
        } else if (type == "exchanged") {
            onExchanged(msg);
        } else if (type == "received") {
            Cards cards = msg["cards"].asCards();
            hand.insert(hand.end(), cards.begin(), cards.end());
        } else if (type == "leftover_taken") {
            removeCards(leftovers, {msg["card"].asString()});
        } else if (type == "round_end") {
            for (std::size_t i = 0; i < scores.size(); i++) scores[i] = msg["scores"][i].asSmall(scores[i]);
        }
    }

    bool gave = false;  // we chose the cards of our next "exchanged" (removed when replying)

private:
    bool seatOk(int s) const { return s >= 0 && s < int(handSizes.size()); }

    void newTrick(int by) {
        leader = by;
        top.clear();
        count = 0;
        passed.clear();
    }
    void resetRound() {
        round = dealer = 0;
        hand.clear();
        handSizes.assign(players.size(), 0);
        roles.clear();
        leftovers.clear();
        played.clear();
        outOfPlay.clear();
        places.clear();
        legal.clear();
        offer.clear();
        gave = false;
        newTrick(-1);
    }
    void onAct(const Json& msg) {
        requestId = msg["id"].asInt();
        kind = msg["kind"].asString();
        if (msg.has("hand")) hand = msg["hand"].asCards();
        const Json& counts = msg["counts"];
        if (counts.isArray() && counts.size() == handSizes.size())  // 1.1: the referee's counts win
            for (std::size_t i = 0; i < handSizes.size(); i++) handSizes[i] = counts[i].asSmall();
        if (kind == "play") {
            const Json& trick = msg["trick"];
            leader = trick["leader"].asSmall(leader);
            top = trick["top"].asCards();
            count = trick["count"].asSmall(int(top.size()));
            legal.clear();
            for (std::size_t i = 0; i < msg["legal"].size(); i++) legal.push_back(msg["legal"][i].asCards());
            bankMs = msg["bank_ms"].asInt(bankMs);
        } else if (kind == "give") {
            giveTo = msg["to"].asSmall();
            giveCount = msg["count"].asSmall();
        } else if (kind == "leftover") {
            offer = msg["offer"].asCards();
        }
    }
    void onExchanged(const Json& msg) {
        int from = msg["from"].asSmall(-1), to = msg["to"].asSmall(-1), n = msg["count"].asSmall();
        if (seatOk(from)) handSizes[std::size_t(from)] -= n;
        if (seatOk(to)) handSizes[std::size_t(to)] += n;
        if (from != seat) return;
        if (gave) {
            gave = false;
            return;
        }
        // Given automatically: the best cards when giving up, the lowest when returning.
        std::string role = seat >= 0 && std::size_t(seat) < roles.size() ? roles[std::size_t(seat)] : "";
        bool returning = role == "president" || role == "vice_president";
        Cards mine = sortCards(hand);
        if (!returning) std::reverse(mine.begin(), mine.end());
        mine.resize(std::min(mine.size(), std::size_t(std::max(0, n))));
        removeCards(hand, mine);
    }
};

// ---- the bot --------------------------------------------------------------------------

// Base class of a bot: override onPlay, onGive, onLeftover and onEvent as you need.
class Bot {
public:
    std::string name;
    std::string version;      // empty: not sent
    bool safetyNet = true;    // replace a refused or throwing decision (and say so on stderr)
    bool reseed = true;       // reseed rng from match_start's seed (or match id and seat)
    std::mt19937_64 rng{0};   // yours to draw from: std::uniform_int_distribution etc.
    GameState state;

    explicit Bot(std::string botName = "botkit-bot", std::string botVersion = "")
        : name(std::move(botName)), version(std::move(botVersion)) {}
    virtual ~Bot() = default;

    // Lead the single lowest card; otherwise pass (the referee's fallback policy).
    virtual Cards onPlay(const GameState& s) {
        if (!s.leading() || s.hand.empty()) return {};
        return {s.sortCards(s.hand).front()};
    }
    // Give back the lowest cards.
    virtual Cards onGive(const GameState& s, int /*to*/, int count) {
        Cards sorted = s.sortCards(s.hand);
        sorted.resize(std::min(sorted.size(), std::size_t(std::max(0, count))));
        return sorted;
    }
    // Take the highest offered card; discard the lowest card afterwards.
    virtual std::pair<Card, Card> onLeftover(const GameState& s, const Cards& offer) {
        if (offer.empty()) return {"", ""};
        Card take = s.sortCards(offer).back();
        Cards all = s.hand;
        all.push_back(take);
        return {take, s.sortCards(all).front()};
    }
    // Called for every message after the state is updated.
    virtual void onEvent(const GameState& /*s*/, const Json& /*msg*/) {}

    // The reply line for one message (without "\n"), or "" for an event.
    std::string handle(const Json& msg) {
        std::string type = msg["type"].asString();
        try {
            state.apply(msg);
        } catch (const std::exception& exc) {  // a malformed message must not take the bot down
            log(std::string("botkit: could not follow a message; continuing: ") + exc.what());
        }
        if (type == "match_start" && reseed) {
            std::string text = state.match + ":" + std::to_string(state.seat);
            std::seed_seq fallback(text.begin(), text.end());
            if (state.hasSeed) rng.seed(std::uint64_t(state.seed));
            else rng.seed(fallback);
        }
        onEvent(state, msg);
        std::string id = std::to_string(msg["id"].asInt());
        if (type == "hello") {
            std::string reply = "{\"id\":" + id + ",\"type\":\"ready\",\"name\":" + quote(name);
            if (!version.empty()) reply += ",\"version\":" + quote(version);
            return reply + "}";
        }
        if (type == "act") return "{\"id\":" + id + act() + "}";
        return "";
    }

    // Serve the referee until bye or end of input; 0.
    int run(std::istream& in = std::cin, std::ostream& out = std::cout) {
        std::string line;
        // std::getline returns as soon as one whole line is there: it never waits for the next.
        while (std::getline(in, line)) {
            Json msg;
            try {
                msg = Json::parse(line);
            } catch (const std::exception&) {
                std::size_t shown = std::min<std::size_t>(line.find_first_of("\r\n"), 80);
                log("botkit: ignoring a line that is not JSON: " + line.substr(0, shown));
                continue;
            }
            if (!msg.isObject()) continue;
            std::string reply = handle(msg);
            if (!reply.empty()) out << reply << '\n' << std::flush;  // at once: the referee waits
            if (msg["type"].asString() == "bye") break;
        }
        return 0;
    }

private:
    // Your decision, or (the safety net) a safe one, said on stderr with a marker line.
    template <class Decide, class Ok, class Safe, class Show>
    auto decide(Decide yours, Ok ok, Safe safe, Show show) -> decltype(safe()) {
        if (!safetyNet) return yours();
        std::string decided = "null", error;
        try {
            auto choice = yours();
            if (ok(choice)) return choice;
            decided = show(choice);
        } catch (const std::exception& exc) {
            error = exc.what();
            if (error.empty()) error = "exception";
        } catch (...) {
            error = "unknown exception";
        }
        auto sent = safe();
        std::string line = std::string(MARKER) + "{\"id\":" + std::to_string(state.requestId) +
                           ",\"kind\":" + quote(state.kind) + ",\"decided\":" + decided +
                           ",\"sent\":" + show(sent);
        if (error.empty()) line += ",\"why\":\"not allowed\"}";
        else line += ",\"why\":\"raised\",\"error\":" + quote(error.substr(0, 200)) + "}";
        log(line);
        return sent;
    }

    Cards safePlay() {
        if (!state.leading())
            for (const Cards& play : state.legal)
                if (play.empty()) return {};
        if (!state.legal.empty()) return state.legal.front();
        return Bot::onPlay(state);
    }

    std::string act() {
        GameState& s = state;
        auto show = [](const Cards& cards) { return quote(cards); };
        if (s.kind == "play") {
            Cards cards = decide([&] { return onPlay(s); }, [&](const Cards& c) { return s.isLegalPlay(c); },
                                 [&] { return safePlay(); }, show);
            removeCards(s.hand, cards);
            return ",\"cards\":" + quote(cards);
        }
        if (s.kind == "give") {
            Cards cards = decide(
                [&] { return onGive(s, s.giveTo, s.giveCount); },
                [&](const Cards& c) { return int(c.size()) == s.giveCount && takesFrom(s.hand, c); },
                [&] { return Bot::onGive(s, s.giveTo, s.giveCount); }, show);
            removeCards(s.hand, cards);
            s.gave = true;
            return ",\"cards\":" + quote(cards);
        }
        if (s.kind == "leftover") {
            using Choice = std::pair<Card, Card>;
            Choice choice = decide(
                [&] { return onLeftover(s, s.offer); },
                [&](const Choice& c) {
                    Cards all = s.hand;
                    all.push_back(c.first);
                    return takesFrom(s.offer, {c.first}) && takesFrom(all, {c.second});
                },
                [&] { return Bot::onLeftover(s, s.offer); },
                [](const Choice& c) { return quote(Cards{c.first, c.second}); });
            s.hand.push_back(choice.first);
            removeCards(s.hand, {choice.second});
            s.outOfPlay.push_back(choice.second);
            return ",\"take\":" + quote(choice.first) + ",\"discard\":" + quote(choice.second);
        }
        log("botkit: unknown act kind " + quote(s.kind.substr(0, 40)) + "; answering with an empty play");
        return ",\"cards\":[]";
    }
};

}  // namespace botkit

#endif
