"""``referee sandbox build-image`` and ``referee doctor``: the sandboxes of this machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from referee.cli.app import friendly, main
from referee.installation import install_hint

if TYPE_CHECKING:
    from referee.sandbox.process import ProcessSandbox


@main.group()
def sandbox() -> None:
    """Manage the bot sandboxes."""


@sandbox.command("build-image")
@click.option(
    "--offline", is_flag=True, help="Build from Debian packages (debootstrap), no registry."
)
@click.option("--tag", default=None, help="Image name (default: the family's own).")
@click.option("--rebuild", is_flag=True, help="Rebuild even when the image exists.")
@click.option(
    "--family",
    type=click.Choice(["python", "native", "java", "all"]),
    default="python",
    show_default=True,
    help="python: Python, JavaScript and Perl; native: C, C++, Rust; java: Java.",
)
@friendly
def sandbox_build_image(offline: bool, tag: str | None, rebuild: bool, family: str) -> None:
    """Build a bot runtime image of the Docker sandbox (by default the Python and Node.js
    one; --family native or java for compiled bots, all for the three)."""
    from referee.sandbox.image import FAMILIES, build_image

    kinds = [kind for kind in FAMILIES if family in ("all", kind.name)]
    if tag is not None and len(kinds) > 1:
        raise click.UsageError("--tag names one image: give --family too")
    for kind in kinds:
        build_image(tag or kind.tag, offline, rebuild=rebuild, echo=click.echo, kind=kind)


@main.command()
@friendly
def doctor() -> None:
    """Say which sandboxes are usable here, and why not."""
    from referee.sandbox import get_sandbox
    from referee.sandbox.process import ProcessSandbox

    checks = machine_checks(ProcessSandbox())
    if any(name == "docker" and ok for name, ok, _ in checks):
        checks += image_checks()
    width = max(len(name) for name, _, _ in checks)
    for name, ok, why in checks:
        click.echo(f"{name:{width}} {'ok  ' if ok else 'NO  '} {why}")
    click.echo(f"{'auto':{width}} →    {get_sandbox('auto').describe()}")


def machine_checks(process: ProcessSandbox) -> list[tuple[str, bool, str]]:
    """``(what, usable, why)`` for each line of ``referee doctor``, as ``process`` (the
    process sandbox to describe, with what it probed) sees this machine."""

    lines: list[tuple[str, bool, str]] = []
    status = process.bwrap_status()
    if status.works:
        lines.append(("process", True, "bubblewrap works: no network, private /tmp, own pids"))
    elif status.path is None:
        lines.append(("process", True, "usable, but WITHOUT isolation: install bubblewrap"))
    else:
        lines.append(("process", True, f"usable, but bubblewrap fails: {status.reason}"))
    cgroups = process.cgroup_support()
    where = f" — {cgroups.reason}" if cgroups.works else ""
    lines.append(("cgroups", cgroups.works, cgroups.describe() + where))
    seccomp = process.seccomp_filter()
    if not seccomp.works:
        lines.append(("seccomp", False, seccomp.describe()))
    elif not (status.works and status.seccomp):
        lines.append(("seccomp", False, "NO seccomp filter: it needs a working bubblewrap"))
    else:
        lines.append(("seccomp", True, seccomp.describe()))
    try:
        from referee.sandbox.docker import docker_status
    except ImportError as exc:
        hint = install_hint("docker", extra="docker")
        lines.append(("docker", False, f"the docker extra is not installed ({exc}); {hint}"))
    else:
        ok, why = docker_status()
        if not ok and "image" in why:
            why += " — build it with: referee sandbox build-image --offline"
        lines.append(("docker", ok, why))
    lines += language_checks()
    return lines


# Each language of the kits: the programs its bots (and their builds) run in the process
# sandbox, and the Debian packages that bring them.
LANGUAGES = (
    ("python", ("python3",), "python3"),
    ("js", ("node",), "nodejs"),
    ("c", ("cc", "make"), "gcc make"),
    ("c++", ("c++", "make"), "g++ make"),
    ("rust", ("rustc", "make"), "rustc make"),
    ("java", ("javac", "java", "make"), "openjdk-17-jdk-headless make"),
)


def language_checks(path: str | None = None) -> list[tuple[str, bool, str]]:
    """A ``referee doctor`` line per language: ready in the process sandbox (its programs on
    the sandbox's ``PATH``), or missing with the command that adds it. A program found only
    on the referee's own ``PATH`` (rustup's under ``/root``) is not the sandbox's."""
    import shutil

    from referee.sandbox.base import SANDBOX_PATH

    where = path or SANDBOX_PATH
    lines = []
    for name, programs, packages in LANGUAGES:
        missing = [p for p in programs if shutil.which(p, path=where) is None]
        if not missing:
            found = shutil.which(programs[0], path=where)
            lines.append((name, True, f"ready in the process sandbox ({found})"))
            continue
        why = f"missing {', '.join(missing)}: apt-get install {packages}"
        elsewhere = [p for p in missing if shutil.which(p)]
        if elsewhere:
            outside = shutil.which(elsewhere[0])
            why += f" ({outside} is outside the sandbox's PATH, {where}, so bots never see it)"
        lines.append((name, False, why))
    return lines


def image_checks() -> list[tuple[str, bool, str]]:
    """A ``referee doctor`` line per bot image family of the Docker sandbox."""
    from referee.sandbox.image import FAMILIES, image_exists

    lines = []
    for kind in FAMILIES:
        langs = ", ".join(kind.languages)
        if image_exists(kind.tag):
            lines.append((f"image {kind.name}", True, f"{kind.tag} ({langs})"))
        else:
            fix = f"referee sandbox build-image --offline --family {kind.name}"
            lines.append((f"image {kind.name}", False, f"{kind.tag} is missing ({langs}): {fix}"))
    return lines
