"""Benchmarks (``make bench``): figures measured side by side in one run, printed as ratios."""

from __future__ import annotations

import compileall
import importlib.machinery
import sys
from pathlib import Path

import referee


def installed_bytecode() -> str:
    """Compile the referee's modules to bytecode, as ``pip install`` does; a line saying so.

    A wheel installed by pip has every module compiled; a checkout run with
    ``PYTHONDONTWRITEBYTECODE=1`` (as CI machines often are) compiles each from source at
    every import instead: about 25 ms more for each worker, ranking or bot-check process the
    referee starts (measured here: importing a worker 0.145 s against 0.170 s). The figures
    are for the tool as users run it, so the benchmarks compile first. Compiling never
    changes what runs, only how fast it is imported; up-to-date files are left alone.
    """
    package = Path(referee.__file__).parent
    compileall.compile_dir(package, quiet=1, workers=1)
    return f"bytecode: the referee's modules compiled in {package}, as an installed wheel has them"


def spawn_as_the_command() -> None:
    """Processes spawned from now on do not import this benchmark's module again, as those
    of the ``referee`` command do not run its script (:func:`referee.interrupts.children_skip_main`)
    and those of ``python -m bench`` do not run it: for ``python -m bench.x``, whose
    module each spawned worker would otherwise import (the coordinator with it)."""
    main = sys.modules.get("__main__")
    if main is not None:
        main.__spec__ = importlib.machinery.ModuleSpec("bench.__main__", None)
