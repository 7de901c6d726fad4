"""The documentation is there and tells the truth.

* **Links.** Every relative link of the README, the protocol's pages, the sample bots'
  READMEs and ``docs/`` (the documentation site's pages; ``mkdocs build --strict`` in
  ``make lint`` checks the site's own links and anchors) points at a file or folder that exists, every ``#anchor`` at a
  heading (GitHub's slugs), and every repository path written in backticks exists. The
  command line's help and docstrings name only files that exist. A failure lists every
  broken reference, one ``file:line -> target`` per line.
* **The README** is the front door: short, and it links every page of the site.
* **docs/design.md**'s layout table names every module; **docs/cli.md** names every
  environment variable the referee reads.
* **docs/rules.md** states the presets' parameters as the engine resolves them, for every
  table size, and its worked examples are what the engine does with those cards.
* **docs/tournaments.md** states the tournament file's keys with the models' defaults and
  bounds, and the commands with options they have.
"""

from __future__ import annotations

import random
import re
import tomllib
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from referee.cli import main
from referee.rules import RuleSet
from referee.rules.engine import PLAY, Game
from referee.rules.ruleset import PRESETS, TABLE_SIZES, ResolvedRules
from referee.rules.simulate import play_random
from referee.specs import PlayoffSettings, RatingSettings, TimeControl
from referee.tournament.model import (
    AuthorSettings,
    BotEntry,
    BuildSettings,
    ExecutorSettings,
    LeagueSettings,
    PublishSettings,
    SandboxSettings,
    ServerSettings,
    TournamentFile,
)
from tests.rules.helpers import make_game

ROOT = Path(__file__).resolve().parents[1]
RULES_DOC = ROOT / "docs" / "rules.md"
TOURNAMENTS_DOC = ROOT / "docs" / "tournaments.md"
DESIGN_DOC = ROOT / "docs" / "design.md"
CLI_DOC = ROOT / "docs" / "cli.md"


# =========================================================================== reading Markdown


def documents() -> list[Path]:
    """The pages people read: the README, the protocol's pages, bots' READMEs, docs/."""
    found = [ROOT / "README.md"]
    found += sorted((ROOT / "protocol").rglob("*.md"))
    found += sorted((ROOT / "sample_bots").glob("*/README.md"))
    found += sorted((ROOT / "docs").glob("*.md"))
    return found


_FENCE = re.compile(r"^\s*(```+|~~~+)")


def prose(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line outside fenced code blocks (numbers from 1)."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened[1]
            continue
        out.append((number, line))
    return out


def fenced_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """Every fenced code block: ``(line number of its fence, info string, its lines)``."""
    blocks: list[tuple[int, str, list[str]]] = []
    current: tuple[int, str, list[str]] | None = None
    fence = ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = _FENCE.match(line)
        if current is None:
            if opened:
                fence = opened[1]
                current = (number, line.strip()[len(fence) :].strip(), [])
        elif opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence):
            blocks.append(current)
            current = None
        else:
            current[2].append(line)
    return blocks


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def code_spans(line: str) -> list[str]:
    """The inline code spans of a line, without their backticks."""
    return [m[2].strip() for m in _CODE_SPAN.finditer(line)]


