"""Publishing a tournament: the leaderboard as a terminal table, Markdown, JSON or CSV.

Bot names are untrusted display text; every renderer escapes them for its medium.
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

__all__ = [
    "FORMATS",
    "DealCommitment",
    "Leaderboard",
    "LeaderboardEntry",
    "PlayoffSummary",
    "build_leaderboard",
    "render",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich_table",
]
