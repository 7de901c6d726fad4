"""The one shape of every command's progress: what a run says on stderr while it goes.

``tournament run``, ``play --matches``, ``compare`` and ``league run`` each give their run
a :class:`ProgressView` as its event listener. The base owns what they all say the same
way: the stderr console (every line through :func:`referee.text.printable`, no markup
read from it), the lines before the first match (the run's warnings, the sandbox, the
limits), a match that failed on the referee's side, a live display (a bar, a status line)
that runs only on a terminal and is always stopped, and the pace of the plain lines off a
terminal (:class:`Every`). A view answers :meth:`ProgressView.show` for the events of its
own kind of run, and nothing else; it never counts for itself what an event carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

from rich.console import Console

from referee.executors import MatchFailed
from referee.text import printable

__all__ = ["Every", "ProgressView"]


class _Display(Protocol):
    """A rich live display: :class:`rich.progress.Progress` or :class:`rich.status.Status`."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Every:
    """A plain line every ``step`` counts (a tenth of the run: :meth:`tenth`)."""

    step: int = 1

    @classmethod
    def tenth(cls, count: int) -> Every:
        return cls(max(1, count // 10))

    def due(self, count: int) -> bool:
        return count > 0 and count % self.step == 0


class ProgressView:
    """A listener of a run's events that tells them on stderr (see the module).

    Used as a context manager around the run: the live display, if any, starts on entry
    and stops on exit however the run ends, so the lines after it are never drawn over.
    """

    def __init__(self) -> None:
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.live = self.console.is_terminal
        """Whether stderr is a terminal: a live display then, plain lines otherwise."""
        self.display: _Display | None = None
        """The live display (set by the view; only ever started on a terminal)."""

    def __enter__(self) -> Self:
        if self.display is not None and self.live:
            self.display.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the live display (a view may stop it early, e.g. once a test decided)."""
        if self.display is not None:
            self.display.stop()
            self.display = None

    def say(self, text: str) -> None:
        """One line on stderr, made safe for a terminal."""
        self.console.print(printable(text), markup=False)

    def started(self, *, sandbox: str, limits: str, warnings: Sequence[str] = ()) -> None:
        """The lines every run says before its first match: warnings, sandbox, limits."""
        for warning in warnings:
            self.say(f"warning: {warning}")
        self.say(f"sandbox: {sandbox}")
        self.say(f"limits: {limits}")

    def update(self, event: object) -> None:
        """The run's listener: a failed match is told here, the rest by :meth:`show`."""
        if isinstance(event, MatchFailed):
            verb = "failed" if event.final else f"will be retried (attempt {event.attempt})"
            last = event.error.strip().splitlines()[-1:] or ["?"]
            self.say(f"match {event.key} {verb}: {last[0]}")
            return
        self.show(event)

    def show(self, event: object) -> None:
        """Tell an event of this kind of run (the base tells none)."""
