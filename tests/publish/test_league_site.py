"""A league's site (:mod:`referee.publish.league_site`): kept current, rendering only what is new.

Published after one batch and again after three, the second publication writes the match
pages of the two new batches only, leaves the first batch's pages as they were, and
rewrites the leaderboard; hostile names are escaped on every page and in every file;
``--out`` holding a tournament's site, or anything else, is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import InfrastructureError, UsageError
from referee.publish.league_site import publish_league
from referee.runs.league import run_league
from referee.testing import InProcessExecutor
from referee.tournament.file import load_tournament
from tests.tournament.league_field import NAMES, SECRET, Clock, handlers, play, write

HOSTILE = "<img src=x onerror=alert(1)>"
FORMULA = "=HYPERLINK(1)"


def test_a_second_publication_renders_only_what_is_new(tmp_path: Path) -> None:
    path = write(tmp_path / "league")
    play(path, batches=1)
    site = tmp_path / "site"
    first = publish_league(load_tournament(path), site)
    assert first.batches == (0, 1) and first.matches == 8 and first.bots == len(NAMES)
    pages = {p.name: p.stat().st_mtime_ns for p in (site / "matches").glob("*.html")}
    assert len(pages) == 8 and all(name.startswith("lg_00000000_") for name in pages)
    play(path, batches=2)
    second = publish_league(load_tournament(path), site)
    assert second.batches == (1, 3) and second.matches == 16
    after = {p.name: p.stat().st_mtime_ns for p in (site / "matches").glob("*.html")}
    assert len(after) == 24
    assert all(after[name] == stamp for name, stamp in pages.items())  # not written again
    board = json.loads((site / "leaderboard.json").read_text())
    assert board["batches"] == 3 and board["matches"] == 24
    third = publish_league(load_tournament(path), site)
    assert third.batches == (3, 3) and third.matches == 0 and third.bots == 0
    index = (site / "index.html").read_text()
    assert "24 matches" in index and "b0" in index


def test_hostile_names_are_escaped_everywhere(tmp_path: Path) -> None:
    names = (*NAMES[:3], "evil", "formula")
    path = write(tmp_path / "league", names)
    text = path.read_text().replace('name = "evil"', f'name = "{HOSTILE}"')
    path.write_text(text.replace('name = "formula"', f'name = "{FORMULA}"'))
    run_league(
        path,
        InProcessExecutor(handlers(HOSTILE, FORMULA)),
        batches=1,
        deal_secret=SECRET,
        clock=Clock(),
    )
    site = tmp_path / "site"
    publish_league(load_tournament(path), site)
    for page in [site / "index.html", *site.glob("bots/*.html"), *site.glob("matches/*.html")]:
        assert HOSTILE not in page.read_text(), page
    assert "&lt;img src=x onerror=alert(1)&gt;" in (site / "index.html").read_text()
    csv = (site / "leaderboard.csv").read_text()
    assert f'"\'{FORMULA}"' in csv and f'"{FORMULA}"' not in csv
    markdown = (site / "leaderboard.md").read_text()
    assert HOSTILE not in markdown


def test_out_must_be_new_empty_or_a_league_site(tmp_path: Path) -> None:
    path = write(tmp_path / "league")
    play(path, batches=1)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    with pytest.raises(UsageError, match="holds no site published by the referee"):
        publish_league(load_tournament(path), busy)
    tournament_site = tmp_path / "tsite"
    tournament_site.mkdir()
    (tournament_site / ".referee-site").write_text("x\n")
    with pytest.raises(UsageError, match="holds a tournament's site"):
        publish_league(load_tournament(path), tournament_site)
    result = CliRunner().invoke(main, ["publish", str(path), "--out", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output
    assert "published batches 0 to 0: 8 new matches" in result.output


def test_every_page_names_the_time_of_the_clock_it_is_published_with(tmp_path: Path) -> None:
    """The wall clock is the caller's: a pinned one is the time every page names."""
    from referee.publish.settings import format_time

    path = write(tmp_path / "league")
    play(path, batches=1)
    site = tmp_path / "site"
    when = 1_790_000_000.0
    publish_league(load_tournament(path), site, clock=lambda: when)
    pages = [*site.glob("*.html"), *site.glob("bots/*.html"), *site.glob("matches/*.html")]
    assert pages and all(format_time(when) in p.read_text() for p in pages)


def test_a_link_planted_in_the_site_is_replaced_never_written_through(tmp_path: Path) -> None:
    """A page's name made a link to a file outside: publishing again puts a page in the
    link's place and leaves the file it pointed at as it was."""
    path = write(tmp_path / "league")
    play(path, batches=1)
    site = tmp_path / "site"
    publish_league(load_tournament(path), site)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the site's\n")
    index = site / "index.html"
    index.unlink()
    index.symlink_to(outside)
    publish_league(load_tournament(path), site)
    assert not index.is_symlink() and "<html" in index.read_text()
    assert outside.read_text() == "not the site's\n"


def test_a_subfolder_made_a_link_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    from referee.errors import InfrastructureError

    path = write(tmp_path / "league")
    play(path, batches=1)
    site = tmp_path / "site"
    publish_league(load_tournament(path), site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for page in (site / "bots").iterdir():
        page.unlink()
    (site / "bots").rmdir()
    (site / "bots").symlink_to(elsewhere)
    with pytest.raises(InfrastructureError, match="cannot write the site"):
        publish_league(load_tournament(path), site)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    "tampered",
    [
        {"slugs": {"b0": "../../outside", "b1": 5, "b2": "twin", "b3": "twin"}},
        {"slugs": [1, 2, 3]},
        {"slugs": {"b0": "UPPER", "b1": "a" * 300}},
        {"batch": "abc", "records": [1]},
        {"batch": 10**9},
        {"batch": -5, "records": "x"},
    ],
    ids=[
        "a path, a number, one slug twice",
        "a list",
        "not a slug",
        "a batch not a number",
        "a batch past the league's",
        "a batch below 0",
    ],
)
def test_a_tampered_state_file_gives_every_bot_a_page_of_its_own(
    tmp_path: Path, tampered: dict[str, object]
) -> None:
    path = write(tmp_path / "league")
    play(path, batches=1)
    site = tmp_path / "site"
    publish_league(load_tournament(path), site)
    state_file = site / "league-site.json"
    state = json.loads(state_file.read_text())
    state.update(tampered)
    state_file.write_text(json.dumps(state))
    again = publish_league(load_tournament(path), site)
    assert again.batches[1] == 1
    assert len(list((site / "matches").glob("*.html"))) == 8
    written = json.loads(state_file.read_text())["slugs"]
    assert len(set(written.values())) == len(written) >= len(NAMES)
    assert all((site / "bots" / f"{slug}.html").is_file() for slug in written.values())
    assert not (tmp_path / "outside.html").exists()


def test_a_first_publication_that_fails_midway_leaves_a_site_the_next_one_takes_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import referee.publish.league_site as league_site

    path = write(tmp_path / "league")
    play(path, batches=1)
    site = tmp_path / "site"

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(league_site, "read_board", broken)
        with pytest.raises(InfrastructureError, match="No space left"):
            publish_league(load_tournament(path), site)
    assert (site / "bots").is_dir()  # it had begun
    again = publish_league(load_tournament(path), site)
    assert again.batches == (0, 1) and again.matches == 8 and again.bots == len(NAMES)
