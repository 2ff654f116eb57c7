"""An MCP server that misbehaves on purpose, for the gateway's fault test
(tests/gateway/test_upstream_faults.py). Three ways to run it:

    python -m tests.gateway.misbehaving --port 8000    # HTTP (uvicorn): the faults below
    python -m tests.gateway.misbehaving --stdio        # stdio: ``ok`` and ``sleep``
    python -m tests.gateway.misbehaving flap --port 8000 --to 8001 --period 1
                                                       # a TCP proxy that goes up and down

Its tools are real (listed like any server's), and ``ok`` and ``sleep`` answer like any
tool. Over HTTP, a ``tools/call`` of one of the others (recognised by the request's
``Mcp-Name`` header) is answered by ``Misbehaving`` instead, at the HTTP level:

- ``hang``: reads the request and never answers;
- ``slow``: a valid JSON-RPC response, one byte a second;
- ``huge``: a 200 ``application/json`` body of 100 MB (streamed in 1 MiB chunks);
- ``amplify``: a valid response of ~15 MiB made of tiny JSON objects (``{"a":1}``):
  small on the wire, hundreds of MiB once decoded into Python objects;
- ``endless``: an event stream of log and progress notifications that never ends and
  never carries the response;
- ``endless_event``: an event stream of one event whose short ``data:`` lines never end;
- ``garbage``: 64 KiB of random bytes as ``application/json``;
- ``garbage_sse``: an event stream that is not UTF-8.

``flap``: a loopback TCP proxy to ``--to`` that is up for ``--period`` seconds (it
forwards), then down for as long (its port refuses connections and every open one is
reset), and so on: an upstream that flaps, as a network or a crash-looping server does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import struct
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from mcpcore import Server, StreamableHTTP
from mcpcore.transports.asgi import Receive, Scope, Send

server = Server("misbehaving", "1.0.0")

MiB = 1024 * 1024
#: What ``huge`` sends, in all.
HUGE_BYTES = 100 * MiB
#: About what ``amplify`` sends (below the gateway's 16 MiB response limit).
AMPLIFY_BYTES = 15 * MiB


@server.tool(annotations={"readOnlyHint": True})
def ok(text: str) -> str:
    """Echo the text back (this upstream's healthy tool)."""
    return text


@server.tool(annotations={"readOnlyHint": True})
async def sleep(seconds: float) -> str:
    """Answer after ``seconds`` (a call that is still running when the process dies)."""
    await asyncio.sleep(seconds)
    return "slept"


def _declare(name: str, doc: str) -> None:
    async def fault() -> str:  # never runs over HTTP: Misbehaving answers first
        return f"{name} is a fault only over HTTP"

    fault.__name__ = name
    fault.__doc__ = doc
    server.tool(annotations={"readOnlyHint": True})(fault)


for _name, _doc in [("hang", "Never answers."), ("slow", "Answers one byte a second."),
                    ("huge", "Answers 100 MB."), ("amplify", "Answers 15 MiB of tiny objects."),
                    ("endless", "An endless event stream of notifications."),
                    ("endless_event", "One endless event."),
                    ("garbage", "Answers random bytes."),
                    ("garbage_sse", "An event stream that is not UTF-8.")]:
    _declare(_name, _doc)


# -- the faults, at the HTTP level --------------------------------------------------------
#: A fault: the request's id, an event set once the gateway hangs up (uvicorn drops
#: what is sent after that without a word, so the loops watch it), and ``send``.
Fault = Callable[[Any, asyncio.Event, Send], Awaitable[None]]


async def _start(send: Send, media_type: bytes) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", media_type)]})


async def _chunk(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


def _response(request_id: Any, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
        "content": [{"type": "text", "text": text}], "resultType": "complete"}}).encode()


