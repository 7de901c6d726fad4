"""``referee protocol schema``: the protocol's JSON Schemas, for bot authors in any language."""

from __future__ import annotations

from pathlib import Path

import click

from referee.cli.app import friendly, main
from referee.errors import UsageError
from referee.resources import schema_names, schema_text, spec


@main.group()
def protocol() -> None:
    """The bot protocol (v1): its machine-readable description."""


@protocol.command("spec")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write it to this file instead of printing it.",
)
@friendly
def spec_command(out: Path | None) -> None:
    """Print the protocol for bot authors (protocol/SPEC.md, Markdown).

    Every message with examples, the limits, which name is shown, common mistakes and a
    whole recorded match: all a bot author needs, in any language.
    """
    text = spec().read_text(encoding="utf-8")
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the protocol to {out}: {exc}") from None
    click.echo(f"wrote the protocol to {out}")


@protocol.command("schema")
@click.argument("name", required=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the schema (all of them without NAME) as NAME.json files into this folder.",
)
@friendly
def schema(name: str | None, out: Path | None) -> None:
    """Print the JSON Schema of the message NAME, or list them all.

    One schema per message (``hello``, ``act_play``, ``ready``, …), ``rules`` for the rules
    object inside ``hello`` and ``match_start``, and ``index`` listing them by direction.
    They are the files of ``protocol/schema/`` in the source, generated from the referee's
    own models.
    """
    names = schema_names()
    if out is not None:
        chosen = [name] if name is not None else list(names)
        texts = {n: schema_text(n) for n in chosen}  # an unknown NAME fails before writing
        try:
            out.mkdir(parents=True, exist_ok=True)
            for n, text in texts.items():
                (out / f"{n}.json").write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write the schemas to {out}: {exc}") from None
        click.echo(f"wrote {len(texts)} JSON Schema files to {out}")
        return
    if name is not None:
        click.echo(schema_text(name), nl=False)
        return
    width = max(map(len, names))
    for n, description in names.items():
        click.echo(f"{n:{width}}  {description}")
