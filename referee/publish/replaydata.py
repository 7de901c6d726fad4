"""A match log as a script file the replay viewer loads beside its page.

Browsers refuse ``fetch()`` of local files, so a site opened from disk (``file://``) cannot
read a log the usual way; a ``<script src>`` beside the page can. Each log becomes
``<name>.js``, which assigns the log's lines, as parsed JSON objects, to the global
``refereeLog``.

The log holds text a bot chose (the offending reply of a fault), so the script must stay
data whatever that text is. The log's own JSON text is used as the script's expression once
it has parsed as a whole (so it is one JSON array, and JSON is a subset of JavaScript), with
``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\u`` escapes: in valid JSON those can
only occur inside strings, where the escape means the same character. No ``</script>``, no
``<!--`` and no raw line separator can then reach a parser, even if the script is ever
inlined into a page. ``NaN`` and ``Infinity``, which Python's JSON reader accepts and a
referee never writes, are refused.

The bots' stderr beside a log (:mod:`referee.stderrlog`) becomes ``<name>.stderr.js`` the
same way, assigning ``refereeStderr``. That text is wholly the bots': besides the escapes,
it is made fit to show (:func:`shown_text`): terminal escape sequences (colours, cursor
moves, titles) are removed, other control characters become visible symbols, and the
characters that reorder text on screen (bidirectional overrides and isolates) become
U+FFFD, so no output can disguise what it says or what comes after it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from referee.stderrlog import MatchStderr

__all__ = [
    "GLOBAL",
    "STDERR_GLOBAL",
    "LogScript",
    "log_script",
    "script_text",
    "shown_text",
    "stderr_script",
]

GLOBAL = "refereeLog"
STDERR_GLOBAL = "refereeStderr"

_ESCAPES = str.maketrans(
    {
        "<": "\\u003c",
        ">": "\\u003e",
        "&": "\\u0026",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)


@dataclass(frozen=True)
class LogScript:
    """A log ready to publish: the script's text, and where its faults are.

    ``fault_lines`` maps a seat to the line number (1-based, the viewer's ``#L`` anchor) of
    its ``fault`` event.
    """

    script: str
    lines: int
    fault_lines: dict[int, int]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON a referee writes")


def log_script(raw: bytes) -> LogScript:
    """The script of a match log's bytes; ``ValueError`` when they are not a readable log."""
    text = raw.decode("utf-8")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    lines = [line for line in lines if line.strip()]
    body = ",\n".join(lines)
    parsed = json.loads(f"[{body}]", parse_constant=_refuse_constant)
    if len(parsed) != len(lines) or not all(isinstance(row, dict) for row in parsed):
        raise ValueError("a log line must be one JSON object")
    if not parsed or parsed[0].get("type") != "log":
        raise ValueError("the first line is not a log header")
    faults: dict[int, int] = {}
    for number, (line, row) in enumerate(zip(lines, parsed, strict=True), start=1):
        if '"fault"' in line and row.get("type") == "fault" and isinstance(row.get("seat"), int):
            faults.setdefault(row["seat"], number)
    return LogScript(script_text(body), len(lines), faults)


def script_text(json_rows: str) -> str:
    """The script assigning ``[json_rows]`` (JSON values separated by commas) to the global."""
    return f"window.{GLOBAL} = [\n{json_rows.translate(_ESCAPES)}\n];\n"


def stderr_script(raw: bytes) -> str:
    """The script of a match's stderr file (:mod:`referee.stderrlog`), its text made fit to
    show (:func:`shown_text`); ``ValueError`` when the bytes are not such a file.

    The script's data: ``{"cap", "seats": [{"seat", "name", "written", "cut",
    "pieces": [[line, text], ...]}]}``, lines numbered from 1 as in the log.
    """
    record = MatchStderr.model_validate_json(raw)  # a ValidationError is a ValueError
    data = {
        "cap": record.cap,
        "seats": [
            {
                "seat": seat.seat,
                "name": seat.name,
                "written": seat.written,
                "cut": seat.cut,
                "pieces": [[piece.line, shown_text(piece.text)] for piece in seat.pieces],
            }
            for seat in record.seats
        ],
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"window.{STDERR_GLOBAL} = {text.translate(_ESCAPES)};\n"


# ESC [ ... final byte (CSI: colours, cursor moves), ESC ] ... BEL or ESC \ (OSC: titles,
# links), ESC P/X/^/_ ... ESC \ (strings), and any other two-byte escape. A string never
# ended is not one: only its ESC and the letter after go, so it cannot swallow what follows.
_TERMINAL_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x1b]*\x1b\\"
    r"|\x1b[ -~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_SHOWN = {
    **{code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\t\n"},
    0x7F: "\u2421",
    **dict.fromkeys(range(0x80, 0xA0), "\ufffd"),
    **dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)], "\ufffd"),
}


def shown_text(text: str) -> str:
    """A bot's stderr as the site shows it: line ends as ``\\n``, terminal escapes removed,
    control characters as their visible symbols (U+2400 on: ``␀``, ``␇``; DEL ``␡``; C1
    controls U+FFFD), bidirectional overrides and isolates U+FFFD. Markup stays as it is:
    the viewer writes it with ``textContent``, the script escapes ``<``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _TERMINAL_ESCAPE.sub("", text).translate(_SHOWN)
