"""The command line: results, JSON output, replay, and one-line errors with exit code 2.

The commands run in this process, through click's :class:`~click.testing.CliRunner`: none
of these tests sends a signal or needs a terminal (those are in ``tests/test_interrupts.py``
and ``tests/test_human_pty.py``; the installed entry point in ``tests/test_packaging.py``).
An exception a command lets through fails the test: it would be a traceback for the user.
One test runs ``python -m referee`` for real.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import (
    InfrastructureError,
    Refused,
    ReplayMismatch,
    RulesError,
    UsageError,
)
from referee.stderrlog import stderr_path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
BOTS = ROOT / "tests" / "bots"
GOLDEN = ROOT / "tests" / "rules" / "golden"


@dataclass(frozen=True)
class Ran:
    """What a command did: its exit code and what it wrote on stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def referee(*args: str) -> Ran:
    """``referee ARGS`` run in this process; an exception it does not handle is raised."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return Ran(result.exit_code, result.stdout, result.stderr)


def test_python_dash_m_referee_is_the_command_line() -> None:
    """The module entry point runs the same group, and its errors are one line, no traceback."""
    out = subprocess.run(
        [sys.executable, "-m", "referee", "replay", "does-not-exist.jsonl"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("referee: ") and "no such match log" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_play_json_is_one_object(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl"
    out = referee(
        "play",
        str(SAMPLES / "heuristic"),
        str(SAMPLES / "lowest"),
        str(BOTS / "garbage.py"),
        "--seed",
        "4",
        "--sandbox",
        "process",
        "--json",
        "--log",
        str(log),
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {
        "match",
        "seed",
        "rules",
        "rounds",
        "log",
        "standings",
        "reply_ms",
        "bank_spent_ms",
    }
    assert len(data["reply_ms"]["0"]) > 0 and data["bank_spent_ms"]["0"] >= 0
    assert stderr_path(log).is_file()  # every bot's stderr, beside the log
    assert data["seed"] == 4 and data["rules"] == "arschloch" and data["log"] == str(log)
    last = data["standings"][-1]
    assert last["name"] == "garbage" and last["forfeit"] is True
    assert last["fault"]["kind"] == "protocol"
    assert set(last) == {
        "seat",
        "name",
        "place",
        "score",
        "forfeit",
        "fault",
        "kit_replaced",
        "kit_replacements",
    }
    assert last["kit_replaced"] == 0 and last["kit_replacements"] == []
    check = referee("replay", "--check-only", str(log))
    assert check.returncode == 0 and "ok" in check.stdout


def test_play_summary_names_the_fault_and_the_log(tmp_path: Path) -> None:
    out = referee(
        "play",
        str(BOTS / "polite.py"),
        str(BOTS / "polite.py"),
        str(BOTS / "not_held.py"),
        "--sandbox",
        "process",
        "--seed",
        "2",
        "--log",
        str(tmp_path / "x.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    assert "polite#1" in out.stdout and "polite#2" in out.stdout
    assert "illegal" in out.stdout and "not in your hand" in out.stdout
    assert "x.jsonl" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["play", "a.py", "b.py"], "a match needs 3 to 6 bots, got 2"),
        (["play", "nope.py", "x.py", "y.py"], "nope.py"),
        (
            ["play", str(BOTS / "polite.py")] * 1
            + [str(BOTS / "polite.py")] * 2
            + ["--rules", "chess"],
            "unknown preset 'chess'",
        ),
        (["replay", "does-not-exist.jsonl"], "no such match log"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], message: str) -> None:
    out = referee(*args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_bot_toml_without_command(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "bot.toml").write_text('name = "b"\n')
    out = referee("play", str(folder), str(BOTS / "polite.py"), str(BOTS / "polite.py"))
    assert out.returncode == 2 and "command" in out.stderr and "Traceback" not in out.stderr


def test_a_bot_named_through_a_symlink_is_refused_unread(tmp_path: Path) -> None:
    """Root must not stage what a symlink points at: here a root-only file whose content
    would come back in the bot's stderr tail if it ran."""
    secret = tmp_path / "root-only.py"
    secret.write_text("ROOT_ONLY_SECRET_5b1e\n")
    secret.chmod(0o600)
    link = tmp_path / "bot.py"
    link.symlink_to(secret)
    out = referee(
        "play", str(link), str(BOTS / "polite.py"), str(BOTS / "polite.py"), "--sandbox", "process"
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "is a symlink" in out.stderr and "name the real file instead" in out.stderr
    assert "ROOT_ONLY_SECRET" not in out.stdout + out.stderr


def test_replay_prints_tricks_and_catches_a_tampered_log(tmp_path: Path) -> None:
    path = GOLDEN / "arschloch-4p-seed101.jsonl"
    out = referee("replay", "--no-color", str(path))
    assert out.returncode == 0
    assert "Trick 1" in out.stdout and "7♣" in out.stdout and "Final standings" in out.stdout
    lines = path.read_text().splitlines()
    row = json.loads(lines[3])
    row["cards"] = ["KH"]
    lines[3] = json.dumps(row)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    out = referee("replay", str(bad))
    assert out.returncode == 1 and "line 4" in out.stderr


def test_control_characters_in_a_bot_name_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "bot.py").write_text((BOTS / "polite.py").read_text())
    (folder / "bot.toml").write_text('name = "x\\u001b[2J"\ncommand = "python3 bot.py"\n')
    out = referee("play", str(folder), str(BOTS / "polite.py"), str(BOTS / "polite.py"))
    assert out.returncode == 2
    assert "non-printable character U+001B" in out.stderr
    assert "\x1b" not in out.stderr and "Traceback" not in out.stderr


