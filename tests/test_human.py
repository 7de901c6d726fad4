"""The person at the table (referee.match.human): the answer parser, the terminal reader, the
rules in words, and whole matches against in-memory bots with a scripted person.

The scripted person reads the screen the way a person would: it finds the last prompt,
answers from a script first (typos included), then sensibly. The bots are the fast fakes of
referee.testing; tests/test_human_pty.py plays the real command through a terminal.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main as cli_main
from referee.explain import explain_fault
from referee.match.human import (
    CardChoice,
    LineReader,
    PersonSession,
    TableView,
    read_answer,
    rules_summary,
)
from referee.match.runner import play_match
from referee.match.text import render_text
from referee.matchlog import read_log
from referee.protocol import messages as m
from referee.protocol.seats import SessionPool, seated
from referee.rules import RuleSet, replay
from referee.rules.cards import DECKS, CardCodec
from referee.rules.ruleset import PRESETS
from referee.sandbox import Limits
from referee.specs import TimeControl
from referee.testing import FakeClock, FakeSandbox, lowest_bot, spec

FAST = TimeControl(move_ms=50, bank_ms=50, hello_ms=1000)

# -- read_answer -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "picks"),
    [("3", (3,)), (" 3 ", (3,)), ("03", (3,)), ("0", (0,)), ("p", (0,)), ("PASS", (0,))],
)
def test_a_choice_is_read(text: str, picks: tuple[int, ...]) -> None:
    assert read_answer(text, 5, pass_allowed=True).picks == picks


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "nothing typed: type a number from 1 to 5, 0 to pass (? shows the rules)"),
        ("   ", "nothing typed"),
        ("x7", "'x7' is not a number: type a number from 1 to 5, 0 to pass"),
        ("9", "9 is not one of the options: type a number from 1 to 5"),
        ("-1", "'-1' is not a number"),
        ("1.5", "'1.5' is not a number"),
        ("٣", "'٣' is not a number"),  # a digit, but not one a person means here
        ("1 2", "2 numbers typed: type a number from 1 to 5"),
        ("9" * 40, "9" * 19 + "… is not one of the options"),
    ],
)
def test_a_wrong_choice_says_what_to_type(text: str, says: str) -> None:
    answer = read_answer(text, 5, pass_allowed=True)
    assert answer.picks == () and not answer.rules
    assert answer.problem is not None and says in answer.problem


def test_a_pass_is_refused_with_the_reason_when_leading() -> None:
    answer = read_answer("0", 4, no_pass="you lead this trick, so you may not pass")
    assert answer.problem == (
        "you lead this trick, so you may not pass: type a number from 1 to 4 (? shows the rules)"
    )
    assert (
        read_answer("p", 4).problem == "'p' is not a number: type a number from 1 to 4 "
        "(? shows the rules)"
    )


def test_only_a_pass_is_offered_when_nothing_beats() -> None:
    assert read_answer("0", 0, pass_allowed=True).picks == (0,)
    assert read_answer("1", 0, pass_allowed=True).problem == (
        "1 is not one of the options: nothing beats it here: type 0 to pass (? shows the rules)"
    )


@pytest.mark.parametrize("text", ["?", " ? ", "help", "H"])
def test_a_question_mark_asks_for_the_rules(text: str) -> None:
    assert read_answer(text, 3).rules


@pytest.mark.parametrize(
    ("text", "picks", "says"),
    [
        ("2 5", (2, 5), None),
        ("5,2", (5, 2), None),
        ("2  ,  5", (2, 5), None),
        ("2", (), "1 number typed: type 2 different numbers from 1 to 8, separated by spaces"),
        ("2 5 6", (), "3 numbers typed"),
        ("2 2", (), "2 is listed twice: type 2 different numbers"),
        ("2 9", (), "9 is not one of the options"),
        ("0 1", (), "0 is not one of the options"),
        ("2 x", (), "'x' is not a number"),
    ],
)
def test_cards_to_give_are_read(text: str, picks: tuple[int, ...], says: str | None) -> None:
    answer = read_answer(text, 8, want=2)
    assert answer.picks == picks
    if says is None:
        assert answer.problem is None
    else:
        assert answer.problem is not None and says in answer.problem


def test_a_typed_control_character_is_shown_escaped() -> None:
    answer = read_answer("\x1b[2J", 3)
    assert (
        answer.problem
        == "'\\x1b[2J' is not a number: type a number from 1 to 3 (? shows the rules)"
    )


# -- cards named by their codes ------------------------------------------------------------

SKAT = CardCodec(DECKS["skat32"], ["7", "8", "9", "10", "J", "Q", "K", "A"])
HAND = ("7C", "8C", "8H", "9S", "10H", "JD")
PLAYS = (("8C",), ("8C", "8H"), ("9S",), ("10H",), ("JD",))  # on a 7; a pass besides
PLAY_HINT = "type a number from 1 to 5 or the cards (e.g. 8C 8H), 0 to pass (? shows the rules)"


def _play(text: str) -> Any:
    choice = CardChoice(SKAT, plays=PLAYS, hand=HAND)
    return read_answer(text, len(PLAYS), pass_allowed=True, cards=choice)


@pytest.mark.parametrize(
    ("text", "picks", "cards"),
    [
        ("8C 8H", (2,), ("8C", "8H")),
        ("8h 8c", (2,), ("8H", "8C")),  # any order, any case
        ("8H", (1,), ("8H",)),  # the other 8 than the option's: the rank is what counts
        ("10H", (4,), ("10H",)),
        ("th", (4,), ("10H",)),
        ("8♣ 8♥", (2,), ("8C", "8H")),  # as the screen shows them
        ("8c,8h", (2,), ("8C", "8H")),
        ("3", (3,), ()),  # numbers still work
        ("p", (0,), ()),
    ],
)
def test_a_play_is_read_by_its_cards(
    text: str, picks: tuple[int, ...], cards: tuple[str, ...]
) -> None:
    answer = _play(text)
    assert (answer.picks, answer.cards, answer.problem) == (picks, cards, None)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("8C 8D", f"8D is not in your hand: {PLAY_HINT}"),
        ("8x", f"'8x' is neither a number nor a card: {PLAY_HINT}"),
        ("2C", "'2C' is neither a number nor a card"),  # not in this deck
        ("10", "10 is not one of the options"),  # a number, not the rank
        ("8C 9S", f"8C 9S is not one of the plays you may make now: {PLAY_HINT}"),
        ("7C", "7C is not one of the plays you may make now"),  # held, but too low
        ("8C 8c", "8C is listed twice"),
        ("8C 3", f"numbers and cards mixed: {PLAY_HINT}"),
        ("8C pass", "numbers and cards mixed"),
        ("\x1b[2J", "'\\x1b[2J' is neither a number nor a card"),
    ],
)
def test_a_wrong_card_code_says_what_is_wrong(text: str, says: str) -> None:
    answer = _play(text)
    assert answer.picks == () and answer.problem is not None and says in answer.problem


def test_cards_to_give_and_leftovers_are_read_by_their_codes() -> None:
    give = CardChoice(SKAT, cards=HAND)
    answer = read_answer("jd 7c", len(HAND), want=2, cards=give)
    assert (answer.picks, answer.cards) == ((6, 1), ("JD", "7C"))
    assert read_answer("JD", len(HAND), want=2, cards=give).problem == (
        "1 card typed: type 2 different numbers from 1 to 6, separated by spaces, "
        "or the cards (e.g. 7C 8C) (? shows the rules)"
    )
    assert "AS is not in your hand" in str(read_answer("AS JD", 6, want=2, cards=give).problem)
    offer = CardChoice(SKAT, cards=("9C", "KH"), absent="is not offered")
    assert read_answer("kh", 2, cards=offer).picks == (2,)
    assert read_answer("AS", 2, cards=offer).problem == (
        "AS is not offered: type a number from 1 to 2 or the card (e.g. 9C) (? shows the rules)"
    )


def test_spanish_cards_and_the_ten_are_read_in_their_deck() -> None:
    ranks = ["1", "2", "3", "4", "5", "6", "7", "10", "11", "12"]
    spanish = CardChoice(CardCodec(DECKS["spanish40"], ranks), cards=("10O", "12B", "1C"))
    assert read_answer("12b", 3, cards=spanish).cards == ("12B",)
    assert read_answer("to", 3, cards=spanish).cards == ("10O",)
    assert "'8C' is neither a number nor a card" in str(read_answer("8C", 3, cards=spanish).problem)
    no_ten = CardChoice(CardCodec(DECKS["skat32"], ["7", "8", "9", "A"]), cards=("7C", "AS"))
    assert "'TH' is neither" in str(read_answer("TH", 2, cards=no_ten).problem)


# -- LineReader ------------------------------------------------------------------------------


def _read_all(fd: int) -> list[str | None]:
    async def go() -> list[str | None]:
        reader = LineReader(fd)
        out: list[str | None] = []
        while True:
            line = await reader.readline()
            out.append(line)
            if line is None:
                return out

    return asyncio.run(go())


def test_lines_come_from_a_pipe_as_typed() -> None:
    r, w = os.pipe()
    os.write(w, "1\r\n2 3\n\nüß?\nno newline".encode())
    os.close(w)
    try:
        assert _read_all(r) == ["1", "2 3", "", "üß?", "no newline", None]
    finally:
        os.close(r)


def test_lines_come_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "answers.txt"
    path.write_bytes(b"1\n\xff\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_all(fd) == ["1", "\ufffd", None]
    finally:
        os.close(fd)


def test_a_closed_input_is_the_end() -> None:
    r, w = os.pipe()
    os.close(w)
    os.close(r)
    assert _read_all(r) == [None]


def test_lines_come_from_a_terminal_and_ctrl_d_ends_them() -> None:
    master, slave = os.openpty()
    try:
        os.write(master, b"1 2\nhalf")
        os.write(master, b"\x04")  # Ctrl-D after text: that text, without Enter
        os.write(master, b"\x04")  # Ctrl-D on an empty line: the end
        assert LineReader(slave).echoes
        assert _read_all(slave) == ["1 2", "half", None]
    finally:
        os.close(master)
        os.close(slave)


def test_lines_wait_for_the_person_without_blocking_the_loop() -> None:
    r, w = os.pipe()

    async def go() -> tuple[str | None, int]:
        reader = LineReader(r)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            for _ in range(5):
                await asyncio.sleep(0.01)
                ticks += 1
            os.write(w, b"late\n")

        _, line = await asyncio.gather(tick(), reader.readline())
        return line, ticks

    try:
        assert asyncio.run(go()) == ("late", 5)
    finally:
        os.close(r)
        os.close(w)


# -- the rules and the table in words -----------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_every_preset_has_its_rules_in_words(preset: str, players: int) -> None:
    rules = m.Rules.model_validate(RuleSet.preset(preset).resolve(players).as_protocol())
    lines = rules_summary(rules, players)
    assert all(len(line) <= 88 for line in lines)
    text = " ".join(line.strip() for line in lines)
    assert " ".join(rules.ranks) in text
    assert ("an equal or higher rank" in text) == (rules.equal_rank == "skip_next")
    assert ("keeps you out" in text) == (rules.pass_rule == "out")
    assert ("may not contain A" in text) == (rules.no_finish_on == ["A"])
    assert ("cards of its choice" in text) == (rules.return_choice == "choose")


def test_the_arschloch_rules_read_well() -> None:
    rules = m.Rules.model_validate(RuleSet.preset("arschloch").resolve(3).as_protocol())
    text = " ".join(line.strip() for line in rules_summary(rules, 3))
    assert "Everyone gets 10 cards; the 2 left over are out of play in round 1" in text
    assert "whoever holds 7♣" in text
    assert "gives its 1 best card(s) to the 1st" in text
    assert "reaches 15 points, or after at most 100 rounds" in text


def _view(deck: str = "arschloch", names: list[str] | None = None) -> TableView:
    rules = m.Rules.model_validate(RuleSet.preset(deck).resolve(3).as_protocol())
    return TableView(0, names or ["you", "a", "b"], rules)


def test_cards_show_their_suit_symbols_sorted_by_the_rules_rank_order() -> None:
    view = _view("trou-du-cul")  # 3 … K A 2
    assert view.cards(["2C", "AH", "3D", "10S", "3C"]) == "3♣ 3♦ 10♠ A♥ 2♣"
    assert view.hand_lines(["2C", "3D"]) == ["Your hand (2): 3♦ 2♣"]


def test_spanish_cards_keep_their_letters_with_a_legend() -> None:
    view = _view("president-es")  # 2 … 12 1
    assert view.cards(["1O", "12B", "2E"]) == "2E 12B 1O"
    assert view.hand_lines(["1O"])[1] == "  suits: O oros · C copas · E espadas · B bastos"


def test_names_and_fault_details_from_bots_are_shown_safely() -> None:
    view = _view(names=["you", "\x1b[31mred\x07", "b" * 64])
    view.take(m.Fault(seat=1, kind="protocol", detail="bad \x1b]0;title\x07 line"))
    table = "\n".join(view.table())
    assert "\x1b" not in table and "\\x1b[31mred\\x07" in table
    assert "b" * 23 + "…" in table and "b" * 24 not in table
    assert "forfeit" in table.splitlines()[3]
    assert view.history() == [
        "  ! \\x1b[31mred\\x07 forfeited (protocol: bad \\x1b]0;title\\x07 line); the referee "
        "plays that seat from now on"
    ]


def test_the_spanish_rules_name_the_start_card_in_letters() -> None:
    rules = m.Rules.model_validate(RuleSet.preset("president-es").resolve(4).as_protocol())
    text = " ".join(line.strip() for line in rules_summary(rules, 4))
    assert "whoever holds 2O" in text
    assert "who gives back as many of its lowest cards (done for it)" in text
    assert "Points by place in a round: 1st +2, 2nd +1, 3rd -1, 4th -2." in text
    assert "The match ends after 5 rounds, or after at most 100 rounds" in text


# -- whole matches with a scripted person ---------------------------------------------------------

PROMPT = re.compile(r"(Your play|Cards to give|Leftover to take|Card to discard) \[([^\]]*)\]: $")


class ScriptedPerson:
    """Plays from the screen: the scripted answers first (``by_kind``: for the first prompts of
    one kind), then the lowest option (a pass when
    only that is left), the first cards to give, the first leftover and the first card."""

    echoes = False

    def __init__(
        self,
        script: list[str | None] | None = None,
        *,
        by_kind: dict[str, list[str | None]] | None = None,
        delay_s: float = 0.0,
        slow_answers: int = 0,
        clock: FakeClock | None = None,
    ) -> None:
        self.script = list(script or [])
        self.by_kind = by_kind or {}
        self.delay_s = delay_s
        self.slow_answers = slow_answers
        self.clock = clock
        self.screen = ""
        self.prompts: list[str] = []

    def write(self, text: str) -> None:
        self.screen += text

    async def readline(self) -> str | None:
        found = PROMPT.search(self.screen)
        assert found is not None, f"no prompt on screen: {self.screen[-300:]!r}"
        self.prompts.append(found.group(1))
        if len(self.prompts) <= self.slow_answers:
            assert self.clock is not None, "a slow person takes time on a (fake) clock"
            await self.clock.sleep(self.delay_s)
        kind, choices = found.groups()
        if self.script:
            return self.script.pop(0)
        if self.by_kind.get(kind):
            return self.by_kind[kind].pop(0)
        if kind == "Your play":
            return "0" if choices.startswith("0 pass") else "1"
        if kind == "Cards to give":
            count = int(choices.split()[0])
            return " ".join(str(i) for i in range(1, count + 1))
        return "1"


def play_with(
    person: ScriptedPerson,
    tmp_path: Path,
    *,
    seat: int = 0,
    bots: tuple[str, ...] = ("lowest", "other"),
    preset: str = "arschloch",
    seed: int = 1,
    max_rounds: int = 2,
    tc: TimeControl = FAST,
) -> Any:
    rules = RuleSet.preset(preset, max_rounds=max_rounds).resolve(len(bots) + 1)
    sandbox = FakeSandbox({name: lowest_bot for name in bots})
    you = PersonSession("you", reader=person, write=person.write, symbols=True)
    clock = FakeClock()

    async def go() -> Any:
        specs = [spec(b) for b in bots]
        async with seated(
            specs, sandbox=sandbox, time_control=tc, occupied={seat: you}, clock=clock
        ) as table:
            return await play_match(
                table, rules, seed, match_id="human-test", log_path=tmp_path / "m.jsonl"
            )

    return clock.run(go())


def test_a_person_plays_a_whole_match(tmp_path: Path) -> None:
    person = ScriptedPerson(["", "x7", "99", "?", "1"])
    result = play_with(person, tmp_path)
    screen = person.screen
    assert result.rounds == 2
    assert [st.forfeit for st in result.standings] == [False, False, False]
    assert {st.name for st in result.standings} == {"you", "lowest", "other"}
    assert "Match human-test · arschloch · 3 players · you sit at seat 0." in screen
    assert "  ✗ nothing typed: type a number from 1 to " in screen
    assert "  ✗ 'x7' is neither a number nor a card: type a number" in screen
    assert "  ✗ 99 is not one of the options:" in screen
    assert "whoever holds 7♣" in screen  # the rules, after ?
    assert "  seat  player  cards  role            score" in screen
    assert re.search(r"Your hand \(\d+\): 7", screen)
    assert "Round 1 over: " in screen and "Round 2 over: " in screen
    assert screen.rstrip().endswith("The match is over.")
    # What the person chose is what the log holds, and the log replays.
    game = replay(read_log(result.log))
    assert game.over and game.round == 2


_LETTERS = str.maketrans({"♣": "C", "♠": "S", "♥": "H", "♦": "D"})


class CodeTypist(ScriptedPerson):
    """Types cards where a number would do, in small letters and the other way round
    (``8♣ 8♥`` becomes ``8h 8c``): the first play of several cards there is, else the
    first option; the first cards to give; a pass as 0."""

    def __init__(self) -> None:
        super().__init__()
        self.typed: list[str] = []

    async def readline(self) -> str | None:
        found = PROMPT.search(self.screen)
        assert found is not None
        kind, choices = found.groups()
        self.prompts.append(kind)
        if kind == "Your play" and choices.startswith("0 pass"):
            return "0"
        menu: list[Any] = []
        for line in reversed(self.screen[: found.start()].split("\n")[:-1]):
            if not re.match(r" +\d+\) ", line):
                break
            menu[:0] = re.findall(r"\d+\) (\S+(?: \S+)*)", line)
        options = [o.translate(_LETTERS).lower().split() for o in menu if o != "pass"]
        if kind == "Cards to give":
            codes = [o[0] for o in options[: int(choices.split()[0])]]
        else:
            codes = next((o for o in options if len(o) > 1), options[0])
        answer = " ".join(reversed(codes))
        self.typed.append(answer)
        return answer


def test_a_person_plays_and_gives_by_card_codes(tmp_path: Path) -> None:
    for seed in range(1, 40):  # the first deal where it gives cards back
        person = CodeTypist()
        result = play_with(person, tmp_path, seed=seed)
        if "Cards to give" in person.prompts:
            break
    assert "✗" not in person.screen.replace("✗ lowest", "").replace("✗ other", "")
    assert "Cards to give" in person.prompts and len(person.typed) > 5
    assert any(" " in answer for answer in person.typed)  # several cards, in reverse order
    assert [st.forfeit for st in result.standings] == [False] * 3
    lines = read_log(result.log)
    mine = [
        sorted(row["cards"])
        for row in lines
        if (row["type"] == "played" and row["seat"] == 0)
        or (row["type"] == "exchange" and row["from"] == 0)
    ]
    assert mine == [sorted(a.upper().split()) for a in person.typed]
    assert replay(lines).over


def test_each_typo_is_answered_and_asked_again(tmp_path: Path) -> None:
    person = ScriptedPerson(["abc", "", "1"])
    play_with(person, tmp_path, max_rounds=1)
    first = person.screen.split("Your play [", 1)[1]
    assert first.count("Your play [") >= 2  # asked again after each of the two typos
    assert person.prompts[:3] == ["Your play"] * 3


def _first_seed(kind: str, tmp_path: Path, seats: int = 3) -> tuple[int, ScriptedPerson]:
    bots = ("lowest", "other", "third", "fourth", "fifth")[: seats - 1]
    for seed in range(1, 40):
        person = ScriptedPerson()
        play_with(person, tmp_path, seed=seed, bots=bots)
        if kind in person.prompts:
            return seed, person
    raise AssertionError(f"no seed brings a {kind!r} request")


def test_a_person_gives_cards_back(tmp_path: Path) -> None:
    seed, _ = _first_seed("Cards to give", tmp_path)
    person = ScriptedPerson(by_kind={"Cards to give": ["1 1", "1 2 3 4 5 6 7 8 9 10 11 12"]})
    result = play_with(person, tmp_path, seed=seed)
    screen = person.screen
    # 10 cards dealt and 1 received: 11 to choose from.
    assert "  ✗ 1 is listed twice: type a number from 1 to 11 or the card (e.g. 7" in screen
    assert "  ✗ 12 is not one of the options: type a number from 1 to 11" in screen
    assert person.prompts.count("Cards to give") == 3
    assert re.search(r"Give 1 card back to \w+: type their numbers", screen)
    assert "Cards to give [1 of 1-11 or the cards, ? rules]: " in screen
    received = re.search(r"you received (\S+) from (\w+)", screen)
    gave = re.search(r"you gave (\S+) to (\w+)", screen)  # the lowest card, number 1
    assert received and gave and gave.group(2) == received.group(2)
    assert gave.group(1).startswith("7")
    assert replay(read_log(result.log)).over


def test_a_person_takes_a_leftover(tmp_path: Path) -> None:
    _, person = _first_seed("Leftover to take", tmp_path)
    screen = person.screen
    assert "Leftovers face up: " in screen
    assert re.search(r"You take \S+ and discard \S+\.", screen)
    assert "you took the leftover" not in screen  # said once, with the discard


def mute_bot() -> Any:
    """Greets, then never answers a request."""
    greet = lowest_bot("mute")

    def handle(msg: dict[str, Any]) -> Any:
        return greet(msg) if msg.get("type") == "hello" else None

    return handle


def test_the_person_has_no_time_limit_while_the_bots_keep_theirs(tmp_path: Path) -> None:
    # Each of the person's first two answers takes 150 ms, past move_ms + bank (50 + 50).
    clock = FakeClock()
    person = ScriptedPerson(delay_s=0.15, slow_answers=2, clock=clock)
    rules = RuleSet.preset("arschloch", max_rounds=1).resolve(3)
    sandbox = FakeSandbox({"lowest": lowest_bot, "mute": mute_bot})
    you = PersonSession(reader=person, write=person.write)

    async def go() -> Any:
        bots = [spec("lowest"), spec("mute")]
        async with seated(
            bots, sandbox=sandbox, time_control=FAST, occupied={0: you}, clock=clock
        ) as table:
            return await play_match(table, rules, 1, match_id="human-clock")

    result = clock.run(go())
    assert result.duration_s > 0.3  # the person's two answers took that long
    assert len(person.prompts) > 2
    faults = {st.name: st.fault.kind if st.fault else None for st in result.standings}
    assert faults == {"you": None, "lowest": None, "mute": "timeout"}


def test_leaving_forfeits_the_seat_and_the_match_plays_on(tmp_path: Path) -> None:
    person = ScriptedPerson(["?", None])
    result = play_with(person, tmp_path)
    you = next(st for st in result.standings if st.name == "you")
    assert you.forfeit and you.fault is not None
    assert (you.fault.kind, you.fault.detail) == (
        "left",
        "the person left the match (end of input)",
    )
    # Told as leaving, not as a bot's crash: no hints, no stderr.
    assert explain_fault(you.fault) == [
        "problem: left the match at act 3 (play, round 1)",
        "the referee's fallback policy played the seat to the end",
    ]
    fault_row = next(row for row in read_log(result.log) if row["type"] == "fault")
    assert (fault_row["kind"], fault_row["seat"]) == ("left", you.seat)
    assert "    ! you left the match; the fallback policy plays on" in render_text(
        read_log(result.log)
    )
    assert "You left the match. The referee plays your seat to the end" in person.screen
    assert person.screen.count("Your play [") == 2  # never asked again
    assert result.rounds == 2 and replay(read_log(result.log)).over


def test_the_person_may_sit_anywhere_and_keeps_the_name(tmp_path: Path) -> None:
    person = ScriptedPerson()
    result = play_with(person, tmp_path, seat=2, bots=("you", "b", "c", "d"), max_rounds=1)
    names = {st.seat: st.name for st in result.standings}
    assert names == {0: "you#1", 1: "b", 2: "you", 3: "c", 4: "d"}
    assert "you sit at seat 2." in person.screen


SAMPLES = Path(__file__).resolve().parent.parent / "sample_bots"


@pytest.mark.parametrize(
    ("args", "bots", "says"),
    [
        (["--human", "3"], 2, "--human 3: with 2 bot(s) and you, the seats are 0 to 2"),
        (
            ["--human", "0"],
            1,
            "a match needs 3 to 6 players: with 1 person(s) seated, 2 to 5 bots, got 1",
        ),
        (
            ["--human", "0"],
            6,
            "a match needs 3 to 6 players: with 1 person(s) seated, 2 to 5 bots, got 6",
        ),
        (
            ["--human", "0", "--json"],
            2,
            "--human and --json do not go together: the game is played on screen",
        ),
        (["--human", "-1"], 2, "Invalid value for '--human': -1 is not in the range 0<=x<=5."),
    ],
)
def test_a_wrong_human_seat_is_one_clear_line(args: list[str], bots: int, says: str) -> None:
    paths = [str(SAMPLES / "lowest")] * bots
    result = CliRunner().invoke(cli_main, ["play", *args, *paths])
    assert result.exit_code == 2
    assert says in result.output and "Traceback" not in result.output


def test_play_help_explains_the_human_seat() -> None:
    result = CliRunner().invoke(cli_main, ["play", "--help"])
    assert result.exit_code == 0
    assert "--human SEAT" in result.output
    assert "You have no time limit; the bots keep theirs." in " ".join(result.output.split())


def test_people_sit_at_free_seats_of_the_table(tmp_path: Path) -> None:
    sandbox = FakeSandbox({"lowest": lowest_bot})

    async def attempt(seat: int) -> None:
        person = PersonSession(reader=ScriptedPerson())
        async with seated([spec("lowest")] * 2, sandbox=sandbox, occupied={seat: person}):
            pass

    with pytest.raises(ValueError, match=r"the seats taken must be among 0 to 2: \[3\]"):
        asyncio.run(attempt(3))
    assert sandbox.started == [], "refused before any bot was started"


def test_a_person_sits_among_bots_borrowed_from_a_pool(tmp_path: Path) -> None:
    """People are seated the one way too: around pooled bots, who go back to the pool."""
    sandbox = FakeSandbox({"lowest": lowest_bot, "other": lowest_bot})
    rules = RuleSet.preset("arschloch", max_rounds=1).resolve(3)
    pool = SessionPool(sandbox, Limits(), FAST)

    async def go() -> list[Any]:
        results = []
        for n in (1, 2):
            person = ScriptedPerson()
            you = PersonSession(reader=person, write=person.write)
            bots = [spec("lowest"), spec("other")]
            async with seated(bots, pool=pool, deal_key=f"d{n}", occupied={1: you}) as table:
                assert table.seats[1] is you and table.seats[0] is table.bots[0]
                results.append(await play_match(table, rules, n, match_id=f"m{n}"))
        await pool.aclose()
        return results

    results = asyncio.run(go())
    assert len(sandbox.started) == 2, "the second match borrowed the first one's bots"
    for result in results:
        assert [st.seat for st in result.standings if st.name == "you"] == [1]
        assert not any(st.forfeit for st in result.standings)
