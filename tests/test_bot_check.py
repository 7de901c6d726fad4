"""``referee bot check`` on real processes: new bots pass, broken ones fail with the reason;
``play`` and ``submit`` explain a fault in the same words.

Every check runs in the process sandbox through the command line (a subprocess), as a bot
author runs it. The hostile bots are in ``tests/bots/``; short time limits keep the ones
that time out quick.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.match.compliance import SEEDS
from tests.match.emulated_bots import emulated_run, on_its_clock

ROOT = Path(__file__).resolve().parent.parent
BOTS = ROOT / "tests" / "bots"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def referee(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        timeout=170,
        cwd=cwd,
    )


def check(bot: Path | str, *options: str) -> subprocess.CompletedProcess[str]:
    return referee("bot", "check", str(bot), "--sandbox", "process", *options)


def _emulated_asked(preset: str, seats: int, seeds: list[int]) -> dict[str, int]:
    run = emulated_run("template")

    async def go() -> dict[str, int]:
        try:
            step = await run.preset(preset, seats, seeds=seeds)
        finally:
            await run.pool.aclose()
        return dict(step.asked)

    return on_its_clock(run, go())


def test_a_new_python_bot_passes_and_meets_the_deals_the_seeds_were_chosen_on(
    tmp_path: Path,
) -> None:
    assert referee("bot", "new", str(tmp_path / "mine")).returncode == 0
    out = check(tmp_path / "mine", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["passed"] is True and data["not_asked"] == []
    assert data["sandbox"].startswith("process sandbox")
    if _filtered():  # the Python kit needs nothing the filter denies
        assert "seccomp filter (EPERM" in data["sandbox"]
    assert data["time"] == {"move_ms": 1000, "bank_ms": 10000, "hello_ms": 10000}
    assert data["limits"]["memory_mb"] == 512 and 0 < data["ready_ms"] < 10000
    assert set(data["asked"]) == {"play", "give", "leftover"}
    assert data["reply_ms"]["count"] > 300 and data["reply_ms"]["max"] < 1000
    peak = data["peak_memory_bytes"]
    assert peak is None or 0 < peak < data["memory_limit_bytes"]
    # The processes meet the deals and the replies the in-process emulation predicts: the
    # seeds searched and proved there hold for the real bots.
    for step in data["steps"][1:-1]:
        key = (step["preset"], step["seats"])
        assert step["seeds"] == list(SEEDS[key][: len(step["seeds"])])
        assert step["asked"] == _emulated_asked(*key, step["seeds"]), step["name"]
    assert "\nok    reuse: " in out.stderr  # the progress lines go to stderr with --json


def test_a_new_javascript_bot_passes(tmp_path: Path) -> None:
    assert referee("bot", "new", str(tmp_path / "js"), "--lang", "javascript").returncode == 0
    out = check(tmp_path / "js")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[1].startswith("sandbox: process sandbox")
    if _filtered():  # the JavaScript kit needs nothing the filter denies
        assert "seccomp filter (EPERM" in out.stdout.splitlines()[1]
    assert "limits: move 1000 ms + bank 10000 ms, hello 10000 ms; memory 512 MiB" in out.stdout
    assert "PASSED: all 12 steps" in out.stdout
    assert "peak memory: " in out.stdout and "reply times: median" in out.stdout


SAMPLES = sorted(p.name for p in (ROOT / "sample_bots").iterdir() if (p / "bot.toml").exists())
# A sample with a build step runs once built: tests/test_compiled_kits_rj.py builds and checks it.
SAMPLES = [
    n for n in SAMPLES if "build =" not in (ROOT / "sample_bots" / n / "bot.toml").read_text()
]


def _filtered() -> bool:
    """Whether bots here run under the seccomp filter (they must under CI=true)."""
    from referee.sandbox import ProcessSandbox

    return os.environ.get("CI") == "true" or ProcessSandbox().seccomp_filter().works


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_bot_passes_under_the_seccomp_filter(name: str) -> None:
    """No sample bot needs what the filter denies (file locks, inotify, io_uring, ...)."""
    out = check(ROOT / "sample_bots" / name)
    assert out.returncode == 0, out.stdout + out.stderr
    sandbox = out.stdout.splitlines()[1]
    if _filtered():
        assert "bubblewrap" in sandbox and "seccomp filter (EPERM" in sandbox, sandbox
    assert "PASSED: all 12 steps" in out.stdout


def _failed(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 1, out.stdout + out.stderr
    assert "\nFAILED: " in out.stdout
    return out.stdout


def test_wrong_card_count() -> None:
    text = _failed(check(BOTS / "wrong_count.py"))
    assert "FAIL  arschloch at 3 seats" in text
    assert "has 1 card; the trick needs 2" in text
    assert "to beat " in text and '"cards": [' in text  # the request, the bot's own line


def _kit_bot(folder: Path, on_play: str) -> Path:
    """A bot on the shipped Python kit whose ``on_play`` body is ``on_play``."""
    folder.mkdir()
    shutil.copy(ROOT / "protocol" / "kits" / "python" / "botkit.py", folder / "botkit.py")
    (folder / "bot.py").write_text(
        "from botkit import Bot\n\n\nclass OneCard(Bot):\n    name = 'one-card'\n\n"
        f"    def on_play(self, state):\n{on_play}\n\n\nOneCard().run()\n"
    )
    (folder / "bot.toml").write_text('name = "one-card"\ncommand = "python3 bot.py"\n')
    return folder


ONE_CARD_INTO_PAIRS = """\
        plays = [p for p in state.legal if p]
        if state.count == 2 and plays:
            return plays[0][:1]  # one card into a pair: the kit's safety net replaces it
        return plays[0] if plays else []"""


def test_a_kit_bot_playing_one_card_into_a_pair_fails_though_its_kit_hid_it(
    tmp_path: Path,
) -> None:
    bot = _kit_bot(tmp_path / "one-card", ONE_CARD_INTO_PAIRS)
    text = _failed(check(bot))
    assert "FAIL  arschloch at 3 seats" in text
    assert "problem: the bot's kit replaced " in text and "with safe ones" in text
    assert "request: act " in text and "to beat " in text
    assert "(not allowed: has 1 card; the trick needs 2)" in text
    assert "the kit sent: " in text and "safety_net = False" in text
    assert re.search(
        r"FAILED: 1 of 12 steps failed; stopped at the first failure, \d+ not run", text
    )
    # `referee play` plays it to the end and warns after the match.
    out = referee(
        "play",
        str(bot),
        str(ROOT / "sample_bots" / "lowest"),
        str(ROOT / "sample_bots" / "lowest"),
        "--sandbox",
        "process",
        "--seed",
        "4",
        "--log",
        str(tmp_path / "m.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    warned = re.search(
        r"warning: seat 0 \(one-card\): your kit replaced (\d+) of your decisions: act "
        r"\d+ \(play\) ",
        out.stdout.replace("\n", " "),
    )
    assert warned is not None, out.stdout
    assert "not allowed: has 1 card; the trick needs 2" in out.stdout.replace("\n", " ")
    assert "kit replaced " + warned.group(1) in out.stdout  # its note in the table
    # The same bot with the net off forfeits, with the referee's own verdict.
    strict = (bot / "bot.py").read_text().replace("name = 'one-card'", "safety_net = False")
    (bot / "bot.py").write_text(strict)
    text = _failed(check(bot))
    assert "illegal: reply to act " in text and "has 1 card; the trick needs 2" in text


def test_a_bot_answering_events_is_told_so() -> None:
    text = _failed(check(BOTS / "answers_events.py"))
    assert "replied to an event; events need no answer" in text
    assert "missing field" not in text and "must be an integer" not in text
    assert "common mistakes: answering events" in text


def test_a_bot_that_runs_out_of_its_bank_is_told_it_is_too_slow() -> None:
    text = _failed(check(BOTS / "spends_bank.py", "--move-ms", "200", "--bank-ms", "300"))
    assert "timeout at act " in text
    assert "hint: too slow: answered 6 requests in time, then spent its bank" in text
    assert "Flush stdout" not in text


def test_slow_hello_keeps_what_it_wrote_before_hello() -> None:
    text = _failed(check(BOTS / "slow_hello.py", "--hello-ms", "500"))
    assert "FAIL  handshake" in text
    assert "timeout at hello 1: timed out answering hello after 500 ms" in text
    assert "a slow start" in text
    assert "stderr before hello:" in text
    assert "loading a very large opening book" in text and "still loading" in text


def test_crash_in_round_2_shows_its_stderr_from_before_hello() -> None:
    text = _failed(check(BOTS / "crash_round2.py"))
    assert "round 2): the bot exited while a request was outstanding (exit code 3)" in text
    during = text.partition("stderr before the match:\n")[2]
    assert during.splitlines()[0].strip() == "crash_round2: starting up (written before hello)"
    assert "stderr during the match, last 12 of" in during
    assert "IndexError in round 2 (on purpose)" in during


def test_bad_leftover_reply() -> None:
    text = _failed(check(BOTS / "bad_leftover.py"))
    assert "(leftover, round " in text and "is not an offered leftover" in text
    assert "expected: take one of " in text


def test_a_bot_that_ignores_the_second_match_on_its_process() -> None:
    """The steps share one process: the second deal at 3 seats is its second match."""
    text = _failed(check(BOTS / "one_match.py", "--move-ms", "200", "--bank-ms", "0"))
    assert "FAIL  arschloch at 3 seats" in text
    assert "(in the match number 2 of this process)" in text
    assert "another match_start may follow on the same process" in text
    assert text.count("\nok    ") == 1  # the handshake; the run stopped at the failure


def test_a_debug_print_on_stdout() -> None:
    text = _failed(check(BOTS / "debug_print.py"))
    assert "reply is not valid JSON" in text
    assert "): thinking about my hand " in text  # the offending line itself
    assert "a debug print on stdout?" in text


def test_a_bot_that_never_flushes_gets_the_flush_hint() -> None:
    text = _failed(check(BOTS / "no_flush.py", "--hello-ms", "1000"))
    assert "timed out answering hello after 1000 ms" in text
    assert "reply: none" in text and "Flush stdout after every line" in text


def test_json_of_a_failure_is_one_object_with_the_problem() -> None:
    out = check(BOTS / "debug_print.py", "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["passed"] is False and data["stopped_early"] is True
    failed = data["steps"][-1]
    assert failed["ok"] is False and failed["fault"]["kind"] == "protocol"
    assert failed["fault"]["reply"].startswith("thinking about my hand")
    assert failed["fault"]["request"]["kind"] == "play"
    assert any(line.startswith("hint: a debug print") for line in failed["problem"])


def test_play_shows_the_offending_line_and_the_stderr_from_before_hello(tmp_path: Path) -> None:
    out = referee(
        "play",
        str(BOTS / "crash_round2.py"),
        str(BOTS / "debug_print.py"),
        str(BOTS / "polite.py"),
        "--sandbox",
        "process",
        "--seed",
        "3",
        "--log",
        str(tmp_path / "m.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "seat 0 (crash_round2) forfeited:" in text and "seat 1 (debug_print) forfeited:" in text
    assert "stderr before the match:\n    crash_round2: starting up (written before hello)" in text
    assert "): thinking about my hand " in text and "a debug print on stdout?" in text
