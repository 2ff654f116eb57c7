"""A scripted network for the sans-I/O OAuth client flows.

``FakeNet`` answers the steps a flow yields: ``Fetch`` from a routing table (the MCP
server's PRM, the authorization server's metadata, registration and token endpoints),
``OpenAuthorization`` like an authorization server that approves at once (its redirect
is built by ``redirect``, so a test can make it lie). Every request is recorded, so a
test can assert what was, and was not, sent.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import httpx
import msgspec

from mcpcore.auth import OAuthSession
from mcpcore.auth.client.steps import AuthFlow, Fetch, OpenAuthorization, Step, run_flow

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://as.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
REDIRECT = "http://127.0.0.1/callback"

Handler = Callable[[httpx.Request], httpx.Response]


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, content=msgspec.json.encode(body),
                          headers={"content-type": "application/json", **(headers or {})})


def challenge(status: int = 401, value: str | None = None) -> httpx.Response:
    value = value if value is not None else f'Bearer resource_metadata="{PRM_URL}"'
    return httpx.Response(status, headers={"www-authenticate": value})


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
        b"=").decode()


@dataclass
class FakeNet:
    server: str = SERVER
    issuer: str = ISSUER
    prm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Query parameters of the authorization response (None: the honest ones).
    redirect: Callable[[dict[str, str]], str] | None = None
    token: Callable[[dict[str, str], httpx.Request], httpx.Response] | None = None
    routes: dict[tuple[str, str], Handler] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    authorizations: list[dict[str, str]] = field(default_factory=list)
    tokens_issued: int = 0

    def __post_init__(self) -> None:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.issuer))
        path = urlsplit(self.issuer).path
        base = self.issuer.rstrip("/")
        self.prm = {"resource": self.server, "authorization_servers": [self.issuer],
                    **self.prm}
        self.metadata = {
            "issuer": self.issuer,
            "authorization_endpoint": base + "/authorize",
            "token_endpoint": base + "/token",
            "registration_endpoint": base + "/register",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": ["none"],
            **self.metadata,
        }
        self.routes.setdefault(("GET", PRM_URL), lambda r: json_response(200, self.prm))
        self.routes.setdefault(
            ("GET", f"{origin}/.well-known/oauth-authorization-server{path}"),
            lambda r: json_response(200, self.metadata))
        self.routes.setdefault(("POST", base + "/register"), self._register)
        self.routes.setdefault(("POST", base + "/token"), self._token)

    def _register(self, request: httpx.Request) -> httpx.Response:
        body = msgspec.json.decode(request.content)
        return json_response(201, {"client_id": "registered-client",
                                   "redirect_uris": body["redirect_uris"]})

    def _token(self, request: httpx.Request) -> httpx.Response:
        form = dict(parse_qsl(request.content.decode()))
        if self.token is not None:
            return self.token(form, request)
        self.tokens_issued += 1
        scope = form.get("scope") or self._last_scope()
        body = {"access_token": f"at-{self.tokens_issued}", "token_type": "Bearer",
                "expires_in": 3600, "refresh_token": f"rt-{self.tokens_issued}"}
        if scope:
            body["scope"] = scope
        return json_response(200, body, {"cache-control": "no-store"})

    def _last_scope(self) -> str:
        return self.authorizations[-1].get("scope", "") if self.authorizations else ""

    def sent(self, method: str, suffix: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == method and r.url.path.endswith(suffix)]

    def __call__(self, step: Step) -> Any:
        if isinstance(step, OpenAuthorization):
            query = {k: v[0] for k, v in parse_qs(urlsplit(step.url).query).items()}
            self.authorizations.append(query)
            if self.redirect is not None:
                return self.redirect(query)
            params = {"code": "the-code", "state": query["state"], "iss": self.issuer}
            return f"{query['redirect_uri']}?{urlencode(params)}"
        assert isinstance(step, Fetch)
        request = step.request
        self.requests.append(request)
        url = str(request.url.copy_with(query=None))
        handler = self.routes.get((request.method, url))
        if handler is None:
            return httpx.Response(404, request=request)
        return handler(request)


def run(flow: AuthFlow[Any], net: FakeNet) -> Any:
    return run_flow(flow, net)


def unauthorized(session: OAuthSession, net: FakeNet,
                 response: httpx.Response | None = None) -> None:
    run(session.on_unauthorized(response or challenge(), None), net)


def form_of(request: httpx.Request) -> dict[str, str]:
    return dict(parse_qsl(request.content.decode()))
