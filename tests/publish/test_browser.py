"""The published site in a real browser: Debian's Chromium, headless, every page from file://.

A small tournament is played for real (process sandbox) among three plain bots and one
called ``<img src=x onerror=alert(1)>`` that writes markup to stderr (more than the 64 KiB
kept, and a ``<script>`` line before every reply) and answers with a hostile line, so it
faults in every match. The site is published, then Chromium (driven by
Playwright, pointed at /usr/bin/chromium: no browser is downloaded) opens it from disk.

Every page visited is watched: a console error, an uncaught exception or a dialog fails the
test that opened it. A screenshot of every page is saved in ``test-artifacts/site/``.
Without Chromium or Playwright the module skips, saying how to install them; under
``CI=true`` it fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from referee.executors.local import LocalExecutor
from referee.publish.league_site import publish_league
from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.rules.cards import DECKS, CardCodec
from referee.runs.tournament import run_tournament
from referee.text import ordinal
from referee.tournament.file import load_tournament
from tests.tournament.league_field import play as play_league
from tests.tournament.league_field import write as write_league

pytestmark = pytest.mark.slow

HOSTILE_NAME = "<img src=x onerror=alert(1)>"
PLAIN_NAMES = ("heuristic", "nodebot", "Montecarlo with a long name")
"""Single words that once broke mid-word ("heuristi|c", "nodebo|t"), and words to wrap at."""
STARTUP_STDERR = "starting up </pre><script>alert(2)</script>"
HOSTILE_REPLY = "</script><img src=x onerror=alert(3)>"
THINKING = "act %d: <script>alert(4)</script> thinking"
"""What the hostile bot writes to stderr before each reply (%d: the request id)."""
FILLER = ("." * 99 + "\n") * 700
"""70,000 bytes the hostile bot writes at its first request: more than the 64 KiB kept."""
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "site"
CHROMIUM_FLAGS = [
    "--no-sandbox",  # we run as root; the page is our own files
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PLAIN_BOT = """\
import json, sys
PICK = {pick}
for line in sys.stdin:
    msg = json.loads(line)
    kind = msg.get("type")
    if kind == "hello":
        reply = {{"type": "ready", "name": "plain"}}
    elif kind == "act":
        hand = msg.get("hand") or []
        if msg["kind"] == "give":
            reply = {{"cards": hand[: msg["count"]]}}
        elif msg["kind"] == "leftover":
            reply = {{"take": msg["offer"][0], "discard": hand[0]}}
        else:
            legal = msg.get("legal") or [[]]
            reply = {{"cards": legal[PICK % len(legal)]}}
    elif kind == "bye":
        break
    else:
        continue
    reply["id"] = msg["id"]
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""

HOSTILE_BOT = f"""\
import json, sys
sys.stderr.write({STARTUP_STDERR!r} + "\\n")
sys.stderr.flush()
asked = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "hello":
        sys.stdout.write(json.dumps({{"id": msg["id"], "type": "ready", "name": "x"}}) + "\\n")
    elif msg.get("type") == "act":
        asked += 1
        if asked == 1:
            sys.stderr.write(("." * 99 + "\\n") * 700)  # FILLER
        sys.stderr.write({THINKING!r} % msg["id"] + "\\n")
        sys.stderr.flush()
        if asked > 2:
            sys.stderr.write("about to fail at request %d\\n" % msg["id"])
            sys.stderr.flush()
            sys.stdout.write({HOSTILE_REPLY!r} + "\\n")
        else:
            legal = msg.get("legal") or [[]]
            hand = msg.get("hand") or []
            reply = {{"id": msg["id"], "cards": legal[0] if msg["kind"] == "play" else hand[: msg.get("count", 1)]}}
            if msg["kind"] == "leftover":
                reply = {{"id": msg["id"], "take": msg["offer"][0], "discard": hand[0]}}
            sys.stdout.write(json.dumps(reply) + "\\n")
    elif msg.get("type") == "bye":
        break
    sys.stdout.flush()
"""


