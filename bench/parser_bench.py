"""Reply parsing: the worst lines we could construct versus an ordinary reply, side by side.

Every reply passes through :func:`referee.protocol.messages.parse_reply` on the event loop, so one
slow line stalls every bot of the match (the old string-matching regular expression took
18 s on a 64 KiB line of escaped quotes). Each worst line is timed at 64 KiB and at
16 KiB: a linear parser takes about four times as long for the line four times as long,
a quadratic one sixteen times. ``tests/test_messages.py`` checks the verdict on each line.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from referee.errors import BotFault
from referee.protocol.messages import MAX_LINE_BYTES, MAX_NESTING, parse_reply

HEAD = b'{"id":7,"cards":[],"x":'


def _fill(head: bytes, unit: bytes, tail: bytes, size: int) -> bytes:
    """``head`` + ``unit`` repeated + ``tail``, as close to ``size`` bytes as units allow."""
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def _nested_at_limit(size: int) -> bytes:
    # The reply object is level 1 and the list "x" level 2.
    inner = b"[" * (MAX_NESTING - 2) + b"]" * (MAX_NESTING - 2) + b","
    return _fill(HEAD + b"[", inner, b"[]]}", size)


WORST_LINES: dict[str, Callable[[int], bytes]] = {
    "escaped quotes, unterminated, after brackets": lambda n: _fill(
        b"[" * 65 + b'"', b'\\"', b"", n
    ),
    "escaped quotes, unterminated": lambda n: _fill(HEAD + b'"', b'\\"', b"", n),
    "escaped quotes, closed": lambda n: _fill(HEAD + b'"', b'\\"', b'"}', n),
    "escaped backslashes then a quote": lambda n: _fill(HEAD + b'"', b"\\\\", b'"}', n),
    "opening brackets only": lambda n: b"[" * n,
    "opening braces only": lambda n: b"{" * n,
    "alternating [ and quote": lambda n: b'["' * (n // 2),
    "brackets inside one long string": lambda n: _fill(HEAD + b'"', b"[{", b'"}', n),
    "empty lists, flat": lambda n: _fill(HEAD + b"[", b"[],", b"[]]}", n),
    "nested to the limit, many times": _nested_at_limit,
    "one level past the limit at the end": lambda n: _fill(
        HEAD + b"[", b"[],", b"[" * 63 + b"]" * 63 + b"]}", n
    ),
    "a 64 KiB integer": lambda n: b"9" * n,
    "integers at the digit cap": lambda n: _fill(HEAD + b"[", b"9" * 4300 + b",", b"0]}", n),
    "a 64 KiB float": lambda n: _fill(HEAD + b"0.", b"1", b"}", n),
    "a 64 KiB exponent": lambda n: _fill(HEAD + b"1e", b"9", b"}", n),
    "a 64 KiB negative exponent": lambda n: _fill(HEAD + b"1e-", b"9", b"}", n),
    "floats, many": lambda n: _fill(HEAD + b"[", b"1.5,", b"0]}", n),
    "cards: all numbers": lambda n: _fill(b'{"id":7,"cards":[', b"1,", b"1]}", n),
    "cards: strings then a number last": lambda n: _fill(b'{"id":7,"cards":[', b'"7C",', b"1]}", n),
    "unicode escapes": lambda n: _fill(HEAD + b'"', b"\\u00e9", b'"}', n),
    "backslashes only, after brackets": lambda n: _fill(b"[" * 65, b"\\", b"", n),
}
"""Each worst line as a function of its length in bytes (at most the 64 KiB cap)."""

ORDINARY = {
    "hello reply": (b'{"id":1,"type":"ready","name":"my-bot","version":"1.2"}\n', "hello"),
    "play reply": (b'{"id":7,"cards":["8H","8D"]}\n', "play"),
}


def time_parse(line: bytes, kind: str = "play", repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds for one :func:`parse_reply` of ``line``, fault or not."""
    expected_id = 1 if kind == "hello" else 7
    number = max(1, 2000 // max(1, len(line) // 64))  # about 2 MB parsed per sample
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            with contextlib.suppress(BotFault):
                parse_reply(line, expected_id, kind)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def run() -> dict[str, float]:
    print("parser: parse_reply per line, best of 5 (µs); x = times an ordinary play reply")
    ordinary = {name: time_parse(line, kind) for name, (line, kind) in ORDINARY.items()}
    base = ordinary["play reply"]
    for name, secs in ordinary.items():
        print(f"  {name:46s} {secs * 1e6:9.2f} µs")
    print(f"  {'worst lines':46s} {'64 KiB':>9s}    {'x':>6s}  {'16 KiB':>9s}  64/16")
    worst = 0.0
    for name, make in WORST_LINES.items():
        full = time_parse(make(MAX_LINE_BYTES))
        quarter = time_parse(make(MAX_LINE_BYTES // 4))
        worst = max(worst, full)
        print(
            f"  {name:46s} {full * 1e6:9.0f} µs {full / base:6.0f}  {quarter * 1e6:9.0f}"
            f"  {full / quarter:5.1f}"
        )
    print(f"  worst case {worst * 1e3:.2f} ms per 64 KiB line (linear: 64/16 near 4, not 16)")
    return {"ordinary_us": base * 1e6, "worst_ms": worst * 1e3}


if __name__ == "__main__":
    run()
