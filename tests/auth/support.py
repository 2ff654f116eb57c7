"""Real doubles for the auth tests: loopback HTTP servers (uvicorn in a thread on
127.0.0.1, a free port), the local authorization server with RS256/ES256/EdDSA keys,
and a recording inner app that tells whether any handler ran."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import uvicorn

from mcpcore.asgi_types import ASGIApp, Receive, Scope, Send
from mcpcore.auth.config import IssuerConfig, JwksSettings, ResourceServerConfig
from mcpcore.auth.issuer.authorization_server import (
    LocalAuthorizationServer,
    RegisteredClient,
    SigningKey,
)
from mcpcore.auth.urls import NetworkPolicy
from mcpcore.principal import PRINCIPAL_SCOPE_KEY

RESOURCE = "http://127.0.0.1:8765/mcp"
UPSTREAM = "http://127.0.0.1:8766/api"
MCP_CLIENT_ID = "mcp-server"
MCP_CLIENT_SECRET = "mcp-server-secret-8c1f2e9d"


class LoopbackServer:
    """Serve an ASGI app with uvicorn in a thread on 127.0.0.1 and a free port.

    The app factory receives the base URL, so an issuer can name its own port.
    """

    def __init__(self, factory: Callable[[str], ASGIApp], *, lifespan: str = "off") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = factory(self.url)
        config = uvicorn.Config(
            self.app, lifespan=lifespan, loop="uvloop", log_level="warning", access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("loopback server did not start")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@dataclass
class Recorder:
    """Inner ASGI app: records each call (principal and body) and answers 200."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.calls.append({"principal": scope.get(PRINCIPAL_SCOPE_KEY), "body": body})
        payload = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "result": {}})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": payload})


@dataclass
class Recording:
    """A downstream API double: records everything it receives."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(
            {
                "method": scope["method"],
                "path": scope["path"],
                "query": scope.get("query_string", b""),
                "headers": list(scope["headers"]),
                "body": body,
            }
        )
        payload = b'{"ok": true}'
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def everything(self) -> bytes:
        """All bytes received: paths, queries, header names and values, bodies."""
        parts: list[bytes] = []
        for r in self.requests:
            parts += [r["path"].encode(), r["query"], r["body"]]
            for k, v in r["headers"]:
                parts += [k, v]
        return b"\n".join(parts)


def make_as(
    url: str, keys: dict[str, SigningKey], client_key: SigningKey
) -> LocalAuthorizationServer:
    return LocalAuthorizationServer(
        url,
        keys=list(keys.values()),
        clients=[
            RegisteredClient(MCP_CLIENT_ID, secret=MCP_CLIENT_SECRET),
            RegisteredClient("mcp-server-pkjwt", public_key=client_key.public_key),
        ],
        resources=[RESOURCE, UPSTREAM],
        exchangeable_audiences=[RESOURCE],
    )


def as_of(server: LoopbackServer) -> LocalAuthorizationServer:
    app = server.app
    assert isinstance(app, LocalAuthorizationServer)
    return app


def make_config(issuer: str, **overrides: Any) -> ResourceServerConfig:
    jwks_uri = overrides.pop("jwks_uri", issuer + "/jwks")
    settings: dict[str, Any] = {
        "resource": RESOURCE,
        "authorization_servers": (IssuerConfig(issuer, jwks_uri=jwks_uri),),
        "required_scopes": frozenset({"mcp"}),
        "scope_map": {
            "tools/call:delete_file": frozenset({"files:write"}),
            "resources/read": frozenset({"files:read"}),
        },
        "scope_hierarchy": {"files:write": frozenset({"files:read"})},
        "network": NetworkPolicy(allow_loopback=True),
        "jwks": JwksSettings(timeout=2.0),
    }
    settings.update(overrides)
    return ResourceServerConfig(**settings)


class OAuthWorld:
    """The demo authorization server and the protected everything server, each on its
    own loopback port (``oauth_world``)."""

    def __init__(self, authorization_server: LoopbackServer, mcp: LoopbackServer) -> None:
        self.authorization_server = authorization_server
        self.mcp = mcp
        self.url = mcp.url + "/mcp"

    @property
    def requests(self) -> list[Any]:
        app = self.authorization_server.app
        assert isinstance(app, LocalAuthorizationServer)
        return app.requests  # type: ignore[return-value]

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)


@contextlib.contextmanager
def oauth_world() -> Iterator[OAuthWorld]:
    from examples.protected_server import build_app, demo_authorization_server

    holder: dict[str, Any] = {}

    async def mcp_app(scope: Scope, receive: Receive, send: Send) -> None:
        await holder["app"](scope, receive, send)

    mcp = LoopbackServer(lambda url: mcp_app, lifespan="on")
    auth = LoopbackServer(lambda url: demo_authorization_server(url, mcp.url + "/mcp"))
    assert isinstance(auth.app, LocalAuthorizationServer)
    holder["app"] = build_app(mcp.url, authorization_server=auth.app)[0]
    with auth, mcp:
        yield OAuthWorld(auth, mcp)