def _require_browser() -> str:
    """The path of Debian's Chromium; a skip here, a failure under CI=true."""
    strict = os.environ.get("CI") == "true"
    problem = None
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        problem = "Debian's chromium is not installed (apt-get install chromium; .ci/setup-machine does it)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "Playwright for Python is not installed (pip install -e '.[dev]')"
    if problem is not None:
        if strict:
            pytest.fail(f"CI=true but {problem}")
        pytest.skip(f"{problem}; under CI=true this fails")
    return chromium


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tournament (4 bots, 3 per table, 1 deal: 12 matches), published."""
    _require_browser()
    folder = tmp_path_factory.mktemp("browser")
    entries = []
    for i, pick in enumerate((0, -1, 1)):
        (folder / f"plain{i}.py").write_text(PLAIN_BOT.format(pick=pick))
        entries.append(f'[[bots]]\npath = "plain{i}.py"\nname = "{PLAIN_NAMES[i]}"\n')
    (folder / "hostile.py").write_text(HOSTILE_BOT)
    entries.append(f'[[bots]]\npath = "hostile.py"\nname = "{HOSTILE_NAME}"\n')
    path = folder / "web.toml"
    path.write_text(
        'name = "web"\nrules = { preset = "arschloch", target = 3 }\ntable_size = 3\n'
        "deals = 1\nseed = 3\n[time]\nmove_ms = 2000\nbank_ms = 5000\n"
        '[sandbox]\nbackend = "process"\nmemory_mb = 256\n\n' + "\n".join(entries)
    )
    spec = load_tournament(path)
    summary = run_tournament(spec, LocalExecutor(2), restart=True)
    assert summary.done == summary.total == 12 and not summary.failed
    out = folder / "site"
    publish_site(load_results(spec), out)
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    return out


@pytest.fixture(scope="module")
def league_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The league of ``tests/tournament/league_field.py`` (ten in-memory bots, tables of
    four) after one batch, published."""
    _require_browser()
    path = write_league(tmp_path_factory.mktemp("league") / "lg")
    # Played in a thread of its own: Playwright's event loop may run in this one.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(play_league, path, batches=1).result()
    out = path.parent / "site"
    publish_league(load_tournament(path), out)
    return out


@pytest.fixture(scope="module")
def browser(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium with a fresh profile (one for the module)."""
    from playwright.sync_api import sync_playwright

    chromium = _require_browser()
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


class Watched:
    """A page whose console errors, uncaught exceptions and dialogs are recorded."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"uncaught: {exc}"))
        page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"a dialog opened: {dialog.message!r}")
        dialog.dismiss()

    def open(self, path: Path, anchor: str = "") -> None:
        self.page.goto(path.as_uri() + anchor)
        self.page.wait_for_load_state("load")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def page(browser: Any) -> Iterator[Watched]:
    watched = Watched(browser.new_page())
    yield watched
    watched.page.close()
    assert watched.problems == []


def _names(page: Any, selector: str) -> list[str]:
    return [str(t).strip() for t in page.locator(selector).all_text_contents()]


def test_the_leaderboard_has_a_row_per_bot_in_the_order_of_leaderboard_json(
    site: Path, page: Watched
) -> None:
    board = json.loads((site / "leaderboard.json").read_text())
    page.open(site / "index.html")
    names = _names(page.page, "#leaderboard tbody tr td:nth-child(2)")
    assert names == [e["name"] for e in board["entries"]]
    assert len(names) == 4 and HOSTILE_NAME in names
    assert page.page.locator("img").count() == 0
    page.shot("index")


