"""``referee bot samples``: the sample bots listed by name, and copied out exactly as shipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.sandbox import bot_sha256, load_bot, read_bot_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted(p.name for p in (ROOT / "sample_bots").iterdir() if (p / "bot.toml").is_file())


def _samples(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["bot", "samples", *args])
    return result.exit_code, result.stdout, result.stderr


def test_without_a_folder_every_sample_is_listed_by_the_name_that_runs_it() -> None:
    code, out, _ = _samples()
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == [f"@{name}" for name in SAMPLES]
    assert "node bot.js" in next(line for line in lines if line.startswith("@js-lowest "))
    for compiled in ("@c-lowest ", "@cpp-lowest "):  # built by make (bot.toml's build)
        assert " ./bot " in next(line for line in lines if line.startswith(compiled))
    assert lines[0].endswith(str(ROOT / "sample_bots" / SAMPLES[0]))


def test_the_samples_are_copied_byte_for_byte_and_each_copy_said(tmp_path: Path) -> None:
    target = tmp_path / "new" / "samples"
    code, out, _ = _samples(str(target))
    assert code == 0
    assert sorted(p.name for p in target.iterdir()) == SAMPLES
    for name in SAMPLES:
        copy = load_bot(target / name)
        assert copy.name == name
        shipped = read_bot_files(load_bot(f"@{name}"))
        assert bot_sha256(read_bot_files(copy)) == bot_sha256(shipped)
        assert f"copied @{name} to {target / name} ({len(shipped)} files)\n" in out
    assert not list(target.rglob("__pycache__"))
    # A copy is the author's to change: readable and writable by its owner.
    assert (target / "heuristic" / "bot.py").stat().st_mode & 0o600 == 0o600


def test_an_empty_folder_is_filled(tmp_path: Path) -> None:
    assert _samples(str(tmp_path))[0] == 0
    assert (tmp_path / "lowest" / "bot.toml").is_file()


def test_a_folder_with_files_is_refused_unless_forced_and_force_replaces_only_samples(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "heuristic").mkdir()
    (tmp_path / "heuristic" / "bot.py").write_text("# my edits\n")
    code, out, err = _samples(str(tmp_path))
    assert code == 2 and out == ""
    assert err == (
        f"referee: {tmp_path} is not empty; name a new or an empty folder, or pass --force "
        "to replace the samples' folders in it\n"
    )
    assert (tmp_path / "heuristic" / "bot.py").read_text() == "# my edits\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heuristic", "notes.txt"]

    code, out, _ = _samples(str(tmp_path), "--force")
    assert code == 0 and out.count("copied @") == len(SAMPLES)
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
    shipped = ROOT / "sample_bots" / "heuristic" / "bot.py"
    assert (tmp_path / "heuristic" / "bot.py").read_bytes() == shipped.read_bytes()
    assert not (tmp_path / "heuristic" / "bot.py").is_symlink()


def test_force_replaces_a_planted_symlink_and_never_writes_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "samples"
    target.mkdir()
    (target / "lowest").symlink_to(outside)
    assert _samples(str(target), "--force")[0] == 0
    assert not (target / "lowest").is_symlink() and (target / "lowest" / "bot.py").is_file()
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_target_that_is_not_a_folder_is_one_line(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    if kind == "file":
        target.write_text("x")
    else:
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
    code, out, err = _samples(str(target), "--force")
    assert (code, out) == (2, "")
    assert err == f"referee: {target} is not a folder; name a new or an empty one\n"
    assert list((tmp_path / "real").iterdir() if kind == "symlink" else []) == []
