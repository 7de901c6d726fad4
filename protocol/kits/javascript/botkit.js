// botkit.js: a small base for Arschloch / Président bots speaking protocol v1 (Node.js >= 14).
//
// Copy this one file next to your bot; it uses only Node's standard library.
//
//   const { Bot } = require("./botkit");
//   class MyBot extends Bot {
//     onPlay(state) { return state.leading ? [state.sortCards(state.hand)[0]] : []; }
//   }
//   new MyBot("my-bot").run();
//
// run() reads one JSON message per line from stdin, keeps a GameState up to date, calls your
// methods when the referee asks for a decision, writes one reply line per request and exits
// on "bye" or end of input. Unknown message types and fields are ignored. Log with log()
// (stderr); stdout is only for replies.
//
// The safety net: if a decision throws or is not allowed, the kit answers with a safe legal
// choice instead, and writes one marker line on stderr (MARKER, then a JSON object; see
// protocol/SPEC.md, "the kits' safety net"). The referee counts them: `referee bot check`
// fails a bot whose decisions were replaced, `referee play` and the tournament pages warn.
// Set bot.safetyNet = false to get the referee's own verdict (a forfeit) while testing.
"use strict";

const readline = require("readline");

const PROTOCOL = 1;
/** Starts the stderr line the safety net writes for each decision it replaces. */
const MARKER = "botkit: replaced ";
const ROLES_GIVING_BACK = ["president", "vice_president"];

function log(...parts) {
  process.stderr.write(parts.join(" ") + "\n");
}

/**
 * A seeded generator of numbers in [0, 1) (sfc32), like Math.random() but repeatable: the
 * same seed (a whole number, or a string) gives the same numbers on every machine.
 */
function seededRandom(seed) {
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = 1;
  const text = String(seed);
  for (let i = 0; i < text.length; i++) {
    a = Math.imul(a ^ text.charCodeAt(i), 0x85ebca6b);
    b = Math.imul(b ^ a, 0xc2b2ae35);
    c = (c + (b >>> 13)) | 0;
  }
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 15; i++) next();
  return next;
}

/** The rank token of a card: "10H" -> "10". */
function rankOf(card) {
  return card.slice(0, -1);
}

/** The suit letter of a card: "10H" -> "H". */
function suitOf(card) {
  return card.slice(-1);
}

/** Cards sorted low to high by `ranks` (low -> high), then by suit order. */
function sortCards(cards, ranks, suits = []) {
  const key = (c) => [ranks.indexOf(rankOf(c)), suits.indexOf(suitOf(c))];
  return [...cards].sort((a, b) => {
    const [ra, sa] = key(a);
    const [rb, sb] = key(b);
    return ra - rb || sa - sb;
  });
}

/** A Map rank -> cards for the ranks present, low to high (cards in suit order). */
function groupsByRank(cards, ranks, suits = []) {
  const groups = new Map();
  for (const card of sortCards(cards, ranks, suits)) {
    const r = rankOf(card);
    if (!groups.has(r)) groups.set(r, []);
    groups.get(r).push(card);
  }
  return groups;
}

/** Whether every card of `cards` is in `pool`, counting duplicates. */
function takesFrom(pool, cards) {
  const left = [...pool];
  for (const c of cards) {
    const i = left.indexOf(c);
    if (i < 0) return false;
    left.splice(i, 1);
  }
  return true;
}

/** The sorted rank tokens of a play, to compare plays regardless of suits. */
function rankKey(cards) {
  return cards.map(rankOf).sort().join(",");
}

/**
 * Everything a bot can know, kept up to date from the messages it receives. The hand is
 * tracked from round_start, received cards and your own decisions, and replaced by the
 * `hand` of every act (the referee's copy wins).
 */
class GameState {
  constructor() {
    this.time = {};
    this.resetMatch();
  }

  resetMatch() {
    this.match = null;
    this.seat = 0;
    this.players = [];
    this.rules = {};
    this.ranks = [];
    this.suits = [];
    this.bankMs = 0;
    this.scores = [];
    this.standings = null;
    this.faulted = new Set();
    this.resetRound();
  }