def test_sorting_a_column_orders_the_rows_by_it(site: Path, page: Watched) -> None:
    board = json.loads((site / "leaderboard.json").read_text())
    by_score = sorted(board["entries"], key=lambda e: e["score"])
    page.open(site / "index.html")
    header = page.page.locator("#leaderboard thead th", has_text="score").first
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    rows = "#leaderboard tbody tr td:nth-child(2)"
    assert _names(page.page, rows) == [e["name"] for e in by_score]
    header.locator("button").click()
    assert _names(page.page, rows) == [e["name"] for e in reversed(by_score)]
    page.page.locator("#leaderboard thead th button", has_text="bot").click()
    assert _names(page.page, rows) == sorted(_names(page.page, rows), key=str.lower)
    page.shot("index-sorted")


def test_a_bot_page_opens_from_the_table_and_shows_its_faults_with_stderr(
    site: Path, page: Watched
) -> None:
    page.open(site / "index.html")
    page.page.locator("#leaderboard a", has_text=HOSTILE_NAME).click()
    page.page.wait_for_load_state("load")
    assert page.page.url.endswith("/bots/img-src-x-onerror-alert-1.html")
    assert page.page.locator("h1 .bot-name").text_content() == HOSTILE_NAME
    faults = page.page.locator("details.fault")
    assert faults.count() == 9  # 3 tables x 3 rotations, a fault in each
    groups = page.page.locator("section.fault-group")
    assert groups.count() == 1  # the same kind and the same reply each time: one group
    assert groups.first.locator("pre.reply").count() == 1  # the reply, shown once
    assert groups.first.locator("pre.reply").text_content() == HOSTILE_REPLY
    assert "\u00d7 9" in str(groups.first.locator("h3").text_content())
    first = faults.first
    request = json.loads(str(first.locator("pre.request").text_content()))
    assert request["type"] == "act" and request["id"] == int(
        str(first.locator("dl.evidence dd").nth(1).text_content())
    )
    stderr = str(first.locator("pre.stderr").text_content())
    assert STARTUP_STDERR in stderr and "about to fail at request" in stderr
    assert page.page.locator("img, script:not([src])").count() == 0
    page.shot("bot-hostile")
    first.locator("a.replay-link").click()
    page.page.wait_for_load_state("load")
    assert "#L" in page.page.url
    assert "forfeits (protocol" in str(page.page.locator("#narration").text_content())
    page.shot("match-at-fault")


def _pretty(codec: CardCodec, cards: list[str]) -> list[str]:
    return [codec.pretty(i) for i in sorted(codec.ids[c] for c in cards)]


def test_the_replay_shows_the_first_cards_and_ends_on_the_final_standings(
    site: Path, page: Watched
) -> None:
    match = sorted((site / "matches").glob("*.html"))[0]
    lines = [json.loads(x) for x in match.with_suffix(".jsonl").read_text().splitlines()]
    header = lines[0]
    codec = CardCodec(DECKS[header["rules"]["deck"]], header["rules"]["ranks"])
    page.open(match)
    hands = page.page.locator("#seats .seat > .cards")
    assert [_names(hands.nth(s), ".card") for s in range(3)] == [
        _pretty(codec, hand) for hand in lines[1]["hands"]
    ]
    first = next(i for i, row in enumerate(lines) if row["type"] == "played")
    for _ in range(first - 1):
        page.page.locator("#controls button", has_text="next").click()
    assert _names(page.page, "#trick .card") == _pretty(codec, lines[first]["cards"])
    assert "plays" in str(page.page.locator("#narration").text_content())
    page.shot("match-first-play")
    page.page.keyboard.press("End")
    rows = page.page.locator("table.final-standings tr")
    shown = [_names(rows.nth(i), "td")[:3] for i in range(1, rows.count())]
    standings = lines[-1]["standings"]
    assert shown == [
        [ordinal(st["place"]), header["players"][st["seat"]], str(st["score"])] for st in standings
    ]
    page.shot("match-end")


def _stderr_of(path: Path) -> dict[str, Any]:
    """The data of a published ``.stderr.js``."""
    text = path.read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text[text.index("=") + 1 :].strip().removesuffix(";"))
    return data


