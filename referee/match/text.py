"""A match log told for people: trick by trick, with suit symbols and seat names.

Given the bots' stderr kept beside the log (:mod:`referee.stderrlog`), a fault's line is
followed by the last lines its bot wrote up to it: what it said before it crashed or sent
a wrong line, where the reader looks first.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape as markup_escape

from referee.rules.cards import DECKS, CardCodec
from referee.stderrlog import MatchStderr
from referee.text import ordinal, printable

STDERR_TAIL = 8
"""The most lines of a bot's stderr shown under its fault."""

_REASON = {
    "all_passed": "everyone else passed",
    "top_card": "top card: nobody holds a higher rank",
}

_PLAY_WORDS = {"played": "", "passed": "passes", "skipped": "is skipped (equal rank)"}
"""What a seat's turn shows: its cards when it played, else these words."""


class MatchRenderer:
    """Turns parsed log lines into readable text lines (rich markup when ``color``)."""

    def __init__(
        self, lines: list[dict[str, Any]], *, color: bool = False, stderr: MatchStderr | None = None
    ) -> None:
        header = lines[0]
        self.lines = lines
        self.stderr = stderr
        self.header = header
        self.color = color
        rules = header["rules"]
        self.players: list[str] = header["players"]
        self.codec = CardCodec(DECKS[rules["deck"]], rules["ranks"])
        self.width = max(len(self.name(s)) for s in range(len(self.players)))

    def card(self, card: str) -> str:
        cid = self.codec.ids.get(card)
        text = card if cid is None else self.codec.pretty(cid)
        if self.color and card[-1:] in ("H", "D", "C", "O"):
            style = "red" if card[-1] in ("H", "D") else "yellow"
            if self.codec.deck.name == "spanish40":
                style = {"O": "yellow", "C": "red"}.get(card[-1], "")
            if style:
                return f"[{style}]{text}[/{style}]"
        return text

    def cards(self, cards: list[str]) -> str:
        ids = self.codec.ids
        ordered = sorted(cards, key=lambda c: ids.get(c, -1))
        return " ".join(self.card(c) for c in ordered) if cards else "—"

    def name(self, seat: int) -> str:
        if 0 <= seat < len(self.players):
            return self._escape(self.players[seat])
        return f"seat {seat}"

    def _escape(self, text: str) -> str:
        """Untrusted text for the output: control characters shown, markup made literal."""
        text = printable(text)
        return markup_escape(text) if self.color else text

    def render(self) -> list[str]:
        """The whole match as text lines."""
        h = self.header
        out = [
            f"Match {self._escape(str(h.get('match')))} · {h['rules'].get('name', '?')} · "
            f"seed {h.get('seed')} · {len(self.players)} players",
            "Seats: " + " · ".join(f"{i} {self.name(i)}" for i in range(len(self.players))),
        ]
        trick_no = 0
        need_header = True  # the next play opens a trick
        for number, row in enumerate(self.lines[1:], start=2):
            t = row.get("type")
            if t == "deal":
                trick_no, need_header = 0, True
            elif t in ("played", "passed", "skipped") and need_header:
                trick_no += 1
                out.append(f"  Trick {trick_no}")
                need_header = False
            elif t == "trick_end":
                need_header = True
            out += self._row(row)
            if t == "fault" and row.get("kind") != "left" and self.stderr is not None:
                out += self._stderr_tail(row.get("seat"), number)
        return out

    def _stderr_tail(self, seat: object, line: int) -> list[str]:
        """The last lines ``seat`` wrote to stderr up to log line ``line`` (its fault)."""
        assert self.stderr is not None
        kept = next((s for s in self.stderr.seats if s.seat == seat), None)
        if kept is None:
            return []
        text = "".join(piece.text for piece in kept.pieces if piece.line <= line)
        rows = text.splitlines()
        if not rows:
            return ["      stderr: (nothing written up to here)"]
        cut = f", last {STDERR_TAIL} of {len(rows)} lines" if len(rows) > STDERR_TAIL else ""
        if kept.cut:
            cut += f"; its first {kept.cut} bytes not kept"
        out = [f"      stderr{cut}:"]
        out += [f"        {self._escape(row)}" for row in rows[-STDERR_TAIL:]]
        return out

    def _row(self, row: dict[str, Any]) -> list[str]:
        """The lines of one log row (the trick headers are :meth:`render`'s)."""
        t = row.get("type")
        pad = self.width
        if t == "deal":
            out = ["", f"Round {row['round']} — {self.name(row['dealer'])} deals"]
            for seat, hand in enumerate(row["hands"]):
                out.append(f"  {self.name(seat):<{pad}}  {self.cards(hand)}")
            if row.get("leftovers"):
                out.append(f"  leftovers: {self.cards(row['leftovers'])}")
            return out
        if t == "leftover":
            return [
                f"  {self.name(row['seat'])} takes leftover {self.card(row['take'])} "
                f"and discards {self.card(row['discard'])}"
            ]
        if t == "exchange":
            return [
                f"  {self.name(row['from'])} gives {self.cards(row['cards'])} "
                f"to {self.name(row['to'])}"
            ]
        if t in _PLAY_WORDS:
            words = self.cards(row["cards"]) if t == "played" else _PLAY_WORDS[t]
            return [f"    {self.name(row['seat']):<{pad}}  {words}"]
        if t == "trick_end":
            reason = _REASON.get(row["reason"], row["reason"])
            return [
                f"    → {self.name(row['winner'])} wins the trick ({reason}); "
                f"{self.name(row['leader'])} leads"
            ]
        if t == "finished":
            return [f"    ★ {self.name(row['seat'])} is out of cards: {ordinal(row['place'])}"]
        if t == "eliminated":
            return [
                f"    ✗ {self.name(row['seat'])} holds only {self.cards(row['cards'])} "
                f"and may not finish on them: out, {ordinal(row['place'])}"
            ]
        if t == "fault" and row.get("kind") == "left":
            return [f"    ! {self.name(row['seat'])} left the match; the fallback policy plays on"]
        if t == "fault":
            return [
                f"    ! {self.name(row['seat'])} forfeits ({row['kind']}: "
                f"{self._escape(str(row.get('detail', '')))}); the fallback policy plays on"
            ]
        if t == "round_end":
            places = ", ".join(
                f"{ordinal(i + 1)} {self.name(s)} ({row['points'][s]:+d})"
                for i, s in enumerate(row["places"])
            )
            scores = ", ".join(
                f"{self.name(s)} {row['scores'][s]}" for s in range(len(self.players))
            )
            return [f"  Round over: {places}", f"  Scores: {scores}"]
        if t == "match_end":
            out = ["", "Final standings"]
            for st in row["standings"]:
                note = "  (forfeit)" if st.get("forfeit") else ""
                out.append(
                    f"  {ordinal(st['place']):>4}  {self.name(st['seat']):<{pad}}  "
                    f"{st['score']:>4} points{note}"
                )
            return out
        return []


def render_text(
    lines: list[dict[str, Any]], *, color: bool = False, stderr: MatchStderr | None = None
) -> str:
    """The whole match as one string (each fault with its bot's ``stderr`` tail, if given)."""
    return "\n".join(MatchRenderer(lines, color=color, stderr=stderr).render())
