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

    for name, ok, why in machine_checks(ProcessSandbox()):
        click.echo(f"{name:8} {'ok  ' if ok else 'NO  '} {why}")
    click.echo(f"auto     →    {get_sandbox('auto').describe()}")


def machine_checks(process: ProcessSandbox) -> list[tuple[str, bool, str]]:
    """``(what, usable, why)`` for each line of ``referee doctor``, as ``process`` (the
    process sandbox to describe, with what it probed) sees this machine."""
    import shutil

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
    node = shutil.which("node")
    lines.append(("node", node is not None, node or "not found: JavaScript bots need Node.js"))
    return lines