def without_code(line: str) -> str:
    return _CODE_SPAN.sub("", line)


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_INLINE_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation dropped, '-' for
    spaces (letters, digits, '-' and '_' stay)."""
    text = _INLINE_LINK.sub(r"\1", heading).replace("`", "").lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor of a page: its headings' slugs (repeats get -1, -2, ...) and HTML ids."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in prose(text):
        heading = _HEADING.match(line)
        if heading:
            base = slug(heading[2])
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        out.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return out


_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")


def links(text: str) -> list[tuple[int, str]]:
    """``(line number, target)`` of every Markdown link and image outside code."""
    out = []
    for number, line in prose(text):
        bare = without_code(line)
        out += [(number, m[1]) for m in _LINK.finditer(bare)]
        out += [(number, m[1]) for m in _REFERENCE.finditer(bare)]
    return out


# =========================================================================== references

_FILE_SUFFIXES = (
    ".md",
    ".py",
    ".toml",
    ".json",
    ".jsonl",
    ".js",
    ".txt",
    ".tsv",
    ".sh",
    ".cfg",
    ".in",
    ".html",
    ".css",
    ".j2",
    ".yml",
    ".yaml",
    ".sqlite",
    ".whl",
)
_NOT_A_PATH = re.compile(r"[\s<>*{}$=:|…\\]|\.\.\.")

# Backticked paths that are examples or outputs, not files of the repository.
PATH_EXCEPTIONS = {
    # The wheel's layout: the build maps the top-level folders there (pyproject.toml).
    "referee/assets/",
    # What `referee publish --out site/` writes: the README's tour of a published site.
    "site/index.html",
    "matches/alice-bob-carol_d003_r1.html",
    "leaderboard.md",
}

# Where a backticked path may be relative to: the repository, and the package (the README's
# tour of the code names modules as `cli/tournaments.py`), docs/ (a page named on its own);
# the page's own folder is tried too.
_BASES = ("", "referee", "docs")


def looks_like_path(token: str, root: Path = ROOT) -> bool:
    """A repository file reference: no spaces or placeholders, and either a Markdown page's
    name, or a path that starts with a top-level name of the repository (or ``docs``) or
    ends in a file suffix."""
    if _NOT_A_PATH.search(token) or token.startswith(("/", "~")):
        return False
    if "/" not in token:
        return token.endswith(".md")  # a page named on its own: README.md, SPEC.md
    first = token.split("/", 1)[0]
    return first == "docs" or (root / first).exists() or token.endswith(_FILE_SUFFIXES)


def broken_references(doc: Path, root: Path = ROOT) -> list[str]:
    """Every broken link, anchor and backticked path of ``doc``: ``file:line -> target``."""
    text = doc.read_text(encoding="utf-8")
    name = doc.relative_to(root).as_posix()
    own = anchors(text)
    broken: list[str] = []
    for number, target in links(text):
        why = _link_problem(doc, own, target, root)
        if why:
            broken.append(f"{name}:{number} -> {target} ({why})")
    for number, line in prose(text):
        for token in code_spans(line):
            if token in PATH_EXCEPTIONS or not looks_like_path(token, root):
                continue
            bases = [root / base for base in _BASES] + [doc.parent]
            if not any((base / token).exists() for base in bases):
                broken.append(f"{name}:{number} -> `{token}` (no such file or folder)")
    return broken


def _link_problem(doc: Path, own: set[str], target: str, root: Path) -> str | None:
    """Why a link is broken, or None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    path, _, anchor = target.partition("#")
    if not path:
        return None if anchor in own else "no such heading in this page"
    file = (doc.parent / path).resolve()
    if not file.is_relative_to(root.resolve()):
        return "outside the repository"
    if not file.exists():
        return "no such file or folder"
    if anchor:
        if file.suffix != ".md":
            return "an anchor into a file that is not Markdown"
        if anchor not in anchors(file.read_text(encoding="utf-8")):
            return f"no heading #{anchor} there"
    return None


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_and_path_in_the_page_exists(doc: Path) -> None:
    broken = broken_references(doc)
    assert not broken, f"{len(broken)} broken references:\n" + "\n".join(broken)


def test_the_pages_people_read_are_all_checked() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in documents()}
    wanted = {
        "README.md",
        "protocol/SPEC.md",
        "protocol/examples/README.md",
        "docs/rules.md",
        "docs/tournaments.md",
        "docs/security.md",
        "docs/design.md",
        "docs/performance.md",
        "docs/cli.md",
    }
    assert wanted <= names


