// rust-lowest: the "lowest" strategy in Rust, on the Rust kit (botkit.rs, a copy of
// protocol/kits/rust/botkit.rs). Leads every card of its lowest rank, follows with the
// lowest rank that beats the table, passes otherwise; gives back its lowest cards and takes
// the highest leftover (the kit's defaults). `make` builds ./bot with Debian's rustc.
mod botkit;

use botkit::{Bot, GameState};

struct Lowest;

impl Bot for Lowest {
    fn name(&self) -> String {
        "rust-lowest".to_string()
    }

    fn version(&self) -> Option<String> {
        Some("1".to_string())
    }

    fn on_play(&mut self, state: &GameState) -> Vec<String> {
        let plays: Vec<&Vec<String>> = state.legal.iter().filter(|p| !p.is_empty()).collect();
        let lowest = match plays.iter().map(|p| state.rank_index(&p[0])).min() {
            Some(rank) => rank,
            None => return Vec::new(),
        };
        // When leading, `legal` has one entry per count of a rank: take the largest (the
        // first of the largest, as the Python and JavaScript samples do).
        let mut best: Option<&Vec<String>> = None;
        for play in plays.into_iter().filter(|p| state.rank_index(&p[0]) == lowest) {
            if best.map_or(true, |b| play.len() > b.len()) {
                best = Some(play);
            }
        }
        best.cloned().unwrap_or_default()
    }
}

fn main() {
    botkit::run(&mut Lowest);
}