def test_the_stderr_panel_follows_the_replay_and_shows_markup_as_text(
    site: Path, page: Watched
) -> None:
    match = next(
        p
        for p in sorted((site / "matches").glob("*.html"))
        if HOSTILE_NAME in [s["name"] for s in _stderr_of(p.with_suffix(".stderr.js"))["seats"]]
    )
    seats = _stderr_of(match.with_suffix(".stderr.js"))["seats"]
    hostile = next(s for s in seats if s["name"] == HOSTILE_NAME)
    assert hostile["written"] > len(FILLER) and hostile["cut"] == hostile["written"] - 65536
    thinking = [(line, text) for line, text in hostile["pieces"] if "thinking" in text]
    assert len(thinking) == 3  # before each of its replies, the third a fault
    log = [json.loads(x) for x in match.with_suffix(".jsonl").read_text().splitlines()]
    moves = [log[at - 1] for at, _ in thinking]  # lines are numbered from 1, the header
    assert [row.get("seat", row.get("from")) for row in moves] == [hostile["seat"]] * 3
    assert moves[-1]["type"] == "fault" and all(row["type"] != "fault" for row in moves[:2])
    line, text = thinking[1]
    panel = page.page.locator(f'#outputs .output[data-seat="{hostile["seat"]}"]')
    page.open(match, f"#L{line}")  # the move it wrote that before
    now = panel.locator("mark.now")
    assert now.count() == 1 and now.text_content() == text
    assert "<script>alert(4)</script>" in text and "wrote" in str(panel.get_attribute("class"))
    assert panel.locator(".cut").text_content() == f"… {hostile['cut']:,} bytes cut …\n"
    assert page.page.locator("script:not([src]), #outputs script, #outputs b").count() == 0
    page.shot("match-stderr-at-move")
    page.page.keyboard.press("ArrowLeft")  # one line back: not written yet
    shown = str(panel.locator("pre").text_content())
    assert text not in shown and thinking[0][1] in shown
    assert panel.locator("mark.now").count() == 0
    page.page.keyboard.press("End")
    shown = str(panel.locator("pre").text_content())
    assert all(t in shown for _, t in thinking)
    page.page.set_viewport_size({"width": 390, "height": 844})
    width = page.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the stderr panel makes the page scroll sideways ({width} px)"
    page.shot("phone-match-stderr")


def test_the_match_list_filters_by_bot(site: Path, page: Watched) -> None:
    page.open(site / "matches.html")
    rows = page.page.locator("#match-list tbody tr")
    assert rows.count() == 12
    page.page.select_option("#bot-filter", label=HOSTILE_NAME)
    assert page.page.locator("#match-list tbody tr:visible").count() == 9
    page.shot("matches-filtered")


def test_every_page_opens_without_an_error_a_dialog_or_an_image(site: Path, page: Watched) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) == 3 + 4 + 12
    for path in pages:
        page.open(path)
        assert page.page.locator("img").count() == 0, path
        name = path.relative_to(site).with_suffix("").as_posix().replace("/", "--")
        page.shot(name)
    assert page.problems == []
    page.open(site / "matches.html")
    assert HOSTILE_NAME in _names(page.page, "#bot-filter option")


def test_pointing_at_a_bot_in_the_legend_picks_out_its_line(site: Path, page: Watched) -> None:
    page.open(site / "index.html", "#history")
    page.page.hover('ol.legend li[data-series="2"]')
    assert "focus" in str(page.page.get_attribute("#history-chart", "class"))
    lines = page.page.locator("svg.chart .series.on")
    assert lines.count() == 1 and lines.first.get_attribute("data-series") == "2"
    page.page.click('ol.legend li[data-series="2"]')  # pinned: stays when the pointer leaves
    page.page.mouse.move(0, 0)
    assert page.page.locator("svg.chart .series.on").count() == 1
    page.shot("index-history-highlight")


