"""``referee serve FILE`` (the competition server) and ``referee upload BOT`` (its client).

``serve`` parses options and hands them to :func:`referee.server.serve.serve`. ``upload``
is what an author runs on their own machine: it packs the bot (a folder becomes a
deterministic ``.tar.gz``, :func:`referee.server.archives.pack_bot`), sends it with the
author's token, and follows the check to its verdict. The token is read from
``REFEREE_TOKEN`` or a file, never from the command line, where the shell's history and
the process list would keep it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from referee.cli.app import friendly, main, say
from referee.cli.tournaments import _Where
from referee.errors import InfrastructureError, Refused, UsageError
from referee.installation import install_hint
from referee.interrupts import Terminated
from referee.text import printable

__all__: list[str] = []

_FOLLOW_POLL_S = 1.0


@main.command("serve")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="The port."
)
@click.option(
    "--no-league", is_flag=True, help="Serve only: the league is run apart (referee league run)."
)
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="The league's worker processes (default: one per core).",
)
@click.option("--executor", "executor_kind", type=click.Choice(["local", "dask"]), default=None)
@click.option("--cluster", default=None, metavar="ADDRESS", help="As for referee league run.")
@click.option(
    "--cluster-security",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
)
@click.option("--insecure-cluster", is_flag=True)
@click.option(
    "--site",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the published site is kept (default: a folder beside the results, "
    "<results>-site); served under /site/.",
)
@click.option(
    "--every",
    type=click.FloatRange(1, 3600),
    default=10.0,
    show_default=True,
    help="Seconds between two looks at the store for a publication.",
)
@click.option(
    "--forwarded-allow-ips",
    default=None,
    metavar="IPS",
    help="Trust X-Forwarded-For/-Proto from these addresses (a TLS proxy in front); "
    "none trusted by default.",
)
@friendly
def serve(
    file: Path,
    host: str,
    port: int,
    no_league: bool,
    workers: int | None,
    executor_kind: str | None,
    cluster: str | None,
    cluster_security: Path | None,
    insecure_cluster: bool,
    site: Path | None,
    every: float,
    forwarded_allow_ips: str | None,
) -> None:
    """Serve the league FILE: authors upload bots (referee upload, or the web page), each
    is checked as referee submit checks it and joins the running league; the leaderboard
    and the site are public and live. Stop with Ctrl-C or SIGTERM; run again to go on.
    """
    _need_server_extra()
    from referee.server.serve import ServeOptions
    from referee.server.serve import serve as run_server
    from referee.tournament.file import load_tournament

    spec = load_tournament(file)
    # The league's executor options, refused here as league run refuses them (a plain
    # tcp:// cluster, a flag that needs another): before anything listens.
    _Where.of(spec, executor_kind, cluster, cluster_security, insecure_cluster)
    args: list[str] = []
    if workers is not None:
        args += ["--workers", str(workers)]
    if executor_kind is not None:
        args += ["--executor", executor_kind]
    if cluster is not None:
        args += ["--cluster", cluster]
    if cluster_security is not None:
        args += ["--cluster-security", str(cluster_security)]
    if insecure_cluster:
        args.append("--insecure-cluster")
    results = spec.results_dir
    folder = site if site is not None else results.with_name(f"{results.name}-site")
    options = ServeOptions(
        host=host,
        port=port,
        league=not no_league,
        league_args=tuple(args),
        site=folder,
        every_s=every,
        forwarded_allow_ips=forwarded_allow_ips,
    )
    shown = f"[{host}]" if ":" in host else host
    where = "run apart" if no_league else "run here"
    say(f"serving {spec.name} on http://{shown}:{port}/ (the league: {where})")
    say(
        "behind TLS: put a reverse proxy (nginx, Caddy) in front and start with "
        "--forwarded-allow-ips <its address>; "
        + (
            f"trusting X-Forwarded-For and X-Forwarded-Proto from {forwarded_allow_ips}"
            if forwarded_allow_ips
            else "no proxy header is trusted now"
        )
    )
    with contextlib.suppress(Terminated, KeyboardInterrupt):  # how it is stopped: no failure
        run_server(file, options, say)
    say("stopped; run the same command again to go on where it stopped")


def _server_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--server URL`` and ``--token-file FILE``: how ``upload`` and ``enter`` reach the
    server as their author."""
    command = click.option(
        "--token-file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="A file holding your token (default: the REFEREE_TOKEN environment variable).",
    )(command)
    return click.option(
        "--server", "url", required=True, metavar="URL", help="The competition server."
    )(command)


