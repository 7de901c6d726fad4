"""Build the bot runtime image used by the Docker sandbox, and say which images bots may use.

Two ways to the same image (Python 3 with its full standard library, run as a non-root
user in ``/bot``):

- online: ``docker build`` of ``sandbox/Dockerfile`` (from an official slim Python image;
  an installed referee carries it, :func:`referee.resources.dockerfile`);
- offline, for machines without a container registry: ``debootstrap --variant=minbase
  --include=python3`` of the host's Debian release, trimmed, tarred and ``docker import``-ed.
  The trimmed root file system is cached as a tarball in :data:`CACHE_DIR`, so a rebuild
  only re-imports it. ``.ci/docker-setup.sh`` does the same steps in bash (same cache).

Run it as ``python -m referee.sandbox.image [--offline] [--tag TAG] [--rebuild]``.

A bot may name another image in its ``bot.toml`` (``image = "..."``), but only one the
organiser allowed (:func:`check_bot_image`): any image on the host would otherwise do,
including private ones with credentials baked in. The referee's own image is always allowed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from referee.errors import InfrastructureError, RefereeError, UsageError
from referee.resources import dockerfile
from referee.sandbox.base import BotSpec
from referee.sandbox.daemon import connect, owner_labels
from referee.specs import IMAGE_NAME

__all__ = [
    "CACHE_DIR",
    "IMAGE_NAME",
    "allowed_images",
    "build_image",
    "check_bot_image",
    "host_suite",
    "image_reference",
]


PACKAGES = "python3,nodejs,perl"
"""Debian packages of the offline bot image: runtimes for Python and JavaScript bots (and
Perl with its core modules, ``JSON::PP`` among them)."""

NATIVE_IMAGE = "arschloch-referee-bot-native:latest"
JAVA_IMAGE = "arschloch-referee-bot-java:latest"


@dataclass(frozen=True)
class ImageFamily:
    """One of the referee's bot images: its tag, Debian packages and the languages it runs.

    Each compiled-language family has an image of its own, so a Python tournament never
    pulls in a JDK. Each has ``python3`` (its build is checked with it) and ``/bin/sh``
    (the sandbox's stdio shim)."""

    name: str
    tag: str
    packages: str
    languages: tuple[str, ...]
    tools: tuple[str, ...]


FAMILIES: Final = (
    ImageFamily("python", IMAGE_NAME, PACKAGES, ("python", "javascript"), ("python3", "node")),
    ImageFamily(
        "native",
        NATIVE_IMAGE,
        "python3,make,gcc,g++,libc6-dev,rustc",
        ("c", "cpp", "rust"),
        ("make", "cc", "c++", "rustc"),
    ),
    ImageFamily(
        "java", JAVA_IMAGE, "python3,make,openjdk-17-jdk-headless", ("java",), ("make", "javac")
    ),
)
"""The referee's bot images (keep in step with ``.ci/docker-setup.sh``)."""


def family(name: str) -> ImageFamily:
    """The image family called ``name`` (``UsageError`` naming the others)."""
    for found in FAMILIES:
        if found.name == name:
            return found
    raise UsageError(f"no image family {name!r}: {', '.join(f.name for f in FAMILIES)}")


CACHE_DIR = Path("/var/cache/arschloch-referee")
"""Where the offline build keeps its root file system tarball and downloaded packages."""

STDLIB_CHECK = "import json, asyncio, random, sqlite3"
"""Run in the finished image: the bot runtime must have the full standard library."""

IMPORT_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "ENV PYTHONDONTWRITEBYTECODE=1 TMPDIR=/tmp HOME=/tmp",
    "USER 65534:65534",
    "WORKDIR /bot",
    'CMD ["python3"]',
)
"""Dockerfile instructions applied on ``docker import`` (keep in step with the Dockerfile)."""

# Paths (relative to the root file system) removed after debootstrap: package caches,
# indexes, logs, manuals and translations. Copyright files under usr/share/doc are kept.
_TRIM_GLOBS = (
    "var/cache/apt/archives/*.deb",
    "var/cache/apt/*.bin",
    "var/lib/apt/lists/*",
    "var/cache/debconf/*-old",
    "var/log/*",
    "usr/share/man/*",
    "usr/share/info/*",
    "usr/share/locale/*",
    "usr/share/doc/*/*",
)
_KEEP_NAMES = frozenset({"copyright"})

Echo = Callable[[str], None]


def image_reference(name: str) -> str:
    """``name`` as Docker reads it: without a tag or digest it means ``name:latest``."""
    if "@" in name or ":" in name.rsplit("/", 1)[-1]:
        return name
    return f"{name}:latest"


def allowed_images(extra: Iterable[str] = ()) -> frozenset[str]:
    """The images bots may run in: the referee's own (:data:`FAMILIES`) and ``extra``, as
    references."""
    own = (found.tag for found in FAMILIES)
    return frozenset(image_reference(name) for name in (*own, *extra))


