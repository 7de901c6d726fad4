"""The referee as a user installs it: the sdist and wheel `python -m build` makes, installed
into a fresh virtual environment and run from a folder outside the checkout.

Both archives are built straight from a copy of the checkout (as `pip install .` or `pipx
install .` in a clone would build the wheel) with junk planted in it: byte code in a sample
bot and a kit, a results folder beside the demo tournament, a stray .venv. Their file lists
show what the build leaves out, and that the sdist holds everything the wheel is made of. The commands run with a clean environment (no PYTHONPATH,
a temporary HOME, the current folder outside the checkout): the only referee they can find
is the one in the new environment, and a test checks that it is.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
SAMPLE_BOTS = ("heuristic", "lowest", "random", "js-lowest")
# Built by their bot.toml's build step.
COMPILED_SAMPLES = ("c-lowest", "cpp-lowest", "java-lowest", "rust-lowest")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# What the developer's tree holds that a copy need not (big, or the build's own output).
_NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".venv.lock",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "build",
    "dist",
    "*.egg-info",
    "*.results",
    "tmp",
)
_JUNK = (
    "sample_bots/heuristic/__pycache__/bot.cpython-311.pyc",
    "protocol/kits/python/__pycache__/botkit.cpython-311.pyc",
    "tournaments/demo.results/results.sqlite",
    "referee/__pycache__/planted.cpython-311.pyc",
    ".venv/lib/python3.11/site-packages/planted.py",
)


def _forbidden(name: str) -> str | None:
    """Why an archive member should not be there, or None."""
    parts = PurePosixPath(name).parts
    for part in parts:
        if part in {"tests", "__pycache__", ".venv", ".git", "build"}:
            return part
        if part.endswith(".results"):
            return "a results folder"
    return "byte code" if name.endswith((".pyc", ".pyo")) else None


def _shipped(folder: Path) -> list[str]:
    """The files of a checkout folder the wheel must carry (relative, byte code left out)."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the sdist and the wheel, both built from the (planted) tree."""
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=_NOT_COPIED)
    for name in _JUNK:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(b"planted by tests/test_packaging.py")
    build = [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(work / "dist")]
    out = subprocess.run(
        [*build, str(source)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    log = out.stdout + out.stderr
    assert out.returncode == 0, f"python -m build failed (is the dev extra installed?):\n{log}"
    warnings = [line for line in log.splitlines() if "Warning" in line or "WARNING" in line]
    assert not warnings, "the build is not clean:\n" + "\n".join(warnings)
    return work / "dist"


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"{pattern}: {found}"
    return found[0]


def test_the_archives_hold_no_tests_caches_or_results(dist: Path) -> None:
    wheel = zipfile.ZipFile(_one(dist, "*.whl")).namelist()
    with tarfile.open(_one(dist, "*.tar.gz")) as sdist:
        source = [m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name]
    for label, names in (("wheel", wheel), ("sdist", source)):
        bad = {name: why for name in names if (why := _forbidden(name))}
        assert not bad, f"the {label} holds {bad}"
    # The sdist builds the same wheel: it holds the source of every file in it.
    assert {"pyproject.toml", "README.md", "MANIFEST.in"} <= set(source)
    # The documentation travels with the source (MANIFEST.in), not in the wheel.
    docs = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert docs and docs <= set(source), f"the sdist lacks {sorted(docs - set(source))}"
    assert not [name for name in wheel if "docs/" in name]
    sources = {
        name.removeprefix("referee/assets/") if name.startswith("referee/assets/") else name
        for name in wheel
        if ".dist-info/" not in name
    }
    assert not sources - set(source), f"the sdist lacks {sorted(sources - set(source))}"


def test_the_wheel_carries_the_package_and_every_file_the_commands_read(dist: Path) -> None:
    names = set(zipfile.ZipFile(_one(dist, "*.whl")).namelist())
    expected = {f"referee/{n}" for n in _shipped(ROOT / "referee")}
    for folder in ("sample_bots", "protocol/kits", "protocol/schema", "sandbox", "tournaments"):
        expected |= {f"referee/assets/{folder}/{n}" for n in _shipped(ROOT / folder)}
    expected.add("referee/assets/protocol/SPEC.md")  # the protocol folder's only file shipped
    missing = sorted(expected - names)
    assert not missing, f"the wheel lacks {missing}"
    extra = sorted(n for n in names - expected if ".dist-info/" not in n)
    assert not extra, f"the wheel holds files from nowhere: {extra}"


# --------------------------------------------------------------------------- installed


class Installed:
    """A fresh virtual environment with the wheel installed, and a folder outside the checkout."""

    def __init__(self, root: Path) -> None:
        self.venv = root / "venv"
        self.cwd = root / "elsewhere"
        self.cwd.mkdir()
        (root / "home").mkdir()
        self.env = {
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root / "home"),
            "LANG": "C.UTF-8",
            # This test run's sandbox uids and container label (tests/conftest.py).
            "REFEREE_SANDBOX_UIDS": os.environ["REFEREE_SANDBOX_UIDS"],
            "REFEREE_RUN_ID": os.environ["REFEREE_RUN_ID"],
        }

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def referee(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        out = self.run(str(self.venv / "bin" / "referee"), *args, timeout=timeout)
        assert out.returncode == 0, f"referee {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
        return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("installed")
    env = Installed(root)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env.venv)], check=True, timeout=60
    )
    # The project's pip installs into the new environment (no pip of its own to bootstrap);
    # the dependencies come from the index or pip's cache, never from the project's venv.
    pip_env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(env.venv / "bin" / "python"),
            "install",
            "--quiet",
            str(_one(dist, "*.whl")),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=pip_env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return env


