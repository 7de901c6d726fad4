"""Loading bots from user paths and staging private copies: what is accepted, what is
refused and with which message, and what the staged copy looks like.

The hostile half plays the bot author against a referee running as root: symlinks to
root-only files, files and folders flipped into symlinks while they are copied, folders
nested 1,200 deep, special files, too many entries; and staging roots left by a referee
that was killed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.sandbox import BotSpec
from referee.sandbox.staging import (
    MANIFEST,
    MAX_BOT_DEPTH,
    BotFile,
    bot_sha256,
    load_bot,
    make_staging_root,
    read_bot_files,
    remove_staging_root,
    stage_bot,
)
from referee.text import safe_name


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def folder_bot(root: Path, manifest: str, files: dict[str, str] | None = None) -> Path:
    folder = root / "my-bot"
    write(folder / MANIFEST, manifest)
    for name, text in (files or {"bot.py": "print('hi')\n"}).items():
        write(folder / name, text)
    return folder


# --------------------------------------------------------------------------- loading


def test_python_file(tmp_path: Path) -> None:
    spec = load_bot(write(tmp_path / "quick_fox.py", "print()\n"))
    assert spec.name == "quick_fox"
    assert spec.command == ("python3", "./quick_fox.py")
    assert spec.folder == tmp_path.resolve()
    assert spec.single_file == "quick_fox.py"


def test_a_python_file_named_like_an_option_is_still_the_script(tmp_path: Path) -> None:
    spec = load_bot(write(tmp_path / "--help.py", "print()\n"))
    assert spec.command == ("python3", "./--help.py")


def test_executable_file(tmp_path: Path) -> None:
    spec = load_bot(str(write(tmp_path / "runner", "#!/bin/sh\n", 0o755)))
    assert spec.command == ("./runner",)
    assert spec.single_file == "runner"
    assert spec.name == "runner"


def test_folder_with_manifest(tmp_path: Path) -> None:
    folder = folder_bot(
        tmp_path,
        'name = "Quick Fox"\ncommand = "node \'main file.js\' --fast"\n'
        'version = "1.2"\nimage = "node:20-slim"\n',
    )
    spec = load_bot(folder)
    assert spec.name == "Quick Fox"
    assert spec.command == ("node", "main file.js", "--fast")
    assert (spec.version, spec.image, spec.single_file) == ("1.2", "node:20-slim", None)
    assert spec.folder == folder.resolve()


def test_manifest_command_as_list_and_default_name(tmp_path: Path) -> None:
    spec = load_bot(folder_bot(tmp_path, 'command = ["python3", "bot.py"]\n'))
    assert spec.command == ("python3", "bot.py")
    assert spec.name == "my-bot"
    assert spec.version is None


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ('name = "x"\n', "has no command; add e.g. command ="),
        ("command = [1, 2]\n", "command must be a string or a list of strings"),
        ('command = ""\n', "command is empty"),
        ('command = "python3 \'bot.py"\n', "cannot be split"),
        ('command = "python3 bot.py"\nversion = 2\n', "version must be a string, not int"),
        ("command = \n", "is not valid TOML"),
        ('command = "x"\nname = "' + "n" * 65 + '"\n', "65 characters long; at most 64"),
        (
            'name = "x"\ncmd = "python3 bot.py"\n',
            "unknown key 'cmd' (did you mean command?); allowed keys: name, command, build, version, image",
        ),
        ('command = "x"\nversoin = "1"\n', "unknown key 'versoin' (did you mean version?)"),
        ('command = "x"\nzz = 1\naa = 2\n', "unknown key 'aa' and 1 more; allowed keys:"),
        ('command = "x"\n"\\u001b[2J" = 1\n', "unknown key '\\x1b[2J'"),
    ],
)
def test_bad_manifests(tmp_path: Path, manifest: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        load_bot(folder_bot(tmp_path, manifest))


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ('"../outside.py"', "command runs ../outside.py, which leaves the bot's folder"),
        ('"./../outside.py"', "command runs ./../outside.py, which leaves the bot's folder"),
        ('"lib/../../outside.py"', "command runs lib/../../outside.py, which leaves the bot's"),
        ('"../../../../../../etc/shadow"', "which leaves the bot's folder"),
        ('"/usr/bin/python3 bot.py"', "command runs /usr/bin/python3, an absolute path"),
        ('"/bin/sh -c true"', "command runs /bin/sh, an absolute path"),
    ],
)
def test_a_program_outside_the_bot_folder_is_refused_when_loaded(
    tmp_path: Path, command: str, message: str
) -> None:
    (tmp_path / "outside.py").write_text("print()\n")
    with pytest.raises(UsageError, match=re.escape(message)):
        load_bot(folder_bot(tmp_path, f"command = {command}\n"))


def test_the_refusal_of_a_dotdot_program_tells_nothing_of_what_exists(tmp_path: Path) -> None:
    """Resolved from the author's folder as root, ``..`` answered whether any path of the
    machine exists (a file-existence oracle); now the text alone decides."""
    (tmp_path / "there.py").write_text("print()\n")
    messages = []
    for name in ("there.py", "nowhere.py"):
        with pytest.raises(UsageError) as refused:
            load_bot(folder_bot(tmp_path, f'command = "../{name}"\n'))
        messages.append(str(refused.value).replace(name, "NAME"))
        shutil.rmtree(tmp_path / "my-bot")
    assert messages[0] == messages[1]


def test_interpreters_on_the_sandbox_path_and_programs_inside_stay_allowed(
    tmp_path: Path,
) -> None:
    for command in ("python3 bot.py", "node bot.js", "./run", "lib/../run"):
        folder = folder_bot(tmp_path, f'command = "{command}"\n', {"run": "#!/bin/sh\n"})
        (folder / "run").chmod(0o755)
        assert stage_bot(load_bot(folder), tmp_path / "staging").command == tuple(command.split())
        shutil.rmtree(folder)


def test_a_program_path_is_looked_for_in_the_files_read_not_the_authors_folder(
    tmp_path: Path,
) -> None:
    folder = folder_bot(tmp_path, 'command = "./missing"\n')
    with pytest.raises(UsageError, match=r"command runs \./missing, which is not in"):
        read_bot_files(load_bot(folder))
    # There in the author's folder but not among the files copied (a skipped folder).
    folder = folder_bot(tmp_path, 'command = "__pycache__/run"\n')
    write(folder / "__pycache__" / "run", "#!/bin/sh\n", 0o755)
    with pytest.raises(UsageError, match=r"command runs __pycache__/run, which is not in"):
        stage_bot(load_bot(folder), tmp_path / "staging")
    write(folder / MANIFEST, 'command = "./run"\n')
    write(folder / "run", "#!/bin/sh\n", 0o644)
    with pytest.raises(UsageError, match=r"runs \./run, which is not executable; make it so"):
        stage_bot(load_bot(folder), tmp_path / "staging")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"bot not found: .*nope\.py does not exist"):
        load_bot(tmp_path / "nope.py")


def test_folder_without_manifest(tmp_path: Path) -> None:
    write(tmp_path / "bot.py", "")
    with pytest.raises(UsageError, match=r"has no bot\.toml; add one with at least a command"):
        load_bot(tmp_path)


def test_plain_file_that_is_neither_python_nor_executable(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"neither a \.py file nor executable: .*chmod \+x"):
        load_bot(write(tmp_path / "notes.txt", "hello\n"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("n" * 65, "65 characters long; at most 64 are allowed"),
        ("evil\x1b[31mred", "has a non-printable character U+001B"),
        ("right\u202eto-left", "has a non-printable character U+202E"),
        ("line\nbreak", "has a non-printable character U+000A"),
        ("   ", "the bot name is empty"),
        (" padded", "starts or ends with spaces"),
    ],
)
def test_bad_names(tmp_path: Path, name: str, message: str) -> None:
    folder = folder_bot(tmp_path, f'name = {json.dumps(name)}\ncommand = "python3 bot.py"\n')
    with pytest.raises(UsageError, match=re.escape(message)):
        load_bot(folder)


def test_longest_and_unicode_names_are_fine(tmp_path: Path) -> None:
    assert load_bot(folder_bot(tmp_path, f'name = "{"n" * 64}"\ncommand = "x"\n')).name == "n" * 64
    assert load_bot(folder_bot(tmp_path, 'name = "Über Bot ♠"\ncommand = "x"\n')).name == (
        "Über Bot ♠"
    )


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Quick Fox 2!", "quick-fox-2"),
        ("../../etc/passwd", "etc-passwd"),
        ("Über Bot ♠", "uber-bot"),
        ("♠♣", "bot"),
        ("..", "bot"),
        ("a" * 64, "a" * 40),
        ("<script>alert(1)</script>", "script-alert-1-script"),
    ],
)
def test_safe_name(name: str, slug: str) -> None:
    assert safe_name(name) == slug


# --------------------------------------------------------------------------- staging


def test_stage_folder(tmp_path: Path) -> None:
    folder = folder_bot(
        tmp_path,
        'command = "./run"\n',
        {"run": "#!/bin/sh\n", "lib/helper.py": "X = 1\n", "lib/data/table.txt": "1 2\n"},
    )
    (folder / "run").chmod(0o700)
    write(folder / "__pycache__" / "helper.cpython-311.pyc", "junk")
    write(folder / ".git" / "HEAD", "ref\n")
    root = tmp_path / "staging"
    spec = stage_bot(load_bot(folder), root)

    assert spec.folder.parent == root
    assert stat.S_IMODE(root.stat().st_mode) == 0o711
    assert spec.folder.name.startswith("my-bot-" + spec.sha256[:12] + "-")
    staged = sorted(p.relative_to(spec.folder).as_posix() for p in spec.folder.rglob("*"))
    assert staged == ["bot.toml", "lib", "lib/data", "lib/data/table.txt", "lib/helper.py", "run"]
    modes = {p: stat.S_IMODE((spec.folder / p).stat().st_mode) for p in staged}
    assert modes == {
        "bot.toml": 0o644,
        "lib": 0o755,
        "lib/data": 0o755,
        "lib/data/table.txt": 0o644,
        "lib/helper.py": 0o644,
        "run": 0o755,
    }
    assert stat.S_IMODE(spec.folder.stat().st_mode) == 0o755
    assert (spec.folder / "lib/helper.py").read_text() == "X = 1\n"
    assert spec.command == ("./run",)


def test_stage_single_file_copies_only_that_file(tmp_path: Path) -> None:
    write(tmp_path / "src" / "secret.txt", "not part of the bot")
    spec = stage_bot(load_bot(write(tmp_path / "src" / "bot.py", "print()\n")), tmp_path / "s")
    assert os.listdir(spec.folder) == ["bot.py"]
    assert spec.single_file == "bot.py"
    assert spec.command == ("python3", "./bot.py")


def test_hash_is_stable_and_sensitive(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    root = make_staging_root(tmp_path)
    first, second = stage_bot(load_bot(folder), root), stage_bot(load_bot(folder), root)
    assert first.sha256 == second.sha256 and len(first.sha256) == 64
    assert first.folder != second.folder
    assert bot_sha256(read_bot_files(first)) == first.sha256

    files = read_bot_files(load_bot(folder))
    renamed = [
        BotFile("other.py" if f.path == "bot.py" else f.path, f.data, f.executable) for f in files
    ]
    changed = [f._replace(data=f.data + b"#") for f in files]
    flagged = [f._replace(executable=not f.executable) for f in files]
    hashes = {bot_sha256(files), bot_sha256(renamed), bot_sha256(changed), bot_sha256(flagged)}
    assert len(hashes) == 4
    # Boundaries between paths and contents are unambiguous.
    assert bot_sha256([BotFile("a", b"bc", False)]) != bot_sha256([BotFile("ab", b"c", False)])


def test_size_cap(tmp_path: Path) -> None:
    folder = folder_bot(
        tmp_path, 'command = "python3 bot.py"\n', {"a.bin": "x" * 600, "b.bin": "x" * 600}
    )
    with pytest.raises(UsageError, match=r"bot is larger than 0\.0\d+ MB .*leave data sets"):
        stage_bot(load_bot(folder), tmp_path / "staging", max_bytes=1000)
    assert not (tmp_path / "staging").exists() or not os.listdir(tmp_path / "staging")
    stage_bot(load_bot(folder), tmp_path / "staging", max_bytes=2000)


def test_staged_spec_keeps_everything_else(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'name = "Fox"\ncommand = "python3 bot.py"\nversion = "3"\n')
    spec = load_bot(folder)
    staged = stage_bot(spec, tmp_path / "staging")
    assert dataclasses.replace(staged, folder=spec.folder, sha256="") == spec


# --------------------------------------------------------------------------- hostile bots

SECRET = b"ROOT-ONLY-SECRET-7f3a9c"
REGULAR = b"regular content\n"
RACE_STAGINGS = 3000
RACE_SECONDS = 3.0


def root_only_secret(tmp_path: Path, name: str = "secret") -> Path:
    """A 0600 file owned by root, outside every bot: what an author must never obtain."""
    secret = tmp_path / "root-only" / name
    secret.parent.mkdir(exist_ok=True)
    secret.write_bytes(SECRET + b"\n")
    secret.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(secret, 0, 0)
    return secret


def assert_no_secret(folder: Path) -> None:
    """No file under ``folder`` holds the secret, and nothing there is a symlink."""
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            assert not path.is_symlink(), path
            assert path.is_dir() or SECRET not in path.read_bytes(), path


def one_line(exc: pytest.ExceptionInfo[UsageError]) -> str:
    message = str(exc.value)
    assert "\n" not in message and "\r" not in message, message
    return message


@pytest.fixture
def leased_root(tmp_path: Path) -> Iterator[Path]:
    root = make_staging_root(tmp_path)
    yield root
    remove_staging_root(root)


def test_a_single_file_bot_named_through_a_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "bot.py"
    link.symlink_to(root_only_secret(tmp_path))
    with pytest.raises(UsageError) as exc:
        load_bot(link)
    assert re.fullmatch(
        r"bot .*/bot\.py is a symlink \(to .*/root-only/secret\); name the real file instead",
        one_line(exc),
    )


def test_a_folder_bot_named_through_a_symlink_is_refused(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    (tmp_path / "alias").symlink_to(folder)
    with pytest.raises(
        UsageError, match=r"alias is a symlink \(to .*my-bot\); name the real folder"
    ):
        load_bot(tmp_path / "alias")


def test_a_single_file_that_became_a_symlink_after_loading_stages_nothing(
    tmp_path: Path, leased_root: Path
) -> None:
    """The spec was made while it was a file (a tournament file, or a swap after load_bot)."""
    spec = load_bot(write(tmp_path / "src" / "bot.py", "print()\n"))
    (tmp_path / "src" / "bot.py").unlink()
    (tmp_path / "src" / "bot.py").symlink_to(root_only_secret(tmp_path))
    for read in (lambda: stage_bot(spec, leased_root), lambda: read_bot_files(spec)):
        with pytest.raises(UsageError) as exc:
            read()
        assert one_line(exc).endswith(
            "src/bot.py is a symlink; the referee follows no symlinks "
            "(name the real file or folder, or copy it in)"
        )
    assert_no_secret(leased_root)


@pytest.mark.parametrize("single_file", [True, False])
def test_a_bot_folder_that_became_a_symlink_is_refused(tmp_path: Path, single_file: bool) -> None:
    root_only_secret(tmp_path, "bot.py")
    root_only_secret(tmp_path, MANIFEST)
    if single_file:
        spec = load_bot(write(tmp_path / "my-bot" / "bot.py", "print()\n"))
    else:
        spec = load_bot(folder_bot(tmp_path, 'command = "python3 bot.py"\n'))
    (tmp_path / "my-bot").rename(tmp_path / "moved")
    (tmp_path / "my-bot").symlink_to(tmp_path / "root-only")
    with pytest.raises(UsageError) as exc:
        stage_bot(spec, tmp_path / "staging")
    assert one_line(exc).endswith(
        "/my-bot is a symlink; the referee follows no symlinks "
        "(name the real file or folder, or copy it in)"
    )
    assert not (tmp_path / "staging").exists()


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("shadow", "/etc/shadow"),
        ("secret", "../root-only/secret"),
        ("alias.py", "bot.py"),
        ("lib/up.py", "../bot.py"),
        ("etc", "/etc"),
        ("lib2", "lib"),
        ("lib/loop", "."),
        ("dangling", "nowhere"),
    ],
)
def test_a_symlink_anywhere_in_a_folder_is_refused(tmp_path: Path, link: str, target: str) -> None:
    root_only_secret(tmp_path)
    folder = folder_bot(
        tmp_path, 'command = "python3 bot.py"\n', {"bot.py": "print()\n", "lib/x.py": "X = 1\n"}
    )
    (folder / link).symlink_to(target)
    with pytest.raises(UsageError) as exc:
        stage_bot(load_bot(folder), tmp_path / "staging")
    assert one_line(exc).endswith(
        f"my-bot: {link} is a symlink (to {target}); the referee copies no symlinks: "
        "put the file itself in the folder"
    )
    assert not (tmp_path / "staging").exists()


def test_a_manifest_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    secret = root_only_secret(tmp_path)
    secret.write_bytes(b'command = "python3 bot.py"\nname = "' + SECRET + b'"\n')
    folder = tmp_path / "my-bot"
    write(folder / "bot.py", "print()\n")
    (folder / MANIFEST).symlink_to(secret)
    with pytest.raises(UsageError) as exc:
        load_bot(folder)
    message = one_line(exc)
    assert message.endswith(
        "my-bot/bot.toml is a symlink; the referee follows no symlinks "
        "(name the real file or folder, or copy it in)"
    )
    assert SECRET.decode() not in message


# Swaps two paths atomically (renameat2 RENAME_EXCHANGE) as fast as it can. A separate
# process, not a thread: the swaps must land in the middle of staging's system calls.
_FLIPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
def swap():
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
swap()
swap()
print("flipping", flush=True)
while True:
    swap()
"""