async def _watch(receive: Receive, gone: asyncio.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def hang(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await gone.wait()


async def slow(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"application/json")
    for byte in _response(request_id, "finally"):
        if gone.is_set():
            return
        await _chunk(send, bytes([byte]))
        await asyncio.sleep(1.0)
    await send({"type": "http.response.body", "body": b""})


async def huge(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"application/json")
    head = json.dumps({"jsonrpc": "2.0", "id": request_id}).encode()[:-1]
    await _chunk(send, head + b', "result": {"content": [{"type": "text", "text": "')
    block = b"x" * MiB
    for _ in range(HUGE_BYTES // MiB):
        if gone.is_set():
            return
        await _chunk(send, block)
        await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b'"}], "resultType": "complete"}}'})


async def amplify(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"application/json")
    head = json.dumps({"jsonrpc": "2.0", "id": request_id}).encode()[:-1]
    await _chunk(send, head + b', "result": {"resultType": "complete", "content": [')
    block = b'{"a":1},' * (MiB // 8)
    for _ in range(AMPLIFY_BYTES // len(block)):
        if gone.is_set():
            return
        await _chunk(send, block)
        await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b'{"a":1}]}}'})


async def endless(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"text/event-stream")
    n = 0
    while not gone.is_set():
        n += 1
        log = {"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "info", "data": "x" * 200}}
        progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "p", "progress": n}}
        await _chunk(send, b"data: " + json.dumps(log).encode() + b"\n\n"
                     + b"data: " + json.dumps(progress).encode() + b"\n\n")
        await asyncio.sleep(0)


async def endless_event(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"text/event-stream")
    lines = b"data: ab\n" * 8192
    while not gone.is_set():
        await _chunk(send, lines)
        await asyncio.sleep(0)


async def garbage(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"application/json")
    await send({"type": "http.response.body", "body": os.urandom(64 * 1024)})


async def garbage_sse(request_id: Any, gone: asyncio.Event, send: Send) -> None:
    await _start(send, b"text/event-stream")
    await send({"type": "http.response.body", "body": b"data: \xff\xfe\xfd\n\n"})


FAULTS: dict[str, Fault] = {fault.__name__: fault for fault in (
    hang, slow, huge, amplify, endless, endless_event, garbage, garbage_sse)}


class Misbehaving:
    """The server's Streamable HTTP app, except for the faults' ``tools/call``s."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            fault = FAULTS.get(headers.get(b"mcp-name", b"").decode())
            if fault is not None and headers.get(b"mcp-method") == b"tools/call":
                body = b""
                while True:
                    message = await receive()
                    body += message.get("body", b"")
                    if not message.get("more_body"):
                        break
                gone = asyncio.Event()
                watcher = asyncio.create_task(_watch(receive, gone))
                try:
                    with contextlib.suppress(Exception):  # the gateway hung up: fine
                        await fault(json.loads(body).get("id"), gone, send)
                finally:
                    watcher.cancel()
                return
        await self.app(scope, receive, send)


app = Misbehaving(StreamableHTTP(server))


# -- flap: a proxy that goes up and down --------------------------------------------------
async def flap(port: int, target: int, period: float) -> None:
    """Forward 127.0.0.1:``port`` to 127.0.0.1:``target`` for ``period`` seconds, then
    refuse and reset for ``period`` seconds, forever."""
    open_sockets: set[asyncio.StreamWriter] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            writer.close()
            return
        open_sockets.update((writer, up_writer))
        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            open_sockets.difference_update((writer, up_writer))

    while True:
        listener = await asyncio.start_server(handle, "127.0.0.1", port, reuse_address=True)
        await asyncio.sleep(period)
        listener.close()
        for writer in list(open_sockets):  # reset, as a crashed peer's kernel does
            sock = writer.get_extra_info("socket")
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        open_sockets.clear()
        await asyncio.sleep(period)


def main(argv: list[str]) -> None:
    if argv[:1] == ["flap"]:
        parser = argparse.ArgumentParser(prog="misbehaving flap")
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--to", type=int, required=True)
        parser.add_argument("--period", type=float, default=1.0)
        args = parser.parse_args(argv[1:])
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(flap(args.port, args.to, args.period))
        return
    from mcpcore.cli import serve

    serve(server, app, argv, description=__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
