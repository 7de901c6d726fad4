"""Who may talk to the matches' Dask cluster: members with a certificate of its CA only.

A Dask scheduler runs what its clients send (``Client.run`` on every worker,
``run_on_scheduler`` in the scheduler itself), its workers run the referee (as root, for
the process sandbox's uids and cgroups), and a worker that joins is handed bots (their
bundles) and match tasks, deals included. Whoever opens a connection to a member owns the
machines and sees the run. So the coordinator uses a cluster only over TLS with mutual
authentication: every listener (scheduler, nannies, workers) asks each peer for a
certificate signed by the cluster's CA, and ends the connection at the handshake without
one. A plain ``tcp://`` client is cut there; so is a TLS client, or a worker, whose
certificate another CA signed.

* **The local cluster** (``--executor dask`` without an address) gets a CA of its own for
  each run: distributed's ``Security.temporary()``, a fresh RSA key and a self-signed
  certificate that is the CA and every member's certificate at once. They live in memory:
  the coordinator makes them, and the worker processes get them through the pipe their
  nanny starts them with. Python's ``ssl`` loads a key only from a file, so distributed
  writes the PEM text for an instant into a fresh ``mkdtemp`` folder (mode 0700, owned by
  the referee's user, which no bot uid and no other user can open) each time it makes a
  TLS context, and removes it. Its addresses are ``tls://127.0.0.1:PORT``. The dashboard
  is off, and so is the rest of the HTTP server Dask keeps even without a dashboard (worker
  logs, call stacks and task names under ``/info``, metrics under ``/metrics``): its routes
  are emptied (:data:`NO_HTTP_ROUTES`), so the loopback port it still opens answers 404 to
  every request. An organiser who wants a dashboard runs the scheduler themselves.
* **A cluster the organiser runs**: ``--cluster tls://HOST:PORT`` with ``--cluster-security
  FILE`` (or ``security = "FILE"`` beside ``cluster`` in the tournament file's ``executor``
  table): the cluster's CA certificate, and this coordinator's certificate and key signed
  by that CA (:func:`load_cluster_security`). A key other users can read is refused, as
  ``ssh`` refuses one.
* **A plain address** (``tcp://``, ``ws://``, ``ucx://``, or none) is refused, loopback
  included (every local user, and a bot of the process sandbox without bubblewrap, reaches
  loopback ports), unless the organiser passes ``--insecure-cluster``; the run then says
  once what that exposes (:data:`INSECURE_NOTE`).

:func:`check_cluster` is that rule, in one place:
:class:`~referee.executors.cluster.DaskExecutor` applies it when it is made, so every
command that takes ``--cluster`` (``tournament run``, ``league run``) is held to it; the
commands apply it once more as they read their options, before they start anything.
Nothing here imports Dask: the rule and the file are checked before a cluster is reached.
"""

from __future__ import annotations

import ssl
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.errors import UsageError

__all__ = [
    "DASK_PACKAGES",
    "INSECURE_NOTE",
    "NO_HTTP_ROUTES",
    "TLS_SCHEMES",
    "ClusterSecurity",
    "check_cluster",
    "load_cluster_security",
    "scheme_of",
]

DASK_PACKAGES = "dask[distributed] cryptography"
"""What the ``dask`` extra installs, for the install hint (``cryptography`` makes the local
cluster's certificates)."""

TLS_SCHEMES = ("tls", "wss")
"""Dask address schemes whose connections are TLS (``wss``: TLS under WebSockets)."""

NO_HTTP_ROUTES: dict[str, Any] = {
    "distributed.scheduler.http.routes": [],
    "distributed.worker.http.routes": [],
}
"""Dask configuration for the local cluster: no page, no metrics, on any member's HTTP port."""

INSECURE_NOTE = (
    "referee: --insecure-cluster: {address} is plain {scheme}, with no encryption and no "
    "authentication: anyone who can reach that port (on loopback: every user of this machine "
    "and, without bubblewrap, every bot) can run any code on the scheduler and on every "
    "worker, as the user the workers run as, join as a worker, and read the bots and the "
    "deals this run sends"
)
"""What a run on a plain address says, once, before it connects."""

_KEYS = ("ca-file", "cert", "key")
_WHAT_TO_DO = "see docs/cluster.md"


@dataclass(frozen=True)
class ClusterSecurity:
    """The coordinator's TLS settings for a cluster the organiser runs: the cluster's CA
    certificate, and the coordinator's certificate and key (``None``: the key is inside
    ``cert``), read from ``source`` (:func:`load_cluster_security`)."""

    ca_file: Path
    cert: Path
    key: Path | None
    source: Path


