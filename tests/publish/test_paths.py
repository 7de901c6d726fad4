"""File names people can read: a match by its table's bots, deal and rotation."""

from __future__ import annotations

import re

from referee.publish.paths import bot_slugs, match_names


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
