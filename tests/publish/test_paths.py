"""File names people can read: a match by its table's bots, deal and rotation."""

from __future__ import annotations

import re

import pytest

from referee.publish.paths import bot_slugs, file_name, match_names, site_slug


def test_a_match_is_named_by_its_bots_deal_and_rotation() -> None:
    names = match_names(
        {
            "rr/0123456789ab/d003/r1": ("Zed", "alice", "Bob"),
            "po/001/0123456789ac/d004/r0": ("alice", "Bob", "Zed"),
            "g/0123456789ad/m0003/d000/r2": ("alice", "Bob", "Zed"),
        }
    )
    assert names == {
        "rr/0123456789ab/d003/r1": "alice-bob-zed_d003_r1",
        "po/001/0123456789ac/d004/r0": "po001_alice-bob-zed_d004_r0",
        "g/0123456789ad/m0003/d000/r2": "g_alice-bob-zed_m0003_d000_r2",
    }


def test_names_are_unique_safe_and_short_whatever_the_bots_are_called() -> None:
    hostile = ("<img src=x onerror=alert(1)>", "../../etc/passwd", "日本語", "Bot!")
    tables = {
        "rr/aaaaaaaaaaaa/d000/r0": ("Bot!", "x" * 64, "y"),
        "rr/bbbbbbbbbbbb/d000/r0": ("bot?", "x" * 64, "y"),  # slugs alike: a hash tells apart
        "rr/cccccccccccc/d000/r0": hostile[:3],
        "rr/dddddddddddd/d000/r0": ("z" * 64,) * 6,
        "k0": ("a",),
        "K0": ("b",),
    }
    names = match_names(tables)
    assert len(set(names.values())) == len(tables)
    for name in names.values():
        assert re.fullmatch(r"[a-z0-9._-]+", name) and not name.startswith(".")
        assert len(name) < 200
    assert names["rr/aaaaaaaaaaaa/d000/r0"].endswith("_aaaaaaaa")
    slugs = bot_slugs([*hostile, "bot?"])
    assert len(set(slugs.values())) == 5
    assert all(re.fullmatch(r"[a-z0-9._-]+", s) and ".." not in s for s in slugs.values())


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Dr. Who", "dr-who"),
        ("v1.2", "v1-2"),
        ("a.b.c", "a-b-c"),
        ("..", "bot"),
        ("../../etc/passwd", "etc-passwd"),
        ("a\\b/..", "a-b"),
        ("-rf --no-preserve-root", "rf-no-preserve-root"),
        ("CON", "con-bot"),
        ("nul.txt", "nul-txt"),
        ("Ålice", "alice"),
        ("日本語", "bot"),
        ("x" * 64, "x" * 40),
    ],
)
def test_a_slug_holds_letters_digits_and_dashes_only(name: str, slug: str) -> None:
    assert site_slug(name) == slug


def test_names_that_slug_alike_get_distinct_slugs_in_the_order_given() -> None:
    slugs = bot_slugs(["Dr. Who", "Dr Who", "dr-who", "DR WHO!", "v1.2", "v1-2"])
    assert list(slugs.values()) == ["dr-who", "dr-who-2", "dr-who-3", "dr-who-4", "v1-2", "v1-2-2"]


def test_a_file_name_is_a_built_stem_and_a_known_suffix() -> None:
    assert file_name("dr-who_d000_r0", ".jsonl") == "dr-who_d000_r0.jsonl"
    for stem, suffix in (("dr.-who", ".js"), ("a/b", ".js"), ("-a", ".js"), ("a", ".exe")):
        with pytest.raises(ValueError, match="not a file name the site makes"):
            file_name(stem, suffix)
