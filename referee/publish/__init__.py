"""Publishing a tournament: the leaderboard as a terminal table, Markdown, JSON or CSV, and
the static site.

:func:`referee.publish.source.load_results` reads a snapshot of the results store, its
standings come from :mod:`referee.ranking.standings`, and
:func:`~referee.publish.source.leaderboard` adds the tournament's settings
(:mod:`referee.publish.settings`) and what else no ranking decides;
:func:`referee.publish.site.publish_site` writes the site (Jinja2, the ``site`` extra,
imported only there). Bot names are untrusted display text;
every renderer escapes them for its medium.
"""

from referee.publish.leaderboard import (
    FORMATS,
    DealCommitment,
    Leaderboard,
    LeaderboardEntry,
    PlayoffSummary,
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
    "render",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich_table",
]
