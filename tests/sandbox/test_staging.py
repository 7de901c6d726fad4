"""Loading bots from user paths and staging private copies: what is accepted, what is
refused and with which message, and what the staged copy looks like."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.sandbox.staging import (
    MANIFEST,
    BotFile,
    bot_sha256,
    load_bot,
    make_staging_root,
    read_bot_files,
    safe_name,
    stage_bot,
)


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
    assert spec.command == ("python3", "quick_fox.py")
    assert spec.folder == tmp_path.resolve()
    assert spec.single_file == "quick_fox.py"


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
        ('command = "./missing"\n', "command runs ./missing, which is not in"),
        ("command = \n", "is not valid TOML"),
        ('command = "x"\nname = "' + "n" * 65 + '"\n', "65 characters long; at most 64"),
    ],
)
def test_bad_manifests(tmp_path: Path, manifest: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        load_bot(folder_bot(tmp_path, manifest))


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
    assert spec.command == ("python3", "bot.py")


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


def test_symlink_inside_is_copied_as_a_file(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    (folder / "alias.py").symlink_to("bot.py")
    spec = stage_bot(load_bot(folder), tmp_path / "staging")
    alias = spec.folder / "alias.py"
    assert not alias.is_symlink() and alias.read_text() == "print('hi')\n"


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.txt", "/etc"])
def test_symlink_out_of_the_folder_is_refused(tmp_path: Path, target: str) -> None:
    write(tmp_path / "outside.txt", "secret")
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    (folder / "link").symlink_to(target)
    with pytest.raises(UsageError, match=f"link is a symlink to {target}, which is not a file"):
        stage_bot(load_bot(folder), tmp_path / "staging")


def test_size_cap(tmp_path: Path) -> None:
    folder = folder_bot(
        tmp_path, 'command = "python3 bot.py"\n', {"a.bin": "x" * 600, "b.bin": "x" * 600}
    )
    with pytest.raises(UsageError, match=r"bot is larger than 0\.0\d+ MB .*leave data sets"):
        stage_bot(load_bot(folder), tmp_path / "staging", max_bytes=1000)
    assert not (tmp_path / "staging").exists() or not os.listdir(tmp_path / "staging")
    stage_bot(load_bot(folder), tmp_path / "staging", max_bytes=2000)


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'command = "python3 bot.py"\n')
    os.mkfifo(folder / "pipe")
    with pytest.raises(UsageError, match="not a regular file"):
        stage_bot(load_bot(folder), tmp_path / "staging")


def test_staged_spec_keeps_everything_else(tmp_path: Path) -> None:
    folder = folder_bot(tmp_path, 'name = "Fox"\ncommand = "python3 bot.py"\nversion = "3"\n')
    spec = load_bot(folder)
    staged = stage_bot(spec, tmp_path / "staging")
    assert dataclasses.replace(staged, folder=spec.folder, sha256="") == spec