@main.command("upload")
@click.argument("bot", type=click.Path(path_type=Path))
@_server_options
@click.option("--name", default=None, help="The name on the leaderboard (default: the bot's).")
@click.option(
    "--compare",
    is_flag=True,
    help="Compare it with your current version in the league first; enter it later with "
    "referee enter.",
)
@click.option(
    "--enter-if-better",
    is_flag=True,
    help="Compare it, and enter it at once if the comparison finds it better.",
)
@click.option("--no-follow", is_flag=True, help="Do not wait for the check's verdict.")
@click.option(
    "--timeout",
    type=click.FloatRange(1, 7 * 86_400),
    default=None,
    help="Seconds to wait for the verdict.  [default: 600; 86400 with a comparison]",
)
@friendly
def upload(
    bot: Path,
    url: str,
    token_file: Path | None,
    name: str | None,
    compare: bool,
    enter_if_better: bool,
    no_follow: bool,
    timeout: float | None,
) -> None:
    """Upload BOT (a .py file, or a folder with bot.toml) to the competition server at URL
    and follow its check: exit code 0 when it is accepted, 1 when it is refused.

    With --compare the checked bot is not entered: it plays a paired comparison against
    your current version of it on the league's rules and field, and the command ends with
    the verdict (exit code 0) and the line that enters it. With --enter-if-better it is
    entered when the comparison finds it better (exit code 0), and left waiting otherwise
    (exit code 1)."""
    _need_server_extra()
    token = _token(token_file)
    filename, data = _pack(bot)
    form = {"name": name} if name else {}
    if enter_if_better:
        form["enter_if_better"] = "1"
    elif compare:
        form["compare"] = "1"
    waited = timeout or (86_400.0 if compare or enter_if_better else 600.0)
    with _client(url, token) as client:
        answer = client.post("/api/v1/submissions", files={"bot": (filename, data)}, data=form)
        body = _answer(answer, 202)
        say(f"uploaded {filename} ({len(data)} bytes): submission {body['id']}, queued")
        if no_follow:
            return
        final = _follow(client, str(body["url"]), waited)
    _verdict(final, url)


@main.command("enter")
@click.argument("submission")
@_server_options
@click.option("--no-follow", is_flag=True, help="Do not wait for the check's verdict.")
@click.option(
    "--timeout",
    type=click.FloatRange(1, 86_400),
    default=600.0,
    show_default=True,
    help="Seconds to wait for the verdict.",
)
@friendly
def enter(
    submission: str, url: str, token_file: Path | None, no_follow: bool, timeout: float
) -> None:
    """Enter SUBMISSION, an upload of yours that referee upload --compare compared: it is
    checked again from the same bytes and joins the league (exit code 0 when accepted)."""
    _need_server_extra()
    token = _token(token_file)
    if not submission.isalnum() or len(submission) > 64:
        raise UsageError(f"{printable(submission)!r} is not a submission id (upload prints it)")
    with _client(url, token) as client:
        body = _answer(client.post(f"/api/v1/submissions/{submission}/enter"), 202)
        say(f"submission {submission}: queued to be entered")
        if no_follow:
            return
        final = _follow(client, str(body["url"]), timeout)
    _verdict(final, url)


@contextlib.contextmanager
def _client(url: str, token: str) -> Iterator[Any]:
    """An HTTP client of the server at ``url`` with the author's token; a failure to reach
    it is one line (an ``InfrastructureError``)."""
    import httpx

    base = url.rstrip("/")
    try:
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60.0
        ) as client:
            yield client
    except httpx.HTTPError as exc:
        raise InfrastructureError(f"cannot reach the server at {base}: {exc}") from None


def _verdict(final: dict[str, Any], url: str) -> None:
    """End ``upload`` or ``enter`` by the submission's last state (see ``upload``)."""
    status = final["status"]
    if status == "accepted":
        return
    if status == "refused":
        raise Refused(f"the bot was refused{_first_failure(str(final.get('report') or ''))}")
    compared = final.get("compare") or {}
    again = f"referee enter {final['id']} --server {url}"
    if compared.get("status") == "failed":
        raise Refused(f"the comparison could not be played; enter it anyway with: {again}")
    if final.get("mode") == "enter-if-better":
        raise Refused(f"not entered: the comparison did not find it better; to enter it: {again}")
    say(f"not entered yet; to enter it: {again}")


