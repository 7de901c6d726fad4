//! botkit.rs: a small base for Arschloch / Président bots speaking protocol v1 (Rust 1.63+).
//!
//! Copy this one file next to your bot; it uses only Rust's standard library, so `rustc`
//! builds the bot without cargo or crates (the kit's Makefile: `rustc --edition 2021 -O`).
//!
//! ```ignore
//! mod botkit;
//! use botkit::{Bot, GameState};
//!
//! struct MyBot;
//! impl Bot for MyBot {
//!     fn name(&self) -> String { "my-bot".to_string() }
//!     fn on_play(&mut self, state: &GameState) -> Vec<String> {
//!         if state.leading() { vec![state.sort_cards(&state.hand)[0].clone()] } else { vec![] }
//!     }
//! }
//! fn main() { botkit::run(&mut MyBot); }
//! ```
//!
//! `run` reads one JSON message per line from stdin (`BufRead::read_until`, a line at a
//! time), keeps a `GameState` up to date, calls your methods when the referee asks for a
//! decision, writes one reply line per request and flushes it at once, and returns on `bye`
//! or end of input. Unknown message types and fields are ignored. Log with `log` (stderr);
//! stdout is only for replies, so never `println!` there yourself.
//!
//! The safety net: if a decision panics, or returns cards that are not a legal play, the kit
//! answers with a safe legal choice instead, so a bug costs a bad move, not a forfeit. It
//! never hides the bug: each time it writes one marker line on stderr (`MARKER`, then a JSON
//! object; protocol/SPEC.md, "the kits' safety net"), which the referee counts: `referee bot
//! check` fails a bot whose decisions were replaced. Return `false` from `safety_net` to get
//! the referee's own verdict (a forfeit that explains the move) while testing.
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

pub const PROTOCOL: i64 = 1;
/// Starts the stderr line the safety net writes for each decision it replaces.
pub const MARKER: &str = "botkit: replaced ";
const ROLES_GIVING_BACK: [&str; 2] = ["president", "vice_president"];
/// Deeper input is refused rather than parsed: the recursion must not exhaust the stack.
const MAX_DEPTH: usize = 200;

/// Write a line to stderr (the bot's log).
pub fn log(text: &str) {
    eprintln!("{}", text);
}

// ------------------------------------------------------------------------------- JSON

/// A JSON value. Objects keep their keys in the order read.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

static NULL: Json = Json::Null;

impl Json {
    /// Parse one JSON text; `Err` says what is wrong and where.
    pub fn parse(text: &str) -> Result<Json, String> {
        let mut parser = Parser { bytes: text.as_bytes(), pos: 0 };
        parser.skip_space();
        let value = parser.value(0)?;
        parser.skip_space();
        if parser.pos != parser.bytes.len() {
            return Err(format!("unexpected text at byte {}", parser.pos));
        }
        Ok(value)
    }

    /// The member `key` of an object; `Json::Null` when absent or not an object.
    pub fn get(&self, key: &str) -> &Json {
        if let Json::Obj(members) = self {
            for (k, v) in members {
                if k == key {
                    return v;
                }
            }
        }
        &NULL
    }

