"""Pydantic's validation errors in the referee's own words, for files people write.

Pydantic says "List should have at least 3 items after validation" and "Input should be a
valid dictionary or instance of TimeControl"; a person who wrote a TOML file needs "at least
3 bots are needed, the file lists 2" and "use a table: [time] with its keys".
:func:`describe` words one error (its ``type``, location, input and ``ctx``, as
``ValidationError.errors()`` gives them) for every type a TOML file can cause:

* ``missing``; ``literal_error`` (the values allowed);
* ``too_short`` / ``too_long`` (lists), ``string_too_short`` / ``string_too_long``;
* ``greater_than[_equal]`` / ``less_than[_equal]``: the whole range when the caller knows
  the field's bounds (:func:`bounds_text`), else the bound broken;
* ``int_from_float``, and every ``<type>_type`` / ``<type>_parsing`` error of ``int``,
  ``float``, ``bool``, ``string``, ``list``, ``tuple``, ``dict`` and models: what was
  written, in TOML's terms, and what is wanted.

Anything else names the value and says it is not allowed, with no pydantic text. The
tournament file (:func:`referee.tournament.model.explain`) and the rules table
(:mod:`referee.rules.ruleset`) both word their errors here; this module imports nothing
of the referee, so the pure game may use it.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

__all__ = ["bounds_text", "describe", "shown", "toml_type"]

_WANTED = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": 'text in quotes ("...")',
    "list": "a list ([...])",
    "tuple": "a list ([...])",
    "set": "a list ([...])",
    "dict": "a table ({ key = value, ... })",
    "model": "a table ({ key = value, ... })",
}
"""What each pydantic type family wants, in TOML's terms (the error type's first word)."""

_NUMBER_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")
_BOUNDS = (("ge", True, True), ("gt", False, True), ("le", True, False), ("lt", False, False))
"""Each bound's name, whether it is included, and whether it is the low end."""


def describe(
    kind: str,
    given: Any,
    ctx: dict[str, Any] | None = None,
    *,
    noun: str = "entries",
    table: str | None = None,
    bounds: str | None = None,
) -> str:
    """What is wrong with one value, in the referee's words (see the module).

    ``noun`` names a list's entries (``"bots"``), ``table`` the section a table belongs in
    (``"time"``: "use a table: [time] with its keys"), ``bounds`` a number's whole range.
    """
    ctx = ctx or {}
    if kind == "missing":
        return "required, and missing"
    if kind == "literal_error":
        return f"got {shown(given)}; allowed: {ctx.get('expected', '?')}"
    if kind == "too_short":
        return (
            f"at least {ctx.get('min_length')} {noun} are needed, the file lists "
            f"{ctx.get('actual_length')}"
        )
    if kind == "too_long":
        return (
            f"at most {ctx.get('max_length')} {noun} are allowed, the file lists "
            f"{ctx.get('actual_length')}"
        )
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return "empty; write a value between the quotes"
        return f"got {shown(given)}; at least {ctx.get('min_length')} characters are needed"
    if kind == "string_too_long":
        size = len(given) if isinstance(given, str) else "too many"
        return f"{size} characters; at most {ctx.get('max_length')} are allowed"
    if kind in _NUMBER_ERRORS:
        return f"got {shown(given)}; allowed: {bounds or bounds_text(ctx_bounds(ctx))}"
    if kind == "int_from_float":
        return f"got {shown(given)}; use a whole number"
    family = kind.split("_", 1)[0]
    if family in _WANTED:
        want = _WANTED[family]
        if family in ("model", "dict") and table:
            want = f"a table: [{table}] with its keys, or {{ key = value, ... }}"
        return f"got {shown(given)} ({toml_type(given)}); use {want}"
    return f"got {shown(given)}, which is not allowed here"


def ctx_bounds(ctx: dict[str, Any]) -> list[tuple[str, Any]]:
    """The bounds an error's ``ctx`` names (``ge``, ``gt``, ``le``, ``lt``)."""
    return [(name, ctx[name]) for name, _, _ in _BOUNDS if name in ctx]


def bounds_text(bounds: Sequence[tuple[str, Any]]) -> str:
    """A range in words from ``(name, value)`` bounds: ``3 to 6``, ``above 0.5 and below
    1``, ``0 up to, not including, 1``, ``at least 100``."""
    low: tuple[Any, bool] | None = None  # (value, included)
    high: tuple[Any, bool] | None = None
    for name, value in bounds:
        _, included, is_low = next(b for b in _BOUNDS if b[0] == name)
        if is_low:
            low = (value, included)
        else:
            high = (value, included)
    if low is not None and high is not None:
        (a, a_in), (b, b_in) = low, high
        if a_in and b_in:
            return f"{_num(a)} to {_num(b)}"
        if a_in:
            return f"{_num(a)} up to, not including, {_num(b)}"
        if b_in:
            return f"above {_num(a)}, up to {_num(b)}"
        return f"above {_num(a)} and below {_num(b)}"
    if low is not None:
        return f"at least {_num(low[0])}" if low[1] else f"above {_num(low[0])}"
    if high is not None:
        return f"at most {_num(high[0])}" if high[1] else f"below {_num(high[0])}"
    return "a number within its bounds"


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def toml_type(value: Any) -> str:
    """What ``value`` was written as, in TOML's words."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.date | datetime.time):
        return "a date or time"
    return "a value of another kind"


def shown(value: Any) -> str:
    """A value for a message: short, and as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "…'"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}"
    return str(value)
