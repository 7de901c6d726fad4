"""The referee's error tree.

Every error the referee raises on purpose derives from :class:`RefereeError`; each branch
carries the exit code a command ends with when it reaches the command line (one line on
stderr, no traceback)::

    RefereeError                                                                 exit code
    ├── UsageError            the user's input is wrong (bad flag, file, path, preset)   2
    │   └── RulesError        a ruleset or an override is invalid                        2
    ├── Refused               a check the user asked for says no (a bot refused)         1
    ├── ReplayMismatch        a match log disagrees with the engine                      1
    ├── IllegalMove           a decision the rules refuse (the engine's answer)          1
    ├── BotFault              the bot broke the contract: a forfeit, recorded            1
    └── InfrastructureError   our side failed (sandbox, daemon, disk): retried           3

Blame is typed: a ``BotFault`` is a result (inside a match it never reaches the command
line), an ``InfrastructureError`` is ours, a ``UsageError`` is the user's to fix. The
command line adds 130 for Ctrl-C and 143 for SIGTERM (:mod:`referee.interrupts`).
"""

from __future__ import annotations

from typing import Literal

FaultKind = Literal["timeout", "illegal", "protocol", "crash", "left"]
"""Why a seat forfeited: what its bot did wrong, or ``left`` for a person who left the
match (``referee play --human``: the end of input)."""

OWN_FAULTS: frozenset[str] = frozenset({"timeout", "illegal", "protocol", "crash"})
"""The fault kinds that are a bot's own doing (``left`` is a person's)."""

REFEREE_KILL = "killed by the referee"
"""What a bot's exit says when the referee killed it (``ExitInfo.detail``, and so the
detail of a crash fault whose process the referee had killed)."""

UNCOUNTED_KILL = "killed, and no memory counter here says by whom"
"""What a bot's exit says when SIGKILL came from outside the referee where no cgroup counts
the bot's memory (the process sandbox without cgroups): the kernel's out-of-memory killer,
acting for memory that ran out above the bot, cannot be told from the bot's own doing."""


OUTSIDE_KILL = "killed, not by the referee, and its cgroup counted no out-of-memory kill"
"""What a bot's exit says when SIGKILL came from outside the referee while the bot's cgroup
counted no OOM kill: another process sent it (the bot's own, or one of its uid), or the
CPU-seconds hard limit. The counters the cgroup kept follow it in the text."""


def own_fault(kind: str | None, detail: str | None) -> bool:
    """Whether a stored fault is the bot's own doing: a crash, a timeout, an illegal play
    or a protocol fault, not one the referee's side caused.

    Blame is typed before anything is stored: a failure on our side (a sandbox that would
    not start, a lost worker, the kernel's OOM killer acting on memory above the bot's own
    limit, a refusal to run for want of memory) is an ``InfrastructureError`` or a failed
    attempt, never a fault, and leaves no result at all. What is left for a stored fault to
    say is a crash whose process the referee itself had killed (its exit says
    :data:`REFEREE_KILL`): the referee's kill, not the bot's crash; and a SIGKILL that no
    memory counter can explain (:data:`UNCOUNTED_KILL`): maybe the kernel's, so not
    counted against the bot either.
    """
    if kind not in OWN_FAULTS:
        return False
    text = detail or ""
    return not (kind == "crash" and (REFEREE_KILL in text or UNCOUNTED_KILL in text))


class RefereeError(Exception):
    """Root of every error the referee raises on purpose."""

    exit_code = 1


class UsageError(RefereeError):
    """Bad input from the person running the referee (exit code 2)."""

    exit_code = 2


class RulesError(UsageError):
    """A ruleset parameter or override is invalid; the message names the field."""


class Refused(RefereeError):
    """A check the user asked for says no: ``submit`` refusing a bot, for one (exit code 1)."""

    exit_code = 1


class IllegalMove(RefereeError):
    """A decision the rules refuse; ``reason`` says why in words a bot author understands."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ReplayMismatch(RefereeError):
    """A match log line differs from what the engine produces."""

    def __init__(self, line_no: int, expected: object, got: object, note: str = "") -> None:
        msg = f"line {line_no}: log has {expected!r} but the engine gives {got!r}"
        if note:
            msg += f" ({note})"
        super().__init__(msg)
        self.line_no = line_no
        self.expected = expected
        self.got = got


class BotFault(RefereeError):
    """A bot broke the protocol, played illegally, timed out or crashed (or, at a person's
    seat, the person left): the seat forfeits."""

    def __init__(
        self,
        kind: FaultKind,
        detail: str,
        *,
        request_id: int | None = None,
        reply: str | None = None,
        elapsed_ms: int | None = None,
    ) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: FaultKind = kind
        self.detail = detail
        self.request_id = request_id
        self.reply = reply
        self.elapsed_ms = elapsed_ms


class InfrastructureError(RefereeError):
    """The referee's side failed (sandbox start, Docker daemon, disk); safe to retry."""

    exit_code = 3
