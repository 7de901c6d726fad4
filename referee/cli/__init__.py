"""The ``referee`` command line: one module per command group, registered on :data:`main`."""

from referee.cli import (  # noqa: F401  (they register)
    bots,
    compare,
    league,
    play,
    protocol,
    publish,
    sandboxes,
    tournaments,
)
from referee.cli.app import main

__all__ = ["main"]
