"""The one writer of a site's files, for a tournament's site and a league's alike.

:class:`PageWriter` is what both publications (:mod:`referee.publish.site`,
:mod:`referee.publish.league_site`) and ``referee verify``'s renderer write through: the
templates (one Jinja2 environment, autoescaping everywhere, undefined names an error), the
context every page shares (the tournament's name, whether it is in progress, a league's
time of publication), the site's static files, a match's replay files (its log as a script,
the log itself, its stderr as a script), and the record of what was written (the size and
SHA-256 of every file, by its path in the site). Where the files go is the folder's
business (:class:`SiteWriter`: a fresh folder swapped into place, a league's folder
updated in place, or what verify compares with); whether a file is made again or copied
from the site published before is :mod:`referee.publish.reuse`'s, when a publication hands
one in (a league's publication writes only what is new, so it reuses nothing).

What a page may show (a replay withheld while its deal is being played, stderr kept
private) is decided by the publication; the writer writes what it is given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from referee.errors import UsageError
from referee.installation import install_hint
from referee.publish.replaydata import log_script, stderr_script
from referee.publish.reuse import Reuse, inputs_key
from referee.tournament.chain import log_digest

if TYPE_CHECKING:
    import jinja2

__all__ = ["STDERR_SCRIPT", "LogFiles", "PageWriter", "SiteWriter", "environment"]

_HERE = Path(__file__).resolve().parent
STDERR_SCRIPT = ".stderr.js"
"""The suffix of a match's stderr script beside its page."""


class SiteWriter(Protocol):
    """What the site's files are written into: :class:`~referee.publish.folder.SiteFolder`,
    :class:`~referee.publish.folder.LiveFolder`, or what ``referee verify`` compares them
    with. Returns the size written."""

    def write(self, folder: str, stem: str, suffix: str, data: bytes) -> int: ...


def environment() -> jinja2.Environment:
    """The templates' environment (``UsageError`` in an installation that lost Jinja2)."""
    try:
        import jinja2
    except ImportError:  # a dependency, so only in an installation that lost it
        raise UsageError(
            f"publishing a site needs Jinja2, which is missing here; "
            f"{install_hint('jinja2', extra='site')}"
        ) from None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["f2"] = lambda v: "—" if v is None else f"{v:.2f}"
    env.filters["f3"] = lambda v: "—" if v is None else f"{v:.3f}"
    env.filters["pct"] = lambda v: "—" if v is None else f"{100 * v:.0f}%"
    env.filters["signed"] = lambda v: "—" if v is None else f"{v:+.3f}"
    env.filters["pvalue"] = _p_text
    env.filters["ms"] = _ms_text
    return env


@dataclass(frozen=True)
class LogFiles:
    """A match's log as published: ``ok`` (its script and copy written) or ``unreadable``
    (nothing written; ``note`` says why), and the log line of each seat's fault."""

    state: Literal["ok", "unreadable"]
    note: str = ""
    fault_lines: dict[int, int] = field(default_factory=dict)
    digest: str = ""
    """The log's SHA-256 (``ok`` only)."""


