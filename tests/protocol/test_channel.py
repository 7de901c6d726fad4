"""The channel frames a bot's output the same whether its reader hands bytes over directly
(:class:`~referee.sandbox.base.DirectReader`, what the backends give) or is read by a task
(any other :class:`asyncio.StreamReader`): lines, markers, unasked lines, floods, stderr.

Generated streams cut anywhere, with requests awaiting replies at generated moments, go
through both; everything the channel then holds must be equal.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.protocol.channel import EOF, LINE_CAP, OVERLONG, UNASKED_CAP, LineChannel
from referee.protocol.kit import KIT_MARKER
from referee.sandbox.base import DirectReader
from referee.testing import FakeBotProcess, spec

Step = tuple[str, bytes]

LINES = st.one_of(
    st.sampled_from([b'{"id":1,"cards":["7C"]}', b"", b"  ", b"\xff\xfe", b"{}"]),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"x" * LINE_CAP, b"x" * (LINE_CAP + 1), b"x" * LINE_CAP + b"\r"]),
    st.just(KIT_MARKER + b'{"id":3,"kind":"play","decided":null,"sent":[],"why":"raised"}'),
)


@st.composite
def scripts(draw: Any) -> list[Step]:
    """Lines (each maybe with a ``\\r``), the stream cut at generated points, requests
    expected before generated chunks, on stdout or stderr."""
    lines = draw(st.lists(LINES, max_size=UNASKED_CAP + 4))
    ends = draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=len(lines)))
    data = b"".join(line + end for line, end in zip(lines, ends, strict=False))
    data += draw(st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"")))  # unended
    cuts = sorted(draw(st.sets(st.integers(0, len(data)), max_size=12)) | {0, len(data)})
    steps: list[Step] = []
    for start, end in itertools.pairwise(cuts):
        if draw(st.booleans()):
            steps.append(("expect", b""))
        steps.append((draw(st.sampled_from(["stdout", "stdout", "stderr"])), data[start:end]))
    return steps


def _run(steps: list[Step], direct: bool) -> dict[str, Any]:
    """Play ``steps`` into a channel whose readers are direct or not; what it holds."""

    async def go() -> dict[str, Any]:
        kind = DirectReader if direct else asyncio.StreamReader
        proc = FakeBotProcess(spec("x"), lambda msg: None)
        proc.stdout, proc.stderr = kind(), kind()
        channel = LineChannel(proc)
        for what, data in steps:
            if what == "expect":
                channel.expect()
            else:
                getattr(proc, what).feed_data(data)
            for _ in range(3):  # the reading task's turns (a direct reader needs none)
                await asyncio.sleep(0)
        proc.stdout.feed_eof()
        proc.stderr.feed_eof()
        for _ in range(3):
            await asyncio.sleep(0)
        items: list[Any] = []
        while not items or items[-1] is not EOF:  # the end of stdout comes last
            item = await channel.read()
            items.append(item[0] if isinstance(item, tuple) else item)
        held = {
            "items": items,
            "unasked": channel.unasked,
            "unasked_line": channel.unasked_line,
            "unasked_lines": channel.unasked_lines,
            "stderr": channel.stderr_kept(),
            "kit": (channel.kit_replaced, channel.kit_notes),
        }
        await channel.close()
        return held

    return asyncio.run(go())


@settings(max_examples=150, deadline=None)
@given(scripts())
def test_a_direct_reader_frames_as_a_read_one(steps: list[Step]) -> None:
    assert _run(steps, direct=True) == _run(steps, direct=False)


def test_the_cases_the_generator_is_for_are_framed() -> None:
    """Spelled out: a reply, an unasked line, a flood past the cap, an overlong line."""
    steps: list[Step] = [
        ("expect", b""),
        ("stdout", b'{"id":1,'),
        ("stdout", b'"cards":[]}\r\nlater\n'),
        ("stderr", KIT_MARKER + b"{}\nthinking\n"),
    ]
    for direct in (True, False):
        held = _run(steps, direct)
        assert held["items"] == [b'{"id":1,"cards":[]}\r', EOF]
        assert (held["unasked"], held["unasked_line"]) == (1, b"later")
        assert held["kit"][0] == 1 and held["stderr"].pieces[0][1].endswith(b"thinking\n")
        flood = _run([("stdout", b"x\n" * (UNASKED_CAP + 5))], direct)
        assert flood["unasked"] == UNASKED_CAP + 5 and len(flood["unasked_lines"]) == UNASKED_CAP
        long = _run([("expect", b""), ("stdout", b"y" * (LINE_CAP + 2))], direct)
        assert long["items"] == [OVERLONG, EOF]


def test_bytes_buffered_before_the_divert_come_first() -> None:
    """A bot may write before its channel is made (a line nobody asked for): those bytes
    wait in the reader's buffer and are framed before any that come after."""

    async def go() -> tuple[int, bytes | None, list[bytes]]:
        proc = FakeBotProcess(spec("x"), lambda msg: None)
        proc.stdout.feed_data(b"early\nhalf")
        channel = LineChannel(proc)
        proc.stdout.feed_data(b" a line\n")  # before the channel's reader ran: buffered
        await asyncio.sleep(0)
        proc.stdout.feed_data(b"late\n")  # diverted
        held = channel.unasked, channel.unasked_line, list(channel.unasked_lines)
        await channel.close()
        return held

    assert asyncio.run(go()) == (3, b"early", [b"early", b"half a line", b"late"])


def test_a_diverted_reader_hands_chunks_over_and_still_ends() -> None:
    async def go() -> tuple[list[bytes], bytes]:
        reader = DirectReader()
        reader.feed_data(b"ab")
        taken: list[bytes] = []
        reader.divert(taken.append)
        reader.feed_data(b"cd")
        reader.feed_data(b"")
        reader.feed_eof()
        return taken, await reader.read()

    assert asyncio.run(go()) == ([b"ab", b"cd"], b"")
