"""``referee submit``: a good bot is entered; a broken one is refused with the reason."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.match.compliance import CheckReport, check_entry
from referee.sandbox import BotSpec, load_bot, read_bot_files
from referee.sandbox.staging import spec_from_files
from referee.submit import submit
from referee.tournament.file import load_tournament

from .conftest import MARKER, TEST_BOTS, write_tournament

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _submit(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["submit", *args])
    return result.exit_code, result.output


def test_a_good_folder_bot_is_copied_in_and_appended(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "t")
    before = path.read_text()
    bot = tmp_path / "mine"
    bot.mkdir()
    shutil.copy(TEST_BOTS / "polite.py", bot / "main.py")
    (bot / "bot.toml").write_text('name = "ignored"\ncommand = "python3 main.py"\n')
    display = f"Quick Fox | {MARKER} *v2*"

    code, output = _submit(str(bot), "--to", str(path), "--name", display)
    assert code == 0, output
    assert "accepted" in output
    folder = tmp_path / "t" / "bots" / f"quick-fox-{MARKER}-v2"
    assert (folder / "main.py").read_bytes() == (TEST_BOTS / "polite.py").read_bytes()
    assert path.read_text().startswith(before)
    t = load_tournament(path)
    assert t.entrants[-1] == display
    assert t.bot(display).folder == folder

    again, output = _submit(str(bot), "--to", str(path), "--name", display)
    assert again == 2 and "already entered" in output


def test_a_sample_bot_is_entered_by_its_name(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "t")
    code, output = _submit("@lowest", "--to", str(path), "--name", f"low-{MARKER}")
    assert code == 0, output
    assert (tmp_path / "t" / "bots" / f"low-{MARKER}" / "bot.toml").is_file()
    unknown, output = _submit("@nobody", "--to", str(path))
    assert unknown == 2 and "no sample bot is called @nobody" in output


def test_a_single_file_bot_keeps_its_file_name(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    code, output = _submit(str(TEST_BOTS / "polite.py"), "--to", str(path))
    assert code == 0, output
    assert load_tournament(path).bot("polite").single_file == "polite.py"
    assert (tmp_path / "bots" / "polite" / "polite.py").is_file()


def test_a_bot_that_never_says_hello_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, time_section="move_ms = 500\nbank_ms = 500\nhello_ms = 1500")
    before = path.read_text()
    bot = tmp_path / "silent.py"
    bot.write_text("import time\ntime.sleep(60)\n")
    code, output = _submit(str(bot), "--to", str(path))
    assert code == 1
    assert "bot refused: timeout: timed out answering hello after 1500 ms" in output
    assert path.read_text() == before
    assert not (tmp_path / "bots" / "silent").exists()


def test_a_bot_that_never_plays_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, time_section="move_ms = 300\nbank_ms = 200\nhello_ms = 5000")
    code, output = _submit(str(TEST_BOTS / "never_answers.py"), "--to", str(path))
    assert code == 1
    assert "bot refused: timeout: no reply within 500 ms" in output


def test_a_crashing_bot_is_refused_with_its_stderr(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    bot = tmp_path / "crashy.py"
    bot.write_text(
        textwrap.dedent("""\
        import sys
        print("loading my model...", file=sys.stderr, flush=True)
        raise SystemExit("cannot find weights.bin")
    """)
    )
    code, output = _submit(str(bot), "--to", str(path))
    assert code == 1
    assert "bot refused: crash:" in output
    assert "cannot find weights.bin" in output and "loading my model" in output
    assert "crashy" not in path.read_text()


def test_a_bot_with_a_key_error_in_round_4_is_refused_by_the_full_match(tmp_path: Path) -> None:
    """Hostile: three-round matches never reach its bug; the full match of the
    tournament's rules (arschloch to 15 points) does, and says so."""
    path = write_tournament(tmp_path)
    path.write_text(
        path.read_text().replace(
            'rules = { preset = "arschloch", target = 3 }', 'rules = "arschloch"'
        )
    )
    before = path.read_text()
    code, output = _submit(str(TEST_BOTS / "keyerror_round4.py"), "--to", str(path))
    assert code == 1, output
    assert "ok    arschloch at 3 seats" in output  # the short matches pass it
    assert "FAIL  a full match of arschloch at 3 seats" in output
    assert "bot refused: crash: the bot exited while a request was outstanding" in output
    assert "(in round 4: past the 3 rounds of the short matches)" in output
    assert "problem: crash at act" in output and "round 4)" in output
    assert "KeyError: 4" in output and 'plan = OPENINGS[msg["round"]]' in output
    assert path.read_text() == before and not (tmp_path / "bots" / "keyerror_round4").exists()