def stage_while_flipping(
    spec: BotSpec, root: Path, inside: Path, outside: Path, check: Callable[[Path], None]
) -> tuple[int, int]:
    """Stage ``spec`` over and over while ``inside`` and ``outside`` keep trading places.

    Returns how many stagings succeeded and how many were refused; any other exception
    escapes and fails the test.
    """
    flipper = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(inside), str(outside)],
        stdout=subprocess.PIPE,
        text=True,
    )
    staged = refused = 0
    try:
        assert flipper.stdout is not None and flipper.stdout.readline() == "flipping\n"
        deadline = time.monotonic() + RACE_SECONDS
        while staged + refused < RACE_STAGINGS and time.monotonic() < deadline:
            try:
                copy = stage_bot(spec, root)
            except UsageError as exc:
                assert "\n" not in str(exc)
                refused += 1
                continue
            staged += 1
            assert_no_secret(copy.folder)
            check(copy.folder)
            shutil.rmtree(copy.folder)
    finally:
        flipper.kill()
        flipper.wait()
    return staged, refused


@pytest.mark.slow
def test_a_file_flipped_into_a_symlink_while_staging_never_leaks(
    tmp_path: Path, leased_root: Path
) -> None:
    folder = folder_bot(
        tmp_path, 'command = "python3 bot.py"\n', {"bot.py": "print()\n", "data.txt": ""}
    )
    (folder / "data.txt").write_bytes(REGULAR)
    spec = load_bot(folder)
    (tmp_path / "decoy").mkdir()
    (tmp_path / "decoy" / "data.txt").symlink_to(root_only_secret(tmp_path))

    def check(copy: Path) -> None:
        assert (copy / "data.txt").read_bytes() == REGULAR

    staged, refused = stage_while_flipping(
        spec, leased_root, folder / "data.txt", tmp_path / "decoy" / "data.txt", check
    )
    assert staged > 0 and refused > 0, (staged, refused)


