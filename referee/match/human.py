"""A person at the table: ``referee play --human SEAT`` seats you among the bots.

The person takes a seat the way a bot does, through the same protocol: a
:class:`PersonSession` is handed the very lines a bot would read (``match_start``, the
events, the ``act`` requests), keeps a :class:`TableView` of the game from them, and answers
each request by asking on the terminal. So the match runner needs no special case, and what
the person sees is exactly what a bot is told, no more.

Three things differ from a bot: there is no clock (the match waits for the person; the bots
keep their limits), a wrong answer is asked again instead of forfeiting the seat, and the
end of input (Ctrl-D) is the person leaving, which forfeits the seat (fault kind ``left``) so
the referee's fallback policy plays it to the end. Ctrl-C stops the whole match, as in
every other command.

Input is read with the event loop's reader on the terminal, never in a thread: a thread
blocked in ``read`` would outlive Ctrl-C (the runner waits for its executor's threads, and
a daemon thread holding ``sys.stdin``'s lock crashes the interpreter's exit).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from referee.errors import BotFault
from referee.protocol import messages as m
from referee.protocol.channel import KeptStderr
from referee.results import KitReplacement
from referee.rules.cards import DECKS, CardCodec
from referee.text import ordinal, printable

__all__ = [
    "Answer",
    "CardChoice",
    "LineReader",
    "PersonSession",
    "TableView",
    "card_label",
    "read_answer",
    "rules_summary",
]

_WIDTH = 88  # wrap long lines (rules, card grids) for an ordinary terminal
_SHOWN_TYPO = 20  # characters of a mistyped answer echoed back in the message
_SHOWN_NAME = 24  # characters of a seat's name on screen (names may hold 64)
_REASON = {"all_passed": "everyone else passed", "top_card": "nobody can beat it"}
_SPANISH_LEGEND = "O oros · C copas · E espadas · B bastos"


# -- what the person typed -----------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A typed line, understood: the options picked (with the cards typed, when the
    person named cards), a call for the rules, or the problem to show before asking again
    (exactly one of the three)."""

    picks: tuple[int, ...] = ()
    rules: bool = False
    problem: str | None = None
    cards: tuple[str, ...] = ()
    """The cards typed, when the answer named cards rather than numbers (in a play, the
    suits the person chose, which may differ from the option's)."""


@dataclass(frozen=True)
class CardChoice:
    """What card codes typed at a prompt mean, for one deck (``codec``).

    Each numbered option is either one card (``cards``: a give, a leftover) or a play of
    cards from ``hand`` (``plays``: a play request, matched by ranks, as the referee does).
    A code is read as a person types it: ``8c``, ``10H``, ``TH`` (where the deck has a
    10), ``8♣``.
    """

    codec: CardCodec
    cards: tuple[str, ...] = ()
    plays: tuple[tuple[str, ...], ...] = ()
    hand: tuple[str, ...] = ()
    absent: str = "is not in your hand"
    """What is said of a card of the deck that is not among ``cards``."""

    def card(self, word: str) -> str | None:
        """The card ``word`` names in this deck, or ``None``."""
        text = word.upper().replace("\ufe0f", "")  # an emoji's variation selector
        deck = self.codec.deck
        for symbol, letter in zip(deck.suit_symbols, deck.suits, strict=True):
            text = text.replace(symbol, letter)
        if text[:1] == "T" and "10" in self.codec.rank_names:
            text = "10" + text[1:]
        return text if text in self.codec.ids else None

    def example(self, want: int) -> str:
        """Codes a person could type here, to show how."""
        if self.plays:
            return " ".join(next((p for p in self.plays if len(p) > 1), self.plays[0]))
        return " ".join(self.cards[:want])

    def read(self, words: list[str], want: int, hint: str) -> Answer:
        """The options ``words`` (card codes) name, or the problem with them."""
        typed: list[str] = []
        for word in words:
            card = self.card(word)
            if card is None:
                shown = _clip(printable(word), _SHOWN_TYPO)
                return Answer(problem=f"'{shown}' is neither a number nor a card: {hint}")
            if card in typed:
                return Answer(problem=f"{card} is listed twice: {hint}")
            typed.append(card)
        pool = self.hand if self.plays else self.cards
        missing = next((card for card in typed if card not in pool), None)
        if missing is not None:
            return Answer(problem=f"{missing} {self.absent}: {hint}")
        if self.plays:
            ranks = sorted(card[:-1] for card in typed)
            for number, play in enumerate(self.plays, 1):
                if sorted(card[:-1] for card in play) == ranks:
                    return Answer(picks=(number,), cards=tuple(typed))
            shown = " ".join(typed)
            return Answer(problem=f"{shown} is not one of the plays you may make now: {hint}")
        if len(typed) != want:
            return Answer(problem=f"{_n_cards(len(typed))} typed: {hint}")
        picks = tuple(self.cards.index(card) + 1 for card in typed)
        return Answer(picks=picks, cards=tuple(typed))


