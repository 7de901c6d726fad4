"""The Docker sandbox against the real engine, with small hostile bots.

What every backend does is the conformance suite's (test_conformance.py); here is what only
this backend does: the attach socket's framing and backpressure, the hardening (network,
read-only root, tmpfs, pids), images by permission, containers always removed.

The tests marked ``docker`` skip when no daemon answers or the bot image is missing, except
under CI (``CI=true``), where that is a failure: CI installs and starts Docker on purpose.
Each test checks that it left no container behind. Containers are matched by the owner
label (this host and pid), so a test run next to another referee's does not see its bots.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import shutil
import socket
import textwrap
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from referee.errors import UsageError
from referee.match.runner import play_match
from referee.protocol.seats import seated
from referee.rules import RuleSet
from referee.sandbox import load_bot, make_staging_root, stage_bot
from referee.sandbox.base import BotProcess, BotSpec, ExitInfo, Limits
from referee.sandbox.daemon import LABEL, LABEL_OWNER, owner_labels
from referee.sandbox.docker import IMAGE_NAME, DockerSandbox, _FrameDemux, connect
from tests.conftest import PRIVATE_SECRET

pytestmark = pytest.mark.slow

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]

LIMITS = Limits(memory_mb=128, pids=32, tmp_mb=8, cpus=1.0)
LINE_TIMEOUT_S = 20.0


def run(coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
    """Run one scenario on a fresh event loop, bounded in time."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def _our_containers(client: Any) -> list[Any]:
    filters = {"label": [LABEL, f"{LABEL_OWNER}={owner_labels()[LABEL_OWNER]}"]}
    return list(client.containers.list(all=True, filters=filters))


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Docker client, or a skip (a failure under CI) when Docker is not usable here."""
    strict = os.environ.get("CI") == "true"
    if importlib.util.find_spec("docker") is None:
        hint = "the docker SDK is not installed (pip install 'arschloch-referee[docker]')"
        if strict:
            pytest.fail(f"CI=true but {hint}")
        pytest.skip(hint)
    try:
        docker_client = connect(timeout=30.0)
    except UsageError as exc:
        if strict:
            pytest.fail(f"CI=true but {exc}")
        pytest.skip(f"Docker is not usable on this machine ({exc}); under CI=true this fails")
    import docker

    try:
        docker_client.images.get(IMAGE_NAME)
    except docker.errors.ImageNotFound:
        docker_client.close()
        hint = f"{IMAGE_NAME} is missing: python -m referee.sandbox.image --offline"
        if strict:
            pytest.fail(f"CI=true but {hint}")
        pytest.skip(f"{hint}; under CI=true this fails")
    yield docker_client
    left = _our_containers(docker_client)
    for container in left:
        container.remove(force=True)
    docker_client.close()
    assert not left, f"containers left after the module: {[c.name for c in left]}"


@pytest.fixture
def sandbox_client(client: Any) -> Iterator[Any]:
    """The module's client, checking after the test that no container was left."""
    yield client
    left = _our_containers(client)
    for container in left:
        container.remove(force=True)
    assert not left, f"containers left after the test: {[c.name for c in left]}"