def test_the_collusion_check_opens_from_the_menu_and_sorts(site: Path, page: Watched) -> None:
    data = json.loads((site / "leaderboard.json").read_text())["collusion"]
    page.open(site / "index.html")
    page.page.locator("header nav a", has_text="Collusion check").click()
    page.page.wait_for_load_state("load")
    assert page.page.url.endswith("/collusion.html")
    rows = page.page.locator("#collusion tbody tr")
    assert rows.count() == len(data["pairs"]) == 6  # every pair of the four bots met
    first = "#collusion tbody tr td:nth-child(1)"
    assert _names(page.page, first) == [p["a"] for p in data["pairs"]]
    assert HOSTILE_NAME in _names(page.page, first) + _names(
        page.page, "#collusion td:nth-child(2)"
    )
    assert page.page.locator("img, script:not([src])").count() == 0
    page.page.locator("#collusion thead th button", has_text="matches").click()
    counts = [int(c) for c in _names(page.page, "#collusion tbody tr td:nth-child(3)")]
    assert counts == sorted(counts)
    page.page.locator("#collusion thead th button", has_text="A").first.click()
    assert _names(page.page, first) == sorted(_names(page.page, first), key=str.lower)
    page.shot("collusion")


def test_a_mid_run_bot_page_holds_back_the_evidence_of_an_open_deal(
    tmp_path: Path, page: Watched
) -> None:
    import sqlite3

    from tests.publish.conftest import HOSTILE_NAME as FAKE_HOSTILE
    from tests.publish.conftest import play_fake, write_fake_tournament

    # Played in a thread of its own: Playwright's event loop runs in this one.
    with ThreadPoolExecutor(1) as thread:
        # Rotations share their deal (at four bots, tables of three share none otherwise).
        written = write_fake_tournament(tmp_path / "t", deals=1, extra='duplicate = "rotations"')
        spec = thread.submit(play_fake, written).result()
    results = load_results(spec)
    faulted = next(f for f in results.faults if f.name == FAKE_HOSTILE)
    deal = results.specs[faulted.key].deal_id
    other = next(k for k, s in results.specs.items() if s.deal_id == deal and k != faulted.key)
    db = sqlite3.connect(spec.results_dir / "results.sqlite")
    with db:  # the deal is still being played: it is open
        db.execute("UPDATE matches SET status = 'running' WHERE key = ?", (other,))
    db.close()
    out = tmp_path / "site"
    publish_site(load_results(spec), out)
    page.open(out / "bots" / "img-src-x-onerror-alert-1.html")
    held = page.page.locator("section.fault-group", has=page.page.locator("p.held"))
    assert held.count() >= 1 and held.first.locator("details.fault").count() >= 1
    assert held.first.locator("pre.reply, pre.stderr, pre.request").count() == 0
    assert page.page.locator("img, script:not([src])").count() == 0
    page.shot("bot-mid-run")
    page.open(out / "collusion.html")
    assert page.page.locator("#collusion tbody tr").count() == 6


# --------------------------------------------------------------------------- any screen

# Every word of every name-bearing element, as a Range: a word whose rectangles sit on more
# than one line was broken inside it. Words end at spaces and hyphens (a line may break
# after a hyphen: that is between words).
_BROKEN_WORDS = """
(selector) => {
  const broken = [];
  for (const el of document.querySelectorAll(selector)) {
    if (el.getClientRects().length === 0) continue;  // not displayed (a closed <details>)
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const words = /[^\\s-]+/g;
      for (let m = words.exec(node.textContent); m; m = words.exec(node.textContent)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set(
          [...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top))
        );
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}
"""
_NAMES = ".bot, .bot-name, .match-name, .seat-name, .legend-name, #leaderboard td:nth-child(2)"
_WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}