    pub fn has(&self, key: &str) -> bool {
        matches!(self, Json::Obj(m) if m.iter().any(|(k, _)| k == key))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer (booleans and fractions are not).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The items of an array; empty for anything else.
    pub fn items(&self) -> &[Json] {
        match self {
            Json::Arr(items) => items,
            _ => &[],
        }
    }

    /// The strings of an array (other items skipped): a list of cards, ranks or names.
    pub fn strings(&self) -> Vec<String> {
        self.items().iter().filter_map(|v| v.as_str().map(String::from)).collect()
    }

    /// The integers of an array, anything else counted as 0.
    pub fn ints(&self) -> Vec<i64> {
        self.items().iter().map(|v| v.as_i64().unwrap_or(0)).collect()
    }

    /// The value as one line of JSON.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(n) => out.push_str(&n.to_string()),
            Json::Float(x) if x.is_finite() => out.push_str(&format!("{:?}", x)),
            Json::Float(_) => out.push_str("null"), // no NaN or Infinity in JSON
            Json::Str(s) => write_str(s, out),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A JSON array of strings.
pub fn str_array(items: &[String]) -> Json {
    Json::Arr(items.iter().map(|s| Json::Str(s.clone())).collect())
}

/// A JSON object from `(key, value)` pairs.
pub fn object(members: Vec<(&str, Json)>) -> Json {
    Json::Obj(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn skip_space(&mut self) {
        while self.pos < self.bytes.len() && b" \t\r\n".contains(&self.bytes[self.pos]) {
            self.pos += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{} at byte {}", what, self.pos))
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            return true;
        }
        false
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deep");
        }
        match self.bytes.get(self.pos) {
            None => self.fail("unexpected end"),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Json::Str),
            Some(b't') if self.eat("true") => Ok(Json::Bool(true)),
            Some(b'f') if self.eat("false") => Ok(Json::Bool(false)),
            Some(b'n') if self.eat("null") => Ok(Json::Null),
            Some(b'-') | Some(b'0'..=b'9') => self.number(),
            Some(_) => self.fail("unexpected character"),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_space();
        if self.eat("}") {
            return Ok(Json::Obj(members));
        }
        loop {
            self.skip_space();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return self.fail("expected a key");
            }
            let key = self.string()?;
            self.skip_space();
            if !self.eat(":") {
                return self.fail("expected ':'");
            }
            self.skip_space();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_space();
            if self.eat("}") {
                return Ok(Json::Obj(members));
            }
            if !self.eat(",") {
                return self.fail("expected ',' or '}'");
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.eat("]") {
            return Ok(Json::Arr(items));
        }
        loop {
            self.skip_space();
            items.push(self.value(depth + 1)?);
            self.skip_space();
            if self.eat("]") {
                return Ok(Json::Arr(items));
            }
            if !self.eat(",") {
                return self.fail("expected ',' or ']'");
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = match self.bytes.get(self.pos..self.pos + 4) {
            Some(d) => d,
            None => return self.fail("short \\u escape"),
        };
        let text = std::str::from_utf8(digits).unwrap_or("");
        match u32::from_str_radix(text, 16) {
            Ok(n) => {
                self.pos += 4;
                Ok(n)
            }
            Err(_) => self.fail("bad \\u escape"),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = match self.bytes.get(self.pos) {
                Some(b) => *b,
                None => return self.fail("unterminated string"),
            };
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let e = match self.bytes.get(self.pos) {
                        Some(e) => *e,
                        None => return self.fail("unterminated string"),
                    };
                    self.pos += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return self.fail("bad escape"),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b if b < 0x20 => return self.fail("control character in a string"),
                b => out.push(b),
            }
        }
        // The input is a &str and escapes are encoded whole, so the bytes are UTF-8.
        Ok(String::from_utf8(out).unwrap_or_default())
    }

    fn unicode_escape(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) && self.eat("\\u") {
            let second = self.hex4()?;
            if (0xDC00..0xE000).contains(&second) {
                let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return Ok(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            return Ok('\u{fffd}');
        }
        Ok(char::from_u32(first).unwrap_or('\u{fffd}')) // a lone surrogate is no char
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        let mut integral = true;
        while let Some(b) = self.bytes.get(self.pos) {
            match b {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => integral = false,
                _ => break,
            }
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("");
        if integral {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Json::Int(n));
            }
        }
        match text.parse::<f64>() {
            Ok(x) => Ok(Json::Float(x)),
            Err(_) => self.fail("bad number"),
        }
    }
}

// ------------------------------------------------------------------------------ cards

/// The rank token of a card: `"10H"` -> `"10"`, `"QD"` -> `"Q"`.
pub fn rank_of(card: &str) -> &str {
    match card.char_indices().last() {
        Some((i, _)) => &card[..i],
        None => "",
    }
}

/// The suit letter of a card: `"10H"` -> `"H"`.
pub fn suit_of(card: &str) -> &str {
    match card.char_indices().last() {
        Some((i, _)) => &card[i..],
        None => "",
    }
}

/// Whether every card of `cards` is in `pool`, counting duplicates.
pub fn takes_from(pool: &[String], cards: &[String]) -> bool {
    let mut left: Vec<&String> = pool.iter().collect();
    for card in cards {
        match left.iter().position(|c| *c == card) {
            Some(i) => {
                left.remove(i);
            }
            None => return false,
        }
    }
    true
}

/// The sorted rank tokens of a play, to compare plays regardless of suits.
pub fn rank_key(cards: &[String]) -> Vec<String> {
    let mut key: Vec<String> = cards.iter().map(|c| rank_of(c).to_string()).collect();
    key.sort();
    key
}

/// A small seeded generator (splitmix64): the same seed gives the same numbers everywhere.
#[derive(Clone, Debug)]
pub struct Rng {
    state: Cell<u64>,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: Cell::new(seed) }
    }

    pub fn next_u64(&self) -> u64 {
        let s = self.state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in [0, 1).
    pub fn next_f64(&self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A whole number in [0, n); 0 when n is 0.
    pub fn below(&self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }
}

fn text_seed(text: &str) -> u64 {
    // FNV-1a: a stable hash, unlike std's randomly keyed one.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

// ------------------------------------------------------------------------------ state

/// Everything a bot can know, kept up to date from the messages it receives.
///
/// The hand is tracked from `round_start`, `received`, your own plays, gives and leftover
/// choices, and is overwritten by the `hand` of every `act` (the referee's copy wins). Cards
/// you give automatically in an exchange are inferred; the next `act` corrects any guess.
#[derive(Clone, Debug)]
pub struct GameState {
    pub time: Json,
    pub match_id: Option<String>,
    pub seat: i64,
    pub players: Vec<String>,
    /// The match's complete ruleset, as sent (`rules.get("equal_rank")` ...).
    pub rules: Json,
    /// Rank order, low to high.
    pub ranks: Vec<String>,
    pub suits: Vec<String>,
    pub bank_ms: i64,
    /// `match_start`'s seed (protocol 1.2); `random` is seeded from it.
    pub seed: Option<i64>,
    pub scores: Vec<i64>,
    pub standings: Json,
    pub faulted: Vec<i64>,
    pub round: i64,
    pub dealer: i64,
    pub hand: Vec<String>,
    /// Cards each seat holds, by seat (the referee's `counts` on every `act`).
    pub hand_sizes: Vec<i64>,
    pub roles: Option<Vec<String>>,
    pub leftovers: Vec<String>,
    pub played: Vec<String>,
    pub out_of_play: Vec<String>,
    pub places: HashMap<i64, i64>,
    pub last_places: Vec<i64>,
    pub request_id: Option<i64>,
    pub kind: String,
    /// Every legal play of the current `act` of kind `play`.
    pub legal: Vec<Vec<String>>,
    pub leader: Option<i64>,
    /// What must be beaten; empty when you lead.
    pub top: Vec<String>,
    pub count: i64,
    pub last_player: Option<i64>,
    pub passed: Vec<i64>,
    pub trick_passed: Vec<i64>,
    /// A generator reseeded at every `match_start`: `state.random.next_f64()`.
    pub random: Rng,
    given: Option<Vec<String>>,
}

impl GameState {
    pub fn new() -> GameState {
        let mut state = GameState {
            time: Json::Null,
            match_id: None,
            seat: 0,
            players: Vec::new(),
            rules: Json::Null,
            ranks: Vec::new(),
            suits: Vec::new(),
            bank_ms: 0,
            seed: None,
            scores: Vec::new(),
            standings: Json::Null,
            faulted: Vec::new(),
            round: 0,
            dealer: 0,
            hand: Vec::new(),
            hand_sizes: Vec::new(),
            roles: None,
            leftovers: Vec::new(),
            played: Vec::new(),
            out_of_play: Vec::new(),
            places: HashMap::new(),
            last_places: Vec::new(),
            request_id: None,
            kind: String::new(),
            legal: Vec::new(),
            leader: None,
            top: Vec::new(),
            count: 0,
            last_player: None,
            passed: Vec::new(),
            trick_passed: Vec::new(),
            random: Rng::new(0),
            given: None,
        };
        state.reset_match();
        state
    }

    /// Forget the current match (called on `match_start`).
    pub fn reset_match(&mut self) {
        self.match_id = None;
        self.seat = 0;
        self.players.clear();
        self.rules = Json::Null;
        self.ranks.clear();
        self.suits.clear();
        self.bank_ms = 0;
        self.seed = None;
        self.scores.clear();
        self.standings = Json::Null;
        self.faulted.clear();
        self.reset_round();
    }

    /// Forget the current round (called on `round_start`).
    pub fn reset_round(&mut self) {
        self.round = 0;
        self.dealer = 0;
        self.hand.clear();
        self.hand_sizes = vec![0; self.players.len()];
        self.roles = None;
        self.leftovers.clear();
        self.played.clear();
        self.out_of_play.clear();
        self.places.clear();
        self.last_places.clear();
        self.request_id = None;
        self.kind.clear();
        self.legal.clear();
        self.given = None;
        self.new_trick(None);
    }

    /// Start a fresh trick led by `leader`.
    pub fn new_trick(&mut self, leader: Option<i64>) {
        self.leader = leader;
        self.top.clear();
        self.count = 0;
        self.last_player = None;
        self.passed.clear();
        self.trick_passed.clear();
    }

    pub fn n_players(&self) -> usize {
        self.players.len()
    }

    /// True when you are asked to play and there is nothing to beat.
    pub fn leading(&self) -> bool {
        self.top.is_empty()
    }

    /// Position of a rank (or a card's rank) in the order low -> high; -1 if unknown.
    pub fn rank_index(&self, card_or_rank: &str) -> i64 {
        let find = |token: &str| self.ranks.iter().position(|r| r == token);
        match find(card_or_rank).or_else(|| find(rank_of(card_or_rank))) {
            Some(i) => i as i64,
            None => -1,
        }
    }

    fn suit_index(&self, card: &str) -> i64 {
        let suit = suit_of(card);
        self.suits.iter().position(|s| s == suit).map_or(0, |i| i as i64)
    }

    /// Cards sorted low to high in this match's rank order, then suit order.
    pub fn sort_cards(&self, cards: &[String]) -> Vec<String> {
        let mut sorted = cards.to_vec();
        sorted.sort_by_key(|c| (self.rank_index(rank_of(c)), self.suit_index(c)));
        sorted
    }

    /// `(rank, cards)` for the ranks present in `cards`, low to high.
    pub fn groups_by_rank(&self, cards: &[String]) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for card in self.sort_cards(cards) {
            let rank = rank_of(&card).to_string();
            match groups.last_mut() {
                Some((r, list)) if *r == rank => list.push(card),
                _ => groups.push((rank, vec![card])),
            }
        }
        groups
    }

    /// Whether `rank` may be played on `top_rank` (equal only under skip_next).
    pub fn beats(&self, rank: &str, top_rank: &str) -> bool {
        let d = self.rank_index(rank) - self.rank_index(top_rank);
        if self.rules.get("equal_rank").as_str() == Some("skip_next") {
            d >= 0
        } else {
            d > 0
        }
    }

    /// Whether a play emptying the hand may not contain `rank` (`no_finish_on`).
    pub fn forbidden_finish(&self, rank: &str) -> bool {
        self.rules.get("no_finish_on").strings().iter().any(|r| r == rank)
    }

    /// Cards of `rank` that may still be in another player's hand (an upper bound).
    pub fn unseen(&self, rank: &str) -> i64 {
        let count = |list: &[String]| list.iter().filter(|c| rank_of(c) == rank).count() as i64;
        let known = count(&self.hand)
            + count(&self.played)
            + count(&self.out_of_play)
            + count(&self.leftovers);
        (self.suits.len() as i64 - known).max(0)
    }

    /// True when no other player can beat `count` cards of `rank` any more.
    pub fn is_boss(&self, rank: &str, count: i64) -> bool {
        let mut start = self.rank_index(rank);
        if self.rules.get("equal_rank").as_str() != Some("skip_next") {
            start += 1;
        }
        let start = start.max(0) as usize;
        self.ranks.iter().skip(start).all(|r| self.unseen(r) < count)
    }

    /// Whether `cards` is a play the referee accepts now (cards in hand, in `legal`).
    pub fn is_legal_play(&self, cards: &[String]) -> bool {
        if !takes_from(&self.hand, cards) {
            return false;
        }
        let key = rank_key(cards);
        self.legal.iter().any(|p| rank_key(p) == key)
    }

    fn remove(&mut self, cards: &[String]) {
        for card in cards {
            if let Some(i) = self.hand.iter().position(|c| c == card) {
                self.hand.remove(i);
            }
        }
    }

    fn add_size(&mut self, seat: &Json, delta: i64) {
        if let Some(s) = seat.as_i64() {
            if s >= 0 && (s as usize) < self.hand_sizes.len() {
                let n = &mut self.hand_sizes[s as usize];
                *n = (*n + delta).max(0);
            }
        }
    }

    /// Update the state from one referee message (unknown types and fields are ignored).
    pub fn apply(&mut self, msg: &Json) {
        match msg.get("type").as_str().unwrap_or("") {
            "hello" => self.time = msg.get("time").clone(),
            "match_start" => self.on_match_start(msg),
            "round_start" => self.on_round_start(msg),
            "act" => self.on_act(msg),
            "played" => {
                let cards = msg.get("cards").strings();
                self.played.extend(cards.iter().cloned());
                if msg.get("seat").as_i64() == Some(self.seat) {
                    self.remove(&cards);
                }
                self.add_size(msg.get("seat"), -(cards.len() as i64));
                self.count = cards.len() as i64;
                self.top = cards;
                self.last_player = msg.get("seat").as_i64();
            }
            "passed" => self.passed.extend(msg.get("seat").as_i64()),
            "trick_end" => self.new_trick(msg.get("leader").as_i64()),
            "finished" | "eliminated" => {
                let seat = msg.get("seat").as_i64().unwrap_or(-1);
                self.places.insert(seat, msg.get("place").as_i64().unwrap_or(0));
                if msg.get("type").as_str() == Some("eliminated") {
                    self.out_of_play.extend(msg.get("cards").strings());
                    if seat == self.seat {
                        self.hand.clear();
                    }
                    if seat >= 0 && (seat as usize) < self.hand_sizes.len() {
                        self.hand_sizes[seat as usize] = 0;
                    }
                }
            }
            "exchanged" => self.on_exchanged(msg),
            "received" => self.hand.extend(msg.get("cards").strings()),
            "leftover_taken" => {
                if let Some(card) = msg.get("card").as_str() {
                    if let Some(i) = self.leftovers.iter().position(|c| c == card) {
                        self.leftovers.remove(i);
                    }
                }
            }
            "fault" => self.faulted.extend(msg.get("seat").as_i64()),
            "round_end" => {
                if let Json::Arr(_) = msg.get("scores") {
                    self.scores = msg.get("scores").ints();
                }
                self.last_places = msg.get("places").ints();
            }
            "match_end" => self.standings = msg.get("standings").clone(),
            _ => {}
        }
    }

    fn on_match_start(&mut self, msg: &Json) {
        self.reset_match();
        self.match_id = msg.get("match").as_str().map(String::from);
        self.seat = msg.get("seat").as_i64().unwrap_or(0);
        self.players = msg.get("players").strings();
        self.rules = msg.get("rules").clone();
        self.ranks = self.rules.get("ranks").strings();
        self.suits = self.rules.get("suits").strings();
        self.bank_ms = msg.get("bank_ms").as_i64().unwrap_or(0);
        self.seed = msg.get("seed").as_i64();
        self.scores = vec![0; self.players.len()];
        // Protocol 1.2's seed: the same for this seat on the same cards, so both halves of a
        // `referee compare` pair draw alike. Before 1.2, the match id and seat.
        let seed = match self.seed {
            Some(s) => s as u64,
            None => text_seed(&format!("{}:{}", self.match_id.as_deref().unwrap_or(""), self.seat)),
        };
        self.random = Rng::new(seed);
        self.reset_round();
    }

    fn on_round_start(&mut self, msg: &Json) {
        self.reset_round();
        self.round = msg.get("round").as_i64().unwrap_or(0);
        self.dealer = msg.get("dealer").as_i64().unwrap_or(0);
        self.hand = msg.get("hand").strings();
        self.hand_sizes = msg.get("hand_sizes").ints();
        self.roles = match msg.get("roles") {
            Json::Arr(_) => Some(msg.get("roles").strings()),
            _ => None,
        };
        if let Json::Arr(_) = msg.get("scores") {
            self.scores = msg.get("scores").ints();
        }
        self.leftovers = msg.get("leftovers").strings();
    }

    fn on_act(&mut self, msg: &Json) {
        self.request_id = msg.get("id").as_i64();
        self.kind = msg.get("kind").as_str().unwrap_or("").to_string();
        if let Json::Arr(_) = msg.get("hand") {
            self.hand = msg.get("hand").strings();
        }
        let counts = msg.get("counts").items();
        if !counts.is_empty() && counts.len() == self.hand_sizes.len() {
            // Protocol 1.1: the referee's own counts replace the kit's bookkeeping.
            self.hand_sizes = msg.get("counts").ints();
        }
        if self.kind == "play" {
            let trick = msg.get("trick");
            if let Some(leader) = trick.get("leader").as_i64() {
                self.leader = Some(leader);
            }
            self.top = trick.get("top").strings();
            self.count = trick.get("count").as_i64().unwrap_or(self.top.len() as i64);
            self.trick_passed = msg.get("passed").ints();
            self.legal = msg.get("legal").items().iter().map(Json::strings).collect();
            self.bank_ms = msg.get("bank_ms").as_i64().unwrap_or(self.bank_ms);
        }
    }

    fn on_exchanged(&mut self, msg: &Json) {
        let count = msg.get("count").as_i64().unwrap_or(0);
        self.add_size(msg.get("from"), -count);
        self.add_size(msg.get("to"), count);
        if msg.get("from").as_i64() != Some(self.seat) {
            return;
        }
        if self.given.take().is_some() {
            return; // we chose these cards and removed them when replying
        }
        let mine = self.sort_cards(&self.hand);
        let n = (count.max(0) as usize).min(mine.len());
        let seat = self.seat.max(0) as usize;
        let returning = match &self.roles {
            Some(roles) => roles.get(seat).map_or(false, |r| ROLES_GIVING_BACK.contains(&r.as_str())),
            None => false,
        };
        let gone = if returning { &mine[..n] } else { &mine[mine.len() - n..] };
        self.remove(gone);
    }
}

impl Default for GameState {
    fn default() -> GameState {
        GameState::new()
    }
}

// -------------------------------------------------------------------------------- bot

/// The single lowest card when leading, else a pass: the referee's fallback policy.
pub fn default_play(state: &GameState) -> Vec<String> {
    if state.leading() {
        return state.sort_cards(&state.hand).into_iter().take(1).collect();
    }
    Vec::new()
}

/// The `count` lowest cards.
pub fn default_give(state: &GameState, count: usize) -> Vec<String> {
    state.sort_cards(&state.hand).into_iter().take(count).collect()
}

/// The highest offered card, then the lowest card of the hand with it.
pub fn default_leftover(state: &GameState, offer: &[String]) -> (String, String) {
    let take = state.sort_cards(offer).pop().unwrap_or_default();
    let mut hand = state.hand.clone();
    hand.push(take.clone());
    let discard = state.sort_cards(&hand).into_iter().next().unwrap_or_default();
    (take, discard)
}

/// A bot: override the decisions you care about; the defaults are the fallback policy.
pub trait Bot {
    fn name(&self) -> String {
        "botkit-bot".to_string()
    }

    fn version(&self) -> Option<String> {
        None
    }

    /// Whether the kit replaces a decision the rules refuse (see the module's doc).
    fn safety_net(&self) -> bool {
        true
    }

    /// Cards to play (`[]` passes; not allowed when leading).
    fn on_play(&mut self, state: &GameState) -> Vec<String> {
        default_play(state)
    }

    /// `count` cards of your hand to give back to seat `to`.
    fn on_give(&mut self, state: &GameState, to: i64, count: usize) -> Vec<String> {
        let _ = to;
        default_give(state, count)
    }

    /// `(take, discard)`: one offered card to take, then one card to discard.
    fn on_leftover(&mut self, state: &GameState, offer: &[String]) -> (String, String) {
        default_leftover(state, offer)
    }

    /// Called for every message after the state is updated.
    fn on_event(&mut self, state: &GameState, msg: &Json) {
        let _ = (state, msg);
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        return s.to_string();
    }
    if let Some(s) = payload.downcast_ref::<String>() {
        return s.clone();
    }
    "panic".to_string()
}

/// Your decision, or (the safety net) a safe one, said on stderr with a marker line.
fn decide<T>(
    net: bool,
    msg: &Json,
    choose: impl FnOnce() -> T,
    is_ok: impl Fn(&T) -> bool,
    fallback: impl FnOnce() -> T,
    show: impl Fn(&T) -> Json,
) -> T {
    if !net {
        return choose();
    }
    let (decided, error) = match panic::catch_unwind(AssertUnwindSafe(choose)) {
        Ok(choice) if is_ok(&choice) => return choice,
        Ok(choice) => (show(&choice), None),
        Err(payload) => (Json::Null, Some(panic_text(payload.as_ref()))),
    };
    let safe = fallback();
    let mut marker = vec![
        ("id", msg.get("id").clone()),
        ("kind", msg.get("kind").clone()),
        ("decided", decided.clone()),
        ("sent", show(&safe)),
        ("why", Json::Str(if error.is_some() { "raised" } else { "not allowed" }.to_string())),
    ];
    if let Some(text) = error {
        marker.push(("error", Json::Str(format!("panic: {}", text).chars().take(200).collect())));
    }
    let mut line = object(marker.clone()).to_json();
    if line.len() > 1000 {
        let cut: String = decided.to_json().chars().take(200).collect();
        marker[2] = ("decided", Json::Str(cut));
        line = object(marker).to_json();
    }
    log(&format!("{}{}", MARKER, line));
    safe
}

fn safe_play(state: &GameState) -> Vec<String> {
    if !state.leading() && state.legal.iter().any(|p| p.is_empty()) {
        return Vec::new();
    }
    match state.legal.first() {
        Some(play) => play.clone(),
        None => default_play(state),
    }
}

fn act<B: Bot>(bot: &mut B, state: &mut GameState, msg: &Json) -> Json {
    let net = bot.safety_net();
    let id = msg.get("id").clone();
    match msg.get("kind").as_str().unwrap_or("") {
        "play" => {
            let view: &GameState = state;
            let cards = decide(
                net,
                msg,
                || bot.on_play(view),
                |c| view.is_legal_play(c),
                || safe_play(view),
                |c| str_array(c),
            );
            state.remove(&cards);
            object(vec![("id", id), ("cards", str_array(&cards))])
        }
        "give" => {
            let to = msg.get("to").as_i64().unwrap_or(-1);
            let count = msg.get("count").as_i64().unwrap_or(0).max(0) as usize;
            let view: &GameState = state;
            let cards = decide(
                net,
                msg,
                || bot.on_give(view, to, count),
                |c| c.len() == count && takes_from(&view.hand, c),
                || default_give(view, count),
                |c| str_array(c),
            );
            state.remove(&cards);
            state.given = Some(cards.clone());
            object(vec![("id", id), ("cards", str_array(&cards))])
        }
        "leftover" => {
            let offer = msg.get("offer").strings();
            let view: &GameState = state;
            let (take, discard) = decide(
                net,
                msg,
                || bot.on_leftover(view, &offer),
                |(t, d)| offer.contains(t) && (view.hand.contains(d) || d == t),
                || default_leftover(view, &offer),
                |(t, d)| str_array(&[t.clone(), d.clone()]),
            );
            state.hand.push(take.clone());
            state.remove(&[discard.clone()]);
            state.out_of_play.push(discard.clone());
            object(vec![("id", id), ("take", Json::Str(take)), ("discard", Json::Str(discard))])
        }
        other => {
            log(&format!("botkit: unknown act kind {:?}; answering with an empty play", other));
            object(vec![("id", id), ("cards", Json::Arr(Vec::new()))])
        }
    }
}

/// Process one message; the reply for a request, else `None`.
pub fn handle<B: Bot>(bot: &mut B, state: &mut GameState, msg: &Json) -> Option<Json> {
    if panic::catch_unwind(AssertUnwindSafe(|| state.apply(msg))).is_err() {
        log("botkit: could not follow a message; continuing"); // must not take the bot down
    }
    bot.on_event(state, msg);
    match msg.get("type").as_str() {
        Some("hello") => {
            let mut reply = vec![
                ("id", msg.get("id").clone()),
                ("type", Json::Str("ready".to_string())),
                ("name", Json::Str(bot.name())),
            ];
            if let Some(version) = bot.version() {
                reply.push(("version", Json::Str(version)));
            }
            Some(object(reply))
        }
        Some("act") => Some(act(bot, state, msg)),
        _ => None,
    }
}

/// Serve the referee until `bye` or end of input: a line read, a line answered and flushed.
pub fn run<B: Bot>(bot: &mut B) {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut state = GameState::new();
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(err) => {
                log(&format!("botkit: cannot read stdin: {}", err));
                return;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let msg = match Json::parse(text.trim_end()) {
            Ok(msg @ Json::Obj(_)) => msg,
            Ok(_) => continue,
            Err(err) => {
                let start: String = text.chars().take(80).collect();
                log(&format!("botkit: ignoring a line that is not JSON ({}): {:?}", err, start));
                continue;
            }
        };
        if let Some(reply) = handle(bot, &mut state, &msg) {
            let mut out = stdout.lock();
            let sent = out
                .write_all(reply.to_json().as_bytes())
                .and_then(|_| out.write_all(b"\n"))
                .and_then(|_| out.flush());
            if let Err(err) = sent {
                log(&format!("botkit: cannot write stdout: {}", err));
                return;
            }
        }
        if msg.get("type").as_str() == Some("bye") {
            return;
        }
    }
}
