"""Loading a bot from what the user names, and staging a private copy for the sandbox.

A bot is one of (or a sample bot shipped with the referee, named ``@heuristic``)::

    bot.py               a Python file      -> python3 bot.py   (the system's python3)
    mybot                an executable file -> ./mybot
    folder/bot.toml      a folder with a manifest:
                             name = "Quick Fox"          (optional, default: the folder name)
                             command = "node main.js"    (a string split like a shell, or a list)
                             build = ["make"]            (optional, run once per version:
                                                          referee.sandbox.build)
                             version = "1.2"             (optional)
                             image = "node:20-slim"      (optional, for the docker backend)

:func:`load_bot` checks all that and says plainly what is wrong (``UsageError``); a
``command`` whose program is an absolute path or leaves the folder by ``..`` is refused on
its text alone, and a program path is then looked for among the files read, never in the
author's tree. :func:`stage_bot` reads the bot's files once (:func:`read_bot_files`) and
writes exactly those bytes (:func:`stage_files`) into a fresh folder that the sandbox user
may read but not write, fingerprinted (:func:`bot_sha256`), so a bot that changes on disk
during a tournament cannot change what runs, and a bot never runs from the user's own folder.
The bytes themselves are what a remote worker gets as a bundle, and what ``submit`` enters:
:func:`read_bot` reads them once and builds the spec from the ``bot.toml`` among them.

The referee usually runs as root and the bot's folder belongs to its author, who may change
it while it is being copied. So reading never follows a symlink and never trusts a path twice:

- every symlink in a bot is refused (a single-file bot named through a symlink included),
  as are pipes, sockets and devices;
- the bot's folder is opened one component at a time with ``O_NOFOLLOW``, every file and
  folder inside it relative to its parent's descriptor with ``O_NOFOLLOW``, and a file is
  read from the descriptor that ``fstat`` showed to be a regular file. An author who swaps
  a file or folder for a symlink mid-copy gets a refusal, never the target's bytes (the old
  path-based copy, raced this way, copied a root-only file: docs/performance.md has the
  counts);
- the walk is a loop over a stack of open folders, never a recursion, bounded in depth
  (:data:`MAX_BOT_DEPTH`), entries (:data:`MAX_BOT_FILES`) and bytes (:data:`MAX_BOT_BYTES`);
- any ``OSError`` while reading becomes a one-line ``UsageError`` naming the path.

Staging roots (:func:`make_staging_root`) carry a lease: their creator holds an ``flock`` on
``.lease`` inside for as long as it lives. A referee killed with SIGKILL cannot clean up, so
the next :func:`make_staging_root` under the same parent removes every root whose lease is
free. :func:`remove_staging_root` is the normal way out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import os
import posixpath
import secrets
import shlex
import shutil
import stat
import tempfile
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from referee.errors import InfrastructureError, UsageError
from referee.folders import private_folder
from referee.names import MAX_NAME_LENGTH, check_name
from referee.resources import sample_by_name
from referee.sandbox.base import BotSpec
from referee.text import printable, safe_name

__all__ = [
    "MANIFEST",
    "MAX_BOT_BYTES",
    "MAX_BOT_DEPTH",
    "MAX_BOT_FILES",
    "MAX_NAME_LENGTH",
    "BotFile",
    "bot_sha256",
    "check_program_in",
    "give_tree",
    "load_bot",
    "make_staging_root",
    "read_bot",
    "read_bot_files",
    "remove_staging_root",
    "spec_from_files",
    "stage_bot",
    "stage_files",
    "write_bot_folder",
]

MANIFEST = "bot.toml"
MANIFEST_KEYS = ("name", "command", "build", "version", "image", "author")
"""Every key ``bot.toml`` may hold; any other is refused with this list."""
MAX_BOT_BYTES = 50 * 1024 * 1024
MAX_BOT_FILES = 10_000
MAX_BOT_DEPTH = 32
_MAX_MANIFEST_BYTES = 64 * 1024
_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache"})

_O_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Folders on the way to a bot are only passed through: O_PATH needs no read permission.
_O_PASS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_STAGING_PREFIX = "referee-bots-"
_LEASE = ".lease"


class BotFile(NamedTuple):
    """One file of a bot: its path relative to the bot's folder (``/``-separated)."""

    path: str
    data: bytes
    executable: bool


# --------------------------------------------------------------------------- loading