def single_file_bot(
    tmp_path: Path, name: str, source: str, *, file: str = "bot.py", image: str | None = None
) -> BotSpec:
    """A one-file python3 bot written into ``tmp_path`` (readable by the container's user)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / file).write_text(textwrap.dedent(source))
    folder.chmod(0o755)
    (folder / file).chmod(0o644)
    tmp_path.chmod(0o755)
    return BotSpec(
        name=name, folder=folder, command=("python3", file), single_file=file, image=image
    )


async def read_line(process: BotProcess, stream: str = "stdout") -> bytes:
    reader = process.stdout if stream == "stdout" else process.stderr
    return await asyncio.wait_for(reader.readline(), LINE_TIMEOUT_S)


async def read_json(process: BotProcess) -> Any:
    line = await read_line(process)
    assert line.endswith(b"\n"), f"no line from the bot (stderr: {process.notes})"
    return json.loads(line)


async def drive(
    client: Any, bot: BotSpec, limits: Limits, body: Any, *, ends_itself: bool = True
) -> tuple[Any, ExitInfo]:
    """Start ``bot``, run ``body(process)``, always clean up; returns (body's result, exit).

    With ``ends_itself`` the bot is given time to exit on its own before the cleanup (which
    kills whatever still runs).
    """
    sandbox = DockerSandbox(client=client, match_id="test")
    process = await sandbox.start(bot, limits)
    try:
        result = await body(process)
        if ends_itself:
            await process.wait(LINE_TIMEOUT_S)
    finally:
        info = await process.cleanup()
        await sandbox.aclose()
    return result, info


# --- the demultiplexer, without Docker -------------------------------------------------


def _frame(kind: int, payload: bytes) -> bytes:
    return bytes([kind, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def test_demux_splits_frames_cut_anywhere() -> None:
    async def scenario() -> None:
        rng = random.Random(7)
        frames = [(rng.choice((1, 2)), rng.randbytes(rng.randrange(0, 3000))) for _ in range(200)]
        wire = b"".join(_frame(kind, payload) for kind, payload in frames)
        stdout, stderr = asyncio.StreamReader(), asyncio.StreamReader()
        notes: list[str] = []
        demux = _FrameDemux(stdout, stderr, notes.append)
        at = 0
        while at < len(wire):
            step = rng.randrange(1, 20) if rng.random() < 0.5 else rng.randrange(1, 5000)
            demux.feed(wire[at : at + step])
            at += step
        demux.feed_eof()
        assert await stdout.read() == b"".join(p for k, p in frames if k == 1)
        assert await stderr.read() == b"".join(p for k, p in frames if k == 2)
        assert notes == []

    run(scenario())


def test_demux_notes_unknown_streams_and_truncation() -> None:
    async def scenario() -> None:
        stdout, stderr = asyncio.StreamReader(), asyncio.StreamReader()
        notes: list[str] = []
        demux = _FrameDemux(stdout, stderr, notes.append)
        demux.feed(_frame(3, b"daemon says no") + _frame(1, b"abc")[:-1])
        demux.feed_eof()
        assert await stderr.read() == b"daemon says no"
        assert await stdout.read() == b"ab"
        assert len(notes) == 2

    run(scenario())


# --- against the engine --------------------------------------------------------------
# (Lines, stderr, exit codes, signals, kill, writes after the end, closed stdout and the
# memory limit, common to every backend: test_conformance.py.)


@pytest.mark.docker
def test_a_write_to_a_bot_that_never_reads_waits_then_fails_when_it_ends(
    sandbox_client: Any, tmp_path: Path
) -> None:
    bot = single_file_bot(
        tmp_path, "deaf", "import time\nprint('up', flush=True)\ntime.sleep(600)\n"
    )

    async def body(process: BotProcess) -> None:
        assert await read_line(process) == b"up\n"
        # More than the pipe, the daemon and the socket hold: the write waits for the bot.
        writer = asyncio.create_task(process.write(b"x" * (8 << 20)))
        await asyncio.sleep(1.0)
        assert not writer.done()
        await process.kill()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(writer, LINE_TIMEOUT_S)
        with pytest.raises(ConnectionError):
            await process.write(b"{}\n")

    run(drive(sandbox_client, bot, LIMITS, body, ends_itself=False))


@pytest.mark.docker
def test_stdin_closed_before_the_bot_opened_it_is_end_of_file(
    sandbox_client: Any, tmp_path: Path
) -> None:
    """Stdin is a FIFO the bot's side opens once its container runs: closed at once after
    the start (before that), the bot still reads end of file, and exits."""
    bot = single_file_bot(
        tmp_path,
        "eof",
        "import sys\ndata = sys.stdin.read()\nprint('eof', len(data), flush=True)\n",
    )

    async def body(process: BotProcess) -> bytes:
        await process.close_stdin()
        return await read_line(process)

    said, info = run(drive(sandbox_client, bot, LIMITS, body))
    assert said == b"eof 0\n" and info.returncode == 0, (said, info)


@pytest.mark.docker
def test_peak_memory_counts_what_the_bot_held(sandbox_client: Any, tmp_path: Path) -> None:
    """Read from the container's memory group (the daemon's figure took a second)."""
    bot = single_file_bot(
        tmp_path,
        "holder",
        "import sys\nheld = bytearray(48 << 20)\nprint('held', flush=True)\nsys.stdin.read()\n",
    )

    async def body(process: BotProcess) -> int | None:
        assert await read_line(process) == b"held\n"
        return await process.peak_memory()

    peak, _ = run(drive(sandbox_client, bot, LIMITS, body, ends_itself=False))
    assert peak is not None and 48 << 20 <= peak < LIMITS.memory_mb << 20, peak


@pytest.mark.docker
def test_memory_bomb_is_oom_killed(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(
        tmp_path,
        "membomb",
        """
        print("eating", flush=True)
        hoard = []
        while True:
            hoard.append(b"x" * (8 << 20))
    """,
    )

    async def body(process: BotProcess) -> ExitInfo | None:
        assert await read_line(process) == b"eating\n"
        return await process.wait(LINE_TIMEOUT_S)

    _, info = run(drive(sandbox_client, bot, Limits(memory_mb=64, tmp_mb=8), body))
    assert info.oom_killed, info
    assert info.detail == "memory limit"
    assert info.describe() == "killed at the memory limit"


def _host_process_count() -> int:
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


@pytest.mark.docker
def test_fork_bomb_hits_the_pids_limit(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(
        tmp_path,
        "forkbomb",
        """
        import os, time
        os.write(1, b"forking\\n")
        told = False
        while True:
            try:
                os.fork()
            except OSError:
                if not told:
                    os.write(1, b"refused\\n")
                    told = True
                time.sleep(0.01)
    """,
    )
    before = _host_process_count()

    async def body(process: BotProcess) -> int:
        assert await read_line(process) == b"forking\n"
        assert await read_line(process) == b"refused\n"
        await asyncio.sleep(1.0)
        return _host_process_count()

    during, info = run(drive(sandbox_client, bot, LIMITS, body, ends_itself=False))
    # The container may hold up to `pids` tasks; other work on the host adds a little noise.
    assert during - before <= LIMITS.pids + 30, (before, during)
    assert info.signal == 9
    assert _host_process_count() - before <= 30


@pytest.mark.docker
def test_network_is_unreachable(sandbox_client: Any, tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    bot = single_file_bot(
        tmp_path,
        "netbot",
        f"""
        import json, os, socket
        results = {{"interfaces": sorted(os.listdir("/sys/class/net"))}}
        for host in ("127.0.0.1", "172.17.0.1", "10.0.2.2"):
            try:
                socket.create_connection((host, {port}), timeout=2).close()
                results[host] = "connected"
            except OSError as exc:
                results[host] = type(exc).__name__
        try:
            socket.getaddrinfo("example.org", 80)
            results["dns"] = "resolved"
        except OSError as exc:
            results["dns"] = type(exc).__name__
        print(json.dumps(results), flush=True)
    """,
    )

    async def body(process: BotProcess) -> Any:
        return await read_json(process)

    try:
        results, info = run(drive(sandbox_client, bot, LIMITS, body))
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert results["interfaces"] == ["lo"]
    assert "connected" not in results.values() and results["dns"] != "resolved", results
    assert info.returncode == 0


@pytest.mark.docker
def test_only_tmp_is_writable(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(
        tmp_path,
        "writer",
        """
        import json, os
        results = {"uid": os.getuid(), "cwd": os.getcwd(), "listing": os.listdir(".")}
        for path in ("/bot/x", "/bot/bot.py", "/etc/x", "/etc/hosts", "/x", "/var/tmp/x",
                     "/dev/shm/x", "/tmp/x"):
            try:
                with open(path, "a") as handle:
                    handle.write("x")
                results[path] = "written"
            except OSError as exc:
                results[path] = type(exc).__name__
        print(json.dumps(results), flush=True)
    """,
    )
    before = (tmp_path / "writer" / "bot.py").read_bytes()

    async def body(process: BotProcess) -> Any:
        return await read_json(process)

    results, info = run(drive(sandbox_client, bot, LIMITS, body))
    assert results.pop("uid") == 65534
    assert results.pop("cwd") == "/bot" and results.pop("listing") == ["bot.py"]
    assert results.pop("/tmp/x") == "written"
    assert "written" not in results.values(), results
    assert (tmp_path / "writer" / "bot.py").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "writer").iterdir()) == ["bot.py"]
    assert info.returncode == 0


@pytest.mark.docker
def test_filling_tmp_stops_at_its_size(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(
        tmp_path,
        "filler",
        """
        import errno, json
        written, error = 0, None
        try:
            with open("/tmp/fill", "wb") as handle:
                while written < 1 << 30:
                    handle.write(b"\\0" * (1 << 20))
                    handle.flush()
                    written += 1 << 20
        except OSError as exc:
            error = errno.errorcode.get(exc.errno, str(exc.errno))
        print(json.dumps({"written": written, "error": error}), flush=True)
    """,
    )
    free_before = os.statvfs("/").f_bavail

    async def body(process: BotProcess) -> Any:
        return await read_json(process)

    results, info = run(drive(sandbox_client, bot, LIMITS, body))
    assert results["error"] == "ENOSPC", results
    assert results["written"] <= LIMITS.tmp_mb << 20
    assert info.returncode == 0
    assert abs(os.statvfs("/").f_bavail - free_before) * os.statvfs("/").f_frsize < 4 << 20


@pytest.mark.docker
def test_folder_bot_and_missing_program(sandbox_client: Any, tmp_path: Path) -> None:
    folder = tmp_path / "folderbot"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "answer.py").write_text("ANSWER = 42\n")
    (folder / "main.py").write_text("from lib.answer import ANSWER\nprint(ANSWER, flush=True)\n")
    for path in (tmp_path, folder, folder / "lib"):
        path.chmod(0o755)
    bot = BotSpec(name="folder bot/ü", folder=folder, command=("python3", "main.py"))

    async def body(process: BotProcess) -> bytes:
        return await read_line(process)

    line, info = run(drive(sandbox_client, bot, LIMITS, body))
    assert line == b"42\n" and info.returncode == 0

    # docker-init starts, fails to exec the program and exits 127: a crash for the runner.
    missing = BotSpec(name="missing", folder=folder, command=("no-such-program",))

    async def body_missing(process: BotProcess) -> bytes:
        return await asyncio.wait_for(process.stderr.read(), LINE_TIMEOUT_S)

    stderr, info = run(drive(sandbox_client, missing, LIMITS, body_missing))
    assert info.returncode == 127 and b"no-such-program" in stderr


@pytest.mark.docker
def test_cancelled_cleanup_still_removes(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(
        tmp_path, "cancel", "import time\nprint('up', flush=True)\ntime.sleep(600)\n"
    )

    async def scenario(delay_s: float) -> bool:
        sandbox = DockerSandbox(client=sandbox_client)
        process = await sandbox.start(bot, LIMITS)
        assert await read_line(process) == b"up\n"
        cleanup = asyncio.create_task(process.cleanup())
        await asyncio.sleep(delay_s)
        cleanup.cancel()
        try:
            await cleanup
        except asyncio.CancelledError:
            return True
        return False  # the cleanup finished before the cancel arrived

    # Cancelled while killing, waiting and removing (about 0.1-0.3 s in all): whenever the
    # cancel lands, the container is gone afterwards.
    cancelled = [run(scenario(delay_s)) for delay_s in (0.0, 0.01, 0.03, 0.05)]
    assert any(cancelled), "no cleanup was cancelled half-way: the test proved nothing"
    assert _our_containers(sandbox_client) == []


@pytest.mark.docker
def test_missing_image_is_a_usage_error(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(tmp_path, "noimage", "print('hi')\n")

    async def scenario() -> None:
        sandbox = DockerSandbox("arschloch-referee-no-such-image:0", client=sandbox_client)
        await sandbox.start(bot, LIMITS)

    with pytest.raises(UsageError, match="build-image"):
        run(scenario())


@pytest.mark.docker
def test_aclose_removes_running_bots(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(tmp_path, "forgotten", "import time\ntime.sleep(600)\n")

    async def scenario() -> None:
        sandbox = DockerSandbox(client=sandbox_client)
        await sandbox.start(bot, LIMITS)
        await sandbox.start(bot, LIMITS)
        assert len(_our_containers(sandbox_client)) == 2
        await sandbox.aclose()

    run(scenario())


@pytest.mark.docker
def test_cancelled_start_leaves_nothing(sandbox_client: Any, tmp_path: Path) -> None:
    bot = single_file_bot(tmp_path, "late", "import time\ntime.sleep(600)\n")

    async def scenario(delay_s: float) -> None:
        sandbox = DockerSandbox(client=sandbox_client)
        starting = asyncio.create_task(sandbox.start(bot, LIMITS))
        await asyncio.sleep(delay_s)
        starting.cancel()
        try:
            process = await starting
        except asyncio.CancelledError:
            return
        await process.cleanup()  # it won the race: started before the cancel arrived

    # Cancelled while creating, attaching and starting the container (about 0.3 s in all).
    for delay_s in (0.0, 0.01, 0.03, 0.1, 0.2):
        run(scenario(delay_s))
        assert _our_containers(sandbox_client) == [], delay_s


# --- images only by permission ---------------------------------------------------------

SECRET_BOT = """
    import sys
    print(open("/secret").read().strip(), flush=True)
    print(open("/secret").read().strip(), file=sys.stderr, flush=True)
