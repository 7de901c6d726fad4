// js-lowest: the "lowest" strategy in JavaScript, to show the protocol is language-neutral.
// Leads every card of its lowest rank, follows with the lowest rank that beats the table,
// passes otherwise; gives back its lowest cards and takes the highest leftover (kit defaults).
"use strict";

const { Bot } = require("./botkit");

class LowestBot extends Bot {
  onPlay(state) {
    const plays = state.legal.filter((p) => p.length > 0);
    if (plays.length === 0) return [];
    const lowest = Math.min(...plays.map((p) => state.rankIndex(p[0])));
    // When leading, `legal` has one entry per count of a rank: take the largest.
    return plays
      .filter((p) => state.rankIndex(p[0]) === lowest)
      .reduce((a, b) => (b.length > a.length ? b : a));
  }
}

new LowestBot("js-lowest", "1").run();
