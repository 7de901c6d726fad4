"""The C and C++ kits, built with the real compilers and driven as processes.

Each sample (``sample_bots/c-lowest``, ``sample_bots/cpp-lowest``) is copied to a temporary
folder and built there with ``make`` once per module, as the referee's build step does, so
no build output ever lands in the repository. The built bot is then fed the referee's own
lines (``protocol/examples/short-match.jsonl``, recorded from the referee) one at a time:
every request must get exactly one line back while the bot still waits for the next (so
it flushed), read back with ``referee.protocol.messages.parse_reply``, legal for the hand
and the ``legal`` list it was given, and the same as the Python ``lowest`` sample plays.
A hostile case sends unknown fields, a string of a megabyte and lines that are not JSON;
a broken bot built on each kit shows the safety net's marker lines, read back as the
referee reads them. The slow tests run ``referee bot check``'s checks
(:func:`referee.match.compliance.run_check`) on each built copy in the process sandbox.

A missing compiler or ``make`` skips, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.protocol import messages as m
from referee.protocol.kit import KIT_MARKER, read_marker
from tests.test_kits import BotRun, assert_legal

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_bots"
EXAMPLE = ROOT / "protocol" / "examples" / "short-match.jsonl"
TOOLS = {"c-lowest": ("make", "cc"), "cpp-lowest": ("make", "g++")}


def _require(tools: tuple[str, ...]) -> None:
    """Skip without the tools; under CI=true, fail."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return
    why = f"{', '.join(missing)} not installed"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {why}")
    pytest.skip(f"{why}; under CI=true this fails")


@pytest.fixture(scope="module", params=sorted(TOOLS))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built copy of the sample, its bot.toml without the build step (already run)."""
    name: str = request.param
    _require(TOOLS[name])
    folder = tmp_path_factory.mktemp("built") / name
    shutil.copytree(SAMPLES / name, folder)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp"}  # the build's own
    done = subprocess.run(["make"], cwd=folder, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert b"warning" not in done.stderr, done.stderr.decode()
    manifest = folder / "bot.toml"
    lines = manifest.read_text().splitlines()
    manifest.write_text("".join(f"{line}\n" for line in lines if not line.startswith("build")))
    return folder


@pytest.fixture
def bot(built: Path) -> Iterator[BotRun]:
    run = BotRun(["./bot"], built)
    try:
        yield run
    finally:
        run.close()


def _to_bot() -> list[dict[str, Any]]:
    """The referee's lines of the recorded match, in order."""
    entries = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    return [e["msg"] for e in entries if e["dir"] == "to_bot"]