"""


class _NoContainers:
    """A client stand-in that fails the test if a container is ever created."""

    def __init__(self) -> None:
        self.containers = self

    def create(self, **options: Any) -> Any:
        raise AssertionError(f"a container was created: {options.get('image')}")


def test_an_image_not_allowed_is_refused_before_any_container(tmp_path: Path) -> None:
    pytest.importorskip("docker")
    bot = single_file_bot(tmp_path, "nosy", SECRET_BOT, image="private/creds:1")
    sandbox = DockerSandbox(client=_NoContainers(), allowed_images=["python:3.11-slim"])

    with pytest.raises(UsageError) as refused:
        run(sandbox.start(bot, LIMITS))
    message = str(refused.value)
    assert "'nosy' names the Docker image 'private/creds:1'" in message
    assert f"-native:latest, {IMAGE_NAME}, python:3.11-slim" in message


@pytest.mark.docker
def test_a_private_image_runs_only_when_allowed(
    sandbox_client: Any, private_image: str, tmp_path: Path
) -> None:
    bot = single_file_bot(tmp_path, "nosy", SECRET_BOT, image=private_image)

    async def refused() -> None:
        sandbox = DockerSandbox(client=sandbox_client)
        try:
            await sandbox.start(bot, LIMITS)
        finally:
            await sandbox.aclose()

    with pytest.raises(UsageError, match="not allow") as info:
        run(refused())
    assert PRIVATE_SECRET not in str(info.value)
    assert _our_containers(sandbox_client) == []

    # The control: allowed, the same bot does read the image's secret.
    async def allowed() -> bytes:
        sandbox = DockerSandbox(client=sandbox_client, allowed_images=[private_image])
        process = await sandbox.start(bot, LIMITS)
        try:
            return await read_line(process)
        finally:
            await process.cleanup()
            await sandbox.aclose()

    assert run(allowed()) == PRIVATE_SECRET.encode() + b"\n"


# --- file names docker's volume syntax cannot carry -------------------------------------

NAMES_BOT = """
    import json, os
    print(json.dumps({"file": __file__, "listing": os.listdir("/bot")}), flush=True)
