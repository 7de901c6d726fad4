"""Publishing again reuses the per-match files whose inputs are unchanged, and only those.

Each publication here is compared with a full one (``reuse=False``) of the same results into
a folder of its own: every file must be the same, byte for byte. What was made afresh is
counted where it is made (Jinja's ``render``, ``log_script``, ``stderr_script``), not
timed. The hostile cases (a reused file tampered with, a cache that lies) are in
``test_hostile_names.py`` with the other attacks on the site.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from pathlib import Path

import jinja2
import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.publish import replaydata
from referee.publish import site as site_module
from referee.publish import writer as writer_module
from referee.publish.paths import match_names
from referee.publish.reuse import CACHE
from referee.publish.settings import format_time
from referee.publish.site import SiteReport, publish_site
from referee.publish.source import StoredTournament, load_results
from referee.runs.tournament import run_tournament
from referee.stderrlog import stderr_path
from referee.testing import InProcessExecutor
from referee.tournament.file import Tournament, load_tournament
from referee.verify import verify_site
from tests.publish.conftest import HANDLERS, play_fake, write_fake_tournament

CACHE_FILE = f"{CACHE}.json"


class Made:
    """What a publication made afresh, counted where it is made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        render = jinja2.Template.render
        log_script, stderr_script = replaydata.log_script, replaydata.stderr_script

        def counted_render(template: jinja2.Template, *args: object, **kwargs: object) -> str:
            self.counts[str(template.name)] += 1
            return render(template, *args, **kwargs)

        def counted_log(raw: bytes) -> object:
            self.counts["log_script"] += 1
            return log_script(raw)

        def counted_stderr(raw: bytes) -> str:
            self.counts["stderr_script"] += 1
            return stderr_script(raw)

        monkeypatch.setattr(jinja2.Template, "render", counted_render)
        monkeypatch.setattr(writer_module, "log_script", counted_log)
        monkeypatch.setattr(writer_module, "stderr_script", counted_stderr)

    def take(self) -> Counter[str]:
        """The counts since the last call."""
        counts, self.counts = self.counts, Counter()
        return counts


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Made:
    return Made(monkeypatch)


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _match_files(folder: Path) -> set[str]:
    """The per-match files a publication may reuse."""
    return {
        name
        for name in _files(folder)
        if name.startswith("matches/") and not name.endswith(".jsonl")
    }


def _same_as_whole(results: StoredTournament, out: Path, whole: Path) -> None:
    """``out`` is, file for file and byte for byte, what a full publication of the same
    snapshot (published at the same time) writes."""
    publish_site(results, whole, reuse=False)
    mine, theirs = _files(out), _files(whole)
    assert sorted(mine) == sorted(theirs)
    different = [name for name in mine if mine[name] != theirs[name]]
    assert different == []  # the cache too: the same files, made from the same inputs


