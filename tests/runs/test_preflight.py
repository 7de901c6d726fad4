"""The pre-flight: every entrant greeted in the run's own sandbox before any match is dealt."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.executors.local import LocalExecutor
from referee.runs.core import PreflightWarning
from referee.runs.tournament import run_tournament
from referee.tournament.file import load_tournament

pytestmark = pytest.mark.slow

SLOW_HELLO = """\
import json, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        time.sleep(1.5)
        print(json.dumps({"id": msg["id"], "type": "ready", "name": "slow"}), flush=True)
        break
"""


def _file(folder: Path, third: str, code: str, hello_ms: int = 10_000) -> Path:
    (folder / f"{third}.py").write_text(code)
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 2 }\ntable_size = 3\n'
        f"[time]\nhello_ms = {hello_ms}\n"
        '[[bots]]\npath = "@lowest"\n[[bots]]\npath = "@random"\n'
        f'[[bots]]\npath = "{third}.py"\n'
    )
    return path


def test_an_entrant_that_cannot_start_stops_the_run_before_any_deal(tmp_path: Path) -> None:
    path = _file(tmp_path, "dies", "import sys\nsys.exit(3)\n")
    with pytest.raises(UsageError) as caught:
        run_tournament(load_tournament(path), LocalExecutor(1))
    text = str(caught.value)
    assert "1 entrant(s) cannot start in the process sandbox" in text
    assert "dies:" in text and "nothing was dealt" in text
    assert not list((tmp_path / "t.results" / "logs").glob("*.jsonl"))


def test_a_slow_hello_is_reported_and_the_entrant_plays(tmp_path: Path) -> None:
    path = _file(tmp_path, "slow", SLOW_HELLO, hello_ms=500)
    events: list[object] = []
    summary = run_tournament(load_tournament(path), LocalExecutor(1), on_event=events.append)
    warnings = [e for e in events if isinstance(e, PreflightWarning)]
    assert len(warnings) == 1
    (line,) = warnings[0].lines
    assert line.startswith("pre-flight: slow started in the process sandbox but timed out")
    assert summary.played == summary.total > 0
