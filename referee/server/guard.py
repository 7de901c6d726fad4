"""TEMPORARY stub (not committed)."""

from __future__ import annotations

from typing import Any

import uvicorn


def guarded_config(
    app: Any,
    host: str,
    port: int,
    *,
    header_seconds: float,
    body_seconds: float,
    chunk_seconds: float,
    **kw: Any,
) -> uvicorn.Config:
    return uvicorn.Config(app, host=host, port=port, **kw)
