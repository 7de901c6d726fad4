// The replay viewer: steps through a match log (PROTOCOL.md "Match log") with every hand
// face up. The log arrives as data in window.refereeLog (a script beside the page, because
// browsers refuse fetch() of local files). Everything in it that a bot chose (names, fault
// replies) is written with textContent only; this file never builds HTML from data.
//
// What the bots wrote to stderr arrives the same way, in window.refereeStderr (one entry
// per seat, its pieces as [log line, text], the line numbered from 1 as in the #L address):
// a panel per seat shows what it wrote up to the position shown, the pieces it wrote
// toward the line shown marked.
//
// Hands are kept by applying the events: a deal sets them; played, exchange, leftover and
// eliminated change them. A position is computed from the start of its round (each deal
// gives every hand), so any jump costs one round's events, however long the match.
(function () {
  "use strict";

  const lines = window.refereeLog;
  const root = document.getElementById("replay");
  if (!root) return;
  if (!Array.isArray(lines) || lines.length < 2 || !lines[0] || lines[0].type !== "log") {
    document.getElementById("narration").textContent = "This log cannot be shown.";
    return;
  }

  const header = lines[0];
  const rules = header.rules || {};
  const players = Array.isArray(header.players) ? header.players.map(String) : [];
  const n = players.length;
  const last = lines.length - 1;

  // -- cards ----------------------------------------------------------------------------
  const SPANISH = rules.deck === "spanish40";
  const SUITS = SPANISH
    ? { O: ["⊙", "oros"], C: ["∪", "copas"], E: ["⚔", "espadas"], B: ["♣", "bastos"] }
    : { C: ["♣", "clubs"], S: ["♠", "spades"], H: ["♥", "hearts"], D: ["♦", "diamonds"] };
  const rankOrder = Array.isArray(rules.ranks) ? rules.ranks : [];
  const suitOrder = Array.isArray(rules.suits) ? rules.suits : Object.keys(SUITS);

  function cardKey(card) {
    const text = String(card);
    const r = rankOrder.indexOf(text.slice(0, -1));
    const s = suitOrder.indexOf(text.slice(-1));
    return (r < 0 ? 99 : r) * 8 + (s < 0 ? 7 : s);
  }

  function sortCards(cards) {
    return cards.slice().sort((a, b) => cardKey(a) - cardKey(b));
  }

  function cardText(card) {
    const text = String(card);
    const suit = SUITS[text.slice(-1)];
    return suit ? text.slice(0, -1) + suit[0] : text;
  }

  function cardsText(cards) {
    return cards && cards.length ? sortCards(cards).map(cardText).join(" ") : "—";
  }

  function cardElement(card, extra) {
    const text = String(card);
    const suit = SUITS[text.slice(-1)];
    const el = document.createElement("span");
    el.className = "card" + (suit ? " s-" + (SPANISH ? "es-" : "") + text.slice(-1) : "");
    if (extra) el.className += " " + extra;
    const rank = document.createElement("span");
    rank.className = "rank";
    rank.textContent = suit ? text.slice(0, -1) : text;
    el.appendChild(rank);
    if (suit) {
      const symbol = document.createElement("span");
      symbol.className = "suit";
      symbol.textContent = suit[0];
      el.appendChild(symbol);
      el.title = text.slice(0, -1) + " of " + suit[1];
    }
    return el;
  }

  function cardRow(cards, extra) {
    const row = document.createElement("span");
    row.className = "cards";
    sortCards(cards || []).forEach((c) => row.appendChild(cardElement(c, extra)));
    return row;
  }

  // -- words --------------------------------------------------------------------------------
  function name(seat) {
    return seat >= 0 && seat < n ? players[seat] : "seat " + seat;
  }

  function ordinal(k) {
    const s = { 1: "st", 2: "nd", 3: "rd" }[k];
    return k + (s && (k < 11 || k > 13) ? s : "th");
  }

  const REASONS = {
    all_passed: "everyone else passed",
    top_card: "top card: nobody holds a higher rank",
  };

  function describe(row) {
    switch (row.type) {
      case "deal":
        return "Round " + row.round + ": " + name(row.dealer) + " deals." +
          (row.leftovers && row.leftovers.length ? " Leftovers: " + cardsText(row.leftovers) + "." : "");
      case "leftover":
        return name(row.seat) + " takes the leftover " + cardText(row.take) + " and discards " +
          cardText(row.discard) + " (out of play).";
      case "exchange":
        return name(row.from) + " gives " + cardsText(row.cards) + " to " + name(row.to) + ".";
      case "played":
        return name(row.seat) + " plays " + cardsText(row.cards) + ".";
      case "passed":
        return name(row.seat) + " passes.";
      case "skipped":
        return name(row.seat) + " is skipped (an equal rank was played).";
      case "trick_end":
        return name(row.winner) + " wins the trick (" + (REASONS[row.reason] || String(row.reason)) +
          "); " + name(row.leader) + " leads.";
      case "finished":
        return name(row.seat) + " is out of cards: " + ordinal(row.place) + ".";
      case "eliminated":
        return name(row.seat) + " holds only " + cardsText(row.cards) +
          " and may not finish on it: out, " + ordinal(row.place) + ".";
      case "fault":
        if (row.kind === "left") {
          return name(row.seat) + " left the match; the fallback policy plays on for it.";
        }
        return name(row.seat) + " forfeits (" + row.kind + ": " + row.detail +
          "); the fallback policy plays on for it.";
      case "round_end":
        return "Round over: " + (row.places || []).map((s, i) => ordinal(i + 1) + " " + name(s) +
          " (" + signed(row.points[s]) + ")").join(", ") + ".";
      case "match_end":
        return "Match over: " + (row.standings || []).map((st) => ordinal(st.place) + " " +
          name(st.seat) + " " + st.score).join(", ") + ".";
      default:
        return String(row.type);
    }
  }

  function signed(x) {
    return (x > 0 ? "+" : "") + x;
  }

  // -- the log's skeleton: rounds, tricks, and what carries from one round to the next ----
  const rounds = []; // {at, number, scores, faults, prevPlaces}
  const trickEnds = [];
  (function index() {
    let scores = new Array(n).fill(0);
    let faults = {};
    let prevPlaces = null;
    for (let i = 1; i < lines.length; i++) {
      const row = lines[i];
      if (row.type === "deal") {
        rounds.push({ at: i, number: row.round, scores: scores.slice(), faults: Object.assign({}, faults), prevPlaces: prevPlaces });
      } else if (row.type === "trick_end") {
        trickEnds.push(i);
      } else if (row.type === "round_end") {
        scores = (row.scores || scores).slice();
        prevPlaces = row.places || null;
      } else if (row.type === "fault") {
        faults[row.seat] = row;
      }
    }
  })();

  function roundIndexAt(i) {
    let lo = 0;
    let hi = rounds.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (rounds[mid].at <= i) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  // -- the state at a position ------------------------------------------------------------
  function stateAt(i) {
    const r = roundIndexAt(i);
    const round = r >= 0 ? rounds[r] : null;
    const state = {
      round: round ? round.number : 0,
      dealer: null,
      hands: Array.from({ length: n }, () => []),
      offered: [],
      out: [],
      trick: [],
      trickOver: false,
      tricks: 0,
      places: {},
      faults: round ? Object.assign({}, round.faults) : {},
      scores: round ? round.scores.slice() : new Array(n).fill(0),
      prevPlaces: round ? round.prevPlaces : null,
      roundEnd: null,
      matchEnd: null,
      actor: null,
      fresh: [],
    };
    const from = round ? round.at : 1;
    for (let j = from; j <= i; j++) apply(state, lines[j], j === i);
    return state;
  }

  function take(hand, cards) {
    (cards || []).forEach((c) => {
      const k = hand.indexOf(c);
      if (k >= 0) hand.splice(k, 1);
    });
  }

  function apply(s, row, current) {
    if (s.trickOver && (row.type === "played" || row.type === "passed" || row.type === "skipped")) {
      s.trick = [];
      s.trickOver = false;
    }
    s.actor = null;
    s.fresh = [];
    switch (row.type) {
      case "deal":
        s.dealer = row.dealer;
        s.hands = (row.hands || []).map((h) => h.slice());
        while (s.hands.length < n) s.hands.push([]);
        s.offered = s.prevPlaces && rules.leftovers === "swap" ? (row.leftovers || []).slice() : [];
        s.out = s.offered.length ? [] : (row.leftovers || []).slice();
        break;
      case "leftover":
        take(s.offered, [row.take]);
        s.hands[row.seat].push(row.take);
        take(s.hands[row.seat], [row.discard]);
        s.out.push(row.discard);
        s.actor = row.seat;
        if (current) s.fresh = [row.take];
        break;
      case "exchange":
        take(s.hands[row.from], row.cards);
        s.hands[row.to] = s.hands[row.to].concat(row.cards || []);
        s.actor = row.from;
        if (current) s.fresh = (row.cards || []).slice();
        break;
      case "played":
        take(s.hands[row.seat], row.cards);
        s.trick.push({ seat: row.seat, kind: "played", cards: row.cards || [] });
        s.actor = row.seat;
        break;
      case "passed":
      case "skipped":
        s.trick.push({ seat: row.seat, kind: row.type, cards: [] });
        s.actor = row.seat;
        break;
      case "trick_end":
        s.trickOver = true;
        s.tricks += 1;
        s.winner = row.winner;
        s.actor = row.winner;
        break;
      case "finished":
        s.places[row.seat] = row.place;
        s.actor = row.seat;
        break;
      case "eliminated":
        take(s.hands[row.seat], row.cards);
        s.out = s.out.concat(row.cards || []);
        s.places[row.seat] = row.place;
        s.actor = row.seat;
        break;
      case "fault":
        s.faults[row.seat] = row;
        s.actor = row.seat;
        break;
      case "round_end":
        s.roundEnd = row;
        s.scores = (row.scores || s.scores).slice();
        (row.places || []).forEach((seat, k) => { s.places[seat] = k + 1; });
        break;
      case "match_end":
        s.matchEnd = row;
        break;
    }
  }

  // -- drawing -------------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  const el = (tag, className, text) => {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  function drawSeats(s, row) {
    const box = $("seats");
    box.replaceChildren();
    for (let seat = 0; seat < n; seat++) {
      const div = el("div", "seat");
      if (s.actor === seat) div.classList.add("actor");
      if (s.faults[seat]) div.classList.add("forfeited");
      const head = el("div", "seat-head");
      head.appendChild(el("span", "seat-no", String(seat)));
      head.appendChild(el("span", "seat-name", name(seat)));
      head.appendChild(el("span", "seat-score", s.scores[seat] + " pts"));
      div.appendChild(head);
      const badges = el("div", "badges");
      if (s.dealer === seat) badges.appendChild(el("span", "badge dealer", "dealer"));
      if (s.prevPlaces) {
        const k = s.prevPlaces.indexOf(seat);
        if (k >= 0) badges.appendChild(el("span", "badge prev", "last round " + ordinal(k + 1)));
      }
      if (s.places[seat]) badges.appendChild(el("span", "badge place", "out: " + ordinal(s.places[seat])));
      if (s.faults[seat]) {
        const f = s.faults[seat];
        const b = el("span", "badge forfeit", f.kind === "left" ? "left the match" : "forfeit: " + f.kind);
        b.title = String(f.detail);
        badges.appendChild(b);
      }
      const mine = s.trick.filter((t) => t.seat === seat).pop();
      if (mine && mine.kind !== "played") badges.appendChild(el("span", "badge " + mine.kind, mine.kind));
      div.appendChild(badges);
      const hand = s.hands[seat] || [];
      const cards = cardRow(hand);
      if (s.fresh.length && row && (row.to === seat || row.seat === seat)) {
        Array.from(cards.children).forEach((c, k) => {
          if (s.fresh.includes(sortCards(hand)[k])) c.classList.add("fresh");
        });
      }
      div.appendChild(cards);
      div.appendChild(el("div", "count", hand.length + (hand.length === 1 ? " card" : " cards")));
      box.appendChild(div);
    }
  }

  function drawTable(s) {
    const trick = $("trick");
    trick.replaceChildren();
    if (!s.trick.length) trick.appendChild(el("p", "empty", s.round ? "No card on the table." : ""));
    s.trick.forEach((t, k) => {
      const line = el("div", "play " + t.kind);
      const isTop = t.kind === "played" && k === s.trick.map((x) => x.kind).lastIndexOf("played");
      if (isTop) line.classList.add("top");
      if (s.trickOver && t.seat === s.winner && isTop) line.classList.add("winner");
      line.appendChild(el("span", "who", name(t.seat)));
      if (t.kind === "played") line.appendChild(cardRow(t.cards));
      else line.appendChild(el("span", "what", t.kind === "passed" ? "passes" : "is skipped"));
      trick.appendChild(line);
    });
    if (s.trickOver) trick.appendChild(el("p", "trick-winner", name(s.winner) + " wins the trick"));
    const pile = $("pile");
    pile.replaceChildren();
    if (s.offered.length) {
      pile.appendChild(el("span", "pile-label", "leftovers offered: "));
      pile.appendChild(cardRow(s.offered));
    }
    if (s.out.length) {
      pile.appendChild(el("span", "pile-label", "out of play: "));
      pile.appendChild(cardRow(s.out, "dim"));
    }
  }

  function drawResult(s) {
    const box = $("round-result");
    box.replaceChildren();
    if (s.matchEnd) {
      box.appendChild(el("h3", "", "Final standings"));
      const table = el("table", "final-standings");
      const head = el("tr");
      ["place", "bot", "points", ""].forEach((h) => head.appendChild(el("th", "", h)));
      table.appendChild(head);
      (s.matchEnd.standings || []).forEach((st) => {
        const tr = el("tr", st.forfeit ? "forfeit" : "");
        tr.appendChild(el("td", "num", ordinal(st.place)));
        tr.appendChild(el("td", "", name(st.seat)));
        tr.appendChild(el("td", "num", String(st.score)));
        tr.appendChild(el("td", "", st.forfeit ? "forfeit" : ""));
        table.appendChild(tr);
      });
      box.appendChild(table);
    } else if (s.roundEnd) {
      const r = s.roundEnd;
      box.appendChild(el("h3", "", "Round " + s.round + " over"));
      const list = el("ol", "round-places");
      (r.places || []).forEach((seat) => {
        list.appendChild(el("li", "", name(seat) + "  " + signed(r.points[seat]) + "  (total " + r.scores[seat] + ")"));
      });
      box.appendChild(list);
    }
  }

  function drawFault(row) {
    const narration = $("narration");
    if (row.type !== "fault") return;
    const details = el("div", "fault-evidence");
    details.appendChild(el("span", "", "request id " + (row.id === null || row.id === undefined ? "none" : row.id) +
      (row.elapsed_ms === null || row.elapsed_ms === undefined ? "" : ", after " + row.elapsed_ms + " ms")));
    if (row.reply !== null && row.reply !== undefined) {
      details.appendChild(el("span", "", " · its reply:"));
      details.appendChild(el("pre", "reply", String(row.reply)));
    }
    narration.appendChild(details);
  }

  let logRound = -2;
  function drawRoundLog(i) {
    const r = roundIndexAt(i);
    const list = $("round-log");
    if (r !== logRound) {
      logRound = r;
      list.replaceChildren();
      const from = r >= 0 ? rounds[r].at : 1;
      list.start = from + 1; // numbered by log line, as the position and the #L address
      const to = r + 1 < rounds.length ? rounds[r + 1].at - 1 : last;
      for (let j = from; j <= to; j++) {
        const item = el("li", "ev-" + lines[j].type, describe(lines[j]));
        item.dataset.at = String(j);
        list.appendChild(item);
      }
    }
    let currentItem = null;
    for (const item of list.children) {
      const on = item.dataset.at === String(i);
      item.classList.toggle("current", on);
      if (on) currentItem = item;
    }
    if (currentItem && list.parentElement.open) {
      const box = list.getBoundingClientRect();
      const at = currentItem.getBoundingClientRect();
      if (at.top < box.top || at.bottom > box.bottom) list.scrollTop += at.top - box.top - 40;
    }
  }

  // -- what the bots wrote to stderr ----------------------------------------------------------
  const output = window.refereeStderr;
  const outputs = [];
  (function buildOutputs() {
    const box = $("outputs");
    if (!box || !output || !Array.isArray(output.seats)) return;
    output.seats.forEach((seat) => {
      const pieces = Array.isArray(seat.pieces)
        ? seat.pieces.filter((p) => Array.isArray(p) && p.length === 2).map((p) => [Number(p[0]), String(p[1])])
        : [];
      const div = el("div", "output");
      div.dataset.seat = String(seat.seat);
      const head = el("div", "output-head");
      head.appendChild(el("span", "seat-no", String(seat.seat)));
      head.appendChild(el("span", "seat-name", String(seat.name)));
      const written = Number(seat.written) || 0;
      const cut = Number(seat.cut) || 0;
      if (written) {
        head.appendChild(el("span", "bytes", bytes(written) + " written in the match" +
          (cut ? ", the last " + bytes(written - cut) + " kept" : "")));
      }
      div.appendChild(head);
      const pre = el("pre", "output-text");
      div.appendChild(pre);
      box.appendChild(div);
      outputs.push({ div: div, pre: pre, pieces: pieces, cut: cut, written: written, shown: -1, at: -1 });
    });
  })();

  function bytes(k) {
    return Number(k).toLocaleString("en-US") + (k === 1 ? " byte" : " bytes");
  }

  // How many of the pieces (in the order written, their lines never decreasing) came
  // toward a line up to `line`.
  function upTo(pieces, line) {
    let lo = 0;
    let hi = pieces.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pieces[mid][0] <= line) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function drawOutputs(i) {
    const line = i + 1;
    outputs.forEach((o) => {
      const k = upTo(o.pieces, line);
      if (k === o.shown && line === o.at) return;
      o.shown = k;
      o.at = line;
      let first = k;
      while (first > 0 && o.pieces[first - 1][0] === line) first--;
      o.pre.replaceChildren();
      if (o.cut && k) o.pre.appendChild(el("span", "cut", "… " + bytes(o.cut) + " cut …\n"));
      if (!k) o.pre.appendChild(el("span", "quiet", o.written ? "nothing written yet" : "nothing written in the match"));
      const before = o.pieces.slice(0, first).map((p) => p[1]).join("");
      if (before) o.pre.appendChild(document.createTextNode(before));
      const now = o.pieces.slice(first, k).map((p) => p[1]).join("");
      o.div.classList.toggle("wrote", now !== "");
      if (now) {
        const mark = el("mark", "now", now);
        o.pre.appendChild(mark);
        o.pre.scrollTop = Math.max(0, mark.offsetTop - 8); // the pre is positioned
      } else {
        o.pre.scrollTop = o.pre.scrollHeight;
      }
    });
  }

  // -- navigation ------------------------------------------------------------------------------
  let position = 1;
  let timer = null;

  function show(i) {
    position = Math.max(1, Math.min(last, i));
    const row = lines[position];
    const s = stateAt(position);
    const roundNo = s.round ? "round " + s.round : "before the first deal";
    $("position").textContent = roundNo + " · trick " + (s.tricks + (s.trickOver ? 0 : 1)) +
      " · line " + (position + 1) + " of " + lines.length;
    $("narration").textContent = describe(row);
    drawFault(row);
    drawSeats(s, row);
    drawTable(s);
    drawResult(s);
    drawRoundLog(position);
    drawOutputs(position);
    $("scrub").value = String(position);
    const r = roundIndexAt(position);
    if (r >= 0) $("round-select").value = String(r);
    try {
      history.replaceState(null, "", "#L" + (position + 1));
    } catch (e) {
      /* a file:// page may refuse: the viewer works without it */
    }
  }

  function after(list, i) {
    for (const x of list) if (x > i) return x;
    return null;
  }

  function before(list, i) {
    let found = null;
    for (const x of list) if (x < i) found = x;
    return found;
  }

  const moves = {
    start: () => 1,
    end: () => last,
    next: (i) => i + 1,
    prev: (i) => i - 1,
    "next-trick": (i) => after(trickEnds, i) ?? after(rounds.map((r) => r.at), i) ?? last,
    "prev-trick": (i) => before(trickEnds, i) ?? 1,
    "next-round": (i) => after(rounds.map((r) => r.at), i) ?? last,
    "prev-round": (i) => before(rounds.map((r) => r.at), i) ?? 1,
  };

  function go(what) {
    if (what === "play") return toggle();
    stop();
    show(moves[what](position));
  }

  function stop() {
    if (timer !== null) {
      clearInterval(timer);
      timer = null;
      $("play").textContent = "▶ play";
    }
  }

  function toggle() {
    if (timer !== null) return stop();
    if (position >= last) show(1);
    $("play").textContent = "❚❚ pause";
    timer = setInterval(() => {
      if (position >= last) stop();
      else show(position + 1);
    }, Number($("speed").value) || 600);
  }

  // -- wiring ------------------------------------------------------------------------------
  $("suits").textContent = "Suits: " + suitOrder.filter((s) => SUITS[s])
    .map((s) => SUITS[s][0] + " " + SUITS[s][1]).join(", ") + ".";
  document.querySelectorAll("#controls [data-go]").forEach((b) => {
    b.addEventListener("click", () => go(b.dataset.go));
  });
  const select = $("round-select");
  rounds.forEach((r, k) => {
    const option = el("option", "", "round " + r.number);
    option.value = String(k);
    select.appendChild(option);
  });
  select.addEventListener("change", () => {
    stop();
    show(rounds[Number(select.value)].at);
  });
  $("speed").addEventListener("change", () => {
    if (timer !== null) {
      stop();
      toggle();
    }
  });
  const scrub = $("scrub");
  scrub.max = String(last);
  scrub.addEventListener("input", () => {
    stop();
    show(Number(scrub.value));
  });
  $("round-log").addEventListener("click", (e) => {
    const item = e.target.closest("li");
    if (item && item.dataset.at) {
      stop();
      show(Number(item.dataset.at));
    }
  });
  const KEYS = {
    ArrowRight: "next",
    ArrowLeft: "prev",
    ArrowDown: "next-trick",
    ArrowUp: "prev-trick",
    PageDown: "next-round",
    PageUp: "prev-round",
    Home: "start",
    End: "end",
    " ": "play",
  };
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    if (e.key === " " && tag === "BUTTON") return; // space presses the focused button
    const what = KEYS[e.key];
    if (!what) return;
    e.preventDefault();
    go(what);
  });

  function fromHash() {
    const m = /^#L(\d+)$/.exec(location.hash);
    return m ? Number(m[1]) - 1 : 1;
  }
  window.addEventListener("hashchange", () => {
    const i = fromHash();
    if (i !== position) show(i);
  });
  show(fromHash());
})();