def load_bot(path: str | Path, *, relative_to: Path | None = None) -> BotSpec:
    """The bot at ``path``: a ``.py`` file, an executable file, or a folder with ``bot.toml``;
    or a sample bot shipped with the referee, named ``@heuristic`` (``@NAME``, see
    :func:`referee.resources.sample_by_name`), whatever the current folder.

    A relative ``path`` is taken from ``relative_to`` when given (a tournament file's
    folder), a sample's name never. A symlink is refused, the real file or folder must be
    named: the referee copies what it is given as root, so it never goes where a link points.
    """
    sample = sample_by_name(str(path)) if isinstance(path, str) else None
    if sample is not None:
        return _load_folder(sample.resolve())
    given = Path(path).expanduser() if relative_to is None else relative_to / path
    if given.is_symlink():
        kind = "folder" if given.is_dir() else "file"
        raise UsageError(
            f"bot {_shown(given)} is a symlink (to {_shown(_link_target(given))}); "
            f"name the real {kind} instead"
        )
    if not given.exists():
        raise UsageError(f"bot not found: {_shown(given)} does not exist")
    if given.is_dir():
        return _load_folder(given.resolve())
    if not given.is_file():
        raise UsageError(f"bot {_shown(given)} is neither a file nor a folder")
    file = given.name
    if given.suffix == ".py":
        # "./" so a file named like an option (``--help.py``) is still the script to run.
        command: tuple[str, ...] = ("python3", f"./{file}")
    elif os.access(given, os.X_OK):
        command = (f"./{file}",)
    else:
        raise UsageError(
            f"bot {_shown(given)} is neither a .py file nor executable: make it executable "
            f"(chmod +x {_shown(given)}) or give a folder with a {MANIFEST} that names its "
            "command"
        )
    return BotSpec(
        name=_check_name(given.stem, _shown(given)),
        folder=given.parent.resolve(),
        command=command,
        single_file=file,
    )


def _load_folder(folder: Path) -> BotSpec:
    return _spec_of(folder, _read_manifest(folder))


def _spec_of(folder: Path, text: str) -> BotSpec:
    """The spec a folder bot's ``bot.toml`` (``text``) describes."""
    manifest = folder / MANIFEST
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{manifest} is not valid TOML: {exc}") from None
    _refuse_unknown_keys(data, manifest)
    if "command" not in data:
        raise UsageError(f'{manifest} has no command; add e.g. command = "python3 bot.py"')
    command = _parse_command(data["command"], manifest)
    _check_program(command[0], manifest)
    build: tuple[str, ...] = ()
    if "build" in data:
        build = _parse_command(data["build"], manifest, "build")
        _check_program(build[0], manifest)
    name = _optional_str(data, "name", manifest) or folder.name
    return BotSpec(
        name=_check_name(name, str(manifest)),
        folder=folder,
        command=command,
        version=_optional_str(data, "version", manifest),
        image=_optional_str(data, "image", manifest),
        author=_author(data, manifest),
        build=build,
    )


def _refuse_unknown_keys(data: dict[str, object], manifest: Path) -> None:
    """A misspelt key (``cmd = ...``) is named, with the close match and every allowed key.

    Silently ignoring it would turn a typo into a misleading "has no command" later.
    """
    import difflib

    unknown = sorted(key for key in data if key not in MANIFEST_KEYS)
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(key, MANIFEST_KEYS, n=1, cutoff=0.5)
    if key in ("cmd", "run", "exec", "executable", "program", "entrypoint"):
        close = ["command"]
    hint = f" (did you mean {close[0]}?)" if close else ""
    others = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
    raise UsageError(
        f"{_shown(manifest)}: unknown key '{printable(key)}'{others}{hint}; "
        f"allowed keys: {', '.join(MANIFEST_KEYS)}"
    )


