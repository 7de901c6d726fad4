"""The Docker daemon as the referee sees it: the SDK, a client, and the containers it owns.

Shared by the Docker backend (:mod:`referee.sandbox.docker`) and the image builder
(:mod:`referee.sandbox.image`), which both import it and nothing of each other's, so the
SDK's lazy import, the connection error explained in one line and the container labels
live in one place.

Every container the referee creates carries the labels of :func:`owner_labels`: the
referee's own (:data:`LABEL`), its owner (host and pid) and, when :data:`RUN_ENV` is set,
its run. A referee that crashed leaves its containers behind; :func:`remove_leftovers`
removes those whose owner is gone.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

from referee.errors import UsageError
from referee.installation import install_hint

__all__ = [
    "LABEL",
    "LABEL_BOT",
    "LABEL_MATCH",
    "LABEL_OWNER",
    "LABEL_RUN",
    "RUN_ENV",
    "connect",
    "docker_sdk",
    "owner_labels",
    "remove_leftovers",
]

LABEL = "org.arschloch-referee"
"""Every container the referee creates carries ``LABEL=1`` (``docker ps --filter label=…``)."""

LABEL_OWNER = f"{LABEL}.owner"
"""Label holding the creating referee process as ``host/pid``."""
LABEL_RUN = f"{LABEL}.run"
"""Label holding :data:`RUN_ENV` when it is set: which run (a test session) made a container."""
LABEL_MATCH = f"{LABEL}.match"
"""Label of a bot's container: the match it plays (``""`` outside a match)."""
LABEL_BOT = f"{LABEL}.bot"
"""Label of a bot's container: the bot's name."""
RUN_ENV = "REFEREE_RUN_ID"


def docker_sdk() -> Any:
    """The Docker SDK (``import docker``), imported lazily: it is an optional extra."""
    try:
        import docker
    except ImportError as exc:
        raise UsageError(
            f"the docker extra is not installed; {install_hint('docker', extra='docker')}"
        ) from exc
    return docker


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and everything it was raised from, or while handling."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__]
        todo += [arg for arg in current.args if isinstance(arg, BaseException)]


def _explain_connect_error(exc: BaseException) -> str:
    """One line saying why the daemon cannot be reached and what to do about it."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    text = " ".join(str(cause) for cause in _causes(exc))
    if any(isinstance(c, PermissionError) for c in _causes(exc)) or "ermission denied" in text:
        return (
            f"permission denied on the Docker socket ({host}): add your user to the "
            "`docker` group and log in again, or run as root"
        )
    return (
        f"no Docker daemon answers at {host}: start it (`dockerd`, or `systemctl start "
        "docker`) or use the process sandbox (--sandbox process)"
    )


def connect(timeout: float = 30.0) -> Any:
    """A ``docker.DockerClient`` from the environment; :class:`UsageError` if unusable."""
    docker = docker_sdk()
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise UsageError(_explain_connect_error(exc)) from exc
    return client


def _owner() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"


def owner_labels() -> dict[str, str]:
    """The labels of every container this process creates: the referee's, its owner, its run.

    The owner (host and pid) lets a later referee remove the containers of a dead one
    (:func:`remove_leftovers`) and never those of a live one.
    """
    labels = {LABEL: "1", LABEL_OWNER: _owner()}
    run = os.environ.get(RUN_ENV)
    if run:
        labels[LABEL_RUN] = run
    return labels


def _owner_alive(owner: str) -> bool:
    """Whether the referee process that created a container may still be running.

    Containers made on another host (a shared remote daemon) are never called orphans.
    """
    host, _, pid_text = owner.rpartition("/")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers(client: Any, *, orphans_only: bool = False) -> int:
    """Force-remove the referee's containers (those labelled :data:`LABEL`); returns how many.

    With ``orphans_only`` only containers whose creating referee process is gone are removed,
    so parallel workers sharing one daemon do not remove each other's bots.
    """
    docker = docker_sdk()
    removed = 0
    # The low-level listing: the SDK's inspects each container it lists, and fails when one
    # is removed meanwhile (by its own referee, say: workers share one daemon).
    for entry in client.api.containers(all=True, filters={"label": LABEL}):
        owner = (entry.get("Labels") or {}).get(LABEL_OWNER, "")
        if orphans_only and owner and _owner_alive(owner):
            continue
        try:
            client.api.remove_container(entry["Id"], force=True)
        except docker.errors.APIError as exc:
            if exc.status_code in (404, 409):  # gone, or its removal already under way
                continue
            raise
        removed += 1
    return removed
