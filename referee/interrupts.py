"""Stopping cleanly on Ctrl-C (SIGINT) and SIGTERM: every bot stopped, every folder removed.

Python turns SIGINT into ``KeyboardInterrupt``, and asyncio's runner first cancels the main
task, so every ``finally`` of a match runs (containers removed, processes killed) before
``KeyboardInterrupt`` leaves :func:`asyncio.run`. SIGTERM's default is to die on the spot,
which leaves containers running and staging folders behind. Here SIGTERM takes the same
path: :func:`on_sigterm` raises :class:`Terminated` (a ``KeyboardInterrupt``) in synchronous
code, and cancels the main task of :func:`run` when an event loop is running one, which
raises :class:`Terminated` once the task has cleaned up.

Only the main thread receives signals; :func:`handle_sigterm` installs the handler for the
duration of a command. A second SIGTERM while the task cleans up is ignored (SIGKILL is
the way to stop without cleaning up; a later run removes what that leaves).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.machinery
import multiprocessing.util
import os
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

from referee import eventloop

__all__ = [
    "Terminated",
    "cancel_main_task",
    "children_skip_main",
    "handle_sigterm",
    "on_sigterm",
    "run",
    "skip_teardown",
]

_T = TypeVar("_T")


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled like Ctrl-C, with exit code 143 (128 + 15)."""

    exit_code = 128 + signal.SIGTERM


class _Main:
    """The task :func:`run` is running, and whether a stop was asked for.

    Process-wide on purpose, like the signals it serves: a signal handler is the process's
    and gets no argument of ours, so it finds the task here. One command runs one main task
    at a time (:func:`run` sets and clears it).
    """

    task: asyncio.Task[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    stop_requested = False


def cancel_main_task() -> bool:
    """Ask the task of :func:`run` to stop (its cleanup runs); False when none is running.

    Safe in a signal handler: it only marks the stop, cancels the task and wakes its loop.
    """
    _Main.stop_requested = True
    task, loop = _Main.task, _Main.loop
    if task is None or loop is None or task.done():
        return False
    if not task.cancelling():
        task.cancel()
        loop.call_soon_threadsafe(lambda: None)
    return True


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler: cancel the running main task, or raise :class:`Terminated`."""
    if not cancel_main_task():
        raise Terminated()


@contextlib.contextmanager
def handle_sigterm() -> Iterator[None]:
    """Within this block SIGTERM stops the command like Ctrl-C (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Main.stop_requested = False
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _as_main(coro: Coroutine[Any, Any, _T]) -> _T:
    _Main.task, _Main.loop = asyncio.current_task(), asyncio.get_running_loop()
    try:
        if _Main.stop_requested:  # a stop that came just before the task was known
            raise asyncio.CancelledError()
        return await coro
    finally:
        coro.close()  # never started when stopped early; a no-op otherwise
        _Main.task = _Main.loop = None


def run(coro: Coroutine[Any, Any, _T], runner: asyncio.Runner | None = None) -> _T:
    """Run ``coro`` as the main task (on ``runner``, else a fresh :func:`asyncio.run`).

    Ctrl-C behaves as in :func:`asyncio.run`; a SIGTERM (or :func:`cancel_main_task`)
    cancels the task and, once it has finished cleaning up, raises :class:`Terminated`.
    """
    if _Main.stop_requested:
        coro.close()
        raise Terminated()
    try:
        if runner is not None:
            result = runner.run(_as_main(coro))
        else:
            with asyncio.Runner(loop_factory=eventloop.new_event_loop) as fresh:
                result = fresh.run(_as_main(coro))
    except asyncio.CancelledError:
        if _Main.stop_requested:
            raise Terminated() from None
        raise
    if _Main.stop_requested:  # the task swallowed the cancellation; stop all the same
        raise Terminated()
    return result


_LAST = -1000
"""Below the priority of every finalizer multiprocessing registers (they run first)."""


def skip_teardown() -> None:
    """In a process started by :mod:`multiprocessing`: once its finalizers have run, exit
    at once instead of taking the interpreter apart.

    A spawned process ends with ``sys.exit``, and the interpreter then dismantles every
    module the referee imported (a few tens of milliseconds: docs/performance.md), time its
    parent waits for, since a pool's shutdown joins its processes (a tournament's workers
    at the end of every run, publishing's ranking process). Registered as the last
    finalizer, this runs after every cleanup the process registered (stopping bots, closing
    queues); then only the standard streams are left to flush. For processes that start no
    thread that is not a daemon: none would be waited for. A process whose target raised
    (``sys.exit`` included) ends the usual way, its traceback printed and its exit status
    kept: multiprocessing runs the finalizers while that exception is on its way out.
    """
    multiprocessing.util.Finalize(None, _exit_now, exitpriority=_LAST)


def _exit_now() -> None:
    if sys.exc_info()[0] is not None:
        return  # the target raised: its status and traceback are multiprocessing's to give
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def children_skip_main() -> None:
    """Processes spawned from now on do not run this process's main script again.

    To spawn a process, :mod:`multiprocessing` runs the main script again in it (as
    ``__mp_main__``), so that what the script defines can be unpickled there. The
    ``referee`` command's script defines nothing a child needs, and running it imports the
    whole command line (click, rich, every command; docs/performance.md says how long), in
    each tournament worker, publishing's ranking process and the others, all of it before
    their first task.
    A main module that is a package's ``__main__`` is never run again (multiprocessing
    skips those, as for ``python -m referee``): the script is named as one. For the console
    script's entry point only (:func:`referee.cli.run`), never for a caller's own script.
    """
    main = sys.modules.get("__main__")
    if main is not None and getattr(main, "__spec__", None) is None:
        main.__spec__ = importlib.machinery.ModuleSpec("referee.__main__", None)
