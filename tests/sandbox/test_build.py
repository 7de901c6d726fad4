"""The build step (referee.sandbox.build): real compilers, real sandboxes, hostile builds.

Each build here runs in the process sandbox (bubblewrap, a uid of this test run) or in
Docker (the native image), with limits small enough that a hostile build is stopped in a
second or two. The build cache of every test is its own folder.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.sandbox import load_bot
from referee.sandbox.base import BotSpec
from referee.sandbox.build import Builder, BuildFailed, BuildLimits, first_error
from referee.sandbox.image import NATIVE_IMAGE
from tests.conftest import require_docker

pytestmark = [pytest.mark.slow, pytest.mark.bwrap]

C_BOT = r"""
#include <stdio.h>
int main(void) {
    char line[4096];
    while (fgets(line, sizeof line, stdin)) { fputs("{}\n", stdout); fflush(stdout); }
    return 0;
}
"""
MAKEFILE = "bot: bot.c\n\tcc -O2 -Wall -o bot bot.c\n"
SMALL = BuildLimits(cpu_seconds=5, wall_seconds=20, memory_mb=512, disk_mb=8, pids=32)


def require(program: str) -> None:
    """Skip without ``program`` on the sandbox's PATH (a failure under CI=true)."""
    if shutil.which(program, path="/usr/bin:/bin") is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {program} is missing (.ci/setup-machine installs it)")
        pytest.skip(f"{program} is not installed")


def bot_folder(
    folder: Path, build: str, files: dict[str, str], command: str = "./bot", image: str = ""
) -> BotSpec:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = f'name = "{folder.name}"\nbuild = {build}\ncommand = "{command}"\n'
    if image:
        manifest += f'image = "{image}"\n'
    (folder / "bot.toml").write_text(manifest)
    for name, text in files.items():
        (folder / name).write_text(text)
    return load_bot(folder)


@pytest.fixture
def c_bot(tmp_path: Path) -> BotSpec:
    require("cc")
    require("make")
    return bot_folder(tmp_path / "cbot", '["make"]', {"bot.c": C_BOT, "Makefile": MAKEFILE})


@pytest.fixture
def builder(tmp_path: Path) -> Builder:
    return Builder("process", limits=SMALL, cache_dir=tmp_path / "cache")


def test_a_c_bot_is_built_once_and_a_changed_source_is_a_new_version(
    c_bot: BotSpec, builder: Builder
) -> None:
    first = builder.build(c_bot)
    paths = {file.path: file for file in first.files}
    assert set(paths) == {"Makefile", "bot", "bot.c", "bot.toml"}
    assert paths["bot"].executable and paths["bot"].data.startswith(b"\x7fELF")
    assert not first.cached and first.spec.build == () and first.spec.sha256
    assert "cc -O2" in first.log
    again = builder.build(c_bot)  # a second check, a resumed run: the cache
    assert again.cached and again.files == first.files
    assert (builder.builds, builder.hits) == (1, 1)
    (c_bot.folder / "bot.c").write_text(C_BOT.replace("{}", "{ }"))
    changed = builder.build(load_bot(c_bot.folder))
    assert not changed.cached and changed.spec.sha256 != first.spec.sha256
    assert builder.builds == 2


def test_a_compiler_error_is_shown_with_its_first_error_line(
    tmp_path: Path, builder: Builder
) -> None:
    require("cc")
    broken = C_BOT.replace("return 0;", "return undefined_thing;")
    spec = bot_folder(tmp_path / "broken", '["make"]', {"bot.c": broken, "Makefile": MAKEFILE})
    with pytest.raises(BuildFailed) as caught:
        builder.build(spec)
    failure = caught.value
    assert "make ended with exit code 2" in failure.reason
    assert "undefined_thing" in failure.first_error and "error" in failure.first_error
    assert "undefined_thing" in failure.log
    assert "first error:" in str(failure) and builder.builds == 0


def test_a_looping_build_is_stopped_at_its_cpu_limit(tmp_path: Path) -> None:
    spec = bot_folder(tmp_path / "loop", '["sh", "-c", "while :; do :; done"]', {})
    builder = Builder(
        "process",
        limits=BuildLimits(cpu_seconds=1, wall_seconds=30, disk_mb=8),
        cache_dir=tmp_path / "cache",
    )
    with pytest.raises(BuildFailed, match="CPU limit"):
        builder.build(spec)


def test_a_build_past_its_wall_time_is_stopped(tmp_path: Path) -> None:
    spec = bot_folder(tmp_path / "sleepy", '["sleep", "60"]', {})
    builder = Builder(
        "process", limits=BuildLimits(wall_seconds=1, disk_mb=8), cache_dir=tmp_path / "c"
    )
    with pytest.raises(BuildFailed, match="wall limit"):
        builder.build(spec)


def test_a_fork_swarm_stays_inside_its_process_limit(tmp_path: Path) -> None:
    swarm = "for i in $(seq 200); do sleep 30 & done; wait"
    spec = bot_folder(tmp_path / "swarm", f'["sh", "-c", "{swarm}"]', {})
    builder = Builder(
        "process",
        limits=BuildLimits(wall_seconds=3, pids=16, disk_mb=8),
        cache_dir=tmp_path / "cache",
    )
    with pytest.raises(BuildFailed) as caught:
        builder.build(spec)
    assert "Cannot fork" in caught.value.log or "fork" in caught.value.log.lower()


