"""``referee doctor``'s line per language: ready in the process sandbox, or what to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli.sandboxes import LANGUAGES, language_checks


def _program(folder: Path, name: str) -> None:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


def test_each_language_is_ready_or_says_which_packages_add_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox_path = tmp_path / "usr-bin"
    for program in ("python3", "node", "cc", "make"):
        _program(sandbox_path, program)
    # rustup's compiler: on the referee's PATH, never on the sandbox's.
    _program(tmp_path / "cargo-bin", "rustc")
    monkeypatch.setenv("PATH", f"{tmp_path / 'cargo-bin'}")
    lines = {name: (ok, why) for name, ok, why in language_checks(str(sandbox_path))}
    assert list(lines) == [name for name, _, _ in LANGUAGES]
    assert lines["python"][0] and lines["js"][0] and lines["c"][0]
    assert lines["c++"] == (False, "missing c++: apt-get install g++ make")
    ok, why = lines["rust"]
    assert not ok and why.startswith("missing rustc: apt-get install rustc make")
    assert "cargo-bin/rustc is outside the sandbox's PATH" in why
    assert lines["java"] == (
        False,
        "missing javac, java: apt-get install openjdk-17-jdk-headless make",
    )