def _lines(page: Any, selector: str) -> list[int]:
    """How many lines each element's text takes."""
    return page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)].map(el => {
            const range = document.createRange();
            range.selectNodeContents(el);
            return new Set([...range.getClientRects()].filter(r => r.width > 0)
                .map(r => Math.round(r.top))).size;
        })""",
        selector,
    )


@pytest.mark.parametrize("screen", sorted(_WIDTHS))
def test_names_never_break_inside_a_word_and_no_page_scrolls_sideways(
    site: Path, page: Watched, screen: str
) -> None:
    width, height = _WIDTHS[screen]
    page.page.set_viewport_size({"width": width, "height": height})
    match = sorted((site / "matches").glob("*.html"))[0]
    hostile_page = site / "bots" / "img-src-x-onerror-alert-1.html"
    for path in (
        site / "index.html",
        site / "matches.html",
        site / "collusion.html",
        site / "bots" / "heuristic.html",
        hostile_page,
        match,
    ):
        page.open(path)
        assert page.page.evaluate(_BROKEN_WORDS, _NAMES) == [], (screen, path.name)
        scroll = page.page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, f"{path.name} scrolls sideways at {width} px ({scroll} px)"
        page.shot(
            f"{screen}-{path.relative_to(site).with_suffix('').as_posix().replace('/', '--')}"
        )
    assert page.problems == []


def _scroll_cues(page: Any) -> tuple[bool, bool]:
    """Whether the leaderboard's "scroll" hint and its fading right edge are shown."""
    frame = page.locator("#leaderboard-section .scroll-frame")
    edge = frame.evaluate("f => getComputedStyle(f, '::after').visibility")
    return frame.locator(".scroll-hint").is_visible(), edge == "visible"


def _inside(inner: dict[str, float] | None, outer: dict[str, float] | None) -> bool:
    """Whether a bounding box lies within another (a pixel of rounding either side)."""
    assert inner is not None and outer is not None
    return (
        outer["x"] - 1 <= inner["x"]
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
        and outer["y"] - 1 <= inner["y"]
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
    )


@pytest.mark.parametrize("which", ["tournament", "league"])
def test_on_a_phone_the_leaderboard_scrolls_in_its_frame_keeping_the_names(
    site: Path, league_site: Path, page: Watched, which: str
) -> None:
    page.page.set_viewport_size({"width": 390, "height": 844})
    page.open((site if which == "tournament" else league_site) / "index.html")
    width = page.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the {which}'s leaderboard page scrolls sideways ({width} px)"
    frame = page.page.locator("#leaderboard-section .scroll").first
    sizes = frame.evaluate("f => [f.scrollWidth, f.clientWidth]")
    assert sizes[0] > sizes[1], "at 390 px the table is wider than its frame: it must scroll"
    assert _scroll_cues(page.page) == (True, True), "the hint and the edge say it scrolls"
    box = frame.bounding_box()
    # Before any scrolling the rank, the name and the score are in view, whole.
    for column in ("#", "bot", "score"):
        header = page.page.locator("#leaderboard thead th", has_text=column).first
        assert _inside(header.bounding_box(), box), f"the {column} column is cut"
    names = page.page.locator("#leaderboard tbody td:nth-child(2)")
    assert names.count() == (4 if which == "tournament" else 10)
    # A single word is one line; each name takes at most two lines (it wraps at spaces).
    assert all(n <= 2 for n in _lines(page.page, "#leaderboard tbody td:nth-child(2) .bot"))
    frame.evaluate("f => { f.scrollLeft = f.scrollWidth; }")
    assert frame.evaluate("f => f.scrollLeft") > 0
    # At the right end the edge has nothing left to fade; the hint stays (it scrolls back).
    page.page.wait_for_function(
        "() => !document.querySelector('#leaderboard-section .scroll-frame')"
        ".classList.contains('more-right')"
    )
    assert _scroll_cues(page.page) == (True, False)
    for i in range(names.count()):
        names.nth(i).scroll_into_view_if_needed()  # the page, down to the row (ten in a league)
        box = frame.bounding_box()
        cell = names.nth(i).bounding_box()
        assert cell is not None and box is not None
        assert (
            box["x"] - 1 <= cell["x"] and cell["x"] + cell["width"] <= box["x"] + box["width"] + 1
        )
        # Nothing scrolled over it: the name is what the screen shows at its middle.
        shown = page.page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('td')?.cellIndex",
            [cell["x"] + cell["width"] / 2, cell["y"] + cell["height"] / 2],
        )
        assert shown == 1, f"row {i + 1}: the name is covered after scrolling"
    # ... while the columns at the right end came into view.
    last = page.page.locator("#leaderboard thead th").last.bounding_box()
    assert last is not None and box is not None
    assert last["x"] + last["width"] <= box["x"] + box["width"] + 1
    page.shot(f"phone-{which}-index-scrolled")


