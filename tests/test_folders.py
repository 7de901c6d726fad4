"""Private folders in shared places (issue 18, finding 7): a planted symlink or a planted
folder of another user is refused with one line at every fixed-name folder the referee
makes, and what the symlink points to is left as it was.

The places: ``referee play``'s and ``referee bot check``'s log folder
(``$TMPDIR/referee-logs-<euid>``), the sandbox's uid lock folder
(``$TMPDIR/referee-sandbox-uids``), a tournament's results folder, and a staging root.
Foreign folders belong to a uid of this test run's own block (tests/conftest.py).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.folders import private_folder
from referee.sandbox import load_bot, stage_bot
from referee.sandbox.process import UID_LOCK_DIR, UidPool
from tests.conftest import run_uids

BOTS = Path(__file__).resolve().parent / "bots"
IS_ROOT = os.geteuid() == 0
STRANGER = run_uids()[-1]  # a uid of this run's block, which no bot is lent meanwhile


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder like /tmp (everyone may write, sticky), made the temp folder."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """The folder a planted symlink points to (one of the victim's, say /etc)."""
    folder = tmp_path / "victim"
    folder.mkdir()
    folder.chmod(0o755)
    (folder / "passwd").write_text("root:x:0:0\n")
    return folder


Plant = Callable[[Path], str]


def plant_symlink(victim: Path) -> Plant:
    def plant(path: Path) -> str:
        path.symlink_to(victim)
        return "is a symlink (to "

    return plant


def plant_folder(path: Path) -> str:
    if not IS_ROOT:
        pytest.skip("a folder of another uid needs root to make")
    path.mkdir()
    path.chmod(0o755)
    os.chown(path, STRANGER, STRANGER)
    return f"belongs to uid {STRANGER}, not to uid 0 that runs the referee"


@pytest.fixture(params=["symlink", "foreign folder"])
def plant(request: pytest.FixtureRequest, victim: Path) -> Plant:
    return plant_symlink(victim) if request.param == "symlink" else plant_folder


def assert_untouched(victim: Path) -> None:
    assert mode_of(victim) == 0o755
    assert sorted(p.name for p in victim.iterdir()) == ["passwd"]


# --------------------------------------------------------------------------- the helper


def test_a_new_folder_is_private(tmp_path: Path) -> None:
    made = private_folder(tmp_path / "logs")
    assert made.is_dir() and mode_of(made) == 0o700
    assert mode_of(private_folder(tmp_path / "staging", mode=0o711)) == 0o711


def test_an_own_folder_is_taken_and_made_private(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir(mode=0o755)
    (tmp_path / "logs").chmod(0o755)
    (tmp_path / "logs" / "old.jsonl").write_text("{}\n")
    private_folder(tmp_path / "logs")
    assert mode_of(tmp_path / "logs") == 0o700
    assert (tmp_path / "logs" / "old.jsonl").exists()


def test_a_planted_symlink_is_refused_and_its_target_untouched(shared: Path, victim: Path) -> None:
    (shared / "logs").symlink_to(victim)
    with pytest.raises(UsageError) as refused:
        private_folder(shared / "logs")
    message = str(refused.value)
    assert f"{shared / 'logs'} is a symlink (to {victim})" in message and "\n" not in message
    assert "remove it and run again" in message
    assert_untouched(victim)


def test_a_dangling_symlink_is_refused_and_nothing_made_where_it_points(
    shared: Path, tmp_path: Path
) -> None:
    (shared / "logs").symlink_to(tmp_path / "would-be-made")
    with pytest.raises(UsageError, match="is a symlink"):
        private_folder(shared / "logs")
    assert not (tmp_path / "would-be-made").exists()


@pytest.mark.skipif(not IS_ROOT, reason="a folder of another uid needs root to make")
def test_a_planted_folder_of_another_user_is_refused_as_it_is(shared: Path) -> None:
    plant_folder(shared / "logs")
    with pytest.raises(UsageError) as refused:
        private_folder(shared / "logs")
    assert "its owner could read what the referee keeps there" in str(refused.value)
    assert mode_of(shared / "logs") == 0o755 and (shared / "logs").stat().st_uid == STRANGER


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_an_own_folder_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs").chmod(mode)
    with pytest.raises(UsageError, match=f"is writable by other users \\(mode {mode:04o}\\)"):
        private_folder(tmp_path / "logs")
    assert mode_of(tmp_path / "logs") == mode


def test_a_file_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("x")
    with pytest.raises(UsageError, match="exists and is not a folder"):
        private_folder(tmp_path / "logs")


def test_a_place_anyone_may_write_without_the_sticky_bit_is_refused(tmp_path: Path) -> None:
    open_place = tmp_path / "open"
    open_place.mkdir()
    open_place.chmod(0o777)
    with pytest.raises(UsageError, match="writable by every user and not sticky"):
        private_folder(open_place / "logs")
    assert not (open_place / "logs").exists()


# --------------------------------------------------------------------------- each place


def _one_line_refusal(result: object, expected: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("referee: ") and expected in lines[0], output


def test_play_refuses_a_planted_log_folder(shared: Path, victim: Path, plant: Plant) -> None:
    expected = plant(shared / f"referee-logs-{os.geteuid()}")
    polite = str(BOTS / "polite.py")
    result = CliRunner().invoke(main, ["play", polite, polite, polite])
    _one_line_refusal(result, expected)
    assert_untouched(victim)


def test_bot_check_refuses_a_planted_log_folder(shared: Path, victim: Path, plant: Plant) -> None:
    expected = plant(shared / f"referee-logs-{os.geteuid()}")
    result = CliRunner().invoke(main, ["bot", "check", str(BOTS / "polite.py")])
    _one_line_refusal(result, expected)
    assert_untouched(victim)


def test_the_uid_lock_folder_is_refused_when_planted(
    shared: Path, victim: Path, plant: Plant
) -> None:
    """The machine's lock folder is fixed (``UID_LOCK_DIR`` in ``/tmp``, whatever
    ``TMPDIR``); planting the real one would touch every referee here, so the same folder
    is planted in the test's shared folder and handed to the pool."""
    assert UidPool(run_uids()).lock_dir == UID_LOCK_DIR  # not under this test's TMPDIR
    expected = plant(shared / UID_LOCK_DIR.name)
    with pytest.raises(UsageError) as refused:
        UidPool(run_uids(), lock_dir=shared / UID_LOCK_DIR.name).acquire()
    assert expected in str(refused.value) and "\n" not in str(refused.value)
    assert_untouched(victim)


def test_a_planted_results_folder_is_refused_before_any_bot_runs(
    shared: Path, victim: Path, plant: Plant
) -> None:
    polite = BOTS / "polite.py"
    tournament = shared / "t.toml"
    tournament.write_text(
        'name = "t"\ntable_size = 3\nallow_twins = true\n[sandbox]\nmemory_mb = 64\n'
        + "".join(f'[[bots]]\npath = "{polite}"\nname = "p{i}"\n' for i in range(3))
    )
    expected = plant(shared / "t.results")
    result = CliRunner().invoke(main, ["tournament", "run", str(tournament), "--workers", "1"])
    _one_line_refusal(result, expected)
    assert_untouched(victim)


def test_a_planted_staging_root_is_refused(shared: Path, victim: Path, plant: Plant) -> None:
    expected = plant(shared / "staging")
    with pytest.raises(UsageError, match=expected.replace("(", r"\(")):
        stage_bot(load_bot(BOTS / "polite.py"), shared / "staging")
    assert_untouched(victim)
