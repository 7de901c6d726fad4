// A bot for the Arschloch referee, on the Rust kit (protocol: `referee protocol spec`).
// Edit the decisions below; `make` builds ./bot (see the Makefile), `referee bot check .`
// tries it.
//
// The kit's safety net: when a decision of yours is not allowed (a card you do not hold, the
// wrong number of cards, a pass when you lead) or panics, botkit sends a safe legal choice
// instead, so the match goes on. It does not hide the mistake: it writes a line
// "botkit: replaced {...}" on stderr each time, `referee bot check` fails the bot, and
// `referee play` and the tournament pages warn. To see the referee's own verdict on a
// mistake (a forfeit that explains the move), return false from safety_net while testing.
// Log with botkit::log (stderr): stdout carries the protocol, so never println! there.
mod botkit;

use botkit::{Bot, GameState};

struct MyBot;

impl Bot for MyBot {
    fn name(&self) -> String {
        "my-bot".to_string()
    }

    fn version(&self) -> Option<String> {
        Some("0.1".to_string())
    }

    /// The lowest legal play: `legal` runs low to high, the pass `[]` last.
    fn on_play(&mut self, state: &GameState) -> Vec<String> {
        match state.legal.iter().find(|p| !p.is_empty()) {
            Some(play) => play.clone(),
            None => Vec::new(),
        }
    }

    // on_give (give back the lowest cards) and on_leftover (take the highest offered card,
    // discard the lowest) keep the kit's defaults; override them like on_play.
}

fn main() {
    botkit::run(&mut MyBot);
}
