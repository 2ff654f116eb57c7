"""A small closed-loop HTTP/1.1 load generator for ``tools/call echo``.

N keep-alive connections, each an ``asyncio.Protocol`` on a raw socket that sends one
pre-built request, waits for the whole response, checks it, and sends the next one,
back to back: a warm-up first, then a measured window of fixed length. The per-request
client cost is a few bytes operations plus one msgspec decode, so the server (pinned to
its own core) is the bottleneck, not the client.

A response counts as an error unless it is HTTP 200 with a JSON-RPC body whose
``result.content[0].text`` is the echoed text and whose ``id`` is the request's. Bodies
are framed by Content-Length or chunked transfer coding; SSE (``text/event-stream``)
bodies are accepted if their last ``data:`` line carries such a response.

    python bench/loadgen.py --port 8000 --duration 10 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

PROTOCOL_VERSION = "2026-07-28"
TEXT = "hello"
_SENTENCE = "The quick brown fox, tired of jumping, sat down by the \"lazy\" dog.\n"


def text_of(size: int) -> str:
    """The echoed text: ``"hello"``, or ``size`` bytes of prose (commas, quotes, newlines:
    what real arguments hold, and what JSON must escape)."""
    if size <= 0:
        return TEXT
    return (_SENTENCE * (size // len(_SENTENCE) + 1))[:size]


def make_body(text: str = TEXT) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "echo",
                "arguments": {"text": text},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                },
            },
        },
        separators=(",", ":"),
    ).encode()


BODY = make_body()

#: Hard bounds so that no loop can run away.
MAX_RECONNECTS_PER_CONNECTION = 50
MAX_RESPONSE_BYTES = 4 << 20
DRAIN_TIMEOUT_S = 5.0


def build_request(host: str, port: int, path: str = "/mcp", body: bytes = BODY,
                  extra_headers: dict[str, str] | None = None) -> bytes:
    """The exact request bytes every connection sends, built once."""
    headers = {
        "Host": f"{host}:{port}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "echo",
        "Content-Length": str(len(body)),
    }
    headers.update(extra_headers or {})
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode("latin-1") + b"\r\n" + body


class _Reply(msgspec.Struct):
    id: Any = None
    result: Any = None


_reply_decoder = msgspec.json.Decoder(_Reply)


def check_reply(status: int, content_type: str, body: bytes, text: str = TEXT) -> bool:
    """Is this a correct answer to our ``tools/call echo``?"""
    if status != 200:
        return False
    if content_type.startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.split(b"\n") if line.startswith(b"data:")]
        if not data:
            return False
        body = data[-1]
    try:
        reply = _reply_decoder.decode(body)
        return bool(reply.id == 1 and reply.result["content"][0]["text"] == text)
    except (msgspec.DecodeError, KeyError, IndexError, TypeError):
        return False


def _parse_chunked(buf: bytearray, pos: int) -> tuple[bytes, int] | None:
    """Decode a complete chunked body starting at ``pos``: (body, end) or None if partial."""
    out = bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol == -1:
            return None
        size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip(), 16)
        pos = eol + 2
        if size == 0:
            # Optional trailers, then an empty line.
            end = buf.find(b"\r\n\r\n", pos - 2)
            return (bytes(out), end + 4) if end != -1 else None
        if len(buf) < pos + size + 2:
            return None
        out += buf[pos:pos + size]
        pos += size + 2


@dataclass
class Stats:
    """What one run measured. Latencies are in nanoseconds."""

    latencies: list[int] = field(default_factory=list)
    errors: int = 0
    warmup_requests: int = 0
    warmup_errors: int = 0
    connection_failures: int = 0
    first_error: str | None = None
    duration_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        n = len(lat)

        def pct(p: float) -> float:
            return lat[min(n - 1, int(p * n))] / 1e6 if n else float("nan")

        return {
            "requests": n,
            "errors": self.errors,
            "duration_s": round(self.duration_s, 3),
            "rps": n / self.duration_s if self.duration_s else 0.0,
            "p50_ms": pct(0.50),
            "p90_ms": pct(0.90),
            "p99_ms": pct(0.99),
            "max_ms": lat[-1] / 1e6 if n else float("nan"),
            "warmup_requests": self.warmup_requests,
            "warmup_errors": self.warmup_errors,
            "connection_failures": self.connection_failures,
            "first_error": self.first_error,
        }


class _Run:
    """Shared state: the phase decides whether a completed request is recorded."""

    WARMUP, MEASURE, DRAIN = 0, 1, 2

    def __init__(self, request: bytes, text: str = TEXT,
                 check: Callable[[int, str, bytes], bool] | None = None) -> None:
        self.request = request
        self.text = text
        #: Is this (status, content type, body) a correct reply? Default: the echo's.
        self.check = check or (lambda status, ctype, body: check_reply(status, ctype, body,
                                                                       text))
        self.phase = self.WARMUP
        self.stats = Stats()

    def record(self, started: int, ok: bool, why: str) -> None:
        if self.phase == self.MEASURE:
            if ok:
                self.stats.latencies.append(time.perf_counter_ns() - started)
            else:
                self.stats.errors += 1
        elif self.phase == self.WARMUP:
            self.stats.warmup_requests += 1
            if not ok:
                self.stats.warmup_errors += 1
        if not ok and self.stats.first_error is None:
            self.stats.first_error = why


class _Connection(asyncio.Protocol):
    """One keep-alive connection sending requests back to back."""

    def __init__(self, run: _Run, done: asyncio.Future[str]) -> None:
        self.run = run
        self.done = done
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.started = 0
        self._reset()

    def _reset(self) -> None:
        self.head_end = -1
        self.status = 0
        self.ctype = ""
        self.length = -1
        self.chunked = False
        self.close_after = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but behave as one.
        self.transport = cast(asyncio.Transport, transport)
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        if self.run.phase == _Run.DRAIN:
            self._finish("drained")
            return
        self.started = time.perf_counter_ns()
        self.transport.write(self.run.request)

    def _finish(self, why: str) -> None:
        if self.transport is not None:
            self.transport.close()
        if not self.done.done():
            self.done.set_result(why)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            if self.run.phase != _Run.DRAIN:
                self.run.record(self.started, False, f"connection lost: {exc!r}")
            self.done.set_result("lost")

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > MAX_RESPONSE_BYTES:
            self.run.record(self.started, False, "response too large")
            self._finish("too large")
            return
        while self.buf:
            if self.head_end < 0 and not self._parse_head():
                return
            body_start = self.head_end + 4
            if self.chunked:
                parsed = _parse_chunked(self.buf, body_start)
                if parsed is None:
                    return
                body, end = parsed
            elif self.length >= 0:
                end = body_start + self.length
                if len(self.buf) < end:
                    return
                body = bytes(self.buf[body_start:end])
            else:  # no framing: body runs to connection close; we do not bench that
                self.run.record(self.started, False, "response without length")
                self._finish("unframed")
                return
            del self.buf[:end]
            ok = self.run.check(self.status, self.ctype, body)
            self.run.record(self.started, ok,
                            f"HTTP {self.status} {self.ctype}: {body[:300]!r}")
            close = self.close_after
            self._reset()
            if close:
                self._finish("server closed")
                return
            self._send()

    def _parse_head(self) -> bool:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(self.buf[:end]).split(b"\r\n")
        self.status = int(lines[0].split(b" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                self.length = int(value)
            elif key == b"transfer-encoding":
                self.chunked = b"chunked" in value.lower()
            elif key == b"content-type":
                self.ctype = value.strip().decode("latin-1").lower()
            elif key == b"connection" and value.strip().lower() == b"close":
                self.close_after = True
        self.head_end = end
        return True


async def _connection_loop(run: _Run, host: str, port: int, deadline: float) -> None:
    loop = asyncio.get_running_loop()
    for _ in range(MAX_RECONNECTS_PER_CONNECTION):
        if run.phase == _Run.DRAIN or time.monotonic() > deadline:
            return
        done: asyncio.Future[str] = loop.create_future()
        try:
            await loop.create_connection(lambda d=done: _Connection(run, d), host, port)
        except OSError as exc:
            run.stats.connection_failures += 1
            if run.stats.first_error is None:
                run.stats.first_error = f"connect failed: {exc!r}"
            await asyncio.sleep(0.05)
            continue
        why = await done
        if why in ("drained", "too large", "unframed"):
            return


async def run_load(
    host: str,
    port: int,
    *,
    concurrency: int = 32,
    duration: float = 10.0,
    warmup: float = 2.0,
    request: bytes | None = None,
    text: str = TEXT,
    on_measure_start: Callable[[], None] | None = None,
    on_measure_end: Callable[[], None] | None = None,
    check: Callable[[int, str, bytes], bool] | None = None,
) -> Stats:
    """Warm up, then measure for ``duration`` seconds; returns the measured ``Stats``.

    The callbacks run exactly at the window's edges (the caller reads server CPU there).
    """
    run = _Run(request if request is not None else build_request(host, port), text, check)
    deadline = time.monotonic() + warmup + duration + DRAIN_TIMEOUT_S + 5.0
    tasks = [asyncio.ensure_future(_connection_loop(run, host, port, deadline))
             for _ in range(concurrency)]
    try:
        await asyncio.sleep(warmup)
        if on_measure_start is not None:
            on_measure_start()
        run.phase = _Run.MEASURE
        t0 = time.perf_counter()
        await asyncio.sleep(duration)
        run.phase = _Run.DRAIN
        run.stats.duration_s = time.perf_counter() - t0
        if on_measure_end is not None:
            on_measure_end()
        await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT_S)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
    return run.stats


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when available: a cheaper client loop leaves more headroom for the server."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def close_event_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the app left running (e.g. a watchdog task), then close ``loop``:
    as ``asyncio.run`` does, so no "Task was destroyed" warning is printed."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    args = parser.parse_args()
    if not args.host.startswith("127."):
        parser.error("loopback only")
    loop = new_event_loop()
    try:
        stats = loop.run_until_complete(run_load(
            args.host, args.port, concurrency=args.concurrency, duration=args.duration,
            warmup=args.warmup, request=build_request(args.host, args.port, args.path)))
    finally:
        loop.close()
    print(json.dumps(stats.summary(), indent=2))


if __name__ == "__main__":
    main()