  resetRound() {
    this.round = 0;
    this.dealer = 0;
    this.hand = [];
    this.handSizes = this.players.map(() => 0);
    this.roles = null;
    this.leftovers = [];
    this.played = [];
    this.outOfPlay = [];
    this.places = new Map();
    this.lastPlaces = null;
    this.requestId = null;
    this.kind = null;
    this.legal = [];
    this._given = null;
    this.newTrick(null);
  }

  newTrick(leader) {
    this.leader = leader;
    this.top = [];
    this.count = 0;
    this.lastPlayer = null;
    this.passed = new Set();
    this.trickPassed = [];
  }

  /** True when you are asked to play and there is nothing to beat. */
  get leading() {
    return this.top.length === 0;
  }

  /** Position of a rank (or a card's rank) in the order low -> high; -1 if unknown. */
  rankIndex(cardOrRank) {
    const i = this.ranks.indexOf(cardOrRank);
    return i >= 0 ? i : this.ranks.indexOf(rankOf(cardOrRank));
  }

  sortCards(cards) {
    return sortCards(cards, this.ranks, this.suits);
  }

  groupsByRank(cards = this.hand) {
    return groupsByRank(cards, this.ranks, this.suits);
  }

  /** Whether `rank` may be played on `topRank` (equal only under skip_next). */
  beats(rank, topRank) {
    const d = this.rankIndex(rank) - this.rankIndex(topRank);
    return this.rules.equal_rank === "skip_next" ? d >= 0 : d > 0;
  }

  forbiddenFinish(rank) {
    return (this.rules.no_finish_on || []).includes(rank);
  }

  /** Cards of `rank` that may still be in another player's hand (an upper bound). */
  unseen(rank) {
    const count = (list) => list.filter((c) => rankOf(c) === rank).length;
    const known =
      count(this.hand) + count(this.played) + count(this.outOfPlay) + count(this.leftovers);
    return Math.max(0, this.suits.length - known);
  }

  /** True when no other player can beat `count` cards of `rank` any more. */
  isBoss(rank, count = 1) {
    let start = this.rankIndex(rank);
    if (this.rules.equal_rank !== "skip_next") start += 1;
    return this.ranks.slice(start).every((r) => this.unseen(r) < count);
  }

  /** Whether `cards` is a play the referee accepts now (cards in hand, in `legal`). */
  isLegalPlay(cards) {
    if (!Array.isArray(cards) || !takesFrom(this.hand, cards)) return false;
    const key = rankKey(cards);
    return this.legal.some((p) => rankKey(p) === key);
  }

  _remove(cards) {
    for (const c of cards) {
      const i = this.hand.indexOf(c);
      if (i >= 0) this.hand.splice(i, 1);
    }
  }

  _size(seat, delta) {
    if (Number.isInteger(seat) && seat >= 0 && seat < this.handSizes.length) {
      this.handSizes[seat] = delta === null ? 0 : Math.max(0, this.handSizes[seat] + delta);
    }
  }

