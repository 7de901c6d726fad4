"""Loading a bot from what the user names, and staging a private copy for the sandbox.

A bot is one of::

    bot.py               a Python file      -> python3 bot.py   (the system's python3)
    mybot                an executable file -> ./mybot
    folder/bot.toml      a folder with a manifest:
                             name = "Quick Fox"          (optional, default: the folder name)
                             command = "node main.js"    (a string split like a shell, or a list)
                             version = "1.2"             (optional)
                             image = "node:20-slim"      (optional, for the docker backend)

:func:`load_bot` checks all that and says plainly what is wrong (``UsageError``).
:func:`stage_bot` copies the bot's files into a fresh folder that the sandbox user may read
but not write, and fingerprints them (:func:`bot_sha256`), so a bot that changes on disk
during a tournament cannot change what runs, and a bot never runs from the user's own folder.
The bytes themselves (:func:`read_bot_files`) are what a remote worker gets as a bundle.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import shlex
import stat
import tempfile
import tomllib
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from referee.errors import UsageError
from referee.names import MAX_NAME_LENGTH, check_name
from referee.sandbox.base import BotSpec

__all__ = [
    "MANIFEST",
    "MAX_BOT_BYTES",
    "MAX_BOT_FILES",
    "MAX_NAME_LENGTH",
    "BotFile",
    "bot_sha256",
    "load_bot",
    "make_staging_root",
    "read_bot_files",
    "safe_name",
    "stage_bot",
]

MANIFEST = "bot.toml"
MAX_BOT_BYTES = 50 * 1024 * 1024
MAX_BOT_FILES = 10_000
_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache"})
_SLUG_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_SLUG_LENGTH = 40


class BotFile(NamedTuple):
    """One file of a bot: its path relative to the bot's folder (``/``-separated)."""

    path: str
    data: bytes
    executable: bool


# --------------------------------------------------------------------------- loading


def load_bot(path: str | Path) -> BotSpec:
    """The bot at ``path``: a ``.py`` file, an executable file, or a folder with ``bot.toml``."""
    given = Path(path).expanduser()
    if not given.exists():
        raise UsageError(f"bot not found: {given} does not exist")
    if given.is_dir():
        return _load_folder(given.resolve())
    if not given.is_file():
        raise UsageError(f"bot {given} is neither a file nor a folder")
    folder = given.resolve().parent if given.is_symlink() else given.parent.resolve()
    file = given.resolve().name if given.is_symlink() else given.name
    if given.suffix == ".py":
        command: tuple[str, ...] = ("python3", file)
    elif os.access(given, os.X_OK):
        command = (f"./{file}",)
    else:
        raise UsageError(
            f"bot {given} is neither a .py file nor executable: make it executable "
            f"(chmod +x {given}) or give a folder with a {MANIFEST} that names its command"
        )
    return BotSpec(
        name=_check_name(given.stem, str(given)),
        folder=folder,
        command=command,
        single_file=file,
    )


def _load_folder(folder: Path) -> BotSpec:
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise UsageError(
            f"bot folder {folder} has no {MANIFEST}; add one with at least a command, "
            'e.g. command = "python3 bot.py"'
        )
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{manifest} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{manifest} is not UTF-8 text") from None
    if "command" not in data:
        raise UsageError(f'{manifest} has no command; add e.g. command = "python3 bot.py"')
    command = _parse_command(data["command"], manifest)
    program = command[0]
    if "/" in program and not program.startswith("/") and not (folder / program).is_file():
        raise UsageError(f"{manifest}: command runs {program}, which is not in {folder}")
    name = _optional_str(data, "name", manifest) or folder.name
    return BotSpec(
        name=_check_name(name, str(manifest)),
        folder=folder,
        command=command,
        version=_optional_str(data, "version", manifest),
        image=_optional_str(data, "image", manifest),
    )


def _parse_command(raw: object, manifest: Path) -> tuple[str, ...]:
    if isinstance(raw, str):
        try:
            parts = shlex.split(raw)
        except ValueError as exc:
            raise UsageError(f"{manifest}: command {raw!r} cannot be split: {exc}") from None
    elif isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        parts = list(raw)
    else:
        raise UsageError(f"{manifest}: command must be a string or a list of strings")
    if not parts or not parts[0]:
        raise UsageError(f"{manifest}: command is empty")
    return tuple(parts)


def _optional_str(data: dict[str, object], key: str, manifest: Path) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{manifest}: {key} must be a string, not {type(value).__name__}")
    return value


def _check_name(name: str, where: str) -> str:
    """A bot name is shown to people: see :func:`referee.names.check_name`."""
    return check_name(name, where)


