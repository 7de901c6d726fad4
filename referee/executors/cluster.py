"""The cluster executor: the same tournament on a Dask distributed cluster.

Dask does the distributing: its scheduler and workers are started with Dask's own commands
(``dask scheduler``, ``dask worker``; or ``dask-ssh``, Kubernetes, a job queue), and each
match is one Dask task (:func:`play_on_worker`). Nothing here schedules, queues or sends
bytes by itself. What the referee adds, in order of a run:

1. **Same code on both sides** (:meth:`DaskExecutor.prepare`): every connected worker
   reports its referee version, Python version and a digest of the referee's own source
   files (:func:`worker_facts`); any difference refuses the run with the list.
2. **The sandbox where the bots run**: a Docker tournament's tasks ask for the ``docker``
   resource (workers offering it are started with ``--resources docker=1``), refused at
   once when no connected worker offers it, since such a task would wait forever. Each
   worker probes the backend once (:class:`RefereePlugin`); a worker whose probe fails is
   named once and gets no task of that backend.
3. **Bots as bundles** (:mod:`referee.executors.bundles`): each staged bot is packed once,
   named by its SHA-256 and scattered to the cluster under that name; a worker fetches the
   bytes of a bundle its shelf does not hold, checks them, unpacks them once and keeps
   them for every later match, this run's and the next's. A changed bot is a new name.
4. **The coordinator alone writes**: results come back as they complete
   (:class:`distributed.as_completed`), each with its match log; the coordinator writes
   the log and reports the result, which the coordinator of the run commits at once; the
   future is then released (a result held by a worker that dies is not computed again).
5. **A lost worker loses nothing, and no cards are dealt twice**: Dask runs the tasks of a
   lost worker again elsewhere, but a match that started was seen by its bots, so an
   attempt's first start claims it (a :class:`distributed.Event` named by the task, set) and a
   second start refuses to play: the attempt is a failure on our side, and the next
   attempt deals fresh cards (:meth:`MatchTask.attempt`), up to ``max_attempts``. A match
   whose worker keeps dying is recorded as failed and the run goes on. A bundle whose only
   copy died with the worker fails the fetches waiting for it at once (:func:`_fetch`), and
   is scattered again before the retry. The bots of a lost worker die with it
   (:mod:`referee.sandbox.process`); what a start cut short leaves, the next referee of that
   machine sweeps (:func:`referee.sandbox.cgroups.sweep_leftovers`), as a restarted worker
   does at its first match.
6. **Stopping**: Ctrl-C or SIGTERM cancels the futures, then every worker stops the match
   it plays (its seating kills the bots and removes their containers) and the bots it
   keeps. A lost scheduler ends the run with one line; running it again resumes.

Before any of this, **nobody else reaches the cluster** (:mod:`referee.executors.security`):
the local cluster gets TLS certificates of its own for each run, a cluster the organiser runs
is used over TLS with the organiser's certificates, and a plain address is refused unless
the organiser accepts it (``insecure``).

On each worker the :class:`RefereePlugin` (a Dask worker plugin, registered by the
coordinator) owns what a worker keeps: the referee :class:`~referee.executors.worker.Worker`
(event loop, sandboxes, kept bots), the bundle shelf and the sandbox probes. A worker plays
one match at a time per thread; start workers with ``--nthreads 1``.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import os
import pickle
import platform
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask
import distributed
from distributed import Client, Future, Variable
from distributed.diagnostics.plugin import WorkerPlugin

from referee.errors import InfrastructureError, UsageError
from referee.executors.base import (
    DEFAULT_ATTEMPTS,
    AttemptEvent,
    Attempts,
    Executor,
    MatchTask,
    SandboxPlan,
    TaskOutcome,
    Upcoming,
)
from referee.executors.bundles import Bundle, BundleShelf, pack
from referee.executors.security import (
    DASK_PACKAGES,
    NO_HTTP_ROUTES,
    TLS_SCHEMES,
    ClusterSecurity,
    check_cluster,
    scheme_of,
)
from referee.executors.worker import Worker
from referee.installation import install_hint
from referee.sandbox import make_staging_root, remove_staging_root
from referee.sandbox.budget import protect_referee
from referee.stderrlog import stderr_path

__all__ = [
    "PLUGIN",
    "ClusterTask",
    "DaskExecutor",
    "RefereePlugin",
    "code_digest",
    "play_on_worker",
    "worker_facts",
]

PLUGIN = "referee"
"""The name the referee's worker plugin is registered under on every worker."""

