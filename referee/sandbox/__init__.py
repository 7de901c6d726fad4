"""How a bot process is started and confined.

``get_sandbox("process")`` runs bots as local processes (rlimits, a dropped uid when root,
bubblewrap when it works); ``"docker"`` runs each in a locked-down container (the ``docker``
extra); ``"auto"`` picks docker when a daemon answers and its image exists, else process.
The backends are imported when a sandbox is made (``ProcessSandbox`` on first access), so
importing the package, or :mod:`.base` and :mod:`.staging`, never loads them.
:func:`load_bot` and :func:`stage_bot` (or :func:`stage_files`) turn what a user names
into a :class:`BotSpec`;
:func:`make_staging_root` and :func:`remove_staging_root` hold the staged copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from referee.errors import UsageError
from referee.installation import install_hint
from referee.sandbox.base import BotProcess, BotSpec, ExitInfo, Limits, Sandbox
from referee.sandbox.staging import (
    bot_sha256,
    load_bot,
    make_staging_root,
    read_bot,
    read_bot_files,
    remove_staging_root,
    stage_bot,
    stage_files,
)
from referee.specs import DEFAULT_SANDBOX, SANDBOX_NAMES

if TYPE_CHECKING:
    from referee.sandbox.process import ProcessSandbox

__all__ = [
    "DEFAULT_SANDBOX",
    "SANDBOX_NAMES",
    "BotProcess",
    "BotSpec",
    "ExitInfo",
    "Limits",
    "ProcessSandbox",
    "Sandbox",
    "bot_sha256",
    "get_sandbox",
    "load_bot",
    "make_staging_root",
    "read_bot",
    "read_bot_files",
    "remove_staging_root",
    "stage_bot",
    "stage_files",
]


def __getattr__(name: str) -> Any:
    """``ProcessSandbox``, imported when first asked for: the package itself stays light.

    What only describes a bot (:class:`BotSpec`, :class:`Limits`, staging) is imported by
    the store, the tournament file and the executors' interface; the process backend
    (cgroups, seccomp, bubblewrap probes) is loaded by whoever starts a bot.
    """
    if name == "ProcessSandbox":
        from referee.sandbox.process import ProcessSandbox

        return ProcessSandbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_sandbox(name: str, *, images: Iterable[str] = (), **options: Any) -> Sandbox:
    """The sandbox backend called ``name``; ``options`` go to its constructor.

    ``images`` are the Docker images bots may name besides the referee's bot image (the
    docker backend refuses others; the process backend runs no images). Raises
    ``UsageError`` for an unknown name, or when the docker backend cannot be loaded.

    Whoever asks for a sandbox is a referee process that starts bots or coordinates those
    that do: it lowers its own ``oom_score_adj`` here, where it may, so that the kernel's
    OOM killer takes its bots, never it (:func:`referee.sandbox.budget.protect_referee`).
    """
    from referee.sandbox.budget import protect_referee
    from referee.sandbox.process import ProcessSandbox

    protect_referee()
    if name == "process":
        return ProcessSandbox(**options)
    if name == "docker":
        return _docker_sandbox(allowed_images=tuple(images), **options)
    if name == "auto":
        if options:
            raise UsageError("the auto sandbox takes no options; name a backend to set them")
        return _auto_sandbox(tuple(images))
    raise UsageError(f"unknown sandbox {name!r}; choose one of: {', '.join(SANDBOX_NAMES)}")


def _docker_module() -> Any:
    """``referee.sandbox.docker``, imported only when asked for (it needs the extra)."""
    try:
        from referee.sandbox import docker
    except ImportError as exc:
        raise UsageError(
            f"the docker sandbox is not available ({exc}); {install_hint('docker', extra='docker')}"
        ) from None
    return docker


def _docker_sandbox(**options: Any) -> Sandbox:
    sandbox: Sandbox = _docker_module().DockerSandbox(**options)
    return sandbox


def _auto_sandbox(images: tuple[str, ...]) -> Sandbox:
    """Docker when its daemon answers and the bot image exists, else the process sandbox.

    The hook into the docker backend is ``referee.sandbox.docker.docker_status()``, which
    returns ``(usable, reason)``.
    """
    from referee.sandbox.process import ProcessSandbox

    try:
        docker = _docker_module()
    except UsageError:
        return ProcessSandbox()
    usable, _reason = docker.docker_status()
    if usable:
        sandbox: Sandbox = docker.DockerSandbox(allowed_images=images)
        return sandbox
    return ProcessSandbox()
