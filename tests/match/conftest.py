"""Real matches in the real process sandbox (bubblewrap when installed)."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.match.runner import play_match
from referee.matchlog import read_log
from referee.protocol.seats import seated
from referee.protocol.session import BotSession
from referee.results import MatchResult
from referee.rules import RuleSet
from referee.sandbox import (
    BotSpec,
    Limits,
    ProcessSandbox,
    load_bot,
    make_staging_root,
    remove_staging_root,
    stage_bot,
)
from referee.specs import TimeControl

ROOT = Path(__file__).resolve().parents[2]
BOTS = ROOT / "tests" / "bots"
SAMPLES = ROOT / "sample_bots"
IN_CI = os.environ.get("CI") == "true"


def sandbox_pids() -> list[int]:
    """Processes running under one of this test run's sandbox uids."""
    from tests.conftest import sandbox_pids as run_pids

    return run_pids()


@dataclass
class Played:
    result: MatchResult
    stderr: list[str]
    log: list[dict[str, Any]]
    sessions: list[BotSession]  # closed; kept to look at what the referee held


@pytest.fixture(scope="session")
def sandbox() -> ProcessSandbox:
    if shutil.which("bwrap") is None and IN_CI:
        pytest.fail("bubblewrap is not installed; CI must install it (.ci/run)")
    return ProcessSandbox()


@pytest.fixture
def staging() -> Iterator[Path]:
    root = make_staging_root()
    yield root
    remove_staging_root(root)


@pytest.fixture(scope="session")
def docker_sandbox() -> Iterator[Any]:
    """The Docker backend, or a skip when no daemon answers (a failure under CI=true)."""
    from referee.sandbox.docker import DockerSandbox, docker_status

    ok, why = docker_status()
    if not ok:
        if IN_CI:
            pytest.fail(f"CI=true but Docker is not usable: {why}")
        pytest.skip(why)
    backend = DockerSandbox(match_id="pytest")
    yield backend
    asyncio.run(backend.aclose())


def referee_containers() -> list[str]:
    """Containers this test run created (running or not)."""
    from tests.conftest import run_containers

    return run_containers() or []


@pytest.fixture
def play(sandbox: ProcessSandbox, staging: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Play one match; returns result, each seat's stderr and the parsed log."""
    return _player(sandbox, staging, tmp_path)


@pytest.fixture
def play_docker(docker_sandbox: Any, staging: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Like ``play``, with every bot in its own container."""
    return _player(docker_sandbox, staging, tmp_path)


def _player(sandbox: Any, staging: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    def run(
        bots: Sequence[BotSpec | Path | str],
        *,
        preset: str = "arschloch",
        seed: int = 1,
        tc: TimeControl | None = None,
        limits: Limits | None = None,
        **overrides: Any,
    ) -> Played:
        specs = [b if isinstance(b, BotSpec) else stage_bot(load_bot(b), staging) for b in bots]
        rules = RuleSet.preset(preset, **overrides).resolve(len(specs))
        log_path = tmp_path / f"match-{seed}.jsonl"
        time_control = tc or TimeControl(move_ms=1000, bank_ms=1000, hello_ms=10000)

        async def go() -> Played:
            async with seated(
                specs, sandbox=sandbox, time_control=time_control, limits=limits
            ) as table:
                result = await play_match(
                    table, rules, seed, match_id=f"test-{seed}", log_path=log_path
                )
                stderr = [s.channel.stderr_tail() for s in table.bots]
            return Played(result, stderr, read_log(log_path), list(table.bots))

        return asyncio.run(go())

    return run
