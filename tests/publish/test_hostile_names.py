"""Publishing against hostile display names: the site never writes into the results folder.

A dot in a name ("Dr. Who") once made every replay of that bot's tables one file name, and
the second write went through a hard link into the first match's stored log. Here
tournaments whose bots are named with dots, slashes, backslashes, ``..``, leading dashes,
reserved device names, look-alikes and names that slug alike are published (twice: the
second publication replaces the first), and the site must hold every match's page, log and
replay data, each its own, while every file of the results folder keeps its bytes.

A publication that fails half-way must leave the site published before as it was, and no
half-written folder beside it. What a publication copies from the site published before
(:mod:`referee.publish.reuse`) is checked file by file: a file changed, truncated, linked
or replaced by a FIFO is made again, and a cache that is not what ``publish`` writes (not
JSON, other shapes, too large, names outside ``matches/``, a link) is ignored whole.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import InfrastructureError, UsageError
from referee.publish.folder import SITE_MARKER, SiteFolder
from referee.publish.paths import match_names
from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.testing import Handler, lowest_bot, polite_bot
from referee.tournament.file import Tournament
from tests.publish.conftest import play_fake, write_fake_tournament

NAME_SETS = {
    "dots": ("Dr. Who", "Dr Who", "v1.2", "a.b.c", ".."),
    "paths": ("../../etc/passwd", "a\\b/..", "-rf --no-preserve-root", "CON", "nul.txt"),
    "look-alikes": ("Ålice", "alice", "日本語", "bot", "x" * 64, "Bot!"),
}
SAFE_PATH = re.compile(
    r"(bots|matches|static|verification)/[a-z0-9][a-z0-9_-]*(\.stderr)?\.[a-z]+|[a-z0-9][a-z.-]*"
)


def _handlers(names: tuple[str, ...]) -> dict[str, Callable[[], Handler]]:
    """Alternate plain bots, so the places (and the logs) differ from match to match."""
    bots = (polite_bot, lowest_bot)
    return {n: functools.partial(bots[i % 2], n) for i, n in enumerate(names)}


def _hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its relative path: its SHA-256."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module", params=sorted(NAME_SETS))
def hostile(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tournament:
    names = NAME_SETS[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    return play_fake(write_fake_tournament(folder, deals=1, names=names), _handlers(names))


def test_every_replay_is_published_its_own_and_the_results_keep_their_bytes(
    hostile: Tournament, tmp_path: Path
) -> None:
    results = load_results(hostile)
    before = _hashes(results.results_dir)
    assert len(results.matches) >= 30
    out = tmp_path / "site"
    for _ in range(2):  # publishing again replaces the site: its old files are only read
        report = publish_site(results, out)
        assert _hashes(results.results_dir) == before
    assert report.replays == report.matches == len(results.matches)
    stems = match_names({m.spec.key: m.spec.table for m in results.matches})
    assert len(set(stems.values())) == len(results.matches)
    site_files = {p.name for p in (out / "matches").iterdir()}
    suffixes = (".html", ".js", ".jsonl", ".stderr.js")
    assert site_files == {f"{s}{x}" for s in stems.values() for x in suffixes}
    for key, stem in stems.items():
        published = out / "matches" / f"{stem}.jsonl"
        assert published.read_bytes() == results.log_path(key).read_bytes(), key
        assert f'src="{stem}.js"' in (out / "matches" / f"{stem}.html").read_text()
    assert len({(out / "matches" / f"{s}.js").read_bytes() for s in stems.values()}) == len(stems)
    assert len(list((out / "bots").iterdir())) == len(hostile.entrants)


def test_every_name_in_the_site_is_one_safe_component_and_no_file_is_a_stored_one(
    hostile: Tournament, tmp_path: Path
) -> None:
    results = load_results(hostile)
    out = tmp_path / "site"
    publish_site(results, out)
    stored = {(p.stat().st_dev, p.stat().st_ino) for p in results.results_dir.rglob("*")}
    for path in out.rglob("*"):
        name = path.relative_to(out).as_posix()
        if path.is_dir():
            assert name in ("bots", "matches", "static", "verification")
            continue
        assert name == SITE_MARKER or SAFE_PATH.fullmatch(name), name
        assert ".." not in name and "\\" not in name
        info = path.lstat()
        assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1, name
        assert (info.st_dev, info.st_ino) not in stored, name


def test_the_command_leaves_the_results_folder_as_it_was(
    hostile: Tournament, tmp_path: Path
) -> None:
    before = _hashes(hostile.results_dir)
    runner = CliRunner()
    for _ in range(2):
        done = runner.invoke(main, ["publish", str(hostile.path), "--out", str(tmp_path / "s")])
        assert done.exit_code == 0, done.output
    inside = str(hostile.results_dir / "site")
    refused = runner.invoke(main, ["publish", str(hostile.path), "--out", inside])
    assert refused.exit_code == 2 and "inside the results folder" in refused.output
    assert "Traceback" not in refused.output
    assert _hashes(hostile.results_dir) == before


# --------------------------------------------------------------------------- where it may write


@pytest.fixture(scope="module")
def dotted(tmp_path_factory: pytest.TempPathFactory) -> Tournament:
    names = NAME_SETS["dots"]
    folder = tmp_path_factory.mktemp("dotted")
    return play_fake(write_fake_tournament(folder, deals=1, names=names), _handlers(names))


def test_the_results_folder_is_refused_as_the_site_or_around_it(
    dotted: Tournament, tmp_path: Path
) -> None:
    results = load_results(dotted)
    before = _hashes(results.results_dir)
    link = tmp_path / "link"
    link.symlink_to(results.results_dir)
    for out in (
        results.results_dir,
        results.results_dir / "logs",
        results.results_dir / "new",
        link,
    ):
        with pytest.raises(UsageError, match="inside the results folder"):
            publish_site(results, out)
    with pytest.raises(UsageError, match="holds the results folder"):
        publish_site(results, results.results_dir.parent)
    assert _hashes(results.results_dir) == before
    assert not (results.results_dir / "new").exists()


def _beside(out: Path) -> list[str]:
    """What lies next to the site besides it: a half-written or an old folder would."""
    return sorted(p.name for p in out.parent.iterdir() if p != out)


class _Meddled(SiteFolder):
    """A site folder to which something happens before a given write (the test's hook)."""

    def __init__(self, target: Path, before: Callable[[SiteFolder, str, str], None]) -> None:
        super().__init__(target)
        self.before = before

    def write(self, folder: str, stem: str, suffix: str, data: bytes) -> int:
        self.before(self, folder, stem)
        return super().write(folder, stem, suffix, data)


@pytest.mark.parametrize("fails_at", [1, 40, 100])
def test_a_publication_failing_half_way_leaves_the_old_site_as_it_was(
    dotted: Tournament, tmp_path: Path, fails_at: int
) -> None:
    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    old = _hashes(out)
    written = 0
    seen: list[Path] = []

    def disk_full(site: SiteFolder, folder: str, stem: str) -> None:
        nonlocal written
        written += 1
        if written == fails_at:
            seen.append(site.path)
            assert stat.S_IMODE(site.path.stat().st_mode) == 0o700  # private while written
            assert _hashes(out) == old
            raise OSError(28, "No space left on device")

    with pytest.raises(
        InfrastructureError, match="No space left on device; the site published before is unchanged"
    ):
        publish_site(results, out, site_folder=lambda target: _Meddled(target, disk_full))
    assert seen and not seen[0].exists()
    assert _hashes(out) == old
    assert _beside(out) == []


def test_an_interrupted_publication_of_a_new_site_leaves_nothing(
    dotted: Tournament, tmp_path: Path
) -> None:
    def interrupted(site: SiteFolder, folder: str, stem: str) -> None:
        if folder == "bots":  # Ctrl-C while the bot pages are written
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        publish_site(
            load_results(dotted),
            tmp_path / "site",
            site_folder=lambda target: _Meddled(target, interrupted),
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["swapped", "renamed-aside"])
def test_a_new_site_replaces_the_old_one_whole(
    dotted: Tournament, tmp_path: Path, exchange: bool
) -> None:
    asked: list[tuple[Path, Path]] = []

    def cannot_swap(a: Path, b: Path) -> bool:
        asked.append((a, b))
        return False  # a system without renameat2: the old site is renamed aside, removed

    def site_folder(target: Path) -> SiteFolder:
        return SiteFolder(target) if exchange else SiteFolder(target, exchange=cannot_swap)

    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    os.chmod(out, 0o750)
    (out / "matches" / "stale.html").write_text("old")
    report = publish_site(results, out, site_folder=site_folder)
    assert len(asked) == (0 if exchange else 1)
    assert not (out / "matches" / "stale.html").exists()
    assert report.replays == len(results.matches)
    assert stat.S_IMODE(out.stat().st_mode) == 0o750  # the organiser's mode is kept
    assert _beside(out) == []


def test_a_results_log_replaced_by_a_link_to_the_site_is_never_written(
    dotted: Tournament, tmp_path: Path
) -> None:
    """A site's file that is a link into the results (as the old sites hard-linked their
    logs) is removed with the old site, never opened for writing."""
    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    [first, *_] = sorted((out / "matches").glob("*.jsonl"))
    target = results.log_path(results.matches[0].spec.key)
    first.unlink()
    os.link(target, first)
    before = _hashes(results.results_dir)
    publish_site(results, out)
    assert _hashes(results.results_dir) == before
    assert target.stat().st_nlink == 1


def test_unsafe_names_never_reach_the_disk(tmp_path: Path) -> None:
    site = SiteFolder(tmp_path / "site")
    with site:
        for stem, suffix in (
            ("dr.-who", ".js"),
            ("../x", ".html"),
            ("a", ".sh"),
            ("", ".js"),
            ("-x", ".js"),
        ):
            with pytest.raises(ValueError, match="not a file name the site makes"):
                site.write("matches", stem, suffix, b"x")
        with pytest.raises(ValueError, match="not a folder of the site"):
            site.write("../results", "x", ".js", b"x")
        site.write("matches", "ok", ".js", b"x")
        with pytest.raises(FileExistsError):  # never a second write to one file
            site.write("matches", "ok", ".js", b"y")
        site.abort()
    assert list(tmp_path.iterdir()) == []


def test_a_relative_out_under_the_results_is_refused_too(
    dotted: Tournament, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = load_results(dotted)
    monkeypatch.chdir(results.results_dir)
    with pytest.raises(UsageError, match="inside the results folder"):
        publish_site(results, Path("site"))
    assert not (results.results_dir / "site").exists()


def test_a_folder_filled_while_the_site_is_written_is_not_replaced(
    dotted: Tournament, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    out.mkdir()

    def meanwhile(site: SiteFolder, folder: str, stem: str) -> None:
        if stem == "leaderboard":  # someone writes into the folder while the site is made
            (out / "thesis.tex").write_text("precious")

    with pytest.raises(UsageError, match="not empty and holds no site"):
        publish_site(
            load_results(dotted), out, site_folder=lambda target: _Meddled(target, meanwhile)
        )
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    assert _beside(out) == []


# ------------------------------------------------------------- what the old site lends the new


def _damage_changed(path: Path, outside: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, the size kept
    path.write_bytes(bytes(data))


def _damage_truncated(path: Path, outside: Path) -> None:
    path.write_bytes(path.read_bytes()[:-7])


def _damage_symlink(path: Path, outside: Path) -> None:
    outside.write_bytes(path.read_bytes())  # the very bytes, behind a link
    path.unlink()
    path.symlink_to(outside)


def _damage_hard_link(path: Path, outside: Path) -> None:
    outside.write_bytes(path.read_bytes())  # the very bytes, a file with another name
    path.unlink()
    os.link(outside, path)


def _damage_fifo(path: Path, outside: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # opened without O_NONBLOCK, it would hold the publication for ever


DAMAGE = {
    "changed": _damage_changed,
    "truncated": _damage_truncated,
    "symlink": _damage_symlink,
    "hard link": _damage_hard_link,
    "fifo": _damage_fifo,
}


def _per_match(out: Path) -> set[str]:
    return {
        p.relative_to(out).as_posix() for p in (out / "matches").iterdir() if p.suffix != ".jsonl"
    }


def test_a_file_over_the_size_the_old_site_may_lend_is_made_again(
    dotted: Tournament, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache says how large a file is, and a file that large is read whole to check
    it: past a bound, nothing is read (a planted sparse file of terabytes costs nothing)."""
    from referee.publish import reuse

    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    small = {n for n in _per_match(out) if (out / n).stat().st_size <= 1000}
    assert small and len(small) < len(_per_match(out))
    monkeypatch.setattr(reuse, "MAX_REUSED_BYTES", 1000)
    report = publish_site(results, out)
    assert set(report.rendered) == _per_match(out) - small and report.reused == len(small)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_reused_file_damaged_in_the_old_site_is_made_again(
    dotted: Tournament, tmp_path: Path, damage: str
) -> None:
    """The old site is someone's files: each one lent is checked (its record's size and
    SHA-256, a regular file with one name, no link), else made again."""
    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    every = _per_match(out)
    page, script = sorted(every)[0], next(n for n in sorted(every) if n.endswith(".stderr.js"))
    for name in (page, script):
        DAMAGE[damage](out / name, tmp_path / f"outside-{Path(name).name}")
    report = publish_site(results, out)
    assert sorted(report.rendered) == sorted([page, script])
    assert report.reused == len(every) - 2
    publish_site(results, tmp_path / "whole", reuse=False)
    assert _hashes(out) == _hashes(tmp_path / "whole")
    for name in (page, script):
        info = (out / name).lstat()
        assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def test_a_linked_matches_folder_lends_nothing(dotted: Tournament, tmp_path: Path) -> None:
    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    (out / "matches").rename(tmp_path / "elsewhere")
    (out / "matches").symlink_to(tmp_path / "elsewhere")
    report = publish_site(results, out)
    assert report.reused == 0 and set(report.rendered) == _per_match(out)


def _valid(cache: bytes) -> dict:  # type: ignore[type-arg]
    return json.loads(cache)  # type: ignore[no-any-return]


def _with_file(cache: bytes, name: str) -> bytes:
    """The cache with one more entry, a copy of a real one under ``name``."""
    data = _valid(cache)
    data["files"][name] = next(iter(data["files"].values()))
    return json.dumps(data).encode()


def _retyped(cache: bytes) -> bytes:
    data = _valid(cache)
    entry = next(iter(data["files"].values()))
    entry["size"] = str(entry["size"])
    return json.dumps(data).encode()


def _with_key(cache: bytes) -> bytes:
    data = _valid(cache)
    data["owner"] = "someone"
    return json.dumps(data).encode()


def _other_format(cache: bytes) -> bytes:
    data = _valid(cache)
    data["format"] = 2
    return json.dumps(data).encode()


def _bad_fault_lines(cache: bytes) -> bytes:
    data = _valid(cache)
    entry = next(e for n, e in data["files"].items() if n.endswith(".js"))
    entry["fault_lines"] = [["0", "<script>"]]
    return json.dumps(data).encode()


HOSTILE_CACHES: dict[str, Callable[[bytes], bytes]] = {
    "not json": lambda cache: cache[: len(cache) // 2],
    "empty": lambda cache: b"",
    "a list": lambda cache: b"[]",
    "nested deep": lambda cache: b"[" * 100_000 + b"]" * 100_000,
    "not utf-8": lambda cache: b'{"format": 1, "\xff\xfe": 1}',
    "wrong types": _retyped,
    "unknown key": _with_key,
    "other format": _other_format,
    "bad fault lines": _bad_fault_lines,
    "path up": lambda cache: _with_file(cache, "matches/../../../etc/passwd.html"),
    "absolute path": lambda cache: _with_file(cache, "/etc/passwd"),
    "another folder": lambda cache: _with_file(cache, "verification/manifest.json"),
    "backslash": lambda cache: _with_file(cache, "matches\\..\\x.html"),
}


@pytest.mark.parametrize("hostile_cache", sorted([*HOSTILE_CACHES, "huge", "symlink"]))
def test_a_damaged_or_hostile_cache_is_ignored_whole(
    dotted: Tournament, tmp_path: Path, hostile_cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache that is not what ``publish`` writes lends nothing: a full publication, no
    traceback, and a cache the next one can use."""
    from referee.publish import reuse

    results = load_results(dotted)
    out = tmp_path / "site"
    publish_site(results, out)
    cache = out / f"{reuse.CACHE}.json"
    valid = cache.read_bytes()
    if hostile_cache == "huge":
        monkeypatch.setattr(reuse, "MAX_CACHE_BYTES", len(valid) - 1)
    elif hostile_cache == "symlink":
        (tmp_path / "cache.json").write_bytes(valid)
        cache.unlink()
        cache.symlink_to(tmp_path / "cache.json")
    else:
        cache.write_bytes(HOSTILE_CACHES[hostile_cache](valid))
    report = publish_site(results, out)
    assert report.reused == 0 and set(report.rendered) == _per_match(out)
    assert cache.read_bytes() == valid
    monkeypatch.undo()
    assert publish_site(results, out).rendered == ()


def test_the_command_publishes_over_a_broken_cache_and_can_reuse_nothing(
    dotted: Tournament, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    runner = CliRunner()
    first = runner.invoke(main, ["publish", str(dotted.path), "--out", str(out)])
    assert first.exit_code == 0, first.output
    again = runner.invoke(main, ["publish", str(dotted.path), "--out", str(out)])
    assert "match files copied from the site published before, 0 made" in again.output
    (out / "publish-cache.json").write_bytes(b"\x00" * 100)
    broken = runner.invoke(main, ["publish", str(dotted.path), "--out", str(out)])
    assert broken.exit_code == 0 and "Traceback" not in broken.output
    assert "copied from the site" not in broken.output
    whole = runner.invoke(main, ["publish", str(dotted.path), "--out", str(out), "--no-reuse"])
    assert whole.exit_code == 0 and "copied from the site" not in whole.output