@pytest.mark.slow
def test_a_folder_flipped_into_a_symlink_while_staging_never_leaks(
    tmp_path: Path, leased_root: Path
) -> None:
    folder = folder_bot(
        tmp_path, 'command = "python3 bot.py"\n', {"bot.py": "print()\n", "lib/data.txt": ""}
    )
    (folder / "lib" / "data.txt").write_bytes(REGULAR)
    spec = load_bot(folder)
    root_only_secret(tmp_path, "data.txt")
    (tmp_path / "decoy").mkdir()
    (tmp_path / "decoy" / "lib").symlink_to(tmp_path / "root-only")

    def check(copy: Path) -> None:
        assert (copy / "lib" / "data.txt").read_bytes() == REGULAR

    staged, refused = stage_while_flipping(
        spec, leased_root, folder / "lib", tmp_path / "decoy" / "lib", check
    )
    assert staged > 0 and refused > 0, (staged, refused)


@pytest.mark.slow
def test_a_folder_nested_1200_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    depth = 1200
    for level in range(1, depth + 1):  # mkdir(parents=True) recurses: too deep for it
        (folder / Path(*["d"] * level)).mkdir()
    (folder / Path(*["d"] * depth) / "leaf.txt").write_text("x")
    try:
        with pytest.raises(UsageError) as exc:
            stage_bot(load_bot(folder), tmp_path / "staging")
        assert re.search(
            r"nests folders more than 32 deep \(at (d/){32}d\); flatten it$", one_line(exc)
        )
    finally:
        # Bottom up by path: a recursive rmtree would itself hit the recursion limit.
        (folder / Path(*["d"] * depth) / "leaf.txt").unlink()
        for level in range(depth, 0, -1):
            (folder / Path(*["d"] * level)).rmdir()


