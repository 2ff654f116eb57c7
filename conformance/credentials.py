"""Credentials for an authenticated target. Every token obtained here is registered with
the run's ``redaction.Redactor`` the moment it arrives, so no report or log shows it.

``--oauth FILE`` names a pre-registered confidential client (JSON)::

    {"client_id": "demo-client", "client_secret": "…", "scope": "mcp",
     "auth_method": "client_secret_basic"}

``obtain`` gets its token through the project's OAuth client (``mcpcore.auth.OAuth`` with
``ClientCredentialsGrant``): Protected Resource Metadata from the target, the
authorization server's metadata, then the client-credentials grant (RFC 6749 §4.4) for
the target's resource. The audit's wrong-audience probe is the one request made by hand
(``client_credentials``): it deliberately asks for a token for *another* resource, which
a well-behaved client never does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from mcpcore.conformance import redaction


class CredentialsError(Exception):
    """The config is incomplete, or the authorization server refused."""


def load_config(path: str | Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    if not config.get("client_id"):
        raise CredentialsError(f"{path}: missing client_id")
    return config


async def obtain(config: Mapping[str, Any], url: str, *,
                 allow_loopback: bool = False) -> tuple[str, str | None]:
    """``(access token, token endpoint)`` for the MCP server at ``url``."""
    from mcpcore.auth import (
        ClientCredentialsGrant,
        ClientInfo,
        NetworkPolicy,
        OAuth,
        OAuthClientError,
    )

    client = ClientInfo(str(config["client_id"]), config.get("client_secret"),
                        auth_method=config.get("auth_method"))
    oauth = OAuth(ClientCredentialsGrant(client),
                  network=NetworkPolicy(allow_loopback=allow_loopback))
    scopes = frozenset(str(config["scope"]).split()) if config.get("scope") else None
    try:
        token = await oauth.authorize(url, scopes)
    except (OAuthClientError, httpx.HTTPError, ValueError) as exc:
        raise CredentialsError(f"no token for {url}: {exc}") from None
    redaction.register(token.access_token, "the token --oauth obtained")
    metadata = oauth.session(url).metadata
    endpoint = metadata.token_endpoint if metadata is not None else None
    return token.access_token, config.get("token_endpoint") or endpoint


async def client_credentials(config: Mapping[str, Any], *, resource: str,
                             client: httpx.AsyncClient | None = None) -> str:
    """A client-credentials token for ``resource``, requested by hand from the config's
    ``token_endpoint`` (the audit's wrong-audience probe)."""
    if not config.get("token_endpoint"):
        raise CredentialsError("no token_endpoint known")
    form = {"grant_type": "client_credentials", "resource": resource}
    if config.get("scope"):
        form["scope"] = str(config["scope"])
    auth: tuple[str, str] | None = None
    secret = str(config.get("client_secret") or "")
    if config.get("auth_method") == "client_secret_post":
        form.update(client_id=str(config["client_id"]), client_secret=secret)
    else:
        auth = (str(config["client_id"]), secret)
    owned = client is None
    http = client or httpx.AsyncClient(timeout=15)
    try:
        response = await http.post(str(config["token_endpoint"]), data=form, auth=auth or
                                   httpx.USE_CLIENT_DEFAULT)
    finally:
        if owned:
            await http.aclose()
    try:
        body = response.json()
    except ValueError:
        body = {}
    token = body.get("access_token") if isinstance(body, dict) else None
    if isinstance(token, str):
        redaction.register(token, f"a token minted for {resource}")
    if response.status_code != 200 or not isinstance(token, str):
        raise CredentialsError(f"the token endpoint answered {response.status_code}: "
                               f"{body.get('error') if isinstance(body, dict) else ''!s}")
    return token


__all__ = ["CredentialsError", "client_credentials", "load_config", "obtain"]
