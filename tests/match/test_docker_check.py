"""``bot check`` in Docker: the same findings whether the bot's containers start ahead or
one at a time, and no container left after it (Ctrl-C: tests/test_interrupts.py)."""

from __future__ import annotations

from typing import Any

import pytest

from referee.match.compliance import BOT_PROCESSES, CheckReport, run_check
from referee.sandbox import load_bot
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


@pytest.mark.parametrize(
    ("bot", "passes"), [(SAMPLES / "heuristic", True), (BOTS / "crash_round2.py", False)]
)
def test_bot_check_in_docker_finds_the_same_started_ahead_and_leaves_no_container(
    docker_sandbox: Any, bot: Any, passes: bool
) -> None:
    found = []
    for ahead in (0, BOT_PROCESSES - 1):
        sandbox = _sandbox(docker_sandbox)
        report = run_check(
            load_bot(bot), sandbox, presets=["arschloch"], keep_going=True, ahead=ahead
        )
        assert report.passed is passes, report.as_json()
        assert sandbox.left == [], "the check left containers running for the backend to stop"
        assert referee_containers() == []
        found.append(_findings(report))
    assert found[0] == found[1]
    if not passes:
        assert [s[1] for s in found[0]] == [True, False, False, False]  # crashes in round 2
