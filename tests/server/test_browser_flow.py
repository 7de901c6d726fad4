"""An author's whole visit in a real browser: Debian's Chromium against a real ``referee serve``.

One server (:func:`tests.server.conftest.start`: the league of three instant bots, playing)
serves the module. Chromium, driven by Playwright (:mod:`tests.publish.test_browser` finds
it, launches it and says why it skips; under ``CI=true`` it fails instead), opens the live
leaderboard in one tab and, in another, signs in with a token, uploads a bot through the
form, watches the check until it is accepted, then sees the bot appear in the first tab's
table by the page's own polling, and finds the submission on the author's page. It does so
at a desktop width and at a phone's 390 px, where no page may scroll sideways and the
leaderboard scrolls in its frame, saying so. A bot whose check fails with markup on stderr
shows it as text, and the markup never runs.

A tab that reloads loses the ``window`` marker set when it was opened: that is how "without
reloading" is checked. Every page is watched (console errors, uncaught exceptions,
dialogs fail the test); screenshots go to ``test-artifacts/server/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.publish.test_browser import CHROMIUM_FLAGS, Watched, _require_browser
from tests.server.conftest import Server, bot_source, start, write_league

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "server"
SCREENS = {"desktop": (1280, 900), "phone": (390, 844)}
FLOWS = {
    # screen: (author, file, strategy, name asked for on the form)
    "desktop": ("dana", "deskbot.py", "pairs", "<b>bold</b> bot"),
    "phone": ("pia", "phonebot.py", "last", "phone-bot"),
}
XSS = "<img src=x onerror=window.__xss=1>"
FAILING_BOT = f"import sys\nsys.stderr.write({XSS!r} + '\\n')\nsys.stderr.flush()\nsys.exit(3)\n"
VERDICT_MS = 90_000
"""How long a check or the league's next batch may take on a loaded machine."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``referee serve`` of the three-bot league, playing, for the module."""
    _require_browser()
    running = start(write_league(tmp_path_factory.mktemp("serve")))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium with a fresh profile (one for the module)."""
    from playwright.sync_api import sync_playwright

    chromium = _require_browser()
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A browser context of its own (its own cookies: one author) for a test."""
    made = browser.new_context()
    try:
        yield made
    finally:
        made.close()


class Tab(Watched):
    """A watched tab of the server's pages, at one screen size."""

    def __init__(self, context: Any, server: Server, screen: str) -> None:
        super().__init__(context.new_page())
        self.server = server
        self.screen = screen
        width, height = SCREENS[screen]
        self.page.set_viewport_size({"width": width, "height": height})
        self.page.on("response", self._answered)

    def _answered(self, response: Any) -> None:
        if response.status >= 400:
            self.problems.append(f"{response.status} for {response.url}")

    def visit(self, path: str) -> None:
        self.page.goto(self.server.url + path)
        self.settled()

    def settled(self) -> None:
        """The page loaded; marked, so that a reload shows (the marker is gone)."""
        self.page.wait_for_load_state("load")
        self.page.evaluate("window.__opened = true")

    def not_reloaded(self) -> bool:
        self.page.wait_for_load_state("load")
        return bool(self.page.evaluate("window.__opened === true"))

    def fits_the_screen(self) -> None:
        width = SCREENS[self.screen][0]
        scroll = self.page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, f"{self.page.url} scrolls sideways at {width} px ({scroll} px)"

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{self.screen}-{name}.png"), full_page=True)


@contextmanager
def _tabs(context: Any, server: Server, screen: str, count: int) -> Iterator[list[Tab]]:
    """``count`` tabs; none of them may have met a problem by the end."""
    tabs = [Tab(context, server, screen) for _ in range(count)]
    yield tabs
    problems = [p for tab in tabs for p in tab.problems]
    for tab in tabs:
        tab.page.close()
    assert problems == []


def _sign_in(tab: Tab, token: str) -> None:
    tab.page.locator("header nav a", has_text="sign in").click()
    tab.settled()
    assert tab.page.url == tab.server.url + "/signin"
    tab.fits_the_screen()
    tab.shot("signin")
    tab.page.fill("#token", token)
    tab.page.locator("main form button[type=submit]").click()
    tab.settled()
    assert tab.page.url == tab.server.url + "/me"


def _upload(tab: Tab, filename: str, data: bytes, name: str | None = None) -> str:
    """Upload through the form on /me; the status the submission page first shows."""
    tab.page.set_input_files(
        "#bot", files=[{"name": filename, "mimeType": "text/x-python", "buffer": data}]
    )
    if name is not None:
        tab.page.fill("#name", name)
    tab.page.locator("main form button[type=submit]", has_text="Upload").click()
    tab.settled()
    assert "/me/submissions/" in tab.page.url, tab.page.content()
    return str(tab.page.locator("#status").text_content())


