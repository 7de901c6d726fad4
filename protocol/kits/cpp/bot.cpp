// A bot for the Arschloch referee (protocol: `referee protocol spec`): edit this file.
//
// It plays the lowest legal play: it leads every card of its lowest rank, follows with the
// lowest rank that beats the table and passes when nothing does; it gives back its lowest
// cards and takes the highest leftover (the kit's defaults, Bot::onGive and Bot::onLeftover).
// The kit (botkit.hpp) reads the referee's lines, keeps the state and writes your answers,
// one flushed line each.
//
// The kit's safety net: when a decision of yours is not allowed (a card you do not hold, the
// wrong number of cards, a pass when you lead) or throws, botkit sends a safe legal choice
// instead and writes a line "botkit: replaced {...}" on stderr; `referee bot check` fails
// the bot and `referee play` warns. Set safetyNet = false while testing to see the referee's
// own verdict (a forfeit that explains the move). Log with botkit::log (stderr): never write
// to std::cout.
#include "botkit.hpp"

struct MyBot : botkit::Bot {
    MyBot() : Bot("{name}", "1") {
        safetyNet = true;  // false: a mistake forfeits the match, with the referee's explanation
    }

    // s.legal lists every legal play, low to high by rank; the pass (an empty play) is last
    // when you may pass. Return the cards to play; an empty list passes.
    botkit::Cards onPlay(const botkit::GameState& s) override {
        const botkit::Cards* best = nullptr;
        for (const botkit::Cards& play : s.legal) {
            if (play.empty()) continue;
            // When leading, legal has one entry per count of a rank: take the largest.
            if (best == nullptr || s.rankIndex(play[0]) < s.rankIndex((*best)[0]) ||
                (s.rankIndex(play[0]) == s.rankIndex((*best)[0]) && play.size() > best->size()))
                best = &play;
        }
        return best != nullptr ? *best : botkit::Cards{};
    }
};

int main() { return MyBot().run(); }
