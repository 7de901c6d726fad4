"""The files the commands ship with, found the same way from a checkout and from a wheel.

The sample bots, the bot kits, the JSON Schemas of the protocol, the demo tournament and the
bot image's Dockerfile live in the product's top-level folders (``sample_bots/``,
``protocol/``, ``tournaments/``, ``sandbox/``), their only copy in the repository. A wheel
carries them inside the package, under ``referee/assets/`` with the same layout below it:
``pyproject.toml`` maps each folder there when the wheel is built
(``[tool.setuptools.package-dir]``). A source checkout, an editable install included, has
them beside the package instead. This module is the one place that knows both: it starts
from the package's own files (:func:`importlib.resources.files`), never from the current
directory, so ``referee`` works the same from a clone, from ``pip install`` and from
``pipx``. ``referee/data/confusables.tsv`` is package data in both cases.

Relative paths between the folders hold in both layouts. Users name a sample bot
``@heuristic`` (:func:`sample_by_name`), on the command line and in tournament files (the
demo tournament's bots are named so): a path into ``sample_bots/`` works only in a checkout.

A missing file here is the installation's fault, not the user's: the error says to
reinstall (:class:`~referee.errors.InfrastructureError`).
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path
from typing import Literal

from referee.errors import InfrastructureError, UsageError
from referee.installation import installation
from referee.text import printable

__all__ = [
    "SAMPLE_PREFIX",
    "asset_root",
    "bot_kit",
    "confusables_table",
    "demo_tournament",
    "dockerfile",
    "sample_bot",
    "sample_bot_names",
    "sample_by_name",
    "schema_names",
    "schema_text",
    "spec",
]


def _reinstall() -> str:
    """How to put the referee back the way it was installed (:mod:`referee.installation`)."""
    return f"reinstall the referee: {installation().reinstall()}"


def _incomplete(path: Path) -> InfrastructureError:
    return InfrastructureError(f"{path} is missing: the installation is incomplete; {_reinstall()}")


def _package() -> Path:
    """The ``referee`` package's folder on disk."""
    package = files("referee")
    if not isinstance(package, Path):  # e.g. imported from a zip archive
        raise InfrastructureError(
            f"the referee is installed as {package}, not as files on disk; {_reinstall()}"
        )
    return package


def asset_root(package: Path | None = None) -> Path:
    """The folder holding ``sample_bots/``, ``protocol/``, ``tournaments/`` and ``sandbox/``.

    ``referee/assets`` in an installed wheel; the checkout's root beside the package
    otherwise (recognised by its ``pyproject.toml``). ``package`` is the ``referee``
    folder to look from (default: this one's; a test's stand-in).
    """
    package = package if package is not None else _package()
    installed = package / "assets"
    if installed.is_dir():
        return installed
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "sample_bots").is_dir():
        return checkout
    raise _incomplete(installed)


def _asset(*parts: str, package: Path | None = None) -> Path:
    path = asset_root(package).joinpath(*parts)
    if not path.exists():
        raise _incomplete(path)
    return path


def sample_bot(name: str, *, package: Path | None = None) -> Path:
    """The folder of the sample bot ``name`` (``heuristic``, ``lowest``, ``random`` …);
    ``package`` as for :func:`asset_root`."""
    return _asset("sample_bots", name, package=package)


SAMPLE_PREFIX = "@"
"""What marks a sample bot's name where a bot's path goes: ``@heuristic``."""


def sample_bot_names(*, package: Path | None = None) -> list[str]:
    """The sample bots shipped with the referee, sorted: each folder of ``sample_bots/``
    that holds a ``bot.toml``."""
    folder = _asset("sample_bots", package=package)
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if entry.is_dir() and not entry.is_symlink() and (entry / "bot.toml").is_file()
    )


def sample_by_name(given: str, *, package: Path | None = None) -> Path | None:
    """The sample bot's folder when ``given`` names one as ``@NAME``; ``None`` when
    ``given`` does not start with ``@`` (it is a path then).

    ``@NAME`` works the same from a checkout, an installed wheel and any current folder,
    which a path into the checkout's ``sample_bots/`` does not. An unknown name is a
    :class:`~referee.errors.UsageError` listing the samples; it is only ever looked up in
    that list, so ``@../x`` reaches nothing. A real folder whose name starts with ``@`` is
    named with a path: ``./@mine``.
    """
    if not given.startswith(SAMPLE_PREFIX):
        return None
    name = given[len(SAMPLE_PREFIX) :]
    names = sample_bot_names(package=package)
    if name not in names:
        listed = ", ".join(SAMPLE_PREFIX + n for n in names)
        local = f"; for the path {printable(given)} here, write ./{printable(given)}"
        raise UsageError(
            f"no sample bot is called {printable(given)} (the samples: {listed})"
            + (local if os.path.lexists(given) else "")
        )
    return sample_bot(name, package=package)


def bot_kit(lang: Literal["python", "javascript"]) -> Path:
    """The bot kit a new bot copies: ``botkit.py`` or ``botkit.js``."""
    return _asset("protocol", "kits", lang, "botkit.py" if lang == "python" else "botkit.js")


KIT_LANGUAGES = ("python", "javascript", "c", "cpp", "rust", "java")
"""The languages of the starter kits (``protocol/kits/<lang>/``)."""


def kit_folder(lang: str) -> Path:
    """``protocol/kits/<lang>/``: the kit a new bot in ``lang`` copies (a compiled one's
    folder holds its library, a bot to edit, its ``Makefile`` and a ``bot.toml`` template)."""
    if lang not in KIT_LANGUAGES:
        raise ValueError(f"no kit for {lang!r}")
    return _asset("protocol", "kits", lang)


def spec() -> Path:
    """``protocol/SPEC.md``: the protocol explained to bot authors."""
    return _asset("protocol", "SPEC.md")


def demo_tournament() -> Path:
    """``tournaments/demo.toml``: the sample bots' tournament (its bots named ``@NAME``)."""
    return _asset("tournaments", "demo.toml")


def dockerfile() -> Path:
    """The Dockerfile of the bot image; its folder is the build context and holds nothing else."""
    return _asset("sandbox", "Dockerfile")


_DIRECTIONS = {"to_bot": "referee → bot", "from_bot": "bot → referee", "parts": "part of a message"}


def schema_names() -> dict[str, str]:
    """Every JSON Schema of ``protocol/schema/`` by name, with what it describes.

    ``{"hello": "referee → bot", …, "ready": "bot → referee", …, "rules": "part of a
    message", "index": …}``: in the order of ``index.json``, which comes last.
    """
    index = json.loads(_asset("protocol", "schema", "index.json").read_text(encoding="utf-8"))
    names = {
        name: description for key, description in _DIRECTIONS.items() for name in index.get(key, {})
    }
    names["index"] = "the list of them all"
    return names


def schema_text(name: str) -> str:
    """The JSON Schema ``name`` (one of :func:`schema_names`), as its file is written."""
    names = schema_names()
    if name not in names:
        raise UsageError(f"no schema is called {name!r}; the schemas: {', '.join(names)}")
    return _asset("protocol", "schema", f"{name}.json").read_text(encoding="utf-8")


def confusables_table() -> str:
    """``referee/data/confusables.tsv``, the look-alike table of :mod:`referee.names`."""
    return (_package() / "data" / "confusables.tsv").read_text(encoding="utf-8")