  /** Update the state from one referee message (unknown types are ignored). */
  apply(msg) {
    switch (msg.type) {
      case "hello":
        this.time = msg.time || {};
        break;
      case "match_start":
        this.resetMatch();
        this.match = msg.match;
        this.seat = msg.seat || 0;
        this.players = [...(msg.players || [])];
        this.rules = { ...(msg.rules || {}) };
        this.ranks = [...(this.rules.ranks || [])];
        this.suits = [...(this.rules.suits || [])];
        this.bankMs = msg.bank_ms || 0;
        this.scores = this.players.map(() => 0);
        this.resetRound();
        break;
      case "round_start":
        this.resetRound();
        this.round = msg.round;
        this.dealer = msg.dealer;
        this.hand = [...(msg.hand || [])];
        this.handSizes = [...(msg.hand_sizes || [])];
        this.roles = msg.roles || null;
        this.scores = [...(msg.scores || this.scores)];
        this.leftovers = [...(msg.leftovers || [])];
        break;
      case "act":
        this.requestId = msg.id;
        this.kind = msg.kind;
        if (Array.isArray(msg.hand)) this.hand = [...msg.hand];
        // Protocol 1.1: the referee's own counts replace the kit's bookkeeping.
        if (Array.isArray(msg.counts) && msg.counts.length === this.handSizes.length) {
          this.handSizes = msg.counts.map((n) => (Number.isInteger(n) ? n : 0));
        }
        if (msg.kind === "play") {
          const trick = msg.trick || {};
          this.leader = trick.leader;
          this.top = [...(trick.top || [])];
          this.count = trick.count || this.top.length;
          this.trickPassed = [...(msg.passed || [])];
          this.legal = (msg.legal || []).map((p) => [...p]);
          if (msg.bank_ms !== undefined) this.bankMs = msg.bank_ms;
        }
        break;
      case "played": {
        const cards = [...(msg.cards || [])];
        this.played.push(...cards);
        if (msg.seat === this.seat) this._remove(cards);
        this._size(msg.seat, -cards.length);
        this.top = cards;
        this.count = cards.length;
        this.lastPlayer = msg.seat;
        break;
      }
      case "passed":
        this.passed.add(msg.seat);
        break;
      case "trick_end":
        this.newTrick(msg.leader);
        break;
      case "finished":
        this.places.set(msg.seat, msg.place);
        break;
      case "eliminated":
        this.places.set(msg.seat, msg.place);
        this.outOfPlay.push(...(msg.cards || []));
        if (msg.seat === this.seat) this.hand = [];
        this._size(msg.seat, null);
        break;
      case "exchanged": {
        this._size(msg.from, -msg.count);
        this._size(msg.to, msg.count);
        if (msg.from !== this.seat) break;
        if (this._given !== null) {
          this._given = null; // chosen by us and removed when we replied
          break;
        }
        const mine = this.sortCards(this.hand);
        const returning = this.roles && ROLES_GIVING_BACK.includes(this.roles[this.seat]);
        this._remove(returning ? mine.slice(0, msg.count) : mine.slice(mine.length - msg.count));
        break;
      }
      case "received":
        this.hand.push(...(msg.cards || []));
        break;
      case "leftover_taken": {
        const i = this.leftovers.indexOf(msg.card);
        if (i >= 0) this.leftovers.splice(i, 1);
        break;
      }
      case "fault":
        this.faulted.add(msg.seat);
        break;
      case "round_end":
        this.scores = [...(msg.scores || this.scores)];
        this.lastPlaces = [...(msg.places || [])];
        break;
      case "match_end":
        this.standings = msg.standings;
        break;
      default:
        break;
    }
  }
}

/** The safety net's marker as one line of JSON, whatever the decision was made of. */
function markerJson(marker) {
  try {
    const line = JSON.stringify(marker);
    if (line.length <= 1000) return line;
  } catch (err) {
    // a cycle or a BigInt: the decision is shown as text below
  }
  return JSON.stringify({ ...marker, decided: String(marker.decided).slice(0, 200) });
}

const NOT_EVENT_HOOKS = new Set(["act", "hello", "play", "give", "leftover", "event"]);

function hookName(type) {
  // "round_end" -> "onRoundEnd"
  return "on" + String(type).split("_").map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
}

/**
 * Base class of a bot. Override the decisions:
 *   onPlay(state) -> cards ([] passes; not allowed when leading)
 *   onGive(state, to, count) -> count cards to give back
 *   onLeftover(state, offer) -> [take, discard]
 * and any event hook onPlayed(state, msg), onRoundEnd(state, msg), ... (called after the state
 * is updated), or onEvent(state, msg) for every message.
 */
class Bot {
  constructor(name = "botkit-bot", version = null) {
    this.name = name;
    this.version = version;
    this.safetyNet = true;
    this.state = new GameState();
    // this.random() is in [0, 1), reseeded at every match_start (set reseed = false to keep it).
    this.reseed = true;
    this.random = seededRandom(0);
  }

  /** Lead the single lowest card; otherwise pass (the referee's fallback policy). */
  onPlay(state) {
    return state.leading ? [state.sortCards(state.hand)[0]] : [];
  }

  /** Give back the lowest cards. */
  onGive(state, to, count) {
    return state.sortCards(state.hand).slice(0, count);
  }

  /** Take the highest offered card; discard the lowest card afterwards. */
  onLeftover(state, offer) {
    const take = state.sortCards(offer)[offer.length - 1];
    return [take, state.sortCards([...state.hand, take])[0]];
  }

  onEvent(state, msg) {}

