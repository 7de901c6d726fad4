"""Engine speed: full 4-player arschloch matches with random legal decisions, one core."""

from __future__ import annotations

import random
import time

from referee.matchlog import dumps
from referee.rules import GIVE, PLAY, Game, RuleSet
from referee.rules.engine import EngineMemo

RULES = RuleSet.preset("arschloch").resolve(4)
PLAYERS = ["a", "b", "c", "d"]


def play_matches(count: int, *, log: bool, memo: EngineMemo) -> tuple[float, int, int]:
    """Play ``count`` matches; returns (seconds, decisions, log bytes).

    ``memo`` serves them all, as a worker's serves its matches."""
    rng = random.Random(1)
    rnd = rng.random
    decisions = 0
    log_bytes = 0
    start = time.perf_counter()
    for seed in range(count):
        game = Game(RULES, PLAYERS, seed, memo=memo)
        codes = game.legal_move_codes
        play_move = game.play_move
        while True:
            pending = game.pending
            if pending is None:
                break
            kind, seat = pending
            if kind is PLAY:
                moves = codes()
                play_move(moves[int(rnd() * len(moves))])
            elif kind == GIVE:
                # A random choice of distinct cards: a window starting at a random card.
                hand = game.hand_names(seat)
                first = int(rnd() * len(hand))
                game.give(seat, (hand + hand)[first : first + game.give_count])
            else:
                names = game.codec.names
                take = names[game.offer[0]]
                game.leftover(seat, take, take)
            decisions += 1
        if log:
            text = dumps(game.header("bench")) + "\n"
            text += "".join(dumps(game.event_dict(ev)) + "\n" for ev in game.events)
            log_bytes += len(text)
    return time.perf_counter() - start, decisions, log_bytes


def run(count: int = 3000) -> dict[str, float]:
    memo = EngineMemo()
    play_matches(200, log=False, memo=memo)  # warm the legal-play memo
    best: dict[str, float] = {}
    for _ in range(3):
        secs, decisions, _ = play_matches(count, log=False, memo=memo)
        if secs < best.get("secs", 1e9):
            best.update(secs=secs, decisions=decisions)
        secs_log, dec_log, nbytes = play_matches(count // 3, log=True, memo=memo)
        if secs_log < best.get("secs_log", 1e9):
            best.update(secs_log=secs_log, dec_log=dec_log, bytes=nbytes)
    mps = count / best["secs"]
    dps = best["decisions"] / best["secs"]
    mps_log = (count // 3) / best["secs_log"]
    print("engine: 4-player arschloch, random legal decisions, one core (best of 3)")
    print(f"  {mps:8.0f} matches/s   {dps:9.0f} decisions/s   (target 1,000 and 350,000)")
    print(f"  {best['decisions'] / count:8.0f} decisions per match")
    print(f"  {mps_log:8.0f} matches/s with every event written as a JSON log line")
    return {"matches_per_s": mps, "decisions_per_s": dps, "matches_per_s_logged": mps_log}


if __name__ == "__main__":
    run()
