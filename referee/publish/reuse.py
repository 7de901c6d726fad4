"""What a site published before lends the next publication: per-match files reused by hash.

A tournament's site is written whole each time, into a fresh folder
(:mod:`referee.publish.folder`). Most of its work grows with the matches: for each one a
page (``match.html``), its log as a script (:func:`~referee.publish.replaydata.log_script`)
and the bots' stderr as a script. Published again while the tournament plays, nearly all of
those files come out as they were. So each site records, in ``publish-cache.json`` at its
top (:data:`CACHE`; nothing of ``verification/``: ``referee verify`` only checks its SHA-256
against the site's file list),
what went into each of those files and what came out; publishing again into the same
``--out`` copies a file from the old site instead of making it when all of these hold:

* **the same referee**: the cache's *fingerprint* (:func:`fingerprint`) is this one's: the
  referee's version, those of Jinja2, MarkupSafe and pydantic, and the SHA-256 of every
  template and of the publishing code. Any change renders every file again;
* **the same inputs**: the file's *inputs* (:func:`inputs_key`, the SHA-256 of the
  canonical JSON of everything it is made from) are the ones recorded. For a page that is
  the template's whole context, as the page is rendered from it (the match as shown, the
  links to its rotations and to the same cards, the slugs of the bots it links, the
  tournament's name, whether it is still played); for a script, the SHA-256 of the file in
  the results it is made from. A match held back that is shown now has other inputs;
* **the same bytes**: the old file is the one recorded: opened without following a link
  (``O_NOFOLLOW``, relative to its folder, itself opened so), a regular file with no other
  name (one link: a hard link to a file elsewhere is never copied into the site, even if
  its SHA-256 was recorded, since a hash can be known without the bytes), of the recorded
  size and SHA-256, and at most :data:`MAX_REUSED_BYTES`. The bytes copied are the bytes
  checked, read once. A file changed, truncated, replaced by a link or a FIFO is made again.

Anything else is made again, as a full publication would. The copy is a new file in the new
folder like every other (never a link to the old one), and the new site still takes the old
one's place only when complete. A cache that cannot be read (not JSON, another shape or
format, over :data:`MAX_CACHE_BYTES`, a name the site would not make there, a link) is
ignored whole: the publication is a full one, and says why nowhere but in its count of
files reused.

What this trusts: whoever can write the old site can write a file *and* its record, and
such a forgery is carried into the next publication, as the old site serves it today (a
full publication, ``referee publish --no-reuse``, makes every file again). It never lets
anything out of the results or of the disk that the old site did not already hold.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from referee.publish.folder import SITE_MARKER

__all__ = [
    "CACHE",
    "MAX_CACHE_BYTES",
    "MAX_REUSED_BYTES",
    "CachedFile",
    "Reuse",
    "fingerprint",
    "inputs_key",
]

CACHE = "publish-cache"
"""The cache's stem: ``publish-cache.json`` at the top of the site."""
FORMAT = 1
MAX_CACHE_BYTES = 64 * 1024 * 1024
"""A larger cache is ignored (about 200 bytes a file: some 100,000 matches)."""
MAX_REUSED_BYTES = 64 * 1024 * 1024
"""A larger file is made again, never read from the old site (whose cache may claim any
size: it is read whole, to check it)."""
_FOLDERS = ("matches",)
"""The folders whose files may be reused."""
_HERE = Path(__file__).resolve().parent
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
_Name = Annotated[
    str,
    StringConstraints(pattern=r"^matches/[a-z0-9][a-z0-9_-]{0,199}(\.html|\.js|\.stderr\.js)$"),
]


@dataclass(frozen=True)
class CachedFile:
    """A per-match file as the cache records it: what it was made from and what it holds.
    ``fault_lines`` (a log's script only): its :attr:`LogScript.fault_lines
    <referee.publish.replaydata.LogScript.fault_lines>`, which its page needs."""

    inputs: str
    sha256: str
    size: int
    fault_lines: Mapping[int, int] | None = None


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    inputs: _Hex
    sha256: _Hex
    size: int = Field(ge=0)
    fault_lines: list[tuple[int, int]] | None = Field(default=None, max_length=64)