def test_markup_in_a_bot_name_is_shown_literally(tmp_path: Path) -> None:
    folder = tmp_path / "markup"
    folder.mkdir()
    (folder / "bot.py").write_text((BOTS / "polite.py").read_text())
    (folder / "bot.toml").write_text('name = "[bold]x[/bold]"\ncommand = "python3 bot.py"\n')
    out = referee(
        "play",
        str(folder),
        str(BOTS / "polite.py"),
        str(BOTS / "polite.py"),
        "--sandbox",
        "process",
        "--log",
        str(tmp_path / "e.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    assert "[bold]x[/bold]" in out.stdout


def test_bot_new_then_check(tmp_path: Path) -> None:
    folder = tmp_path / "mybot"
    out = referee("bot", "new", str(folder))
    assert out.returncode == 0 and (folder / "bot.toml").exists()
    out = referee("bot", "check", str(folder), "--sandbox", "process")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "\nPASSED: all 12 steps\n" in out.stdout
    out = referee("bot", "check", str(BOTS / "pass_lead.py"), "--sandbox", "process")
    assert out.returncode == 1
    assert "passing while leading: the leader must play" in out.stdout
    assert '"cards": []' in out.stdout  # the offending reply, as the bot wrote it


def test_escape_sequences_in_error_lines_are_shown_not_obeyed(tmp_path: Path) -> None:
    evil = tmp_path / "a\x1b[31mred\x07\x9b2J.py"
    evil.write_text((BOTS / "polite.py").read_text())
    out = referee("play", str(evil), str(BOTS / "polite.py"), str(BOTS / "polite.py"))
    assert out.returncode == 2
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr and "\x9b" not in out.stderr
    assert "a\\x1b[31mred\\x07\\x9b2J.py" in out.stderr  # the path, escaped, in one line
    assert len(out.stderr.strip().splitlines()) == 1


def _nosy_bot(tmp_path: Path, image: str) -> Path:
    """A bot that prints the private image's secret, if it ever runs in it."""
    folder = tmp_path / "nosy"
    folder.mkdir()
    (folder / "bot.py").write_text(
        "import sys\nprint(open('/secret').read(), file=sys.stderr, flush=True)\nsys.exit(3)\n"
    )
    (folder / "bot.toml").write_text(
        f'name = "nosy"\ncommand = "python3 bot.py"\nimage = "{image}"\n'
    )
    return folder


@pytest.mark.docker
@pytest.mark.parametrize("command", ["play", "bot check"])
def test_a_private_image_is_refused_before_anything_runs(
    tmp_path: Path, private_image: str, command: str
) -> None:
    from tests.conftest import PRIVATE_SECRET, run_containers

    before = run_containers()
    bot = _nosy_bot(tmp_path, private_image)
    args = [str(bot), str(BOTS / "polite.py"), str(BOTS / "polite.py")]
    if command == "bot check":
        args = [str(bot)]
    out = referee(*command.split(), *args, "--sandbox", "docker")
    assert out.returncode == 2, out.stderr
    assert f"bot 'nosy' names the Docker image '{private_image}'" in out.stderr
    assert f"to allow it, pass --allow-image {private_image}" in out.stderr
    assert PRIVATE_SECRET not in out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert run_containers() == before


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError("bad flag"), 2),
        (RulesError("bad rule"), 2),
        (Refused("bot refused: crash"), 1),
        (ReplayMismatch(3, "a", "b"), 1),
        (InfrastructureError("the daemon died"), 3),
    ],
)
def test_each_branch_of_the_error_tree_has_its_exit_code(error: Exception, code: int) -> None:
    """One line on stderr, no traceback, and the branch's code (docs/cli.md, Exit codes)."""
    import click

    from referee.cli.app import friendly

    @click.command()
    @friendly
    def failing() -> None:
        raise error

    result = CliRunner().invoke(failing, [])
    assert result.exit_code == code
    assert result.output.startswith("referee: ") and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_play_logs_never_overwrite_and_the_sandbox_and_limits_are_said() -> None:
    """Two runs of the same deal keep two logs; with no --sandbox the process one is used."""
    bots = [str(BOTS / "polite.py")] * 3
    runs = [referee("play", *bots, "--seed", "3", "--json", "--max-rounds", "1") for _ in "ab"]
    logs = []
    for out in runs:
        assert out.returncode == 0, out.stderr
        logs.append(Path(json.loads(out.stdout)["log"]))
    try:
        assert logs[0] != logs[1] and all(log.is_file() for log in logs)
        assert logs[0].read_text().splitlines()[1:] == logs[1].read_text().splitlines()[1:]
    finally:
        for log in logs:
            log.unlink(missing_ok=True)
            stderr_path(log).unlink(missing_ok=True)
    shown = referee("play", *bots, "--max-rounds", "1")
    assert shown.returncode == 0, shown.stderr
    assert "sandbox: process sandbox" in shown.stderr
    assert "limits: move 1000 ms + bank 10000 ms, hello 10000 ms; memory 512 MiB" in shown.stderr


def test_protocol_spec_prints_or_writes_the_spec(tmp_path: Path) -> None:
    spec = (ROOT / "protocol" / "SPEC.md").read_text(encoding="utf-8")
    printed = referee("protocol", "spec")
    assert printed.returncode == 0 and printed.stdout == spec
    written = referee("protocol", "spec", "--out", str(tmp_path / "SPEC.md"))
    assert written.returncode == 0 and (tmp_path / "SPEC.md").read_text(encoding="utf-8") == spec
    refused = referee("protocol", "spec", "--out", str(tmp_path / "no" / "such" / "SPEC.md"))
    assert refused.returncode == 2 and "cannot write the protocol to" in refused.stderr