@pytest.mark.parametrize(
    "fill",
    [
        "head -c 100000000 /dev/zero > big",  # one file past the limit
        "for i in $(seq 40); do head -c 1000000 /dev/zero > f$i; done",  # many within it
    ],
    ids=["one-file", "many-files"],
)
def test_a_build_that_fills_the_disk_is_refused(tmp_path: Path, fill: str) -> None:
    spec = bot_folder(tmp_path / "fill", f'["sh", "-c", "{fill}"]', {}, command="sh")
    builder = Builder("process", limits=SMALL, cache_dir=tmp_path / "cache")
    with pytest.raises(BuildFailed, match="MiB"):
        builder.build(spec)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A loopback port of this test's own, and the connections it accepted."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []

    def accept() -> None:
        try:
            while True:
                accepted.append(server.accept())
        except OSError:
            return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()


def test_a_build_finds_no_network(tmp_path: Path, listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"
    spec = bot_folder(tmp_path / "net", f'["python3", "-c", "{code}"]', {}, command="sh")
    builder = Builder("process", limits=SMALL, cache_dir=tmp_path / "cache")
    with pytest.raises(BuildFailed) as caught:
        builder.build(spec)
    assert "ConnectionRefusedError" in caught.value.log or "Errno" in caught.value.log
    assert accepted == []


def test_a_build_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    marker = f"referee-build-escape-{os.getpid()}"
    targets = [f"/{marker}", f"/usr/{marker}", f"../{marker}", f"/var/tmp/{marker}"]
    script = "; ".join(f"echo x > {target}" for target in targets) + "; exit 0"
    spec = bot_folder(tmp_path / "escape", f'["sh", "-c", "{script}"]', {}, command="sh")
    builder = Builder("process", limits=SMALL, cache_dir=tmp_path / "cache")
    built = builder.build(spec)
    assert {file.path for file in built.files} == {"bot.toml"}
    for target in (Path("/") / marker, Path("/usr") / marker, Path("/var/tmp") / marker):
        assert not target.exists()
    assert not list(tmp_path.glob(f"**/{marker}"))


def test_a_build_that_leaves_a_symlink_or_no_program_is_refused(tmp_path: Path) -> None:
    builder = Builder("process", limits=SMALL, cache_dir=tmp_path / "cache")
    link = bot_folder(tmp_path / "link", '["ln", "-s", "/etc/shadow", "bot"]', {})
    with pytest.raises(BuildFailed, match="symlink"):
        builder.build(link)
    nothing = bot_folder(tmp_path / "nothing", '["true"]', {})
    with pytest.raises(BuildFailed, match="not in"):
        builder.build(nothing)


def test_a_runaway_log_keeps_its_tail_and_counts_the_cut(tmp_path: Path) -> None:
    spec = bot_folder(
        tmp_path / "chatty", '["sh", "-c", "yes error: spam | head -c 300000; exit 1"]', {}
    )
    builder = Builder(
        "process", limits=BuildLimits(log_kb=4, disk_mb=8), cache_dir=tmp_path / "cache"
    )
    with pytest.raises(BuildFailed) as caught:
        builder.build(spec)
    assert caught.value.log.startswith("[") and "earlier bytes cut]" in caught.value.log
    assert len(caught.value.log) < 6000 and caught.value.first_error == "error: spam"


def test_first_error_prefers_a_compiler_error_over_the_last_line() -> None:
    log = "cc -O2 bot.c\nbot.c:3:5: error: expected ';'\nmake: *** [bot] Error 1\n"
    assert first_error(log) == "bot.c:3:5: error: expected ';'"
    assert first_error("all fine\nbut it failed") == "but it failed"
    assert first_error("") == ""


@pytest.mark.docker
def test_docker_builds_with_its_own_toolchain_and_caches_by_image(tmp_path: Path) -> None:
    client = require_docker()
    try:
        client.images.get(NATIVE_IMAGE)
    except Exception:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {NATIVE_IMAGE} is missing")
        pytest.skip(f"{NATIVE_IMAGE} is missing: .ci/docker-setup.sh builds it")
    finally:
        client.close()
    spec = bot_folder(
        tmp_path / "cbot", '["make"]', {"bot.c": C_BOT, "Makefile": MAKEFILE}, image=NATIVE_IMAGE
    )
    cache = tmp_path / "cache"
    docker = Builder("docker", limits=SMALL, cache_dir=cache)
    built = docker.build(spec)
    assert any(file.path == "bot" and file.executable for file in built.files)
    assert docker.build(spec).cached
    # The process sandbox's toolchain is another key: it builds again, with its own.
    process = Builder("process", limits=SMALL, cache_dir=cache)
    assert not process.build(spec).cached
    # Without the native image the default image has no make: said plainly.
    plain = bot_folder(tmp_path / "plain", '["make"]', {"bot.c": C_BOT, "Makefile": MAKEFILE})
    with pytest.raises(BuildFailed, match="image"):
        docker.build(plain)
