"""A recording HTTP upstream on loopback, for the audit's canaries.

Two uses: the ``jku``/``x5u`` check points a token at ``http://<recorder>/jwks.json`` and
then asks whether anything fetched it (a server that follows key URLs from tokens is an
SSRF and forged-key hole, RFC 8725 §3.10); the token-passthrough canary has the server
under test call the recorder as its "upstream API" and then looks for the caller's token
in what arrived (server/authorization: Token Handling — no passthrough).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def text(self) -> str:
        head = "\n".join(f"{k}: {v}" for k, v in self.headers.items())
        return f"{self.method} {self.path}\n{head}\n\n{self.body.decode('utf-8', 'replace')}"


@dataclass
class Recorder:
    """``async with Recorder(port=0) as rec: ... rec.url ... rec.requests``."""

    host: str = "127.0.0.1"
    port: int = 0
    jwks: dict[str, Any] | None = None
    #: path → JSON document served there (an authorization server's metadata, say)
    documents: dict[str, Any] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> Recorder:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            lines = head.decode("latin-1").split("\r\n")
            method, path = ([*lines[0].split(" "), "", ""])[:2]
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            body = await asyncio.wait_for(reader.readexactly(min(length, 1 << 20)), 10)
            self.requests.append(Recorded(method, path, headers, body))
            document = self.documents.get(path.split("?", 1)[0])
            if document is None:
                document = self.jwks if path.endswith("jwks.json") and self.jwks else {"ok": True}
            payload = json.dumps(document).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(payload)}\r\n".encode()
                         + b"Connection: close\r\n\r\n" + payload)
            await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ValueError, OSError):
            pass
        finally:
            writer.close()


__all__ = ["Recorded", "Recorder"]