def _python_lowest(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What sample_bots/lowest answers to ``lines``, fed at once."""
    done = subprocess.run(
        [sys.executable, "bot.py"],
        cwd=SAMPLES / "lowest",
        input=b"".join(m.encode(msg) for msg in lines),
        capture_output=True,
        timeout=20,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def _check_reply(msg: dict[str, Any], line: bytes) -> Any:
    """The reply to ``msg``, read back as the referee reads it, and legal."""
    kind = "hello" if msg["type"] == "hello" else msg["kind"]
    reply: Any = m.parse_reply(line, msg["id"], kind)
    if kind == "play":
        assert_legal(reply.cards, msg)
    elif kind == "give":
        assert len(reply.cards) == msg["count"] and len(set(reply.cards)) == msg["count"]
        assert set(reply.cards) <= set(msg["hand"])
    elif kind == "leftover":
        assert reply.take in msg["offer"] and reply.discard in [*msg["hand"], reply.take]
    return reply


def _ask(run: BotRun, msg: dict[str, Any]) -> Any:
    run.send(msg)
    return _check_reply(msg, run.read_line())


def _drive(run: BotRun, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``lines`` one at a time; each request's reply must come before the next line."""
    replies = []
    for msg in lines:
        run.send(msg)
        if "id" in msg:
            line = run.read_line()
            _check_reply(msg, line)
            replies.append(json.loads(line))
    return replies


def test_the_recorded_match_gets_one_flushed_legal_line_per_request(
    built: Path, bot: BotRun
) -> None:
    lines = _to_bot()
    replies = _drive(bot, lines)
    assert len(replies) == sum("id" in msg for msg in lines) == 11
    assert replies[0]["name"] == built.name and replies[0]["version"] == "1"
    assert replies[1:] == _python_lowest(lines)[1:]  # the same play as sample_bots/lowest
    assert bot.exits_within(1.0) == 0  # on bye
    assert bot.proc.stdout is not None and bot.proc.stdout.read() == b""  # nothing more


def test_unknown_fields_long_strings_and_broken_lines_do_not_crash(bot: BotRun) -> None:
    hello, start, deal, *_ = _to_bot()
    huge = "x" * 1_000_000
    bot.send({**hello, "motd": huge, "extra": {"nested": [1, [2, {"k": None}]], "f": 1.5e300}})
    assert m.parse_reply(bot.read_line(), hello["id"], "hello").type == "ready"
    assert bot.proc.stdin is not None
    bot.proc.stdin.write(b"not json\n[1,2]\n" + b"[" * 100_000 + b'\n{"type":"played"}\n')
    bot.send({**start, "new": {"deep": [[[["a"]]]]}, "rules": {**start["rules"], "joker": True}})
    bot.send({**deal, "note": huge})
    bot.send({"type": "telemetry", "id": 77, "data": huge})  # not a request: no answer
    bot.send({"type": "played", "seat": "x", "cards": None})
    act = {
        "type": "act",
        "id": 80,
        "kind": "play",
        "hand": ["7D", "8H", "9D", "AS", "AD"],
        "trick": {"leader": 1, "count": 1, "top": ["8D"]},
        "passed": [],
        "legal": [["9D"], ["AS"], []],
        "bank_ms": 5000,
        "counts": [5, 4, 4],
        "hint": huge,
        "meta": {"a": [1, 2, 3], "b": "é\u0000\U0001f600"},
    }
    assert _ask(bot, act).cards == ["9D"]
    offer = {**act, "id": 81, "kind": "leftover", "offer": ["AH", "7C"], "legal": huge}
    del offer["trick"]
    choice = _ask(bot, offer)
    assert (choice.take, choice.discard) == ("AH", "7D")
    assert bot.proc.poll() is None


# Decisions the rules refuse: a card not held when leading, a wrong give; in C++ a throw
# too. Built without optimisation: only the kit's behaviour matters, and it builds faster.
BROKEN = {
    "c-lowest": (
        "broken.c",
        """#include "botkit.h"
static void play(bk_bot *b, const bk_state *s, bk_cards *out) {
    (void)b;
    bk_cards_add(out, bk_leading(s) ? "ZZ" : s->hand.c[0].s);
}
static void give(bk_bot *b, const bk_state *s, int to, int count, bk_cards *out) {
    (void)b, (void)s, (void)to, (void)count;
    bk_cards_add(out, "ZZ");
}
int main(void) {
    bk_bot bot = bk_bot_default("broken");
    bot.on_play = play;
    bot.on_give = give;
    return bk_run(&bot);
}
""",
        ["cc", "-O0", "-Wall", "-Wextra", "-o", "broken", "broken.c", "botkit.c"],
    ),
    "cpp-lowest": (
        "broken.cpp",
        """#include <stdexcept>
#include "botkit.hpp"
struct Broken : botkit::Bot {
    Broken() : Bot("broken") {}
    botkit::Cards onPlay(const botkit::GameState& s) override {
        if (s.leading()) return {"ZZ"};
        throw std::runtime_error("bug");
    }
    botkit::Cards onGive(const botkit::GameState&, int, int) override { return {"ZZ"}; }
};
int main() { return Broken().run(); }
""",
        ["g++", "-std=c++17", "-O0", "-Wall", "-o", "broken", "broken.cpp"],
    ),
}


def test_the_safety_net_replaces_refused_decisions_and_says_so(built: Path, tmp_path: Path) -> None:
    source, text, command = BROKEN[built.name]
    for kit in built.glob("botkit.*"):
        shutil.copy(kit, tmp_path)
    (tmp_path / source).write_text(text)
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    run = BotRun(["./broken"], tmp_path)
    try:
        hello, start, deal, *_ = _to_bot()
        _ask(run, hello)
        run.send(start)
        run.send(deal)  # the hand: 7D 8H 9D AS AD
        hand = ["7D", "8H", "9D", "AS", "AD"]
        follow = {
            "type": "act",
            "id": 6,
            "kind": "play",
            "hand": hand,
            "trick": {"leader": 1, "count": 1, "top": ["8D"]},
            "passed": [],
            "legal": [["9D"], ["AS"], []],
            "bank_ms": 5000,
        }
        lead = {**follow, "id": 7, "trick": {"leader": 0, "count": 0, "top": []}}
        lead["legal"] = [["7D"], ["8H"], ["9D"], ["AS"], ["AD"], ["AS", "AD"]]
        give = {"type": "act", "id": 8, "kind": "give", "hand": hand, "to": 2, "count": 2}
        assert _ask(run, follow).cards == []  # following: the pass
        assert _ask(run, lead).cards == ["7D"]  # leading: the lowest legal play
        assert _ask(run, give).cards == ["7D", "8H"]  # the lowest cards
        run.send({"type": "bye"})
        assert run.exits_within(1.0) == 0
        assert run.proc.stderr is not None
        err = run.proc.stderr.read().decode()
    finally:
        run.close()
    marker = KIT_MARKER.decode()
    notes = [read_marker(line.encode()) for line in err.splitlines() if line.startswith(marker)]
    assert [(n.request_id, n.kind, n.sent) for n in notes] == [
        (6, "play", []),
        (7, "play", ["7D"]),
        (8, "give", ["7D", "8H"]),
    ]
    assert [n.decided for n in notes[1:]] == [["ZZ"], ["ZZ"]]
    assert {n.why for n in notes[1:]} == {"not allowed"}
    if built.name == "cpp-lowest":  # a throw: raised, with what() as the error
        assert (notes[0].why, notes[0].error, notes[0].decided) == ("raised", "bug", None)
    else:  # a card held but not legal on the 8: refused
        assert (notes[0].why, notes[0].decided) == ("not allowed", ["7D"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_bot_check_passes_the_built_sample(built: Path) -> None:
    from referee.match.compliance import run_check
    from referee.sandbox import get_sandbox, load_bot

    report = run_check(load_bot(built), get_sandbox("process"))
    assert report.passed, report.as_json()
    assert set(report.asked) == {"play", "give", "leftover"}
    assert sum(step.kit_replaced for step in report.steps) == 0