def read_answer(
    text: str,
    options: int,
    *,
    want: int = 1,
    pass_allowed: bool = False,
    no_pass: str | None = None,
    cards: CardChoice | None = None,
) -> Answer:
    """Read an answer naming ``want`` distinct options among ``1..options``.

    ``0``, ``p`` or ``pass`` pick 0 (the pass) when ``pass_allowed``; otherwise ``no_pass``,
    if given, says why not. ``?`` (or ``help``) asks for the rules. Numbers may be separated
    by spaces or commas. With ``cards``, the options may be named by their cards instead
    (``8C 8H``, in any order and case); numbers and cards do not mix in one answer. Every
    other line is a problem whose message says what was wrong and what to type, so the
    caller asks again.
    """
    example = cards.example(want) if cards is not None and options else None
    hint = _hint(options, want, pass_allowed, example)
    words = text.replace(",", " ").split()
    if not words:
        return Answer(problem=f"nothing typed: {hint}")
    if len(words) == 1 and words[0].lower() in ("?", "h", "help"):
        return Answer(rules=True)
    if cards is not None and options:
        named = [w for w in words if not _a_number(w, pass_allowed)]
        if named and len(named) < len(words):
            return Answer(problem=f"numbers and cards mixed: {hint}")
        if named:
            return cards.read(words, want, hint)
    picks: list[int] = []
    for word in words:
        if pass_allowed and word.lower() in ("p", "pass"):
            word = "0"
        shown = _clip(printable(word), _SHOWN_TYPO)
        if not (word.isascii() and word.isdigit()):
            return Answer(problem=f"'{shown}' is not a number: {hint}")
        number = int(word)
        if number == 0 and pass_allowed and want == 1:
            picks.append(0)
            continue
        if number == 0 and no_pass is not None:
            return Answer(problem=f"{no_pass}: {hint}")
        if not 1 <= number <= options:
            return Answer(problem=f"{shown} is not one of the options: {hint}")
        if number in picks:
            return Answer(problem=f"{number} is listed twice: {hint}")
        picks.append(number)
    if len(picks) != want:
        typed = "1 number" if len(picks) == 1 else f"{len(picks)} numbers"
        return Answer(problem=f"{typed} typed: {hint}")
    return Answer(picks=tuple(picks))


def _a_number(word: str, pass_allowed: bool) -> bool:
    """Whether ``word`` is meant as a number (or the pass), not as a card."""
    return (word.isascii() and word.isdigit()) or (pass_allowed and word.lower() in ("p", "pass"))


