"""The committed JSON Schema files in protocol/schema/ match the models they come from."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "protocol" / "generate_schema.py"
SCHEMA_DIR = ROOT / "protocol" / "schema"
HOW = "regenerate with: .venv/bin/python protocol/generate_schema.py"


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
        "hello", "act", "match_start", "round_start", "played", "passed", "skipped",
        "trick_end", "finished", "eliminated", "exchanged", "received", "leftover_taken",
        "fault", "round_end", "match_end", "bye",
    }  # fmt: skip
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
