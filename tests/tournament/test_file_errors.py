"""Tournament-file errors in the referee's words: every pydantic error type a TOML file can
cause, each worded as a person who wrote the file needs it, never as pydantic says it.

Each case is a whole file (three bots that exist, so only the mistake is reported) with one
change, and the exact clause the message must hold; no message may carry pydantic's own
phrases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.tournament.file import load_tournament

PYDANTIC_WORDS = (
    "Input should",
    "input should",
    "should have at least",
    "after validation",
    "Field required",
    "valid dictionary",
    "instance of",
    "Value error",
    "unable to parse",
)

BOTS = "".join(f'\n[[bots]]\npath = "b{i}.py"\n' for i in range(3))


def _load(tmp_path: Path, top: str = "", sections: str = "", bots: str = BOTS) -> str:
    for i in range(3):
        (tmp_path / f"b{i}.py").write_text(f"# bot {i}\n")
    path = tmp_path / "t.toml"
    path.write_text(f'name = "t"\ntable_size = 3\n{top}\n{sections}\n{bots}')
    with pytest.raises(UsageError) as caught:
        load_tournament(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for words in PYDANTIC_WORDS:
        assert words not in message, message
    return message.removeprefix(f"{path}: ")


@pytest.mark.parametrize(
    ("top", "sections", "bots", "expected"),
    [
        # too few entries (min_length of a list)
        (
            "",
            "",
            BOTS.rsplit("[[bots]]", 1)[0],
            "bots: at least 3 bots are needed, the file lists 2",
        ),
        # a missing key, the bots themselves, a key inside a section
        (
            "",
            "",
            "",
            "bots: the file lists no bots; add at least 3 [[bots]] tables, each with a path",
        ),
        ("", "", BOTS + '\n[[bots]]\nname = "x"\n', "bots[3].path: required, and missing"),
        ("playoff = { top = 3 }", "", BOTS, "playoff.budget: required, and missing"),
        # numbers out of range: the whole range, whichever end is broken
        ("deals = 0", "", BOTS, "deals: got 0; allowed: 1 to 10000"),
        ("", "[time]\nmove_ms = 0", BOTS, "time.move_ms: got 0; allowed: 1 to 3600000"),
        (
            "",
            "[ratings]\nconfidence = 1.0",
            BOTS,
            "ratings.confidence: got 1.0; allowed: above 0.5 and below 1",
        ),
        (
            "",
            "[ratings]\nconfidence = nan",
            BOTS,
            "ratings.confidence: got nan; allowed: above 0.5 and below 1",
        ),
        (
            "",
            "[ratings]\ndraw_probability = 1",
            BOTS,
            "ratings.draw_probability: got 1; allowed: 0 up to, not including, 1",
        ),
        ("", "[ratings]\nsigma = 0", BOTS, "ratings.sigma: got 0; allowed: above 0, up to 10000"),
        ("", "[ratings]\nmu = inf", BOTS, "ratings.mu: got inf; allowed: above 0, up to 10000"),
        ("", "[sandbox]\nmemory_mb = 16", BOTS, "sandbox.memory_mb: got 16; allowed: 32 to 65536"),
        # wrong types, in TOML's words
        ('deals = "four"', "", BOTS, "deals: got 'four' (text); use a whole number"),
        ("deals = 2.5", "", BOTS, "deals: got 2.5; use a whole number"),
        (
            "seed = 1979-05-27",
            "",
            BOTS,
            "seed: got 1979-05-27 (a date or time); use a whole number",
        ),
        (
            'candidate = 4\nformat = "gauntlet"',
            "",
            BOTS,
            'candidate: got 4 (a whole number); use text in quotes ("...")',
        ),
        (
            "",
            "[authors]\napart = 3",
            BOTS,
            "authors.apart: got 3 (a whole number); use true or false",
        ),
        ("", '[sandbox]\nimages = "x"', BOTS, "sandbox.images: got 'x' (text); use a list ([...])"),
        ("time = 3", "", BOTS, "time: got 3 (a whole number); use a table: [time] with its keys"),
        (
            'playoff = "top 3"',
            "",
            BOTS,
            "playoff: got 'top 3' (text); use a table: [playoff] with its keys",
        ),
        ("bots = 3", "", "", "bots: got 3 (a whole number); use a list ([...])"),
        (
            "bots = [1, 2, 3]",
            "",
            "",
            "bots[0]: got 1 (a whole number); use a table ({ key = value, ... })",
        ),
        # text too short or too long
        (
            "",
            "",
            BOTS + '\n[[bots]]\npath = ""\n',
            "bots[3].path: empty; write a value between the quotes",
        ),
        (
            "",
            '[sandbox]\nimages = [""]',
            BOTS,
            "sandbox.images[0]: empty; write a value between the quotes",
        ),
        (
            "",
            f'[sandbox]\nimages = ["{"x" * 600}"]',
            BOTS,
            "sandbox.images[0]: 600 characters; at most 512 are allowed",
        ),
        # a value not among those allowed; a name that cannot name a folder
        (
            'format = "swiss"',
            "",
            BOTS,
            "format: got 'swiss'; allowed: 'round-robin', 'gauntlet', 'league' or 'compare'",
        ),
        (
            'duplicate = "deals"',
            "",
            BOTS,
            "duplicate: got 'deals'; allowed: 'tables' or 'rotations'",
        ),
        (
            "",
            '[sandbox]\nbackend = "vm"',
            BOTS,
            "sandbox.backend: got 'vm'; allowed: 'process', 'docker' or 'auto'",
        ),
        # the rules table's own parameters, worded the same way
        (
            'rules = { preset = "arschloch", deal = "some" }',
            "",
            BOTS,
            "rules.deal: got 'some'; allowed: 'equal' or 'all'",
        ),
        (
            'rules = { preset = "arschloch", target = 0 }',
            "",
            BOTS,
            "rules.target: got 0; allowed: at least 1",
        ),
        (
            'rules = { preset = "arschloch", top_card_ends_trick = "maybe" }',
            "",
            BOTS,
            "rules.top_card_ends_trick: got 'maybe' (text); use true or false",
        ),
    ],
)
def test_each_kind_of_mistake_is_worded_by_the_referee(
    tmp_path: Path, top: str, sections: str, bots: str, expected: str
) -> None:
    assert expected in _load(tmp_path, top, sections, bots)


def test_a_bad_name_says_what_a_name_may_hold(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    for i in range(3):
        (tmp_path / f"b{i}.py").write_text(f"# bot {i}\n")
    path.write_text('name = "../x"\n' + BOTS)
    with pytest.raises(UsageError, match=r"name: got '\.\./x'; use 1 to 64 letters, digits"):
        load_tournament(path)


def test_several_mistakes_are_all_named_in_one_line(tmp_path: Path) -> None:
    message = _load(tmp_path, "deals = 0\nseed = -1", "[time]\nbank_ms = -5")
    assert message == (
        "deals: got 0; allowed: 1 to 10000; seed: got -1; allowed: 0 to 9223372036854775807; "
        "time.bank_ms: got -5; allowed: 0 to 36000000"
    )