def test_nesting_up_to_the_limit_is_fine(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    deepest = Path(*["d"] * MAX_BOT_DEPTH)
    write(folder / deepest / "leaf.txt", "x")
    spec = stage_bot(load_bot(folder), tmp_path / "staging")
    assert (spec.folder / deepest / "leaf.txt").read_text() == "x"
    write(folder / deepest / "d" / "leaf.txt", "x")
    with pytest.raises(UsageError, match=f"nests folders more than {MAX_BOT_DEPTH} deep"):
        stage_bot(load_bot(folder), tmp_path / "staging")


@pytest.mark.parametrize("kind", ["files", "folders"])
def test_too_many_entries_are_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    for n in range(20):
        if kind == "files":
            write(folder / "many" / f"f{n}\nx", "")
        else:
            (folder / "many" / f"d{n}").mkdir(parents=True)
    # bot.toml, bot.py, many/ and the 20 in it: 23 entries, within a cap of 23, not of 22.
    assert len(read_bot_files(load_bot(folder), max_files=23)) == (22 if kind == "files" else 2)
    with pytest.raises(UsageError) as exc:
        read_bot_files(load_bot(folder), max_files=22)
    assert one_line(exc).endswith(
        "has more than 22 files and folders; leave data sets and virtual environments out of it"
    )


def test_too_big_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n', {"big\nfile.bin": "x" * 2000})
    with pytest.raises(UsageError) as exc:
        stage_bot(load_bot(folder), tmp_path / "staging", max_bytes=1000)
    assert re.search(
        r"bot is larger than 0\.0\d+ MB \(reached at .*big\\nfile\.bin\)", one_line(exc)
    )


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))


