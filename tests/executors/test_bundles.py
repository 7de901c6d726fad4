"""Bots as content-addressed bundles (referee.executors.bundles): the same files always
make the same archive, a worker unpacks only what it can trust, and fetches a bundle once."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from pathlib import Path

import pytest

from referee.errors import InfrastructureError
from referee.executors.bundles import BundleShelf, bundle_key, pack, unpack
from referee.sandbox import BotSpec, bot_sha256, load_bot, stage_bot
from referee.sandbox.staging import MAX_BOT_FILES


def _bot(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text('name = "b"\ncommand = "python3 main.py"\n')
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def _staged(
    tmp_path: Path, name: str, files: dict[str, bytes], executable: tuple[str, ...] = ()
) -> BotSpec:
    folder = _bot(tmp_path / name, files)
    for path in executable:
        (folder / path).chmod(0o755)
    return stage_bot(load_bot(folder), tmp_path / f"{name}-staged")


def test_the_same_files_make_the_same_archive_whatever_their_times(tmp_path: Path) -> None:
    files = {"main.py": b"print('hi')\n", "lib/util.py": b"X = 1\n"}
    first = _staged(tmp_path, "one", files)
    second = _staged(tmp_path, "two", dict(reversed(list(files.items()))))
    for path in (tmp_path / "two-staged").rglob("*.py"):
        os.utime(path, (1, 1))
    a, b = pack(first), pack(second)
    assert a.data == b.data and a.name == b.name == hashlib.sha256(a.data).hexdigest()
    assert a.bot_sha256 == first.sha256
    changed = pack(_staged(tmp_path, "three", {**files, "main.py": b"print('v2')\n"}))
    assert changed.name != a.name


def test_an_archive_unpacks_to_the_files_it_was_made_of(tmp_path: Path) -> None:
    files = {"main.py": b"print('hi')\n", "run.sh": b"#!/bin/sh\n", "lib/x.py": b""}
    staged = _staged(tmp_path, "one", files, executable=("run.sh",))
    unpacked = unpack(pack(staged).data)
    assert [(f.path, f.data, f.executable) for f in unpacked] == [
        ("bot.toml", (tmp_path / "one" / "bot.toml").read_bytes(), False),
        ("lib/x.py", b"", False),
        ("main.py", b"print('hi')\n", False),
        ("run.sh", b"#!/bin/sh\n", True),
    ]
    assert bot_sha256(unpacked) == staged.sha256


def _archive(*members: tarfile.TarInfo, data: bytes = b"x") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for info in members:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 1) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size if kind == tarfile.REGTYPE else 0
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        info.linkname = "/etc/shadow"
    return info


@pytest.mark.parametrize(
    ("member", "says"),
    [
        (_member("/etc/passwd"), "not a relative path"),
        (_member("../escape.py"), "not a relative path"),
        (_member("a/../../b.py"), "not a relative path"),
        (_member("link", tarfile.SYMTYPE), "not a regular file"),
        (_member("hard", tarfile.LNKTYPE), "not a regular file"),
        (_member("dev", tarfile.CHRTYPE), "not a regular file"),
        (_member("fifo", tarfile.FIFOTYPE), "not a regular file"),
    ],
)
def test_a_hostile_archive_is_refused(member: tarfile.TarInfo, says: str) -> None:
    with pytest.raises(InfrastructureError, match=says):
        unpack(_archive(member))


def test_too_many_or_too_large_files_are_refused() -> None:
    with pytest.raises(InfrastructureError, match="more than 10 bytes"):
        unpack(
            _archive(_member("a.py", size=6), _member("b.py", size=6), data=b"123456"), max_bytes=10
        )
    many = [_member(f"f{i}") for i in range(MAX_BOT_FILES + 1)]
    with pytest.raises(InfrastructureError, match="more than"):
        unpack(_archive(*many))
    with pytest.raises(InfrastructureError, match="not a readable archive"):
        unpack(b"not a tar archive at all" * 40)


def test_a_shelf_fetches_a_bundle_once_and_checks_what_arrives(tmp_path: Path) -> None:
    staged = _staged(tmp_path, "one", {"main.py": b"print('hi')\n"})
    bundle = pack(staged)
    shelf = BundleShelf(tmp_path / "shelf")
    asked: list[str] = []

    def fetch(key: str) -> bytes:
        asked.append(key)
        return bundle.data

    threads = [
        threading.Thread(target=shelf.staged, args=(staged, bundle.name, fetch)) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    here = shelf.staged(staged, bundle.name, fetch)
    assert asked == [bundle_key(bundle.name)], "fetched once, however many tasks need it"
    assert here.sha256 == staged.sha256 and Path(here.folder).is_relative_to(tmp_path / "shelf")
    assert (Path(here.folder) / "main.py").read_bytes() == b"print('hi')\n"
    assert shelf.held() == [bundle.name] and shelf.fetched == {bundle.name: 1}


def test_a_bundle_that_arrives_changed_is_refused_and_not_kept(tmp_path: Path) -> None:
    staged = _staged(tmp_path, "one", {"main.py": b"print('hi')\n"})
    other = _staged(tmp_path, "two", {"main.py": b"print('evil')\n"})
    bundle, evil = pack(staged), pack(other)
    shelf = BundleShelf(tmp_path / "shelf")
    with pytest.raises(InfrastructureError, match="arrived changed"):
        shelf.staged(staged, bundle.name, lambda key: evil.data)
    # The right name for bytes of another bot: its files are not the staged bot's.
    with pytest.raises(InfrastructureError, match="does not hold the bot"):
        shelf.staged(staged, evil.name, lambda key: evil.data)
    assert shelf.held() == []
