"""The bot kits and sample bots, driven as real subprocesses with hand-written messages.

Every reply is read back with ``referee.protocol.messages.parse_reply`` (so it is protocol-valid) and
checked against the hand and the ``legal`` list it was given. Full matches against the
referee live with the match runner's tests.
"""

from __future__ import annotations

import importlib.util
import json
import random
import select
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from referee.protocol import messages as m
from referee.protocol.kit import KIT_MARKER, read_marker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_bots"
KITS = ROOT / "protocol" / "kits"
PY_KIT = KITS / "python" / "botkit.py"
JS_KIT = KITS / "javascript" / "botkit.js"
# The files a sample copies from each kit, the first one telling which kit it carries.
KIT_FILES = {
    "python": ("botkit.py",),
    "javascript": ("botkit.js",),
    "c": ("botkit.h", "botkit.c", "Makefile"),
    "cpp": ("botkit.hpp", "Makefile"),
    "rust": ("botkit.rs", "Makefile"),
    "java": ("BotKit.java", "Makefile"),
}
HAS_NODE = shutil.which("node") is not None
REPLY_TIMEOUT = 5.0

RANKS = ["7", "8", "9", "10", "J", "Q", "K", "A"]
RULES: dict[str, Any] = {
    "name": "arschloch",
    "deck": "skat32",
    "suits": ["C", "S", "H", "D"],
    "ranks": RANKS,
    "deal": "equal",
    "pass_rule": "reenter",
    "equal_rank": "forbidden",
    "top_card_ends_trick": True,
    "no_finish_on": ["A"],
    "start_card": "7C",
    "exchange": [2, 1],
    "return_choice": "choose",
    "leftovers": "swap",
    "scoring": "below",
    "target": 15,
    "rounds": None,
    "max_rounds": 100,
    "tie_break": "shared",
    "players": 4,
}
HAND = ["7C", "8H", "8D", "9S", "JC", "QH", "KD", "AS"]


def hello(rid: int = 1) -> dict[str, Any]:
    return {
        "type": "hello",
        "id": rid,
        "protocol": 1,
        "time": {"move_ms": 200, "bank_ms": 5000, "hello_ms": 5000},
    }


def match_start(seat: int = 0, match: str = "t-1") -> dict[str, Any]:
    return {
        "type": "match_start",
        "match": match,
        "seat": seat,
        "players": ["p0", "p1", "p2", "p3"],
        "rules": RULES,
        "bank_ms": 5000,
    }


def round_start(
    hand: list[str], rnd: int = 1, leftovers: list[str] | None = None
) -> dict[str, Any]:
    roles = None if rnd == 1 else ["president", "vice_president", "vice_arschloch", "arschloch"]
    return {
        "type": "round_start",
        "round": rnd,
        "dealer": 0,
        "hand": hand,
        "hand_sizes": [len(hand)] * 4,
        "roles": roles,
        "scores": [0, 0, 0, 0],
        "leftovers": leftovers or [],
    }


def legal_plays(hand: list[str], top: list[str]) -> list[list[str]]:
    """The ``legal`` list for the rules above (no forbidden-finish subtleties needed here)."""
    groups: dict[str, list[str]] = {}
    for card in sorted(hand, key=lambda c: RANKS.index(c[:-1])):
        groups.setdefault(card[:-1], []).append(card)
    if not top:
        return [g[:k] for g in groups.values() for k in range(1, len(g) + 1)]
    need, floor = len(top), RANKS.index(top[0][:-1])
    plays = [g[:need] for r, g in groups.items() if RANKS.index(r) > floor and len(g) >= need]
    return [*plays, []]


def act_play(rid: int, hand: list[str], top: list[str], leader: int = 1) -> dict[str, Any]:
    return {
        "type": "act",
        "id": rid,
        "kind": "play",
        "hand": hand,
        "trick": {"leader": leader, "count": len(top), "top": top},
        "passed": [],
        "legal": legal_plays(hand, top),
        "bank_ms": 5000,
    }


