"""Verifying a published site, whole: the audit of its data, then its pages.

:mod:`referee.verify.audit` checks what the data says (the deals, the schedule, every log,
the chain, the leaderboard); :mod:`referee.verify.pages` renders every page again from that
verified data and compares it. This module runs the two in that order, so the audit knows
nothing of the pages (the pages check sits above it, and this module above both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from referee.errors import UsageError
from referee.publish.evidence import EVIDENCE
from referee.tournament.model import Plan
from referee.tournament.store import DATABASE
from referee.verify.audit import (
    Published,
    PublishedSite,
    Verification,
    audit_site,
    is_site,
    verify_results,
)
from referee.verify.pages import check_pages

__all__ = ["verify_folder", "verify_site"]


def verify_site(
    site_dir: Path,
    *,
    plan: Plan | None = None,
    commitments: Sequence[str] = (),
    beacons: Sequence[str] = (),
    heads: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Verification:
    """Check the tournament a site published in ``site_dir`` shows (module docstring):
    everything :func:`verify_results` checks, from the site's own files, and its
    leaderboard re-derived from the logs. Raises ``UsageError`` for a folder that is no
    site, or whose verification files are not what ``referee publish`` writes."""
    given = Published(plan, tuple(commitments), tuple(beacons), tuple(heads))
    with PublishedSite(site_dir) as site:
        found, rounds = audit_site(site, given, progress)
        check_pages(site, found, rounds)
        return found


def verify_folder(
    folder: Path,
    *,
    plan: Plan | None = None,
    commitments: Sequence[str] = (),
    beacons: Sequence[str] = (),
    heads: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Verification:
    """:func:`verify_results` or :func:`verify_site`, whichever ``folder`` is."""
    check: Callable[..., Verification]
    if (folder / DATABASE).is_file():
        check = verify_results
    elif is_site(folder):
        check = verify_site
    else:
        raise UsageError(
            f"{folder} is neither a tournament's results folder ({DATABASE} is missing) nor a "
            f"published site (it has no {EVIDENCE}/ folder): name one of them, or the .toml file"
        )
    return check(
        folder,
        plan=plan,
        commitments=commitments,
        beacons=beacons,
        heads=heads,
        progress=progress,
    )
