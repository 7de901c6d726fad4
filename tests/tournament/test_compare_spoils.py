"""``referee compare``: deals spoiled by faults that are not the versions' own.

A field bot's fault (or a version's process killed on the referee's side) spoils its deal:
no observation, a fresh deal in its place (:mod:`referee.ranking.spoils`). The runs use
:class:`referee.testing.InProcessExecutor` (fake bots, the real planner, runner and store),
with twins as the two versions: every deal they play cleanly observes exactly 0, so a
spoiled deal that was counted would show.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.errors import REFEREE_KILL, UNCOUNTED_KILL
from referee.ranking.spoils import MIN_DEALS as CAP_DEALS
from referee.ranking.spoils import REFEREE_SIDE, first_cap, spoil, spoilers
from referee.ranking.sprt import MIN_DEALS, PairedDeals, Sprt
from referee.runs.comparison import ComparisonSummary, SprtProgress, run_comparison
from referee.specs import MatchSpec, StoredMatch, StoredSeat
from referee.testing import Exit, Handler, InProcessExecutor, Replies, lowest_bot, polite_bot
from referee.tournament.scheduler import compare_deal
from referee.verify.audit import verify_results

from .compare_field import compare_field

SECRET = b"s" * 32
NAMES = ("new", "old", ["crashy", "f2", "f3"])
_DEAL = re.compile(r"/d(\d+)/(new|old)/")


def crashing_in(deals: Callable[[int], bool], half: str = "new") -> Callable[[], Handler]:
    """A field bot (as ``lowest_bot``) that exits with status 3 at its first play in the
    ``half`` of every deal ``deals`` picks (the deal read from ``match_start``'s id)."""

    def make() -> Handler:
        inner = lowest_bot("crashy")
        crash = False

        def handle(msg: dict[str, Any]) -> Replies:
            nonlocal crash
            if msg.get("type") == "match_start":
                found = _DEAL.search(msg["match"])
                assert found is not None, msg["match"]
                crash = found.group(2) == half and deals(int(found.group(1)))
            if crash and msg.get("type") == "act":
                return Exit(code=3)
            return inner(msg)

        return handle

    return make


class _Killed(Exception):
    """The run was killed (the test's stand-in for SIGKILL of the whole command)."""


class _KilledAfter(InProcessExecutor):
    """Plays ``total`` matches in all, then is killed: the run stops where it is."""

    def __init__(self, handlers: dict[str, Callable[[], Handler]], total: int) -> None:
        super().__init__(handlers)
        self.left = total

    def run(self, tasks: Any, on_event: Any) -> None:
        now = tasks[: self.left]
        super().run(now, on_event)
        self.left -= len(now)
        if self.left <= 0:
            raise _Killed


TWINS_TEST = Sprt(d1=0.2)
"""A D1 far enough from 0 that identical play decides at the minimum of deals (the rule for
identical observations: :meth:`Sprt.identical_deals`), so these runs stay short."""


def _comparison(
    folder: Path,
    crashy: Callable[[], Handler],
    *,
    max_deals: int = 40,
    batch: int = 3,
    killed_after: int | None = None,
    seen: list[SprtProgress] | None = None,
) -> ComparisonSummary:
    """Twins (``lowest_bot``) compared at tables of 3 in one-round matches against
    ``crashy`` and two well-behaved field bots."""
    tournament = compare_field(
        folder, ("new", "old", "crashy", "f2", "f3"), max_rounds=1, max_deals=max_deals
    )
    handlers = {"new": lowest_bot, "old": lowest_bot, "crashy": crashy}
    handlers |= {"f2": polite_bot, "f3": lowest_bot}
    progress = seen if seen is not None else []
    return run_comparison(
        tournament,
        InProcessExecutor(handlers)
        if killed_after is None
        else _KilledAfter(handlers, killed_after),
        TWINS_TEST,
        max_deals=max_deals,
        results_dir=folder / "results",
        batch=batch,
        deal_secret=SECRET,
        on_event=lambda event: isinstance(event, SprtProgress) and progress.append(event),  # type: ignore[arg-type, func-returns-value]
    )


def _every_fifth(deal: int) -> bool:
    return deal % 5 == 2


def _crashed(deals: int) -> int:
    """How many of deals 0 to ``deals - 1`` seat the crashing bot on a fifth deal."""
    seated = [d for d in range(deals) if "crashy" in compare_deal(*NAMES, 3, d, 0, SECRET)[0].table]
    return len([d for d in seated if _every_fifth(d)])


# ------------------------------------------------------------------------------ the rule


def _match(deal: int, faults: dict[str, tuple[str, str]]) -> StoredMatch:
    """A match of deal ``deal`` (NEW's half, rotation 0) at a table of new, fa, fb."""
    spec = MatchSpec(
        key=f"cmp/d{deal:05d}/new/r0",
        table=("new", "fa", "fb"),
        deal=deal,
        rotation=0,
        deal_seed=1,
        match_seed=1,
    )
    seats = []
    for seat, name in enumerate(spec.table):
        kind, detail = faults.get(name, (None, None))
        seats.append(StoredSeat(seat, name, seat + 1, 0, kind is not None, kind, detail))
    return StoredMatch(spec, tuple(seats))


@pytest.mark.parametrize(
    ("faults", "spoiled_by"),
    [
        ({}, ()),
        ({"fa": ("timeout", "no reply within 1000 ms")}, ("fa",)),
        ({"fb": ("illegal", "7C is not in your hand")}, ("fb",)),
        ({"fa": ("crash", "exit code 1"), "fb": ("protocol", "not JSON")}, ("fa", "fb")),
        ({"new": ("crash", "exit code 1")}, ()),
        ({"new": ("timeout", "no reply")}, ()),
        ({"new": ("crash", f"killed by signal 9 (SIGKILL: {REFEREE_KILL})")}, (REFEREE_SIDE,)),
        ({"new": ("crash", f"SIGKILL: {UNCOUNTED_KILL}")}, (REFEREE_SIDE,)),
    ],
)
def test_a_deal_is_spoiled_by_field_faults_and_kills_on_the_referees_side(
    faults: dict[str, tuple[str, str]], spoiled_by: tuple[str, ...]
) -> None:
    assert spoilers(_match(0, faults), ("new", "old")) == spoiled_by


def test_the_cap_reads_deals_in_order_from_the_eighth() -> None:
    """2 of 7 deals is no cap; 3 of 8 is more than a quarter; the cap is the same whatever
    order the matches came in, and waits for a deal still open."""
    matches = []
    for deal in range(10):
        fault = {"fa": ("crash", "exit code 1")} if deal in (0, 3, 7) else {}
        matches += [_match(deal, fault), _match(deal, {})]
    for order in (matches, matches[::-1]):
        deals = PairedDeals("new", "old", 1)
        for match in order:
            spoil(deals, match)
            if match.spec.deal != 7:  # deal 7 is still open
                deals.scores[match.spec.deal] = {("new", 0): 0.0, ("old", 0): 0.0}
        assert first_cap(deals) is None
        deals.scores[7] = {("new", 0): 0.0, ("old", 0): 0.0}
        cap = first_cap(deals, examples={"fa": "cmp/d00000/new/r0: crash: exit code 1"})
        assert cap is not None and (cap.name, cap.spoiled, cap.deals, cap.deal) == ("fa", 3, 8, 7)
        assert "field bot fa spoiled 3 of the first 8 deals" in cap.message()
        assert "exit code 1" in cap.message()
    assert CAP_DEALS == 8


# ------------------------------------------------------------------------------ the runs


def test_spoiled_deals_are_replayed_on_fresh_cards_and_change_no_verdict(tmp_path: Path) -> None:
    """The field bot crashes in NEW's half of every fifth deal: counted, each would favour
    NEW; spoiled, the twins still observe 0 on every deal, and the test takes H0 after as
    many good deals as without the crashes, on as many more deals as were spoiled. Played
    in batches of 1, or in batches of 4 interrupted and resumed, the deals are the same."""
    seen: list[SprtProgress] = []
    one = _comparison(tmp_path / "one", crashing_in(_every_fifth), batch=1, seen=seen)
    assert one.state.decision == "H0" and one.state.difference == 0
    assert one.state.deals == MIN_DEALS
    spoiled = one.spoiled
    assert one.matches == (MIN_DEALS + spoiled) * 6
    assert spoiled == _crashed(one.matches // 6) >= 2
    assert one.spoiled_by == (("crashy", spoiled),) and one.capped is None
    assert seen[-1].spoiled == spoiled and seen[-1].spoiled_by == one.spoiled_by

    with pytest.raises(_Killed):
        _comparison(tmp_path / "four", crashing_in(_every_fifth), batch=4, killed_after=40)
    resumed = _comparison(tmp_path / "four", crashing_in(_every_fifth), batch=4)
    assert resumed.state == one.state, "the same deals, the same verdict"
    assert resumed.matches >= one.matches, "a batch may go past the deal it decided at"
    assert resumed.spoiled_by == (("crashy", _crashed(resumed.matches // 6)),)

    found = verify_results(tmp_path / "one" / "results")
    assert found.ok, found.problems
    assert found.spoiled == {"crashy": spoiled}


def test_a_field_bot_that_always_crashes_stops_the_run_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = _comparison(tmp_path, crashing_in(lambda deal: True, half="old"), batch=4)
    cap = summary.capped
    assert cap is not None and cap.name == "crashy"
    assert cap.deals == CAP_DEALS and cap.spoiled > CAP_DEALS / 4
    assert summary.state.decision == "undecided"
    assert summary.matches <= (CAP_DEALS + 4) * 6, "stopped within a batch of the cap"
    assert "field bot crashy spoiled" in cap.message() and "exit code 3" in cap.message()
    _reported_capped(summary, capsys)


def _reported_capped(summary: ComparisonSummary, capsys: pytest.CaptureFixture[str]) -> None:
    """The command says why it stopped, in its verdict, its JSON and one line on stderr,
    and exits with 1 without a traceback."""
    import json
    from types import SimpleNamespace

    from referee.cli.compare import _report
    from referee.runs.comparison import progress_line

    tournament = SimpleNamespace(
        file=SimpleNamespace(candidate="new", baseline="old", compare=None),
        entrants=["new", "old", "crashy", "f2", "f3"],
    )
    for as_json in (False, True):
        with pytest.raises(SystemExit) as stop:
            _report(summary, tournament, Sprt(), 240, as_json)
        assert stop.value.code == 1
        said, err = capsys.readouterr()
        assert "Traceback" not in said + err
        assert "referee: stopped: field bot crashy spoiled" in err
        if as_json:
            data = json.loads(said)
            assert data["decision"] == "undecided" and data["spoiled_by"]["crashy"] >= 3
            assert data["stopped"]["field_bot"] == "crashy"
            assert data["stopped"]["deals"] == CAP_DEALS
        else:
            assert said.startswith("stopped: field bot crashy spoiled")
            assert "deals spoiled (crashy " in said
    line = progress_line(SprtProgress(summary.state, 1, 1, 2, 5, (("crashy", 2),)))
    assert line.endswith("1 faults, 2 deals spoiled (crashy 2)")
