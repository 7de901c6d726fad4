"""A comparison's tournament for in-process tests: two versions of one bot file and a field.

Shared by the comparison tests (``test_compare.py``, ``test_compare_spoils.py``,
``test_compare_statistic.py``): each writes its bots as ``first``-strategy files (OLD's with
a line of its own, so the two are two versions), then plays them with handlers of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from referee.sandbox import load_bot
from referee.specs import TimeControl
from referee.tournament.file import Tournament
from referee.tournament.quick import compare_tournament

from .conftest import write_bot


def compare_field(
    folder: Path,
    names: Sequence[str],
    *,
    max_rounds: int,
    max_deals: int,
    **options: Any,
) -> Tournament:
    """NEW and OLD (the first two of ``names``) against the rest, at tables of 3, in
    ``folder``; ``options`` go to :func:`compare_tournament` (``test=`` a ``[compare]``)."""
    folder.mkdir(exist_ok=True)
    paths = [write_bot(folder, name, "first") for name in names]
    paths[1].write_text(paths[1].read_text() + "# another version\n")
    bots = [load_bot(str(path)) for path in paths]
    return compare_tournament(
        bots[0],
        bots[1],
        bots[2:],
        [str(p) for p in paths],
        preset="arschloch",
        max_rounds=max_rounds,
        table_size=3,
        deals=max_deals,
        time_control=TimeControl(),
        backend="process",
        memory_mb=512,
        images=(),
        folder=folder,
        **options,
    )