def test_a_refused_bot_is_shown_its_line_and_its_stderr_from_before_hello(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    code, output = _submit(str(TEST_BOTS / "debug_print.py"), "--to", str(path))
    assert code == 1 and "bot refused: protocol: reply is not valid JSON" in output
    assert "): thinking about my hand " in output  # the offending line
    assert "a debug print on stdout?" in output
    code, output = _submit(str(TEST_BOTS / "crash_round2.py"), "--to", str(path))
    assert code == 1 and "round 2): the bot exited while a request was outstanding" in output
    assert (
        "stderr before the match:\n    crash_round2: starting up (written before hello)" in output
    )
    assert "IndexError in round 2 (on purpose)" in output
    assert "debug_print" not in path.read_text() and "crash_round2" not in path.read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("", "empty"),
        ("x" * 65, "at most 64"),
        ("tab\there", "printable"),
        (f"{MARKER}-a", "already entered"),
    ],
)
def test_bad_names_are_usage_errors(tmp_path: Path, name: str, expected: str) -> None:
    path = write_tournament(tmp_path)
    code, output = _submit(str(TEST_BOTS / "polite.py"), "--to", str(path), "--name", name)
    assert code == 2
    assert expected in output


def test_a_missing_bot_is_a_usage_error_as_in_play(tmp_path: Path) -> None:
    """A path that is not there is the user's mistake (2), as for every command; a bot
    that is there and fails its checks is refused (1)."""
    path = write_tournament(tmp_path)
    code, output = _submit(str(tmp_path / "nope.py"), "--to", str(path))
    assert code == 2 and "does not exist" in output
    play = CliRunner().invoke(main, ["play", str(tmp_path / "nope.py"), "a.py", "b.py"])
    assert play.exit_code == 2 and "does not exist" in play.output


@pytest.mark.parametrize("inside", [False, True])
def test_a_symlinked_bot_is_refused_and_nothing_is_copied(tmp_path: Path, inside: bool) -> None:
    path = write_tournament(tmp_path / "t")
    before = path.read_text()
    secret = tmp_path / "root-only.py"
    secret.write_text("ROOT_ONLY_SECRET_93c2\n")
    secret.chmod(0o600)
    if inside:
        bot = tmp_path / "mine"
        bot.mkdir()
        shutil.copy(TEST_BOTS / "polite.py", bot / "main.py")
        (bot / "bot.toml").write_text('command = "python3 main.py"\n')
        (bot / "weights.bin").symlink_to(secret)
        expected = "weights.bin is a symlink"
    else:
        bot = tmp_path / "mine.py"
        bot.symlink_to(secret)
        expected = "is a symlink (to"
    code, output = _submit(str(bot), "--to", str(path))
    assert code == 1, output
    assert "bot refused: " in output and expected in output
    assert "ROOT_ONLY_SECRET" not in output
    assert path.read_text() == before
    assert sorted(p.name for p in (tmp_path / "t" / "bots").iterdir()) == sorted(
        f"{MARKER}-{c}.py" for c in "abcd"
    )


def test_a_bot_naming_an_image_the_tournament_does_not_allow_is_refused(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "t")
    before = path.read_text()
    bot = tmp_path / "nosy"
    bot.mkdir()
    shutil.copy(TEST_BOTS / "polite.py", bot / "bot.py")
    (bot / "bot.toml").write_text(
        'name = "nosy"\ncommand = "python3 bot.py"\nimage = "private/creds:1"\n'
    )
    code, output = _submit(str(bot), "--to", str(path))
    assert code == 1
    assert "bot refused: bot 'nosy' names the Docker image 'private/creds:1'" in output
    assert (
        "(allowed: arschloch-referee-bot-java:latest, arschloch-referee-bot-native:latest, arschloch-referee-bot:latest)"
        in output
        and "[sandbox]" in output
    )
    assert "check:" not in output  # refused before anything ran
    assert path.read_text() == before
    assert not (tmp_path / "t" / "bots" / "nosy").exists()


