"""Subpackage ``__init__`` files re-export nothing heavy: importing the record of a
tournament, or the interface of where matches run, never loads the code that starts bots.

Checked in a fresh interpreter (this test process has imported everything already).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("referee.sandbox.process", "referee.match", "referee.protocol", "referee.executors.worker")


def _loaded_by(module: str) -> list[str]:
    code = (
        f"import json, sys, {module}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('referee'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


@pytest.mark.parametrize(
    "module",
    [
        "referee.tournament.store",
        "referee.tournament.file",
        "referee.executors.base",
        "referee.executors",
        "referee.sandbox",
        "referee.sandbox.staging",
    ],
)
def test_importing_the_record_or_the_interface_loads_no_bot_code(module: str) -> None:
    loaded = _loaded_by(module)
    assert module in loaded  # the check looks at the right interpreter
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert heavy == [], f"{module} loads {heavy}"


def test_the_lazy_names_are_still_there() -> None:
    """What the packages name in ``__all__`` is importable from them, loaded when asked."""
    from referee import executors, sandbox
    from referee.executors.worker import Worker
    from referee.sandbox.process import ProcessSandbox

    assert sandbox.ProcessSandbox is ProcessSandbox
    assert executors.Worker is Worker
    for package in (executors, sandbox):
        assert all(getattr(package, name) is not None for name in package.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = sandbox.nothing  # type: ignore[attr-defined]
