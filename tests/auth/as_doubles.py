"""The compact authorization server in process (httpx over ASGI), with helpers to run
its endpoints the way a client would."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from mcpcore.auth.issuer import LocalAuthorizationServer, RegisteredClient, SigningKey, approve_as
from mcpcore.auth.urls import NetworkPolicy

ISSUER = "http://127.0.0.1:9000"
RESOURCE = "http://127.0.0.1:8000/mcp"
OTHER_RESOURCE = "http://127.0.0.1:8001/mcp"
REDIRECT = "http://127.0.0.1:4321/callback"
PUBLIC = "public-app"
CONFIDENTIAL = "confidential-app"
SECRET = "confidential-secret-1f2e"
KEYED = "keyed-app"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


def query(location: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(location).query, keep_blank_values=True)


@dataclass
class AS:
    """One authorization server and an HTTP client that talks to it in process."""

    client_key: SigningKey = field(default_factory=lambda: SigningKey.generate("ES256", "ck"))
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The operator lets self-registered clients have the baseline, not mcp:admin.
        options = {"registration_scopes": ["mcp", "offline_access"], **self.options}
        self.server = LocalAuthorizationServer(
            ISSUER,
            keys=[SigningKey.generate("ES256", kid="as-1")],
            clients=[
                RegisteredClient(PUBLIC, redirect_uris=("http://127.0.0.1/callback",)),
                RegisteredClient(CONFIDENTIAL, secret=SECRET, redirect_uris=(REDIRECT,)),
                RegisteredClient(KEYED, public_key=self.client_key.public_key,
                       grant_types=("client_credentials",)),
            ],
            resources=[RESOURCE, OTHER_RESOURCE],
            scopes_supported=["mcp", "mcp:admin", "offline_access"],
            resource_owner=approve_as("alice"),
            network=NetworkPolicy(allow_loopback=True),
            **options,
        )
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(self.server),
                                      base_url=ISSUER)

    async def authorize(self, client_id: str = PUBLIC, **params: str | None) -> httpx.Response:
        verifier, challenge = pkce()
        self.verifier = verifier
        defaults: dict[str, str | None] = {
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
            "state": "st-" + secrets.token_hex(4), "code_challenge": challenge,
            "code_challenge_method": "S256", "resource": RESOURCE, "scope": "mcp",
        }
        defaults.update(params)
        sent = {k: v for k, v in defaults.items() if v is not None}
        return await self.http.get("/authorize", params=sent)

    async def code(self, client_id: str = PUBLIC, **params: str | None) -> str:
        response = await self.authorize(client_id, **params)
        assert response.status_code == 302, response.text
        return query(response.headers["location"])["code"][0]

    async def token(self, form: dict[str, str], headers: dict[str, str] | None = None
                    ) -> httpx.Response:
        return await self.http.post("/token", data=form, headers=headers or {})

    async def redeem(self, code: str, client_id: str = PUBLIC, **extra: str) -> httpx.Response:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "code_verifier": self.verifier, "client_id": client_id, "resource": RESOURCE}
        form.update(extra)
        return await self.token({k: v for k, v in form.items() if v != "-"})
