"""TEMPORARY stub (not committed): replaced by the helper's module."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from referee.errors import Refused


@dataclass(frozen=True)
class ArchiveLimits:
    files: int = 2000
    depth: int = 16
    total_bytes: int = 64 << 20


def unpack_upload(data_path: Path, filename: str, into: Path, limits: ArchiveLimits) -> Path:
    if not filename.endswith(".py"):
        raise Refused("archive refused: stub")
    target = into / filename
    shutil.copyfile(data_path, target)
    return target


def pack_bot(bot: Path) -> tuple[str, bytes]:
    return bot.name, bot.read_bytes()
