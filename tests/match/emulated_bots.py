"""The sample bots and the ``referee bot new`` bot, run in this process on the fake sandbox.

Each is the real bot class (its ``bot.py`` on the shipped Python kit), driven message by
message through the kit's own ``Bot.handle``: it makes the same decisions as the process
does, without a process. :func:`emulated_check` runs :class:`referee.match.compliance.ComplianceRun`
with them, so the seeds of ``bot check`` can be searched and proved in a fraction of a second
a match (``python -m tests.match.emulated_bots`` searches them again).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from referee.cli.bots import _PY_TEMPLATE
from referee.match.compliance import OPPONENTS, SEEDS, TABLES, CheckReport, ComplianceRun, kinds_for
from referee.rules import PRESETS, RuleSet
from referee.testing import FakeClock, FakeSandbox, Handler, spec

_T = TypeVar("_T")
ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "protocol" / "kits" / "python" / "botkit.py"
SAMPLES = ROOT / "sample_bots"
CANDIDATES = ("template", "heuristic", "random")
"""The bots under test the seeds are chosen for: the new bot's template and two samples."""


def _kit() -> types.ModuleType:
    module = sys.modules.get("botkit")
    if module is None or getattr(module, "__file__", None) != str(KIT):
        loader = importlib.util.spec_from_file_location("botkit", KIT)
        assert loader is not None and loader.loader is not None
        module = importlib.util.module_from_spec(loader)
        sys.modules["botkit"] = module
        loader.loader.exec_module(module)
        module.log = lambda *args, **kwargs: None  # type: ignore[attr-defined]  # the bots' notes to stderr: not wanted here
    return module


def _bot_class(name: str) -> type[Any]:
    """The Bot subclass of a sample bot, or of the template ``referee bot new`` writes."""
    kit = _kit()
    module = types.ModuleType(f"emulated_{name}")
    if name == "template":
        source = _PY_TEMPLATE.format(name="template")
    else:
        source = (SAMPLES / name / "bot.py").read_text()
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # our own files only
    classes = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, kit.Bot) and v is not kit.Bot
    ]
    return classes[0]


def handler(name: str) -> Callable[[], Handler]:
    """A factory of in-process bots ``name`` (one per started 'process')."""
    cls = _bot_class(name)

    def start() -> Handler:
        bot = cls()
        return lambda msg: bot.handle(msg)

    return start


def emulated_run(candidate: str, report: CheckReport | None = None) -> ComplianceRun:
    """A :class:`ComplianceRun` of the emulated ``candidate`` against emulated sample bots,
    on a :class:`FakeClock` (run it with ``run.clock.run(...)``)."""
    names = {*OPPONENTS, f"under-test-{candidate}"}
    factories = {n: handler(n.removeprefix("under-test-")) for n in names}
    sandbox = FakeSandbox(factories)
    bot = spec(f"under-test-{candidate}")
    report = report or CheckReport(
        bot=bot.name, path="-", sandbox="fake", time_control=_tc(), limits=_limits()
    )
    opponents = {n: spec(n) for n in OPPONENTS}
    return ComplianceRun(sandbox, bot, opponents, report, clock=FakeClock())


def _tc() -> Any:
    from referee.specs import TimeControl

    return TimeControl()


def _limits() -> Any:
    from referee.sandbox import Limits

    return Limits()


def asked_on(candidate: str, preset: str, seats: int, seed: int) -> dict[str, int]:
    """The requests ``candidate`` is asked in the check's match of ``preset`` on ``seed``."""

    run = emulated_run(candidate)

    async def go() -> dict[str, int]:
        try:
            step = await run.preset(preset, seats, seeds=[seed])
        finally:
            await run.pool.aclose()
        assert step.ok, step.problem
        return dict(step.asked)

    return on_its_clock(run, go())


def on_its_clock(run: ComplianceRun, main: Coroutine[Any, Any, _T]) -> _T:
    """Run ``main`` on the loop of ``run``'s fake clock."""
    assert isinstance(run.clock, FakeClock)
    return run.clock.run(main)


def kinds_asked(candidate: str, preset: str, seats: int, seed: int) -> frozenset[str]:
    """The kinds the check needs at this table that ``candidate`` is asked on ``seed``."""
    wanted = kinds_for(RuleSet.preset(preset).resolve(seats))
    asked = asked_on(candidate, preset, seats, seed)
    return frozenset(kind for kind in wanted if asked.get(kind))


def covered(candidate: str, preset: str, seats: int, seeds: Sequence[int]) -> bool:
    """Whether the check's seeds, played in turn as the check does, ask every kind."""
    wanted = set(kinds_for(RuleSet.preset(preset).resolve(seats)))
    seen: set[str] = set()
    for seed in seeds:
        seen |= kinds_asked(candidate, preset, seats, seed)
        if seen >= wanted:
            return True
    return False


def choose_seeds(preset: str, seats: int, limit: int = 60, keep: int = 3) -> tuple[int, ...]:
    """Greedy: the seed covering the most candidates on its own first, then each next seed
    the one that completes the most of what the candidates still miss."""
    wanted = frozenset(kinds_for(RuleSet.preset(preset).resolve(seats)))
    seeds = range(1, limit + 1)
    table = {(c, s): kinds_asked(c, preset, seats, s) for c in CANDIDATES for s in seeds}
    chosen: list[int] = []
    seen = {c: frozenset[str]() for c in CANDIDATES}

    def gain(seed: int) -> tuple[int, int, int]:
        done = sum(seen[c] | table[c, seed] >= wanted for c in CANDIDATES)
        alone = sum(table[c, seed] >= wanted for c in CANDIDATES)
        return done, alone, -seed

    for _ in range(keep):
        best = max((s for s in seeds if s not in chosen), key=gain)
        chosen.append(best)
        seen = {c: seen[c] | table[c, best] for c in CANDIDATES}
        if all(seen[c] >= wanted for c in CANDIDATES):
            break
    return tuple(chosen)


def search(presets: Sequence[str] = tuple(PRESETS)) -> None:
    """Print a new :data:`referee.match.compliance.SEEDS`."""
    for preset in presets:
        for seats in TABLES:
            print(f"    ({preset!r}, {seats}): {choose_seeds(preset, seats)},", flush=True)


if __name__ == "__main__":
    print("current:", SEEDS)
    search()
