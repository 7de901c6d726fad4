"""``referee compare NEW OLD``: is the new version better, and how sure is that?

Thin, like every command: it loads the bots and names them, makes the comparison's
tournament (:func:`referee.tournament.quick.compare_tournament`), plays it with
:func:`referee.runs.comparison.run_comparison` on local workers into a results folder (the same
command with the same ``--results`` resumes), shows the test's progress on stderr and prints
the verdict (or its JSON) on stdout. Exit code 0 whatever the verdict; 1 when matches failed
on the referee's side (their deals are left out; running again retries them) or when a
field bot's faults spoiled too many deals (:mod:`referee.ranking.spoils`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.status import Status

from referee.cli.app import (
    allow_image_option,
    check_images,
    check_memory,
    friendly,
    main,
    memory_option,
    sandbox_option,
    say,
    time_control_options,
)
from referee.cli.progress import Every, ProgressView
from referee.errors import UsageError
from referee.ranking.sprt import MIN_DIFFERING, Sprt
from referee.ranking.statistics import HYPOTHESES
from referee.specs import TimeControl
from referee.text import printable

__all__ = ["compare_command"]

_MAX_MATCHES = 100_000
_DEFAULTS = {name: ",".join(f"{d:g}" for d in pair) for name, pair in HYPOTHESES.items()}
_ERROR_RATE = 0.05


def _sprt_hypotheses(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[float, float] | None:
    """``--sprt D0,D1``: two numbers, D1 larger, both between -1 and 1."""
    if value is None:
        return None
    try:
        d0, d1 = (float(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: give two numbers, D0,D1 (e.g. 0,0.02)", ctx, param
        ) from None
    if not (-1 < d0 < d1 < 1) or not all(math.isfinite(x) for x in (d0, d1)):
        raise click.BadParameter(
            f"{value!r}: D0 must be below D1, both between -1 and 1 (differences of the "
            "statistic's mean)",
            ctx,
            param,
        )
    return d0, d1


@main.command("compare")
@click.argument("new")
@click.argument("old")
@click.option(
    "--field",
    "field_paths",
    multiple=True,
    metavar="BOT",
    help="A field bot (repeatable, one each). Default: the bundled samples whose play repeats "
    "with match_start's seed: @heuristic, @js-lowest, @lowest, @random.",
)
@click.option("--rules", "preset", default="arschloch", show_default=True, help="Preset name.")
@click.option("--max-rounds", default=None, type=click.IntRange(1, 10_000), help="Hard round cap.")
@click.option(
    "--table-size",
    default=4,
    show_default=True,
    type=click.IntRange(3, 6),
    help="Seats at a table.",
)
@click.option(
    "--statistic",
    default=None,
    type=click.Choice(["final-score", "round-score"]),
    help="What a deal is scored by: each version's normalised finishing score, or its mean "
    "normalised place over the rounds of the match. Default: round-score for matches of "
    "more than one round, final-score for one round (the same number there); a resumed "
    "comparison keeps its own.",
)
@click.option(
    "--sprt",
    "hypotheses",
    default=None,
    callback=_sprt_hypotheses,
    metavar="D0,D1",
    help="The test's hypotheses: NEW's mean score minus OLD's is D0 (H0) or D1 (H1), in the "
    f"statistic's units. Default: {_DEFAULTS['final-score']} under final-score, "
    f"{_DEFAULTS['round-score']} under round-score (the same change on the bench's ladder).",
)
@click.option(
    "--alpha",
    default=None,
    type=click.FloatRange(0, 0.5, min_open=True),
    help="How often the test may accept H1 when H0 holds.  [default: 0.05]",
)
@click.option(
    "--beta",
    default=None,
    type=click.FloatRange(0, 0.5, min_open=True),
    help="How often the test may accept H0 when H1 holds.  [default: 0.05]",
)
@click.option(
    "--max-matches",
    default=4000,
    show_default=True,
    type=click.IntRange(1, _MAX_MATCHES),
    help="Stop undecided after this many matches (whole deals: 2 x table size matches each; "
    "deals spoiled by a field bot's fault count too).",
)
@click.option(
    "--seed",
    default=None,
    type=click.IntRange(0),
    help="Deal from this seed (the same seed, the same deals); the cards are then "
    "predictable. Default: secret deals.",
)
@click.option("--workers", default=None, type=click.IntRange(1, 1024), help="Worker processes.")
@click.option(
    "--results",
    "results_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the results and every match log in this folder; the same command again "
    "resumes there (default: a new folder under the temp folder, named when it starts).",
)
@click.option("--restart", is_flag=True, help="Discard the results stored in --results first.")
@sandbox_option
@allow_image_option
@time_control_options
@memory_option
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as one JSON object.")
@friendly
def compare_command(**options: Any) -> None:
    """Is NEW better than OLD? Paired duplicate matches stopped by a sequential test.

    Every deal is played at a table of NEW and field bots in every seat rotation, and again
    with OLD in NEW's seat: the same field bots in the same seats, the same cards, and the
    same seed for their random choices. After each deal a sequential probability ratio
    test weighs H1 (NEW's mean score, by --statistic, is D1 above OLD's) against H0
    (D0 above), and the run stops when it decides ("H1 accepted", "H0 accepted") or at
    --max-matches ("undecided"). Exit code 0 whatever the verdict.

    A deal where a field bot faulted (or a process was killed on the referee's side) is
    spoiled: left out of the test and replaced by a fresh deal. A field bot that spoils
    more than a quarter of the deals (from the eighth on) stops the run (exit code 1).

    The field bots meet every deal twice (once with each version): use bots you trust.
    """
    _compare(**options)


def _compare(
    new: str,
    old: str,
    field_paths: tuple[str, ...],
    preset: str,
    max_rounds: int | None,
    table_size: int,
    statistic: str | None,
    hypotheses: tuple[float, float] | None,
    alpha: float | None,
    beta: float | None,
    max_matches: int,
    seed: int | None,
    workers: int | None,
    results_dir: Path | None,
    restart: bool,
    sandbox_name: str,
    allow_images: tuple[str, ...],
    time_control: TimeControl,
    memory_mb: int,
    as_json: bool,
) -> None:
    from referee.runs.comparison import run_comparison
    from referee.tournament.quick import compare_tournament

    if restart and results_dir is None:
        raise UsageError("--restart discards the results in --results DIR; name it")
    deals = _deal_budget(max_matches, table_size)
    given = [new, old, *(field_paths or _default_field())]
    bots = _named_bots(given, table_size, allow_images)
    settings = _test_settings(
        results_dir if not restart else None,
        preset,
        max_rounds,
        table_size,
        statistic,
        hypotheses,
        alpha,
        beta,
    )
    folder = results_dir or Path(tempfile.mkdtemp(prefix="referee-compare-"))
    tournament = compare_tournament(
        bots[0],
        bots[1],
        bots[2:],
        given,
        preset=preset,
        max_rounds=max_rounds,
        table_size=table_size,
        deals=deals,
        time_control=time_control,
        backend=sandbox_name,
        memory_mb=memory_mb,
        images=allow_images,
        folder=folder,
        test=settings,
    )
    executor = _local_executor(sandbox_name, allow_images, table_size, memory_mb, workers)
    test = _sprt(settings)
    view = _Progress(folder)
    view.intro(tournament, test, max_matches, seed, executor.workers)
    for note in executor.memory.notes if executor.memory is not None else ():
        say(note)
    with view:
        summary = run_comparison(
            tournament,
            executor,
            test,
            max_deals=deals,
            results_dir=folder,
            batch=2 * executor.workers,
            restart=restart,
            on_event=view.update,
            deal_secret=_seeded_secret(seed) if seed is not None else None,
        )
    _report(summary, tournament, test, max_matches, as_json)


def _deal_budget(max_matches: int, table_size: int) -> int:
    """The whole deals ``--max-matches`` allows (a deal is both versions in every seat
    rotation); a ``UsageError`` when not one fits."""
    deals = max_matches // (2 * table_size)
    if deals < 1:
        raise UsageError(
            f"--max-matches {max_matches}: a deal is {2 * table_size} matches (both versions "
            f"in {table_size} seat rotations); give at least {2 * table_size}"
        )
    return deals


def _local_executor(
    sandbox_name: str,
    allow_images: tuple[str, ...],
    table_size: int,
    memory_mb: int,
    workers: int | None,
) -> Any:
    """The local pool the comparison plays in, its workers fitted to the memory there is
    for tables of ``table_size`` bots of ``memory_mb`` each."""
    from referee.executors.local import LocalExecutor
    from referee.sandbox import Limits, get_sandbox

    sandbox = get_sandbox(sandbox_name, images=allow_images)
    check_memory(sandbox, table_size, memory_mb, fix="lower --memory-mb")
    return LocalExecutor.within_memory(
        workers,
        seats=table_size,
        limits=Limits(memory_mb=memory_mb),
        own_cgroup=sandbox.name == "process",
    )


def _test_settings(
    resumed: Path | None,
    preset: str,
    max_rounds: int | None,
    table_size: int,
    statistic: str | None,
    hypotheses: tuple[float, float] | None,
    alpha: float | None,
    beta: float | None,
) -> Any:
    """The comparison's statistic and test: what was given, else what the folder being
    resumed holds, else the defaults (the statistic by the rules: :func:`~referee.ranking.
    statistics.default_statistic`; the hypotheses by the statistic). Raises ``UsageError``
    when the folder's comparison was started with other settings than given."""
    from referee.ranking.statistics import default_statistic
    from referee.rules import RuleSet
    from referee.runs.comparison import check_resumed, stored_settings
    from referee.tournament.model import CompareSettings

    stored = stored_settings(resumed) if resumed is not None else None
    if statistic is None:
        if stored is not None:
            statistic = stored.statistic
        else:
            overrides = {} if max_rounds is None else {"max_rounds": max_rounds}
            rules = RuleSet.preset(preset, **overrides).resolve(table_size)
            statistic = default_statistic(rules, table_size)
    d0, d1 = hypotheses if hypotheses is not None else (None, None)
    asked = CompareSettings.model_validate(
        {"statistic": statistic, "d0": d0, "d1": d1, "alpha": alpha, "beta": beta}
    )
    if stored is not None and resumed is not None:
        check_resumed(stored, asked, resumed)
    fallback = dict(zip(("d0", "d1"), HYPOTHESES[asked.statistic], strict=True))
    fallback |= {"alpha": _ERROR_RATE, "beta": _ERROR_RATE}
    filled = {
        key: next(
            v
            for v in (getattr(asked, key), getattr(stored, key, None), fallback[key])
            if v is not None
        )
        for key in fallback
    }
    # A new comparison waits for the differing deals; a resumed one keeps its own rule
    # (none stored: the folder ran before the rule, with 0).
    filled["min_differing"] = MIN_DIFFERING if stored is None else stored.differing()
    return asked.model_copy(update=filled)


def _sprt(settings: Any) -> Sprt:
    """The test that ``settings`` (filled by :func:`_test_settings`) name."""
    d0, d1, alpha, beta = (
        _given(value) for value in (settings.d0, settings.d1, settings.alpha, settings.beta)
    )
    return Sprt(d0, d1, alpha, beta, settings.differing())


def _given(value: float | None) -> float:
    assert value is not None  # filled by _test_settings
    return value


def _default_field() -> list[str]:
    """The bundled samples whose play repeats with the seed (see the command's help)."""
    from referee.resources import SAMPLE_PREFIX, sample_bot_names

    # montecarlo searches for as long as its clock allows, so the two halves of a pair
    # would differ by the machine's load as well as by the versions (and it is slow).
    # The compiled samples play exactly as lowest, once built by their build step.
    left_out = ("montecarlo", "c-lowest", "cpp-lowest", "rust-lowest", "java-lowest")
    return [SAMPLE_PREFIX + name for name in sample_bot_names() if name not in left_out]


def _named_bots(given: list[str], table_size: int, allow_images: tuple[str, ...]) -> list[Any]:
    """NEW, OLD and the field, loaded and checked, with distinct names: NEW and OLD of one
    name become NAME-new and NAME-old, a field bot given twice name#1 and name#2, and a
    field bot named like NEW or OLD name#2 (the versions keep their names)."""
    from referee.protocol.session import distinct_names
    from referee.sandbox import load_bot

    field = len(given) - 2
    if field < table_size - 1:
        raise UsageError(
            f"a comparison at tables of {table_size} needs at least {table_size - 1} field "
            f"bots (--field, one each); {field} given"
        )
    specs = [load_bot(path) for path in given]
    check_images(specs, allow_images)
    versions = [spec.name for spec in specs[:2]]
    if versions[0] == versions[1]:
        versions = [f"{versions[0]}-new", f"{versions[1]}-old"]
    taken = set(versions)
    field_names = []
    for name in distinct_names([spec.name for spec in specs[2:]]):
        free, number = name, 2
        while free in taken:
            free, number = f"{name}#{number}", number + 1
        taken.add(free)
        field_names.append(free)
    names = versions + field_names
    return [dataclasses.replace(spec, name=name) for spec, name in zip(specs, names, strict=True)]


def _seeded_secret(seed: int) -> bytes:
    """The deal secret ``--seed`` stands for: the same seed deals the same cards."""
    return hashlib.sha256(b"referee compare --seed\0%d" % seed).digest()


def _bundled(bot: Any) -> bool:
    """Whether ``bot`` is a bundled sample as shipped (the same files, whatever its path)."""
    from referee.resources import sample_bot, sample_bot_names
    from referee.sandbox import bot_sha256, load_bot, read_bot_files

    shipped = {
        bot_sha256(read_bot_files(load_bot(sample_bot(name)))) for name in sample_bot_names()
    }
    return bot.sha256 in shipped


class _Progress(ProgressView):
    """What the comparison says while it runs, on stderr: one status line on a terminal
    (redrawn), a line every tenth of the deals played otherwise."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.last = -1
        self.status: Status | None = None

    def intro(
        self, tournament: Any, test: Any, max_matches: int, seed: int | None, workers: int
    ) -> None:
        f = tournament.file
        field = [name for name in tournament.entrants if name not in (f.candidate, f.baseline)]
        self.say(
            f"comparing {f.candidate} (new) with {f.baseline} (old) at tables of "
            f"{f.table_size} ({tournament.rules.name}), each deal in every seat rotation with "
            f"each version, against {', '.join(field)}"
        )
        statistic = f.compare.statistic if f.compare is not None else "final-score"
        self.say(
            f"test: scored by {statistic}, H0 difference {test.d0:g} against H1 {test.d1:g}, "
            f"alpha {test.alpha:g}, "
            f"beta {test.beta:g}; at most {f.deals} deals ({f.deals * 2 * f.table_size} "
            f"matches of --max-matches {max_matches}) with {workers} worker"
            f"{'s' if workers != 1 else ''}"
        )
        strangers = [bot.name for bot in tournament.bots if bot.name in field and not _bundled(bot)]
        if strangers:
            self.say(
                f"note: {', '.join(strangers)} {'is' if len(strangers) == 1 else 'are'} not "
                "a bundled sample: field bots meet every deal in both halves and every "
                "rotation (a process never serves two of them, but copies could pass what "
                "they saw through the shared kernel); use field bots you trust"
            )
        if seed is not None:
            self.say(
                f"note: --seed {seed} makes the deals predictable: a bot that knows the seed "
                "can compute every hand. Leave it out for secret deals."
            )
        self.say(f"results in {self.folder} (the same command with --results resumes there)")

    def show(self, event: object) -> None:
        from referee.runs.comparison import SprtProgress
        from referee.runs.tournament import RunStarted

        if isinstance(event, RunStarted):
            self.started(sandbox=event.sandbox, limits=event.limits, warnings=event.warnings)
        elif isinstance(event, SprtProgress):
            self._show(event)

    def _show(self, progress: Any) -> None:
        from referee.runs.comparison import progress_line

        line = progress_line(progress)
        if self.live:
            if self.status is None:
                self.status = self.console.status(line)
                self.status.start()
                self.display = self.status
            self.status.update(line)
            if progress.state.decided:
                self.status = None
                self.close()
            return
        deals = progress.state.deals
        every = Every(max(1, min(10, progress.limit // 10)))
        if deals != self.last and (every.due(deals) or (deals and progress.state.decided)):
            self.say(line)
        self.last = deals


def _report(summary: Any, tournament: Any, test: Any, max_matches: int, as_json: bool) -> None:
    """The verdict and how it was reached (or its JSON); exit code 1 when matches failed."""
    from referee.runs.comparison import spoiled_text, verdict_line

    f = tournament.file
    state = summary.state
    if as_json:
        data = {
            "decision": state.decision,
            "llr": _finite(state.llr),
            "identical": state.identical and state.differing == 0,
            "differing": state.differing,
            "bounds": list(state.bounds),
            "difference": state.difference,
            "interval": [_finite(state.low), _finite(state.high)],
            "deals": state.deals,
            "matches": summary.matches,
            "faults": summary.faults,
            "spoiled": summary.spoiled,
            "spoiled_by": dict(summary.spoiled_by),
            "stopped": None
            if summary.capped is None
            else {
                "field_bot": summary.capped.name,
                "spoiled": summary.capped.spoiled,
                "deals": summary.capped.deals,
                "reason": summary.capped.message(),
            },
            "failed": summary.failed,
            "new": f.candidate,
            "old": f.baseline,
            "field": [n for n in tournament.entrants if n not in (f.candidate, f.baseline)],
            "statistic": f.compare.statistic if f.compare is not None else "final-score",
            "sprt": {"d0": test.d0, "d1": test.d1, "alpha": test.alpha, "beta": test.beta},
            "max_matches": max_matches,
            "results": str(summary.results_dir),
        }
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        click.echo(printable(verdict_line(summary, f.candidate, f.baseline, test)))
        low, high = state.bounds
        evidence = (
            f"LLR {state.llr:.2f} (bounds {low:.2f}, {high:.2f})"
            if math.isfinite(state.llr)
            else "no variance (the LLR is infinite)"
        )
        click.echo(
            f"{evidence} after {state.deals} deals, {state.differing} of them differing; "
            f"{summary.matches} matches played, {summary.faults} faults"
            + (f", {spoiled_text(summary)} and replayed on fresh cards" if summary.spoiled else "")
        )
        say(f"match logs in {summary.results_dir / 'logs'}; results in {summary.results_dir}")
    if summary.capped is not None:
        say(f"referee: {summary.capped.message()}")
        raise SystemExit(1)
    if summary.failed:
        say(
            f"referee: {summary.failed} matches failed on the referee's side (their deals are "
            f"left out); run the same command with --results {summary.results_dir} to retry them"
        )
        raise SystemExit(1)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