def scheme_of(address: str) -> str:
    """The address's scheme (``tcp`` when it names none, as Dask reads it)."""
    scheme, found, _ = address.partition("://")
    return scheme.lower() if found else "tcp"


def check_cluster(
    address: str | None, security: ClusterSecurity | None, insecure: bool
) -> tuple[str, ...]:
    """Refuse, with what to do, a cluster others could reach or a contradictory choice;
    otherwise the notes to print once (the plain address's :data:`INSECURE_NOTE`).

    ``address`` ``None`` is the local cluster, which always makes its own certificates.
    """
    if address is None:
        if security is not None:
            raise UsageError(
                "--cluster-security names the certificates of a cluster started elsewhere "
                "(give its --cluster tls://HOST:PORT); the local cluster makes its own for "
                "each run"
            )
        if insecure:
            raise UsageError(
                "--insecure-cluster goes with a plain --cluster tcp://HOST:PORT; the local "
                "cluster always uses TLS"
            )
        return ()
    scheme = scheme_of(address)
    if scheme in TLS_SCHEMES:
        if insecure:
            raise UsageError(
                f"--insecure-cluster is for a plain tcp:// address, and {address} is not one"
            )
        if security is None:
            raise UsageError(
                f"the Dask scheduler at {address} speaks TLS: give the cluster's CA and this "
                "coordinator's certificate and key with --cluster-security FILE (or security "
                f"in the tournament file's executor table; {_WHAT_TO_DO})"
            )
        return ()
    if security is not None:
        raise UsageError(
            f"{address} is plain {scheme}, which --cluster-security cannot secure: a scheduler "
            "started with TLS listens on tls://HOST:PORT"
        )
    if not insecure:
        raise UsageError(
            f"{address} is plain {scheme}: anyone who reaches that port (on loopback, every "
            "local user and bot) can run code on every worker and read the bots and deals; "
            "start the cluster with TLS and give --cluster tls://HOST:PORT --cluster-security "
            f"FILE ({_WHAT_TO_DO}), or accept that with --insecure-cluster"
        )
    return (INSECURE_NOTE.format(address=address, scheme=scheme),)


def load_cluster_security(path: Path) -> ClusterSecurity:
    """Read a cluster security file: TOML with ``ca-file`` (the cluster's CA certificate),
    ``cert`` (this coordinator's certificate, signed by that CA) and ``key`` (its private
    key; left out when it is inside ``cert``), PEM files named relative to the file's own
    folder. Each must be a readable file, the key readable by its owner alone (mode 0600 or
    less), and the certificate must load with the key; ``UsageError`` naming the file and
    the key otherwise."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the cluster security file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise UsageError(
            f"{path}: unknown key {unknown[0]!r}; a cluster security file has ca-file, cert "
            f"and key ({_WHAT_TO_DO})"
        )
    files: dict[str, Path] = {}
    for key in _KEYS:
        value = data.get(key)
        if value is None and key != "key":
            raise UsageError(f"{path}: {key} is missing ({_WHAT_TO_DO})")
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise UsageError(f"{path}: {key} must be the path of a PEM file, not {value!r}")
        files[key] = _readable(path, key, path.parent / value)
    secret = files.get("key", files["cert"])
    mode = secret.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(
            f"{path}: the private key {secret} can be read by other users (mode "
            f"{stat.S_IMODE(mode):04o}); chmod 600 {secret}"
        )
    security = ClusterSecurity(files["ca-file"], files["cert"], files.get("key"), path)
    _check_loads(security)
    return security


def _readable(path: Path, key: str, file: Path) -> Path:
    try:
        with file.open("rb"):
            pass
    except OSError as exc:
        raise UsageError(f"{path}: {key}: cannot read {file} ({exc.strerror or exc})") from None
    if not file.is_file():
        raise UsageError(f"{path}: {key}: {file} is not a file")
    return file


def _why(exc: ssl.SSLError) -> str:
    return str(exc.reason or exc.strerror or exc)


def _no_password() -> bytes:
    return b""


def _check_loads(security: ClusterSecurity) -> None:
    """The files as ``ssl`` will use them: the CA as trusted, the certificate with its key."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    source = security.source
    try:
        context.load_verify_locations(cafile=str(security.ca_file))
    except ssl.SSLError as exc:
        raise UsageError(
            f"{source}: ca-file: {security.ca_file} holds no PEM certificate ({_why(exc)})"
        ) from None
    try:
        context.load_cert_chain(
            str(security.cert),
            None if security.key is None else str(security.key),
            password=_no_password,  # an encrypted key fails here: never a prompt
        )
    except ssl.SSLError as exc:
        raise UsageError(
            f"{source}: cert and key do not load together ({_why(exc)}): {security.cert} must "
            "be a PEM certificate and the key its PEM private key, unencrypted"
        ) from None
