// cpp-lowest: the "lowest" strategy in C++, built by `make` (bot.toml's build).
// Leads every card of its lowest rank, follows with the lowest rank that beats the table,
// passes otherwise; gives back its lowest cards and takes the highest leftover (kit
// defaults). The same play as sample_bots/lowest.
#include "botkit.hpp"

struct MyBot : botkit::Bot {
    MyBot() : Bot("cpp-lowest", "1") {
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