def assert_legal(cards: list[str], act: dict[str, Any]) -> None:
    """The reply's cards are in the hand and form one of the ``legal`` plays."""
    pool = list(act["hand"])
    for card in cards:
        assert card in pool, f"{card} is not in the hand {act['hand']}"
        pool.remove(card)
    key = sorted(c[:-1] for c in cards)
    assert key in [sorted(c[:-1] for c in p) for p in act["legal"]], f"{cards} is not legal"


class BotRun:
    """A bot subprocess with line-level helpers and a timeout on every read."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(m.encode(msg))
        self.proc.stdin.flush()

    def read_line(self, timeout: float = REPLY_TIMEOUT) -> bytes:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f"no reply within {timeout} s; stderr: {self.stderr_tail()}"
        line = self.proc.stdout.readline()
        assert line, f"bot closed stdout; stderr: {self.stderr_tail()}"
        return line

    def ask(self, msg: dict[str, Any], kind: str) -> Any:
        self.send(msg)
        return m.parse_reply(self.read_line(), msg["id"], kind)

    def no_output(self, wait: float = 0.2) -> bool:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], wait)
        return not ready

    def exits_within(self, seconds: float) -> int:
        return self.proc.wait(timeout=seconds)

    def stderr_tail(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(still running)"
        return self.proc.stderr.read()[-2000:].decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


SAMPLE_NAMES = sorted(p.name for p in SAMPLES.iterdir() if (p / "bot.toml").exists())
# Samples with a build step (C, C++, Rust, Java) run only once built: the compiled kits'
# tests (tests/test_compiled_kits.py, test_compiled_kits_rj.py) build copies and drive those.
BUILT_SAMPLES = [
    name
    for name in SAMPLE_NAMES
    if "build" in tomllib.loads((SAMPLES / name / "bot.toml").read_text())
]


def _bot_command(folder: Path) -> tuple[list[str], dict[str, Any]]:
    config = tomllib.loads((folder / "bot.toml").read_text())
    command = config["command"].split()
    if command[0] == "python3":
        command[0] = sys.executable  # the same interpreter, whatever python3 is on PATH
    return command, config


# Every sample bot, plus each kit's default bot (the referee's fallback policy).
TARGETS = [*(n for n in SAMPLE_NAMES if n not in BUILT_SAMPLES), "kit:python", "kit:javascript"]


@pytest.fixture(params=TARGETS)
def bot(request: pytest.FixtureRequest) -> Iterator[tuple[BotRun, str]]:
    target: str = request.param
    if target == "kit:python":
        code = f"import sys; sys.path.insert(0, {str(PY_KIT.parent)!r}); import botkit; botkit.Bot().run()"
        run, name = BotRun([sys.executable, "-c", code], PY_KIT.parent), "botkit-bot"
    elif target == "kit:javascript":
        if not HAS_NODE:
            pytest.skip("node is not installed")
        code = f"const k = require({str(JS_KIT)!r}); new k.Bot('js-kit').run();"
        run, name = BotRun(["node", "-e", code], JS_KIT.parent), "js-kit"
    else:
        command, config = _bot_command(SAMPLES / target)
        if command[0] == "node" and not HAS_NODE:
            pytest.skip("node is not installed")
        run, name = BotRun(command, SAMPLES / target), config["name"]
    try:
        yield run, name
    finally:
        run.close()


def test_hello_gets_ready_with_the_same_id(bot: tuple[BotRun, str]) -> None:
    run, name = bot
    ready = run.ask(hello(41), "hello")
    assert ready.id == 41 and ready.name == name


def test_a_round_of_decisions_is_legal(bot: tuple[BotRun, str]) -> None:
    run, _ = bot
    run.ask(hello(), "hello")
    run.send(match_start(seat=0))
    run.send(round_start(HAND))
    assert run.no_output(), "events must not be answered"

    lead = act_play(2, HAND, [], leader=0)
    reply = run.ask(lead, "play")
    assert reply.cards, "a leader may not pass"
    assert_legal(reply.cards, lead)
    hand = [c for c in HAND if c not in reply.cards]
    for seat in range(4):
        cards = reply.cards if seat == 0 else []
        run.send(
            {"type": "played", "seat": seat, "cards": cards}
            if cards
            else {"type": "passed", "seat": seat}
        )
    run.send({"type": "trick_end", "winner": 0, "reason": "all_passed", "leader": 1})
    run.send({"type": "played", "seat": 1, "cards": ["10C"]})

    follow = act_play(3, hand, ["10C"])
    reply = run.ask(follow, "play")
    assert_legal(reply.cards, follow)


def test_give_and_leftover(bot: tuple[BotRun, str]) -> None:
    run, _ = bot
    run.ask(hello(), "hello")
    run.send(match_start(seat=0))
    run.send(round_start(HAND, rnd=2, leftovers=["10H", "7S"]))
    leftover: dict[str, Any] = {
        "type": "act",
        "id": 5,
        "kind": "leftover",
        "hand": HAND,
        "offer": ["10H", "7S"],
    }
    choice = run.ask(leftover, "leftover")
    assert choice.take in leftover["offer"]
    assert choice.discard in [*HAND, choice.take]
    hand = [*HAND, choice.take]
    hand.remove(choice.discard)

    run.send({"type": "exchanged", "from": 3, "to": 0, "count": 2})
    run.send({"type": "received", "from": 3, "cards": ["AC", "AD"]})
    hand += ["AC", "AD"]
    give = {"type": "act", "id": 6, "kind": "give", "hand": hand, "to": 3, "count": 2}
    gave = run.ask(give, "give")
    assert len(gave.cards) == 2 and len(set(gave.cards)) == 2
    assert set(gave.cards) <= set(hand)


def test_bye_makes_the_bot_exit_within_a_second(bot: tuple[BotRun, str]) -> None:
    run, _ = bot
    run.ask(hello(), "hello")
    run.send({"type": "bye"})
    started = time.monotonic()
    assert run.exits_within(1.0) == 0
    assert time.monotonic() - started < 1.0


def test_end_of_input_makes_the_bot_exit(bot: tuple[BotRun, str]) -> None:
    run, _ = bot
    run.ask(hello(), "hello")
    assert run.proc.stdin is not None
    run.proc.stdin.close()
    assert run.exits_within(1.0) == 0


def test_unknown_messages_and_fields_are_ignored_and_matches_chain(
    bot: tuple[BotRun, str],
) -> None:
    run, _ = bot
    first = hello()
    run.ask({**first, "extra": {"nested": [1, 2]}}, "hello")
    run.send({"type": "telemetry", "id": 99, "whatever": True})
    run.send({"type": "played", "seat": "x", "cards": None})  # malformed: must not crash
    run.send(match_start(seat=0, match="a"))
    run.send({**round_start(HAND), "new_field": 1})
    run.send({"type": "match_end", "standings": []})
    assert run.no_output()
    run.send(match_start(seat=2, match="b"))
    run.send(round_start(["9C", "9D", "KS"]))
    act = {**act_play(12, ["9C", "9D", "KS"], ["8S", "8C"]), "hint": "ignore me"}
    reply = run.ask(act, "play")
    assert_legal(reply.cards, act)


# --- strategy checks on the sample bots ---------------------------------------------------


def _decide(folder: str, hand: list[str], top: list[str]) -> list[str]:
    command, _ = _bot_command(SAMPLES / folder)
    run = BotRun(command, SAMPLES / folder)
    try:
        run.ask(hello(), "hello")
        run.send(match_start(seat=0))
        run.send(round_start(hand))
        cards: list[str] = run.ask(act_play(2, hand, top), "play").cards
        return cards
    finally:
        run.close()


def test_lowest_leads_its_whole_lowest_group_and_follows_cheaply() -> None:
    assert sorted(_decide("lowest", ["8H", "8D", "JC", "AS"], [])) == ["8D", "8H"]
    assert _decide("lowest", ["8H", "JC", "QS", "AS"], ["9C"]) == ["JC"]
    assert _decide("lowest", ["8H", "JC"], ["AC"]) == []


def test_heuristic_never_keeps_only_aces() -> None:
    """A hand of only no_finish_on ranks is eliminated: lead the aces, keep the nine."""
    assert sorted(_decide("heuristic", ["AS", "AD", "9C"], [])) == ["AD", "AS"]
    # Following with the nine would leave a lone ace; the ace wins and the nine goes out.
    assert _decide("heuristic", ["9C", "AS"], ["8S"]) == ["AS"]


def test_heuristic_keeps_pairs_and_sheds_low_cards() -> None:
    assert _decide("heuristic", ["8H", "8D", "QC", "KS", "10D", "JH"], ["7C"]) == ["10D"]
    assert sorted(_decide("heuristic", ["8H", "8D", "QC", "KS", "JH"], [])) == ["8D", "8H"]


def test_heuristic_saves_a_boss_on_a_low_trick_early() -> None:
    hand = ["7D", "8S", "9H", "JC", "JD", "QS", "KH", "AS"]
    # The ace would win, but a lead this early is not worth the last sure card.
    assert _decide("heuristic", hand, ["QC"]) != ["AS"]


# --- the kits' copies and the Python kit's bookkeeping ------------------------------------


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_bots_carry_an_up_to_date_kit(name: str) -> None:
    folder = SAMPLES / name
    langs = [lang for lang, files in KIT_FILES.items() if (folder / files[0]).exists()]
    assert len(langs) == 1, f"{name} must carry exactly one kit"
    for file in KIT_FILES[langs[0]]:
        kit = KITS / langs[0] / file
        assert (folder / file).read_bytes() == kit.read_bytes(), (
            f"sample_bots/{name}/{file} differs from {kit.relative_to(ROOT)}: run make kits"
        )


@pytest.mark.parametrize(("lang", "source"), [("c", "bot.c"), ("cpp", "bot.cpp")])
def test_the_compiled_kits_templates_are_their_samples(lang: str, source: str) -> None:
    """The template a new bot starts from, named, is the sample's code and bot.toml (the
    sample only adds its own opening comment), so the built sample's tests cover it."""
    name, template = f"{lang}-lowest", KITS / lang
    code = (template / source).read_text().replace("{name}", name)
    sample = (SAMPLES / name / source).read_text()
    assert sample[sample.index("#include") :] == code[code.index("#include") :]
    toml = (template / "bot.toml").read_text().replace("{name}", name)
    assert (SAMPLES / name / "bot.toml").read_text() == toml
    assert tomllib.loads(toml)["build"] == ["make"] and tomllib.loads(toml)["command"] == "./bot"


