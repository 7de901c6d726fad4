"""Match logs on disk: one JSON object per line (PROTOCOL.md "Match log").

Writing goes through :class:`LogWriter` so a log grows line by line while a match runs
(a crash leaves every line written so far). Reading returns the parsed lines; replaying
them is :func:`referee.rules.replay`.

A log holds text a bot chose (the offending line of a fault, cut to 200 bytes), so a line
must survive any reader: every line is split on ``\n`` alone by :func:`read_log`, and the
writer escapes the characters other line splitters break on. ``json.dumps`` already
escapes the ASCII ones (``\r``, ``\x0b``, ``\x0c``, ``\x1c``-``\x1e`` are below U+0020);
:func:`dumps` escapes the rest: U+0085, U+2028 and U+2029 (``str.splitlines`` splits on
them, and JavaScript before ES2019 refused them raw in a string).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from referee.errors import UsageError
from referee.rules.engine import Game
from referee.rules.events import Event

# The line breaks of str.splitlines that json.dumps leaves raw (it escapes only < U+0020).
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dumps(obj: dict[str, Any]) -> str:
    """One log line, compact, without a newline and without any line break inside.

    Non-ASCII text is kept as UTF-8 except U+0085, U+2028 and U+2029, written as ``\\uXXXX``
    escapes. Those can only occur inside JSON strings, where the escape means the same.
    """
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    if text.isascii():  # nearly every line: one pass at C speed
        return text
    return text.translate(_LINE_BREAKS)


class LogWriter:
    """Appends a game's events to a log file, in batches, and whatever is left at close.

    ``known`` gives the line of an event encoded already, or ``None``: the match runner's
    memo of public events, whose protocol line is their log line (compact JSON of
    :meth:`~referee.rules.events.Played.log`, plain ASCII), so the log reuses the bytes sent
    to the bots instead of encoding each play again, which lowers the referee's CPU per
    request (how much: docs/performance.md).
    """

    def __init__(
        self,
        path: Path | str | None,
        game: Game,
        match_id: str,
        known: Callable[[Event], bytes | None] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.game = game
        self._known = known
        self._written = 0
        self._fh: IO[bytes] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("wb")
            self._fh.write(_encode(game.header(match_id)))

    def maybe_flush(self, batch: int = 512) -> None:
        """Write out once ``batch`` events are waiting (cheap to call after every step)."""
        if len(self.game.events) - self._written >= batch:
            self.flush()

    def flush(self) -> None:
        """Write the events produced since the last flush."""
        events = self.game.events
        new = events[self._written :]
        self._written = len(events)
        if self._fh is None or not new:
            return
        known = self._known
        event_dict = self.game.event_dict
        lines = []
        for event in new:
            line = known(event) if known is not None else None
            # Known lines are ASCII by construction; the check keeps dumps' escapes exact.
            if line is None or not line.isascii():
                line = _encode(event_dict(event))
            lines.append(line)
        self._fh.write(b"".join(lines))
        self._fh.flush()

    def close(self) -> None:
        """Flush what is left and close the file."""
        self.flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _encode(obj: dict[str, Any]) -> bytes:
    return (dumps(obj) + "\n").encode()


def game_log_lines(game: Game, match_id: str) -> list[dict[str, Any]]:
    """The whole log of a game as dicts (header first)."""
    return [game.header(match_id), *(game.event_dict(ev) for ev in game.events)]


def write_lines(path: Path | str, lines: Iterable[dict[str, Any]]) -> None:
    """Write parsed log lines to ``path``."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(dumps(line) + "\n")


def read_log(path: Path | str) -> list[dict[str, Any]]:
    """Parse a match log; a missing file or a line that is not a JSON object is a UsageError.

    Lines end at ``\n`` only (a ``\r`` before it is dropped), never at the other breaks
    ``str.splitlines`` knows, so a log written before the writer escaped U+2028 still reads.
    """
    p = Path(path)
    try:
        data = p.read_bytes()  # not read_text: it would split at a lone \r
    except FileNotFoundError:
        raise UsageError(f"no such match log: {p}") from None
    except OSError as exc:
        raise UsageError(f"cannot read match log {p}: {exc}") from None
    return parse_log(data, str(p))


def parse_log(data: bytes, name: str) -> list[dict[str, Any]]:
    """The lines of a match log read already (``name`` for messages), as :func:`read_log`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read match log {name}: {exc}") from None
    p = name
    rows: list[dict[str, Any]] = []
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, huge int
            raise UsageError(f"{p}:{no}: not a JSON line ({exc})") from None
        if not isinstance(row, dict):
            raise UsageError(f"{p}:{no}: a log line must be a JSON object")
        rows.append(row)
    if not rows:
        raise UsageError(f"{p}: the match log is empty")
    return rows
