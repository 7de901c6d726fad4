"""The ``referee`` command line: one module per command group, registered on :data:`main`."""

from referee.cli import (  # noqa: F401  (they register)
    authors,
    bots,
    compare,
    league,
    play,
    protocol,
    publish,
    sandboxes,
    serve,
    tournaments,
)
from referee.cli.app import main
from referee.interrupts import children_skip_main

__all__ = ["main", "run"]


def run() -> None:
    """The ``referee`` command: its console script's entry point (:data:`main`, with the
    processes it spawns spared from running the script again:
    :func:`~referee.interrupts.children_skip_main`)."""
    children_skip_main()
    main()
