"""referee.matchlog: every written line reads back as one line, whatever text it holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.matchlog import dumps, read_log, write_lines

# Every character str.splitlines() breaks a line at.
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@pytest.mark.parametrize("char", list(BREAKS), ids=[f"U+{ord(c):04X}" for c in BREAKS])
def test_a_written_line_holds_no_line_break(char: str) -> None:
    row = {"type": "fault", "reply": f'{{"cards":["7{char}C"]}}', "detail": "é"}
    text = dumps(row)
    assert text.splitlines() == [text]
    assert json.loads(text) == row
    assert "é" in text, "other non-ASCII text stays UTF-8"


def test_read_log_splits_on_newline_only(tmp_path: Path) -> None:
    """A log written before the escaping (raw U+2028 in a string) or with CR LF still reads."""
    log = tmp_path / "old.jsonl"
    log.write_bytes('{"type":"log","note":"a\u2028b\x85c"}\r\n{"type":"x"}\n\n'.encode())
    assert read_log(log) == [{"type": "log", "note": "a\u2028b\x85c"}, {"type": "x"}]


def test_write_lines_and_read_log_round_trip(tmp_path: Path) -> None:
    rows = [{"type": "log", "note": BREAKS}, {"type": "fault", "reply": "\u2028" * 3}]
    write_lines(tmp_path / "m.jsonl", rows)
    assert read_log(tmp_path / "m.jsonl") == rows
