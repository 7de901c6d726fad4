"""A local user's attack on a Dask cluster, run by tests/executors/test_cluster_hostile.py as
an unprivileged uid with the system's Python (a copy of Dask it can read on its
``PYTHONPATH``).

argv[1] is a JSON list of plans, each ``scheduler`` (its address), ``members`` (every other listening
address: nannies, workers), ``http`` (HTTP ports to ask for Dask's pages) and ``marker``
(a file the attacker's code writes where it runs: its uid, so root's shows). For each it
tries what an ordinary Dask user would: a ``Client`` over plain TCP and over TLS with a CA
and certificate of its own (``Security.temporary()``), then code on the scheduler and on
every worker; a bare comm to each member both ways; a ``Worker`` of its own joining within
3 s (which would be handed tasks, with their bots and deals); and the HTTP pages. Against a
plain ``tcp://`` scheduler (the tests' control) only the plain attempts are made. It prints a JSON list of
reports, one a plan: per plan, for each attempt ``ran code``/``connected``/``joined``/``HTTP <status>``, or
``refused: <why>``; ``reachable`` lists the ports a TCP connection reached at all, so a
refusal cannot come from a port nobody listens on.
"""

import asyncio
import json
import os
import socket
import sys
import urllib.error
import urllib.request


def write_marker(path):
    """The attacker's payload: where it runs, the file says as whom."""
    with open(path, "w") as handle:
        handle.write(str(os.getuid()))
    return os.getuid()


def refused(exc):
    return f"refused: {type(exc).__name__}: {str(exc)[:200]}"


def host_port(address):
    return address.split("://", 1)[-1]


def reachable(address):
    host, _, port = host_port(address).rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return True
    except OSError:
        return False


def attack_client(address, security, marker):
    from distributed import Client

    try:
        with Client(address, security=security, timeout=5, set_as_default=False) as client:
            client.run_on_scheduler(write_marker, marker)
            client.run(write_marker, marker)
            return "ran code"
    except Exception as exc:  # the report says what stopped it
        return refused(exc)


async def attack_member(address, connection_args):
    from distributed.comm.core import connect

    try:
        comm = await connect(address, timeout=5, **connection_args)
    except Exception as exc:
        return refused(exc)
    await comm.close()
    return "connected"


async def join_as_worker(address, security):
    from distributed import Worker

    try:
        worker = await asyncio.wait_for(
            Worker(address, security=security, nthreads=1, death_timeout=3), 15
        )
    except BaseException as exc:
        return refused(exc)
    await worker.close()
    return "joined"


def http_page(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as page:
            return f"HTTP {page.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except OSError as exc:
        return refused(exc)


def attack(plan, own):
    from distributed import Security

    where = host_port(plan["scheduler"])
    tls = plan["scheduler"].startswith("tls://")  # a plain control gets plain attempts only
    report = {
        "uid": os.getuid(),
        "reachable": [a for a in [plan["scheduler"], *plan["members"]] if reachable(a)],
        "client plain": attack_client(f"tcp://{where}", None, plan["marker"]),
    }
    if tls:
        report["client own-tls"] = attack_client(f"tls://{where}", own, plan["marker"])
    plain = Security()
    for member in plan["members"]:
        there = host_port(member)
        report[f"member plain {member}"] = asyncio.run(
            attack_member(f"tcp://{there}", plain.get_connection_args("client"))
        )
        report[f"member own-tls {member}"] = asyncio.run(
            attack_member(f"tls://{there}", own.get_connection_args("client"))
        )

    async def workers():
        tries = {"worker plain": join_as_worker(f"tcp://{where}", None)}
        if tls:
            tries["worker own-tls"] = join_as_worker(f"tls://{where}", own)
        return dict(zip(tries, await asyncio.gather(*tries.values()), strict=True))

    report.update(asyncio.run(workers()))
    for port in plan["http"]:
        for path in ("/info/main/workers.html", "/metrics"):
            report[f"http {port}{path}"] = http_page(port, path)
    return report


def main():
    import dask
    from distributed import Security

    dask.config.set({"distributed.comm.timeouts.connect": "5s"})
    own = Security.temporary()  # a CA and a certificate of the attacker's own
    print(json.dumps([attack(plan, own) for plan in json.loads(sys.argv[1])]))


if __name__ == "__main__":
    main()