def _kit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("botkit_under_test", PY_KIT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_kit_tracks_the_hand_and_what_is_gone() -> None:
    kit = _kit()
    state = kit.GameState()
    state.apply(match_start(seat=0))
    state.apply(round_start(list(HAND), rnd=2))
    assert state.groups_by_rank() == {
        "7": ["7C"],
        "8": ["8H", "8D"],
        "9": ["9S"],
        "J": ["JC"],
        "Q": ["QH"],
        "K": ["KD"],
        "A": ["AS"],
    }
    # As president: the arschloch's best cards arrive, then two cards go back automatically
    # (return_choice "lowest" here: no give request), announced only by the public event.
    state.apply({"type": "exchanged", "from": 3, "to": 0, "count": 2})
    state.apply({"type": "received", "from": 3, "cards": ["AC", "AD"]})
    assert len(state.hand) == 10 and state.hand_sizes == [10, 8, 8, 6]
    state.apply({"type": "exchanged", "from": 0, "to": 3, "count": 2})
    assert sorted(state.hand) == sorted(["8D", "9S", "JC", "QH", "KD", "AS", "AC", "AD"])
    assert state.hand_sizes == [8, 8, 8, 8]
    state.apply({"type": "played", "seat": 1, "cards": ["AH"]})
    assert state.top == ["AH"] and state.hand_sizes[1] == 7
    # Every ace is seen (three here, one played), so a king can no longer be beaten.
    assert state.unseen("A") == 0 and state.unseen("K") == 3
    assert state.is_boss("K") and not state.is_boss("Q")
    state.apply({"type": "trick_end", "winner": 1, "reason": "top_card", "leader": 1})
    assert state.leading and state.leader == 1


@pytest.mark.skipif(not HAS_NODE, reason="node is not installed")
def test_javascript_kit_tracks_the_same_way() -> None:
    """The scenario of the Python test above, through the JavaScript kit's GameState."""
    steps = [
        match_start(seat=0),
        round_start(list(HAND), rnd=2),
        {"type": "exchanged", "from": 3, "to": 0, "count": 2},
        {"type": "received", "from": 3, "cards": ["AC", "AD"]},
        {"type": "exchanged", "from": 0, "to": 3, "count": 2},
        {"type": "played", "seat": 1, "cards": ["AH"]},
    ]
    script = f"""
        const k = require({str(JS_KIT)!r});
        const s = new k.GameState();
        for (const msg of {json.dumps(steps)}) s.apply(msg);
        console.log(JSON.stringify({{hand: [...s.hand].sort(), sizes: s.handSizes,
            bossK: s.isBoss("K"), bossQ: s.isBoss("Q"), unseenK: s.unseen("K"),
            groups: [...s.groupsByRank().entries()], top: s.top}}));
    """
    out = subprocess.run(["node", "-e", script], capture_output=True, timeout=10, check=True)
    state = json.loads(out.stdout)
    assert state["hand"] == sorted(["8D", "9S", "JC", "QH", "KD", "AS", "AC", "AD"])
    assert state["sizes"] == [8, 7, 8, 8]
    assert (state["bossK"], state["bossQ"], state["unseenK"]) == (True, False, 3)
    assert state["groups"][0] == ["8", ["8D"]] and state["groups"][-1] == ["A", ["AC", "AS", "AD"]]
    assert state["top"] == ["AH"]


def test_python_kit_safety_net_replaces_a_broken_decision() -> None:
    kit = _kit()

    class Broken(kit.Bot):  # type: ignore[name-defined,misc]
        def on_play(self, state: Any) -> list[str]:
            raise RuntimeError("bug")

        def on_give(self, state: Any, to: int, count: int) -> list[str]:
            return ["ZZ"] * count

    bot = Broken()
    bot.handle(match_start(seat=0))
    bot.handle(round_start(list(HAND)))
    act = act_play(3, list(HAND), ["QC"])
    assert bot.handle(act) == {"id": 3, "cards": []}
    lead = act_play(4, list(HAND), [])
    assert bot.handle(lead)["cards"] == ["7C"]
    give = bot.handle(
        {"type": "act", "id": 5, "kind": "give", "hand": list(HAND), "to": 1, "count": 2}
    )
    assert give == {"id": 5, "cards": ["7C", "8H"]}


def _markers(stderr: str) -> list[Any]:
    """The kit's marker lines in ``stderr``, read back as the referee reads them."""
    marker = KIT_MARKER.decode()
    return [read_marker(line.encode()) for line in stderr.splitlines() if line.startswith(marker)]


def test_python_kit_says_each_replaced_decision_with_a_marker_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kit = _kit()
    assert kit.MARKER.encode() == KIT_MARKER  # the kit and the referee agree on the marker

    class Broken(kit.Bot):  # type: ignore[name-defined,misc]
        def on_play(self, state: Any) -> Any:
            if state.leading:
                return {"cards": {"7C"}}  # not JSON as it is, and not a play
            raise RuntimeError("bug")

        def on_give(self, state: Any, to: int, count: int) -> list[str]:
            return ["ZZ"] * count

        def on_leftover(self, state: Any, offer: list[str]) -> tuple[str, str]:
            return offer[0], offer[0]  # allowed: no marker

    bot = Broken()
    bot.handle(match_start(seat=0))
    bot.handle(round_start(list(HAND)))
    bot.handle(act_play(3, list(HAND), ["QC"]))
    bot.handle(act_play(4, list(HAND), []))
    bot.handle({"type": "act", "id": 5, "kind": "give", "hand": list(HAND), "to": 1, "count": 2})
    offer = {"type": "act", "id": 6, "kind": "leftover", "hand": list(HAND), "offer": ["9C"]}
    assert bot.handle(offer) == {"id": 6, "take": "9C", "discard": "9C"}
    err = capsys.readouterr().err
    raised, unjson, give = _markers(err)
    assert (raised.request_id, raised.kind, raised.why, raised.error) == (
        3,
        "play",
        "raised",
        "RuntimeError: bug",
    )
    assert (raised.decided, raised.sent) == (None, [])
    assert "Traceback" in err and 'raise RuntimeError("bug")' in err  # after the marker
    assert (unjson.request_id, unjson.why, unjson.sent) == (4, "not allowed", ["7C"])
    assert "7C" in str(unjson.decided)  # shown as its repr: still one line of JSON
    assert (give.request_id, give.kind, give.decided, give.sent) == (
        5,
        "give",
        ["ZZ", "ZZ"],
        ["7C", "8H"],
    )
    bot.safety_net = False  # off: the decision goes out as it is, and nothing is said
    bot.handle({"type": "act", "id": 7, "kind": "give", "hand": list(HAND), "to": 1, "count": 2})
    assert _markers(capsys.readouterr().err) == []


@pytest.mark.skipif(not HAS_NODE, reason="node is not installed")
def test_javascript_kit_says_each_replaced_decision_with_a_marker_line() -> None:
    steps = [
        match_start(seat=0),
        round_start(list(HAND)),
        act_play(3, list(HAND), ["QC"]),
        act_play(4, list(HAND), []),
        {"type": "act", "id": 5, "kind": "give", "hand": list(HAND), "to": 1, "count": 2},
    ]
    script = f"""
        const k = require({str(JS_KIT)!r});
        class Broken extends k.Bot {{
          onPlay(state) {{
            if (state.leading) {{ const a = []; a.push(a); return a; }}  // a cycle
            throw new Error("bug");
          }}
          onGive(state, to, count) {{ return ["ZZ", "ZZ"]; }}
        }}
        const bot = new Broken("b");
        for (const msg of {json.dumps(steps)}) bot.handle(msg);
        console.log(k.MARKER);
    """
    out = subprocess.run(["node", "-e", script], capture_output=True, timeout=10, check=True)
    assert out.stdout.decode().strip().encode() == KIT_MARKER.strip()
    raised, cycle, give = _markers(out.stderr.decode())
    assert (raised.request_id, raised.kind, raised.why, raised.sent) == (3, "play", "raised", [])
    assert raised.error == "Error: bug" and "at Broken.onPlay" in out.stderr.decode()
    assert (cycle.request_id, cycle.why, cycle.sent) == (4, "not allowed", ["7C"])
    assert (give.request_id, give.decided, give.sent) == (5, ["ZZ", "ZZ"], ["7C", "8H"])


def test_python_kit_writes_nothing_but_replies_on_stdout() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(PY_KIT.parent)!r}); import botkit; botkit.Bot().run()"
    )
    lines = [hello(1), {"type": "bogus"}, match_start(), round_start(list(HAND)), {"type": "bye"}]
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=b"".join(m.encode(x) for x in lines) + b"not json\n",
        capture_output=True,
        timeout=10,
        check=True,
    )
    assert [json.loads(x) for x in proc.stdout.splitlines()] == [
        {"id": 1, "type": "ready", "name": "botkit-bot"}
    ]


