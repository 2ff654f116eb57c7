"""The sans-I/O event-stream decoder: fed whole, byte by byte, and with trailing data."""

from __future__ import annotations

import re
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.client import sse
from mcpcore.client.sse import SseDecoder, SseError, SseEvent, SseTooLarge


def decode(stream: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    return decoder.feed(stream) + decoder.close()


def decode_bytewise(stream: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for i in range(len(stream)):
        events += decoder.feed(stream[i : i + 1])
    return events + decoder.close()


M = "message"
CASES = [
    (b"data: x\n\n", [SseEvent(M, "x")]),
    (b"data:x\r\n\r\n", [SseEvent(M, "x")]),
    (b"data: x\r\rdata: y\r\r", [SseEvent(M, "x"), SseEvent(M, "y")]),
    (b"data: a\ndata: b\n\n", [SseEvent(M, "a\nb")]),
    (b"data:  two spaces\n\n", [SseEvent(M, " two spaces")]),
    (b": keep-alive\n\n: another\ndata: x\n\n", [SseEvent(M, "x")]),
    (b"\xef\xbb\xbfdata: bom\n\n", [SseEvent(M, "bom")]),
    (b"event: ping\ndata: 1\n\ndata: 2\n\n", [SseEvent("ping", "1"), SseEvent(M, "2")]),
    (b"id: 7\ndata: x\n\ndata: y\n\n", [SseEvent(M, "x", "7"), SseEvent(M, "y", "7")]),
    (b"retry: 10\nunknown: z\ndata\n\n", [SseEvent(M, "")]),
    (b"event: lonely\n\ndata: x\n\n", [SseEvent(M, "x")]),  # no data: no dispatch
    (b"\n\n\n", []),
    (b"data: {\"a\": \"\xc3\xa9\"}\n\n", [SseEvent(M, '{"a": "\u00e9"}')]),
    # End of stream without the final blank line: still delivered (deliberate leniency).
    (b"data: last", [SseEvent(M, "last")]),
    (b"data: last\n", [SseEvent(M, "last")]),
    (b"data: last\r", [SseEvent(M, "last")]),
]


@pytest.mark.parametrize("stream, events", CASES)
def test_whole_and_bytewise_agree(stream: bytes, events: list[SseEvent]) -> None:
    assert decode(stream) == events
    assert decode_bytewise(stream) == events


def test_cr_at_chunk_end_waits_for_a_possible_lf() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\n") == [SseEvent(M, "x")]


def test_events_before_trailing_partial_data() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: 1\n\ndata: 2") == [SseEvent(M, "1")]
    assert decoder.close() == [SseEvent(M, "2")]


def test_long_line_is_refused() -> None:
    decoder = SseDecoder(max_line_bytes=8)
    with pytest.raises(SseError):
        decoder.feed(b"data: 0123456789")


def test_a_retry_field_of_any_length_is_clamped() -> None:
    decoder = SseDecoder()
    decoder.feed(b"retry: 2500\n\n")
    assert decoder.retry == 2500
    decoder.feed(b"retry: " + b"9" * 5000 + b"\n\n")  # int() refuses > 4300 digits
    assert decoder.retry == sse.MAX_RETRY_MS
    decoder.feed(b"retry: 999999999\n\n")
    assert decoder.retry == sse.MAX_RETRY_MS


def test_invalid_utf8_is_refused() -> None:
    with pytest.raises(SseError):
        SseDecoder().feed(b"data: \xff\n\n")


lines = st.lists(st.sampled_from([
    b"data: a", b"data:b", b"data", b": c", b"event: e", b"id: 1", b"", b"\xef\xbb\xbf"]),
    max_size=12)
eols = st.sampled_from([b"\n", b"\r\n", b"\r"])


@given(lines, eols, st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_any_chunking_gives_the_same_events(parts: list[bytes], eol: bytes,
                                            cuts: list[int]) -> None:
    stream = b"".join(part + eol for part in parts)
    whole = decode(stream)
    decoder = SseDecoder()
    events: list[SseEvent] = []
    start = 0
    for cut in sorted({min(c, len(stream)) for c in cuts}):
        events += decoder.feed(stream[start:cut])
        start = cut
    events += decoder.feed(stream[start:]) + decoder.close()
    assert events == whole


class CountingEol:
    """A spy standing in for the decoder's end-of-line pattern: counts the bytes each
    search looks at (up to its match, or to the end of the buffer)."""

    def __init__(self) -> None:
        self.pattern = sse._EOL
        self.scanned = 0

    def search(self, buffer: bytearray, position: int = 0) -> re.Match[bytes] | None:
        match = self.pattern.search(buffer, position)
        self.scanned += (match.end() if match else len(buffer)) - position
        return match


@pytest.mark.parametrize("chunk", [1, 4096, 65536])
def test_a_long_line_is_searched_once_whatever_the_chunks(
        monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # The unfinished line is not searched again on each chunk: the work is linear in the
    # bytes fed (the old decoder searched ~n²/2·chunk bytes, 128 MiB for this 1 MiB line).
    spy = CountingEol()
    monkeypatch.setattr(sse, "_EOL", spy)
    decoder = SseDecoder()
    length = 20_000 if chunk == 1 else 1 << 20  # byte by byte: a shorter line
    stream = b"data: " + b"x" * length + b"\r\n\r\n" + b"data: y\r\rdata: z\n\n"
    events: list[SseEvent] = []
    for i in range(0, len(stream), chunk):
        events += decoder.feed(stream[i : i + chunk])
    assert [len(e.data) for e in events] == [length, 1, 1]
    assert spy.scanned <= 2 * len(stream)


def test_the_line_limit_is_reached_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = CountingEol()
    monkeypatch.setattr(sse, "_EOL", spy)
    decoder = SseDecoder(max_line_bytes=1 << 20)
    fed = 0
    with pytest.raises(SseTooLarge, match="line longer than 1048576 bytes") as caught:
        for _ in range(1000):
            decoder.feed(b"x" * 4096)
            fed += 4096
    assert caught.value.limit == 1 << 20
    assert fed <= (1 << 20) + 4096
    assert spy.scanned <= 2 * fed


def test_an_event_of_many_short_lines_is_refused_past_max_event_bytes() -> None:
    decoder = SseDecoder(max_event_bytes=10_000)
    line = b"data: " + b"x" * 994 + b"\n"  # 1000 bytes
    assert decoder.feed(line * 9 + b"\n")[0].data.count("\n") == 8  # 9,000 bytes: fine
    assert decoder.feed(line * 9 + b"\n")  # the count starts again with each event
    with pytest.raises(SseTooLarge, match="event larger than 10000 bytes"):
        decoder.feed(line * 11)


def test_the_default_event_limit_refuses_an_endless_event() -> None:
    # The default limit holds without configuration: 1 KiB lines, never a blank line.
    decoder = SseDecoder()
    block = (b"data: " + b"x" * 1018 + b"\n") * 64  # 64 KiB
    fed = 0
    with pytest.raises(SseTooLarge):
        for _ in range(2 * sse.MAX_EVENT_BYTES // len(block)):  # bounded, even if unlimited
            decoder.feed(block)
            fed += len(block)
    assert fed <= sse.MAX_EVENT_BYTES


def test_an_event_of_short_lines_costs_about_its_bytes_in_memory() -> None:
    # An endless event of "data: ab" lines: what the decoder holds until the event
    # limit must be about the lines' bytes, not a ~50-byte string object per line
    # (the 16 MiB default limit was ~100 MiB of memory that way).
    decoder = SseDecoder()
    block = b"data: ab\n" * 10_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):  # 9 MB fed, within the event limit: nothing dispatched
            assert decoder.feed(block) == []
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 100 * len(block)
    event, = decoder.feed(b"\n")
    assert event.data == "\n".join(["ab"] * 1_000_000)


def test_a_data_line_that_is_not_utf8_is_refused_and_a_comment_is_skipped() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b": \xff keep-alive\n\n") == []
    with pytest.raises(SseError, match="not UTF-8"):
        decoder.feed(b"data: \xff\xfe\n\n")


def test_a_run_of_data_lines_is_taken_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # An endless event of short lines costs the gateway a Python call per line no more
    # (16 MiB of "data: ab" lines took seconds of CPU): counted, not timed.
    calls = 0
    line = SseDecoder._line

    def counting(self: SseDecoder, raw: bytes) -> SseEvent | None:
        nonlocal calls
        calls += 1
        return line(self, raw)

    monkeypatch.setattr(SseDecoder, "_line", counting)
    decoder = SseDecoder()
    lines = [b"data: ab", b"data:cd", b"data:  ef", b"data:"] * 2_500
    events = decoder.feed(b"event: big\n" + b"\n".join(lines) + b"\n\n")
    assert calls <= 3  # the event line, the blank line
    assert events == [SseEvent("big", "\n".join(["ab", "cd", " ef", ""] * 2_500))]