def _clip(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def _hint(options: int, want: int, pass_allowed: bool, example: str | None = None) -> str:
    span = "1" if options == 1 else f"1 to {options}"
    if want == 1:
        what = f"type a number from {span}" if options > 1 else "type 1"
        if example:
            what += f" or the card{'s' if ' ' in example else ''} (e.g. {example})"
        if pass_allowed:
            what = what + ", 0 to pass" if options else "nothing beats it here: type 0 to pass"
    else:
        what = f"type {want} different numbers from {span}, separated by spaces"
        if example:
            what += f", or the cards (e.g. {example})"
    return f"{what} (? shows the rules)"


# -- the game as the person sees it ---------------------------------------------------------


@dataclass
class TableView:
    """The game as one seat knows it, kept from the protocol messages that seat receives.

    :meth:`take` follows every message and collects what happened, in words, until
    :meth:`history` hands it over: what the others did since the person last chose.
    """

    me: int
    players: list[str]
    rules: m.Rules
    symbols: bool = True
    codec: CardCodec = field(init=False)
    counts: list[int] = field(init=False)
    scores: list[int] = field(init=False)
    roles: list[str] | None = None
    status: list[str] = field(init=False)
    forfeited: set[int] = field(default_factory=set)
    round: int = 0
    trick: int = 1
    hand: list[str] = field(default_factory=list)
    _lines: list[str] = field(init=False, default_factory=list)
    _gift: tuple[int, int] | None = field(init=False, default=None)
    """Where the line telling what this seat gave in the exchange is, and to whom: the cards
    are chosen by the referee and only the receiver is told them, so they are worked out
    from the hand in the next request (:meth:`reconcile`)."""

    def __post_init__(self) -> None:
        self.players = [_clip(printable(p), _SHOWN_NAME) for p in self.players]
        self.codec = CardCodec(DECKS[self.rules.deck], self.rules.ranks)
        n = len(self.players)
        self.counts, self.scores, self.status = [0] * n, [0] * n, [""] * n

    @classmethod
    def start(cls, start: m.MatchStart, *, symbols: bool = True) -> TableView:
        """The view at ``match_start``, with its greeting queued."""
        view = cls(start.seat, list(start.players), start.rules, symbols=symbols)
        view._lines += [
            f"Match {printable(start.match)} · {start.rules.name} · {len(start.players)} "
            f"players · you sit at seat {start.seat}.",
            "Type ? at any prompt for the rules; Ctrl-D leaves the match, Ctrl-C stops it.",
        ]
        return view

    # -- cards and names --------------------------------------------------------------------

    def card(self, name: str) -> str:
        return card_label(self.codec, name, symbols=self.symbols)

    def sort(self, cards: list[str]) -> list[str]:
        """Cards in the rules' rank order, low to high, then by suit."""
        ids = self.codec.ids
        return sorted(cards, key=lambda c: ids.get(c, -1))

    def cards(self, cards: list[str]) -> str:
        return " ".join(self.card(c) for c in self.sort(cards)) if cards else "—"

    def who(self, seat: int) -> str:
        return self.players[seat] if 0 <= seat < len(self.players) else f"seat {seat}"

    def _was(self, seat: int) -> str:
        return f"{self.who(seat)} {'were' if seat == self.me else 'was'}"

    # -- following the messages -----------------------------------------------------------

    def reconcile(self, hand: list[str]) -> None:
        """The hand as the referee says it is now; names the cards this seat gave, if any."""
        if self._gift is not None:
            index, to = self._gift
            gone = _without(self.hand, hand)
            if gone:
                self._lines[index] = f"  you gave {self.cards(gone)} to {self.who(to)}"
            self._gift = None
        self.hand = list(hand)

    def history(self) -> list[str]:
        """What happened since the last call, in words; forgotten once handed over."""
        lines, self._lines = self._lines, []
        return lines

    def take(self, msg: m.ToBot) -> None:
        """Follow one message: update the table and note what happened."""
        handler = getattr(self, f"_on_{msg.type}", None)
        if handler is not None:
            handler(msg)

    def _on_round_start(self, msg: m.RoundStart) -> None:
        self.round, self.trick = msg.round, 1
        self.hand, self._gift = list(msg.hand), None
        self.counts, self.scores = list(msg.hand_sizes), list(msg.scores)
        self.roles = list(msg.roles) if msg.roles is not None else None
        self.status = ["forfeit" if s in self.forfeited else "" for s in range(len(self.counts))]
        self._lines += ["", f"── Round {msg.round} · dealer: {self.who(msg.dealer)} ──"]
        if msg.leftovers:
            self._lines.append(f"Leftovers face up: {self.cards(msg.leftovers)}")
        self._lines.append(f"Your hand: {self.cards(msg.hand)}")

    def _on_played(self, msg: m.Played) -> None:
        self.counts[msg.seat] -= len(msg.cards)
        if msg.seat == self.me:
            self.hand = _without(self.hand, msg.cards)
        self._lines.append(f"  {self.who(msg.seat)} played {self.cards(msg.cards)}")

    def _on_passed(self, msg: m.Passed) -> None:
        self._lines.append(f"  {self.who(msg.seat)} passed")

    def _on_skipped(self, msg: m.Skipped) -> None:
        self._lines.append(f"  {self._was(msg.seat)} skipped (an equal rank was played)")

    def _on_trick_end(self, msg: m.TrickEnd) -> None:
        self.trick += 1
        why = _REASON.get(msg.reason, msg.reason)
        self._lines.append(
            f"  → {self.who(msg.winner)} won the trick ({why}); next lead: {self.who(msg.leader)}"
        )

    def _on_finished(self, msg: m.Finished) -> None:
        self.counts[msg.seat] = 0
        self.status[msg.seat] = f"out: {ordinal(msg.place)}"
        self._lines.append(f"  ★ {self.who(msg.seat)} went out: {ordinal(msg.place)} place")

    def _on_eliminated(self, msg: m.Eliminated) -> None:
        self.counts[msg.seat] = 0
        self.status[msg.seat] = f"out: {ordinal(msg.place)}"
        self._lines.append(
            f"  ✗ {self._was(msg.seat)} left with only {self.cards(msg.cards)}, which may not "
            f"end a hand: out, {ordinal(msg.place)} place"
        )

    def _on_exchanged(self, msg: m.Exchanged) -> None:
        self.counts[msg.from_] -= msg.count
        self.counts[msg.to] += msg.count
        if msg.from_ == self.me:
            self._gift = (len(self._lines), msg.to)
        self._lines.append(
            f"  {self.who(msg.from_)} gave {_n_cards(msg.count)} to {self.who(msg.to)}"
        )

    def _on_received(self, msg: m.Received) -> None:
        self.hand += msg.cards
        self._lines.append(f"  you received {self.cards(msg.cards)} from {self.who(msg.from_)}")

    def _on_leftover_taken(self, msg: m.LeftoverTaken) -> None:
        if msg.seat == self.me:
            return  # said as the person chose it, with the discard only this seat knows
        self._lines.append(
            f"  {self.who(msg.seat)} took the leftover {self.card(msg.card)} and discarded a "
            "card face down"
        )

    def _on_fault(self, msg: m.Fault) -> None:
        self.forfeited.add(msg.seat)
        self.status[msg.seat] = "forfeit"
        self._lines.append(
            f"  ! {self.who(msg.seat)} forfeited ({msg.kind}: {printable(msg.detail)}); "
            "the referee plays that seat from now on"
        )

    def _on_round_end(self, msg: m.RoundEnd) -> None:
        self.scores = list(msg.scores)
        places = " · ".join(
            f"{ordinal(i + 1)} {self.who(s)} ({msg.points[s]:+d})" for i, s in enumerate(msg.places)
        )
        totals = " · ".join(f"{self.who(s)} {score}" for s, score in enumerate(msg.scores))
        self._lines += [f"Round {self.round} over: {places}", f"Scores: {totals}"]

    def _on_match_end(self, msg: m.MatchEnd) -> None:
        self._lines += ["", "The match is over."]

    # -- the screen at a request ----------------------------------------------------------

    def table(self, passed: Sequence[int] = (), leader: int | None = None) -> list[str]:
        """Every seat: its name, cards held, role from the last round, score, and state."""
        width = max(6, *(len(p) for p in self.players))
        lines = [
            f"Round {self.round} · trick {self.trick}",
            f"  seat  {'player':<{width}}  cards  {'role':<14}  score",
        ]
        for seat, name in enumerate(self.players):
            role = self.roles[seat].replace("_", "-") if self.roles else "—"
            notes = ["forfeit"] if seat in self.forfeited else []
            if self.status[seat] and self.status[seat] not in notes:
                notes.append(self.status[seat])
            if seat in passed and not self.status[seat]:
                notes.append("passed")
            if seat == leader:
                notes.append("led this trick")
            lines.append(
                f"  {seat:>4}  {name:<{width}}  {self.counts[seat]:>5}  {role:<14}  "
                f"{self.scores[seat]:>5}  {', '.join(notes)}".rstrip()
            )
        return lines

    def hand_lines(self, hand: list[str]) -> list[str]:
        """The person's hand, low to high (with the suit letters explained for spanish)."""
        lines = [f"Your hand ({len(hand)}): {self.cards(hand)}"]
        if self.codec.deck.name == "spanish40" or not self.symbols:
            lines.append(f"  suits: {_legend(self.codec)}")
        return lines

    def numbered(self, choices: Sequence[str], extra: Sequence[tuple[int, str]] = ()) -> list[str]:
        """Choices in columns, numbered from 1, then ``extra`` ones: ``  3) 8♣ 8♠   0) pass``."""
        pairs = [*enumerate(choices, 1), *extra]
        cells = [f"{i:>2}) {text}" for i, text in pairs]
        if not cells:
            return []
        width = max(len(c) for c in cells) + 3
        per_line = max(1, (_WIDTH - 2) // width)
        return [
            "  " + "".join(c.ljust(width) for c in cells[i : i + per_line]).rstrip()
            for i in range(0, len(cells), per_line)
        ]


def card_label(codec: CardCodec, name: str, *, symbols: bool = True) -> str:
    """One card for people: ``10♥``. The spanish deck keeps its letters (``12B``, with a
    legend): its suit symbols are emoji that many terminals lack or draw double-width."""
    cid = codec.ids.get(name)
    if cid is None or not symbols or codec.deck.name == "spanish40":
        return printable(name)
    return codec.pretty(cid)


def _without(cards: list[str], gone: list[str]) -> list[str]:
    """``cards`` less ``gone`` (a deck holds every card once)."""
    return [c for c in cards if c not in gone]


def _legend(codec: CardCodec) -> str:
    if codec.deck.name == "spanish40":
        return _SPANISH_LEGEND
    return " · ".join(
        f"{s} {n}" for s, n in zip(codec.deck.suits, codec.deck.suit_names, strict=True)
    )


# -- the rules in short words ---------------------------------------------------------------


def rules_summary(rules: m.Rules, players: int) -> list[str]:
    """The rules of this match in a few plain sentences, made from its parameters, so an
    override shows as it is played; for the ``?`` at a prompt."""
    codec = CardCodec(DECKS[rules.deck], rules.ranks)
    ncards = 4 * len(rules.ranks)
    parts = [
        f"{rules.name}: {ncards} cards ({rules.deck}); ranks from low to high: "
        f"{' '.join(rules.ranks)}. Only ranks count; suits never do.",
        _deal_words(rules, players, ncards),
        "A trick: the leader plays 1 to 4 cards of one rank; each next player plays as many "
        + (
            "cards of a higher rank, or passes."
            if rules.equal_rank == "forbidden"
            else "cards of an equal or higher rank, or passes; an equal rank makes the next "
            "player lose one turn."
        )
        + " The leader may not pass.",
        "After a pass you may play again when the turn comes back in the same trick."
        if rules.pass_rule == "reenter"
        else "A pass keeps you out of the rest of the trick.",
        "When everyone else has passed, the last player to play wins the trick and leads.",
    ]
    if rules.top_card_ends_trick:
        parts.append("A play that no card still in a hand can beat ends the trick at once.")
    if rules.no_finish_on:
        ranks = " ".join(rules.no_finish_on)
        parts.append(
            f"Your last play may not contain {ranks}; a hand of only {ranks} is out at once, "
            "at the lowest free place."
        )
    start = card_label(codec, rules.start_card)
    parts.append(
        f"Round 1 is led by whoever holds {start}; later rounds by the last place of the round "
        "before. Who empties the hand first is 1st, and so on."
    )
    parts += [_exchange_words(rules), _scoring_words(rules)]
    low, suits = rules.ranks[0], codec.deck.suits
    ten = f"; T{suits[2]} for 10{suits[2]}" if "10" in rules.ranks else ""
    parts.append(
        "At a prompt type the number of your choice, or the cards themselves "
        f"({low}{suits[0]} {low}{suits[2]}, in any order or case{ten}), and Enter; 0 passes. "
        "? shows these rules, Ctrl-D leaves the match (the referee plays your seat on), "
        "Ctrl-C stops it."
    )
    return [line for part in parts for line in textwrap.wrap(part, _WIDTH, subsequent_indent="  ")]


def _deal_words(rules: m.Rules, players: int, ncards: int) -> str:
    if rules.deal == "all":
        return "Every card is dealt; some players may hold one card more than others."
    left = ncards % players
    words = f"Everyone gets {ncards // players} cards"
    if not left:
        return words + "."
    if rules.leftovers == "out":
        return words + f"; the {left} left over stay face down, out of play."
    return words + (
        f"; the {left} left over are out of play in round 1. From round 2 they lie face up, "
        "and the 3rd, 4th… place of the round before each take one and discard one card."
    )


def _exchange_words(rules: m.Rules) -> str:
    if not rules.exchange:
        return "Nobody exchanges cards between rounds."
    back = (
        "as many cards of its choice"
        if rules.return_choice == "choose"
        else "as many of its lowest cards (done for it)"
    )
    words = (
        f"From round 2 the last place gives its {rules.exchange[0]} best card(s) to the 1st, "
        f"who gives back {back}"
    )
    if len(rules.exchange) > 1:
        words += (
            f"; the second-to-last and the 2nd exchange {rules.exchange[1]} card(s) the same way"
        )
    return words + "."


def _scoring_words(rules: m.Rules) -> str:
    if rules.scoring == "below":
        points = "A round scores one point for each player who went out after you."
    else:
        by_place = ", ".join(f"{ordinal(i + 1)} {p:+d}" for i, p in enumerate(rules.scoring))
        points = f"Points by place in a round: {by_place}."
    ends = []
    if rules.target is not None:
        ends.append(f"after the round in which someone reaches {rules.target} points")
    if rules.rounds is not None:
        ends.append(f"after {rules.rounds} round{'s' if rules.rounds > 1 else ''}")
    ends.append(f"after at most {rules.max_rounds} round{'s' if rules.max_rounds > 1 else ''}")
    ties = (
        "equal totals share a place"
        if rules.tie_break == "shared"
        else "equal totals are ordered by the last round"
    )
    return f"{points} The match ends {', or '.join(ends)}; {ties}."


# -- reading the terminal ---------------------------------------------------------------------


class LineSource(Protocol):
    """Where the person's lines come from: the terminal, or a test's script."""

    echoes: bool
    """Whether what is typed shows already (a terminal echoes it); else it is written."""

    async def readline(self) -> str | None: ...


class LineReader:
    """Lines typed on a file descriptor (the terminal), read without blocking the loop.

    ``None`` is the end of input: Ctrl-D on an empty line, a closed pipe, a hung-up
    terminal. A regular file (``< answers.txt``) is read directly: it never blocks, and the
    event loop cannot watch it.
    """

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self.echoes = os.isatty(fd)
        self._buf = bytearray()
        self._eof = False

    async def readline(self) -> str | None:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                return line.decode("utf-8", errors="replace").rstrip("\r")
            if self._eof:
                if not self._buf:
                    return None
                rest = bytes(self._buf)  # text typed before Ctrl-D, without Enter
                self._buf.clear()
                return rest.decode("utf-8", errors="replace")
            chunk = await self._read()
            if chunk:
                self._buf += chunk
            else:
                self._eof = True

    async def _read(self) -> bytes:
        """The next chunk the person typed (a whole line, on a terminal); b"" at the end."""
        while True:
            if not await self._wait_readable():
                return self._read_now() or b""
            data = self._read_now()
            if data is not None:
                return data

    async def _wait_readable(self) -> bool:
        """Wait until the fd can be read; False when the loop cannot watch it (a file)."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(self.fd, wake)
        except (OSError, ValueError):  # a regular file (epoll refuses it) or a closed fd
            return False
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)
        return True

    def _read_now(self) -> bytes | None:
        """What is there to read; None when nothing is after all (a spurious wake-up)."""
        try:
            return os.read(self.fd, 4096)
        except BlockingIOError:
            return None
        except OSError:  # EIO from a hung-up terminal, EBADF: the person is gone
            return b""


def _stdout_write(text: str) -> None:
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # a terminal without UTF-8: the decorations become "?"
        encoding = sys.stdout.encoding or "ascii"
        sys.stdout.write(text.encode(encoding, "replace").decode(encoding))
    sys.stdout.flush()


def _symbols_fit() -> bool:
    """Whether the terminal's encoding has the suit symbols (else cards keep their letters)."""
    try:
        "♣♠♥♦→★✗─·—…".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


# -- the seat ------------------------------------------------------------------------------


class _PersonLeft(Exception):
    """The input ended at a prompt: the person left the match."""


class PersonSession:
    """A person at the terminal, seated like a bot (:class:`referee.protocol.session.SeatSession`).

    The lines queued for the seat are read at each request (and at the end of the match) to
    keep the :class:`TableView`; the request is then put to the person, who is asked again
    until the answer is one the rules allow. The answer goes back as a reply line, so the
    match applies and logs it exactly as a bot's.
    """

    def __init__(
        self,
        name: str = "you",
        *,
        reader: LineSource | None = None,
        write: Callable[[str], None] | None = None,
        symbols: bool | None = None,
    ) -> None:
        self.name = name
        self.fault: BotFault | None = None
        self.outbox: list[bytes] = []
        """The lines queued for the seat, read at its next request (the match appends to it)."""
        self.unasked = 0
        """Always 0: a person writes nothing unasked."""
        self._reader = reader if reader is not None else LineReader(0)
        self._write = write if write is not None else _stdout_write
        self._symbols = _symbols_fit() if symbols is None else symbols
        self._view: TableView | None = None
        self._closed = False
        self._last_request: dict[str, Any] | None = None

    @property
    def alive(self) -> bool:
        return self.fault is None and not self._closed

    def queue(self, data: bytes) -> None:
        if self.alive:
            self.outbox.append(data)

    async def flush(self, timeout_s: float) -> None:
        """Show what happened since the person's last turn (the end of the match, mostly)."""
        if self.alive:
            self._catch_up()

    async def request(
        self, data: bytes, request_id: int, kind: str, budget_ms: int
    ) -> tuple[m.Reply, bytes, int]:
        """Ask the person; no budget applies. Leaving (end of input) is a ``left`` fault."""
        act = m.parse_to_bot(data)
        self._last_request = json.loads(data)
        view = self._catch_up(getattr(act, "hand", None))
        try:
            if isinstance(act, m.ActPlay):
                reply: m.Reply = await self._play(view, act)
            elif isinstance(act, m.ActGive):
                reply = await self._give(view, act)
            elif isinstance(act, m.ActLeftover):
                reply = await self._leftover(view, act)
            else:
                raise ValueError(f"not a request for a person: {act.type}")
        except _PersonLeft:
            self._say(
                "",
                "You left the match. The referee plays your seat to the end; the standings follow.",
            )
            raise BotFault(
                "left", "the person left the match (end of input)", request_id=request_id
            ) from None
        # Not on the clock: no time is charged, so the person's bank never runs down.
        return reply, m.encode(reply), 0

    def unasked_fault(self, request_id: int | None = None) -> BotFault:
        """Never needed (a person writes nothing unasked); here for the seat's interface."""
        return BotFault("protocol", "no unasked lines from a person", request_id=request_id)

    async def forfeit(self, fault: BotFault) -> None:
        """Out for ``fault`` (the person left): nothing more is shown or asked."""
        self.fault = fault
        await self.kill()

    async def kill(self) -> None:
        self._closed = True
        self.outbox.clear()

    def start_stderr_section(self) -> None:
        """Nothing to mark: a person has no stderr."""

    def file_stderr_at(self, position: int) -> None:
        """Nothing to file: a person has no stderr."""

    def stderr_kept(self) -> KeptStderr:
        """Nothing: a person has no stderr."""
        return KeptStderr((), 0)

    def stderr_report(self, limit: int = 4096) -> str:
        return ""

    def last_request_data(self) -> dict[str, Any] | None:
        """The last request the person was asked (a fault's context, as for a bot)."""
        return self._last_request

    def kit_report(self) -> tuple[int, list[KitReplacement]]:
        """A person has no kit: nothing is ever replaced."""
        return 0, []

    # -- the dialogue ---------------------------------------------------------------------

    def _say(self, *lines: str) -> None:
        self._write("".join(line + "\n" for line in lines))

    def _catch_up(self, hand: list[str] | None = None) -> TableView:
        """Read the queued lines into the view and show what happened; ``hand`` is the
        hand a request states."""
        box = self.outbox  # the match holds this very list: emptied, never replaced
        lines = list(box)
        box.clear()
        for line in lines:
            msg = m.parse_to_bot(line)
            if isinstance(msg, m.MatchStart):
                self._view = TableView.start(msg, symbols=self._symbols)
            elif self._view is not None:
                self._view.take(msg)
        if self._view is None:
            raise ValueError("a request came before match_start")
        if hand is not None:
            self._view.reconcile(hand)
        self._say(*self._view.history())
        return self._view

    async def _ask(
        self,
        view: TableView,
        prompt: str,
        options: int,
        *,
        want: int = 1,
        can_pass: bool = False,
        no_pass: str | None = None,
        cards: CardChoice | None = None,
    ) -> Answer:
        """Ask until the answer is one of the options (by number, or by ``cards``); ``?``
        shows the rules meanwhile."""
        while True:
            self._write(prompt)
            try:
                text = await self._reader.readline()
            except asyncio.CancelledError:
                self._write("\n")  # Ctrl-C: the referee's message starts on a line of its own
                raise
            if text is None:
                self._write("\n")
                raise _PersonLeft()
            if not self._reader.echoes:
                self._write(printable(text) + "\n")
            answer = read_answer(
                text, options, want=want, pass_allowed=can_pass, no_pass=no_pass, cards=cards
            )
            if answer.rules:
                self._say("", *rules_summary(view.rules, len(view.players)), "")
            elif answer.problem is not None:
                self._say(f"  ✗ {answer.problem}" if view.symbols else f"  ! {answer.problem}")
            else:
                return answer

    async def _play(self, view: TableView, act: m.ActPlay) -> m.PlayReply:
        plays = [p for p in act.legal if p]
        can_pass = len(plays) < len(act.legal)
        trick = act.trick
        lines = ["", *view.table(act.passed, trick.leader if trick.count else None)]
        lines += view.hand_lines(act.hand)
        if trick.count:
            beat = "a higher" if view.rules.equal_rank == "forbidden" else "an equal or higher"
            lines.append(
                f"To beat: {view.cards(trick.top)} (led by {view.who(trick.leader)}): play "
                f"{_n_cards(trick.count)} of {beat} rank, or pass."
            )
        else:
            lines.append("You lead this trick: play any option.")
        lines += view.numbered([view.cards(p) for p in plays], [(0, "pass")] if can_pass else [])
        self._say(*lines)
        choices = [f"{_span(len(plays))} or the cards"] if plays else []
        choices += ["0 pass"] if can_pass else []
        prompt = f"Your play [{', '.join(choices)}, ? rules]: "
        no_pass = None if can_pass else "you lead this trick, so you may not pass"
        named = CardChoice(view.codec, plays=tuple(map(tuple, plays)), hand=tuple(act.hand))
        answer = await self._ask(
            view, prompt, len(plays), can_pass=can_pass, no_pass=no_pass, cards=named
        )
        (pick,) = answer.picks
        cards = list(answer.cards) if answer.cards else list(plays[pick - 1]) if pick else []
        return m.PlayReply(id=act.id, cards=cards)

    async def _give(self, view: TableView, act: m.ActGive) -> m.GiveReply:
        hand = view.sort(act.hand)
        self._say(
            "",
            *view.table(),
            f"Give {_n_cards(act.count)} back to {view.who(act.to)}: type their numbers.",
            *view.numbered([view.card(c) for c in hand]),
        )
        prompt = f"Cards to give [{act.count} of {_span(len(hand))} or the cards, ? rules]: "
        named = CardChoice(view.codec, cards=tuple(hand))
        answer = await self._ask(view, prompt, len(hand), want=act.count, cards=named)
        cards = [hand[i - 1] for i in sorted(answer.picks)]  # "you gave …" follows
        return m.GiveReply(id=act.id, cards=cards)

    async def _leftover(self, view: TableView, act: m.ActLeftover) -> m.LeftoverReply:
        offer = view.sort(act.offer)
        self._say(
            "",
            *view.table(),
            *view.hand_lines(act.hand),
            "Take one face-up leftover, then discard one card face down (it may be the one "
            "you took).",
            *view.numbered([view.card(c) for c in offer]),
        )
        offered = CardChoice(view.codec, cards=tuple(offer), absent="is not offered")
        prompt = f"Leftover to take [{_span(len(offer))} or the card, ? rules]: "
        (pick,) = (await self._ask(view, prompt, len(offer), cards=offered)).picks
        take = offer[pick - 1]
        hand = view.sort([*act.hand, take])
        self._say(
            f"Your hand with {view.card(take)}:", *view.numbered([view.card(c) for c in hand])
        )
        held = CardChoice(view.codec, cards=tuple(hand))
        prompt = f"Card to discard [{_span(len(hand))} or the card, ? rules]: "
        (pick,) = (await self._ask(view, prompt, len(hand), cards=held)).picks
        discard = hand[pick - 1]
        self._say(f"You take {view.card(take)} and discard {view.card(discard)}.")
        view.hand = _without([*view.hand, take], [discard])
        return m.LeftoverReply(id=act.id, take=take, discard=discard)


def _n_cards(count: int) -> str:
    return "1 card" if count == 1 else f"{count} cards"


def _span(options: int) -> str:
    return "1" if options == 1 else f"1-{options}"
