"""The Rust and Java kits, built with the real compilers and driven as real processes.

Each language's sample (``sample_bots/rust-lowest``, ``sample_bots/java-lowest``) is copied
to a temporary folder and built there once per module by its own ``Makefile``, as the
referee's build step runs it (``make``, ``PATH=/usr/bin:/bin``, ``HOME=TMPDIR`` a scratch
folder). The built program then plays the recorded transcript
``protocol/examples/short-match.jsonl`` over pipes: every answer must be one line, there
while stdin stays open (flushed, not waiting for end of input), protocol-valid
(``parse_reply``) and legal, and the same as the Python ``lowest`` sample's. Hostile input
(unknown fields and message types, a very long string, deep nesting, lines that are not
JSON or not UTF-8) must not stop a kit; a decision that panics or throws is replaced with a
marker line the referee reads back. One test per language runs ``referee bot check`` on the
built copy in the process sandbox.

A missing compiler skips a language, and fails it under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.protocol import messages as m
from referee.protocol.kit import KIT_MARKER, read_marker

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT = ROOT / "protocol" / "examples" / "short-match.jsonl"
BUILD_PATH = "/usr/bin:/bin"  # what the referee's build step gives make
REPLY_TIMEOUT = 5.0
REFEREE = (sys.executable, "-m", "referee")

LANGUAGES = {
    "rust": ("rust-lowest", "bot.rs", ("rustc", "make")),
    "java": ("java-lowest", "Bot.java", ("javac", "java", "make")),
}

# Bots whose every decision is wrong, to see the safety net: the play panics or throws, the
# give holds a card nobody has.
BROKEN = {
    "rust": """mod botkit;
use botkit::{Bot, GameState};
struct Broken;
impl Bot for Broken {
    fn on_play(&mut self, _state: &GameState) -> Vec<String> { panic!("bug") }
    fn on_give(&mut self, _s: &GameState, _to: i64, count: usize) -> Vec<String> {
        vec!["ZZ".to_string(); count]
    }
}
fn main() { botkit::run(&mut Broken); }
""",
    "java": """import java.util.List;
public class Bot extends BotKit {
    @Override public List<String> onPlay(GameState state) { throw new IllegalStateException("bug"); }
    @Override public List<String> onGive(GameState state, int to, int count) {
        return java.util.Collections.nCopies(count, "ZZ");
    }
    public static void main(String[] args) { new Bot().run(); }
}
""",
}


def _require(tools: tuple[str, ...]) -> None:
    missing = [t for t in tools if shutil.which(t, path=BUILD_PATH) is None]
    if not missing:
        return
    why = f"{', '.join(missing)} not in {BUILD_PATH}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {why}")
    pytest.skip(f"{why}; under CI=true this fails")


@dataclass(frozen=True)
class Built:
    lang: str
    folder: Path
    command: list[str]


def _build(lang: str, target: Path, source: str | None = None) -> Built:
    """The sample of ``lang`` copied to ``target`` and built by ``make`` there; ``source``
    replaces its bot's source file."""
    sample, bot_file, tools = LANGUAGES[lang]
    _require(tools)
    shutil.copytree(ROOT / "sample_bots" / sample, target)
    if source is not None:
        (target / bot_file).write_text(source)
    scratch = target.parent / f"{target.name}-tmp"
    scratch.mkdir()
    env = {"PATH": BUILD_PATH, "HOME": str(scratch), "TMPDIR": str(scratch)}
    made = subprocess.run(["make"], cwd=target, env=env, capture_output=True, timeout=170)
    assert made.returncode == 0, made.stdout.decode() + made.stderr.decode()
    manifest = tomllib.loads((target / "bot.toml").read_text())
    assert manifest["build"] == ["make"]
    return Built(lang, target, shlex.split(manifest["command"]))


@pytest.fixture(scope="module", params=sorted(LANGUAGES))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    lang: str = request.param
    return _build(lang, tmp_path_factory.mktemp(lang) / LANGUAGES[lang][0])