def check_bot_image(bot: BotSpec, allowed: Iterable[str], how_to_allow: str) -> None:
    """Refuse (``UsageError``) a bot whose ``bot.toml`` names an image not in ``allowed``.

    ``how_to_allow`` ends the message: the option or the setting that allows the image.
    """
    if bot.image is None:
        return
    permitted = allowed_images(allowed)
    if image_reference(bot.image) in permitted:
        return
    raise UsageError(
        f"bot {bot.name!r} names the Docker image {bot.image!r} in its bot.toml, which is "
        f"not allowed here (allowed: {', '.join(sorted(permitted))}); {how_to_allow}"
    )


def _progress(echo: Echo) -> Echo:
    started = time.monotonic()

    def say(line: str) -> None:
        echo(f"[{time.monotonic() - started:6.1f}s] {line}")

    return say


def host_suite(
    os_release: Callable[[], dict[str, str]] = platform.freedesktop_os_release,
) -> str:
    """The host's Debian codename (``VERSION_CODENAME`` in ``/etc/os-release``, as
    ``os_release`` reads it)."""
    try:
        suite = os_release().get("VERSION_CODENAME", "")
    except OSError:  # neither /etc/os-release nor /usr/lib/os-release
        suite = ""
    if not suite:
        raise UsageError(
            "the offline image build needs a Debian host (no VERSION_CODENAME in "
            "/etc/os-release): build online with `referee sandbox build-image`"
        )
    return suite


def _host_arch() -> str:
    try:
        result = subprocess.run(
            ["dpkg", "--print-architecture"], check=True, capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise UsageError(f"cannot ask dpkg for the host architecture: {exc}") from exc
    return result.stdout.strip()


def _check_offline_tools() -> None:
    if shutil.which("debootstrap") is None:
        raise UsageError("debootstrap is missing: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise UsageError("the offline image build runs debootstrap, which needs root")


def _mounts_under(root: Path) -> list[str]:
    """Mount points inside ``root``, deepest first (debootstrap mounts /proc, /sys there)."""
    prefix = str(root.resolve()) + "/"
    found: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        for line in Path("/proc/mounts").read_text().splitlines():
            point = line.split()[1].replace("\\040", " ")
            if point.startswith(prefix):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def _remove_tree(root: Path) -> None:
    """Delete a half-built root file system, never descending into a still-mounted /proc."""
    for point in _mounts_under(root):
        subprocess.run(["umount", "-l", point], check=False)
    if _mounts_under(root):
        raise InfrastructureError(f"{root} still has mounts; remove it by hand")
    shutil.rmtree(root, ignore_errors=True)


def _trim(rootfs: Path) -> None:
    for pattern in _TRIM_GLOBS:
        for path in rootfs.glob(pattern):
            if path.name in _KEEP_NAMES:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def _run(argv: Sequence[str], say: Echo) -> None:
    say("$ " + " ".join(argv))
    try:
        subprocess.run(argv, check=True)
    except OSError as exc:
        raise UsageError(f"cannot run {argv[0]}: {exc}") from exc
    except subprocess.CalledProcessError as exc:
        raise InfrastructureError(f"{argv[0]} failed with exit code {exc.returncode}") from exc


def rootfs_tarball(
    *,
    rebuild: bool = False,
    cache_dir: Path = CACHE_DIR,
    echo: Echo = print,
    packages: str = PACKAGES,
) -> Path:
    """The trimmed ``debootstrap`` root file system as a tarball, built once and cached.

    ``echo`` gets the progress lines as they are.
    """
    say = echo
    suite, arch = host_suite(), _host_arch()
    tarball = cache_dir / f"rootfs-{suite}-{arch}-{packages.replace(',', '-')}.tar"
    if tarball.is_file() and not rebuild:
        say(f"using the cached root file system {tarball}")
        return tarball
    _check_offline_tools()
    cache_dir.mkdir(parents=True, exist_ok=True)
    debs = cache_dir / "debs"
    debs.mkdir(exist_ok=True)
    work = cache_dir / f"build-{os.getpid()}"
    _remove_tree(work)
    rootfs = work / "rootfs"
    try:
        say(f"debootstrap {suite} ({arch}, minbase + {packages}) into {rootfs}; takes a minute")
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={packages}",
                f"--cache-dir={debs}",
                suite,
                str(rootfs),
            ],
            say,
        )
        say("trimming package caches, indexes, logs, manuals and translations")
        _trim(rootfs)
        partial = work / "rootfs.tar"
        _run(
            [
                "tar",
                "-C",
                str(rootfs),
                "--numeric-owner",
                "--exclude=./dev/*",
                "--exclude=./proc/*",
                "--exclude=./sys/*",
                "-cf",
                str(partial),
                ".",
            ],
            say,
        )
        partial.replace(tarball)
    finally:
        _remove_tree(work)
    say(f"cached {tarball} ({tarball.stat().st_size >> 20} MiB)")
    return tarball


