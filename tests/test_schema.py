"""The committed JSON Schema files in protocol/schema/ match the models they come from, and
`referee protocol schema` hands them out as they are."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from referee.cli import main

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "referee" / "data" / "make_schemas.py"
SCHEMA_DIR = ROOT / "protocol" / "schema"
HOW = "regenerate with: .venv/bin/python referee/data/make_schemas.py"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_schema", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    docs: dict[str, str] = _load_generator().schema_documents()
    return docs


def test_no_schema_file_is_missing_or_stale(documents: dict[str, str]) -> None:
    for name, text in documents.items():
        path = SCHEMA_DIR / name
        assert path.exists(), f"protocol/schema/{name} is missing; {HOW}"
        assert path.read_text(encoding="utf-8") == text, (
            f"protocol/schema/{name} is stale (the models changed); {HOW}"
        )


def test_no_leftover_schema_files(documents: dict[str, str]) -> None:
    extra = sorted(p.name for p in SCHEMA_DIR.glob("*.json") if p.name not in documents)
    assert not extra, f"protocol/schema/ has files no model produces: {extra}; {HOW}"


def test_index_lists_every_message_type(documents: dict[str, str]) -> None:
    index = json.loads(documents["index.json"])
    assert index["protocol"] == 1
    sent = {
        json.loads(documents[f])["properties"]["type"]["const"] for f in index["to_bot"].values()
    }
    assert sent == {
        "hello",
        "act",
        "match_start",
        "round_start",
        "played",
        "passed",
        "skipped",
        "trick_end",
        "finished",
        "eliminated",
        "exchanged",
        "received",
        "leftover_taken",
        "fault",
        "round_end",
        "match_end",
        "bye",
    }
    assert set(index["from_bot"]) == {"ready", "play_reply", "give_reply", "leftover_reply"}


def test_sent_messages_require_every_field(documents: dict[str, str]) -> None:
    """A bot may rely on every field of a to-bot message being present, even if null."""
    round_start = json.loads(documents["round_start.json"])
    assert set(round_start["required"]) == set(round_start["properties"])
    exchanged = json.loads(documents["exchanged.json"])
    assert "from" in exchanged["required"] and "from_" not in exchanged["properties"]


def test_ready_version_is_optional(documents: dict[str, str]) -> None:
    ready = json.loads(documents["ready.json"])
    assert set(ready["required"]) == {"id", "type", "name"}


# --------------------------------------------------------------------------- referee protocol schema


def test_the_command_lists_every_schema_with_its_direction() -> None:
    result = CliRunner().invoke(main, ["protocol", "schema"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split(None, 1) for line in result.output.splitlines())
    assert set(rows) == {p.stem for p in SCHEMA_DIR.glob("*.json")}
    assert rows["act_play"] == "referee → bot" and rows["play_reply"] == "bot → referee"


def test_the_command_prints_one_schema_as_its_file() -> None:
    result = CliRunner().invoke(main, ["protocol", "schema", "act_play"])
    assert result.exit_code == 0, result.output
    assert result.output == (SCHEMA_DIR / "act_play.json").read_text(encoding="utf-8")


def test_the_command_writes_them_all_or_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["protocol", "schema", "--out", str(tmp_path / "all")])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "all").iterdir())
    assert written == sorted(p.name for p in SCHEMA_DIR.glob("*.json"))
    for name in written:
        assert (tmp_path / "all" / name).read_bytes() == (SCHEMA_DIR / name).read_bytes()
    one = CliRunner().invoke(main, ["protocol", "schema", "ready", "--out", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["ready.json"]


def test_an_unknown_schema_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["protocol", "schema", "../../x", "--out", str(out)])
    assert result.exit_code == 2
    assert "no schema is called '../../x'; the schemas: hello" in result.output
    assert not out.exists()
