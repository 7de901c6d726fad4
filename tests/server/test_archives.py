"""Uploads unpacked into bot folders, hostile ones refused; bot folders packed for upload."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import stat
import struct
import tarfile
import warnings
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from referee.errors import Refused, UsageError
from referee.sandbox import bot_sha256, read_bot
from referee.server.archives import ArchiveLimits, pack_bot, unpack_upload, upload_filename

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_bots" / "montecarlo"
MANIFEST = b'name = "Tiny"\ncommand = "python3 bot.py"\n'
BOT = b"print('hi')\n"
GIB = 1 << 30
MIB = 1 << 20


# --------------------------------------------------------------------------- building archives


def tar_gz(members: Iterable[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    """A .tar.gz of ``members``: a TarInfo as it is (no data), or a (name, data) file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tar_info(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def zip_of(members: Iterable[zipfile.ZipInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with (
        warnings.catch_warnings(action="ignore", category=UserWarning),  # duplicate names
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for member in members:
            if isinstance(member, zipfile.ZipInfo):
                archive.writestr(member, b"")
            else:
                archive.writestr(*member)
    return buffer.getvalue()


def zip_info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def tiny_bot(prefix: str = "") -> list[tuple[str, bytes]]:
    return [(f"{prefix}bot.toml", MANIFEST), (f"{prefix}bot.py", BOT)]


def raw_zip(entries: Iterable[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip written by hand: (name, compressed bytes, method, crc, size) per entry, with
    Zip64 end records when there are more than 65535 entries, as zipfile writes them."""
    local, central = [], []
    offset = 0
    count = 0
    for name, data, method, crc, size in entries:
        encoded = name.encode()
        fields = (20, 0, method, 0, 0x21, crc, len(data), size, len(encoded), 0)
        header = struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields) + encoded
        local += [header, data]
        central.append(
            struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 0x314, *fields, 0, 0, 0, 0o644 << 16, offset)
            + encoded
        )
        offset += len(header) + len(data)
        count += 1
    directory = b"".join(central)
    tail = b""
    if count > 0xFFFF:
        record = struct.pack(
            "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(directory), offset
        )
        locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, offset + len(directory), 1)
        tail = record + locator
    shown = min(count, 0xFFFF)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, shown, shown, len(directory), offset, 0)
    return b"".join(local) + directory + tail + end


def deflated_zeros(count: int) -> bytes:
    """Raw deflate of ``count`` MiB of zeros, made cheaply: after a full flush the
    compressor starts afresh, so each MiB compresses to the same bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(bytes(MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return block * count + compressor.flush(zlib.Z_FINISH)


def ustar_header(name: str, size: int) -> bytes:
    """One ustar header block, made by hand (tarfile's own is slow for 100,000)."""
    fields = (
        name.encode().ljust(100, b"\0"),
        b"0000644\0",
        b"0000000\0",
        b"0000000\0",
        b"%011o\0" % size,
        b"00000000000\0",
        b" " * 8,
        b"0",
        bytes(100),
        b"ustar\x0000",
    )
    block = b"".join(fields).ljust(512, b"\0")
    checksum = b"%06o\0 " % sum(block)
    return block[:148] + checksum + block[156:]


@pytest.fixture
def into(tmp_path: Path) -> Path:
    folder = tmp_path / "into"
    folder.mkdir()
    return folder


def upload(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return path


def refused(tmp_path: Path, into: Path, data: bytes, filename: str, **limits: int) -> str:
    """The one-line refusal of an upload, checked to have left ``into`` empty."""
    with pytest.raises(Refused) as caught:
        unpack_upload(upload(tmp_path, data), filename, into, ArchiveLimits(**limits))
    assert list(into.iterdir()) == []
    message = str(caught.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- hostile uploads


@pytest.fixture(scope="module")
def zip_bomb() -> bytes:
    """A zip of one member, 1 GiB of zeros, about a megabyte on disk."""
    crc = 0
    zeros = bytes(MIB)
    for _ in range(1024):
        crc = zlib.crc32(zeros, crc)
    bot = [
        (name, data, zipfile.ZIP_STORED, zlib.crc32(data), len(data)) for name, data in tiny_bot()
    ]
    return raw_zip([*bot, ("zeros", deflated_zeros(1024), zipfile.ZIP_DEFLATED, crc, GIB)])


def test_a_zip_bomb_is_refused_by_its_size_as_written(
    tmp_path: Path, into: Path, zip_bomb: bytes
) -> None:
    message = refused(tmp_path, into, zip_bomb, "bomb.zip", max_member_bytes=2 * GIB)
    assert message == (
        "archive refused: it unpacks to more than 50 MB; leave data sets and virtual "
        "environments out of the bot"
    )


def test_a_zip_bomb_is_refused_by_its_header_before_a_byte_is_read(
    tmp_path: Path, into: Path, zip_bomb: bytes
) -> None:
    message = refused(tmp_path, into, zip_bomb, "bomb.zip")
    assert message == "archive refused: member 'zeros' is larger than 50 MB"


def test_a_tar_gz_bomb_is_refused_by_its_size_as_written(tmp_path: Path, into: Path) -> None:
    """1 GiB of zeros in one member; the gzip trailer is never reached."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = compressor.compress(ustar_header("zeros", GIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    bomb = b"\x1f\x8b\x08\0\0\0\0\0\x02\xff" + head + deflated_zeros(1025) + bytes(8)
    message = refused(tmp_path, into, bomb, "bomb.tar.gz", max_member_bytes=2 * GIB)
    assert message.startswith("archive refused: it unpacks to more than 50 MB")


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_that_compresses_too_well_is_a_bomb(
    tmp_path: Path, into: Path, kind: str
) -> None:
    members = [*tiny_bot(), ("zeros", bytes(8 * MIB))]
    data = zip_of(members) if kind == "zip" else tar_gz(members)
    message = refused(tmp_path, into, data, f"bot.{kind}")
    assert message == (
        "archive refused: it unpacks to more than 200 times its own size: a compression bomb"
    )


def test_a_tar_gz_of_100000_files_is_refused_at_the_limit(tmp_path: Path, into: Path) -> None:
    """Nothing is written: the count is refused while the headers are checked."""
    first = ustar_header("f000000", 0)
    base = sum(first[:148]) + sum(b" " * 8) + sum(first[156:]) - sum(b"f000000")
    blocks = b"".join(
        name + first[7:148] + b"%06o\0 " % (base + sum(name)) + first[156:]
        for name in (b"f%06d" % index for index in range(100_000))
    )
    data = gzip.compress(blocks + bytes(1024), compresslevel=1)
    message = refused(tmp_path, into, data, "many.tar.gz")
    assert message.startswith("archive refused: it holds more than 10000 files and folders")


def test_a_zip_of_100000_files_is_refused_from_its_end_record(tmp_path: Path, into: Path) -> None:
    data = raw_zip((f"f{index:06d}", b"", 0, 0, 0) for index in range(100_000))
    message = refused(tmp_path, into, data, "many.zip")
    assert message.startswith(
        "archive refused: it holds more than 10000 files and folders (100000)"
    )


def test_the_file_count_is_the_bots_own(tmp_path: Path, into: Path) -> None:
    """The top-level folder is not counted; every other folder is, implicit or not."""
    members = [*tiny_bot("top/"), ("top/a/x", b"")]
    assert unpack_upload(
        upload(tmp_path, tar_gz(members)), "b.tar.gz", into, ArchiveLimits(max_files=4)
    ) == (into / "b" / "top")
    shutil.rmtree(into / "b")
    message = refused(tmp_path, into, tar_gz(members), "b.tar.gz", max_files=3)
    assert message.startswith("archive refused: it holds more than 3 files and folders")


def test_folders_nested_too_deep_are_refused(tmp_path: Path, into: Path) -> None:
    data = tar_gz([*tiny_bot(), ("a/b/c/x", b"")])
    message = refused(tmp_path, into, data, "deep.tar.gz", max_depth=2)
    assert (
        message == "archive refused: it nests folders more than 2 deep (at 'a/b/c/x'); flatten it"
    )


NO_LINKS = "the referee unpacks no links: put the file itself in the archive"
HOSTILE_TAR = [
    (
        tar_info("link", tarfile.SYMTYPE, "/etc/passwd"),
        f"member 'link' is a symlink (to '/etc/passwd'); {NO_LINKS}",
    ),
    (
        tar_info("hard", tarfile.LNKTYPE, "bot.py"),
        f"member 'hard' is a hard link (to 'bot.py'); {NO_LINKS}",
    ),
    (
        tar_info("dev", tarfile.CHRTYPE),
        "member 'dev' is a device; an upload may hold only files and folders",
    ),
    (
        tar_info("disk", tarfile.BLKTYPE),
        "member 'disk' is a device; an upload may hold only files and folders",
    ),
    (
        tar_info("pipe", tarfile.FIFOTYPE),
        "member 'pipe' is a fifo; an upload may hold only files and folders",
    ),
    (("a/../../x", b""), "member 'a/../../x' leaves the folder"),
    (("../x", b""), "member '../x' leaves the folder"),
    (("/etc/cron.d/x", b""), "member '/etc/cron.d/x' is an absolute path"),
    (("a\\..\\x", b""), "member 'a\\..\\x' has a \\ in its name; make the archive with / paths"),
    (
        ("bad\x1b[2Jname", b""),
        "member 'bad\\x1b[2Jname' has a control or invisible character in its name",
    ),
    (
        ("bad\u202ename", b""),
        "member 'bad\\u202ename' has a control or invisible character in its name",
    ),
    (("bot.py", b"again"), "member 'bot.py' appears twice"),
    (("BOT.py", b""), "members 'bot.py' and 'BOT.py' differ only in case or Unicode normalisation"),
    (("bot.toml/x", b""), "member 'bot.toml/x' is inside 'bot.toml', which is a file"),
    (("x" * 256, b""), f"member '{'x' * 256}' has a name longer than 255 bytes"),
]


@pytest.mark.parametrize(("member", "reason"), HOSTILE_TAR, ids=[r[:30] for _, r in HOSTILE_TAR])
def test_a_hostile_tar_member_is_refused(
    tmp_path: Path, into: Path, member: tarfile.TarInfo | tuple[str, bytes], reason: str
) -> None:
    data = tar_gz([*tiny_bot(), member])
    assert refused(tmp_path, into, data, "bot.tar.gz") == f"archive refused: {reason}"


def test_a_tar_with_a_non_utf8_name_is_refused(tmp_path: Path, into: Path) -> None:
    blocks = ustar_header("ok", 0).replace(b"ok\0", b"\xffk\0", 1)
    blocks = blocks[:148] + b"%06o\0 " % sum(blocks[:148] + b" " * 8 + blocks[156:]) + blocks[156:]
    data = gzip.compress(blocks + bytes(1024))
    message = refused(tmp_path, into, data, "bot.tar.gz")
    assert message == "archive refused: member '\\udcffk' has a name that is not valid UTF-8"


def test_names_equal_after_unicode_normalisation_are_refused(tmp_path: Path, into: Path) -> None:
    data = zip_of([*tiny_bot(), ("caf\u00e9.py", b""), ("cafe\u0301.py", b"")])
    message = refused(tmp_path, into, data, "bot.zip")
    assert "differ only in case or Unicode normalisation" in message


HOSTILE_ZIP = [
    (
        zip_info("link", stat.S_IFLNK | 0o777),
        f"member 'link' is a symlink; {NO_LINKS}",
    ),
    (
        zip_info("pipe", stat.S_IFIFO | 0o644),
        "member 'pipe' is a fifo; an upload may hold only files and folders",
    ),
    (
        zip_info("dev", stat.S_IFCHR | 0o644),
        "member 'dev' is a device; an upload may hold only files and folders",
    ),
    (("../x", b""), "member '../x' leaves the folder"),
    (("/tmp/x", b""), "member '/tmp/x' is an absolute path"),
    (("bot.py", b""), "member 'bot.py' appears twice"),
]


@pytest.mark.parametrize(("member", "reason"), HOSTILE_ZIP, ids=[r[:30] for _, r in HOSTILE_ZIP])
def test_a_hostile_zip_member_is_refused(
    tmp_path: Path, into: Path, member: zipfile.ZipInfo | tuple[str, bytes], reason: str
) -> None:
    data = zip_of([*tiny_bot(), member])
    assert refused(tmp_path, into, data, "bot.zip") == f"archive refused: {reason}"


def test_a_nul_in_a_zip_name_is_refused(tmp_path: Path, into: Path) -> None:
    """zipfile cuts a name at its NUL (and writes it so): the bytes are what count."""
    entries = [
        (name, data, zipfile.ZIP_STORED, zlib.crc32(data), len(data)) for name, data in tiny_bot()
    ]
    data = raw_zip([*entries, ("a\0b", b"", 0, 0, 0)])
    message = refused(tmp_path, into, data, "bot.zip")
    assert message == "archive refused: member 'a\\x00b' has a NUL character in its name"


def test_bzip2_members_are_refused(tmp_path: Path, into: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as archive:
        for name, data in tiny_bot():
            archive.writestr(name, data)
    message = refused(tmp_path, into, buffer.getvalue(), "bot.zip")
    assert message.startswith("archive refused: member 'bot.toml' uses compression method 12")


@pytest.mark.parametrize("cut", [0.5, 0.9, -4])
def test_a_truncated_tar_gz_is_refused(tmp_path: Path, into: Path, cut: float) -> None:
    """Cut mid-member, near the end, and in the gzip trailer (the tar itself complete)."""
    data = pack_bot(SAMPLE)
    end = int(len(data) * cut) if cut > 0 else len(data) + int(cut)
    message = refused(tmp_path, into, data[:end], "bot.tar.gz")
    assert message.startswith("archive refused: 'bot.tar.gz' is truncated or corrupt (")


def test_a_truncated_zip_is_refused(tmp_path: Path, into: Path) -> None:
    data = zip_of(tiny_bot())
    message = refused(tmp_path, into, data[: len(data) - 30], "bot.zip")
    assert message == (
        "archive refused: 'bot.zip' is truncated or corrupt (File is not a zip file)"
    )


def test_a_zip_member_with_a_wrong_crc_is_refused(tmp_path: Path, into: Path) -> None:
    data = bytearray(zip_of([*tiny_bot(), ("data", b"x" * 1000)]))
    at = data.find(b"data") + 4
    data[at + 2] ^= 0xFF
    message = refused(tmp_path, into, bytes(data), "bot.zip")
    assert message.startswith("archive refused: 'bot.zip' is truncated or corrupt (")


def test_a_tar_ending_at_a_damaged_header_is_refused(tmp_path: Path, into: Path) -> None:
    """tarfile stops silently at a header whose checksum fails; the upload is refused."""
    good = gzip.decompress(tar_gz(tiny_bot()))
    end = good.rfind(BOT) + 512
    damaged = good[:end] + b"garbage".ljust(512, b"!") + good[end:]
    message = refused(tmp_path, into, gzip.compress(damaged), "bot.tar.gz")
    assert message == "archive refused: its tar stream has a damaged header (a corrupt archive)"


def test_a_vast_pax_header_is_refused(tmp_path: Path, into: Path) -> None:
    info = tarfile.TarInfo("bot.py")
    info.pax_headers = {"comment": "x" * (2 * MIB)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info)
    message = refused(tmp_path, into, buffer.getvalue(), "bot.tar.gz")
    assert message == "archive refused: it has a tar header larger than 1 MB"


NEITHER = [
    (
        "bot.zip",
        b"Rar!\x1a\x07\x00" + bytes(57),
        "upload refused: 'bot.zip' is named like a .zip but holds neither a gzip nor a zip archive",
    ),
    (
        "bot.tar.gz",
        b"\x7fELF" + bytes(60),
        "upload refused: 'bot.tar.gz' is named like a .tar.gz but holds neither a gzip nor a zip archive",
    ),
    (
        "bot.zip",
        gzip.compress(b"x"),
        "upload refused: 'bot.zip' is named like a .zip but holds gzip data",
    ),
    (
        "bot.exe",
        b"MZ",
        "upload refused: 'bot.exe' is neither a .py file nor a .tar.gz or .zip archive of a bot folder",
    ),
    (
        "bot.py",
        b"PK\x03\x04rest",
        "upload refused: 'bot.py' is named like Python source but holds a zip archive; name it .zip",
    ),
    (
        "bot.py",
        b"\x7fELF\0\0\0",
        "upload refused: 'bot.py' holds NUL bytes: it is not Python source",
    ),
    (
        "bot.py",
        b"print('\xff')\n",
        "upload refused: 'bot.py' is not Python source: not text in UTF-8 (or the encoding it declares)",
    ),
]


@pytest.mark.parametrize(
    ("filename", "data", "reason"), NEITHER, ids=[r[16:50] for *_, r in NEITHER]
)
def test_an_upload_that_is_neither_is_refused(
    tmp_path: Path, into: Path, filename: str, data: bytes, reason: str
) -> None:
    assert refused(tmp_path, into, data, filename) == reason


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_without_bot_toml_is_refused(tmp_path: Path, into: Path, kind: str) -> None:
    members = [("bot.py", BOT), ("README", b"")]
    data = zip_of(members) if kind == "zip" else tar_gz(members)
    assert refused(tmp_path, into, data, f"bot.{kind}") == (
        "archive refused: it has no bot.toml at its top; add one with at least a command, "
        'e.g. command = "python3 bot.py"'
    )


def test_a_single_folder_without_bot_toml_is_refused(tmp_path: Path, into: Path) -> None:
    data = tar_gz([("mine/bot.py", BOT)])
    assert refused(tmp_path, into, data, "bot.tar.gz").startswith(
        "archive refused: its folder 'mine' has no bot.toml"
    )


def test_two_top_level_folders_are_refused(tmp_path: Path, into: Path) -> None:
    data = tar_gz([*tiny_bot("one/"), *tiny_bot("two/")])
    assert refused(tmp_path, into, data, "bot.tar.gz") == (
        "archive refused: it has 2 top-level folders ('one', 'two') and no bot.toml beside "
        "them; put the bot's files at the top of the archive or in one folder"
    )


def test_an_empty_archive_is_refused(tmp_path: Path, into: Path) -> None:
    assert refused(tmp_path, into, zip_of([]), "bot.zip") == "archive refused: it is empty"


# --------------------------------------------------------------------------- good uploads


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
@pytest.mark.parametrize("prefix", ["", "./", "Fox/"])
def test_an_archive_unpacks_to_a_bot_the_referee_reads(
    tmp_path: Path, into: Path, kind: str, prefix: str
) -> None:
    """At the top, as ``tar -C dir .`` writes it, or in one folder: the same bot."""
    _, files = read_bot(SAMPLE)
    members = [(prefix + file.path, file.data) for file in files]
    data = zip_of(members) if kind == "zip" else tar_gz(members)
    folder = unpack_upload(upload(tmp_path, data), f"Quick Fox.{kind}", into)
    assert folder == into / "quick-fox" / prefix.strip("./")
    spec, unpacked = read_bot(folder)
    assert spec.name == "montecarlo"
    assert bot_sha256(unpacked) == bot_sha256(files)


def test_macos_resource_forks_are_left_out(tmp_path: Path, into: Path) -> None:
    """Finder's zip puts a __MACOSX folder beside the one zipped: not a second folder."""
    data = zip_of([*tiny_bot("Fox/"), ("__MACOSX/Fox/._bot.py", b"\0\5\x16\7")])
    folder = unpack_upload(upload(tmp_path, data), "Fox.zip", into)
    assert folder == into / "Fox" / "Fox"
    assert sorted(path.name for path in (into / "Fox").iterdir()) == ["Fox"]


def test_modes_are_normalised(tmp_path: Path, into: Path) -> None:
    members = []
    for name, mode in (("run", 0o700), ("data", 0o600), ("setuid", 0o4711)):
        info = tarfile.TarInfo(name)
        info.mode = mode
        members.append(info)
    folder = unpack_upload(upload(tmp_path, tar_gz([*tiny_bot(), *members])), "m.tgz", into)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in folder.iterdir()}
    assert modes == {
        "run": 0o755,
        "data": 0o644,
        "setuid": 0o755,
        "bot.py": 0o644,
        "bot.toml": 0o644,
    }


def test_a_python_file_is_copied_under_a_safe_name(tmp_path: Path, into: Path) -> None:
    source = b"# -*- coding: latin-1 -*-\nprint('\xe9')\n"
    path = unpack_upload(upload(tmp_path, source), "C:\\Users\\me\\My Bot!.py", into)
    assert path == into / "my-bot.py"
    assert path.read_bytes() == source
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    spec, files = read_bot(path)
    assert (spec.name, files[0].data) == ("my-bot", source)


# --------------------------------------------------------------------------- packing


def test_pack_bot_is_deterministic(tmp_path: Path) -> None:
    """Twice, after touching every mtime, and from a copy elsewhere: the same bytes."""
    first = pack_bot(SAMPLE)
    assert pack_bot(SAMPLE) == first
    copy = tmp_path / "elsewhere" / "montecarlo"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in copy.iterdir():
        os.utime(path, (1_000_000, 1_000_000))
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "bot.cpython-311.pyc").write_bytes(b"junk")
    assert pack_bot(copy) == first
    assert first[3] == 0 and first[4:8] == bytes(4)  # gzip: no file name, mtime 0
    with tarfile.open(fileobj=io.BytesIO(first)) as archive:
        members = archive.getmembers()
    assert [member.name for member in members] == sorted(
        path.name for path in SAMPLE.iterdir() if path.is_file()
    )
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in members} == {
        (0, 0, 0, "", "", 0o644)
    }


def test_pack_then_unpack_is_the_same_bot(tmp_path: Path, into: Path) -> None:
    data = pack_bot(SAMPLE)
    folder = unpack_upload(upload(tmp_path, data), upload_filename(SAMPLE), into)
    assert folder == into / "montecarlo"
    assert bot_sha256(read_bot(folder)[1]) == bot_sha256(read_bot(SAMPLE)[1])


def test_pack_bot_keeps_a_python_file_as_it_is(tmp_path: Path) -> None:
    script = tmp_path / "solo.py"
    script.write_bytes(BOT)
    assert pack_bot(script) == BOT
    assert upload_filename(script) == "solo.py"


def test_pack_bot_refuses_what_the_referee_would(tmp_path: Path) -> None:
    folder = tmp_path / "linked"
    folder.mkdir()
    (folder / "bot.toml").write_bytes(MANIFEST)
    (folder / "bot.py").symlink_to("/etc/passwd")
    with pytest.raises(UsageError, match="symlink"):
        pack_bot(folder)
    runnable = tmp_path / "runnable"
    runnable.write_bytes(b"#!/bin/sh\n")
    runnable.chmod(0o755)
    with pytest.raises(UsageError, match=r"a server takes a \.py file or a folder"):
        pack_bot(runnable)
