"""The ``referee`` command line: one module per command group, registered on :data:`main`."""

from referee.cli import bots, play, publish, sandboxes, tournaments  # noqa: F401  (they register)
from referee.cli.app import main

__all__ = ["main"]