class FixedClock:
    """A wall clock stopped at ``at``."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def test_the_time_of_publication_is_the_clocks_and_only_the_stamped_files_name_it(
    fake_tournament: Tournament, tmp_path: Path
) -> None:
    """The results are published at the time of the clock they are loaded with: the same
    results at two times differ in the files that name that time, and nowhere else."""
    first, second = 1_790_000_000.0, 1_790_003_600.0  # an hour apart
    for name, when in (("first", first), ("second", second)):
        publish_site(load_results(fake_tournament, clock=FixedClock(when)), tmp_path / name)
    one, two = _files(tmp_path / "first"), _files(tmp_path / "second")
    assert sorted(one) == sorted(two)
    different = {name for name in one if one[name] != two[name]}
    assert different == STAMPED
    stamp, later = format_time(first).encode(), format_time(second).encode()
    for name in sorted(different - {"verification/site.json"}):
        assert stamp in one[name] and later not in one[name], name
        assert one[name].replace(stamp, later) == two[name], name
    # The file list records the time as it is, and the digests of the files naming it.
    assert json.loads(one["verification/site.json"])["published"] == first


STAMPED = {"index.html", "leaderboard.json", "leaderboard.md", "verification/site.json"}
"""The files that name the time of publication."""


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    """The per-match files that are new or hold other bytes."""
    return {
        name
        for name, data in after.items()
        if name.startswith("matches/") and not name.endswith(".jsonl") and before.get(name) != data
    }


def _play(path: Path, count: int | None, *, first: bool = False) -> Tournament:
    """Play ``count`` more matches of the fake tournament (all that are left: ``None``)."""
    spec = load_tournament(path)
    run_tournament(spec, InProcessExecutor(HANDLERS, stop_after=count), restart=first)
    return spec


def test_publishing_the_same_results_again_makes_nothing_and_writes_the_same_site(
    fake_tournament: Tournament, tmp_path: Path, made: Made
) -> None:
    results = load_results(fake_tournament)
    out = tmp_path / "site"
    first = publish_site(results, out)
    matches = len(results.matches)
    assert made.take()["match.html"] == matches and first.reused == 0
    assert len(first.rendered) == 3 * matches  # a page, a log script, a stderr script each
    again = publish_site(results, out)
    counts = made.take()
    assert (counts["match.html"], counts["log_script"], counts["stderr_script"]) == (0, 0, 0)
    assert counts["index.html"] == counts["matches.html"] == 1  # the rest is made whole
    assert again.reused == 3 * matches and again.rendered == ()
    assert sorted(first.rendered) == sorted(_match_files(out))
    _same_as_whole(results, out, tmp_path / "whole")


def test_new_matches_make_their_own_files_and_the_pages_they_change_and_nothing_else(
    tmp_path: Path, made: Made
) -> None:
    """Publishing while the tournament plays: deals held back, then shown; each republication
    makes exactly the files whose bytes change, and the site is the same as a whole one."""
    # Rotations share their deal: part of a deal played holds its matches back.
    path = write_fake_tournament(tmp_path / "t", deals=2, extra='duplicate = "rotations"')
    out = tmp_path / "site"
    _play(path, 10, first=True)
    report = publish_site(load_results(load_tournament(path)), out)
    assert report.withheld > 0
    was_held: set[str] = set()
    for count in (4, 5, None):  # the last publication is of the finished tournament
        before = _files(out)
        spec = _play(path, count)
        made.take()
        results = load_results(spec)
        report = publish_site(results, out)
        after = _files(out)
        assert set(report.rendered) == _changed(before, after)
        # A replay held back before and shown now: its page and scripts are made afresh.
        pages = {n for n in before if n.startswith("matches/") and n.endswith(".html")}
        held = {n.removesuffix(".html") for n in pages} - {
            n.removesuffix(".js") for n in before if n.endswith(".js")
        }
        shown = {stem for stem in held if f"{stem}.js" in after}
        assert {f"{stem}{x}" for stem in shown for x in (".html", ".js")} <= set(report.rendered)
        was_held |= shown
        counts = made.take()
        assert counts["match.html"] == sum(n.endswith(".html") for n in report.rendered)
        assert counts["log_script"] == sum(
            n.endswith(".js") and not n.endswith(".stderr.js") for n in report.rendered
        )
        assert report.reused == len(_match_files(out)) - len(report.rendered) > 0
        _same_as_whole(results, out, tmp_path / f"whole-{count}")
    assert not results.in_progress and report.withheld == 0 and was_held
    # Finished, the banner goes from every page: each is made again.
    assert {n for n in report.rendered if n.endswith(".html")} == {
        n for n in _match_files(out) if n.endswith(".html")
    }
    verification = verify_site(out)
    assert verification.ok, verification.problems
    assert CliRunner().invoke(main, ["verify", str(out)]).exit_code == 0


def _republished(results: StoredTournament, out: Path, made: Made) -> SiteReport:
    made.take()
    return publish_site(results, out)


def test_a_changed_match_flag_name_log_or_stderr_makes_exactly_the_files_it_goes_into(
    tmp_path: Path, made: Made
) -> None:
    spec = play_fake(write_fake_tournament(tmp_path / "t", deals=1))
    results = load_results(spec)
    out = tmp_path / "site"
    publish_site(results, out)
    pages = {n for n in _match_files(out) if n.endswith(".html")}
    first, second = sorted(results.records)[:2]
    stems = match_names({m.spec.key: m.spec.table for m in results.matches})

    # One match's record (its duration): its page only, not the pages linking it.
    record = results.records[first]
    records = {**results.records, first: dataclasses.replace(record, duration=99.5)}
    changed = dataclasses.replace(results, records=records)
    report = _republished(changed, out, made)
    assert report.rendered == (f"matches/{stems[first]}.html",)
    assert "played in 99.50 s" in (out / report.rendered[0]).read_text()
    _same_as_whole(changed, out, tmp_path / "whole-record")

    # Back as it was, and the same again.
    report = _republished(results, out, made)
    assert report.rendered == (f"matches/{stems[first]}.html",)

    # Still being played (a secret not revealed): every page, no script.
    hidden = tuple(dataclasses.replace(d, secret=None) for d in results.deals)
    playing = dataclasses.replace(results, deals=hidden)
    assert playing.in_progress
    report = _republished(playing, out, made)
    assert set(report.rendered) == pages
    assert made.take()["log_script"] == 0
    _same_as_whole(playing, out, tmp_path / "whole-playing")

    # Another tournament name: every page again.
    tournament = results.tournament
    renamed_file = tournament.file.model_copy(update={"name": "autumn"})
    renamed = dataclasses.replace(
        results,
        tournament=dataclasses.replace(tournament, file=renamed_file),  # type: ignore[type-var]
    )
    report = _republished(renamed, out, made)
    assert set(report.rendered) == pages
    _same_as_whole(renamed, out, tmp_path / "whole-renamed")

    # Back; then one log's bytes change (a blank line more: the same script, made again)
    # and one match's stderr: each makes its own script only.
    publish_site(results, out)
    log = results.log_path(second)
    log.write_bytes(log.read_bytes() + b"\n")
    stderr = stderr_path(results.log_path(first))
    data = json.loads(stderr.read_bytes())
    data["seats"][0]["written"] += 1
    stderr.write_text(json.dumps(data))
    report = _republished(results, out, made)
    assert set(report.rendered) == {
        f"matches/{stems[second]}.js",
        f"matches/{stems[first]}.stderr.js",
    }
    _same_as_whole(results, out, tmp_path / "whole-log")


def test_another_referee_or_template_makes_every_file_again(
    fake_tournament: Tournament, tmp_path: Path, made: Made, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = load_results(fake_tournament)
    out = tmp_path / "site"
    publish_site(results, out)
    cache = json.loads((out / CACHE_FILE).read_bytes())
    assert cache["format"] == 1 and set(cache["files"]) == _match_files(out)
    monkeypatch.setattr(site_module, "fingerprint", lambda: hashlib.sha256(b"next").hexdigest())
    report = _republished(results, out, made)
    assert report.reused == 0 and set(report.rendered) == _match_files(out)
    assert made.take()["match.html"] == len(results.matches)


def test_the_fingerprint_covers_the_templates_and_the_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from referee.publish import reuse

    before = reuse.fingerprint()
    assert reuse.fingerprint() == before
    monkeypatch.setattr("referee.__getattr__", lambda name: "99.0")
    assert reuse.fingerprint() != before
    monkeypatch.undo()
    templates = tmp_path / "publish"
    (templates / "templates").mkdir(parents=True)
    (templates / "templates" / "match.html").write_text("changed")
    (templates / "site.py").write_text("")
    monkeypatch.setattr(reuse, "_HERE", templates)
    assert reuse.fingerprint() != before