DOCKER_RESOURCE = "docker"
"""The Dask resource a worker that can run Docker bots offers (``--resources docker=1``)."""

_STOP_WAIT_S = 60.0
_STOPPED_RUNS = 64
_FETCH_TIMEOUT_S = 120.0
_FETCH_SLICE_S = 0.25
_GONE = frozenset({"lost", "cancelled", "error"})


# --------------------------------------------------------------------------- the worker side


@dataclass(frozen=True)
class ClusterTask:
    """What travels to a worker for one attempt: the task, the bundle of each seat's bot
    (by name), and the claim that this attempt starts only once."""

    task: MatchTask
    bundles: tuple[str, ...]
    claim: str
    next_bundles: tuple[str, ...] = ()
    """The bundles of ``task.next_up``'s bots (the match likely to come next), by seat."""


@dataclass(frozen=True)
class ClusterOutcome:
    """What comes back: the worker's outcome, the match log's bytes, and what it fetched."""

    outcome: TaskOutcome
    log: bytes | None = None
    stderr: bytes | None = None
    """The bots' stderr kept beside the log (:mod:`referee.stderrlog`)."""
    fetched_bytes: int = 0
    worker: str = ""


def code_digest() -> str:
    """SHA-256 over the referee package's own source files (path and bytes, sorted)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix().encode()
        digest.update(b"%d:%s" % (len(relative), relative))
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _facts_here() -> dict[str, str]:
    import referee

    return {
        "referee": str(referee.__version__),
        "python": platform.python_version(),
        "code": code_digest(),
    }


def _probe(backend: str, images: tuple[str, ...]) -> tuple[str | None, str]:
    """``(backend name, description)`` of the backend here, or ``(None, why not)``."""
    from referee.sandbox import get_sandbox

    try:
        if backend in ("docker", "auto"):
            from referee.sandbox.docker import docker_status

            usable, reason = docker_status()
            if not usable:
                if backend == "docker":
                    return None, reason
                backend = "process"
            else:
                backend = "docker"
        sandbox = get_sandbox(backend, images=images)
        return sandbox.name, sandbox.describe()
    except (UsageError, InfrastructureError, ImportError) as exc:
        return None, str(exc)


class RefereePlugin(WorkerPlugin):
    """What a Dask worker keeps for the referee (see the module docstring).

    Dask calls :meth:`setup` when the plugin is registered (and on workers that join
    later), :meth:`teardown` when the worker closes. ``idle_bots`` caps the
    idle bot processes the worker keeps between matches (``None``: a table's worth).
    """

    idempotent = True
    """Registering it again (another run, another coordinator) keeps the worker's state."""

    def __init__(self, idle_bots: int | None = None) -> None:
        self.idle_bots = idle_bots
        self.address = ""
        self._worker: Worker | None = None
        self._shelf: BundleShelf | None = None
        self._staging: Path | None = None
        self._probes: dict[tuple[str, tuple[str, ...]], tuple[str | None, str]] = {}
        self._playing = threading.Lock()
        self._state = threading.Lock()
        self._current: asyncio.Task[Any] | None = None
        self._claim = ""
        self._stopped: collections.deque[str] = collections.deque(maxlen=_STOPPED_RUNS)
        self._loop: asyncio.AbstractEventLoop | None = None

    def __getstate__(self) -> dict[str, Any]:
        """What travels to the workers: the settings, never a worker's state."""
        return {"idle_bots": self.idle_bots}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["idle_bots"])  # type: ignore[misc]

    # -- Dask's hooks ----------------------------------------------------------------------

    def setup(self, worker: Any) -> None:
        protect_referee()
        self.address = str(worker.address)
        self._staging = make_staging_root()
        self._shelf = BundleShelf(self._staging / "bundles")
        self._worker = Worker(reuse=True, idle_cap=self.idle_bots)

    def teardown(self, worker: Any) -> None:
        """Stop the bots this worker keeps (from a thread of its own: Dask's loop runs here)."""
        closing = threading.Thread(target=self.close, name="referee-teardown")
        closing.start()
        closing.join(_STOP_WAIT_S)

    # -- what tasks and the coordinator call ----------------------------------------------

    def facts(self, backend: str, images: tuple[str, ...]) -> dict[str, Any]:
        """This worker's versions and whether ``backend`` works here (probed once)."""
        if (backend, images) not in self._probes:
            self._probes[backend, images] = _probe(backend, images)
        name, description = self._probes[backend, images]
        return {**_facts_here(), "sandbox": name, "sandbox_description": description}

    def play(
        self,
        cluster_task: ClusterTask,
        fetch: Callable[[str], bytes],
        claim: Callable[[], Awaitable[None]] | None = None,
    ) -> ClusterOutcome:
        """Play one attempt: its bots from the shelf, its log in a folder of its own.

        An attempt of a run that was stopped (:meth:`stop`) is not played: Dask cannot take
        back a task a worker already holds, and its bots would be seated after the stop.
        """
        if _run_of(cluster_task.claim) in self._stopped:
            return ClusterOutcome(TaskOutcome("infrastructure", error="the run was stopped"))
        with self._playing:
            assert self._worker is not None and self._shelf is not None
            before = sum(self._fetched_sizes().values())
            task = cluster_task.task
            with self._state:
                self._claim = cluster_task.claim
            try:
                bots = tuple(
                    self._shelf.staged(bot, bundle, fetch)
                    for bot, bundle in zip(task.bots, cluster_task.bundles, strict=True)
                )
            except InfrastructureError as exc:
                return ClusterOutcome(TaskOutcome("infrastructure", error=str(exc)))
            next_up = self._staged_next(cluster_task, fetch)
            with tempfile.TemporaryDirectory(prefix="referee-match-") as folder:
                log_path = Path(folder) / "match.jsonl"
                here = dataclasses.replace(task, bots=bots, log_path=str(log_path), next_up=next_up)
                try:
                    outcome = self._worker.play(here, on_start=self._started, before_deal=claim)
                finally:
                    with self._state:
                        self._current = self._loop = None
                    if _run_of(cluster_task.claim) in self._stopped:
                        self._worker.close()  # stopped meanwhile: keep none of its bots
                log = stderr = None
                if outcome.status == "done":
                    log = log_path.read_bytes()
                    with contextlib.suppress(FileNotFoundError):
                        stderr = stderr_path(log_path).read_bytes()
            fetched = sum(self._fetched_sizes().values()) - before
            return ClusterOutcome(outcome, log, stderr, fetched, self.address)

    def _staged_next(
        self, cluster_task: ClusterTask, fetch: Callable[[str], bytes]
    ) -> Upcoming | None:
        """The next match's bots from this worker's shelf (fetched now if new), or no
        guess when they cannot be had: a guess is never worth failing a match for."""
        upcoming = cluster_task.task.next_up
        if upcoming is None or self._shelf is None:
            return None
        try:
            bots = tuple(
                self._shelf.staged(bot, bundle, fetch)
                for bot, bundle in zip(upcoming.bots, cluster_task.next_bundles, strict=True)
            )
        except (InfrastructureError, ValueError):
            return None
        return Upcoming(bots, upcoming.deal_id)

    def held_bundles(self) -> list[str]:
        return self._shelf.held() if self._shelf is not None else []

    def fetches(self) -> dict[str, int]:
        """How often each bundle was fetched by this worker (once, unless it changed)."""
        return dict(self._shelf.fetched) if self._shelf is not None else {}

    def _fetched_sizes(self) -> dict[str, int]:
        return self._shelf.fetched_bytes if self._shelf is not None else {}

    def _started(self, task: asyncio.Task[Any]) -> None:
        with self._state:
            self._current, self._loop = task, asyncio.get_running_loop()

    def stop(self, run: str | None = None) -> None:
        """Cancel the match being played if it is ``run``'s (any, without one): its seating
        stops its bots; wait for it, then stop the bots kept for reuse. Thread-safe: called
        by a coordinator that stops (Ctrl-C) and when the worker closes."""
        if run is not None:
            self._stopped.append(run)
        with self._state:
            task, loop, claim = self._current, self._loop, self._claim
        ours = run is None or _run_of(claim) == run
        if ours and task is not None and loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
        if self._playing.acquire(timeout=_STOP_WAIT_S):
            try:
                if self._worker is not None:
                    self._worker.close()
            finally:
                self._playing.release()

    def release_idle(self) -> None:
        """Stop the bots kept for reuse, unless a match is being played (a run is over)."""
        if self._playing.acquire(blocking=False):
            try:
                if self._worker is not None:
                    self._worker.close()
            finally:
                self._playing.release()

    def close(self) -> None:
        self.stop()
        if self._staging is not None:
            remove_staging_root(self._staging)
            self._staging = None