def test_on_a_desktop_the_leaderboard_fits_without_scrolling(site: Path, page: Watched) -> None:
    page.page.set_viewport_size({"width": 1366, "height": 900})
    page.open(site / "index.html")
    frame = page.page.locator("#leaderboard-section .scroll").first
    scroll, client = frame.evaluate("f => [f.scrollWidth, f.clientWidth]")
    assert scroll <= client, "at 1366 px the leaderboard fits without scrolling"
    assert _scroll_cues(page.page) == (False, False), "no hint of columns out of view"
    lines = dict(
        zip(
            _names(page.page, "#leaderboard tbody td:nth-child(2)"),
            _lines(page.page, "#leaderboard tbody td:nth-child(2) .bot"),
            strict=True,
        )
    )
    assert lines["heuristic"] == lines["nodebot"] == 1  # one word, one line
    assert max(lines.values()) <= 2  # the others wrap at their spaces, if at all
    # The over-next cells say what they are, and the line under the table says which is which.
    assert "Rank: TrueSkill" in str(page.page.locator("p.how-to-read").text_content())
    page.shot("desktop-index")


_IN_VIEW = """(selectors) => selectors.map(s => {
  const r = document.querySelector(s).getBoundingClientRect();
  return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
})"""


@pytest.mark.parametrize("screen", sorted(_WIDTHS))
def test_stepping_through_a_replay_keeps_the_controls_and_the_table_in_view(
    site: Path, page: Watched, screen: str
) -> None:
    width, height = _WIDTHS[screen]
    page.page.set_viewport_size({"width": width, "height": height})
    match = sorted((site / "matches").glob("*.html"))[0]
    page.open(match)
    page.page.evaluate("document.getElementById('replay').scrollIntoView()")  # the one scroll
    at = page.page.evaluate("scrollY")
    step = page.page.locator("#controls button[data-go=next]")
    for k in range(1, 13):
        step.click()
        where = f"{screen}, step {k}"
        assert page.page.evaluate("scrollY") == at, f"{where}: the page scrolled"
        assert page.page.evaluate(_IN_VIEW, ["#controls", "#table"]) == [True, True], where
    assert page.page.evaluate("document.documentElement.scrollWidth") <= width
    page.shot(f"{screen}-match-stepped")
    table, seats = (page.page.locator(s).bounding_box() for s in ("#table", "#seats"))
    assert table is not None and seats is not None
    if screen == "desktop":  # as it was: the table beside the hands
        assert table["x"] >= seats["x"] + seats["width"]
    else:  # above them, and the controls stay on the screen down to the round's log
        assert table["y"] + table["height"] <= seats["y"]
        page.page.locator("#round-log li.current").scroll_into_view_if_needed()
        assert page.page.evaluate("scrollY") > at
        assert page.page.evaluate(_IN_VIEW, ["#controls", "#round-log li.current"]) == [True] * 2
        step.click()
        # From the first event, thirteen steps: the log shows where the page went.
        assert page.page.locator("#round-log li.current").get_attribute("data-at") == "14"