  /** Process one message; return the reply object for a request, else null. */
  handle(msg) {
    const state = this.state;
    try {
      state.apply(msg);
    } catch (err) {
      // A malformed message must not take the bot down.
      log(`botkit: could not follow a message; continuing\n${err && err.stack}`);
    }
    if (msg.type === "match_start" && this.reseed) {
      // Protocol 1.2's seed: the same for this seat on the same cards, so both halves of a
      // `referee compare` pair draw alike. Before 1.2, the match id and seat.
      const seed = Number.isSafeInteger(msg.seed) ? msg.seed : `${msg.match}:${msg.seat}`;
      this.random = seededRandom(seed);
    }
    this.onEvent(state, msg);
    if (!NOT_EVENT_HOOKS.has(msg.type)) {
      const hook = this[hookName(msg.type)];
      if (typeof hook === "function") hook.call(this, state, msg);
    }
    if (msg.type === "hello") {
      const reply = { id: msg.id, type: "ready", name: this.name };
      if (this.version !== null) reply.version = String(this.version);
      return reply;
    }
    if (msg.type === "act") return this._act(msg);
    return null;
  }

  /** Your decision, or (the safety net) a safe one, said on stderr with a marker line. */
  _decide(msg, decide, isOk, fallback) {
    if (!this.safetyNet) return decide();
    let choice = null;
    let threw = false;
    let error;
    try {
      choice = decide();
      if (isOk(choice)) return choice;
    } catch (err) {
      threw = true;
      error = err;
    }
    const safe = fallback();
    const decided = choice === undefined ? null : choice;
    const marker = { id: msg.id, kind: msg.kind, decided, sent: safe };
    marker.why = threw ? "raised" : "not allowed";
    if (threw) marker.error = String(error).slice(0, 200);
    log(MARKER + markerJson(marker));
    if (threw && error && error.stack) log(String(error.stack));
    return safe;
  }

  _act(msg) {
    const state = this.state;
    if (msg.kind === "play") {
      const cards = this._decide(
        msg,
        () => this.onPlay(state),
        (c) => state.isLegalPlay(c),
        () => this._safePlay(),
      );
      state._remove(cards);
      return { id: msg.id, cards: [...cards] };
    }
    if (msg.kind === "give") {
      const cards = this._decide(
        msg,
        () => this.onGive(state, msg.to, msg.count),
        (c) => Array.isArray(c) && c.length === msg.count && takesFrom(state.hand, c),
        () => Bot.prototype.onGive.call(this, state, msg.to, msg.count),
      );
      state._remove(cards);
      state._given = [...cards];
      return { id: msg.id, cards: [...cards] };
    }
    if (msg.kind === "leftover") {
      const offer = [...(msg.offer || [])];
      const [take, discard] = this._decide(
        msg,
        () => this.onLeftover(state, offer),
        (c) => Array.isArray(c) && offer.includes(c[0]) && [...state.hand, c[0]].includes(c[1]),
        () => Bot.prototype.onLeftover.call(this, state, offer),
      );
      state.hand.push(take);
      state._remove([discard]);
      state.outOfPlay.push(discard);
      return { id: msg.id, take, discard };
    }
    log(`botkit: unknown act kind ${JSON.stringify(msg.kind)}; answering with an empty play`);
    return { id: msg.id, cards: [] };
  }

  _safePlay() {
    const state = this.state;
    if (!state.leading && state.legal.some((p) => p.length === 0)) return [];
    if (state.legal.length > 0) return [...state.legal[0]];
    return Bot.prototype.onPlay.call(this, state);
  }

  /** Serve the referee until "bye" or end of input. */
  run(input = process.stdin, output = process.stdout) {
    const rl = readline.createInterface({ input, crlfDelay: Infinity });
    rl.on("line", (line) => {
      let msg;
      try {
        msg = JSON.parse(line);
      } catch (err) {
        log(`botkit: ignoring a line that is not JSON: ${line.slice(0, 80)}`);
        return;
      }
      if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return;
      const reply = this.handle(msg);
      if (reply !== null) output.write(JSON.stringify(reply) + "\n");
      if (msg.type === "bye") {
        rl.close();
      }
    });
    rl.on("close", () => process.exit(0));
  }
}

module.exports = {
  PROTOCOL,
  MARKER,
  Bot,
  GameState,
  log,
  seededRandom,
  rankOf,
  suitOf,
  sortCards,
  groupsByRank,
  takesFrom,
  rankKey,
};
