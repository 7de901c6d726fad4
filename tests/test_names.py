"""Display names: look-alikes share a skeleton, invisible characters are refused, and the
look-alike table is what its generator makes of Unicode's confusables.txt."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from referee.errors import UsageError
from referee.names import check_name, confusable_with, lookalike_note, skeleton

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "referee" / "data" / "confusables.tsv"

# Lines quoted from confusables.txt (Unicode 13.0.0), with its comments.
SOURCE_LINES = [
    "\ufeff# confusables.txt",
    "# Date: 2020-02-13, 01:38:49 GMT",
    "# Version: 13.0.0",
    "0435 ;\t0065 ;\tMA\t# ( \u0435 → e ) CYRILLIC SMALL LETTER IE → LATIN SMALL LETTER E\t# ",
    "",
    "FF48 ;\t0068 ;\tMA\t# ( \uff48 → h ) FULLWIDTH LATIN SMALL LETTER H → LATIN SMALL LETTER H\t# ",
    "006D ;\t0072 006E ;\tMA\t# ( m → rn ) LATIN SMALL LETTER M → LATIN SMALL LETTER R, LATIN SMALL LETTER N\t# ",
    "0049 ;\t006C ;\tMA\t# ( I → l ) LATIN CAPITAL LETTER I → LATIN SMALL LETTER L\t# ",
    "03BF ;\t006F ;\tMA\t# ( \u03bf → o ) GREEK SMALL LETTER OMICRON → LATIN SMALL LETTER O\t# ",
]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "make_confusables", REPO / "referee" / "data" / "make_confusables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_the_generators_output() -> None:
    generated = _generator().table_text(SOURCE_LINES).splitlines()
    table = TABLE.read_text(encoding="utf-8").splitlines()
    header = [line for line in generated if line.startswith("#")]
    assert table[: len(header)] == header  # same source version, same format
    rows = [line for line in generated if not line.startswith("#")]
    assert rows == ["0049\t006C", "006D\t0072 006E", "03BF\t006F", "0435\t0065", "FF48\t0068"]
    assert set(rows) <= set(table)
    assert len(table) - len(header) > 6000  # the whole of confusables.txt, not a sample
    codes = [int(line.split("\t")[0], 16) for line in table[len(header) :]]
    assert codes == sorted(set(codes))


@pytest.mark.parametrize(
    ("name", "other"),
    [
        ("h\u0435uristic", "heuristic"),  # Cyrillic ie
        ("r\u0430nd\u043em", "random"),  # Cyrillic a, o
        ("l\u03bfwest", "lowest"),  # Greek omicron
        ("\uff4c\uff4f\uff57\uff45\uff53\uff54", "lowest"),  # fullwidth
        ("\U0001d425\U0001d428\U0001d430\U0001d41e\U0001d42c\U0001d42d", "lowest"),  # math bold
        ("AIice", "Alice"),  # capital i, small l
        ("Heuristic", "heuristic"),
        ("rnodern", "modern"),
    ],
)
def test_look_alikes_share_a_skeleton(name: str, other: str) -> None:
    assert skeleton(name) == skeleton(other)
    assert confusable_with(name, ["x", other, "y"]) == other


@pytest.mark.parametrize(
    ("name", "other"),
    [("heuristic", "heuristic-2"), ("José", "Jose"), ("js-lowest", "lowest"), ("a", "b")],
)
def test_different_names_have_different_skeletons(name: str, other: str) -> None:
    assert confusable_with(name, [other]) is None


def test_the_note_names_the_odd_characters() -> None:
    assert lookalike_note("h\u0435uristic", "heuristic") == "it has U+0435 CYRILLIC SMALL LETTER IE"
    assert lookalike_note("Heuristic", "heuristic") == "they differ only in case"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("zero\u200bwidth", "non-printable character U+200B"),
        ("joiner\u200d", "non-printable character U+200D"),
        ("\u202eevil", "non-printable character U+202E"),
        ("iso\u2066late", "non-printable character U+2066"),
        ("soft\u00adhyphen", "non-printable character U+00AD"),
        ("filler\u3164", "invisible character U+3164 HANGUL FILLER"),
        ("cgj\u034f", "invisible character U+034F COMBINING GRAPHEME JOINER"),
        ("vs\U000e0100", "invisible character U+E0100 VARIATION SELECTOR-17"),
        ("blank\u2800", "invisible character U+2800 BRAILLE PATTERN BLANK"),
    ],
)
def test_invisible_characters_are_refused(name: str, expected: str) -> None:
    with pytest.raises(UsageError, match=expected.replace("+", r"\+")):
        check_name(name, "here")


def test_ordinary_names_pass() -> None:
    for name in ("heuristic", "Quick Fox | v2", "Zoë", "東京", "émoji 🂡"):
        assert check_name(name) == name
