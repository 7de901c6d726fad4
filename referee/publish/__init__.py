"""Publishing a tournament: the leaderboard as a terminal table, Markdown, JSON or CSV, and
the static site.

:func:`referee.publish.source.load_results` reads a snapshot of the results store and
:func:`~referee.publish.source.rank` makes its leaderboard (with the tournament's settings,
:mod:`referee.publish.settings`); :func:`referee.publish.site.publish_site` writes the site
(Jinja2, the ``site`` extra, imported only there). Bot names are untrusted display text;
every renderer escapes them for its medium.
"""

from referee.publish.leaderboard import (
    FORMATS,
    DealCommitment,
    Leaderboard,
    LeaderboardEntry,
    PlayoffSummary,
    build_leaderboard,
    render,
    to_csv,
    to_json,
    to_markdown,
    to_rich_table,
)
from referee.publish.settings import BotRecord, TournamentSettings

__all__ = [
    "FORMATS",
    "BotRecord",
    "DealCommitment",
    "Leaderboard",
    "LeaderboardEntry",
    "PlayoffSummary",
    "TournamentSettings",
    "build_leaderboard",
    "render",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich_table",
]
