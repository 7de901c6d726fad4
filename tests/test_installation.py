"""Every "install X" hint names the command that works for the way the referee was installed.

Each way is made up on disk (a pipx environment with its marker, a clone with its
``pyproject.toml``, a virtual environment with and without pip, a system Python) and
:func:`referee.installation.installation` is pointed at it; ``tests/test_packaging.py``
checks the hint of a real wheel installed into a fresh environment.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.installation import install_hint, installation

ROOT = Path(__file__).resolve().parents[1]


def _site_packages(prefix: Path) -> Path:
    package = prefix / "lib" / "python3.11" / "site-packages" / "referee"
    package.mkdir(parents=True)
    return package


def test_pipx_is_recognised_by_its_marker_and_injects(tmp_path: Path) -> None:
    prefix = tmp_path / "somewhere" / "env"
    package = _site_packages(prefix)
    (prefix / "pipx_metadata.json").write_text("{}")
    found = installation(
        prefix=str(prefix),
        base_prefix="/usr",
        executable=str(prefix / "bin" / "python"),
        package_dir=package,
    )
    assert found.kind == "pipx"
    assert found.install("docker", "docker") == "pipx inject arschloch-referee docker"
    assert found.reinstall() == "pipx reinstall arschloch-referee"


def test_pipx_is_recognised_by_where_its_environments_live(tmp_path: Path) -> None:
    prefix = tmp_path / ".local" / "share" / "pipx" / "venvs" / "arschloch-referee"
    found = installation(
        prefix=str(prefix),
        base_prefix="/usr",
        executable=str(prefix / "bin" / "python"),
        package_dir=_site_packages(prefix),
    )
    assert found.install("jinja2", "site") == "pipx inject arschloch-referee jinja2"


def test_a_virtual_environment_uses_its_own_interpreter(tmp_path: Path) -> None:
    prefix = tmp_path / "my env"
    python = prefix / "bin" / "python"
    common = {"prefix": str(prefix), "base_prefix": "/usr", "executable": str(python)}
    found = installation(**common, package_dir=_site_packages(prefix), has_pip=True)
    assert found.kind == "venv"
    assert found.install("docker", "docker") == f"'{python}' -m pip install docker"
    # Made with --without-pip: pip from elsewhere, pointed at this environment.
    bare = installation(**common, package_dir=prefix / "lib" / "referee", has_pip=False)
    assert bare.install("docker", "docker") == f"pip --python '{python}' install docker"


def test_a_system_python_is_named_by_its_path(tmp_path: Path) -> None:
    found = installation(
        prefix="/usr",
        base_prefix="/usr",
        executable="/usr/bin/python3",
        package_dir=_site_packages(tmp_path),
        has_pip=True,
    )
    assert found.kind == "system"
    assert found.install("docker") == "/usr/bin/python3 -m pip install docker"


def test_a_checkout_installs_the_extra_from_the_clone_with_its_venvs_pip(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    (clone / "referee").mkdir(parents=True)
    (clone / "pyproject.toml").write_text('[project]\nname = "arschloch-referee"\n')
    pip = clone / ".venv" / "bin" / "pip"
    pip.parent.mkdir(parents=True)
    pip.write_text("#!/bin/sh\n")
    found = installation(
        prefix=str(clone / ".venv"),
        base_prefix="/usr",
        executable=str(clone / ".venv" / "bin" / "python"),
        package_dir=clone / "referee",
        has_pip=True,
    )
    assert found.kind == "checkout" and found.checkout == clone
    assert found.install("docker", "docker") == f"{pip} install -e '{clone}[docker]'"
    assert found.reinstall() == f"{pip} install -e {clone}"


def test_another_projects_pyproject_beside_the_package_is_no_checkout(tmp_path: Path) -> None:
    (tmp_path / "referee").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    found = installation(
        prefix=str(tmp_path),
        base_prefix="/usr",
        executable="/x/bin/python",
        package_dir=tmp_path / "referee",
        has_pip=True,
    )
    assert found.kind == "venv"


def test_this_test_run_is_a_checkout_and_the_hint_names_this_interpreter() -> None:
    found = installation()
    assert found.kind == "checkout" and found.checkout == ROOT
    hint = install_hint("docker", "docker")
    assert hint.startswith("install it with: ") and f"{ROOT}[docker]" in hint
    assert str(Path(sys.executable).parent) in hint


def test_the_site_hint_is_the_installations_when_jinja2_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from referee.publish import writer

    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 now raises ImportError
    with pytest.raises(UsageError) as caught:
        writer.environment()
    assert "needs Jinja2" in str(caught.value)
    assert str(caught.value).endswith(installation().install("jinja2", "site"))
    assert "arschloch-referee[site]" not in str(caught.value)