def test_the_checker_reports_every_broken_reference_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "protocol").mkdir()
    (tmp_path / "protocol" / "SPEC.md").write_text("# Spec\n\n## 3. Message flow\n")
    (tmp_path / "sample_bots" / "heuristic").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# A page\n"
        "\n"
        "## Second part, with `code`\n"
        "[ok](#a-page) [ok too](#second-part-with-code) [bad](#nowhere)\n"
        "```\n"
        "[not checked](nowhere.md) `docs/not-checked.md`\n"
        "```\n"
        "[spec](../protocol/SPEC.md#3-message-flow) [gone](missing.md) [up](../../x.md)\n"
        "[spec](../protocol/SPEC.md#no-such-part) `protocol/NOPE.md` `page.md`\n"
        "`docs/gone.md`, `protocol/SPEC.md`, `sample_bots/heuristic`, `a b/c.md`, `x/<y>.md`\n"
        "`bots/alice.py` [web](https://example.org/x.md) [folder](../sample_bots/)\n"
        "[dup](#a-page-1)\n"
        "# A page\n",
        encoding="utf-8",
    )
    assert broken_references(page, tmp_path) == [
        "docs/page.md:4 -> #nowhere (no such heading in this page)",
        "docs/page.md:8 -> missing.md (no such file or folder)",
        "docs/page.md:8 -> ../../x.md (outside the repository)",
        "docs/page.md:9 -> ../protocol/SPEC.md#no-such-part (no heading #no-such-part there)",
        "docs/page.md:9 -> `protocol/NOPE.md` (no such file or folder)",
        "docs/page.md:10 -> `docs/gone.md` (no such file or folder)",
        "docs/page.md:11 -> `bots/alice.py` (no such file or folder)",
    ]


def _layout_section() -> str:
    text = DESIGN_DOC.read_text(encoding="utf-8")
    start = text.index("## How the code is laid out")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_code_layout_names_every_package_and_module() -> None:
    """docs/design.md's tour of the code names every folder of ``referee/`` and every module in
    it (as ``referee/X.py``, ``X.py``, or ``folder/X.py`` relative to the package), and
    nothing that is not there."""
    section = _layout_section()
    spans = {
        token.removeprefix("referee/") for _, line in prose(section) for token in code_spans(line)
    }
    package = ROOT / "referee"
    modules = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    }
    folders = {
        path.parent.relative_to(package).as_posix() + "/"
        for path in package.rglob("__init__.py")
        if path.parent != package
    } | {"data/"}
    assert sorted(modules - spans) == []
    assert sorted(folders - spans) == []
    named = {
        token for token in spans if token.endswith(".py") and not token.startswith("tests/")
    } - {"__init__.py"}
    assert sorted(named - modules) == [], "the layout names modules that do not exist"


README_MAX_LINES = 300


