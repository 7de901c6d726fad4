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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["GLOBAL", "LogScript", "log_script", "script_text"]

GLOBAL = "refereeLog"

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
