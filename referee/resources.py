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

Relative paths between the folders hold in both layouts: the demo tournament's
``../sample_bots/heuristic`` is a sibling folder either way.

A missing file here is the installation's fault, not the user's: the error says to
reinstall (:class:`~referee.errors.InfrastructureError`).
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Literal

from referee.errors import InfrastructureError, UsageError
from referee.installation import installation

__all__ = [
    "asset_root",
    "bot_kit",
    "confusables_table",
    "demo_tournament",
    "dockerfile",
    "sample_bot",
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


def bot_kit(lang: Literal["python", "javascript"]) -> Path:
    """The bot kit a new bot copies: ``botkit.py`` or ``botkit.js``."""
    return _asset("protocol", "kits", lang, "botkit.py" if lang == "python" else "botkit.js")


def spec() -> Path:
    """``protocol/SPEC.md``: the protocol explained to bot authors."""
    return _asset("protocol", "SPEC.md")


def demo_tournament() -> Path:
    """``tournaments/demo.toml``: the sample bots' tournament (its bot paths are relative)."""
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
