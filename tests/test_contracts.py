"""The import contracts of ``pyproject.toml`` hold, and a wrong import does break them.

``make lint`` runs ``lint-imports`` on the package; a contract that could never fail
would pass there too. So here a temporary copy of the package gets wrong imports of the
kinds the contracts exist to stop (a cycle inside a subpackage, the game reading the
clock, a low layer importing the package-data scripts), and ``lint-imports`` must name
exactly those contracts broken and keep every other.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

WRONG = {
    # the channel frames lines for the dialect: seating sits two layers above it
    "referee/protocol/channel.py": "from referee.protocol.seats import Table\n",
    # the engine is pure: no clock
    "referee/rules/engine.py": "from referee.clock import MonotonicClock\n",
    # the messages sit far below the scripts that make the package data
    "referee/protocol/messages.py": "from referee.data import make_schemas\n",
}
BROKEN = {
    "Inside talking to a bot",
    "The game is pure",
    "Layers: commands, the run",
}


def _contract_names() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(where)}  # the copy, not the installed package
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_wrong_imports_in_a_copy_break_exactly_their_contracts(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "referee",
        tmp_path / "referee",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "static", "templates"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for relative, line in WRONG.items():
        path = tmp_path / relative
        text = path.read_text(encoding="utf-8")
        marker = "from __future__ import annotations\n"
        path.write_text(text.replace(marker, marker + line, 1), encoding="utf-8")

    found = _lint_imports(tmp_path)
    # Long contract names are wrapped, and a name that fills its line ends against its
    # verdict with no space between.
    out = " ".join(found.stdout.split())
    assert found.returncode != 0, out
    names = _contract_names()
    broken = {n for n in names if re.search(re.escape(n) + r" ?BROKEN", out)}
    kept = {n for n in names if re.search(re.escape(n) + r" ?KEPT", out)}
    assert {n for n in broken if n.startswith(tuple(BROKEN))} == broken, out
    assert all(any(n.startswith(b) for n in broken) for b in BROKEN), out
    assert kept | broken == set(names), out
    # the copy was analysed (this chain exists only there), not the installed package
    assert "referee.protocol.channel -> referee.protocol.seats" in out, out
