"""The protocol's example transcripts replay against the referee, message for message."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

from referee.match.runner import play_match
from referee.protocol.seats import seated
from referee.rules import RuleSet
from referee.specs import TimeControl
from referee.testing import FakeSandbox, polite_bot, spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "protocol" / "examples"


def _maker() -> Any:
    loader = importlib.util.spec_from_file_location(
        "make_transcripts", EXAMPLES / "make_transcripts.py"
    )
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_short_match_transcript_replays_against_the_referee() -> None:
    setup = _maker().SHORT_MATCH
    lines = load(EXAMPLES / "short-match.jsonl")
    expected = [line["msg"] for line in lines if line["dir"] == "to_bot"]
    replies = iter(line["msg"] for line in lines if line["dir"] == "from_bot")
    seen: list[dict[str, Any]] = []

    def transcript_bot() -> Any:
        def handle(msg: dict[str, Any]) -> dict[str, Any] | None:
            seen.append(msg)
            if "id" in msg:
                return next(replies)
            return None

        return handle

    sandbox = FakeSandbox({"you": transcript_bot, "left": polite_bot, "right": polite_bot})
    rules = RuleSet.preset(setup["preset"], **setup["overrides"]).resolve(3)

    async def go() -> Any:
        bots = [spec("you"), spec("left"), spec("right")]
        tc = TimeControl(**setup["time"])
        async with seated(bots, sandbox=sandbox, time_control=tc) as table:
            return await play_match(table, rules, setup["seed"], match_id="short")

    result = asyncio.run(go())
    assert seen == expected
    assert next(replies, None) is None, "the referee asked fewer questions than the transcript"
    assert not any(s.forfeit for s in result.standings)


def test_transcripts_are_well_formed() -> None:
    from referee.protocol import messages

    for path in sorted(EXAMPLES.glob("*.jsonl")):
        lines = load(path)
        outstanding: dict[str, Any] | None = None
        for line in lines:
            assert line["dir"] in ("to_bot", "from_bot"), path
            if line["dir"] == "to_bot":
                messages.parse_to_bot(line["msg"])
                if "id" in line["msg"]:
                    outstanding = line["msg"]
            else:
                assert outstanding is not None, f"{path}: a reply nobody asked for"
                kind = "hello" if outstanding["type"] == "hello" else outstanding["kind"]
                raw = json.dumps(line["msg"]).encode()
                messages.parse_reply(raw, outstanding["id"], kind)
                outstanding = None


def test_spec_shows_the_replayed_transcript() -> None:
    """SPEC.md's transcript section is the rendering of short-match.jsonl, line for line."""
    text = (ROOT / "protocol" / "SPEC.md").read_text()
    lines = load(EXAMPLES / "short-match.jsonl")
    rendered = [
        ("> " if line["dir"] == "to_bot" else "< ") + json.dumps(line["msg"], separators=(",", ":"))
        for line in lines
    ]
    for shown in rendered:
        assert shown in text, f"SPEC.md lacks transcript line: {shown[:80]}"