def _await_verdict(tab: Tab, verdict: str) -> None:
    tab.page.wait_for_function(
        "v => document.getElementById('status').textContent === v", arg=verdict, timeout=VERDICT_MS
    )


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_sign_in_upload_watch_the_check_and_see_the_bot_on_the_live_leaderboard(
    server: Server, context: Any, screen: str
) -> None:
    author, filename, strategy, name = FLOWS[screen]
    token = server.add_author(author)
    with _tabs(context, server, screen, 2) as (board, flow):
        board.visit("/")  # the live leaderboard, open all along
        assert board.page.locator("#board tbody", has_text=name).count() == 0
        board.fits_the_screen()
        flow.visit("/")
        _sign_in(flow, token)
        flow.fits_the_screen()
        flow.shot("me-empty")

        first = _upload(flow, filename, bot_source(strategy), name)
        assert first in ("queued", "checking"), "the check ended before its page showed"
        _await_verdict(flow, "accepted")
        assert flow.not_reloaded(), "the submission page reloaded to show its verdict"
        assert flow.page.locator("#status.status-accepted").count() == 1
        assert flow.page.locator("#entered").is_visible()
        assert flow.page.locator("#entrant").text_content() == name
        assert flow.page.locator("#version").text_content() == ", version 1"
        report = str(flow.page.locator("#report").text_content())
        assert report.splitlines()[-1].startswith(f"accepted: {name} entered in open.toml")
        assert flow.page.locator("main b").count() == 0  # the name's markup is text
        flow.fits_the_screen()
        flow.shot("submission-accepted")

        # The board tab sees the bot once the league has played it, by polling alone.
        row = board.page.locator("#board tbody tr", has=board.page.get_by_text(name, exact=True))
        row.wait_for(timeout=VERDICT_MS)
        assert board.not_reloaded(), "the leaderboard reloaded to show the new bot"
        assert board.page.locator("#board b").count() == 0
        board.fits_the_screen()
        _the_table_scrolls_on_a_phone_only(board)
        board.shot("leaderboard-live")

        flow.page.locator("header nav a", has_text=author).click()
        flow.settled()
        assert flow.page.url == server.url + "/me"
        mine = flow.page.locator("#submissions tbody tr")
        assert mine.count() == 1
        assert [str(c).strip() for c in mine.first.locator("td").all_text_contents()][1:] == [
            filename,
            "accepted",
            name,
        ]
        flow.fits_the_screen()
        flow.shot("me-listed")


def _the_table_scrolls_on_a_phone_only(board: Tab) -> None:
    """At 390 px the table is wider than its frame, which scrolls and says so; on a desktop
    it fits and says nothing."""
    frame = board.page.locator("#board-scroll")
    hint = board.page.locator("#board-wrap .scroll-hint")
    scroll, client = frame.evaluate("f => [f.scrollWidth, f.clientWidth]")
    if board.screen == "desktop":
        assert scroll <= client and not hint.is_visible()
        return
    assert scroll > client, "at 390 px the leaderboard is wider than its frame"
    assert hint.is_visible() and "scrolls sideways" in str(hint.text_content())
    frame.evaluate("f => { f.scrollLeft = f.scrollWidth; }")
    assert frame.evaluate("f => f.scrollLeft") > 0
    last = board.page.locator("#board thead th").last.bounding_box()
    box = frame.bounding_box()
    assert last is not None and box is not None
    assert last["x"] + last["width"] <= box["x"] + box["width"] + 1, "the last column is shown"


def test_a_failed_check_shows_the_bots_markup_as_text_and_runs_none(
    server: Server, context: Any
) -> None:
    token = server.add_author("xavier")
    with _tabs(context, server, "phone", 1) as (tab,):
        tab.visit("/")
        _sign_in(tab, token)
        _upload(tab, "loud.py", FAILING_BOT.encode())
        _await_verdict(tab, "refused")
        report = str(tab.page.locator("#report").text_content())
        assert "bot refused: crash" in report and XSS in report.splitlines()[-1]
        assert tab.page.locator("img").count() == 0
        assert tab.page.evaluate("typeof window.__xss") == "undefined"
        tab.fits_the_screen()
        tab.shot("submission-refused")
        tab.visit("/me")
        assert tab.page.locator("#submissions .status-refused").count() == 1
        tab.fits_the_screen()
