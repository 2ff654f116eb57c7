"""The one ``text/event-stream`` parser of the tests: sans-I/O, fed any chunking.

Follows the WHATWG HTML "Server-sent events" parsing rules our streams use: lines end
with LF (a CR before it is dropped), a blank line ends an event, ``data:`` lines join
with LF, lines starting with a colon are comments (keep-alives; counted), a ``retry``
field of digits is the reconnection time the server asks for (kept).
"""

from __future__ import annotations


class SseParser:
    """Feed ``text/event-stream`` bytes, get the ``data`` of each complete event."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self.comments = 0
        #: The last ``retry`` value (milliseconds), if the stream sent one.
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        out: list[str] = []
        while True:
            cut = self._buffer.find(b"\n")
            if cut == -1:
                return out
            line, self._buffer = self._buffer[:cut].rstrip(b"\r"), self._buffer[cut + 1:]
            if not line:
                if self._data:
                    out.append(b"\n".join(self._data).decode("utf-8"))
                    self._data = []
            elif line.startswith(b":"):
                self.comments += 1
            else:
                name, _, value = line.partition(b":")
                value = value[1:] if value.startswith(b" ") else value
                if name == b"data":
                    self._data.append(value)
                elif name == b"retry" and value.isdigit():
                    self.retry = int(value)

    @property
    def pending(self) -> bool:
        return bool(self._buffer or self._data)


__all__ = ["SseParser"]