def _run_of(claim: str) -> str:
    """The run an attempt's claim (``referee-<run>-<match key>-a<n>``) belongs to."""
    return claim.split("-", 2)[1] if claim.count("-") >= 2 else ""


def _plugin() -> RefereePlugin:
    plugin = distributed.get_worker().plugins.get(PLUGIN)
    if not isinstance(plugin, RefereePlugin):
        raise InfrastructureError("this Dask worker has no referee plugin (not a referee run)")
    return plugin


def _fetch(key: str) -> bytes:
    """A bundle's bytes from the cluster: the coordinator scattered them and named their
    future in a :class:`distributed.Variable` of the bundle's key.

    Bytes that were only on a worker that died cannot come back (scattered data has nothing
    to compute it from): Dask marks the future ``lost`` at once, but ``result`` would still
    wait its whole timeout. So the wait is cut in slices and ends as soon as the future is
    lost; the attempt fails on our side, and the coordinator scatters the bundle again
    before it retries (:meth:`DaskExecutor._ensure`).
    """
    deadline = time.monotonic() + _FETCH_TIMEOUT_S
    future: Future[bytes] | None = None
    try:
        future = Variable(key, client=distributed.get_client()).get(timeout=_FETCH_TIMEOUT_S)
        while True:
            try:
                data = future.result(timeout=_FETCH_SLICE_S)
                break
            except TimeoutError:
                if future.status in _GONE or time.monotonic() >= deadline:
                    raise
    except Exception as exc:  # lost with a worker, never scattered: the attempt is retried
        if future is not None and future.status in _GONE:
            raise InfrastructureError(
                f"cannot fetch {key} from the cluster: {future.status} (its only copy was "
                "on a worker that is gone; it is scattered again for the retry)"
            ) from None
        raise InfrastructureError(f"cannot fetch {key} from the cluster ({exc!r})") from None
    if not isinstance(data, bytes):
        raise InfrastructureError(f"{key} is not a bundle")
    return data