class _Cache(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    format: Literal[1]
    fingerprint: _Hex
    files: dict[_Name, _Entry]


def inputs_key(*parts: object) -> str:
    """The SHA-256 of ``parts`` as canonical JSON: what a file is made from. Dataclasses go
    in as their class's name and fields, mappings need string keys; anything else JSON
    cannot hold is a ``TypeError`` (a bug: an input the key would miss)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=_fields)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _fields(value: object) -> dict[str, object]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        named: dict[str, object] = {"": type(value).__name__}
        if hasattr(value, "__dict__"):  # a plain dataclass: its fields, read fast
            named.update(vars(value))
        else:
            named.update((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        return named
    raise TypeError(f"{type(value).__name__} cannot be part of a file's inputs")


def fingerprint() -> str:
    """What every cached file also depends on: this referee's version, the versions of
    Jinja2, MarkupSafe and pydantic, and the bytes of the templates and of the code that
    turns inputs into files (``referee/publish/*.py``, ``referee/stderrlog.py``). A referee
    that cannot read its own files gets a fingerprint of chance: it reuses nothing."""
    try:
        return _fingerprint()
    except OSError:
        return secrets.token_hex(32)


def _fingerprint() -> str:
    from importlib.metadata import PackageNotFoundError, version

    import referee
    from referee import stderrlog

    digest = hashlib.sha256(f"format {FORMAT}\nreferee {referee.__version__}\n".encode())
    for package in ("jinja2", "markupsafe", "pydantic"):
        try:
            digest.update(f"{package} {version(package)}\n".encode())
        except PackageNotFoundError:  # imported from elsewhere: its code stands in for it
            digest.update(f"{package} unknown\n".encode())
    sources = sorted(
        [*_HERE.glob("*.py"), *(p for p in (_HERE / "templates").rglob("*") if p.is_file())]
    )
    named = [(p.relative_to(_HERE).as_posix(), p) for p in sources]
    for name, path in [*named, ("../stderrlog.py", Path(stderrlog.__file__))]:
        data = path.read_bytes()
        digest.update(f"{name} {len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


class Reuse:
    """The per-match files one publication makes or reuses, and the cache it leaves.

    :meth:`open` reads the cache of the site published before; :meth:`lend` gives an old
    file's bytes when they are provably the ones this publication would write (see the
    module); :meth:`record` notes each file written, and :meth:`cache` is the new cache.
    Use it as a context manager: it holds descriptors of the old site's folders.
    """

    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        self.made: dict[str, CachedFile] = {}
        """Every per-match file this publication wrote, by its path in the site."""
        self._before: dict[str, CachedFile] = {}
        self._fds: dict[str, int] = {}

    def __enter__(self) -> Reuse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, site: Path) -> None:
        """Read the cache of the site published in ``site`` (a folder :func:`check_target
        <referee.publish.folder.check_target>` allows), if it has one this referee wrote;
        otherwise there is nothing to reuse. Never raises for what the folder holds."""
        try:
            self._fds[""] = os.open(site, _DIR_FLAGS)
            marker = os.stat(SITE_MARKER, dir_fd=self._fds[""], follow_symlinks=False)
            if not stat.S_ISREG(marker.st_mode):
                return
            raw = _read(self._fds[""], f"{CACHE}.json", None, MAX_CACHE_BYTES)
            if raw is None:
                return
            cache = _Cache.model_validate_json(raw)
        except (OSError, ValidationError):
            return
        if cache.fingerprint != self.fingerprint:
            return
        self._before = {
            name: CachedFile(
                e.inputs,
                e.sha256,
                e.size,
                None if e.fault_lines is None else dict(e.fault_lines),
            )
            for name, e in cache.files.items()
        }

    def lend(self, name: str, inputs: str) -> tuple[bytes, CachedFile] | None:
        """The bytes of the old site's file ``name`` (``matches/<stem><suffix>``) and its
        record, if it was made from ``inputs`` and holds what the cache says; else ``None``."""
        entry = self._before.get(name)
        if entry is None or entry.inputs != inputs or entry.size > MAX_REUSED_BYTES:
            return None
        folder, _, base = name.rpartition("/")
        fd = self._folder(folder)
        if fd is None:
            return None
        data = _read(fd, base, entry.size, entry.size)
        if data is None or hashlib.sha256(data).hexdigest() != entry.sha256:
            return None
        return data, entry

    def record(
        self, name: str, inputs: str, data: bytes, fault_lines: Mapping[int, int] | None = None
    ) -> CachedFile:
        """Note the file ``name`` written with ``data``, made from ``inputs``."""
        entry = CachedFile(inputs, hashlib.sha256(data).hexdigest(), len(data), fault_lines)
        self.made[name] = entry
        return entry

    def cache(self) -> bytes:
        """The cache of this publication: one file a line, in name order."""
        lines = []
        for name in sorted(self.made):
            entry = self.made[name]
            fields: dict[str, object] = {
                "inputs": entry.inputs,
                "sha256": entry.sha256,
                "size": entry.size,
            }
            if entry.fault_lines is not None:
                fields["fault_lines"] = sorted(entry.fault_lines.items())
            lines.append(f"{json.dumps(name)}:{json.dumps(fields, separators=(',', ':'))}")
        head = f'{{\n"format": {FORMAT},\n"fingerprint": "{self.fingerprint}",\n"files": {{\n'
        return (head + ",\n".join(lines) + "\n}\n}\n").encode("utf-8")

    def _folder(self, folder: str) -> int | None:
        """A descriptor of the old site's ``folder``, opened without following a link."""
        if folder not in _FOLDERS or "" not in self._fds:
            return None
        if folder not in self._fds:
            try:
                self._fds[folder] = os.open(folder, _DIR_FLAGS, dir_fd=self._fds[""])
            except OSError:
                return None
        return self._fds[folder]

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def _read(folder: int, name: str, size: int | None, limit: int) -> bytes | None:
    """The bytes of the regular file ``name`` in ``folder``, if it is not a link, has one
    name, is ``size`` bytes long (any size up to ``limit`` when ``None``); else ``None``.
    ``O_NONBLOCK``: a FIFO planted in the old site must not hold the publication."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder)
        with open(fd, "rb", closefd=True) as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                return None
            if info.st_size > limit or (size is not None and info.st_size != size):
                return None
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit or (size is not None and len(data) != size):
        return None
    return data
