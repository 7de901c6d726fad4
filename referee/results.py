"""What a finished match reports: the data that flows from a match to the store and ratings."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from referee.errors import FaultKind


class FaultInfo(BaseModel):
    """The fault that made a seat forfeit: what, and the evidence (as in the match log).

    ``request_id`` is the request the bot failed (``None`` before any, e.g. at start-up),
    ``reply`` the offending line cut to 200 bytes (``None`` when there was none: a timeout, a
    crash), ``elapsed_ms`` how long the bot took. ``request`` is the last request written to
    the bot (``hello`` or an ``act``, as sent; the one it failed when its ``id`` is
    ``request_id``) and ``round`` the round then: the context a fault report explains
    the fault in (:mod:`referee.explain`). Neither is in the match log, which holds the
    whole game anyway.
    """

    model_config = ConfigDict(frozen=True)

    kind: FaultKind
    detail: str
    request_id: int | None = None
    reply: str | None = None
    elapsed_ms: int | None = None
    request: dict[str, Any] | None = None
    round: int | None = None
    answered: int | None = None
    """Requests of this match the seat had answered in time before it failed (``None``:
    not counted, as for a fault at ``hello``): a bot that answered many and then ran out
    of its bank was slow, one that never answered may not flush its output."""


class KitReplacement(BaseModel):
    """A decision the bot's kit replaced with a safe one (the kits' safety net), as the
    kit's marker line on stderr told it (protocol/SPEC.md, "The kits' safety net").

    ``decided`` is what the bot's own code returned (``None`` when it raised: ``error``
    says what), ``sent`` what the kit answered instead, ``why`` ``"not allowed"`` or
    ``"raised"``. Everything but ``request`` comes from the bot: untrusted text.
    ``request`` is the request it answered, when the referee still had it at hand.
    """

    model_config = ConfigDict(frozen=True)

    request_id: int | None = None
    kind: str | None = None
    decided: Any = None
    sent: Any = None
    why: str = ""
    error: str | None = None
    request: dict[str, Any] | None = None


class SeatResult(BaseModel):
    """One seat's line in the match standings."""

    model_config = ConfigDict(frozen=True)

    seat: int
    name: str
    place: int
    score: int
    forfeit: bool
    fault: FaultInfo | None = None
    kit_replaced: int = 0
    """Decisions the bot's kit replaced with safe ones in this match (its marker lines)."""
    kit_replacements: tuple[KitReplacement, ...] = ()
    """The first few of them, read back from the marker lines."""


class MatchResult(BaseModel):
    """The outcome of one match, as ``referee play --json`` prints it."""

    model_config = ConfigDict(frozen=True)

    match: str
    seed: int
    rules: str
    rounds: int
    log: str | None
    standings: list[SeatResult]
    duration_s: float = 0.0
    stderr_tails: dict[int, str] = {}
    """The stderr report (start-up and match output, 4 KiB) of each seat that faulted."""
    reply_ms: dict[int, list[int]] = {}
    """Each seat's reply times in ms, request by request: every well-formed reply that came
    in time (legal or not), from writing the request to reading the reply."""
    bank_spent_ms: dict[int, int] = {}
    """How much of its time bank each seat spent (all of it at a timeout)."""


@dataclass
class ReplyTimes:
    """A bot's reply times over many matches, as the store gathers them: ``counts`` of
    replies by whole milliseconds (a histogram: the times of a tournament repeat, so it stays
    small however many there are), and the bank it spent in each match (``None`` for a
    match stored before the referee kept it)."""

    counts: Counter[int] = field(default_factory=Counter)
    bank_spent_ms: list[int | None] = field(default_factory=list)

    def add(self, times: Iterable[int], bank_spent_ms: int | None) -> None:
        """One match's reply times and the bank spent in it."""
        self.counts.update(times)
        self.bank_spent_ms.append(bank_spent_ms)

    @property
    def replies(self) -> int:
        return self.counts.total()

    def median_ms(self) -> float | None:
        """The middle reply time (the mean of the two middle ones for an even count)."""
        n = self.replies
        if n == 0:
            return None
        low, high = self._nth((n - 1) // 2), self._nth(n // 2)
        return (low + high) / 2

    def percentile_ms(self, q: float) -> int | None:
        """The nearest-rank ``q`` percentile (0 < q <= 100): the least time that at least
        ``q`` % of the replies took no longer than."""
        n = self.replies
        if n == 0:
            return None
        return self._nth(max(1, math.ceil(q / 100 * n)) - 1)

    def max_ms(self) -> int | None:
        return max(self.counts) if self.counts else None

    def most_bank_spent_ms(self) -> int | None:
        """The most of its bank the bot spent in one match (``None`` when not kept)."""
        spent = [s for s in self.bank_spent_ms if s is not None]
        return max(spent) if spent else None

    def _nth(self, index: int) -> int:
        """The ``index``-th smallest reply time (from 0)."""
        seen = 0
        for ms in sorted(self.counts):
            seen += self.counts[ms]
            if seen > index:
                return ms
        raise IndexError(index)