def test_the_installed_referee_is_the_wheels_and_knows_its_version(installed: Installed) -> None:
    assert installed.referee("--version").stdout == f"referee, version {VERSION}\n"
    probe = (
        "import referee, referee.resources as r; "
        "print(referee.__file__); print(r.asset_root()); print(r.dockerfile())"
    )
    out = installed.run(str(installed.venv / "bin" / "python"), "-c", probe)
    assert out.returncode == 0, out.stderr
    package, assets, dockerfile = map(Path, out.stdout.split())
    site = installed.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    site /= "site-packages"
    assert package == site / "referee" / "__init__.py"
    assert assets == site / "referee" / "assets"
    assert dockerfile.read_bytes() == (ROOT / "sandbox" / "Dockerfile").read_bytes()


def test_tournament_demo_runs_publishes_and_keeps_its_results_out_of_the_installation(
    installed: Installed,
) -> None:
    # Installed with nothing but the wheel, as docs/install.md says: publishing needs no extra.
    out = installed.referee("tournament", "demo", "--workers", "1", "--publish")
    found = re.search(r"(\d+)/(\d+) matches done .*; results in (\S+)", out.stderr)
    assert found is not None, out.stderr
    results = Path(found[3])
    try:
        assert found[1] == found[2] and int(found[1]) > 0
        assert results.is_dir() and installed.venv not in results.parents
        for name in SAMPLE_BOTS:
            assert name in out.stdout
        assert "mu ± sigma" in out.stdout  # the leaderboard
        index = Path(out.stdout.strip().splitlines()[-1])
        assert index == results.parent / "site" / "index.html" and index.is_file()
        page = index.read_text(encoding="utf-8")
        assert all(name in page for name in SAMPLE_BOTS)
        assert len(list((index.parent / "matches").glob("*.jsonl"))) == int(found[1])
        # ... and anyone can check the published site with the installed referee alone.
        installed.referee("verify", str(index.parent))
    finally:
        shutil.rmtree(results.parent, ignore_errors=True)


def test_install_hints_name_this_environments_interpreter(installed: Installed) -> None:
    python = installed.venv / "bin" / "python"
    probe = "from referee.installation import install_hint as h; print(h('docker', 'docker'))"
    out = installed.run(str(python), "-c", probe)
    assert out.returncode == 0, out.stderr
    # A venv made --without-pip, as here: pip pointed at it; never the unindexed extra.
    assert out.stdout == f"install it with: pip --python {python} install docker\n"


