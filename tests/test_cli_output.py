"""What the commands print (issue 32, item 8): the progress views' one base, tables that
stay readable piped or at 80 columns, each bot's first fault under ``play --matches``, the
stderr tail under a fault in ``replay``, the results chain said once, "published" only
when something was, and what ``--replace`` does to the "over next" column.

Tables are printed through click's CliRunner, whose stdout is no terminal; a terminal of
80 columns is rich's, asked for with ``TTY_COMPATIBLE=1`` and ``COLUMNS=80``. The tests
that run bots play short matches (``--max-rounds``) of real bots in the process sandbox.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from referee.cli import main
from referee.cli.progress import Every, ProgressView
from referee.cli.tables import print_table
from referee.cli.tournaments import REPLACED_OVER_NEXT, _ProgressView
from referee.executors import MatchFailed
from referee.runs.tournament import ResultStored, RunProgress, RunStarted, run_tournament
from referee.stderrlog import stderr_path
from referee.testing import InProcessExecutor, lowest_bot, polite_bot
from referee.tournament.file import load_tournament

ROOT = Path(__file__).resolve().parents[1]
BOTS = ROOT / "tests" / "bots"
GOLDEN = ROOT / "tests" / "rules" / "golden" / "arschloch-52-5p-seed103.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TERMINAL_80 = {"TTY_COMPATIBLE": "1", "COLUMNS": "80"}


def _invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)


# --------------------------------------------------------------------------- the base


class _Counting(ProgressView):
    """The smallest view: a line per counted event, the rest left to the base."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[object] = []

    def show(self, event: object) -> None:
        self.shown.append(event)