"""


@pytest.mark.docker
@pytest.mark.parametrize("file", ["evil:x.py", "a\nb.py", "two words,comma.py"])
def test_a_single_file_bot_keeps_any_file_name(
    sandbox_client: Any, tmp_path: Path, file: str
) -> None:
    bot = single_file_bot(tmp_path, "named", NAMES_BOT, file=file)

    async def body(process: BotProcess) -> Any:
        return await read_json(process)

    seen, info = run(drive(sandbox_client, bot, LIMITS, body))
    assert seen == {"file": f"/bot/{file}", "listing": [file]}
    assert info.returncode == 0


@pytest.mark.docker
def test_a_bot_file_named_with_a_colon_plays_a_docker_match(
    sandbox_client: Any, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    evil = source / "evil:x.py"
    evil.write_text((REPO / "tests" / "bots" / "polite.py").read_text())
    bots = [load_bot(evil), load_bot(REPO / "sample_bots" / "lowest")]
    staging = make_staging_root()

    async def scenario() -> Any:
        sandbox = DockerSandbox(client=sandbox_client, match_id="evil-colon")
        try:
            staged = [stage_bot(bot, staging) for bot in (bots[0], bots[1], bots[1])]
            rules = RuleSet.preset("arschloch").with_overrides(target=2).resolve(3)
            async with seated(staged, sandbox=sandbox) as table:
                return await play_match(table, rules, 5, match_id="evil-colon")
        finally:
            await sandbox.aclose()

    try:
        result = run(scenario(), timeout=120)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    assert [st.fault for st in result.standings] == [None, None, None]
    assert any(st.name == "evil:x" for st in result.standings)
