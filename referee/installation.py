"""How this referee was installed, and the command that adds a package to it there.

The referee is on no package index: it is installed from a clone (``make``, an editable
install into the clone's ``.venv``), from the wheel with ``pipx``, or from the wheel into a
virtual environment with ``pip``. A hint such as "pip install 'arschloch-referee[docker]'"
works in none of them (the name is on no index; pipx changes its environments with
``pipx inject``; a clone's ``.venv`` has its own ``pip``), so every "install X" hint the
referee prints comes from :func:`install_hint`, which names the command that works for the
way it was installed:

======== ================================================== ====================================
way      how it is recognised                               the hint for the ``docker`` package
======== ================================================== ====================================
pipx     ``pipx_metadata.json`` in ``sys.prefix`` (pipx     ``pipx inject arschloch-referee
         writes it into every environment it makes), or a   docker``
         prefix ``…/pipx/venvs/<name>``
checkout the package's folder sits in a clone (beside it:   ``/clone/.venv/bin/pip install -e
         ``pyproject.toml`` naming the project), which is   '/clone[docker]'`` (the extra, from
         what an editable install runs                      the clone's own ``pyproject.toml``)
venv     ``sys.prefix`` is not ``sys.base_prefix``          ``/env/bin/python -m pip install
                                                            docker`` (``pip --python …`` when
                                                            the environment has no pip)
system   none of these                                      ``/usr/bin/python3 -m pip install
                                                            docker``
======== ================================================== ====================================

The interpreter is named by ``sys.executable``, so the command installs into the very
environment that runs the referee, whatever ``pip`` comes first on ``PATH``. Nothing here is
cached: :func:`installation` looks again each time it is called (only when a hint is
printed).
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from referee import DISTRIBUTION

__all__ = ["InstallKind", "Installation", "install_hint", "installation"]

InstallKind = Literal["pipx", "checkout", "venv", "system"]

_PIPX_MARKER = "pipx_metadata.json"


@dataclass(frozen=True)
class Installation:
    """Where the running referee lives: ``kind`` (see the module), the interpreter, the
    clone (for a checkout) and whether that interpreter has ``pip``."""

    kind: InstallKind
    python: str
    checkout: Path | None = None
    has_pip: bool = True

    def install(self, package: str, extra: str | None = None) -> str:
        """The command that adds ``package`` (a requirement such as ``docker``, or several
        separated by spaces) to this installation; in a checkout, the project's ``extra``
        that holds it, when named."""
        packages = " ".join(shlex.quote(requirement) for requirement in package.split())
        if self.kind == "pipx":
            return f"pipx inject {DISTRIBUTION} {packages}"
        if self.kind == "checkout" and self.checkout is not None and extra:
            return f"{self._pip()} install -e {shlex.quote(f'{self.checkout}[{extra}]')}"
        return f"{self._pip()} install {packages}"

    def reinstall(self) -> str:
        """The command that installs the referee itself again, the same way."""
        if self.kind == "pipx":
            return f"pipx reinstall {DISTRIBUTION}"
        if self.kind == "checkout" and self.checkout is not None:
            return f"{self._pip()} install -e {shlex.quote(str(self.checkout))}"
        wheel = "arschloch_referee-*.whl"
        return f"{self._pip()} install --force-reinstall {wheel} (the wheel it came from)"

    def _pip(self) -> str:
        python = shlex.quote(self.python)
        if not self.has_pip:
            return f"pip --python {python}"
        if self.kind == "checkout":
            pip = Path(self.python).with_name("pip")
            if pip.is_file():
                return shlex.quote(str(pip))
        return f"{python} -m pip"


def installation(
    *,
    prefix: str | None = None,
    base_prefix: str | None = None,
    executable: str | None = None,
    package_dir: Path | None = None,
    has_pip: bool | None = None,
) -> Installation:
    """How the running referee was installed (every argument defaults to this process's:
    ``sys.prefix``, ``sys.base_prefix``, ``sys.executable``, the ``referee`` package's
    folder, whether ``pip`` can be imported); the tests pass their own."""
    prefix = sys.prefix if prefix is None else prefix
    base_prefix = sys.base_prefix if base_prefix is None else base_prefix
    python = (executable if executable is not None else sys.executable) or "python3"
    package = Path(__file__).resolve().parent if package_dir is None else package_dir
    pip = importlib.util.find_spec("pip") is not None if has_pip is None else has_pip
    if _is_pipx(Path(prefix)):
        return Installation("pipx", python, has_pip=pip)
    clone = _checkout_of(package)
    if clone is not None:
        return Installation("checkout", python, clone, has_pip=pip)
    kind: InstallKind = "venv" if Path(prefix) != Path(base_prefix) else "system"
    return Installation(kind, python, has_pip=pip)


def install_hint(package: str, extra: str | None = None) -> str:
    """``install it with: <command>`` for ``package`` in the running installation."""
    return f"install it with: {installation().install(package, extra)}"


def _is_pipx(prefix: Path) -> bool:
    if (prefix / _PIPX_MARKER).is_file():
        return True
    parts = prefix.parts
    return len(parts) >= 3 and parts[-2] == "venvs" and "pipx" in parts[-3].lower()


def _checkout_of(package: Path) -> Path | None:
    """The clone holding the ``referee`` package folder, or ``None`` when it is installed
    (in ``site-packages`` there is no ``pyproject.toml`` beside it)."""
    root = package.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = project.get("project", {}).get("name") if isinstance(project, dict) else None
    return root if name == DISTRIBUTION else None