def _client() -> Any:
    """A Docker client with a long timeout (an image build takes minutes)."""
    return connect(timeout=600.0)


def _split_tag(tag: str) -> tuple[str, str]:
    name, sep, version = tag.rpartition(":")
    if not sep or "/" in version:
        return tag, "latest"
    return name, version


def _import_offline(client: Any, tag: str, tarball: Path, say: Echo) -> None:
    repository, version = _split_tag(tag)
    say(f"docker import {tarball.name} as {repository}:{version}")
    client.api.import_image(
        src=str(tarball), repository=repository, tag=version, changes=list(IMPORT_CHANGES)
    )


def family_dockerfile(kind: ImageFamily) -> str:
    """The Dockerfile of a compiled-language family: Debian's slim image of the host's
    release with the family's packages, set up as the offline import is."""
    packages = " ".join(kind.packages.split(","))
    settings = "\n".join(IMPORT_CHANGES[1:])
    return (
        f"FROM debian:{host_suite()}-slim\n"
        f"RUN apt-get update && apt-get install -y --no-install-recommends {packages} "
        "&& rm -rf /var/lib/apt/lists/*\n"
        f"{settings}\n"
    )


def _build_online(client: Any, tag: str, say: Echo, kind: ImageFamily = FAMILIES[0]) -> None:
    import io

    import docker

    if kind is FAMILIES[0]:
        recipe = dockerfile()
        say(f"docker build -t {tag} -f {recipe}")
        source: dict[str, Any] = {"path": str(recipe.parent), "dockerfile": recipe.name}
    else:
        say(f"docker build -t {tag} (Debian slim + {kind.packages})")
        source = {"fileobj": io.BytesIO(family_dockerfile(kind).encode())}
    try:
        for chunk in client.api.build(**source, tag=tag, rm=True, decode=True):
            if "error" in chunk:
                raise UsageError(
                    f"docker build failed: {chunk['error'].strip()} (no registry reachable? "
                    "build it offline: `referee sandbox build-image --offline`)"
                )
            for line in str(chunk.get("stream", "")).splitlines():
                if line.strip():
                    say("  " + line.rstrip())
    except docker.errors.APIError as exc:
        raise UsageError(f"docker build failed: {exc}") from exc


def _check_image(client: Any, tag: str, say: Echo) -> None:
    import docker

    say(f"checking the standard library inside {tag}: {STDLIB_CHECK}")
    try:
        output = client.containers.run(
            tag,
            ["python3", "-c", STDLIB_CHECK + "; import sys; print(sys.version.split()[0])"],
            network_mode="none",
            read_only=True,
            user="65534:65534",
            labels=owner_labels(),
            remove=True,
        )
    except docker.errors.ContainerError as exc:
        raise InfrastructureError(f"the image {tag} lacks part of Python's stdlib: {exc}") from exc
    say(f"ok: Python {output.decode().strip()}, runs as uid 65534")


def build_image(
    tag: str = IMAGE_NAME,
    offline: bool = False,
    *,
    rebuild: bool = False,
    cache_dir: Path = CACHE_DIR,
    echo: Echo = print,
    kind: ImageFamily = FAMILIES[0],
) -> str:
    """Build the bot runtime image ``tag`` of the family ``kind`` and return its id; prints
    progress lines.

    ``offline`` uses debootstrap + ``docker import`` instead of ``docker build`` (no registry
    needed, Debian host and root required). ``rebuild`` ignores the cached root file system.
    Online, the Python family is ``sandbox/Dockerfile``; the others are Debian's slim image
    with their packages (:func:`family_dockerfile`).
    """
    say = _progress(echo)
    client = _client()
    try:
        if offline:
            tarball = rootfs_tarball(
                rebuild=rebuild, cache_dir=cache_dir, echo=say, packages=kind.packages
            )
            _import_offline(client, tag, tarball, say)
        else:
            _build_online(client, tag, say, kind)
        _check_image(client, tag, say)
        image_id = str(client.images.get(tag).id)
    finally:
        client.close()
    say(f"built {tag} ({image_id[:19]})")
    return image_id


def image_exists(tag: str = IMAGE_NAME) -> bool:
    """Whether the Docker daemon already has ``tag``."""
    import docker

    client = _client()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    finally:
        client.close()
    return True


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m referee.sandbox.image", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--offline", action="store_true", help="debootstrap + docker import")
    parser.add_argument("--tag", default=None, help="image name (default: the family's)")
    parser.add_argument(
        "--family", default="python", choices=[f.name for f in FAMILIES], help="which image"
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore the cached rootfs")
    parser.add_argument(
        "--if-missing", action="store_true", help="do nothing when the image exists"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        kind = family(args.family)
        tag = args.tag or kind.tag
        if args.if_missing and image_exists(tag):
            print(f"{tag} is already built")
            return 0
        build_image(tag, args.offline, rebuild=args.rebuild, kind=kind)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except RefereeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