def test_the_base_says_the_start_a_failure_and_leaves_the_rest_to_the_view(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _Counting() as view:
        view.started(sandbox="process sandbox", limits="move 1 ms", warnings=("rotations",))
        view.update(MatchFailed("rr/x/d000/r0", "Traceback\nthe daemon died", 1, False))
        view.update(MatchFailed("rr/x/d000/r0", "", 3, True))
        view.update("an event of the view's own")
    err = capsys.readouterr().err
    assert err == (
        "warning: rotations\nsandbox: process sandbox\nlimits: move 1 ms\n"
        "match rr/x/d000/r0 will be retried (attempt 1): the daemon died\n"
        "match rr/x/d000/r0 failed: ?\n"
    )
    assert view.shown == ["an event of the view's own"]
    assert [Every(3).due(n) for n in range(7)] == [False, False, False, True, False, False, True]
    assert Every.tenth(5).step == 1 and Every.tenth(250).step == 25


def test_the_live_display_stops_however_the_run_ends() -> None:
    view = _Counting()
    view.live = True  # as on a terminal
    view.display = progress = Progress(console=Console(file=io.StringIO(), force_terminal=True))
    with pytest.raises(KeyboardInterrupt), view:
        assert progress.live.is_started
        raise KeyboardInterrupt
    assert not progress.live.is_started and view.display is None


def test_the_results_chain_is_said_as_the_run_starts_then_once_at_the_end_or_when_it_stops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = RunStarted(20, 0, 20, "process sandbox", "ab" * 32, "limits", chain=(4, "c" * 64))
    with _ProgressView("t", lambda: 2) as view:
        view.update(started)
        for n in range(1, 21):
            view.update(ResultStored(f"k{n}", n, f"{n:064x}"))
            view.update(RunProgress(20, n, n, 0, 0))
    finished = capsys.readouterr().err
    # The head as the run starts (the plan chained), then none per progress line: _finish
    # says the last one, from the summary.
    assert finished.count("results chain") == 1
    assert f"results chain: 4 results so far, head {'c' * 64}" in finished
    assert "2/20 matches" in finished and "20/20 matches" in finished
    with pytest.raises(KeyboardInterrupt), _ProgressView("t", lambda: 2) as view:
        view.update(started)
        view.update(ResultStored("k1", 5, "d" * 64))
        view.update(ResultStored("k2", 6, "e" * 64))
        raise KeyboardInterrupt
    stopped = capsys.readouterr().err
    assert stopped.count("results chain") == 2
    assert stopped.endswith(f"results chain: 6 results, head {'e' * 64}\n")


def test_replace_says_what_it_does_to_the_over_next_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = "cat replaced (replacement 1, made now; ...): 3 matches retired"
    with _ProgressView("t", lambda: 1) as view:
        view.update(RunStarted(9, 6, 3, "process sandbox", "ab" * 32, "limits", replaced=(line,)))
    err = capsys.readouterr().err
    assert f"{line}\n{REPLACED_OVER_NEXT}\n" in err
    assert "over next column" in REPLACED_OVER_NEXT and "fewer shared deals" in err
    with _ProgressView("t", lambda: 1) as view:
        view.update(RunStarted(9, 0, 9, "process sandbox", "ab" * 32, "limits"))
    assert "over next" not in capsys.readouterr().err


# --------------------------------------------------------------------------- tables


def _wide_table() -> Table:
    """The league table's shape: a timestamp that never wraps beside a three-word note."""
    table = Table(title="league")
    table.add_column("bot", overflow="fold", min_width=10)
    table.add_column("mu ± sigma", no_wrap=True)
    table.add_column("last played", no_wrap=True)
    table.add_column("note", overflow="fold", min_width=4)
    for name in ("keyerror_round4", "crash_round2"):
        table.add_row(name, "19.92±1.76", "2026-12-07 03:31 UTC", "faults crash 131")
    return table


def test_a_table_piped_is_as_wide_as_its_rows_need() -> None:
    out = io.StringIO()
    print_table(_wide_table(), drop=("last played",), console=Console(file=out, width=60))
    rows = [line for line in out.getvalue().splitlines() if "crash 131" in line]
    assert len(rows) == 2 and "2026-12-07 03:31 UTC" in rows[0] and "keyerror_round4" in rows[0]


def test_a_table_at_80_columns_drops_columns_by_priority_and_says_so() -> None:
    out = io.StringIO()
    console = Console(file=out, width=56, force_terminal=True, color_system=None)
    print_table(_wide_table(), drop=("last played", "mu ± sigma"), console=console)
    text = out.getvalue()
    assert "faults crash 131" in text and "keyerror_round4" in text  # nothing folded
    assert "2026-12-07" not in text and "19.92" in text  # the first named went, alone
    assert "left out to fit 56 columns: last played (a wider terminal" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 56


NAMES = ("a_rather_long_bot_name", "another_long_bot_name", "bot_c", "bot_d")


@pytest.fixture(scope="module")
def board_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament of four bots with long names, played in this process."""
    folder = tmp_path_factory.mktemp("board")
    entries = []
    for name in NAMES:
        (folder / f"{name}.py").write_text("# played in memory by the tests\n")
        entries.append(f'[[bots]]\npath = "{name}.py"\n')
    path = folder / "t.toml"
    path.write_text(
        'name = "t"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\n'
        "deals = 1\nseed = 11\n\n" + "\n".join(entries)
    )
    handlers = {
        name: (lambda name=name, i=i: (polite_bot if i % 2 else lowest_bot)(name))
        for i, name in enumerate(NAMES)
    }
    summary = run_tournament(load_tournament(path), InProcessExecutor(handlers))
    assert summary.done == summary.total == 12
    return path


def test_the_leaderboard_piped_keeps_every_row_on_one_line(board_file: Path) -> None:
    result = _invoke("leaderboard", str(board_file))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[1].strip())[:4] == ["#", "bot", "score", "mu ± sigma"]
    for name in NAMES:
        assert sum(name in line for line in lines) == 2  # its row, and its files' line
    assert all(re.match(r"^ \d  \w+ ", row) for row in lines[3:7])
    assert "left out" not in result.stdout
    # a board printed is ranked, not published
    assert "; ranked 20" in result.stdout and "published" not in result.stdout


def test_the_leaderboard_at_80_columns_fits_and_says_what_it_left_out(board_file: Path) -> None:
    result = _invoke("leaderboard", str(board_file), env=TERMINAL_80)
    assert result.exit_code == 0, result.output
    text = ANSI.sub("", result.stdout)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "mu ± sigma" not in text.splitlines()[1] and "over next" in text.splitlines()[1]
    for name in NAMES:
        assert name in text  # whole, never folded
    assert "left out to fit 80 columns: mu ± sigma" in " ".join(text.split())


# --------------------------------------------------------------------------- replay


def _stderr_record(path: Path, seat: int, lines: list[tuple[int, str]]) -> None:
    pieces = [{"line": line, "text": text} for line, text in lines]
    record = {
        "type": "stderr",
        "version": 1,
        "match": "example-arschloch-52-103",
        "cap": 65536,
        "seats": [{"seat": seat, "name": "p2", "written": 99, "cut": 0, "pieces": pieces}],
    }
    stderr_path(path).write_text(json.dumps(record), encoding="utf-8")


def test_replay_shows_the_stderr_tail_beside_the_fault(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl"
    shutil.copy(GOLDEN, log)
    fault_line = 91  # the golden log's timeout of seat 2
    rows = [(fault_line - 2, f"thinking {n}\n") for n in range(10)]
    _stderr_record(log, 2, [*rows, (fault_line, "stuck in a loop \x1b[2J\n"), (95, "later\n")])
    result = _invoke("replay", "--no-color", str(log))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "! p2 forfeits (timeout" in line)
    assert lines[at + 1] == "      stderr, last 8 of 11 lines:"
    assert lines[at + 2] == "        thinking 3"
    assert lines[at + 9] == "        stuck in a loop \\x1b[2J"  # shown, not obeyed
    assert "later" not in result.stdout  # written after the fault


def test_replay_without_a_readable_stderr_file_is_the_log_alone(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl"
    shutil.copy(GOLDEN, log)
    plain = _invoke("replay", "--no-color", str(log))
    assert plain.exit_code == 0 and plain.stderr == ""
    stderr_path(log).write_text('{"type": "stderr", "seats": 7}', encoding="utf-8")
    damaged = _invoke("replay", "--no-color", str(log))
    assert damaged.exit_code == 0 and damaged.stdout == plain.stdout
    assert damaged.stderr == (
        f"note: {stderr_path(log)}: not a stderr record; the faults are shown without the "
        "bots' stderr\n"
    )


# --------------------------------------------------------------------------- play --matches


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_play_matches_explains_each_bots_first_fault_under_the_table(tmp_path: Path) -> None:
    results = tmp_path / "r"
    result = _invoke(
        "play",
        str(BOTS / "crash_round2.py"),
        "@lowest",
        str(BOTS / "garbage.py"),
        "--matches",
        "3",
        "--max-rounds",
        "3",
        "--sandbox",
        "process",
        "--results",
        str(results),
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    said = re.search(
        r"^garbage: its first of 3 forfeits \(protocol 3\), in match (\S+), seat (\d):\n", out, re.M
    )
    assert said is not None, out
    key = said.group(1)
    told = out[said.end() :].split("\n\n")[0]
    assert "  problem: protocol at act " in told
    assert "  reply (after " in told and "this is not json at all" in told
    assert "  hint: a debug print on stdout?" in told
    assert "  stderr: (the bot wrote nothing to stderr)" in told
    log = results / "logs" / f"{key.replace('/', '_')}.jsonl"
    assert f"  match log: {log}  (referee replay {log})" in out and log.is_file()
    crashed = out[out.index("crash_round2: its first of 3 forfeits (crash 3)") :]
    assert "  hint: the bot exited while it was asked something" in crashed
    assert "IndexError in round 2 (on purpose)" in crashed  # its stderr tail
    assert out.index("matches forfeited, by kind.") < out.index("garbage: its first")
    assert "lowest: its first" not in out
