"""``referee publish``: a tournament's results as a static site, plus its leaderboard files."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from referee.cli.app import friendly, main, say
from referee.tournament.file import Tournament, load_tournament

__all__ = ["publish", "write_league_site", "write_site"]


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="The folder to write the site into: new, empty, or a site published before.",
)
@click.option(
    "--results",
    "results_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The results folder (default: NAME.results next to FILE).",
)
@click.option(
    "--no-reuse",
    is_flag=True,
    help="Make every match page and replay again, copying nothing from the site published "
    "in OUT before (by default, what is provably unchanged is copied).",
)
@friendly
def publish(file: Path, out: Path, results_dir: Path | None, no_reuse: bool) -> None:
    """Write the static site of the tournament FILE into the folder OUT.

    The site has the leaderboard (with the settings, the deal commitments, the rating
    history and the crosstable), a page per bot with its matches, head-to-head and every
    fault with the bot's stderr, the match list, and a replay viewer for every match; plus
    leaderboard.md, leaderboard.json and leaderboard.csv. It works opened from disk and
    served by any static server. It may run while the tournament is playing: it shows what
    is stored, and says so. Published again into the same OUT, the match pages and replays
    whose inputs are unchanged are copied from the site there instead of made again.
    """
    spec = load_tournament(file)
    if spec.file.format == "league":
        write_league_site(spec, out, results_dir)
        return
    write_site(spec, out, results_dir, reuse=not no_reuse)


def write_site(
    spec: Tournament, out: Path, results_dir: Path | None = None, *, reuse: bool = True
) -> Path:
    """Publish ``spec``'s stored results into ``out`` with a progress bar; returns index.html.
    ``reuse``: copy the unchanged match files of the site published there before."""
    from referee.publish.site import publish_site
    from referee.publish.source import load_results

    results = load_results(spec, results_dir)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with Progress(
        TextColumn("publishing"), BarColumn(), MofNCompleteColumn(), console=err, transient=True
    ) as progress:
        task = progress.add_task("publish", total=len(results.matches))
        report = publish_site(
            results,
            out,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
            reuse=reuse,
        )
    note = ""
    if report.withheld:
        note = f"; {report.withheld} replays held back until their deals are fully played"
    if report.missing:
        note += f"; {report.missing} logs missing or unreadable"
    if report.reused:
        note += (
            f"; {report.reused:,} match files copied from the site published before, "
            f"{len(report.rendered):,} made"
        )
    say(
        f"published {report.matches} matches ({report.replays} replays{note}) and "
        f"{report.bots} bots; leaderboard page {report.index_bytes / 1024:.0f} KiB, "
        f"site {report.total_bytes / 1024 / 1024:.1f} MiB"
    )
    index = report.index.resolve()
    click.echo(str(index))
    return index


def write_league_site(spec: Tournament, out: Path, results_dir: Path | None = None) -> Path:
    """Bring the league ``spec``'s site in ``out`` up to date (only what is new is
    rendered: :mod:`referee.publish.league_site`); returns its index.html."""
    from referee.publish.league_site import publish_league

    report = publish_league(spec, out, results_dir)
    first, last = report.batches
    if last > first:
        say(
            f"published batches {first} to {last - 1}: {report.matches} new matches, "
            f"{report.bots} bot pages rewritten, {report.written / 1024:.0f} KiB written"
        )
    else:
        say(
            f"nothing new to publish: no batch settled since the site was last published; "
            f"{report.bots} bot pages rewritten"
        )
    click.echo(str(report.index.resolve()))
    return report.index