@pytest.mark.parametrize(
    "name",
    [f"{MARKER}-\u0430", f"{MARKER.upper()}-A", f"{MARKER}-\uff41", f"\uff54{MARKER[1:]}-a"],
)
def test_a_name_that_looks_like_an_entrant_is_refused(tmp_path: Path, name: str) -> None:
    path = write_tournament(tmp_path)
    before = path.read_text()
    code, output = _submit(str(TEST_BOTS / "polite.py"), "--to", str(path), "--name", name)
    assert code == 2
    assert f"the name {name!r} looks like '{MARKER}-a', already entered" in output
    assert path.read_text() == before


# --------------------------------------------------------------------------- stage once


def _fingerprint(folder_or_file: Path) -> str:
    from referee.sandbox.staging import bot_sha256

    return bot_sha256(read_bot_files(load_bot(folder_or_file)))


def _folder_bot(folder: Path, command: str = "python3 main.py") -> Path:
    folder.mkdir()
    shutil.copy(TEST_BOTS / "polite.py", folder / "main.py")
    (folder / "bot.toml").write_text(f'name = "mine"\ncommand = "{command}"\n')
    return folder


def _swap_main(bot: Path) -> None:
    """A bot that plays just as well, so only the fingerprints can tell them apart."""
    (bot / "main.py").write_bytes((TEST_BOTS / "polite.py").read_bytes() + b"# swapped\n")


def _swap_manifest(bot: Path) -> None:
    """Another command, never checked: a program that would crash at once."""
    (bot / "other.py").write_text("raise SystemExit('never checked')\n")
    (bot / "bot.toml").write_text('name = "mine"\ncommand = "python3 other.py"\n')


@pytest.mark.parametrize("when", ["during the check", "after the check"])
@pytest.mark.parametrize("swap", [_swap_main, _swap_manifest], ids=["main.py", "bot.toml"])
def test_a_bot_swapped_during_submit_is_never_entered_untested(
    tmp_path: Path, when: str, swap: Callable[[Path], None]
) -> None:
    """The author swaps the bot's files (its code, or the ``bot.toml`` that names its
    command) while ``submit`` runs: what is entered hashes to what was checked, and runs
    the command checked, never the swapped version (``submit`` read the files once and
    built the bot's spec from those bytes)."""
    path = write_tournament(tmp_path / "t")
    bot = _folder_bot(tmp_path / "mine")
    tested_on_disk = _fingerprint(bot)
    checked: list[tuple[str, tuple[str, ...]]] = []

    def watched_check(staged: BotSpec, *args: Any, **kwargs: Any) -> CheckReport:
        if when == "during the check":
            swap(bot)
        checked.append((_fingerprint(staged.folder), staged.command))  # the copy, as it plays
        report = check_entry(staged, *args, **kwargs)
        if when == "after the check":
            swap(bot)
        return report

    entered = submit(bot, load_tournament(path), check=watched_check)
    assert checked == [(tested_on_disk, ("python3", "main.py"))]
    assert entered.report.passed and entered.folder == tmp_path / "t" / "bots" / "mine"
    assert _fingerprint(entered.folder) == tested_on_disk != _fingerprint(bot)
    assert load_tournament(path).bot("mine").command == ("python3", "main.py")
    assert not (entered.folder / "other.py").exists()
    assert b"swapped" not in (entered.folder / "main.py").read_bytes()


def test_a_bot_toml_swapped_between_finding_and_reading_the_bot_is_read_from_the_bytes(
    tmp_path: Path,
) -> None:
    """The window the old ``submit`` left open: the bot found (its ``bot.toml`` read for the
    command), then its files read for the copy. The spec is built again from the bytes
    read, so the command is the one in the files that are checked and entered."""
    bot = _folder_bot(tmp_path / "mine")
    found = load_bot(bot)
    _swap_manifest(bot)
    files = read_bot_files(found)
    spec = spec_from_files(found, files)
    assert found.command == ("python3", "main.py")  # what the first read said
    assert spec.command == ("python3", "other.py")  # what the bytes held say, and run
    manifest = next(file for file in files if file.path == "bot.toml")
    assert b"other.py" in manifest.data
    (bot / "bot.toml").unlink()
    with pytest.raises(UsageError, match=r"bot\.toml disappeared while the bot was read"):
        spec_from_files(found, read_bot_files(found))


