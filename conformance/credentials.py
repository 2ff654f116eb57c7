"""Credentials for an authenticated target: a bearer token, or one fetched by the OAuth
client-credentials grant (RFC 6749 §4.4) with the RFC 8707 ``resource`` parameter.

The config file (``--oauth FILE``) is JSON::

    {"token_endpoint": "http://127.0.0.1:8000/as/token",
     "client_id": "demo-client", "client_secret": "…",
     "scope": "mcp", "resource": "http://127.0.0.1:8000/mcp",
     "auth_method": "client_secret_basic"}

``resource`` defaults to the target URL; ``auth_method`` may be ``client_secret_post``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx


class CredentialsError(Exception):
    """The token endpoint refused or the config is incomplete."""


def load_config(path: str | Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    missing = [k for k in ("token_endpoint", "client_id") if not config.get(k)]
    if missing:
        raise CredentialsError(f"{path}: missing {', '.join(missing)}")
    return config


async def client_credentials(config: Mapping[str, Any], *, resource: str,
                             client: httpx.AsyncClient | None = None) -> str:
    """An access token for ``resource`` (the config's ``resource`` wins if set)."""
    form = {"grant_type": "client_credentials",
            "resource": str(config.get("resource") or resource)}
    if config.get("scope"):
        form["scope"] = str(config["scope"])
    auth: tuple[str, str] | None = None
    secret = str(config.get("client_secret") or "")
    if config.get("auth_method", "client_secret_basic") == "client_secret_post":
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
    if response.status_code != 200 or not isinstance(token, str):
        raise CredentialsError(f"the token endpoint answered {response.status_code}: "
                               f"{body.get('error') if isinstance(body, dict) else ''!s}")
    return token


__all__ = ["CredentialsError", "client_credentials", "load_config"]
