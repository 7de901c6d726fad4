"""The tournament's vocabulary: the value types every layer passes around, validated once.

This module is a leaf: it imports nothing of the referee, so the tournament file, the
scheduler, the executors, the match runner, the store, the ratings and the CLI can all use
the same types without importing each other.

* :class:`TimeControl`: the clock of a match, with its bounds (the tournament file's
  ``[time]``, the CLI's ``--move-ms``/``--bank-ms``/``--hello-ms``, ``hello``'s ``time``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TimeControl"]


def _wire_schema(schema: dict[str, Any]) -> None:
    """Its JSON Schema (``hello``'s ``time``): a later referee may add keys there."""
    schema.pop("additionalProperties", None)


class TimeControl(BaseModel):
    """The clock of a match in milliseconds: time per request, the match's bank, start-up.

    A reply later than move_ms plus what is left of the bank is a timeout.
    """

    # Unknown keys are refused where people write a time control (the tournament file).
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_serialization_defaults_required=True,
        json_schema_extra=_wire_schema,
    )

    move_ms: int = Field(
        default=1000, ge=1, le=3_600_000, description="time for each request before the bank"
    )
    bank_ms: int = Field(
        default=10_000, ge=0, le=36_000_000, description="extra time for the whole match"
    )
    hello_ms: int = Field(
        default=10_000, ge=1, le=3_600_000, description="time to start up and answer hello"
    )

    @classmethod
    def bounds(cls, name: str) -> tuple[int, int]:
        """The smallest and largest value of the field ``name`` (for the CLI's ranges)."""
        low = high = None
        for item in cls.model_fields[name].metadata:
            low = getattr(item, "ge", low)
            high = getattr(item, "le", high)
        assert low is not None and high is not None
        return low, high