def test_the_readme_is_a_front_door_that_links_every_guide() -> None:
    """The README stays short, and every page of the site is one link away from it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    linked = {target.partition("#")[0] for _, target in links(text)}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} - {"docs/index.md"}
    assert sorted(pages - linked) == [], "pages the README does not link to"


# A variable's name as the referee reads it: os.environ.get("X"), os.getenv("X"),
# os.environ["X"], or a module constant NAME_ENV = "X" that such a call reads.
_ENV_READ = re.compile(r"""(?:environ\.get|getenv|environ\[)\(?\s*["']([A-Z][A-Z0-9_]+)["']""")
_ENV_CONSTANT = re.compile(r"""^\w*_ENV\s*=\s*["']([A-Z][A-Z0-9_]+)["']""", re.MULTILINE)


def environment_variables(package: Path = ROOT / "referee") -> set[str]:
    """Every environment variable the referee's code reads by name."""
    found: set[str] = set()
    for source in package.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        found |= set(_ENV_READ.findall(text)) | set(_ENV_CONSTANT.findall(text))
    return found


def test_the_environment_variable_finder_sees_each_way_of_reading_one(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        'UIDS_ENV = "REFEREE_A"\nos.environ.get("REFEREE_B", "")\n'
        "os.getenv('REFEREE_C')\nos.environ[\"REFEREE_D\"]\nx = os.environ.get(UIDS_ENV)\n"
    )
    assert environment_variables(tmp_path) == {"REFEREE_A", "REFEREE_B", "REFEREE_C", "REFEREE_D"}


def test_every_environment_variable_the_referee_reads_is_documented() -> None:
    """docs/cli.md's table of environment variables: one row per variable read in referee/."""
    found = sections(CLI_DOC.read_text(encoding="utf-8"))["Environment variables"]
    (table,) = tables(found)
    assert table.header[0] == "variable"
    documented = {_code(cells[0]) for _, cells in table.rows}
    read = environment_variables()
    assert {"REFEREE_SANDBOX_UIDS", "REFEREE_RUN_ID"} <= read
    assert sorted(read - documented) == [], "read in referee/ and missing from docs/cli.md"


def test_slugs_follow_github() -> None:
    assert slug("5. The rules object") == "5-the-rules-object"
    assert slug("Time, faults and forfeits") == "time-faults-and-forfeits"
    assert slug("`[[bots]]`: the entrants") == "bots-the-entrants"
    assert slug("Preset `arschloch-high10`") == "preset-arschloch-high10"
    assert slug("[Linked](x.md) heading_name") == "linked-heading_name"


# =========================================================================== the command line


def commands(group: click.Command = main, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The argv of every command and group of the referee, the root first."""
    yield path
    if isinstance(group, click.Group):
        for name, command in sorted(group.commands.items()):
            yield from commands(command, (*path, name))


_CLI_PATH = re.compile(r"[\w./-]+")


def _named_paths(text: str) -> set[str]:
    """The path-looking words of some help text or source code."""
    words = {w.strip(".,;:()'\"").rstrip(".") for w in _CLI_PATH.findall(text)}
    return {w for w in words if w.startswith("docs/") or looks_like_path(w)}


def _missing(words: set[str]) -> list[str]:
    return sorted(
        w
        for w in words
        if w not in PATH_EXCEPTIONS and not any((ROOT / b / w).exists() for b in _BASES)
    )


def test_every_file_the_command_line_names_exists() -> None:
    broken = []
    for source in sorted((ROOT / "referee" / "cli").glob("*.py")):
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            for word in _missing(_named_paths(line)):
                broken.append(f"{source.relative_to(ROOT).as_posix()}:{number} -> {word}")
    runner = CliRunner()
    for argv in commands():
        shown = runner.invoke(main, [*argv, "--help"], terminal_width=1000, max_content_width=1000)
        assert shown.exit_code == 0, shown.output
        for word in _missing(_named_paths(shown.output)):
            broken.append(" ".join(["referee", *argv, "--help", "->", word]))
    assert not broken, f"{len(broken)} broken references:\n" + "\n".join(broken)


def test_the_help_of_tournament_points_at_its_reference() -> None:
    shown = CliRunner().invoke(main, ["tournament", "--help"])
    assert "docs/tournaments.md" in shown.output
    assert len(list(commands())) > 10  # every group was walked, not just the root


# =========================================================================== docs/rules.md


@dataclass(frozen=True)
class Example:
    """A worked example of docs/rules.md: some cards of each seat, then what happens."""

    line: int
    holds: tuple[tuple[str, ...], ...]
    story: tuple[str, ...]


_HOLDS = re.compile(r"^seat (\d) holds ((?:\S+ )*\S+) …$")
_PLAYS = re.compile(r"^seat (\d) (?:plays ((?:\S+ )*\S+)|passes)$")


def parse_example(line: int, lines: Sequence[str]) -> Example:
    """``seat N holds C C …`` lines, a blank line, then the story, one event a line."""
    holds: list[tuple[str, ...]] = []
    rest = list(lines)
    while rest and (found := _HOLDS.match(rest[0])):
        assert int(found[1]) == len(holds), f"line {line}: seats in order from 0"
        holds.append(tuple(found[2].split()))
        rest.pop(0)
    assert holds and rest and rest[0] == "", f"line {line}: `seat N holds ... …` lines first"
    return Example(line, tuple(holds), tuple(rest[1:]))


def example_deal(rules: ResolvedRules, holds: Sequence[Sequence[str]]) -> tuple[Any, Any]:
    """Round 1's deal (dealer seat 0): the named cards where they are said to be, the rest
    of the deck, lowest first, topping each seat up to its hand size in seat order."""
    n = len(holds)
    ranks = rules.ranks
    deck = [rank + suit for rank in ranks for suit in rules.suits]
    total = len(deck)
    if rules.deal == "equal":
        sizes = [total // n] * n
    else:
        sizes = [total // n + ((seat - 1) % n < total % n) for seat in range(n)]
    named = {card for cards in holds for card in cards}
    assert named <= set(deck) and len(named) == sum(map(len, holds))
    spare = [card for card in deck if card not in named]
    hands = []
    for seat, cards in enumerate(holds):
        fill = sizes[seat] - len(cards)
        hands.append([*cards, *spare[:fill]])
        del spare[:fill]
    return hands, spare


def tell(event: dict[str, Any]) -> str:
    """An engine event in the words of the examples."""
    kind = event["type"]
    if kind == "played":
        return f"seat {event['seat']} plays {' '.join(event['cards'])}"
    if kind in ("passed", "skipped"):
        return f"seat {event['seat']} {'passes' if kind == 'passed' else 'is skipped'}"
    if kind == "trick_end":
        return (
            f"trick ends ({event['reason']}): seat {event['winner']} wins, "
            f"seat {event['leader']} leads"
        )
    if kind == "finished":
        return f"seat {event['seat']} finishes in place {event['place']}"
    if kind == "eliminated":
        return f"seat {event['seat']} is out in place {event['place']}: {' '.join(event['cards'])}"
    return f"({kind})"


def play_example(preset: str, example: Example) -> list[str]:
    """The story the engine tells when the example's plays are made with its cards."""
    n = len(example.holds)
    rules = RuleSet.preset(preset).resolve(n)
    game = make_game(preset, {1: example_deal(rules, example.holds)}, players=n)
    start = len(game.events)
    for wanted in example.story:
        move = _PLAYS.match(wanted)
        if move is None:
            continue
        kind, seat = game.pending or ("over", -1)
        assert (kind, seat) == (PLAY, int(move[1])), f"{wanted!r}: the engine awaits {kind} {seat}"
        game.play(seat, move[2].split() if move[2] else [])
    return [tell(game.event_dict(e)) for e in game.events[start:]]


def cell(value: Any) -> str:
    """A parameter's value as the tables write it (inside backticks)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return " ".join(map(str, value)) if value else "[]"
    return str(value)


def _first_deal(rules: ResolvedRules, n: int) -> tuple[list[int], int]:
    """Hand sizes in dealing order (from the dealer's left) and the number of leftovers."""
    game = Game(rules, [f"p{i}" for i in range(n)], seed=7)
    deal = game.events[0]
    assert deal.type == "deal" and deal.dealer == 0
    return [len(deal.hands[(1 + i) % n]) for i in range(n)], len(deal.leftovers)


def observed(preset: str, n: int) -> dict[str, str]:
    """What the engine does at ``n`` seats, in the words of the tables' plain rows: hand
    sizes and leftovers of a deal, points by place and who takes leftovers, from a match
    played to its second round by random players."""
    rules = RuleSet.preset(preset).resolve(n)
    sizes, leftovers = _first_deal(rules, n)
    game = play_random(rules, [f"p{i}" for i in range(n)], 11, random.Random(5))
    rounds = [e for e in game.events if e.type == "round_end"]
    first = rounds[0]
    assert len(rounds) >= 2
    takers, in_round_two = [], False
    for event in game.events:
        if event.type == "deal":
            in_round_two = event.round == 2
        elif event.type == "leftover" and in_round_two:
            takers.append(first.places.index(event.seat) + 1)
    out = {
        "cards per hand": str(sizes[0]) if len(set(sizes)) == 1 else " ".join(map(str, sizes)),
        "leftover cards": str(leftovers),
        "points by place": " ".join(str(first.points[seat]) for seat in first.places),
    }
    if rules.leftovers == "swap":
        out["leftovers taken by places"] = " ".join(map(str, takers)) or "—"
    return out


@dataclass(frozen=True)
class Table:
    """A Markdown table outside code: its header cells and its rows (line number, cells)."""

    line: int
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]


def _cells(line: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in line.strip().strip("|").split("|"))


def tables(lines: Sequence[tuple[int, str]]) -> list[Table]:
    """The tables among ``(line number, line)``: a header, a ``|---|`` rule, rows."""
    found: list[Table] = []
    block: list[tuple[int, str]] = []
    for number, line in [*lines, (0, "")]:
        if line.lstrip().startswith("|"):
            block.append((number, line))
            continue
        if len(block) >= 2 and set(block[1][1].replace("|", "").strip()) <= set("-: "):
            rows = tuple((n, _cells(text)) for n, text in block[2:])
            found.append(Table(block[0][0], _cells(block[0][1]), rows))
        block = []
    return found


def sections(text: str, level: int = 2) -> dict[str, list[tuple[int, str]]]:
    """The prose lines under each heading of ``level`` (and its subheadings), by heading."""
    out: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] = []
    for number, line in prose(text):
        heading = _HEADING.match(line)
        if heading and len(heading[1]) <= level:
            current = out.setdefault(heading[2], []) if len(heading[1]) == level else []
            continue
        current.append((number, line))
    return out


def _code(text: str) -> str | None:
    """The value of a cell that is one code span, else None."""
    found = re.fullmatch(r"`([^`]*)`", text)
    return found[1] if found else None


def preset_sections() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for heading, lines in sections(RULES_DOC.read_text(encoding="utf-8")).items():
        found = re.fullmatch(r"Preset `([\w-]+)`", heading)
        if found:
            out[found[1]] = lines
    return out


def test_rules_doc_has_a_section_for_every_preset() -> None:
    assert list(preset_sections()) == list(PRESETS)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_rules_doc_tables_are_what_the_engine_resolves(preset: str) -> None:
    """Every cell of the preset's two tables against the engine, at every table size."""
    found = tables(preset_sections()[preset])
    params = [t for t in found if t.header[:2] == ("parameter", "value")]
    sizes = [t for t in found if t.header[0] == "players"]
    assert len(params) == 1 and len(sizes) == 1, f"{preset}: one table of each kind"
    assert sizes[0].header[1:] == tuple(map(str, TABLE_SIZES))
    resolved = {n: RuleSet.preset(preset).resolve(n).as_protocol() for n in TABLE_SIZES}
    seen = {n: observed(preset, n) for n in TABLE_SIZES}
    wrong, named = [], set()
    for number, (key_cell, value, *_) in params[0].rows:
        key = _code(key_cell)
        named.add(key)
        want = {cell(resolved[n].get(key, "(no such parameter)")) for n in TABLE_SIZES}  # type: ignore[arg-type]
        if want != {_code(value)}:
            wrong.append(f"rules.md:{number}: {key_cell} is {value}; the engine has {want}")
    for number, (label, *values) in sizes[0].rows:
        key = _code(label)
        named.add(key or label)
        for n, value in zip(TABLE_SIZES, values, strict=True):
            want = cell(resolved[n][key]) if key else seen[n].get(label, "(not a row we know)")  # type: ignore[assignment]
            if (_code(value) if key else value) != want:  # type: ignore[comparison-overlap]
                wrong.append(f"rules.md:{number}: {label} at {n} is {value}; the engine: {want}")
    assert not wrong, "\n".join(wrong)
    missing = set(resolved[4]) - named - {"name", "players"}
    missing |= set(seen[4]) - named
    assert not missing, f"{preset}: the tables leave out {sorted(missing)}"


def test_rules_doc_examples_are_what_the_engine_does() -> None:
    """Each example block of a preset's section, replayed with its cards on the engine."""
    text = RULES_DOC.read_text(encoding="utf-8")
    presets = preset_sections()
    checked = []
    for fence, _, lines in fenced_blocks(text):
        if not (lines and _HOLDS.match(lines[0])):
            continue
        preset = next(p for p, body in presets.items() if body[0][0] < fence < body[-1][0])
        example = parse_example(fence, lines)
        told = play_example(preset, example)
        assert told == list(example.story), (
            f"rules.md:{fence} ({preset}): the engine tells\n" + "\n".join(told)
        )
        checked.append(preset)
    assert checked == ["arschloch", "arschloch-high10", "trou-du-cul"]


def test_rules_doc_lists_every_parameter_a_tournament_may_change() -> None:
    text = RULES_DOC.read_text(encoding="utf-8")
    custom = sections(text, 3)["Custom rules"]
    (table,) = tables(custom)
    assert table.header[0] == "parameter"
    assert [_code(cells[0]) for _, cells in table.rows] == list(RuleSet.model_fields)


# =========================================================================== docs/tournaments.md

# The key tables of docs/tournaments.md, by the heading they stand under.
KEY_SECTIONS: dict[str, type[BaseModel]] = {
    "Top-level keys": TournamentFile,
    "`[time]`": TimeControl,
    "`[sandbox]`": SandboxSettings,
    "`[build]`": BuildSettings,
    "`[ratings]`": RatingSettings,
    "`playoff`": PlayoffSettings,
    "`[authors]`": AuthorSettings,
    "`[executor]`": ExecutorSettings,
    "`[league]`": LeagueSettings,
    "`[publish]`": PublishSettings,
    "`[server]`": ServerSettings,
    "`[[bots]]`": BotEntry,
}
# Fields of the file that are sections of their own, documented under their heading.
_SUBSECTIONS = {
    "time",
    "sandbox",
    "build",
    "ratings",
    "playoff",
    "authors",
    "executor",
    "league",
    "publish",
    "server",
    "bots",
}


def toml_value(text: str) -> Any:
    """A value written in a code span: TOML, or a fraction such as ``25/3``."""
    if re.fullmatch(r"\d+/\d+", text):
        return Fraction(text)
    return tomllib.loads(f"v = {text}")["v"]


def _bounds(field: Any) -> list[float]:
    out = []
    for item in field.metadata:
        out += [getattr(item, k) for k in ("ge", "gt", "le", "lt") if hasattr(item, k)]
    return [float(v) for v in out if v is not None]


def _choices(annotation: Any) -> list[str] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    return None


def key_problems(model: type[BaseModel], table: Table) -> list[str]:
    """Each row's default and bounds against the model's field."""
    wrong = []
    for number, (key_cell, default, allowed, *_) in table.rows:
        key = _code(key_cell) or key_cell
        field = model.model_fields.get(key)
        where = f"tournaments.md:{number}: {key}"
        if field is None:
            wrong.append(f"{where} is not a key of {model.__name__}")
            continue
        if default == "required" or field.is_required():
            if not (default == "required" and field.is_required()):
                wrong.append(f"{where}: the doc says {default!r}; required: {field.is_required()}")
        elif default == "none" or field.default is None:
            if not (default == "none" and field.default is None):
                wrong.append(f"{where}: the doc says {default!r}, the default is {field.default!r}")
        else:
            shown = toml_value(code_spans(default)[0])
            want = list(field.default) if isinstance(field.default, tuple) else field.default
            if shown != want and not (isinstance(shown, Fraction) and abs(shown - want) < 1e-12):  # type: ignore[operator]
                wrong.append(f"{where}: the doc says {shown!r}, the default is {want!r}")
        wrong += _allowed_problems(where, field, allowed)
    return wrong


def _allowed_problems(where: str, field: Any, allowed: str) -> list[str]:
    values = []
    for span in code_spans(allowed):
        try:
            values.append(toml_value(span))
        except tomllib.TOMLDecodeError:
            continue  # words in code, such as the characters a name may hold
    choices = _choices(field.annotation)
    if choices is not None and sorted(map(str, values)) != sorted(choices):
        return [f"{where}: the doc allows {values}, the code {choices}"]
    numbers = {float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)}
    missing = [b for b in _bounds(field) if b not in numbers]
    return [f"{where}: the doc's bounds lack {missing}"] if missing else []


def test_tournament_doc_states_the_models_defaults_and_bounds() -> None:
    found = sections(TOURNAMENTS_DOC.read_text(encoding="utf-8"), 3)
    wrong = []
    for heading, model in KEY_SECTIONS.items():
        assert heading in found, f"docs/tournaments.md has no section {heading!r}"
        keyed = [t for t in tables(found[heading]) if t.header[:3] == ("key", "default", "allowed")]
        assert len(keyed) == 1, f"{heading}: one key table"
        wrong += key_problems(model, keyed[0])
        named = {_code(cells[0]) for _, cells in keyed[0].rows}
        fields = set(model.model_fields) - (_SUBSECTIONS if model is TournamentFile else set())
        if named != fields:
            wrong.append(f"{heading}: documents {sorted(named)}, the model has {sorted(fields)}")  # type: ignore[type-var]
    assert not wrong, "\n".join(wrong)


def test_the_key_check_catches_a_wrong_default() -> None:
    rows = (
        (1, ("`move_ms`", "`999`", "`1` to `3600000`", "")),
        (2, ("`bank_ms`", "`10000`", "`0` to `1`", "")),
        (3, ("`hello_ms`", "required", "`1` to `3600000`", "")),
    )
    problems = key_problems(TimeControl, Table(0, ("key", "default", "allowed"), rows))
    assert [p.split(":")[1] for p in problems] == ["1", "2", "3"]


def _command(argv: Sequence[str]) -> tuple[click.Command, int]:
    """The click command an argv names, and how many words name it."""
    command: click.Command = main
    used = 0
    while isinstance(command, click.Group) and used < len(argv) and argv[used] in command.commands:
        command = command.commands[argv[used]]
        used += 1
    return command, used


def test_tournament_doc_commands_have_the_options_it_shows() -> None:
    text = TOURNAMENTS_DOC.read_text(encoding="utf-8")
    usage = [
        line.split()[1:]
        for _, info, lines in fenced_blocks(text)
        if not info
        for line in lines
        if line.startswith("referee ")
    ]
    documented = set()
    for argv in usage:
        command, used = _command(argv)
        assert used, f"referee {' '.join(argv)}: no such command"
        options = {
            o for p in command.params for o in [*p.opts, *p.secondary_opts] if o.startswith("-")
        }
        shown = {w.strip("[]").split("=")[0] for w in argv if w.strip("[]").startswith("--")}
        assert shown <= options, f"referee {' '.join(argv[:used])}: no {shown - options}"
        documented.add(tuple(argv[:used]))
        for option in options - {"--help", "-h"}:
            assert option in text, f"docs/tournaments.md never mentions {option} of {argv[:used]}"
    wanted = {
        ("tournament", "run"),
        ("tournament", "demo"),
        ("leaderboard",),
        ("publish",),
        ("verify",),
        ("submit",),
        ("league", "run"),
        ("league", "retire"),
        ("league", "check"),
    }
    assert wanted <= documented


def test_tournament_doc_exit_codes_are_the_command_lines() -> None:
    from referee.errors import InfrastructureError, Refused, UsageError
    from referee.interrupts import Terminated

    found = sections(TOURNAMENTS_DOC.read_text(encoding="utf-8"))["Exit codes"]
    (table,) = tables(found)
    codes = [int(cells[0]) for _, cells in table.rows]
    errors = [Refused.exit_code, UsageError.exit_code, InfrastructureError.exit_code]
    assert codes == [0, *sorted(errors), 130, Terminated.exit_code]
