"""Bot uploads unpacked into a folder the referee can read, and bot folders packed for upload.

An author uploads a bot as one of::

    bot.py            Python source                   -> the file, copied under a safe name
    mybot.tar.gz      a gzip'd tar of a bot folder    -> the folder holding ``bot.toml``
    mybot.zip         a zip of a bot folder           -> the folder holding ``bot.toml``

(``.tgz`` is a ``.tar.gz``). The kind is read from the content (the gzip and zip magic
bytes; Python source is text in its declared encoding, without NUL bytes) and must agree
with the name: a ``.zip`` holding gzip data, or a ``.py`` holding an archive, is refused.
``bot.toml`` sits at the archive's top, or in its single top-level folder.

:func:`unpack_upload` treats the archive as hostile. Every member is checked before
anything is written, by the one set of rules the tar and the zip readers share
(:class:`_Members`): a zip's members from its central directory, a tar's in a first pass
over the stream (the second writes them). A folder named ``__MACOSX`` at the top (the
resource forks macOS's Finder adds beside the folder it zips) is left out. The rules:

- names: no NUL or other control or invisible character, no invalid UTF-8, no ``\\``,
  no absolute path, no ``..`` component (``.`` and empty components are dropped, as
  ``tar -C dir .`` writes them), no component longer than 255 bytes; no member twice,
  and no two names that differ only in case or Unicode normalisation (NFC, casefolded),
  so the folder means the same on every file system; nothing inside a member that is a
  file;
- kinds: regular files and folders only. Symlinks, hard links, devices, fifos and
  sockets are refused, as are encrypted zip members and zip compression other than
  stored and deflate (Python's bzip2 and LZMA readers inflate a whole compressed chunk at
  once, unbounded);
- counts: the bot's files and folders (:data:`~referee.sandbox.staging.MAX_BOT_FILES`)
  and its depth (:data:`~referee.sandbox.staging.MAX_BOT_DEPTH`), counted as
  :func:`referee.sandbox.read_bot` counts them, the single top-level folder aside; the
  counting stops at the limit, so an archive of a hundred thousand files is refused
  after one more than the limit, with nothing written. A zip's central directory is
  sized from its end record before :mod:`zipfile` parses it (its entry count and its
  size in bytes), so a huge directory is refused without a ``ZipInfo`` made per entry;
- bytes: one member (``max_member_bytes``), all of them (``max_bytes``), and all of them
  against the archive's own size on disk (more than ``max_ratio`` times it, past
  ``ratio_grace_bytes``, is a compression bomb). A zip member's sizes are claims about a
  compressed stream: one claiming too much is refused before it is read, and the bytes
  actually written are counted while it streams out in chunks, so the limits hold
  whatever the claims. A tar member's size is the number of bytes that follow its
  header, which the first pass reads past: those sizes are the bytes the second pass
  writes (and counts again). The tar stream is inflated under a cap (the files' bytes
  and a bounded allowance for headers), and any single read larger than a header may
  need is refused, so neither a vast pax header nor a run of empty members can fill
  memory;
- integrity: a truncated or corrupt archive is refused, including a tar whose end
  was cut off (the gzip stream is read to its end, where its CRC is checked, and what
  follows the tar's end must be zeros: :mod:`tarfile` stops silently at a damaged
  header) and a zip member whose CRC does not match;
- shape: ``bot.toml`` at the top, or in the single top-level folder.

Files are written relative to open folder descriptors, created exclusively with
``O_NOFOLLOW`` (nothing in the way is followed, nothing existing is overwritten), folders
0755 and files 0644 (0755 when any executable bit was set). Every refusal is a
:class:`~referee.errors.Refused` of one line, ``archive refused: member 'a/../x' leaves
the folder``, and leaves nothing under the folder it was given; a failure of our own disk
is an :class:`~referee.errors.InfrastructureError`, and leaves nothing either.

:func:`pack_bot` makes the archive ``referee upload`` sends: the bot read the way the
referee reads bots (:func:`referee.sandbox.read_bot`: the same refusals and limits,
``__pycache__`` and version-control folders left out), one tar entry per file in path
order, with mtime 0, uid and gid 0, no user or group name and normalised modes, in a
gzip stream with mtime 0 and no file name. The same bot gives the same bytes wherever
and whenever it is packed (given the same zlib: another deflate implementation may choose
other, equally valid, bytes); what stays equal everywhere is
:func:`referee.sandbox.bot_sha256` of what unpacks.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import shutil
import stat
import struct
import tarfile
import tokenize
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, cast

from referee.errors import InfrastructureError, Refused, UsageError
from referee.names import IDENTIFIER_PATTERN
from referee.sandbox.staging import MANIFEST, MAX_BOT_BYTES, MAX_BOT_DEPTH, MAX_BOT_FILES, read_bot
from referee.text import printable, safe_name

__all__ = ["ArchiveLimits", "pack_bot", "unpack_upload", "upload_filename"]

UploadKind = Literal["py", "tar.gz", "zip"]

_CHUNK = 64 * 1024
_MAX_NAME_BYTES = 255
# A tar header, pax or GNU long name included, needs far less; a larger read is abuse.
_MAX_HEADER_READ = 1024 * 1024
# The tar stream's own bytes per member beyond its data: a header, padding, a long name.
_TAR_OVERHEAD_PER_MEMBER = 2048
# A central-directory entry: 46 bytes, its name, an extra field; a long path fits easily.
_ZIP_DIRECTORY_PER_MEMBER = 1024
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_FOUND = {"tar.gz": "gzip data", "zip": "a zip archive"}
_ZIP_ENCRYPTED, _ZIP_PATCHED, _ZIP_STRONG_ENCRYPTION = 0x1, 0x20, 0x40
_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
# What macOS's Finder puts beside the folder it zips (resource forks): left out.
_MACOS_FORKS = "__MACOSX"
_ARCHIVE_SUFFIXES: tuple[tuple[str, UploadKind], ...] = (
    (".tar.gz", "tar.gz"),
    (".tgz", "tar.gz"),
    (".zip", "zip"),
    (".py", "py"),
)
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# What the decoders raise on a damaged archive (BadGzipFile is an OSError: named first).
_DAMAGED = (
    gzip.BadGzipFile,
    tarfile.TarError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    zlib.error,
    UnicodeDecodeError,
)


@dataclass(frozen=True)
class ArchiveLimits:
    """What an upload may hold; the defaults are the rules the referee stages bots by."""

    max_files: int = MAX_BOT_FILES
    """Files and folders of the bot (its single top-level folder, if any, not counted)."""
    max_depth: int = MAX_BOT_DEPTH
    """Folders nested inside the bot's folder."""
    max_bytes: int = MAX_BOT_BYTES
    """Bytes of all files together, as written."""
    max_member_bytes: int = MAX_BOT_BYTES
    """Bytes of any one file, as written."""
    max_ratio: int = 200
    """Bytes written per byte of the archive, beyond ``ratio_grace_bytes``."""
    ratio_grace_bytes: int = 1024 * 1024
    """Bytes any archive may unpack to whatever its ratio: small files compress well."""