@pytest.fixture(scope="module", params=sorted(LANGUAGES))
def broken(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    lang: str = request.param
    return _build(lang, tmp_path_factory.mktemp(lang) / "broken", BROKEN[lang])


class Pipe:
    """The built bot on pipes; every read has a timeout, so a missing flush fails the test."""

    def __init__(self, bot: Built) -> None:
        self.proc = subprocess.Popen(
            bot.command,
            cwd=bot.folder,
            env={"PATH": BUILD_PATH},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def answer(self) -> bytes:
        """The next line on stdout, which must arrive while stdin is still open."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], REPLY_TIMEOUT)
        assert ready, f"no answer within {REPLY_TIMEOUT} s: not flushed?"
        line = self.proc.stdout.readline()
        assert line.endswith(b"\n"), f"not one whole line: {line!r}; stderr: {self.finish()}"
        return line

    def silent(self, wait: float = 0.1) -> bool:
        assert self.proc.stdout is not None
        return not select.select([self.proc.stdout], [], [], wait)[0]

    def finish(self) -> str:
        """Close stdin; the bot's exit code must be 0 within a second. Its stderr."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=1.0)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None and self.proc.stdout is not None
        err = self.proc.stderr.read().decode(errors="replace")
        self.proc.stderr.close()
        self.proc.stdout.close()
        assert code == 0, f"exit code {code}; stderr: {err[-2000:]}"
        return err


def _transcript() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in TRANSCRIPT.read_text().splitlines() if line.strip()]
    return [row["msg"] for row in rows if row["dir"] == "to_bot"]


def _check_legal(reply: Any, request: dict[str, Any]) -> None:
    """The parsed reply is one the rules allow for ``request``."""
    hand = list(request["hand"])
    if request["kind"] == "leftover":
        assert reply.take in request["offer"] and reply.discard in [*hand, reply.take]
        return
    for card in reply.cards:
        assert card in hand, f"{card} is not in the hand {request['hand']}"
        hand.remove(card)
    if request["kind"] == "give":
        assert len(reply.cards) == request["count"]
        return
    ranks = sorted(c[:-1] for c in reply.cards)
    assert ranks in [sorted(c[:-1] for c in p) for p in request["legal"]], reply.cards


def _play(pipe: Pipe, lines: list[dict[str, Any]], extra: dict[str, Any]) -> list[Any]:
    """Send each message (with ``extra`` fields); read, parse and check each answer."""
    answers = []
    for msg in lines:
        pipe.send(m.encode({**msg, **extra}))
        if "id" not in msg:
            continue
        kind = "hello" if msg["type"] == "hello" else msg["kind"]
        reply = m.parse_reply(pipe.answer(), msg["id"], kind)
        assert pipe.silent(0.0), "more than one line for one request"
        if kind != "hello":
            _check_legal(reply, msg)
        answers.append(reply)
    return answers


def _python_lowest(lines: list[dict[str, Any]]) -> list[Any]:
    """What sample_bots/lowest answers to the same lines."""
    folder = ROOT / "sample_bots" / "lowest"
    out = subprocess.run(
        [sys.executable, "bot.py"],
        cwd=folder,
        input=b"".join(m.encode(msg) for msg in lines),
        capture_output=True,
        timeout=10,
        check=True,
    )
    requests = [msg for msg in lines if "id" in msg]
    return [
        m.parse_reply(line, msg["id"], "hello" if msg["type"] == "hello" else msg["kind"])
        for line, msg in zip(out.stdout.splitlines(), requests, strict=True)
    ]


def test_the_sample_plays_the_transcript_as_the_python_lowest_does(built: Built) -> None:
    lines = _transcript()
    pipe = Pipe(built)
    answers = _play(pipe, lines, {})
    assert pipe.finish() == ""
    ready, *moves = answers
    assert (ready.name, ready.version) == (f"{built.lang}-lowest", "1")
    assert [a.model_dump() for a in moves] == [a.model_dump() for a in _python_lowest(lines)[1:]]


def test_hostile_input_does_not_stop_the_kit(built: Built) -> None:
    lines = _transcript()
    hello, start, *rest = lines
    long = "é" * 300_000  # a very long string of two-byte characters
    extra = {"zz_unknown": {"nested": [1, {"a": None}], "s": '\\"\u2028\U0001f600'}}
    pipe = Pipe(built)
    _play(pipe, [hello, start], extra)
    hostile = [
        m.encode({"type": "telemetry", "id": 99, "blob": long}),
        m.encode({"type": "played", "seat": "x", "cards": None}),
        b"[" * 50_000 + b"\n",
        b"not json\n",
        b'{"type": "\xff\xfe"}\n',
        b"[1, 2]\n",
        b'{"type": "round_start", "big": 1e999, "n": -0, "huge": 123456789012345678901234}\n',
    ]
    for line in hostile:
        pipe.send(line)
    assert pipe.silent(0.3), "the kit answered an event or a broken line"
    first_act = next(i for i, msg in enumerate(rest) if msg["type"] == "act")
    answers = _play(pipe, rest[: first_act + 1], {**extra, "long": long})
    answers += _play(pipe, rest[first_act + 1 :], extra)
    assert len(answers) == 10
    err = pipe.finish()
    assert "panicked" not in err and "Exception" not in err, err[-2000:]
    assert "botkit: ignoring a line that is not JSON" in err


def test_a_wrong_decision_is_replaced_and_said_in_a_marker_line(broken: Built) -> None:
    lines = _transcript()
    pipe = Pipe(broken)
    answers = _play(pipe, lines, {})
    assert [a.cards for a in answers[1:3]] == [[], []]  # following: the safe choice passes
    assert answers[3].cards == ["7D"]  # leading: the lowest legal play
    err = pipe.finish()
    markers = [
        read_marker(line.encode())
        for line in err.splitlines()
        if line.encode().startswith(KIT_MARKER)
    ]
    assert len(markers) == 10  # nine plays and one give
    first = markers[0]
    assert (first.request_id, first.kind, first.why, first.decided, first.sent) == (
        6,
        "play",
        "raised",
        None,
        [],
    )
    assert first.error is not None and "bug" in first.error
    give = next(r for r in markers if r.kind == "give")
    assert (give.request_id, give.why, give.decided, give.sent) == (
        18,
        "not allowed",
        ["ZZ"],
        ["7C"],
    )


def test_the_samples_build_and_run_as_the_kit_templates_say() -> None:
    """A sample's bot.toml builds and runs as its kit's template does, and the template
    names its bot with the placeholder the referee fills in."""
    for lang, (sample, _, _) in LANGUAGES.items():
        template = tomllib.loads((ROOT / "protocol" / "kits" / lang / "bot.toml").read_text())
        shipped = tomllib.loads((ROOT / "sample_bots" / sample / "bot.toml").read_text())
        assert template["name"] == "{name}" and shipped["name"] == sample
        assert (shipped["build"], shipped["command"]) == (template["build"], template["command"])


def _checked_copy(bot: Built, target: Path) -> Path:
    """A copy of the built bot without its build line, which the check would refuse or run."""
    shutil.copytree(bot.folder, target)
    manifest = target / "bot.toml"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(line for line in lines if not line.startswith("build")))
    return target


def test_the_built_sample_passes_the_bot_check_in_the_process_sandbox(
    built: Built, tmp_path: Path
) -> None:
    copy = _checked_copy(built, tmp_path / built.folder.name)
    out = subprocess.run(
        [*REFEREE, "bot", "check", str(copy), "--json", "--sandbox", "process"],
        capture_output=True,
        text=True,
        timeout=170,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["passed"] is True and report["not_asked"] == []
    assert set(report["asked"]) == {"play", "give", "leftover"}
    if _filtered():  # the kit needs nothing the seccomp filter denies
        assert "seccomp filter (EPERM" in report["sandbox"], report["sandbox"]


def _filtered() -> bool:
    """Whether bots here run under the seccomp filter (they must under CI=true)."""
    from referee.sandbox import ProcessSandbox

    return os.environ.get("CI") == "true" or ProcessSandbox().seccomp_filter().works
