"""``referee authors add|list|revoke|rotate|log``: the accounts of a competition server.

The state is the server's own database in the league's results folder
(:mod:`referee.server.database`); each change is written to its audit log with the login
of the shell that made it. ``add`` and ``rotate`` print the new token once, alone on
stdout (what they say about it goes to stderr), so ``TOKEN=$(referee authors add ...)``
holds the token and nothing else. See docs/server.md.
"""

from __future__ import annotations

import datetime
import json
import os
import pwd
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from referee.cli.app import friendly, main, say
from referee.cli.tables import print_table
from referee.server.authors import Author, AuthorBook, NewToken, Role
from referee.server.database import DATABASE
from referee.text import printable
from referee.tournament.file import load_tournament

_FILE = click.argument("file", type=click.Path(dir_okay=False, path_type=Path))


@main.group()
def authors() -> None:
    """Add, list, revoke and rotate the authors of a competition server, and read its audit
    log (see docs/server.md). FILE is the league (or tournament) file the server runs: the
    accounts live in its results folder, beside its results."""


def _results_dir(file: Path) -> Path:
    return load_tournament(file).results_dir


def _actor() -> str:
    """Who acts from this shell, for the audit log: the login of the effective uid."""
    uid = os.geteuid()
    try:
        return f"shell:{pwd.getpwuid(uid).pw_name}"
    except KeyError:  # a uid without a passwd entry (a container)
        return f"shell:uid {uid}"


def _when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _hand_over(new: NewToken, what: str) -> None:
    """Say what was made on stderr, then print the token, alone, on stdout's last line."""
    author = new.author
    say(
        f"{what} {author.role} {author.name} (token id {author.token_id}); its token is the "
        "line on stdout, shown this once: give it to them privately, it cannot be shown again"
    )
    click.echo(new.token)


@authors.command("add")
@_FILE
@click.argument("name")
@click.option("--email", default=None, help="The author's e-mail address (kept, shown in list).")
@click.option(
    "--organiser",
    is_flag=True,
    help="An organiser's account (the server's organiser pages), not one that submits bots.",
)
@friendly
def add(file: Path, name: str, email: str | None, organiser: bool) -> None:
    """Add the author NAME to the server of FILE and print their token, once, on stdout."""
    with AuthorBook(_results_dir(file)) as book:
        role: Role = "organiser" if organiser else "author"
        new = book.add(name, actor=_actor(), email=email, role=role)
    _hand_over(new, "added")


@authors.command("rotate")
@_FILE
@click.argument("name")
@friendly
def rotate(file: Path, name: str) -> None:
    """Give NAME a new token, printed once on stdout; their old one fails at once."""
    with AuthorBook(_results_dir(file)) as book:
        new = book.rotate(name, actor=_actor())
    _hand_over(new, "new token for")


@authors.command("revoke")
@_FILE
@click.argument("name")
@friendly
def revoke(file: Path, name: str) -> None:
    """End NAME's account and token for good (the name is never given again)."""
    with AuthorBook(_results_dir(file)) as book:
        author = book.revoke(name, actor=_actor())
    click.echo(printable(f"revoked: {author.name}; their token fails from now on"))


def _book_or_none(file: Path) -> AuthorBook | None:
    """The server database of FILE, or ``None`` when none was made yet (nothing is made)."""
    folder = _results_dir(file)
    if not (folder / DATABASE).exists():
        return None
    return AuthorBook(folder)


def _row(author: Author) -> dict[str, object]:
    return {
        "name": author.name,
        "role": author.role,
        "email": author.email,
        "created": _when(author.created),
        "state": "active" if author.active else f"revoked {_when(author.revoked or 0)}",
        "token_id": author.token_id,
    }


@authors.command("list")
@_FILE
@click.option("--json", "as_json", is_flag=True, help="One JSON array, for scripts.")
@friendly
def list_authors(file: Path, as_json: bool) -> None:
    """List the accounts of the server of FILE (revoked ones too), oldest first."""
    book = _book_or_none(file)
    everyone = [] if book is None else book.authors()
    if book is not None:
        book.close()
    rows = [_row(author) for author in everyone]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        say(f"no authors yet for {file} (add one: referee authors add {file} NAME)")
        return
    table = Table("name", "role", "e-mail", "added", "state", "token id")
    for row in rows:
        table.add_row(*(Text(printable(str(value or ""))) for value in row.values()))
    print_table(table, console=Console(highlight=False))


@authors.command("log")
@_FILE
@click.option("--json", "as_json", is_flag=True, help="One JSON array, for scripts.")
@friendly
def log(file: Path, as_json: bool) -> None:
    """The audit log of the server of FILE: when, who, what, of whom, oldest first."""
    book = _book_or_none(file)
    entries = [] if book is None else book.log()
    if book is not None:
        book.close()
    if as_json:
        rows = [
            {"at": _when(e.at), "actor": e.actor, "action": e.action, "subject": e.subject}
            | {"detail": e.detail}
            for e in entries
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not entries:
        say(f"nothing in the audit log of {file} yet")
        return
    table = Table("when", "who", "what", "of whom", "detail")
    for e in entries:
        cells = (_when(e.at), e.actor, e.action, e.subject, e.detail)
        table.add_row(*(Text(printable(cell)) for cell in cells))
    print_table(table, console=Console(highlight=False))