def _read_manifest(folder: Path) -> str:
    """``bot.toml`` read the way every bot file is: no symlink, a regular file, capped."""
    manifest = folder / MANIFEST
    folder_fd = _open_folder(folder, listable=False)
    try:
        try:
            os.stat(MANIFEST, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise UsageError(
                f"bot folder {_shown(folder)} has no {MANIFEST}; add one with at least a "
                'command, e.g. command = "python3 bot.py"'
            ) from None
        except OSError as exc:
            raise _refusal(exc, manifest) from None
        file = _read_at(folder_fd, MANIFEST, manifest, _MAX_MANIFEST_BYTES)
    finally:
        os.close(folder_fd)
    if file is None:
        raise UsageError(f"{_shown(manifest)} is larger than {_MAX_MANIFEST_BYTES // 1024} KiB")
    return _manifest_text(file.data, manifest)


def _manifest_text(data: bytes, manifest: Path) -> str:
    if len(data) > _MAX_MANIFEST_BYTES:
        raise UsageError(f"{_shown(manifest)} is larger than {_MAX_MANIFEST_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{_shown(manifest)} is not UTF-8 text") from None


def _parse_command(raw: object, manifest: Path, key: str = "command") -> tuple[str, ...]:
    if isinstance(raw, str):
        try:
            parts = shlex.split(raw)
        except ValueError as exc:
            raise UsageError(f"{manifest}: {key} {raw!r} cannot be split: {exc}") from None
    elif isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        parts = list(raw)
    else:
        raise UsageError(f"{manifest}: {key} must be a string or a list of strings")
    if not parts or not parts[0]:
        raise UsageError(f"{manifest}: {key} is empty")
    return tuple(parts)


def _check_program(program: str, manifest: Path) -> None:
    """Refuse a program outside the bot's folder: an absolute path, or one leaving it by ``..``.

    Decided on the text alone: the author's tree is never looked at, so a refusal says
    nothing about what exists there (resolved from the bot's folder as root, ``..`` would
    tell an author whether any path on the machine exists). Whether the program is in the
    bot's folder is checked against the files read (:func:`read_bot_files`). A name
    without ``/`` (``python3``, ``node``) is looked up on the sandbox's ``PATH``.
    """
    shown = printable(program)
    if program.startswith("/"):
        raise UsageError(
            f"{_shown(manifest)}: command runs {shown}, an absolute path; a bot runs a "
            "program of its own folder (./run.sh) or an interpreter on the sandbox's PATH "
            "(python3, node)"
        )
    if "/" in program and posixpath.normpath(program).split("/")[0] == "..":
        raise UsageError(
            f"{_shown(manifest)}: command runs {shown}, which leaves the bot's folder; "
            "name a program inside it (./run.sh)"
        )


def check_program_in(spec: BotSpec, files: tuple[BotFile, ...]) -> None:
    """A program path of a folder bot must be one of its files, and executable.

    A bot with a build step is checked after its build (the build may make the program);
    its build command's own program is checked now.
    """
    if spec.build:
        check_program_in(dataclasses.replace(spec, command=spec.build, build=()), files)
        return
    program = spec.command[0]
    if spec.single_file or "/" not in program:
        return
    wanted = posixpath.normpath(program)
    found = next((file for file in files if file.path == wanted), None)
    manifest = _shown(spec.folder / MANIFEST)
    if found is None:
        raise UsageError(
            f"{manifest}: command runs {printable(program)}, which is not in {_shown(spec.folder)}"
        )
    if not found.executable:
        raise UsageError(
            f"{manifest}: command runs {printable(program)}, which is not executable; "
            f"make it so (chmod +x {printable(wanted)}) or name its interpreter first"
        )


def _optional_str(data: dict[str, object], key: str, manifest: Path) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{manifest}: {key} must be a string, not {type(value).__name__}")
    return value


def _author(data: dict[str, object], manifest: Path) -> str | None:
    """``author``: who wrote the bot, a display name checked like a bot's (collusion rules)."""
    author = _optional_str(data, "author", manifest)
    return None if author is None else check_name(author, f"{manifest}: author")


def _check_name(name: str, where: str) -> str:
    """A bot name is shown to people: see :func:`referee.names.check_name`."""
    return check_name(name, where)


# --------------------------------------------------------------------------- staging


def read_bot(path: str | Path) -> tuple[BotSpec, tuple[BotFile, ...]]:
    """The bot at ``path`` and its files, read once: what runs is what was read.

    :func:`load_bot` finds the bot (and refuses what it would refuse), then
    :func:`read_bot_files` reads every file; a folder bot's spec (command, image, version,
    name, author) is then built again from the ``bot.toml`` among the bytes read, so an
    author who swaps ``bot.toml`` between the two reads changes neither what is entered nor
    what it runs. A ``bot.toml`` gone by the second read is refused.
    """
    first = load_bot(path)
    files = read_bot_files(first)
    return spec_from_files(first, files), files


def spec_from_files(spec: BotSpec, files: tuple[BotFile, ...]) -> BotSpec:
    """The spec of a bot as its ``files`` describe it: a folder bot's from the ``bot.toml``
    among them (checked again, the program among the files), a single file's as it is."""
    if spec.single_file:
        return spec
    manifest = spec.folder / MANIFEST
    read = next((file for file in files if file.path == MANIFEST), None)
    if read is None:
        raise UsageError(f"{_shown(manifest)} disappeared while the bot was read; run again")
    described = _spec_of(spec.folder, _manifest_text(read.data, manifest))
    check_program_in(described, files)
    return described


def read_bot_files(
    spec: BotSpec, *, max_bytes: int = MAX_BOT_BYTES, max_files: int = MAX_BOT_FILES
) -> tuple[BotFile, ...]:
    """Every file of the bot, sorted by path; ``UsageError`` when it cannot be copied safely.

    Refused, each with one line naming the path: a symlink anywhere, a pipe, socket or
    device, folders nested deeper than :data:`MAX_BOT_DEPTH`, more than ``max_files``
    files and folders, more than ``max_bytes`` in all, and anything
    that changes under the walk in a way that would need a symlink followed.
    ``__pycache__`` and version-control folders are left out. A program path in the
    bot's ``command`` must name one of the files read (executable): it is resolved in
    what is read, never in the author's folder.
    """
    if spec.single_file:
        return (_read_single_file(spec.folder, spec.single_file, max_bytes),)
    files = tuple(sorted(_read_folder(spec.folder, max_bytes, max_files)))
    check_program_in(spec, files)
    return files


def _read_single_file(folder: Path, name: str, max_bytes: int) -> BotFile:
    path = folder / name
    if "/" in name or name in ("", ".", ".."):
        raise UsageError(f"bot file {_shown(path)}: {name!r} is not a file name")
    folder_fd = _open_folder(folder, listable=False)
    try:
        file = _read_at(folder_fd, name, path, max_bytes)
    finally:
        os.close(folder_fd)
    if file is None:
        raise UsageError(_too_big(path, max_bytes))
    return file


class _Folder(NamedTuple):
    """A folder of the walk: its open descriptor, its path in the bot, what is left to visit."""

    fd: int
    prefix: str
    entries: list[tuple[str, bool]]


def _read_folder(root: Path, max_bytes: int, max_files: int) -> list[BotFile]:
    """The walk: a stack of open folders (at most ``MAX_BOT_DEPTH + 1`` descriptors)."""
    files: list[BotFile] = []
    budget = max_bytes
    counted = 0
    stack: list[_Folder] = []
    try:
        top = _open_folder(root, listable=True)
        stack.append(_Folder(top, "", []))
        counted += _list_folder(top, root, "", stack[-1].entries, counted, max_files)
        while stack:
            fd, prefix, entries = stack[-1]
            if not entries:
                os.close(stack.pop().fd)
                continue
            name, is_dir = entries.pop()
            relative = prefix + name
            path = root / relative
            if is_dir:
                if len(stack) > MAX_BOT_DEPTH:
                    raise UsageError(
                        f"bot folder {_shown(root)} nests folders more than {MAX_BOT_DEPTH} "
                        f"deep (at {_shown(relative)}); flatten it"
                    )
                child = _open_at(fd, name, _O_DIR, path)
                stack.append(_Folder(child, relative + "/", []))
                entries = stack[-1].entries
                counted += _list_folder(child, root, relative + "/", entries, counted, max_files)
                continue
            file = _read_at(fd, name, path, budget, relative)
            if file is None:
                raise UsageError(_too_big(path, max_bytes))
            budget -= len(file.data)
            files.append(file)
    finally:
        for folder in stack:
            os.close(folder.fd)
    return files


def _list_folder(
    fd: int,
    root: Path,
    prefix: str,
    entries: list[tuple[str, bool]],
    counted: int,
    max_files: int,
) -> int:
    """Fill ``entries`` with ``(name, is_folder)`` in reverse order; return how many (more
    than ``max_files`` with the ``counted`` ones is refused).

    The kinds read here are only a first sorting: what is opened next is checked again.
    """
    found: list[tuple[str, bool]] = []
    try:
        with os.scandir(fd) as listing:
            for entry in listing:
                path = root / (prefix + entry.name)
                if entry.is_symlink():
                    raise _symlink_refusal(root, prefix + entry.name, fd, entry.name)
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in _SKIPPED_DIRS:
                        continue
                    found.append((entry.name, True))
                elif entry.is_file(follow_symlinks=False):
                    found.append((entry.name, False))
                else:
                    raise UsageError(_not_regular(path, entry.stat(follow_symlinks=False)))
                if counted + len(found) > max_files:
                    raise UsageError(
                        f"bot folder {_shown(root)} has more than {max_files} files and "
                        "folders; leave data sets and virtual environments out of it"
                    )
    except OSError as exc:
        raise _refusal(exc, root / prefix) from None
    found.sort(reverse=True)
    entries.extend(found)
    return len(found)


def _open_folder(folder: Path, *, listable: bool) -> int:
    """A descriptor of ``folder``, opened from ``/`` one component at a time, no symlinks.

    ``load_bot`` resolved the path once; a component that has become a symlink since (an
    author swapping a folder) is refused here instead of being followed.
    """
    parts = folder.absolute().parts
    last = len(parts) - 1
    try:
        fd = os.open(parts[0], _O_DIR if listable and last == 0 else _O_PASS)
    except OSError as exc:
        raise _refusal(exc, Path(parts[0])) from None
    try:
        for index in range(1, len(parts)):
            flags = _O_DIR if listable and index == last else _O_PASS
            child = _open_at(fd, parts[index], flags, Path(*parts[: index + 1]))
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_at(dir_fd: int, name: str, flags: int, path: Path) -> int:
    """``name`` in the folder ``dir_fd``, not following a symlink; ``UsageError`` if not."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(exc, path, dir_fd, name) from None


def _read_at(
    dir_fd: int, name: str, path: Path, budget: int, relative: str | None = None
) -> BotFile | None:
    """The regular file ``name`` in ``dir_fd``, read from the descriptor that was checked.

    ``None`` when it holds more than ``budget`` bytes.
    """
    fd = _open_at(dir_fd, name, _O_FILE, path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(_not_regular(path, info))
        if info.st_size > budget:
            return None
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(budget + 1)
    except OSError as exc:
        raise _refusal(exc, path) from None
    finally:
        os.close(fd)
    if len(data) > budget:
        return None
    return BotFile(relative if relative is not None else name, data, bool(info.st_mode & 0o111))


def _refusal(exc: OSError, path: Path, dir_fd: int | None = None, name: str = "") -> UsageError:
    """An ``OSError`` while reading a bot, told as one line naming the path.

    ``O_NOFOLLOW`` meeting a symlink fails with ``ELOOP`` (``ENOTDIR`` with ``O_DIRECTORY``).
    """
    link = exc.errno == errno.ELOOP
    if dir_fd is not None and exc.errno == errno.ENOTDIR:
        with contextlib.suppress(OSError):
            link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    if link:
        return UsageError(
            f"bot path {_shown(path)} is a symlink; the referee follows no symlinks "
            "(name the real file or folder, or copy it in)"
        )
    if exc.errno == errno.ENOENT:
        return UsageError(f"bot path {_shown(path)} does not exist (did it change meanwhile?)")
    if exc.errno == errno.ENOTDIR:
        return UsageError(f"bot path {_shown(path)} is not a folder (did it change meanwhile?)")
    return UsageError(f"cannot read bot path {_shown(path)}: {exc.strerror or exc}")


def _symlink_refusal(root: Path, relative: str, dir_fd: int, name: str) -> UsageError:
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        target = "?"
    return UsageError(
        f"bot folder {_shown(root)}: {_shown(relative)} is a symlink (to {_shown(target)}); "
        "the referee copies no symlinks: put the file itself in the folder"
    )


_KINDS = (
    (stat.S_ISDIR, "a folder (did it change meanwhile?)"),
    (stat.S_ISFIFO, "a pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: Path, info: os.stat_result) -> str:
    kind = next((kind for test, kind in _KINDS if test(info.st_mode)), "a device")
    return f"bot file {_shown(path)} is not a regular file: it is {kind}"


def _too_big(path: Path, max_bytes: int) -> str:
    return (
        f"bot is larger than {max_bytes / (1024 * 1024):g} MB (reached at {_shown(path)}); "
        "leave data sets and virtual environments out of the bot's folder"
    )


def _shown(path: Path | str) -> str:
    """A path as one printable line: file names may hold newlines and escape sequences."""
    return printable(str(path))


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def bot_sha256(files: Iterable[BotFile]) -> str:
    """A stable fingerprint of a bot: relative paths, executable bits and contents."""
    digest = hashlib.sha256()
    for file in sorted(files):
        path = file.path.encode("utf-8", "surrogateescape")
        mode = b"x" if file.executable else b"-"
        digest.update(b"%d:%s%s%d:" % (len(path), path, mode, len(file.data)))
        digest.update(file.data)
    return digest.hexdigest()


def stage_bot(spec: BotSpec, root: Path, *, max_bytes: int = MAX_BOT_BYTES) -> BotSpec:
    """Copy the bot into a new folder under ``root``; the returned spec points at the copy.

    :func:`read_bot_files` then :func:`stage_files`: see there. A bot with a build step is
    built first (:class:`referee.sandbox.build.Builder`), and its built bundle staged.
    """
    if spec.build:
        raise ValueError(f"bot {spec.name!r} has a build step: stage its built bundle")
    return stage_files(spec, read_bot_files(spec, max_bytes=max_bytes), root)


def stage_files(spec: BotSpec, files: tuple[BotFile, ...], root: Path) -> BotSpec:
    """Write ``files`` (read from ``spec``) into a new folder under ``root``; the spec of it.

    Folders get mode 0755 and files 0644 (0755 when executable), owned by the referee, so
    the sandbox user can read but never change them. ``sha256`` is :func:`bot_sha256` of
    exactly ``files``: whoever holds them (``submit`` enters the same tuple it staged)
    holds what runs. ``single_file`` keeps the file's own name (the sandboxes mount it under
    that name). ``root`` is made if need be and checked either way (the referee's own,
    0711: others may enter it, not list it; a planted symlink or folder is refused, see
    :func:`referee.folders.private_folder`).
    """
    sha = bot_sha256(files)
    staged = root / f"{safe_name(spec.name)}-{sha[:12]}-{secrets.token_hex(8)}"
    private_folder(root, mode=0o711, parents=True)
    try:
        write_bot_folder(files, staged)
    except BaseException as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if isinstance(exc, OSError):
            raise InfrastructureError(
                f"cannot stage bot {spec.name!r} in {staged}: {exc.strerror or exc}"
            ) from exc
        raise
    return dataclasses.replace(spec, folder=staged, sha256=sha)


def write_bot_folder(files: Iterable[BotFile], folder: Path) -> None:
    """Write ``files`` into ``folder``, which must not exist yet (``FileExistsError``).

    Everything is made relative to an open folder's descriptor, created exclusively, with
    ``O_NOFOLLOW``, and its mode set with ``fchmod``: nothing planted in the way (a
    symlink where a file goes) is followed. Folders get 0755, files 0644 or 0755.
    """
    parent_fd = os.open(folder.parent, _O_DIR & ~os.O_NOFOLLOW)
    try:
        os.mkdir(folder.name, 0o700, dir_fd=parent_fd)
        top = os.open(folder.name, _O_DIR, dir_fd=parent_fd)
    finally:
        os.close(parent_fd)
    try:
        os.fchmod(top, 0o755)
        for file in files:
            *folders, name = file.path.split("/")
            if any(part in ("", ".", "..") for part in [*folders, name]):
                raise UsageError(f"bot file path {printable(file.path)!r} is not a relative path")
            _write_file(top, folders, name, file)
    finally:
        os.close(top)


def _write_file(top: int, folders: list[str], name: str, file: BotFile) -> None:
    fd = os.dup(top)
    try:
        for part in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            child = os.open(part, _O_DIR, dir_fd=fd)
            os.close(fd)
            fd = child
            os.fchmod(fd, 0o755)
        out = os.open(
            name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=fd,
        )
        try:
            with open(out, "wb", closefd=False) as handle:
                handle.write(file.data)
            os.fchmod(out, 0o755 if file.executable else 0o644)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def give_tree(folder: Path, uid: int, gid: int) -> None:
    """Make ``folder`` and everything in it belong to ``uid``:``gid`` (a build's writable
    folder, which the referee wrote itself a moment before: nothing in it is a link, and
    none is followed). ``InfrastructureError`` when it cannot."""
    try:
        os.chown(folder, uid, gid, follow_symlinks=False)
        for root, dirs, names in os.walk(folder, followlinks=False):
            for name in (*dirs, *names):
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
    except OSError as exc:
        raise InfrastructureError(f"cannot give {folder} to uid {uid}: {exc}") from exc


# --------------------------------------------------------------------------- staging roots


def make_staging_root(parent: Path | None = None) -> Path:
    """A fresh folder for staged bots: others may enter it but not list it (mode 0711).

    Not listable matters when bots run without bubblewrap: each staged folder name carries
    a random part, so a bot cannot find the others' code. This process holds the root's
    lease until :func:`remove_staging_root` (or its death); roots under ``parent`` (default:
    the temp folder) whose lease is free were left by a killed referee and are removed first.

    The lease is the root's own: an ``flock`` on its ``.lease`` file, which names the
    process and the descriptor holding it, so whoever removes the root lets go of the lease
    with no table of leases kept in this process (:func:`remove_staging_root`).
    """
    base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    _remove_abandoned_roots(base)
    try:
        root = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=base))
    except OSError as exc:
        raise InfrastructureError(f"cannot make a staging folder in {base}: {exc}") from exc
    try:
        _take_lease(root)
        root_fd = os.open(root, _O_DIR)  # mkdtemp's own folder, through its descriptor
        try:
            os.fchmod(root_fd, 0o711)
        finally:
            os.close(root_fd)
    except OSError as exc:
        remove_staging_root(root)
        raise InfrastructureError(f"cannot lease staging folder {root}: {exc}") from exc
    return root


def remove_staging_root(root: Path) -> None:
    """Delete a staging root and all staged in it, then let go of its lease (if ours)."""
    lease = _our_lease(Path(root))
    shutil.rmtree(root, ignore_errors=True)
    if lease is not None:
        os.close(lease)


def _take_lease(root: Path) -> int:
    """Lock ``root/.lease``, created under another name first: whoever sees it sees it held.

    The file says ``<pid> <descriptor>``: which process holds the lock, through which of
    its descriptors (what :func:`_our_lease` finds it by).
    """
    root_fd = os.open(root, _O_DIR)
    try:
        fd = os.open(
            _LEASE + ".new",
            os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=root_fd,
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, f"{os.getpid()} {fd}\n".encode())
            os.rename(_LEASE + ".new", _LEASE, src_dir_fd=root_fd, dst_dir_fd=root_fd)
        except BaseException:
            os.close(fd)
            raise
    finally:
        os.close(root_fd)
    return fd


def _our_lease(root: Path) -> int | None:
    """The descriptor by which this process holds ``root``'s lease, or ``None``.

    The one ``.lease`` names is ours when it is open here on that very file (same device
    and inode) and holds its lock: ``flock`` through it succeeds (a holder may lock again),
    where through any other open of the file (another referee's, a sweep's look) it would
    block. Anything else (no root, no lease, another process's) is not ours to close.
    """
    try:
        root_fd = os.open(root, _O_DIR)
    except OSError:
        return None
    try:
        reader = os.open(_LEASE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    except OSError:
        return None
    finally:
        os.close(root_fd)
    try:
        lease = os.fstat(reader)
        _pid, _, fd_text = os.read(reader, 64).decode("ascii", "replace").partition(" ")
        fd = int(fd_text)
        if not os.path.samestat(lease, os.fstat(fd)) or fd == reader:
            return None
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (OSError, ValueError):
        return None
    finally:
        os.close(reader)
    return fd


def _remove_abandoned_roots(base: Path) -> None:
    """Remove the staging roots in ``base`` that are ours (uid) and whose lease is free.

    Best effort: whatever cannot be checked is left alone. A root without a lease file is
    kept too, since it may be in the making or belong to an older referee still running.
    """
    try:
        with os.scandir(base) as listing:
            candidates = [entry for entry in listing if entry.name.startswith(_STAGING_PREFIX)]
    except OSError:
        return
    uid = os.geteuid()
    for entry in candidates:
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
                _remove_if_abandoned(Path(entry.path), info)
        except OSError:
            continue


def _remove_if_abandoned(root: Path, info: os.stat_result) -> None:
    root_fd = os.open(root, _O_DIR)
    try:
        if not os.path.samestat(info, os.fstat(root_fd)):
            return
        lease = os.open(_LEASE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    except FileNotFoundError:
        return
    finally:
        os.close(root_fd)
    try:
        try:
            fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        # rmtree works through descriptors and refuses a symlink in place of the root.
        shutil.rmtree(root, ignore_errors=True)
    finally:
        os.close(lease)
