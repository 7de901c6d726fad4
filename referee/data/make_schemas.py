"""Write the JSON Schema files of protocol v1 from the models in ``referee/protocol/messages.py``.

Run from the project root with the project's Python::

    .venv/bin/python referee/data/make_schemas.py

It writes one file per message into ``protocol/schema/`` (``hello.json``, ``act_play.json``,
``ready.json`` …), ``rules.json`` for the rules object, and ``index.json`` listing them by
direction. Referee-to-bot schemas describe what the referee *sends* (serialisation mode:
every field is present); bot-to-referee schemas describe what it *accepts* (validation
mode). ``tests/test_schema.py`` fails when the committed files differ from this output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from referee.protocol import messages as m

# The checkout's protocol/schema/ (a development tool: an installed wheel has no checkout).
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "protocol" / "schema"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

TO_BOT: dict[str, type[BaseModel]] = {
    "hello": m.Hello,
    "act_play": m.ActPlay,
    "act_give": m.ActGive,
    "act_leftover": m.ActLeftover,
    "match_start": m.MatchStart,
    "round_start": m.RoundStart,
    "played": m.Played,
    "passed": m.Passed,
    "skipped": m.Skipped,
    "trick_end": m.TrickEnd,
    "finished": m.Finished,
    "eliminated": m.Eliminated,
    "exchanged": m.Exchanged,
    "received": m.Received,
    "leftover_taken": m.LeftoverTaken,
    "fault": m.Fault,
    "round_end": m.RoundEnd,
    "match_end": m.MatchEnd,
    "bye": m.Bye,
}
FROM_BOT: dict[str, type[BaseModel]] = {
    "ready": m.Ready,
    "play_reply": m.PlayReply,
    "give_reply": m.GiveReply,
    "leftover_reply": m.LeftoverReply,
}
PARTS: dict[str, type[BaseModel]] = {"rules": m.Rules}


def _schema(
    name: str, model: type[BaseModel], mode: Literal["validation", "serialization"]
) -> dict[str, Any]:
    body = model.model_json_schema(mode=mode)
    return {"$schema": DIALECT, "$id": f"{name}.json", **body}


def schema_documents() -> dict[str, str]:
    """Every file of ``protocol/schema/``: file name -> exact text to write."""
    docs: dict[str, dict[str, Any]] = {}
    for name, model in TO_BOT.items():
        docs[f"{name}.json"] = _schema(name, model, "serialization")
    for name, model in PARTS.items():
        docs[f"{name}.json"] = _schema(name, model, "serialization")
    for name, model in FROM_BOT.items():
        docs[f"{name}.json"] = _schema(name, model, "validation")
    docs["index.json"] = {
        "protocol": m.PROTOCOL_VERSION,
        "max_line_bytes": m.MAX_LINE_BYTES,
        "to_bot": {name: f"{name}.json" for name in TO_BOT},
        "from_bot": {name: f"{name}.json" for name in FROM_BOT},
        "parts": {name: f"{name}.json" for name in PARTS},
    }
    return {
        file: json.dumps(doc, indent=2, ensure_ascii=False) + "\n" for file, doc in docs.items()
    }


def main() -> int:
    """Rewrite ``protocol/schema/``, removing files no model produces any more."""
    SCHEMA_DIR.mkdir(exist_ok=True)
    docs = schema_documents()
    for stale in SCHEMA_DIR.glob("*.json"):
        if stale.name not in docs:
            stale.unlink()
    for file, text in docs.items():
        (SCHEMA_DIR / file).write_text(text, encoding="utf-8")
    print(f"wrote {len(docs)} files to {SCHEMA_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
