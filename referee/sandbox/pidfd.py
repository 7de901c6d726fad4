"""Killing a process by pid without racing pid reuse."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

__all__ = ["kill_if"]


def kill_if(pid: int, still_ours: Callable[[int], bool]) -> None:
    """SIGKILL ``pid`` if ``still_ours(pid)`` holds, checked on the very process signalled.

    A pidfd pins the process: a pid freed and reused by another process between the check
    and the kill cannot be hit. Without pidfds (a kernel before 5.3, no free descriptor) the
    kill is plain, which could in theory hit a reused pid.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        return
    try:
        if still_ours(pid):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)