def play_on_worker(cluster_task: ClusterTask) -> ClusterOutcome:
    """The Dask task of one attempt: play it with this worker's plugin, once.

    An attempt's first start claims it on the scheduler (module docstring). The question
    "claimed already?" is sent at once and answered while the bots are seated; the answer
    is awaited before any card is dealt, and the claim is then set without waiting (it is
    on its way before the deal, so a worker that dies afterwards has sent it).
    """
    client = distributed.get_client()
    asked = _ask_scheduler(client, "event_is_set", cluster_task.claim)

    async def claim() -> None:
        try:
            claimed = await asyncio.wrap_future(asked)
        except Exception as exc:  # the scheduler did not answer: our side, retried
            raise InfrastructureError(f"the match could not be claimed: {exc!r}") from None
        if claimed:
            raise InfrastructureError(
                "the worker playing this match was lost; it is played again on fresh cards"
            )
        _call_scheduler(client, "event_set", cluster_task.claim)

    return _plugin().play(cluster_task, _fetch, claim)


def worker_facts(backend: str, images: tuple[str, ...], dask_worker: Any = None) -> dict[str, Any]:
    """Run on every worker by :meth:`DaskExecutor.prepare` (``Client.run``)."""
    plugin = dask_worker.plugins.get(PLUGIN) if dask_worker is not None else None
    if isinstance(plugin, RefereePlugin):
        return plugin.facts(backend, images)
    return {**_facts_here(), "sandbox": None, "sandbox_description": "no referee plugin"}


async def _stop_worker(run: str, dask_worker: Any = None) -> None:
    plugin = dask_worker.plugins.get(PLUGIN) if dask_worker is not None else None
    if isinstance(plugin, RefereePlugin):
        await asyncio.to_thread(plugin.stop, run)


async def _release_worker(dask_worker: Any = None) -> None:
    plugin = dask_worker.plugins.get(PLUGIN) if dask_worker is not None else None
    if isinstance(plugin, RefereePlugin):
        await asyncio.to_thread(plugin.release_idle)


def _worker_fetches(dask_worker: Any = None) -> dict[str, int]:
    plugin = dask_worker.plugins.get(PLUGIN) if dask_worker is not None else None
    return plugin.fetches() if isinstance(plugin, RefereePlugin) else {}


# --------------------------------------------------------------------------- the coordinator side


@dataclass
class ClusterStats:
    """What a run sent and got back, for the progress line and the benchmark."""

    bundles_scattered: int = 0
    bundle_bytes_scattered: int = 0
    bundle_bytes_fetched: int = 0
    task_bytes: int = 0
    """The size of a typical task (the first one's, pickled)."""
    result_bytes: int = 0
    results: int = 0
    coordinator_seconds: float = 0.0
    """The coordinator's own time for the results: taking each off the cluster, writing its
    log, storing it (in the coordinator's callback) and releasing it."""