def upload_filename(path: str | Path) -> str:
    """The file name to upload :func:`pack_bot`'s bytes under: a ``.py`` file's own name,
    else the folder's name with ``.tar.gz``."""
    given = Path(path).absolute()
    return given.name if given.suffix == ".py" else f"{given.name}.tar.gz"


def pack_bot(path: str | Path) -> bytes:
    """The bytes to upload for the bot at ``path``: a ``.py`` file's bytes unchanged, or a
    deterministic ``.tar.gz`` of a bot folder (see the module docstring); the name to
    send them under is :func:`upload_filename`'s.

    The bot is read by :func:`referee.sandbox.read_bot`, so whatever it refuses
    (``UsageError``) is refused here, before anything is sent.
    """
    spec, files = read_bot(path)
    if spec.single_file:
        if not spec.single_file.endswith(".py"):
            raise UsageError(
                f"bot {printable(str(path))} is an executable file; a server takes a .py "
                f"file or a folder with a {MANIFEST}"
            )
        return files[0].data
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for file in sorted(files):
            try:
                file.path.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(
                    f"bot file {printable(file.path)!r} has a name that is not UTF-8; rename it"
                ) from None
            info = tarfile.TarInfo(file.path)
            info.size = len(file.data)
            info.mode = 0o755 if file.executable else 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(file.data))
    return buffer.getvalue()


