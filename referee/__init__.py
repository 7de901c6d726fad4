"""Tournament referee for Arschloch / Trou du cul / Président card-game bots."""

from __future__ import annotations

DISTRIBUTION = "arschloch-referee"
"""The name the referee is installed under (``pip install arschloch-referee``)."""


def __getattr__(name: str) -> str:
    """``referee.__version__``: the installed version, from the package's metadata.

    ``pyproject.toml`` is the version's one source. It is looked up on first use, not on
    import: reading the metadata costs every command and every worker tens of milliseconds.
    """
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # imported from a checkout that was never installed
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
