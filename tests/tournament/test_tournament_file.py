"""Loading tournament files: what is accepted, and one clear line for what is not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.tournament.file import append_bot_entry, load_tournament, toml_string

from .conftest import MARKER, write_tournament


def test_a_good_file_loads_with_defaults(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=4, table_size=3, deals=2)
    t = load_tournament(path)
    assert t.name == "t"
    assert t.entrants == [f"{MARKER}-{c}" for c in "abcd"]
    assert t.rules.name == "arschloch" and t.rules.target == 3 and t.rules.players == 3
    assert t.results_dir == tmp_path / "t.results"
    assert t.time_control.move_ms == 2000
    assert t.limits.memory_mb == 256
    assert all(b.folder == tmp_path / "bots" for b in t.bots)


def test_a_name_in_the_file_overrides_the_bots_own(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    path.write_text(
        path.read_text().replace(f'{MARKER}-a.py"\n', f'{MARKER}-a.py"\nname = "Ann <3"\n')
    )
    assert load_tournament(path).entrants[0] == "Ann <3"


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    path = write_tournament(tmp_path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "seed = 7",
            "seed = 7\ncolour = 1",
            "unknown key 'colour' (allowed: name, rules, table_size",
        ),
        (
            "move_ms = 2000",
            "move_msec = 2000",
            "unknown key 'time.move_msec' (allowed: move_ms, bank_ms, hello_ms)",
        ),
        (
            "table_size = 3",
            "table_size = 5",
            "table_size: 5 is more than the 4 bots listed; allowed: 3 to 4",
        ),
        (
            "table_size = 3",
            "table_size = 7",
            "table_size: got 7; allowed: 3 to 6",
        ),
        (
            'preset = "arschloch"',
            'preset = "skat"',
            "rules: unknown preset 'skat' (allowed: arschloch",
        ),
        ("target = 3", "goal = 3", "rules: unknown parameter 'goal'"),
        (
            'rules = { preset = "arschloch", target = 3 }',
            'rules = "poker"',
            "rules: unknown preset 'poker'",
        ),
        (
            'backend = "process"',
            'backend = "vm"',
            "sandbox.backend: got 'vm'; allowed: 'process', 'docker' or 'auto'",
        ),
        ('name = "t"', 'name = "../x"', "name: got '../x'; use 1 to 64 letters"),
        ('format = "round-robin"', 'format = "swiss"', "format: got 'swiss'"),
        (
            'format = "round-robin"',
            'format = "gauntlet"',
            'candidate: required when format = "gauntlet"',
        ),
        ("deals = 1", "deals = 1\nmatches = 2", 'matches: only allowed when format = "gauntlet"'),
        (
            'format = "round-robin"',
            'format = "compare"',
            'format: "compare" is what referee compare writes into its results',
        ),
        ("deals = 1", 'deals = 1\nbaseline = "x"', "baseline: only referee compare uses it"),
        (
            "deals = 1",
            'deals = 1\ncompare = { statistic = "round-score" }',
            "compare: only referee compare uses it",
        ),
        (f"{MARKER}-b.py", "missing.py", "bots[1]: bot not found"),
        (
            f'path = "bots/{MARKER}-c.py"',
            f'path = "bots/{MARKER}-a.py"',
            f"bots[2]: the name '{MARKER}-a' is already used by bots[0]; names must be unique",
        ),
        (
            f'path = "bots/{MARKER}-c.py"',
            f'path = "bots/{MARKER}-c.py"\nname = "{MARKER}-a"',
            "names must be unique",
        ),
        (
            f'path = "bots/{MARKER}-c.py"',
            f'path = "bots/{MARKER}-c.py"\nname = "x\\u0007"',
            "bots[2]: name: the bot name 'x\\x07' has a non-printable character U+0007",
        ),
        (
            f'path = "bots/{MARKER}-c.py"',
            f'path = "bots/{MARKER}-c.py"\nname = "{"x" * 65}"',
            "at most 64 are allowed",
        ),
        ("seed = 7", "seed = 7 7", "is not valid TOML"),
        (
            "seed = 7",
            "seed = 7\n[ratings]\nkappa = 1",
            "unknown key 'ratings.kappa' (allowed: mu, sigma, beta, tau, draw_probability, "
            "confidence, resamples)",
        ),
        (
            "seed = 7",
            "seed = 7\n[ratings]\ntau = -0.5",
            "ratings.tau: got -0.5; allowed: 0 to 10000",
        ),
        (
            "seed = 7",
            "seed = 7\n[ratings]\nconfidence = 0.4",
            "ratings.confidence: got 0.4; allowed: above 0.5 and below 1",
        ),
        (
            "seed = 7",
            "seed = 7\nplayoff = { top = 3, budget = 30, rounds = 2 }",
            "unknown key 'playoff.rounds' (allowed: top, until, budget)",
        ),
        (
            "seed = 7",
            "seed = 7\nplayoff = { top = 3 }",
            "playoff.budget: required, and missing",
        ),
        (
            "seed = 7",
            "seed = 7\nplayoff = { top = 3, until = 1.5, budget = 30 }",
            "playoff.until: got 1.5; allowed: above 0.5 and below 1",
        ),
        (
            "seed = 7",
            "seed = 7\nplayoff = { top = 5, budget = 30 }",
            "playoff.top: 5 is more than the 4 bots listed; allowed: 2 to 4",
        ),
        (
            "seed = 7",
            "seed = 7\nplayoff = { top = 3, budget = 2 }",
            "playoff.budget: 2 matches cannot pay for one deal (3 matches, one per seat "
            "rotation); allowed: at least 3",
        ),
    ],
)
def test_bad_files_are_refused_with_file_and_key(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    path = _variant(tmp_path, old, new)
    with pytest.raises(UsageError) as info:
        load_tournament(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") or message.startswith(f"{path} is not valid TOML")
    assert expected in message
    assert "\n" not in message


def test_ratings_and_playoff_are_read_with_their_defaults(tmp_path: Path) -> None:
    from referee.specs import RatingSettings

    plain = load_tournament(write_tournament(tmp_path / "plain"))
    assert plain.file.ratings == RatingSettings() and plain.file.playoff is None
    assert plain.file.ratings.tau == 0.0 and plain.file.ratings.confidence == 0.95
    path = write_tournament(
        tmp_path / "tuned",
        extra="playoff = { top = 3, budget = 60 }\n[ratings]\nbeta = 3.0\nresamples = 500",
    )
    tuned = load_tournament(path).file
    assert (tuned.ratings.beta, tuned.ratings.resamples, tuned.ratings.tau) == (3.0, 500, 0.0)
    assert tuned.playoff is not None
    assert (tuned.playoff.top, tuned.playoff.until, tuned.playoff.budget) == (3, 0.95, 60)
    # Neither changes what a result means: both may change between runs.
    assert load_tournament(path).settings() == plain.settings()


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_tournament(tmp_path / "nope.toml")


def test_cli_shows_one_line_and_exit_code_2(tmp_path: Path) -> None:
    path = _variant(tmp_path, "seed = 7", "seed = 7\ncolour = 1")
    result = CliRunner().invoke(main, ["tournament", "run", str(path)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "unknown key 'colour'" in result.output
    assert "Traceback" not in result.output


def test_appending_a_bot_keeps_the_users_text(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    before = path.read_text() + "# a comment the user wrote, no newline at the end"
    path.write_text(before)
    (tmp_path / "bots" / "new.py").write_text("print('hi')\n")
    updated = append_bot_entry(path, "bots/new.py", 'Quote " and \\ back')
    after = path.read_text()
    assert after.startswith(before + "\n")
    assert updated.entrants[-1] == 'Quote " and \\ back'
    assert load_tournament(path).entrants == updated.entrants


def test_appending_to_inline_bots_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    path = write_tournament(tmp_path)
    text = path.read_text().split("[[bots]]")[0]
    inline = ", ".join(f'{{ path = "bots/{MARKER}-{c}.py" }}' for c in "abc")
    path.write_text(text.replace("[time]", f"bots = [{inline}]\n\n[time]", 1))
    before = path.read_text()
    assert len(load_tournament(path).entrants) == 3
    with pytest.raises(UsageError, match="cannot add the bot"):
        append_bot_entry(path, f"bots/{MARKER}-d.py", "d")
    assert path.read_text() == before


@pytest.mark.parametrize(
    "name", ["plain", 'q"uote', "back\\slash", "tab\there", "émoji 🂡", "del\x7f"]
)
def test_toml_strings_round_trip(name: str) -> None:
    import tomllib

    assert tomllib.loads(f"x = {toml_string(name)}")["x"] == name


# --- names that look alike, names that hide characters -----------------------------------


def _named(tmp_path: Path, first: str, third: str) -> Path:
    """The test tournament with display names on bots[0] and bots[2]."""
    path = write_tournament(tmp_path)
    text = path.read_text()
    for letter, name in (("a", first), ("c", third)):
        entry = f'path = "bots/{MARKER}-{letter}.py"\n'
        text = text.replace(entry, f"{entry}name = {toml_string(name)}\n")
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("first", "twin", "why"),
    [
        ("heuristic", "h\u0435uristic", "U+0435 CYRILLIC SMALL LETTER IE"),
        (
            "heuristic",
            "h\u0435urist\u0456\u0441",
            "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
        ),
        ("heuristic", "\u0397euristic", "U+0397 GREEK CAPITAL LETTER ETA"),
        (
            "heuristic",
            "\uff48\uff45\uff55\uff52\uff49\uff53\uff54\uff49\uff43",
            "FULLWIDTH LATIN SMALL LETTER H",
        ),
        ("heuristic", "Heuristic", "they differ only in case"),
        ("Alice", "AIice", "U+0049 LATIN CAPITAL LETTER I"),
        ("bot 1", "bot l", "U+006C LATIN SMALL LETTER L"),
    ],
)
def test_a_name_that_looks_like_another_is_refused(
    tmp_path: Path, first: str, twin: str, why: str
) -> None:
    path = _named(tmp_path, first, twin)
    with pytest.raises(UsageError) as info:
        load_tournament(path)
    message = str(info.value)
    assert f"bots[2]: the name {twin!r} looks like {first!r} of bots[0]" in message
    assert why in message and "\n" not in message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("heu\u200bristic", "non-printable character U+200B"),
        ("heuristic\u2067", "non-printable character U+2067"),
        ("heu\u3164ristic", "invisible character U+3164 HANGUL FILLER"),
        ("heuristic\ufe0f", "invisible character U+FE0F VARIATION SELECTOR-16"),
    ],
)
def test_a_name_with_invisible_characters_is_refused(
    tmp_path: Path, name: str, expected: str
) -> None:
    path = _named(tmp_path, "alpha", name)
    with pytest.raises(UsageError, match=re.escape(expected)):
        load_tournament(path)


def test_names_that_only_look_similar_are_accepted(tmp_path: Path) -> None:
    path = _named(tmp_path, "heuristic", "heuristic-2")
    assert load_tournament(path).entrants[::2] == ["heuristic", "heuristic-2"]


# --- Docker images only by permission ----------------------------------------------------


def _with_image_bot(tmp_path: Path, image: str, sandbox_extra: str = "") -> Path:
    """The test tournament with a folder bot that names ``image`` in its bot.toml."""
    path = write_tournament(tmp_path)
    folder = tmp_path / "bots" / "nosy"
    folder.mkdir()
    (folder / "bot.py").write_text("print('hi')\n")
    (folder / "bot.toml").write_text(
        f'name = "nosy"\ncommand = "python3 bot.py"\nimage = {toml_string(image)}\n'
    )
    text = path.read_text().replace("memory_mb = 256\n", f"memory_mb = 256\n{sandbox_extra}")
    path.write_text(text + '\n[[bots]]\npath = "bots/nosy"\n')
    return path


def test_a_bot_naming_an_image_not_allowed_is_refused_at_load(tmp_path: Path) -> None:
    path = _with_image_bot(tmp_path, "private/creds:1")
    with pytest.raises(UsageError) as info:
        load_tournament(path)
    message = str(info.value)
    assert message.startswith(f"{path}: bots[4]: bot 'nosy' names the Docker image ")
    assert "'private/creds:1'" in message
    assert (
        "(allowed: arschloch-referee-bot-java:latest, arschloch-referee-bot-native:latest, arschloch-referee-bot:latest)"
        in message
    )
    assert (
        'set images = ["arschloch-referee-bot:latest", "private/creds:1"] under [sandbox]'
        in message
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    ("image", "allowed"),
    [
        ("python:3.11-slim", '"python:3.11-slim"'),
        ("python", '"python:latest"'),
        ("python:latest", '"python"'),
        ("arschloch-referee-bot", '"python:3.11-slim"'),  # the referee's own is always allowed
    ],
)
def test_an_allowed_image_loads(tmp_path: Path, image: str, allowed: str) -> None:
    path = _with_image_bot(tmp_path, image, f"images = [{allowed}]\n")
    t = load_tournament(path)
    assert t.bot("nosy").image == image


def test_an_image_list_entry_must_be_a_name(tmp_path: Path) -> None:
    path = _with_image_bot(tmp_path, "python:3.11-slim", 'images = [""]\n')
    with pytest.raises(UsageError, match=r"sandbox.images\[0\]"):
        load_tournament(path)


def _many_bots(folder: Path, bots: int, extra: str) -> Path:
    """A tournament of ``bots`` entries of one bot file, named b000, b001, ... (twins,
    allowed: what is measured here is the schedule)."""
    (folder / "bot.py").write_text("print('never run')\n", encoding="utf-8")
    entries = "".join(f'[[bots]]\npath = "bot.py"\nname = "b{i:03d}"\n' for i in range(bots))
    path = folder / "big.toml"
    path.write_text(
        f'name = "big"\ntable_size = 6\nallow_twins = true\n{extra}\n{entries}', encoding="utf-8"
    )
    return path


@pytest.mark.parametrize(
    ("bots", "extra", "needle"),
    [
        # 75 million tables: listing them would take the machine's memory.
        (64, "", "C(64, 6) = 74,974,368 tables x 1 deal x 6 seat rotations); at most 1,000,000"),
        (64, 'deals = 10000\ntables = "balanced"', "672 balanced tables x 10,000 deals"),
        (
            8,
            'format = "gauntlet"\ncandidate = "b000"\nmatches = 100000\ndeals = 10',
            "100,000 tables x 10 deals x 6 seat rotations",
        ),
    ],
)
def test_a_schedule_too_large_to_list_is_refused_at_load(
    tmp_path: Path, bots: int, extra: str, needle: str
) -> None:
    path = _many_bots(tmp_path, bots, extra)
    with pytest.raises(UsageError) as refused:
        load_tournament(path)
    assert needle in str(refused.value)
    if not extra:
        assert 'use tables = "balanced" (672 tables a deal)' in str(refused.value)


def test_a_large_field_on_balanced_tables_loads(tmp_path: Path) -> None:
    tournament = load_tournament(_many_bots(tmp_path, 64, 'tables = "balanced"'))
    assert len(tournament.entrants) == 64


def test_byte_identical_entrants_are_refused_unless_the_file_allows_twins(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, bots=4)
    text = path.read_text()
    copy = tmp_path / "bots" / "copy"
    copy.mkdir()
    # The same file under the same name in another folder: byte-identical, another entrant.
    (copy / f"{MARKER}-a.py").write_bytes((tmp_path / "bots" / f"{MARKER}-a.py").read_bytes())
    twin = f'\n[[bots]]\npath = "bots/copy/{MARKER}-a.py"\nname = "Copy"\n'
    path.write_text(text + twin)
    with pytest.raises(UsageError) as refused:
        load_tournament(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: bots[0] ('{MARKER}-a') and bots[4] ('Copy') are ")
    assert "byte-identical (sha256 " in message and "allow_twins = true" in message
    assert "\n" not in message
    # Allowed: it loads, and a run says so before it starts.
    path.write_text("allow_twins = true\n" + text + twin)
    loaded = load_tournament(path)
    assert loaded.twins() == [(f"{MARKER}-a", "Copy")]
    assert any("byte-identical" in w and "'Copy'" in w for w in loaded.warnings())
    assert loaded.bot("Copy").sha256 == loaded.bot(f"{MARKER}-a").sha256 != ""
    # Different files (the other bots) are no twins.
    assert len({b.sha256 for b in loaded.bots}) == 4


def test_a_long_list_of_twins_is_named_briefly(tmp_path: Path) -> None:
    path = _many_bots(tmp_path, 9, "")
    path.write_text(path.read_text().replace("allow_twins = true\n", ""))
    with pytest.raises(UsageError) as refused:
        load_tournament(path)
    message = str(refused.value)
    assert "bots[0] ('b000'), bots[1] ('b001') and 7 more are byte-identical" in message
    assert len(message) < 400


def test_a_sample_bot_is_named_with_an_at_sign_in_a_tournament_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from referee.resources import sample_bot
    from referee.sandbox import bot_sha256, load_bot, read_bot_files

    path = write_tournament(tmp_path / "cup", bots=3)
    text = path.read_text()
    path.write_text(text + '\n[[bots]]\npath = "@heuristic"\n\n[[bots]]\npath = "@js-lowest"\n')
    monkeypatch.chdir(tmp_path)  # not the file's folder, nor the checkout
    t = load_tournament(path)
    assert t.entrants[3:] == ["heuristic", "js-lowest"]
    heuristic = t.bot("heuristic")
    assert heuristic.folder == sample_bot("heuristic")
    assert heuristic.sha256 == bot_sha256(read_bot_files(load_bot(sample_bot("heuristic"))))
    # The demo tournament names its bots so: a copy of it works from any folder.
    demo = (Path(__file__).resolve().parents[2] / "tournaments" / "demo.toml").read_text()
    (tmp_path / "demo.toml").write_text(demo)
    assert load_tournament(tmp_path / "demo.toml").entrants == [
        "heuristic",
        "lowest",
        "random",
        "js-lowest",
    ]


def test_an_unknown_sample_in_a_tournament_file_names_the_entry_and_the_samples(
    tmp_path: Path,
) -> None:
    path = write_tournament(tmp_path, bots=3)
    path.write_text(path.read_text() + '\n[[bots]]\npath = "@heuristics"\n')
    with pytest.raises(UsageError) as caught:
        load_tournament(path)
    assert str(caught.value) == (
        f"{path}: bots[3]: no sample bot is called @heuristics (the samples: @c-lowest, "
        "@cpp-lowest, @heuristic, @java-lowest, @js-lowest, @lowest, @montecarlo, @random, "
        "@rust-lowest)"
    )