def unpack_upload(
    data_path: Path, filename: str, into: Path, limits: ArchiveLimits = ArchiveLimits()
) -> Path:
    """Unpack the upload stored at ``data_path``, sent as ``filename``, under ``into`` (an
    empty folder the caller made); the path to give :func:`referee.sandbox.read_bot`.

    A ``.py`` file is copied to ``into/<name>.py`` (its own name when that is a plain
    identifier, else a slug of it) and that file is returned. An archive is unpacked into
    ``into/<name>/`` (``<name>`` from the upload's name the same way), and the folder
    holding ``bot.toml`` is returned: that one, or its single top-level folder. Refusals
    are one-line :class:`~referee.errors.Refused` errors and leave ``into`` as it was.
    """
    shown = printable(_base_name(filename))
    kind, size = _upload_kind(data_path, filename, shown)
    if kind == "py":
        return _copy_script(data_path, filename, into, limits)
    work = into / _safe_stem(filename, kind)
    top = _make_folder(into, work.name)
    try:
        try:
            members = _Members(limits)
            writer = _Writer(top, limits, size, into)
            unpack = _unpack_zip if kind == "zip" else _unpack_tar_gz
            folder = unpack(data_path, members, writer, shown)
        finally:
            os.close(top)
        return work.joinpath(*folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


# --------------------------------------------------------------------------- the upload


def _base_name(filename: str) -> str:
    """The file name a browser sent, without any folders it put before it."""
    return re.split(r"[/\\]", filename)[-1]


def _upload_kind(data_path: Path, filename: str, shown: str) -> tuple[UploadKind, int]:
    """What the upload is, by its name and by its first bytes, which must agree; and its
    size in bytes."""
    lowered = _base_name(filename).lower()
    named = next((kind for suffix, kind in _ARCHIVE_SUFFIXES if lowered.endswith(suffix)), None)
    if named is None:
        raise Refused(
            f"upload refused: '{shown}' is neither a .py file nor a .tar.gz or .zip archive "
            f"of a bot folder"
        )
    try:
        with open(data_path, "rb") as handle:
            head = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise InfrastructureError(f"cannot read upload {data_path}: {exc.strerror}") from exc
    found: UploadKind | None = None
    if head.startswith(_GZIP_MAGIC):
        found = "tar.gz"
    elif head in _ZIP_MAGICS:
        found = "zip"
    if named == "py" and found is not None:
        raise Refused(
            f"upload refused: '{shown}' is named like Python source but holds "
            f"{_FOUND[found]}; name it .{found}"
        )
    if named != "py" and found != named:
        what = _FOUND[found] if found else "neither a gzip nor a zip archive"
        raise Refused(f"upload refused: '{shown}' is named like a .{named} but holds {what}")
    return named, size


def _safe_stem(filename: str, kind: UploadKind) -> str:
    """The upload's name without its suffix, if a plain identifier, else a slug of it."""
    base = _base_name(filename)
    suffix = next(s for s, k in _ARCHIVE_SUFFIXES if k == kind and base.lower().endswith(s))
    stem = base[: -len(suffix)]
    return stem if _IDENTIFIER.match(stem) else safe_name(stem)


def _copy_script(data_path: Path, filename: str, into: Path, limits: ArchiveLimits) -> Path:
    """A ``.py`` upload: checked to be Python source, copied exclusively as 0644."""
    shown = printable(_base_name(filename))
    cap = min(limits.max_bytes, limits.max_member_bytes)
    try:
        with open(data_path, "rb") as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        raise InfrastructureError(f"cannot read upload {data_path}: {exc.strerror}") from exc
    if len(data) > cap:
        raise Refused(f"upload refused: '{shown}' is larger than {_megabytes(cap)}")
    if b"\0" in data:
        raise Refused(f"upload refused: '{shown}' holds NUL bytes: it is not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        raise Refused(
            f"upload refused: '{shown}' is not Python source: not text in UTF-8 (or the "
            f"encoding it declares)"
        ) from None
    target = into / (_safe_stem(filename, "py") + ".py")
    try:
        out = os.open(target, _O_NEW, 0o600)
    except OSError as exc:
        raise InfrastructureError(f"cannot write {target}: {exc.strerror}") from exc
    try:
        with open(out, "wb", closefd=False) as handle:
            handle.write(data)
        os.fchmod(out, 0o644)
    except BaseException as exc:
        target.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InfrastructureError(f"cannot write {target}: {exc.strerror}") from exc
        raise
    finally:
        os.close(out)
    return target


def _make_folder(parent: Path, name: str) -> int:
    """Make ``parent/name`` (0755) and return its descriptor, following no symlink in it;
    on failure, nothing is left."""
    try:
        parent_fd = os.open(parent, _O_DIR & ~os.O_NOFOLLOW)
    except OSError as exc:
        raise InfrastructureError(f"cannot unpack into {parent}: {exc.strerror}") from exc
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
        try:
            fd = os.open(name, _O_DIR, dir_fd=parent_fd)
            try:
                os.fchmod(fd, 0o755)
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            os.rmdir(name, dir_fd=parent_fd)
            raise
    except OSError as exc:
        raise InfrastructureError(f"cannot unpack into {parent}: {exc.strerror}") from exc
    finally:
        os.close(parent_fd)
    return fd


def _megabytes(count: int) -> str:
    return f"{count / (1024 * 1024):g} MB"


def _refused(reason: str) -> Refused:
    return Refused(f"archive refused: {reason}")


# --------------------------------------------------------------------------- the rules


def _member_parts(name: str) -> tuple[str, ...]:
    """A member's path as its components, or a refusal saying what is wrong with it.

    ``()`` is the archive's own top (``./``).
    """
    shown = printable(name)
    if "\0" in name:
        raise _refused(f"member '{shown}' has a NUL character in its name")
    if any("\ud800" <= char <= "\udfff" for char in name):
        raise _refused(f"member '{shown}' has a name that is not valid UTF-8")
    if not name.isprintable():
        raise _refused(f"member '{shown}' has a control or invisible character in its name")
    if "\\" in name:
        raise _refused(f"member '{shown}' has a \\ in its name; make the archive with / paths")
    if name.startswith("/"):
        raise _refused(f"member '{shown}' is an absolute path")
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in parts:
        raise _refused(f"member '{shown}' leaves the folder")
    if any(len(part.encode("utf-8")) > _MAX_NAME_BYTES for part in parts):
        raise _refused(f"member '{shown}' has a name longer than {_MAX_NAME_BYTES} bytes")
    return parts


@dataclass
class _Seen:
    """A path met in the archive: as spelt, a folder or not, and named itself (not only
    as the parent of another member)."""

    path: str
    folder: bool
    explicit: bool


class _Members:
    """Every member's name and kind checked as it comes, and the counts kept.

    Paths are keyed by their NFC, casefolded spelling, so ``A.py`` meets ``a.py``. The
    single top-level folder an archive may wrap the bot in is not counted, as long as
    there may be one: each count is checked as it grows (and the check only tightens), and
    once more at the end, when it is known.
    """

    def __init__(self, limits: ArchiveLimits) -> None:
        self.limits = limits
        self._seen: dict[str, _Seen] = {}
        self._tops: dict[str, bool] = {}
        self._deepest = 0
        self._deepest_path = ""

    def admit(self, name: str, folder: bool) -> tuple[str, ...] | None:
        """The path of a member named ``name``, once it may be written; ``None`` for one
        left out (macOS's ``__MACOSX`` folder of resource forks)."""
        parts = _member_parts(name)
        if not parts:
            if not folder:
                raise _refused(f"member '{printable(name)}' is a file without a name")
            return parts
        if parts[0] == _MACOS_FORKS:
            return None
        for end in range(1, len(parts)):
            self._add(parts[:end], name, folder=True, explicit=False)
        self._add(parts, name, folder=folder, explicit=True)
        self._tops[parts[0]] = folder or len(parts) > 1
        nesting = len(parts) if folder else len(parts) - 1
        if nesting > self._deepest:
            self._deepest, self._deepest_path = nesting, "/".join(parts)
        self._check_counts(self._wrapper_slack())
        return parts

    def _add(self, parts: tuple[str, ...], name: str, *, folder: bool, explicit: bool) -> None:
        path = "/".join(parts)
        key = unicodedata.normalize("NFC", path).casefold()
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = _Seen(path, folder, explicit)
            return
        if seen.path != path:
            raise _refused(
                f"members '{printable(seen.path)}' and '{printable(path)}' differ only in case "
                "or Unicode normalisation"
            )
        if seen.folder and folder and not (seen.explicit and explicit):
            seen.explicit = seen.explicit or explicit
            return
        if not seen.folder and folder:
            raise _refused(
                f"member '{printable(name)}' is inside '{printable(path)}', which is a file"
            )
        if seen.folder and not folder:
            raise _refused(f"member '{printable(path)}' is a file and a folder at once")
        raise _refused(f"member '{printable(path)}' appears twice")

    def _wrapper_slack(self) -> int:
        """1 while the archive may still be one top-level folder around the bot, else 0."""
        return 1 if len(self._tops) == 1 and next(iter(self._tops.values())) else 0

    def _check_counts(self, slack: int) -> None:
        limits = self.limits
        if len(self._seen) - slack > limits.max_files:
            raise _refused(
                f"it holds more than {limits.max_files} files and folders; leave data sets "
                "and virtual environments out of the bot"
            )
        if self._deepest - slack > limits.max_depth:
            raise _refused(
                f"it nests folders more than {limits.max_depth} deep (at "
                f"'{printable(self._deepest_path)}'); flatten it"
            )

    def bot_folder(self) -> tuple[str, ...]:
        """The path of the folder holding ``bot.toml``: the top, or the one folder there."""
        root = self._seen.get(MANIFEST)
        if root is not None and root.path == MANIFEST and not root.folder:
            self._check_counts(0)
            return ()
        if not self._tops:
            raise _refused("it is empty")
        folders = sorted(name for name, folder in self._tops.items() if folder)
        if len(self._tops) == 1 and folders:
            inside = self._seen.get(f"{folders[0]}/{MANIFEST}".casefold())
            if inside is None or inside.path != f"{folders[0]}/{MANIFEST}" or inside.folder:
                raise _refused(
                    f"its folder '{printable(folders[0])}' has no {MANIFEST}; add one with at "
                    'least a command, e.g. command = "python3 bot.py"'
                )
            self._check_counts(1)
            return (folders[0],)
        if len(folders) > 1:
            listed = ", ".join(f"'{printable(name)}'" for name in folders[:3])
            raise _refused(
                f"it has {len(folders)} top-level folders ({listed}) and no {MANIFEST} beside "
                "them; put the bot's files at the top of the archive or in one folder"
            )
        raise _refused(
            f"it has no {MANIFEST} at its top; add one with at least a command, e.g. "
            'command = "python3 bot.py"'
        )


# --------------------------------------------------------------------------- writing


class _Writer:
    """Members written under the work folder's descriptor, their bytes counted as written."""

    def __init__(self, top: int, limits: ArchiveLimits, archive_bytes: int, into: Path) -> None:
        self._top = top
        self._limits = limits
        self._bomb_bytes = max(limits.ratio_grace_bytes, limits.max_ratio * archive_bytes)
        self._into = into
        self.written = 0

    def folder(self, parts: tuple[str, ...]) -> None:
        os.close(self._enter(parts))

    def file(self, parts: tuple[str, ...], read: Callable[[int], bytes], executable: bool) -> None:
        """Stream ``read``'s chunks into a new file ``parts``; refused at any limit."""
        folder = self._enter(parts[:-1])
        try:
            out = self._call(os.open, parts[-1], _O_NEW, 0o600, dir_fd=folder)
        finally:
            os.close(folder)
        try:
            size = 0
            while chunk := read(_CHUNK):
                size += len(chunk)
                self.written += len(chunk)
                self.check(parts, size, self.written)
                view = memoryview(chunk)
                while view:
                    view = view[self._call(os.write, out, view) :]
            self._call(os.fchmod, out, 0o755 if executable else 0o644)
        finally:
            os.close(out)

    def check(self, parts: tuple[str, ...], size: int, written: int) -> None:
        """Refuse a member of ``size`` bytes at ``parts``, with ``written`` in all so far."""
        limits = self._limits
        if size > limits.max_member_bytes:
            raise _refused(
                f"member '{printable('/'.join(parts))}' is larger than "
                f"{_megabytes(limits.max_member_bytes)}"
            )
        if written > limits.max_bytes:
            raise _refused(
                f"it unpacks to more than {_megabytes(limits.max_bytes)}; leave data sets and "
                "virtual environments out of the bot"
            )
        if written > self._bomb_bytes:
            raise _refused(
                f"it unpacks to more than {limits.max_ratio} times its own size: a compression bomb"
            )

    def _enter(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the folder ``parts``, made (0755) where missing, no symlinks."""
        fd = os.dup(self._top)
        try:
            for part in parts:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                    made = True
                except FileExistsError:
                    made = False
                except OSError as exc:
                    raise self._failure(exc) from exc
                child = self._call(os.open, part, _O_DIR, dir_fd=fd)
                os.close(fd)
                fd = child
                if made:
                    self._call(os.fchmod, fd, 0o755)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _call(self, call: Callable[..., int | None], *args: object, **kwargs: object) -> int:
        """``call``, with our disk's ``OSError`` told as an infrastructure failure."""
        try:
            return call(*args, **kwargs) or 0
        except OSError as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: OSError) -> InfrastructureError:
        return InfrastructureError(f"cannot unpack an upload into {self._into}: {exc.strerror}")


# --------------------------------------------------------------------------- zip


def _unpack_zip(data_path: Path, members: _Members, writer: _Writer, shown: str) -> tuple[str, ...]:
    """Check every member from the central directory, then stream each one out; the
    path of the bot's folder in the archive."""
    try:
        with open(data_path, "rb") as handle:
            size = _check_zip_directory(handle, members)
            with zipfile.ZipFile(handle) as archive:
                planned = [_zip_member(info, members, size) for info in archive.infolist()]
                folder = members.bot_folder()
                for info, parts, executable in planned:
                    if parts is None:
                        continue
                    if info.is_dir():
                        writer.folder(parts)
                        continue
                    with archive.open(info) as source:
                        writer.file(parts, source.read, executable)
    except _DAMAGED as exc:
        raise _refused(f"'{shown}' is truncated or corrupt ({printable(str(exc))})") from None
    except NotImplementedError as exc:
        # What zipfile says of a zip feature it lacks (a newer version, strong encryption).
        raise _refused(
            f"'{shown}' needs a zip feature Python lacks ({printable(str(exc))})"
        ) from None
    except OSError as exc:
        raise InfrastructureError(f"cannot read upload {data_path}: {exc.strerror}") from exc
    return folder


def _check_zip_directory(handle: IO[bytes], members: _Members) -> int:
    """Refuse a central directory too large for the limits, from the end record alone;
    the archive's size in bytes.

    The end record is found as :mod:`zipfile` finds it (the last 22 bytes, else the last
    signature in the last 64 KiB), the Zip64 one where its locator precedes it; what
    :mod:`zipfile` would read (the directory's size) and the entries it claims are both
    bounded. A record that cannot be found is left for :mod:`zipfile` to refuse.
    """
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    tail_size = min(size, 22 + 0xFFFF + 20 + 56)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = len(tail) - 22
    if not (tail[at : at + 4] == b"PK\x05\x06" and tail[-2:] == b"\0\0"):
        at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return size
    entries, directory_bytes = struct.unpack_from("<HI", tail, at + 10)
    locator, record = at - 20, at - 20 - 56
    zip64 = (
        tail[locator : locator + 4] == b"PK\x06\x07" and tail[record : record + 4] == b"PK\x06\x06"
    )
    if record >= 0 and zip64:
        entries, directory_bytes = struct.unpack_from("<QQ", tail, record + 32)
    limit = members.limits.max_files + 1
    if entries > limit:
        raise _refused(
            f"it holds more than {members.limits.max_files} files and folders ({entries}); "
            "leave data sets and virtual environments out of the bot"
        )
    if directory_bytes > limit * _ZIP_DIRECTORY_PER_MEMBER:
        raise _refused(f"its central directory is larger than {limit} members can need")
    return size


def _zip_member(
    info: zipfile.ZipInfo, members: _Members, archive_bytes: int
) -> tuple[zipfile.ZipInfo, tuple[str, ...] | None, bool]:
    """A zip member checked: its kind, method, claimed size and place, then its name.

    :mod:`zipfile` itself refuses strong encryption and patched data with
    ``NotImplementedError``, and a member placed before the archive's start (a damaged
    directory) with the ``OSError`` of a negative seek: each is refused here first.
    """
    name = info.orig_filename
    shown = printable(name)
    folder = name.endswith("/")
    mode = info.external_attr >> 16 if info.create_system == 3 else 0
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise _refused(f"member '{shown}' is a symlink; {_NO_LINKS}")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise _refused(f"member '{shown}' is {_special_kind(kind)}; {_ONLY_FILES}")
    if (kind == stat.S_IFDIR) != folder and kind:
        raise _refused(f"member '{shown}' is marked a folder but not named as one")
    if info.flag_bits & (_ZIP_ENCRYPTED | _ZIP_STRONG_ENCRYPTION):
        raise _refused(f"member '{shown}' is encrypted")
    if info.flag_bits & _ZIP_PATCHED or not 0 <= info.header_offset < archive_bytes:
        raise _refused(f"member '{shown}' is damaged (a corrupt archive)")
    if not folder and info.compress_type not in _ZIP_METHODS:
        raise _refused(
            f"member '{shown}' uses compression method {info.compress_type}; zip with deflate "
            "(the usual default) or none"
        )
    if not folder and info.file_size > members.limits.max_member_bytes:
        raise _refused(
            f"member '{shown}' is larger than {_megabytes(members.limits.max_member_bytes)}"
        )
    return info, members.admit(name, folder), bool(mode & 0o111)


_NO_LINKS = "the referee unpacks no links: put the file itself in the archive"
_ONLY_FILES = "an upload may hold only files and folders"


def _special_kind(kind: int) -> str:
    if kind == stat.S_IFIFO:
        return "a fifo"
    if kind == stat.S_IFSOCK:
        return "a socket"
    if kind in (stat.S_IFCHR, stat.S_IFBLK):
        return "a device"
    return f"of an unknown kind ({kind:o})"


# --------------------------------------------------------------------------- tar.gz


def _unpack_tar_gz(
    data_path: Path, members: _Members, writer: _Writer, shown: str
) -> tuple[str, ...]:
    """Read the tar stream twice: once to check every member and the stream's end, then,
    if nothing was refused, to write the members out; the path of the bot's folder in
    the archive.

    In a tar a member's size is not a claim about a compressed stream but the number of
    bytes that follow its header: the first pass reads past them (inflating, under the
    cap), so the sizes it adds up are the sizes the second pass writes, and a refusal of
    counts, names or bytes comes before anything is written.
    """
    try:
        with _tar_stream(data_path, members.limits) as (archive, stream):
            planned = _plan_tar(archive, members, writer)
            stream.check_end()
        folder = members.bot_folder()
        with _tar_stream(data_path, members.limits) as (archive, _):
            for name, parts in planned:
                member = archive.next()
                if member is None or member.name != name:
                    raise InfrastructureError(f"upload {data_path} changed while it was unpacked")
                if parts is None:
                    continue
                if member.isdir():
                    writer.folder(parts)
                    continue
                source = archive.extractfile(member)
                if source is None:
                    raise _refused(f"member '{printable(member.name)}' cannot be read")
                with source:
                    writer.file(parts, source.read, bool(member.mode & 0o111))
    except _DAMAGED as exc:
        raise _refused(f"'{shown}' is truncated or corrupt ({printable(str(exc))})") from None
    except OSError as exc:
        raise InfrastructureError(f"cannot read upload {data_path}: {exc.strerror}") from exc
    return folder


@contextlib.contextmanager
def _tar_stream(
    data_path: Path, limits: ArchiveLimits
) -> Iterator[tuple[tarfile.TarFile, _Inflated]]:
    """The upload opened as a tar inside a gzip stream, read through :class:`_Inflated`."""
    cap = limits.max_bytes + (limits.max_files + 2) * _TAR_OVERHEAD_PER_MEMBER
    with (
        open(data_path, "rb") as handle,
        gzip.GzipFile(fileobj=handle, mode="rb") as inflating,
    ):
        stream = _Inflated(inflating, cap, limits.max_bytes)
        with tarfile.open(fileobj=cast(IO[bytes], stream), mode="r:") as archive:
            yield archive, stream


def _plan_tar(
    archive: tarfile.TarFile, members: _Members, writer: _Writer
) -> list[tuple[str, tuple[str, ...] | None]]:
    """Every member checked, its bytes counted as the second pass will write them."""
    planned: list[tuple[str, tuple[str, ...] | None]] = []
    total = 0
    for member in archive:
        parts = _tar_member(member, members)
        planned.append((member.name, parts))
        if parts is not None and member.isreg():
            total += member.size
            writer.check(parts, member.size, total)
    return planned


def _tar_member(member: tarfile.TarInfo, members: _Members) -> tuple[str, ...] | None:
    """A tar member checked: its kind, claimed size, then its name."""
    shown = printable(member.name)
    if member.issym():
        raise _refused(
            f"member '{shown}' is a symlink (to '{printable(member.linkname)}'); {_NO_LINKS}"
        )
    if member.islnk():
        raise _refused(
            f"member '{shown}' is a hard link (to '{printable(member.linkname)}'); {_NO_LINKS}"
        )
    if member.ischr() or member.isblk():
        raise _refused(f"member '{shown}' is a device; {_ONLY_FILES}")
    if member.isfifo():
        raise _refused(f"member '{shown}' is a fifo; {_ONLY_FILES}")
    if not (member.isreg() or member.isdir()):
        raise _refused(f"member '{shown}' is of tar type {member.type!r}; {_ONLY_FILES}")
    if member.isreg() and member.size > members.limits.max_member_bytes:
        raise _refused(
            f"member '{shown}' is larger than {_megabytes(members.limits.max_member_bytes)}"
        )
    return members.admit(member.name, member.isdir())


class _Inflated(io.RawIOBase):
    """The inflated tar stream, capped: what :mod:`tarfile` reads it through.

    No read goes past ``cap`` bytes into the stream, and no single read asks for more
    than a header may need (:mod:`tarfile` reads a pax header or a GNU long name whole;
    member data is read in chunks the writer asks for). ``last`` is what the latest read
    returned: the block that ended the archive, once :mod:`tarfile` has stopped.
    """

    def __init__(self, inflating: gzip.GzipFile, cap: int, max_bytes: int) -> None:
        super().__init__()
        self._inflating = inflating
        self._cap = cap
        self._max_bytes = max_bytes
        self.last = b""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0 or size > max(_MAX_HEADER_READ, _CHUNK):
            raise _refused(f"it has a tar header larger than {_megabytes(_MAX_HEADER_READ)}")
        room = self._cap - self._inflating.tell()
        data = self._inflating.read(min(size, room + 1))
        if len(data) > room:
            raise self._too_big()
        self.last = data
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        target = offset if whence == os.SEEK_SET else self.tell() + offset
        if whence not in (os.SEEK_SET, os.SEEK_CUR) or target > self._cap:
            raise self._too_big()
        return self._inflating.seek(target)

    def tell(self) -> int:
        return self._inflating.tell()

    def check_end(self) -> None:
        """Refuse a tar that ended at a damaged header, or data after its end; read the
        gzip stream to its end, where its length and CRC are checked."""
        if self.last.strip(b"\0"):
            raise _refused("its tar stream has a damaged header (a corrupt archive)")
        while chunk := self.read(_CHUNK):
            if chunk.strip(b"\0"):
                raise _refused("it has data after the end of its tar stream (a corrupt archive)")

    def _too_big(self) -> Refused:
        return _refused(
            f"it unpacks to more than {_megabytes(self._max_bytes)} with its tar headers"
        )
