"""A newcomer's compiled bot, end to end: ``bot new --lang``, ``bot check``, ``play``, a
tournament, in both sandboxes, built by the referee (never by the test).

The kits' own tests (tests/test_compiled_kits*.py) drive the kits line by line; these run
the commands a bot author runs, so the build step, its cache, the images and the pre-flight
are all on the path. Every build cache is the test's own (``REFEREE_BUILD_CACHE``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from referee.executors.local import LocalExecutor
from referee.runs.tournament import run_tournament
from referee.sandbox.image import JAVA_IMAGE, NATIVE_IMAGE
from referee.tournament.file import load_tournament
from tests.conftest import require_docker

ROOT = Path(__file__).resolve().parent.parent
COMPILED = {"c": "bot.c", "cpp": "bot.cpp", "rust": "bot.rs", "java": "Bot.java"}
TOOLS = {"c": "cc", "cpp": "c++", "rust": "rustc", "java": "javac"}


def referee(*args: str, cache: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFEREE_BUILD_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env=env,
    )


def require_compiler(lang: str) -> None:
    if shutil.which(TOOLS[lang], path="/usr/bin:/bin") is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {TOOLS[lang]} is missing (.ci/setup-machine installs it)")
        pytest.skip(f"{TOOLS[lang]} is not installed")


def require_images() -> None:
    client = require_docker()
    try:
        for image in (NATIVE_IMAGE, JAVA_IMAGE):
            try:
                client.images.get(image)
            except Exception:
                if os.environ.get("CI") == "true":
                    pytest.fail(f"CI=true but {image} is missing")
                pytest.skip(f"{image} is missing: .ci/docker-setup.sh builds it")
    finally:
        client.close()


@pytest.mark.parametrize("lang", list(COMPILED))
def test_bot_new_makes_a_kit_bot_of_each_compiled_language(tmp_path: Path, lang: str) -> None:
    folder = tmp_path / "mine"
    out = referee("bot", "new", str(folder), "--lang", lang, "--name", 'Quo"te', cache=tmp_path)
    assert out.returncode == 0, out.stderr
    kit = ROOT / "protocol" / "kits" / lang
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in kit.iterdir())
    manifest = tomllib.loads((folder / "bot.toml").read_text())
    assert manifest["name"] == 'Quo"te' and manifest["build"] == ["make"]
    assert manifest["image"] in (NATIVE_IMAGE.split(":")[0], JAVA_IMAGE.split(":")[0])
    assert (folder / COMPILED[lang]).read_text() == (kit / COMPILED[lang]).read_text()
    again = referee("bot", "new", str(folder), "--lang", lang, cache=tmp_path)
    assert again.returncode != 0 and "already exists" in again.stderr


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_newcomers_cpp_bot_checks_and_plays_built_by_the_referee(tmp_path: Path) -> None:
    require_compiler("cpp")
    cache, folder = tmp_path / "cache", tmp_path / "mybot"
    assert referee("bot", "new", str(folder), "--lang", "cpp", cache=cache).returncode == 0
    checked = referee("bot", "check", str(folder), "--sandbox", "process", cache=cache)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "build: mybot: make in the process sandbox" in checked.stdout
    assert "PASSED" in checked.stdout
    played = referee(
        "play", str(folder), "@heuristic", "@lowest", "--sandbox", "process", "--json", cache=cache
    )
    assert played.returncode == 0, played.stderr
    assert "reused from the cache" in played.stderr  # built once, by the check
    standings = json.loads(played.stdout)["standings"]
    assert not any(seat["forfeit"] for seat in standings)
    # A compiler error refuses the bot with the compiler's line, and plays nothing.
    source = folder / "bot.cpp"
    source.write_text(source.read_text() + "\nint broken( {\n")
    broken = referee("play", str(folder), "@lowest", "@random", "--sandbox", "process", cache=cache)
    assert broken.returncode == 1
    assert "the build of bot 'mybot' failed: make ended with exit code 2" in broken.stderr
    assert "first error: bot.cpp:" in broken.stderr and "error:" in broken.stderr


def _tournament(folder: Path, backend: str) -> Path:
    bots = ["@c-lowest", "@cpp-lowest", "@rust-lowest", "@java-lowest", "@lowest"]
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 2 }\ntable_size = 5\n'
        f'[sandbox]\nbackend = "{backend}"\n'
        + "".join(f'[[bots]]\npath = "{bot}"\n' for bot in bots)
    )
    return path


@pytest.mark.slow
@pytest.mark.bwrap
def test_the_compiled_samples_play_a_tournament_in_the_process_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for lang in COMPILED:
        require_compiler(lang)
    monkeypatch.setenv("REFEREE_BUILD_CACHE", str(tmp_path / "cache"))
    summary = run_tournament(load_tournament(_tournament(tmp_path, "process")), LocalExecutor(2))
    assert summary.played == summary.total == 5 and summary.faults == 0
    assert len(list((tmp_path / "cache").glob("*/build.json"))) == 4  # one build each


@pytest.mark.slow
@pytest.mark.docker
def test_the_compiled_samples_check_and_play_in_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_images()
    cache = tmp_path / "cache"
    for sample in ("@c-lowest", "@cpp-lowest", "@rust-lowest", "@java-lowest"):
        out = referee("bot", "check", sample, "--sandbox", "docker", "--json", cache=cache)
        report = json.loads(out.stdout)
        assert out.returncode == 0 and report["passed"], out.stderr[-2000:]
    monkeypatch.setenv("REFEREE_BUILD_CACHE", str(cache))
    summary = run_tournament(load_tournament(_tournament(tmp_path, "docker")), LocalExecutor(2))
    assert summary.played == summary.total == 5 and summary.faults == 0
    assert len(list(cache.glob("*/build.json"))) == 4  # the checks' builds, reused
