"""Where the commands find their files, how the build maps them into the package, and the
version: the checkout side (the installed side is tests/test_packaging.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from referee import resources
from referee.cli import main
from referee.errors import InfrastructureError, UsageError

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS: dict[str, Any] = PYPROJECT["tool"]["setuptools"]


def test_from_the_checkout_the_files_are_the_product_folders_themselves() -> None:
    assert resources.asset_root() == ROOT
    assert resources.sample_bot("heuristic") == ROOT / "sample_bots" / "heuristic"
    assert resources.bot_kit("python") == ROOT / "protocol" / "kits" / "python" / "botkit.py"
    assert resources.bot_kit("javascript") == ROOT / "protocol/kits/javascript/botkit.js"
    assert resources.demo_tournament() == ROOT / "tournaments" / "demo.toml"
    assert resources.dockerfile() == ROOT / "sandbox" / "Dockerfile"
    assert resources.spec() == ROOT / "protocol" / "SPEC.md"
    table = (ROOT / "referee" / "data" / "confusables.tsv").read_text(encoding="utf-8")
    assert resources.confusables_table() == table


def test_every_schema_file_has_a_name_and_reads_as_written() -> None:
    names = resources.schema_names()
    files = {p.stem for p in (ROOT / "protocol" / "schema").glob("*.json")}
    assert set(names) == files
    assert names["hello"] == "referee → bot" and names["ready"] == "bot → referee"
    assert list(names)[-1] == "index"
    for name in names:
        expected = (ROOT / "protocol" / "schema" / f"{name}.json").read_text(encoding="utf-8")
        assert resources.schema_text(name) == expected


@pytest.mark.parametrize("name", ["nope", "../../pyproject", "index.json", ""])
def test_a_schema_name_not_in_the_index_is_refused_with_the_list(name: str) -> None:
    with pytest.raises(UsageError, match=r"no schema is called .*; the schemas: hello, act_play"):
        resources.schema_text(name)


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A stand-in for the installed ``referee`` folder, handed to the look-up."""
    folder = tmp_path / "site-packages" / "referee"
    folder.mkdir(parents=True)
    return folder


def test_an_installed_package_reads_its_own_assets(package: Path) -> None:
    bot = package / "assets" / "sample_bots" / "lowest"
    bot.mkdir(parents=True)
    assert resources.sample_bot("lowest", package=package) == bot


def test_an_installation_without_its_assets_says_to_reinstall(package: Path) -> None:
    # site-packages may hold a sample_bots folder of some other project: it is not ours
    (package.parent / "sample_bots").mkdir()
    with pytest.raises(InfrastructureError, match=r"assets is missing: .* reinstall"):
        resources.sample_bot("lowest", package=package)


def test_a_missing_file_says_to_reinstall(package: Path) -> None:
    (package / "assets" / "sample_bots").mkdir(parents=True)
    with pytest.raises(InfrastructureError, match=r"sample_bots/lowest is missing: .* reinstall"):
        resources.sample_bot("lowest", package=package)


# --------------------------------------------------------------------------- the build's map


def test_every_folder_of_the_package_with_code_is_a_listed_package() -> None:
    """The package list is written out (the asset mapping needs it): none may be forgotten."""
    listed = set(SETUPTOOLS["packages"])
    for init in (ROOT / "referee").rglob("*.py"):
        folder = init.parent.relative_to(ROOT)
        if "__pycache__" not in folder.parts:
            assert ".".join(folder.parts) in listed, f"add {folder} to packages in pyproject.toml"


def test_each_product_folder_is_mapped_to_where_resources_reads_it() -> None:
    """``referee.assets.X.Y`` = ``X/Y``: the wheel's layout below assets/ is the checkout's."""
    mapping: dict[str, str] = SETUPTOOLS["package-dir"]
    assert set(mapping) <= set(SETUPTOOLS["packages"])
    assert {folder.split("/")[0] for folder in mapping.values()} == {
        "protocol",
        "sample_bots",
        "sandbox",
        "tournaments",
    }
    for package, folder in mapping.items():
        assert package == "referee.assets." + folder.replace("/", ".")
        assert (ROOT / folder).is_dir()
        assert SETUPTOOLS["package-data"][package], f"{package} ships no files"


# --------------------------------------------------------------------------- version


def test_the_version_is_the_one_in_pyproject() -> None:
    import referee

    version = PYPROJECT["project"]["version"]
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"referee, version {version}\n", "reinstall: pip install -e ."
    assert referee.__version__ == version


# --------------------------------------------------------------------------- samples by name

SAMPLES = sorted(p.name for p in (ROOT / "sample_bots").iterdir() if (p / "bot.toml").is_file())


def test_the_samples_are_listed_and_named_with_an_at_sign_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resources.sample_bot_names() == SAMPLES
    assert {"heuristic", "lowest", "random", "js-lowest", "montecarlo"} <= set(SAMPLES)
    assert {"c-lowest", "cpp-lowest", "rust-lowest", "java-lowest"} <= set(SAMPLES)
    assert resources.sample_by_name("@heuristic") == ROOT / "sample_bots" / "heuristic"
    # Anything not starting with @ is a path, left to the caller.
    for path in ("heuristic", "./@heuristic", "sample_bots/heuristic", ""):
        assert resources.sample_by_name(path) is None


@pytest.mark.parametrize(
    "given",
    ["@nope", "@", "@Heuristic", "@heuristic/", "@../sample_bots/heuristic", "@/etc", "@\x1b[2Jx"],
)
def test_an_unknown_sample_is_one_line_listing_the_samples(given: str) -> None:
    with pytest.raises(UsageError) as caught:
        resources.sample_by_name(given)
    message = str(caught.value)
    assert message.startswith("no sample bot is called @")
    assert message.endswith(f"(the samples: {', '.join('@' + n for n in SAMPLES)})")
    assert "\n" not in message and "\x1b" not in message


def test_a_folder_of_ones_own_named_with_an_at_sign_is_named_with_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "@mine").mkdir()
    with pytest.raises(UsageError, match=r"for the path @mine here, write \./@mine$"):
        resources.sample_by_name("@mine")


def test_an_installed_package_lists_the_sample_folders_with_a_manifest(package: Path) -> None:
    samples = package / "assets" / "sample_bots"
    for name in ("zeta", "alpha", "no-manifest"):
        (samples / name).mkdir(parents=True)
    for name in ("zeta", "alpha"):
        (samples / name / "bot.toml").write_text('command = "python3 bot.py"\n')
    (samples / "README.md").write_text("not a bot\n")
    assert resources.sample_bot_names(package=package) == ["alpha", "zeta"]
    assert resources.sample_by_name("@zeta", package=package) == samples / "zeta"
    with pytest.raises(UsageError, match=r"no sample bot is called @no-manifest"):
        resources.sample_by_name("@no-manifest", package=package)