def _socket(path: Path) -> None:
    # A socket path is limited to 108 bytes: bind relative to the folder.
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(here)


@pytest.mark.parametrize(
    ("make", "kind"), [(_fifo, "a pipe"), (_device, "a device"), (_socket, "a socket")]
)
def test_special_files_are_refused_in_one_line_without_blocking(
    tmp_path: Path, make: Callable[[Path], None], kind: str
) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n', {"lib/x.py": ""})
    make(folder / "lib" / "odd\nname")
    with pytest.raises(UsageError) as exc:
        stage_bot(load_bot(folder), tmp_path / "staging")
    assert one_line(exc).endswith(f"lib/odd\\nname is not a regular file: it is {kind}")


# --------------------------------------------------------------------------- staging roots

# Makes a staging root (with something staged in it), prints it, and holds its lease until
# the test kills it.
_HOLDER = r"""
import sys
from pathlib import Path
from referee.sandbox.staging import make_staging_root
root = make_staging_root(Path(sys.argv[1]))
(root / "staged-bot").mkdir()
print(root, flush=True)
sys.stdin.read()
"""


def start_holder(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    root = Path(holder.stdout.readline().strip())
    assert root.parent == parent and (root / "staged-bot").is_dir()
    return holder, root


def dead_holder(parent: Path) -> Path:
    """The staging root of a referee killed with SIGKILL: nothing of it cleaned up."""
    holder, root = start_holder(parent)
    holder.kill()
    holder.wait()
    return root


def test_a_dead_referees_staging_root_is_removed_a_live_ones_kept(tmp_path: Path) -> None:
    live, live_root = start_holder(tmp_path)
    roots: list[Path] = []
    try:
        dead_root = dead_holder(tmp_path)
        assert dead_root.is_dir()
        roots.append(make_staging_root(tmp_path))
        assert not dead_root.exists()
        assert (live_root / "staged-bot").is_dir()

        roots.append(make_staging_root(tmp_path))
        assert roots[0].is_dir()  # this process's own lease counts as held too

        live.kill()
        live.wait()
        roots.append(make_staging_root(tmp_path))
        assert not live_root.exists()
        assert all(root.is_dir() for root in roots)
    finally:
        live.kill()
        live.wait()
        for root in roots:
            remove_staging_root(root)


def test_the_sweep_touches_only_dead_staging_roots_of_its_own(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = dead_holder(elsewhere)
    (tmp_path / "referee-bots-link").symlink_to(target)
    renamed = tmp_path / "my-folder"
    dead_holder(tmp_path).rename(renamed)
    unleased = tmp_path / "referee-bots-old"
    (unleased / "staged-bot").mkdir(parents=True)
    kept = [target, renamed, unleased]
    if os.geteuid() == 0:
        foreign = dead_holder(tmp_path)
        os.chown(foreign, 65534, 65534)
        kept.append(foreign)

    root = make_staging_root(tmp_path)
    remove_staging_root(root)
    assert all(path.is_dir() for path in kept)
    assert (tmp_path / "referee-bots-link").is_symlink()


def test_remove_staging_root_removes_and_lets_go(tmp_path: Path) -> None:
    """Removing a root lets go of its lease and of nothing else: not of this process's
    other roots, and not of another referee's lease when it removes that one's root."""
    fds = len(os.listdir("/proc/self/fd"))
    kept = make_staging_root(tmp_path)
    root = make_staging_root(tmp_path)
    assert stat.S_IMODE(root.stat().st_mode) == 0o711
    assert stat.S_IMODE((root / ".lease").stat().st_mode) == 0o600
    assert (root / ".lease").read_text().split()[0] == str(os.getpid())  # names its holder
    stage_bot(load_bot(folder_bot(tmp_path, 'command = "python3 bot.py"\n')), root)
    remove_staging_root(root)
    assert not root.exists()
    remove_staging_root(make_staging_root(tmp_path))  # its sweep finds kept's lease held
    assert kept.is_dir()
    holder, theirs = start_holder(tmp_path)
    try:
        before = len(os.listdir("/proc/self/fd"))
        remove_staging_root(theirs)
        assert not theirs.exists()
        assert len(os.listdir("/proc/self/fd")) == before  # theirs is not ours to close
    finally:
        holder.kill()
        holder.communicate()  # reaped, its pipes closed
    remove_staging_root(kept)
    assert len(os.listdir("/proc/self/fd")) == fds


# --------------------------------------------------------------------------- samples by name


def test_a_sample_named_with_an_at_sign_is_its_shipped_folder_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = Path(__file__).resolve().parents[2] / "sample_bots" / "heuristic"
    monkeypatch.chdir(tmp_path)
    spec = load_bot("@heuristic")
    assert spec.name == "heuristic" and spec.folder == shipped
    assert spec.command == ("python3", "bot.py")
    # The same bytes as the shipped folder: the same fingerprint, whichever way it is named.
    assert bot_sha256(read_bot_files(spec)) == bot_sha256(read_bot_files(load_bot(shipped)))
    # A folder of one's own whose name starts with @ is named as a path.
    mine = tmp_path / "@heuristic"
    mine.mkdir()
    (mine / MANIFEST).write_text('name = "mine"\ncommand = "python3 bot.py"\n')
    assert load_bot("./@heuristic").name == "mine"
    assert load_bot(mine).name == "mine"  # a Path is always a path
    assert load_bot("@heuristic").folder == shipped
    # A sample's name is never taken relative to a tournament file's folder.
    assert load_bot("@heuristic", relative_to=tmp_path).folder == shipped
    assert load_bot("@heuristic".replace("@", "./@"), relative_to=tmp_path).name == "mine"


def test_an_unknown_sample_name_is_refused_before_any_path_is_looked_at() -> None:
    with pytest.raises(
        UsageError, match=r"^no sample bot is called @\.\./\.\./etc \(the samples: @"
    ):
        load_bot("@../../etc")
