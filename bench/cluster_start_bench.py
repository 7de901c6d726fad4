"""What TLS costs the local cluster's start: ``python -m bench.cluster_start_bench``.

The local cluster of ``DaskExecutor`` (2 single-threaded worker processes on loopback, its
client connected, every worker registered) is started with TLS and per-run certificates
(``Security.temporary()``, as the referee does) and without (plain TCP, as it was), in
turn (TLS, plain, TLS, ...), so that a drift of the machine's speed touches both alike.
Printed: min, median and max of each, the median ratio, and the time the certificates
alone take to make.
"""

from __future__ import annotations

import statistics
import time

import dask
import distributed

from referee.executors.security import NO_HTTP_ROUTES

WORKERS = 2
ROUNDS = 7


def _start(tls: bool) -> float:
    started = time.perf_counter()
    security = distributed.Security.temporary() if tls else None
    with dask.config.set(NO_HTTP_ROUTES):
        cluster = distributed.LocalCluster(
            n_workers=WORKERS,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            protocol="tls://" if tls else "tcp://",
            security=security,
            dashboard_address="127.0.0.1:0",
            scheduler_kwargs={"dashboard": False},
        )
    client = distributed.Client(cluster, security=security)
    client.wait_for_workers(WORKERS)
    took = time.perf_counter() - started
    client.close()
    cluster.close()
    return took


def _figures(name: str, seconds: list[float]) -> str:
    return (
        f"{name}: min {min(seconds):.3f} s, median {statistics.median(seconds):.3f} s, "
        f"max {max(seconds):.3f} s"
    )


def run() -> dict[str, float]:
    _start(True), _start(False)  # warm the imports and the disk cache
    tls: list[float] = []
    plain: list[float] = []
    for _ in range(ROUNDS):
        tls.append(_start(True))
        plain.append(_start(False))
    certificates = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        distributed.Security.temporary()
        certificates.append(time.perf_counter() - started)
    print(f"local cluster start, {WORKERS} workers, {ROUNDS} rounds each, interleaved")
    print(_figures("  TLS (per-run certificates)", tls))
    print(_figures("  plain TCP", plain))
    ratios = [a / b for a, b in zip(tls, plain, strict=True)]
    print(f"  TLS / plain, pair by pair: median {statistics.median(ratios):.2f}x")
    print(_figures("  Security.temporary() alone", certificates))
    return {
        "tls_s": statistics.median(tls),
        "plain_s": statistics.median(plain),
        "certificates_s": statistics.median(certificates),
    }


if __name__ == "__main__":
    run()