def _act_with_counts(counts: list[Any]) -> dict[str, Any]:
    return {
        "type": "act",
        "id": 9,
        "kind": "play",
        "hand": ["8D", "9S"],
        "trick": {"leader": 0, "count": 0, "top": []},
        "passed": [],
        "legal": [["8D"], ["9S"]],
        "bank_ms": 900,
        "counts": counts,
    }


def test_python_kit_takes_the_referees_counts_and_ignores_broken_ones() -> None:
    """Protocol 1.1's ``counts`` override the kit's bookkeeping; a 1.0 act keeps it."""
    kit = _kit()
    state = kit.GameState()
    state.apply(match_start(seat=0))
    state.apply(round_start(list(HAND), rnd=1))
    state.apply(_act_with_counts([2, 5, 0, 7]))
    assert state.hand_sizes == [2, 5, 0, 7]
    state.apply(_act_with_counts([1, 2]))  # wrong length: ignored
    state.apply(_act_with_counts("x"))  # type: ignore[arg-type]  # not a list: ignored
    assert state.hand_sizes == [2, 5, 0, 7]
    state.apply(_act_with_counts(["x", 3, 3, 3]))
    assert state.hand_sizes == [0, 3, 3, 3]


@pytest.mark.skipif(not HAS_NODE, reason="node is not installed")
def test_javascript_kit_takes_the_referees_counts() -> None:
    steps = [
        match_start(seat=0),
        round_start(list(HAND), rnd=1),
        _act_with_counts([2, 5, 0, 7]),
        _act_with_counts([1, 2]),
    ]
    script = f"""
        const k = require({str(JS_KIT)!r});
        const s = new k.GameState();
        for (const msg of {json.dumps(steps)}) s.apply(msg);
        console.log(JSON.stringify(s.handSizes));
    """
    out = subprocess.run(["node", "-e", script], capture_output=True, timeout=10, check=True)
    assert json.loads(out.stdout) == [2, 5, 0, 7]