class PageWriter:
    """Writes one publication's files into its folder (see the module) and records them."""

    def __init__(self, shared: Mapping[str, Any], reuse: Reuse | None = None) -> None:
        self.env = environment()
        self.shared = dict(shared)
        """The context every page is rendered with (``tournament``, ``in_progress``, …)."""
        self.reuse = reuse
        self._folder: SiteWriter | None = None
        self.rendered: list[str] = []
        """The files made now from their inputs (the others were reused)."""
        self.reused = 0
        self.sizes: dict[str, int] = {}
        """Bytes of every file written, by its path in the site."""
        self.digests: dict[str, str] = {}
        """SHA-256 of every file written, by its path in the site."""

    def into(self, folder: SiteWriter) -> None:
        """Write the files into ``folder`` from now on."""
        self._folder = folder

    @property
    def written(self) -> int:
        """Bytes written so far."""
        return sum(self.sizes.values())

    def page(self, template: str, context: Mapping[str, Any]) -> bytes:
        """``template`` rendered with the shared context and ``context``."""
        return self.env.get_template(template).render(**self.shared, **context).encode("utf-8")

    def render(self, template: str, folder: str, stem: str, **context: Any) -> None:
        """The page ``folder/stem.html`` (``folder`` ``""`` for the top) from ``template``."""
        self.write(folder, stem, ".html", self.page(template, context))

    def write(self, folder: str, stem: str, suffix: str, data: bytes) -> None:
        """The file ``folder/stem+suffix`` holding ``data`` (the folder checks the name)."""
        assert self._folder is not None, "the site is written before it has a folder"
        size = self._folder.write(folder, stem, suffix, data)
        name = f"{folder}/{stem}{suffix}".lstrip("/")
        self.sizes[name] = size
        self.digests[name] = hashlib.sha256(data).hexdigest()

    def reused_file(self, folder: str, stem: str, suffix: str, inputs: str) -> bool:
        """Write the old site's ``folder/stem+suffix`` again if it was made from ``inputs``
        and is intact (:meth:`Reuse.lend`): whether it was (never without a reuse)."""
        if self.reuse is None:
            return False
        name = f"{folder}/{stem}{suffix}"
        lent = self.reuse.lend(name, inputs)
        if lent is None:
            return False
        data, entry = lent
        self.write(folder, stem, suffix, data)
        self.reuse.made[name] = entry
        self.reused += 1
        return True

    def made_file(
        self,
        folder: str,
        stem: str,
        suffix: str,
        inputs: str,
        data: bytes,
        fault_lines: dict[int, int] | None = None,
    ) -> None:
        """Write ``folder/stem+suffix``, made now from ``inputs``, and record it."""
        self.write(folder, stem, suffix, data)
        if self.reuse is not None:
            self.reuse.record(f"{folder}/{stem}{suffix}", inputs, data, fault_lines)
        self.rendered.append(f"{folder}/{stem}{suffix}")

    def static_files(self) -> None:
        """The site's own style and scripts, copied from the package."""
        for path in sorted((_HERE / "static").iterdir()):
            self.write("static", path.stem, path.suffix, path.read_bytes())

    def log_files(self, stem: str, raw: bytes) -> LogFiles:
        """A match's replay in ``matches/``: its log as a script (``stem.js``, reused when
        made from the same log) and the log itself (``stem.jsonl``, a copy: see
        :mod:`referee.publish.folder`)."""
        digest = log_digest(raw)
        inputs = inputs_key("log_script", digest)
        if self.reused_file("matches", stem, ".js", inputs):
            assert self.reuse is not None
            fault_lines = self.reuse.made[f"matches/{stem}.js"].fault_lines or {}
        else:
            try:
                data = log_script(raw)
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
                return LogFiles("unreadable", f"its log cannot be read ({exc})")
            fault_lines = data.fault_lines
            script = data.script.encode("utf-8")
            self.made_file("matches", stem, ".js", inputs, script, fault_lines)
        self.write("matches", stem, ".jsonl", raw)
        return LogFiles("ok", "", dict(fault_lines), digest)

    def stderr_file(self, stem: str, read: Callable[[], bytes]) -> str:
        """A match's stderr as a script (``stem.stderr.js``) from ``read()``: its state,
        ``ok``, ``none`` (the match has none) or ``unreadable``."""
        try:
            raw = read()
        except FileNotFoundError:
            return "none"
        except OSError:
            return "unreadable"
        inputs = inputs_key("stderr_script", log_digest(raw))
        if self.reused_file("matches", stem, STDERR_SCRIPT, inputs):
            return "ok"
        try:
            script = stderr_script(raw)
        except ValueError:
            return "unreadable"
        self.made_file("matches", stem, STDERR_SCRIPT, inputs, script.encode("utf-8"))
        return "ok"


def _ms_text(ms: float | None) -> str:
    """``12 ms``, ``12.5 ms``, ``10,000 ms``; ``—`` when unknown."""
    if ms is None:
        return "—"
    return f"{ms:,.0f} ms" if float(ms).is_integer() else f"{ms:,.1f} ms"


def _p_text(p: float | None) -> str:
    """A p-value for the collusion table: ``0.034``, ``< 0.0001``, ``—`` when untested."""
    if p is None:
        return "—"
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"