def _need_server_extra() -> None:
    """Refuse in one line, naming the fix, when the server's libraries are not installed."""
    import importlib.util

    missing = [
        name
        for name in ("starlette", "uvicorn", "multipart", "httpx")
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        packages = " ".join("python-multipart" if m == "multipart" else m for m in missing)
        raise UsageError(
            f"the server extra is not installed ({', '.join(missing)} missing); "
            f"{install_hint(packages, extra='server')}"
        )


def _token(token_file: Path | None) -> str:
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the token file {token_file}: {exc}") from None
    else:
        token = os.environ.get("REFEREE_TOKEN", "").strip()
    if not token:
        raise UsageError(
            "no token: set REFEREE_TOKEN or give --token-file (the organiser's referee "
            "authors add prints yours)"
        )
    if any(c.isspace() for c in token) or not token.isprintable():
        raise UsageError("the token holds spaces or control characters: copy it again")
    return token


def _pack(bot: Path) -> tuple[str, bytes]:
    from referee.server.archives import pack_bot, upload_filename

    if not os.path.lexists(bot):
        raise UsageError(f"bot not found: {printable(str(bot))} does not exist")
    return upload_filename(bot), pack_bot(bot)


def _answer(answer: Any, expected: int) -> dict[str, Any]:
    """The JSON of ``answer``, or its refusal raised as the server said it."""
    try:
        body = answer.json()
    except ValueError:
        body = {}
    if answer.status_code == expected and isinstance(body, dict):
        return body
    message = body.get("error") if isinstance(body, dict) else None
    said = printable(str(message)) if message else f"HTTP {answer.status_code}"
    if answer.status_code == 401:
        raise UsageError(f"the server refused the token: {said}")
    if answer.status_code == 429:
        raise Refused(f"not taken now: {said}")
    raise Refused(f"upload refused: {said}")


def _first_failure(report: str) -> str:
    """``" at <the first failed step and its note>; the report above says why"``: the
    one line on stderr names what failed, the report on stdout says the rest."""
    failed = next(
        (line.split()[1:] for line in report.splitlines() if line.startswith("FAIL ")), None
    )
    if not failed:
        return ": the report above says why"
    return f" at {' '.join(failed)[:200]}; the report above says why"


def _follow(client: Any, url: str, timeout: float) -> dict[str, Any]:
    """Poll the submission until its verdict (``accepted``, ``refused``, or ``compared``),
    printing the check's report lines as they come and a comparison's progress line when it
    moves (at most every 10 s), then its verdict line. A check that starts again (an upload
    entered after its comparison) prints its report again from the top."""
    printed: list[str] = []
    deadline = time.monotonic() + timeout
    status, progress, progress_at, comparing = "queued", "", 0.0, False
    while True:
        body = _answer(client.get(url), 200)
        lines = str(body.get("report") or body.get("progress") or "").splitlines()
        if lines[: len(printed)] != printed:
            printed = []
        for line in lines[len(printed) :]:
            click.echo(line)
        printed = lines if len(lines) >= len(printed) else printed
        if body["status"] != status:
            status = str(body["status"])
            if status == "checking":
                say("checking...")
        compared = body.get("compare") or {}
        if compared.get("status") == "running" and compared.get("field") and not comparing:
            comparing = True
            field = ", ".join(map(str, compared.get("field") or []))
            say(
                f"comparing with {compared.get('old')} (field: {field}), at most "
                f"{compared.get('max_deals')} deals..."
            )
        moved = str(compared.get("progress") or "")
        if moved and moved != progress and time.monotonic() - progress_at >= 10.0:
            click.echo(f"comparison: {moved}")
            progress, progress_at = moved, time.monotonic()
        if status in ("accepted", "refused", "compared"):
            if compared.get("verdict"):
                click.echo(f"comparison: {compared['verdict']}")
            return body
        if time.monotonic() > deadline:
            raise InfrastructureError(
                f"no verdict within {timeout:g} s; the check goes on: look again at {url}"
            )
        time.sleep(_FOLLOW_POLL_S)
