"""A sans-I/O ``text/event-stream`` decoder (WHATWG HTML, "Server-sent events").

Feed it bytes as they arrive, in chunks of any size; it returns the events completed so
far. No sockets, no asyncio: ``transport.py`` reads the response and feeds it here, as
httpcore feeds h11.

What it implements of the parsing rules: lines end with CRLF, LF or CR (a CR at the end of
a chunk waits for the next chunk, which may start with LF); a leading BOM is skipped;
``:`` lines are comments (keep-alives); ``field: value`` drops one space after the colon;
``data`` lines join with ``\\n``; a blank line dispatches the event, unless it has no data;
``event`` sets the type (default ``message``); ``id`` sets the last event id (kept across
events, as the spec's "last event ID buffer"; an id holding NUL is ignored) and ``retry``
(ASCII digits only) the reconnection delay in milliseconds. 2025-era sessions resume a
broken stream with them (``Last-Event-ID``, waiting ``retry`` first); 2026-07-28 streams
are not resumable and ignore both. One deliberate leniency: at end of stream
(``close``) an event that has data but lacks its final blank line is still returned, where
a browser would drop it: a client loses nothing by reading a final response that a sloppy
server forgot to terminate.

>>> decoder = SseDecoder()
>>> decoder.feed(b'data: {"a": 1}\\n')
[]
>>> decoder.feed(b"\\n: keep-alive\\n\\n")
[SseEvent(event='message', data='{"a": 1}', id=None)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_EOL: Final = re.compile(rb"\r\n|\r|\n")
#: A run of ``data:`` lines ending with LF, taken at once (``feed``): an event of many
#: short lines costs a regex match, not a Python call per line.
_DATA_RUN: Final = re.compile(rb"(?:data:[^\r\n]*\n)+")
_DATA_FIELD: Final = re.compile(rb"^data: ?", re.M)
_BOM: Final = b"\xef\xbb\xbf"
#: Longest line accepted (one ``data:`` line carries a whole JSON-RPC message).
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
#: Largest event accepted: the bytes of its ``data`` lines together (the spec sets no
#: limit; without one, a server sends an endless event of short lines).
MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
#: The longest reconnection delay a ``retry:`` field may ask for (ms): one day. A longer
#: one is clamped to it (a 5,000-digit value was a ValueError out of ``int()``).
MAX_RETRY_MS: Final = 86_400_000


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its type, its data lines joined with ``\\n``, its last id."""

    event: str
    data: str
    id: str | None = None


class SseError(ValueError):
    """The stream breaks a limit (``SseTooLarge``) or is not UTF-8."""


class SseTooLarge(SseError):
    """A line longer than ``max_line_bytes``, or an event whose data is larger than
    ``max_event_bytes``; ``limit`` is the limit broken."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class SseDecoder:
    """Turns ``text/event-stream`` bytes into ``SseEvent``s; see the module docstring."""

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES,
                 max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buffer = bytearray()
        #: How far the unfinished line at the buffer's start has been searched for an
        #: end of line: the next ``feed`` searches only the bytes after it, so a long
        #: line fed in many chunks costs linear, not quadratic, time.
        self._scanned = 0
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._event_bytes = 0
        self._started = False
        #: The event's ``data`` lines so far, each followed by LF, as bytes: a list of
        #: short strings would cost ~50 bytes of objects per line (an endless event of
        #: ``data: ab`` lines was ~6x ``max_event_bytes`` in memory).
        self._data = bytearray()
        self._has_data = False
        self._event = ""
        self._last_id: str | None = None
        #: The last ``retry`` field's value, in milliseconds (``None`` until one arrives).
        self.retry: int | None = None

    @property
    def pending(self) -> int:
        """Bytes held for what is not dispatched yet: the unfinished line and event."""
        return len(self._buffer) + len(self._data)

    @property
    def last_event_id(self) -> str | None:
        """The last ``id`` field seen (``None`` until one arrives)."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Add bytes; return every event they complete, in order."""
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []  # might still be a BOM: wait for more
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
            self._started = True
        events: list[SseEvent] = []
        start = 0
        buffer = self._buffer
        position = self._scanned  # the bytes before it hold no end of line
        while True:
            if position == start:  # at a line's start (not within one scanned before)
                run = _DATA_RUN.match(buffer, start)
                if run is not None:
                    self._data_lines(run.group())
                    start = position = run.end()
                    continue
            match = _EOL.search(buffer, position)
            if match is None:
                position = len(buffer)
                break
            if match.group() == b"\r" and match.end() == len(buffer):
                position = match.start()  # a CR ending the chunk may be the first half
                break                     # of CRLF: look at it again with the next bytes
            event = self._line(bytes(buffer[start : match.start()]))
            if event is not None:
                events.append(event)
            start = position = match.end()
        del buffer[:start]
        self._scanned = position - start
        if len(buffer) > self._max_line:
            raise SseTooLarge(f"event-stream line longer than {self._max_line} bytes",
                              limit=self._max_line)
        return events

    def close(self) -> list[SseEvent]:
        """End of stream: the last unterminated line and event, if they hold data."""
        events: list[SseEvent] = []
        if self._buffer:
            rest = bytes(self._buffer).rstrip(b"\r")
            self._buffer.clear()
            self._scanned = 0
            event = self._line(rest)
            if event is not None:
                events.append(event)
        if self._has_data:
            events.append(self._dispatch_pending())
        return events

    def _line(self, raw: bytes) -> SseEvent | None:
        if not raw:
            if not self._has_data:
                self._event = ""
                self._event_bytes = 0
                return None
            return self._dispatch_pending()
        if raw.startswith(b":"):
            return None  # comment, e.g. a keep-alive
        if raw.startswith(b"data"):
            field, separator, chunk = raw.partition(b":")
            if field == b"data":
                if separator and chunk.startswith(b" "):
                    chunk = chunk[1:]
                self._event_bytes += len(raw) + 1
                if self._event_bytes > self._max_event:
                    raise SseTooLarge(
                        f"event-stream event larger than {self._max_event} bytes",
                        limit=self._max_event)
                self._data += chunk
                self._data += b"\n"
                self._has_data = True
                return None
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SseError("event-stream is not UTF-8") from None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry = MAX_RETRY_MS if len(value) > 9 else min(int(value), MAX_RETRY_MS)
        # Unknown fields are ignored.
        return None

    def _data_lines(self, raw: bytes) -> None:
        """``data:`` lines, each ending with LF: their values join the event's data."""
        self._event_bytes += len(raw)
        if self._event_bytes > self._max_event:
            raise SseTooLarge(f"event-stream event larger than {self._max_event} bytes",
                              limit=self._max_event)
        self._data += _DATA_FIELD.sub(b"", raw)
        self._has_data = True

    def _dispatch_pending(self) -> SseEvent:
        self._data.pop()  # the last line's LF
        try:
            data = self._data.decode("utf-8")
        except UnicodeDecodeError:
            raise SseError("event-stream is not UTF-8") from None
        event = SseEvent(event=self._event or "message", data=data, id=self._last_id)
        self._data = bytearray()
        self._has_data = False
        self._event = ""
        self._event_bytes = 0
        return event


__all__ = ["MAX_EVENT_BYTES", "MAX_LINE_BYTES", "MAX_RETRY_MS", "SseDecoder", "SseError",
           "SseEvent", "SseTooLarge"]