def test_bot_new_check_play_and_submit(installed: Installed) -> None:
    installed.referee("bot", "new", "mybot")
    bot = installed.cwd / "mybot"
    kit = ROOT / "protocol" / "kits" / "python" / "botkit.py"
    assert (bot / "botkit.py").read_bytes() == kit.read_bytes()

    installed.referee("bot", "check", "mybot", "--sandbox", "process")

    log = installed.cwd / "play.jsonl"
    played = installed.referee(
        "play", "mybot", "mybot", "mybot", "--sandbox", "process", "--json", "--log", str(log)
    )
    assert len(json.loads(played.stdout)["standings"]) == 3

    cup = installed.cwd / "cup"
    for name in ("a", "b", "c"):
        shutil.copytree(bot, cup / name)
        (cup / name / "bot.toml").write_text(f'name = "{name}"\ncommand = "python3 bot.py"\n')
    entries = "".join(f'\n[[bots]]\npath = "{name}"\n' for name in ("a", "b", "c"))
    (cup / "cup.toml").write_text(
        'name = "cup"\nrules = { preset = "arschloch", target = 5 }\ntable_size = 3\n'
        f'\n[sandbox]\nbackend = "process"\n{entries}'
    )
    submitted = installed.referee("submit", "mybot", "--to", "cup/cup.toml")
    assert "accepted: mybot entered" in submitted.stdout
    assert (cup / "bots" / "mybot" / "bot.py").is_file()
    assert 'path = "bots/mybot"' in (cup / "cup.toml").read_text()


def test_sample_bots_are_named_with_an_at_sign_and_copied_out(installed: Installed) -> None:
    site = installed.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    shipped = site / "site-packages" / "referee" / "assets" / "sample_bots"
    listed = installed.referee("bot", "samples").stdout.splitlines()
    expected = sorted(f"@{name}" for name in (*SAMPLE_BOTS, *COMPILED_SAMPLES, "montecarlo"))
    assert [line.split()[0] for line in listed] == expected
    heuristic = next(line for line in listed if line.startswith("@heuristic "))
    assert heuristic.endswith(str(shipped / "heuristic"))

    played = installed.referee(
        "play",
        "@heuristic",
        "@lowest",
        "@js-lowest",
        "--sandbox",
        "process",
        "--json",
        "--max-rounds",
        "2",
        "--log",
        str(installed.cwd / "samples.jsonl"),
    )
    names = {seat["name"] for seat in json.loads(played.stdout)["standings"]}
    assert names == {"heuristic", "lowest", "js-lowest"}

    table = installed.referee(
        "play",
        "@heuristic",
        "@lowest",
        "@random",
        "--sandbox",
        "process",
        "--json",
        "--max-rounds",
        "2",
        "--matches",
        "3",
        "--workers",
        "1",
        "--results",
        str(installed.cwd / "quick"),
    )
    data = json.loads(table.stdout)
    assert data["matches"] == 3 and {bot["name"] for bot in data["bots"]} == {
        "heuristic",
        "lowest",
        "random",
    }

    installed.referee("bot", "samples", "mine")
    for name in (*SAMPLE_BOTS, *COMPILED_SAMPLES):
        source, copy = ROOT / "sample_bots" / name, installed.cwd / "mine" / name
        assert _shipped(copy) == _shipped(source)
        assert all((copy / f).read_bytes() == (source / f).read_bytes() for f in _shipped(source))
    refused = installed.run(str(installed.venv / "bin" / "referee"), "bot", "samples", "mine")
    assert refused.returncode == 2 and "is not empty" in refused.stderr
    unknown = installed.run(
        str(installed.venv / "bin" / "referee"), "play", "@random", "mine/lowest", "@nope"
    )
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("referee: no sample bot is called @nope (the samples: @")


def test_protocol_schema_hands_out_the_schemas(installed: Installed) -> None:
    listed = installed.referee("protocol", "schema").stdout
    assert listed.split()[:3] == ["hello", "referee", "→"]
    installed.referee("protocol", "schema", "--out", "schemas")
    for path in (ROOT / "protocol" / "schema").glob("*.json"):
        assert (installed.cwd / "schemas" / path.name).read_bytes() == path.read_bytes()
    spec = (ROOT / "protocol" / "SPEC.md").read_text(encoding="utf-8")
    assert installed.referee("protocol", "spec").stdout == spec


def test_doctor_and_build_image_answer(installed: Installed) -> None:
    doctor = installed.referee("doctor").stdout
    assert doctor.startswith("process ")
    # Installed without the docker extra: one line saying how to get it, exit code 2.
    build = installed.run(str(installed.venv / "bin" / "referee"), "sandbox", "build-image")
    assert build.returncode == 2
    assert build.stderr.startswith("referee: the docker extra is not installed")
    assert build.stderr.count("\n") == 1


@pytest.fixture(autouse=True, scope="module")
def _nothing_written_to_the_checkout() -> Iterator[None]:
    """The build runs on a copy: the checkout gains no build/, egg-info or dist/."""
    before = {p.name for p in ROOT.iterdir()}
    yield
    assert {p.name for p in ROOT.iterdir()} - before == set()