def test_a_bot_that_breaks_only_on_pairs_is_refused_with_bot_checks_diagnostics(
    tmp_path: Path,
) -> None:
    """It plays one card into every pair (a wrong count): a single short match on a secret
    deal could miss it; the check plays bot check's pinned deals for the tournament's
    rules and table, where the bot must follow a pair."""
    path = write_tournament(tmp_path / "t")
    before = path.read_text()
    bot = tmp_path / "singles.py"
    bot.write_text(SINGLES_INTO_PAIRS)
    code, output = _submit(str(bot), "--to", str(path))
    assert code == 1, output
    assert "bot refused: illegal: wrong count: the trick needs 2 card(s), got 1" in output
    assert "check step: arschloch at 3 seats" in output
    assert "(seed " in output  # bot check's diagnostics: the deal, the request, the reply
    assert path.read_text() == before and not (tmp_path / "t" / "bots" / "singles").exists()


SINGLES_INTO_PAIRS = """\
import json, sys

for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready", "id": msg["id"], "name": "singles"}), flush=True)
    elif msg["type"] == "act":
        hand = msg["hand"]
        if msg["kind"] == "give":
            reply = {"cards": hand[: msg["count"]]}
        elif msg["kind"] == "leftover":
            reply = {"take": msg["offer"][0], "discard": hand[0]}
        elif msg["trick"]["count"] == 2:
            reply = {"cards": hand[-1:]}  # one card into a pair
        else:
            legal = msg["legal"]
            reply = {"cards": legal[0]}
        reply["id"] = msg["id"]
        print(json.dumps(reply), flush=True)
    elif msg["type"] == "bye":
        break
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 ../../bot.py", None),  # an argument: the sandbox's business, not a path here
        ("../../../usr/bin/python3 main.py", "which leaves the bot's folder"),
        ("/usr/bin/python3 main.py", "an absolute path"),
        ("./nothere", "command runs ./nothere, which is not in"),
    ],
)
def test_a_command_outside_the_bot_folder_is_refused_in_one_line(
    tmp_path: Path, command: str, expected: str | None
) -> None:
    path = write_tournament(tmp_path / "t")
    before = path.read_text()
    bot = tmp_path / "mine"
    bot.mkdir()
    shutil.copy(TEST_BOTS / "polite.py", bot / "main.py")
    (bot / "bot.toml").write_text(f'name = "mine"\ncommand = "{command}"\n')
    code, output = _submit(str(bot), "--to", str(path))
    if expected is None:
        assert "leaves the bot's folder" not in output and "absolute path" not in output
        return
    assert code == 1, output
    lines = output.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("referee: bot refused: ") and expected in lines[0]
    )
    assert "check:" not in output and path.read_text() == before


def test_an_author_is_entered_and_limited_by_the_file(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "t", extra="[authors]\nmax_entrants = 1\n")
    bot = tmp_path / "mine"
    bot.mkdir()
    shutil.copy(TEST_BOTS / "polite.py", bot / "main.py")
    (bot / "bot.toml").write_text(
        'name = "mine"\ncommand = "python3 main.py"\nauthor = "Ann Author"\n'
    )
    code, output = _submit(str(bot), "--to", str(path))
    assert code == 0, output
    tournament = load_tournament(path)
    assert tournament.author("mine") == "Ann Author"  # from its bot.toml
    assert "author = " not in path.read_text().split("[[bots]]")[-1]  # the bot.toml says it
    code, output = _submit(str(bot), "--to", str(path), "--name", "mine2")
    assert code == 2 and "'Ann Author' already has 1 entrant ('mine')" in output
    assert "max_entrants allows 1" in output
    # --author overrides the bot.toml, written into the entry; look-alikes are one author.
    # (Another version of the program: the same bytes again would be a twin of "mine".)
    with (bot / "main.py").open("a") as main_py:
        main_py.write("# Bob's version\n")
    code, output = _submit(str(bot), "--to", str(path), "--name", "mine3", "--author", "Bob")
    assert code == 0, output
    assert 'author = "Bob"' in path.read_text()
    code, output = _submit(str(bot), "--to", str(path), "--name", "mine4", "--author", "BOB")
    assert code == 2 and "'BOB' already has 1 entrant ('mine3')" in output


def test_a_byte_identical_copy_of_an_entrant_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    path = write_tournament(tmp_path)
    code, output = _submit(str(TEST_BOTS / "polite.py"), "--to", str(path))
    assert code == 0, output
    before = path.read_text()
    code, output = _submit(str(TEST_BOTS / "polite.py"), "--to", str(path), "--name", "again")
    assert code == 1, output
    assert "byte-identical to the entrant 'polite'" in output and "allow_twins = true" in output
    assert "check:" not in output  # refused before it played
    assert path.read_text() == before and not (tmp_path / "bots" / "again").exists()
