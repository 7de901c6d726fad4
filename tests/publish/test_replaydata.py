"""A match log as a script: the same data, and nothing a browser could read as markup."""

from __future__ import annotations

import json

import pytest

from referee.matchlog import dumps
from referee.publish.replaydata import GLOBAL, log_script

HOSTILE = '</script><script>alert(1)</script><!-- \u2028 \u2029 & > \\</ "x"'


def _log(*rows: dict[str, object]) -> bytes:
    header = {"type": "log", "version": 1, "match": "m", "seed": 1, "players": ["a", HOSTILE]}
    return "".join(dumps(row) + "\n" for row in (header, *rows)).encode()


def _data(script: str) -> list[dict[str, object]]:
    prefix = f"window.{GLOBAL} = ["
    assert script.startswith(prefix) and script.endswith("];\n")
    return list(json.loads("[" + script[len(prefix) : -3] + "]"))


def test_the_script_holds_the_log_and_no_markup_or_line_separator() -> None:
    fault = {
        "type": "fault",
        "seat": 1,
        "kind": "protocol",
        "detail": HOSTILE,
        "id": 7,
        "reply": HOSTILE,
        "elapsed_ms": 3,
    }
    raw = _log({"type": "passed", "seat": 0}, fault, {"type": "passed", "seat": 0})
    out = log_script(raw)
    for forbidden in ("<", ">", "&", "\u2028", "\u2029"):
        assert forbidden not in out.script
    assert _data(out.script) == [json.loads(line) for line in raw.decode().split("\n") if line]
    assert out.lines == 4
    assert out.fault_lines == {1: 3}


def test_a_raw_line_separator_in_an_old_log_is_escaped_too() -> None:
    raw = _log(
        {
            "type": "fault",
            "seat": 0,
            "kind": "x",
            "detail": "a\u2028b",
            "id": None,
            "reply": None,
            "elapsed_ms": None,
        }
    ).replace(b"\\u2028", "\u2028".encode())
    assert "\u2028".encode() in raw
    out = log_script(raw)
    assert "\u2028" not in out.script
    assert _data(out.script)[1]["detail"] == "a\u2028b"


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type": "log"}\n{"type": "passed", "seat": NaN}\n',
        b'{"type": "log"}\n[1, 2]\n',
        b'{"type": "log"}\n{"type": "passed"}, {"type": "passed"}\n',
        b'{"type": "deal"}\n',
        b'{"type": "log"}\n{"type": "passed", "seat": 0\n',
        b'{"type": "log", "match": "\xff"}\n',
        b"",
    ],
    ids=["nan", "not-object", "two-per-line", "no-header", "truncated", "not-utf8", "empty"],
)
def test_what_is_not_a_log_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        log_script(raw)
