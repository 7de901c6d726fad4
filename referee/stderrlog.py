"""What each bot wrote to stderr in a match: a JSON file beside its match log.

Every match with a log keeps every seat's stderr in ``<log>.stderr.json`` (the log's name
without ``.jsonl``: ``rr_3f1c2a9b0d4e_d003_r1.stderr.json`` beside
``rr_3f1c2a9b0d4e_d003_r1.jsonl``). The log itself is unchanged, so every log, old or new,
replays and verifies as before; this file is the bots' side of the match, not its record.
One JSON object::

    {"type": "stderr", "version": 1, "match": "<match id>", "cap": 65536,
     "seats": [{"seat": 0, "name": "alice", "written": 70123, "cut": 4587,
                "pieces": [{"line": 7, "text": "thinking about 8H\\n"}, ...]}, ...]}

``written`` is every byte the seat wrote to stderr during the match, ``cut`` how many of
the first were dropped to keep the last ``cap`` (64 KiB); ``pieces`` are the rest in the
order written. A piece's ``line`` is the match log line (numbered from 1, the header) the
bot was writing toward: the line of the decision it was asked for when the piece was read
(its move, its exchange, its leftover, or its fault), or of ``match_end`` for what it
wrote once the game was over. The text is the bytes as UTF-8, invalid bytes as U+FFFD;
it is the bot's text otherwise, control characters and markup included: whoever shows it
makes it safe (the site does, :mod:`referee.publish.replaydata`). What a bot wrote before
the match (while it started) is not here: a fault report keeps it
(:meth:`referee.protocol.session.BotSession.stderr_report`).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "STDERR_SUFFIX",
    "MatchStderr",
    "SeatStderr",
    "StderrPiece",
    "split_stderr_report",
    "stderr_json",
    "stderr_path",
    "stderr_report",
]

STDERR_SUFFIX = ".stderr.json"


class StderrPiece(BaseModel):
    """Text a bot wrote, and the log line (from 1) it was writing toward."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    line: int = Field(ge=1)
    text: str


class SeatStderr(BaseModel):
    """One seat's stderr in a match: the last ``cap`` bytes as pieces, and what was cut."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seat: int = Field(ge=0)
    name: str
    written: int = Field(ge=0)
    cut: int = Field(ge=0)
    pieces: tuple[StderrPiece, ...] = ()


class MatchStderr(BaseModel):
    """Every seat's stderr in one match (the file's whole content): how it is read and
    checked (``MatchStderr.model_validate_json``); :func:`stderr_json` writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["stderr"] = "stderr"
    version: Literal[1] = 1
    match: str
    cap: int = Field(ge=0)
    seats: tuple[SeatStderr, ...]


def stderr_path(log_path: Path | str) -> Path:
    """Where the stderr of the match logged at ``log_path`` is kept (see the module)."""
    log = Path(log_path)
    return log.with_name(log.name.removesuffix(".jsonl") + STDERR_SUFFIX)


def stderr_json(
    match_id: str,
    cap: int,
    seats: Sequence[tuple[str, Sequence[tuple[int, bytes]], int]],
) -> str:
    """The file's text (a :class:`MatchStderr` as JSON) from each seat's ``(name, pieces,
    cut)``, seat by seat; ``pieces`` are ``(line, bytes)`` as read.

    Each seat's bytes are decoded as one stream, so a character split between two pieces
    stays whole; after a cut, the bytes of a character cut in half are dropped too (and
    counted as cut). Written as plain JSON, not through the models: a bot that writes at
    every move makes hundreds of pieces a match, and validating each costs more than the
    match's moves.
    """
    record = {
        "type": "stderr",
        "version": 1,
        "match": match_id,
        "cap": cap,
        "seats": [_seat(seat, name, pieces, cut) for seat, (name, pieces, cut) in enumerate(seats)],
    }
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _seat(seat: int, name: str, pieces: Sequence[tuple[int, bytes]], cut: int) -> dict[str, Any]:
    written = cut + sum(len(data) for _, data in pieces)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    out: list[dict[str, Any]] = []
    for index, (line, data) in enumerate(pieces):
        if index == 0 and cut:
            torn = _continuation_bytes(data)
            data, cut = data[torn:], cut + torn
        text = decoder.decode(data, final=index == len(pieces) - 1)
        if text:
            out.append({"line": max(line, 1), "text": text})
    return {"seat": seat, "name": name, "written": written, "cut": cut, "pieces": out}


def _continuation_bytes(data: bytes) -> int:
    """How many bytes at the start of ``data`` continue a character begun before it."""
    torn = 0
    while torn < min(3, len(data)) and 0x80 <= data[torn] <= 0xBF:
        torn += 1
    return torn


_BEFORE = "[before the match]"
_DURING = "[during the match]"


def stderr_report(startup: str, current: str) -> str:
    """A fault's stderr report: the bot's start-up output (if any), then this match's,
    each under its header (:meth:`referee.protocol.session.BotSession.stderr_report`)."""
    if not startup:
        return current
    return f"{_BEFORE}\n{startup}\n{_DURING}\n{current}"


def split_stderr_report(report: str) -> tuple[str, str]:
    """A :func:`stderr_report` as (start-up output, this match's output).

    A report without the two headers is all one part: a bot that failed ``hello`` never
    started a match, so it all comes second (the caller knows it is start-up output). The
    bot's own text could hold a header line; that can only mislabel its own output.
    """
    if not report.startswith(_BEFORE + "\n"):
        return "", report
    rest = report[len(_BEFORE) + 1 :]
    startup, sep, current = rest.partition("\n" + _DURING + "\n")
    if not sep:
        return "", report
    return startup, current