def safe_name(name: str) -> str:
    """A file-system-safe slug of a display name: ``"Quick Fox 2!"`` -> ``"quick-fox-2"``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_UNSAFE.sub("-", ascii_name.lower()).strip("-._")[:_SLUG_LENGTH].strip("-._")
    return slug or "bot"


# --------------------------------------------------------------------------- staging


def read_bot_files(spec: BotSpec, *, max_bytes: int = MAX_BOT_BYTES) -> tuple[BotFile, ...]:
    """Every file of the bot, sorted by path; ``UsageError`` if too big or not copyable.

    A folder is walked without following symlinks: a symlink to a file inside the folder
    is read as that file, any other symlink is refused. ``__pycache__`` and version-control
    folders are left out.
    """
    if spec.single_file:
        file = spec.folder / spec.single_file
        return (_read_file(file, spec.single_file, max_bytes, max_bytes),)
    root = spec.folder.resolve()
    files: list[BotFile] = []
    total = 0
    for path in _walk(root):
        relative = path.relative_to(root).as_posix()
        if len(files) >= MAX_BOT_FILES:
            raise UsageError(f"bot folder {root} has more than {MAX_BOT_FILES} files")
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(root) or not target.is_file():
                raise UsageError(
                    f"bot folder {root}: {relative} is a symlink to {os.readlink(path)}, "
                    "which is not a file inside the folder; copy the file in instead"
                )
            path = target
        bot_file = _read_file(path, relative, max_bytes - total, max_bytes)
        total += len(bot_file.data)
        files.append(bot_file)
    return tuple(sorted(files))


def _walk(root: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for dirname in list(dirnames):
            if (here / dirname).is_symlink():
                dirnames.remove(dirname)
                filenames.append(dirname)
            elif dirname in _SKIPPED_DIRS:
                dirnames.remove(dirname)
        dirnames.sort()
        for filename in sorted(filenames):
            yield here / filename


def _read_file(path: Path, relative: str, budget: int, max_bytes: int) -> BotFile:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"bot file {path} is not a regular file (a device, pipe or socket)")
        if info.st_size > budget:
            raise UsageError(_too_big(path, max_bytes))
        with open(path, "rb") as handle:
            data = handle.read(budget + 1)
    except OSError as exc:
        raise UsageError(f"cannot read bot file {path}: {exc.strerror or exc}") from None
    if len(data) > budget:
        raise UsageError(_too_big(path, max_bytes))
    return BotFile(relative, data, bool(info.st_mode & 0o111))


def _too_big(path: Path, max_bytes: int) -> str:
    return (
        f"bot is larger than {max_bytes / (1024 * 1024):g} MB (reached at {path}); "
        "leave data sets and virtual environments out of the bot's folder"
    )


def bot_sha256(files: Iterable[BotFile]) -> str:
    """A stable fingerprint of a bot: relative paths, executable bits and contents."""
    digest = hashlib.sha256()
    for file in sorted(files):
        path = file.path.encode("utf-8", "surrogateescape")
        mode = b"x" if file.executable else b"-"
        digest.update(b"%d:%s%s%d:" % (len(path), path, mode, len(file.data)))
        digest.update(file.data)
    return digest.hexdigest()


def make_staging_root(parent: Path | None = None) -> Path:
    """A fresh folder for staged bots: others may enter it but not list it (mode 0711).

    Not listable matters when bots run without bubblewrap: each staged folder name carries
    a random part, so a bot cannot find the others' code.
    """
    root = Path(tempfile.mkdtemp(prefix="referee-bots-", dir=parent))
    root.chmod(0o711)
    return root


def stage_bot(spec: BotSpec, root: Path, *, max_bytes: int = MAX_BOT_BYTES) -> BotSpec:
    """Copy the bot into a new folder under ``root``; the returned spec points at the copy.

    Folders get mode 0755 and files 0644 (0755 when executable), owned by the referee, so
    the sandbox user can read but never change them. ``sha256`` is :func:`bot_sha256`.
    """
    files = read_bot_files(spec, max_bytes=max_bytes)
    sha = bot_sha256(files)
    if not root.exists():
        root.mkdir(parents=True, mode=0o711)
        root.chmod(0o711)
    staged = root / f"{safe_name(spec.name)}-{sha[:12]}-{secrets.token_hex(8)}"
    staged.mkdir(mode=0o755)
    staged.chmod(0o755)
    for file in files:
        target = staged / file.path
        for folder in reversed(target.relative_to(staged).parents[:-1]):
            (staged / folder).mkdir(mode=0o755, exist_ok=True)
            (staged / folder).chmod(0o755)
        with open(target, "xb") as handle:
            handle.write(file.data)
        target.chmod(0o755 if file.executable else 0o644)
    return dataclasses.replace(spec, folder=staged, sha256=sha)