def _draws_after(start: dict[str, Any]) -> list[float]:
    bot = _kit().Bot()
    bot.handle(start)
    return [bot.random.random() for _ in range(3)]


def test_python_kit_seeds_its_generator_from_match_starts_seed() -> None:
    """Protocol 1.2: the seed decides the draws, whatever the match id and seat (both halves
    of a ``referee compare`` pair have other ids); without one, the match id and seat do."""
    seeded = {**match_start(seat=1, match="cmp/d00001/new/r1"), "seed": 2**52 + 17}
    other_half = {**seeded, "match": "cmp/d00001/old/r1"}
    assert _draws_after(seeded) == _draws_after(other_half)
    assert _draws_after(seeded) != _draws_after({**seeded, "seed": 2**52 + 18})
    old_referee = match_start(seat=1, match="t-9")
    before_1_2 = random.Random("t-9:1")
    assert _draws_after(old_referee) == [before_1_2.random() for _ in range(3)]
    assert _draws_after({**old_referee, "seed": True}) == _draws_after(old_referee)


@pytest.mark.skipif(not HAS_NODE, reason="node is not installed")
def test_javascript_kit_seeds_its_generator_from_match_starts_seed() -> None:
    seeded = {**match_start(seat=1, match="cmp/d00001/new/r1"), "seed": 2**52 + 17}
    starts = [
        seeded,
        {**seeded, "match": "cmp/d00001/old/r1"},
        {**seeded, "seed": 2**52 + 18},
        match_start(seat=1, match="t-9"),
        match_start(seat=1, match="t-9"),
    ]
    script = f"""
        const k = require({str(JS_KIT)!r});
        const draws = {json.dumps(starts)}.map((msg) => {{
            const bot = new k.Bot();
            bot.handle(msg);
            return [bot.random(), bot.random(), bot.random()];
        }});
        console.log(JSON.stringify(draws));
    """
    out = subprocess.run(["node", "-e", script], capture_output=True, timeout=10, check=True)
    draws = json.loads(out.stdout)
    assert all(0 <= x < 1 for row in draws for x in row)
    assert draws[0] == draws[1] and draws[0] != draws[2]
    assert draws[3] == draws[4] and draws[3] != draws[0]
    assert len({x for row in draws[:1] + draws[2:4] for x in row}) == 9
