"""``bot check`` in Docker: the same findings as in the process sandbox, for a bot that
passes and for failing ones, and no container left after it (Ctrl-C:
tests/test_interrupts.py)."""

from __future__ import annotations

from typing import Any

import pytest

from referee.match.compliance import CheckReport, run_check
from referee.sandbox import load_bot
from referee.specs import TimeControl
from tests.match.conftest import BOTS, SAMPLES, referee_containers

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(300)]


def _sandbox(docker_sandbox: Any) -> Any:
    """A fresh backend (a check closes its own) that notes the containers still running
    when it is closed: the check must have stopped every one by then itself."""
    from referee.sandbox.docker import DockerSandbox

    class Noting(DockerSandbox):
        left: list[str] = []

        async def aclose(self) -> None:
            self.left = [p.container_id for p in self._live.values()]
            await super().aclose()

    return Noting(match_id="pytest-check")


def _findings(report: CheckReport) -> list[tuple[Any, ...]]:
    """What a check found, step by step, without the times and request ids (ids count every
    request of the run, a ``hello`` of a container started ahead included)."""
    return [
        (
            s.name,
            s.ok,
            s.seeds,
            dict(s.asked),
            s.missing,
            s.fault and (s.fault.kind, s.fault.detail),
        )
        for s in report.steps
    ]


SHORT = TimeControl(move_ms=200, bank_ms=0, hello_ms=5000)
"""A clock that times out a bot that stopped answering quickly."""


@pytest.mark.parametrize(
    ("bot", "failed"),
    [
        (SAMPLES / "heuristic", []),
        (BOTS / "wrong_count.py", [1, 2, 3]),  # an illegal play, in every step's matches
        (BOTS / "crash_round2.py", [1, 2, 3]),
        # Deaf from its process's second match on: the second deal at 3 seats; the fresh
        # process after it plays one deal at 6 seats and passes; reuse plays two.
        (BOTS / "one_match.py", [1, 3]),
    ],
    ids=["heuristic", "wrong_count", "crash_round2", "one_match"],
)
def test_bot_check_finds_the_same_in_docker_as_in_the_process_sandbox(
    docker_sandbox: Any, bot: Any, failed: list[int]
) -> None:
    """The bot in Docker (its opponents in the process sandbox) or all in the process
    sandbox: the same steps, verdicts, deals, requests and faults, each failed step's
    process replaced (with ``keep_going``), and no container left after it."""
    from referee.sandbox import ProcessSandbox

    found = []
    sandboxes: list[Any] = [_sandbox(docker_sandbox), ProcessSandbox()]
    for sandbox in sandboxes:
        report = run_check(
            load_bot(bot), sandbox, presets=["arschloch"], keep_going=True, time_control=SHORT
        )
        found.append(_findings(report))
        assert [i for i, s in enumerate(report.steps) if not s.ok] == failed, report.as_json()
        if sandbox.name == "docker":
            assert report.opponents_sandbox is not None
            assert report.opponents_sandbox.startswith("process sandbox")
            assert sandbox.left == [], "the check left containers running for the backend"
            assert referee_containers() == []
    assert found[0] == found[1]
