"""Bots as content-addressed bundles: how a staged bot reaches a worker on another machine.

A worker of a cluster shares no disk with the coordinator, so a bot travels as bytes: its
staged files packed into a deterministic tar archive (:func:`pack`: sorted paths, every
time, owner and name field fixed, modes 0644 or 0755 only), named by the archive's SHA-256.
The same files always make the same archive, so an unchanged bot keeps its name from one
run (or one coordinator) to the next, and a changed one gets a new name.

A worker keeps what it has unpacked in a :class:`BundleShelf`, one folder per bundle name
under a root of its own: it asks for a bundle's bytes only when its shelf lacks it,
checks them against the name (and the files against the bot's own fingerprint,
:func:`referee.sandbox.bot_sha256`), and unpacks them once for every later match.

The archive is read back by :func:`unpack` with nothing but regular files and folders
allowed: no links, devices or absolute paths, no ``..``, each size bounded as when the bot
was first read (:data:`~referee.sandbox.staging.MAX_BOT_BYTES`). A worker never trusts a
path inside an archive more than the coordinator trusted the author's folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import shutil
import tarfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from referee.errors import InfrastructureError
from referee.sandbox import BotSpec, bot_sha256, read_bot_files, stage_files
from referee.sandbox.staging import MAX_BOT_BYTES, MAX_BOT_FILES, BotFile

__all__ = ["Bundle", "BundleShelf", "bundle_key", "pack", "unpack"]

_FILE_MODE = 0o644
_EXEC_MODE = 0o755


@dataclass(frozen=True)
class Bundle:
    """A staged bot's files as one archive: ``name`` is the SHA-256 of ``data``."""

    name: str
    data: bytes
    bot_sha256: str

    @property
    def key(self) -> str:
        """The key its bytes go by on a cluster (the same for the same archive anywhere)."""
        return bundle_key(self.name)


def bundle_key(name: str) -> str:
    """The key a bundle's bytes go by on a cluster."""
    return f"referee-bundle-{name}"


def pack(staged: BotSpec) -> Bundle:
    """The deterministic archive of a staged bot's files (read again from its folder)."""
    files = read_bot_files(staged)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for file in sorted(files):
            info = tarfile.TarInfo(file.path)
            info.size = len(file.data)
            info.mode = _EXEC_MODE if file.executable else _FILE_MODE
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(file.data))
    data = buffer.getvalue()
    return Bundle(hashlib.sha256(data).hexdigest(), data, bot_sha256(files))


def unpack(data: bytes, *, max_bytes: int = MAX_BOT_BYTES) -> tuple[BotFile, ...]:
    """The files of an archive made by :func:`pack`; ``InfrastructureError`` for anything
    else (a link, a device, an absolute or climbing path, too many or too large files)."""
    files: list[BotFile] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for info in archive:
                if len(files) >= MAX_BOT_FILES:
                    raise InfrastructureError(f"bundle holds more than {MAX_BOT_FILES} files")
                _check_member(info)
                total += info.size
                if total > max_bytes:
                    raise InfrastructureError(f"bundle holds more than {max_bytes} bytes")
                handle = archive.extractfile(info)
                assert handle is not None  # a regular file, checked above
                executable = bool(info.mode & 0o111)
                files.append(BotFile(info.name, handle.read(), executable))
    except tarfile.TarError as exc:
        raise InfrastructureError(f"bundle is not a readable archive: {exc}") from None
    return tuple(sorted(files))


def _check_member(info: tarfile.TarInfo) -> None:
    if not info.isreg():
        raise InfrastructureError(f"bundle member {info.name!r} is not a regular file")
    parts = info.name.split("/")
    if info.name.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise InfrastructureError(f"bundle member {info.name!r} is not a relative path")


class BundleShelf:
    """A worker's unpacked bundles: one staged folder per bundle name under ``root``.

    :meth:`staged` returns the bot's spec pointing at the worker's own copy, fetching the
    bytes (``fetch(bundle key)``) only when the shelf does not hold the bundle yet; it
    counts each fetch in :attr:`fetched` (by bundle name) so the caller can say what was
    sent. Thread-safe: two tasks that need one missing bundle fetch it once.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fetched: dict[str, int] = {}
        self.fetched_bytes: dict[str, int] = {}
        self._lock = threading.Lock()

    def staged(self, bot: BotSpec, bundle: str, fetch: Callable[[str], bytes]) -> BotSpec:
        """``bot`` (a spec from the coordinator) with its folder on this worker."""
        with self._lock:
            folder = self.root / bundle
            if not folder.is_dir():
                data = fetch(bundle_key(bundle))
                self._shelve(bot, bundle, data)
                self.fetched[bundle] = self.fetched.get(bundle, 0) + 1
                self.fetched_bytes[bundle] = self.fetched_bytes.get(bundle, 0) + len(data)
            place = folder / next(iter(os.listdir(folder)))
        return dataclasses.replace(bot, folder=place)

    def held(self) -> list[str]:
        """The names of the bundles this shelf holds."""
        with contextlib.suppress(FileNotFoundError):
            return sorted(entry.name for entry in os.scandir(self.root) if entry.is_dir())
        return []

    def _shelve(self, bot: BotSpec, bundle: str, data: bytes) -> None:
        if hashlib.sha256(data).hexdigest() != bundle:
            raise InfrastructureError(
                f"bundle of bot {bot.name!r} arrived changed (its SHA-256 is not {bundle})"
            )
        files = unpack(data)
        if bot_sha256(files) != bot.sha256:
            raise InfrastructureError(
                f"bundle of bot {bot.name!r} does not hold the bot the coordinator staged"
            )
        self.root.mkdir(mode=0o711, parents=True, exist_ok=True)
        building = self.root / f".{bundle}.new"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(mode=0o711)
        try:
            stage_files(bot, files, building)
            os.rename(building, self.root / bundle)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
