"""Regenerate the example transcripts from real referee runs (with in-memory bots).

    .venv/bin/python protocol/examples/make_transcripts.py

``short-match.jsonl`` is seat 0's whole conversation in a two-round, three-player match on
a small deck (ranks 7 8 9 A: five cards each and one leftover). The test suite replays
every transcript against the referee and fails when the referee would say anything else.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from referee.match.runner import play_match
from referee.protocol.seats import seated
from referee.rules import RuleSet
from referee.specs import TimeControl
from referee.testing import FakeSandbox, lowest_bot, polite_bot, spec

HERE = Path(__file__).resolve().parent
SHORT_MATCH = {
    "preset": "arschloch",
    "overrides": {"ranks": ["7", "8", "9", "A"], "max_rounds": 2},
    "seed": 7,
    "time": {"move_ms": 1000, "bank_ms": 5000, "hello_ms": 5000},
}


def record_short_match() -> list[dict[str, Any]]:
    """Play the short match; return seat 0's transcript."""
    sandbox = FakeSandbox(
        {"you": lambda: lowest_bot("you"), "left": polite_bot, "right": polite_bot}
    )
    rules = RuleSet.preset(SHORT_MATCH["preset"], **SHORT_MATCH["overrides"]).resolve(3)
    tc = TimeControl(**SHORT_MATCH["time"])
    bots = [spec("you"), spec("left"), spec("right")]

    async def go() -> None:
        async with seated(bots, sandbox=sandbox, time_control=tc) as table:
            await play_match(table, rules, SHORT_MATCH["seed"], match_id="short")

    asyncio.run(go())
    seat0 = sandbox.started[0]
    handler = lowest_bot("you")
    lines: list[dict[str, Any]] = []
    for msg in seat0.received:
        lines.append({"dir": "to_bot", "msg": msg})
        reply = handler(msg)
        if reply is not None:
            lines.append({"dir": "from_bot", "msg": reply})
    return lines


def main() -> None:
    lines = record_short_match()
    path = HERE / "short-match.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"wrote {path} ({len(lines)} lines)")


if __name__ == "__main__":
    main()