class DaskExecutor(Executor):
    """Runs match tasks on a Dask distributed cluster; see the module docstring.

    ``cluster`` is the scheduler's address (``tls://host:8786``, reached with ``security``;
    a plain ``tcp://`` one only with ``insecure``: :func:`check_cluster`, whose notes are in
    :attr:`notes`); without it a ``LocalCluster`` of ``workers`` single-threaded worker
    processes is started here, on loopback with TLS certificates of its own (for trying the
    executor; :attr:`started_here` says so). A context manager: the client (and a local
    cluster) are kept from one ``run`` to the next until the block ends.
    """

    def __init__(
        self,
        cluster: str | None = None,
        *,
        security: ClusterSecurity | None = None,
        insecure: bool = False,
        workers: int | None = None,
        max_attempts: int = DEFAULT_ATTEMPTS,
        idle_bots: int | None = None,
        connect_timeout_s: float = 30.0,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if workers is not None and workers < 1:
            raise UsageError(f"--workers must be at least 1, not {workers}")
        self.notes = check_cluster(cluster, security, insecure)
        """What the run should say once before it connects (a plain address's exposure)."""
        self.address = cluster
        self.cluster_security = security
        self.local_workers = workers or (os.cpu_count() or 1)
        self.max_attempts = max_attempts
        self.idle_bots = idle_bots
        self.connect_timeout_s = connect_timeout_s
        self.started_here = cluster is None
        self.stats = ClusterStats()
        self._client: Client | None = None
        self._local: Any = None
        self._security: distributed.Security | None = None
        self._entered = 0
        self._resources: dict[str, float] = {}
        self._eligible: list[str] | None = None
        self._scattered: dict[str, Future[bytes]] = {}
        self._bundles: dict[str, Bundle] = {}
        self._run_token = os.urandom(6).hex()
        self._ran = False

    # -- the connection --------------------------------------------------------------------

    def __enter__(self) -> DaskExecutor:
        self._entered += 1
        self.client()
        return self

    def __exit__(self, *exc: object) -> None:
        self._entered -= 1
        if self._entered == 0:
            self.close()

    def client(self) -> Client:
        """The connected client (connecting, or starting the local cluster, on first use)."""
        if self._client is None:
            if self.address is None:
                self._client = self._start_local()
            else:
                self._security = _client_security(self.cluster_security)
                try:
                    self._client = distributed.Client(
                        self.address,
                        timeout=self.connect_timeout_s,
                        set_as_default=False,
                        security=self._security,
                    )
                except (OSError, TimeoutError) as exc:
                    raise UsageError(self._unreachable(exc)) from None
            self._client.register_plugin(RefereePlugin(self.idle_bots), name=PLUGIN)
        return self._client

    def _start_local(self) -> Client:
        """The local cluster: its own CA and certificate (made now, in memory), TLS on
        every listener, no HTTP route (see :mod:`referee.executors.security`)."""
        try:
            self._security = distributed.Security.temporary()
        except ImportError as exc:
            raise UsageError(
                f"the local Dask cluster's TLS certificates need the cryptography package "
                f"({exc}); {install_hint(DASK_PACKAGES, extra='dask')}"
            ) from None
        with dask.config.set(NO_HTTP_ROUTES):  # read as each member starts
            self._local = distributed.LocalCluster(
                n_workers=self.local_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                protocol="tls://",
                security=self._security,
                dashboard_address="127.0.0.1:0",
                scheduler_kwargs={"dashboard": False},
                resources=_local_resources(),
            )
        return distributed.Client(self._local, security=self._security)

    def _unreachable(self, exc: BaseException) -> str:
        what = f"cannot reach the Dask scheduler at {self.address}: {exc}"
        if self.cluster_security is not None:
            return (
                f"{what}; check that it runs with TLS and that the ca-file and cert of "
                f"{self.cluster_security.source} are the cluster's (a certificate another CA "
                "signed is refused)"
            )
        return f"{what}; start it with 'dask scheduler' and give its address to --cluster"

    @property
    def security(self) -> distributed.Security | None:
        """The TLS settings this run's client uses (the local cluster's own, once started):
        what another client of this run's cluster needs to connect."""
        self.client()
        return self._security

    def join_command(self) -> str:
        """The ``dask worker`` command that adds a worker to this cluster."""
        where = self.address or "SCHEDULER"
        if scheme_of(where) in TLS_SCHEMES:
            return (
                f"dask worker {where} --nthreads 1 --tls-ca-file ca.pem --tls-cert member.pem "
                "--tls-key member.key"
            )
        return f"dask worker {where} --nthreads 1"

    @property
    def scheduler_address(self) -> str:
        """The scheduler's address (the local cluster's, when started here)."""
        info: dict[str, Any] = self.client().scheduler_info()
        return str(info.get("address", self.address or "?"))

    @property
    def dashboard(self) -> str | None:
        """The scheduler's dashboard address, when it has one (the local cluster has none)."""
        client = self.client()
        if self._local is not None:
            return None
        link = client.dashboard_link
        return str(link) if link else None

    def connected(self) -> int:
        """How many workers the scheduler has now."""
        if self._client is None:
            return 0
        return len(self._client.scheduler_info().get("workers", {}))

    def close(self) -> None:
        client, self._client = self._client, None
        scattered = list(self._scattered.items())
        self._scattered.clear()
        if client is not None:
            if self._ran and client.status == "running":
                with contextlib.suppress(Exception):  # the bots kept for this run's matches
                    client.run(_release_worker, on_error="ignore")
            for key, future in scattered:
                with contextlib.suppress(Exception):
                    Variable(key, client=client).delete()
                    future.release()
            with contextlib.suppress(Exception):
                client.close()
        local, self._local = self._local, None
        if local is not None:
            with contextlib.suppress(Exception):
                local.close()

    # -- before a run ----------------------------------------------------------------------

    def prepare(self, backend: str, images: tuple[str, ...]) -> SandboxPlan:
        """Check every worker runs this referee, find the workers that can run ``backend``;
        ``UsageError`` (with what to do) when none can or versions differ."""
        client = self.client()
        connected = _wait_for_workers(client, self.connect_timeout_s, self.join_command())
        workers = sorted(connected)
        offering = _offering(connected, DOCKER_RESOURCE)
        if backend == "docker" or (backend == "auto" and offering):
            backend = "docker"
            if not offering:
                raise UsageError(
                    "the tournament runs its bots in Docker, but no worker of the cluster "
                    f"offers the '{DOCKER_RESOURCE}' resource; on machines with Docker and the "
                    f"bot image, start workers with: {self.join_command()} --resources "
                    f"{DOCKER_RESOURCE}=1"
                )
            self._resources = {DOCKER_RESOURCE: 1}
            workers = offering
        elif backend == "auto":
            backend = "process"
        facts = client.run(worker_facts, backend, images, workers=workers, on_error="return")
        _check_versions(facts)
        usable = {w: f for w, f in facts.items() if isinstance(f, dict) and f.get("sandbox")}
        refused = {w: f for w, f in facts.items() if w not in usable}
        notes = tuple(
            f"worker {address} takes no {backend} matches: "
            + (f.get("sandbox_description", "?") if isinstance(f, dict) else str(f))
            for address, f in sorted(refused.items())
        )
        if not usable:
            raise UsageError(
                f"no worker of the cluster can run the {backend} sandbox: " + "; ".join(notes)
            )
        self._eligible = sorted(usable) if refused else None
        description = next(iter(usable.values()))["sandbox_description"]
        return SandboxPlan(backend, f"{description} (on {len(usable)} Dask workers)", notes)

    # -- a run -----------------------------------------------------------------------------

    def run(self, tasks: Sequence[MatchTask], on_event: Callable[[AttemptEvent], None]) -> None:
        """Play every task on the cluster; return when each has finished or failed for good."""
        client = self.client()
        self._ran = True
        bundles = self._upload(client, tasks)
        attempts = Attempts(self.max_attempts, on_event)
        in_flight: dict[Future[ClusterOutcome], tuple[MatchTask, str]] = {}
        completed = distributed.as_completed(
            loop=client.loop, with_results=True, raise_errors=False
        )

        # Each worker likely plays every `ahead`-th task: it starts those bots meanwhile.
        ahead = max(1, len(self._eligible) if self._eligible is not None else self.connected())
        following = {
            task.spec.key: tasks[i + ahead] for i, task in enumerate(tasks[: len(tasks) - ahead])
        }

        def payload(task: MatchTask, after: MatchTask | None = None) -> ClusterTask:
            number = attempts.next(task)
            key = f"referee-{self._run_token}-{task.spec.key}-a{number}"
            names = tuple(bundles[bot.sha256] for bot in task.bots)
            for name in names:
                # A retry may follow a worker lost with a bundle's only copy: ask.
                self._ensure(client, name, ask=number > 1)
            next_names = () if after is None else tuple(bundles[b.sha256] for b in after.bots)
            return ClusterTask(task.attempt(number).followed_by(after), names, key, next_names)

        def submit(batch: list[tuple[MatchTask, ClusterTask]], priority: int) -> None:
            futures = client.map(
                play_on_worker,
                [work for _, work in batch],
                key=[work.claim for _, work in batch],
                pure=False,
                priority=priority,
                resources=self._resources or None,
                workers=self._eligible,
            )
            for (task, work), future in zip(batch, futures, strict=True):
                attempts.started(task, attempts.next(task))
                in_flight[future] = (task, work.claim)
            completed.update(futures)

        try:
            first = [(task, payload(task, following.get(task.spec.key))) for task in tasks]
            if first:
                self.stats.task_bytes = len(pickle.dumps(first[0][1]))  # a typical task
                submit(first, priority=0)
            for future, answer in completed:
                started = time.perf_counter()
                task, key = in_flight.pop(future)
                outcome = self._collect(client, future, answer, task)
                _call_scheduler(client, "event_clear", key)  # the claim is no longer needed
                again = attempts.settle(task, outcome)  # the coordinator stores it here
                self.stats.coordinator_seconds += time.perf_counter() - started
                if again:
                    submit([(task, payload(task))], priority=1)  # retries go first
        except BaseException:
            self._stop(client, in_flight)
            raise

    def _upload(self, client: Client, tasks: Sequence[MatchTask]) -> dict[str, str]:
        """Pack each bot once; its bytes go to the cluster when it lacks them: bot -> name."""
        names: dict[str, str] = {}
        for bot in {bot.sha256: bot for task in tasks for bot in task.bots}.values():
            bundle = pack(bot)
            names[bot.sha256] = bundle.name
            self._bundles[bundle.name] = bundle
            self._ensure(client, bundle.name)
        return names

    def _ensure(self, client: Client, name: str, *, ask: bool = False) -> None:
        """Scatter a bundle unless its bytes are on the cluster (lost with a worker: again).

        The future's status says it without a word to the scheduler, but only once the
        scheduler's news of a lost worker has come; with ``ask`` (a retry, which may follow
        that loss closely) the scheduler is asked which workers hold the bytes.
        """
        bundle = self._bundles[name]
        held = self._scattered.get(bundle.key)
        if (
            held is not None
            and held.status == "finished"
            and (not ask or client.who_has([held]).get(bundle.key))
        ):
            return
        future = client.scatter({bundle.key: bundle.data}, hash=False)[bundle.key]
        Variable(bundle.key, client=client).set(future)
        self._scattered[bundle.key] = future
        self.stats.bundles_scattered += 1
        self.stats.bundle_bytes_scattered += len(bundle.data)

    def _collect(
        self, client: Client, future: Future[ClusterOutcome], answer: Any, task: MatchTask
    ) -> TaskOutcome:
        """The attempt's outcome (``answer``: what :class:`distributed.as_completed` fetched
        for ``future``); its log written here, where the store is."""
        status = future.status
        future.release()
        if status == "error":
            error = answer[1] if isinstance(answer, tuple) and len(answer) == 3 else answer
            if isinstance(error, distributed.KilledWorker):
                return TaskOutcome(
                    "infrastructure",
                    error="the match's worker died again and again (Dask gave up on it)",
                )
            return TaskOutcome("bug", error=f"the cluster task failed: {error!r}")
        if not isinstance(answer, ClusterOutcome):  # cancelled: by us, or the scheduler is gone
            if client.status != "running" or _scheduler_lost(client):
                raise InfrastructureError(
                    f"lost the Dask scheduler at {self.address or 'the local cluster'}; run "
                    "the same command again to resume"
                )
            return TaskOutcome("infrastructure", error=f"cancelled on the cluster ({answer!r})")
        outcome = answer.outcome
        self.stats.bundle_bytes_fetched += answer.fetched_bytes
        self.stats.result_bytes += len(answer.log or b"") + len(answer.stderr or b"")
        if outcome.status == "done" and answer.log is not None and outcome.result is not None:
            if answer.stderr is not None:
                _write_log(stderr_path(task.log_path), answer.stderr)
            _write_log(Path(task.log_path), answer.log)
            outcome = dataclasses.replace(outcome, result={**outcome.result, "log": task.log_path})
        self.stats.results += 1
        return outcome

    def _stop(self, client: Client, in_flight: dict[Any, tuple[MatchTask, str]]) -> None:
        """Cancel what is queued, stop what plays on every worker and the bots they keep."""
        if client.status != "running":
            return
        with contextlib.suppress(Exception):
            client.cancel(list(in_flight), force=True)
        with contextlib.suppress(Exception):
            client.run(_stop_worker, self._run_token, on_error="ignore")
        for _, key in in_flight.values():
            _call_scheduler(client, "event_clear", key)

    def fetches(self) -> dict[str, dict[str, int]]:
        """Per worker, how often each bundle was fetched there (see :class:`BundleShelf`)."""
        answers = self.client().run(_worker_fetches)
        return {address: dict(found) for address, found in answers.items()}


def _client_security(files: ClusterSecurity | None) -> distributed.Security | None:
    """A client's TLS settings with the organiser's files (encryption required); ``None``,
    Dask's own configuration, for a plain address the organiser accepted."""
    if files is None:
        return None
    return distributed.Security(
        require_encryption=True,
        tls_ca_file=str(files.ca_file),
        tls_client_cert=str(files.cert),
        tls_client_key=None if files.key is None else str(files.key),
    )


def _local_resources() -> dict[str, float]:
    """A local cluster offers Docker when it is usable here."""
    try:
        from referee.sandbox.docker import docker_status
    except ImportError:
        return {}
    usable, _ = docker_status()
    return {DOCKER_RESOURCE: 1} if usable else {}


def _wait_for_workers(client: Client, timeout_s: float, join: str) -> dict[str, dict[str, Any]]:
    """The scheduler's workers (waiting a while for the first to connect)."""
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:
        raise UsageError(
            f"no Dask worker connected to the scheduler within {timeout_s:g} s; start some with: "
            f"{join}"
        ) from None
    workers: dict[str, dict[str, Any]] = client.scheduler_info().get("workers", {})
    return workers


def _offering(workers: dict[str, dict[str, Any]], resource: str) -> list[str]:
    return sorted(a for a, w in workers.items() if w.get("resources", {}).get(resource, 0) > 0)


def _check_versions(facts: dict[str, Any]) -> None:
    here = _facts_here()
    wrong = []
    for address, found in sorted(facts.items()):
        if not isinstance(found, dict):
            wrong.append(f"{address}: cannot run the referee ({found})")
            continue
        differs = [
            f"{what} {found.get(what)} (here {here[what]})"
            for what in ("referee", "python")
            if found.get(what) != here[what]
        ]
        if not differs and found.get("code") != here["code"]:
            differs.append("the same version number with other source files")
        if differs:
            wrong.append(f"{address}: " + ", ".join(differs))
    if wrong:
        raise UsageError(
            "workers run another referee than this one; install the same wheel on every "
            "machine and restart its workers: " + "; ".join(wrong)
        )


def _scheduler_lost(client: Client) -> bool:
    with contextlib.suppress(Exception):
        client.scheduler_info()
        return client.scheduler_comm is None or client.status != "running"
    return True


def _ask_scheduler(client: Client, handler: str, name: str) -> concurrent.futures.Future[Any]:
    """Send ``handler(name=...)`` to the scheduler on the client's loop; the answer comes in
    the returned future."""
    answer: concurrent.futures.Future[Any] = concurrent.futures.Future()

    async def call() -> None:
        try:
            scheduler = client.scheduler
            if scheduler is None:
                raise InfrastructureError("the Dask client has no scheduler")
            answer.set_result(await getattr(scheduler, handler)(name=name))
        except Exception as exc:  # handed to whoever waits for the answer
            answer.set_exception(exc)

    loop = client.loop
    if loop is None:
        raise InfrastructureError("the Dask client has no event loop")
    loop.add_callback(call)
    return answer


def _call_scheduler(client: Client, handler: str, name: str) -> None:
    """:func:`_ask_scheduler` without waiting for the answer (an event's set or clear)."""
    with contextlib.suppress(InfrastructureError):
        _ask_scheduler(client, handler, name).add_done_callback(_ignore)


def _ignore(answer: concurrent.futures.Future[Any]) -> None:
    """What a call sent without waiting answered: nothing to do with it (failures too)."""
    if not answer.cancelled():
        answer.exception()


def _write_log(path: Path, data: bytes) -> None:
    """Write a match log the way workers do here: complete, or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(data)
    os.replace(partial, path)
