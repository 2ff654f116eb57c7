"""Token introspection (RFC 7662) for opaque access tokens.

The endpoint comes from configuration only and is fetched under the SSRF rules of
``mcpcore.auth.urls``. The resource server authenticates with its own client credentials
(``client_secret_basic``, id and secret form-encoded before base64, RFC 6749 §2.3.1).

``active: true`` is necessary, not sufficient: ``iss`` (when present) must be the
issuer we asked, ``aud`` must name this resource, ``exp``/``nbf`` are checked like a
JWT's (RFC 7662 §2.2, §4). A non-200 answer or a body that is not a JSON object
fails closed with 401; an unreachable endpoint gives 503.

Active results are cached under a SHA-256 of the token for at most
``min(exp, now + cache_ttl)``; the cache is bounded and inactive results are not cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

import httpx
import msgspec

from mcpcore.auth.client_auth import basic_credentials
from mcpcore.auth.config import IssuerConfig, ResourceServerConfig
from mcpcore.auth.errors import InvalidToken, TemporarilyUnavailable, UnsafeUrl
from mcpcore.auth.server.tokens import ValidationPolicy, check_claims, principal_from_claims
from mcpcore.auth.urls import check_url, failure_reason, read_limited, safe_async_client
from mcpcore.principal import Principal

log = logging.getLogger("mcpcore.auth.server.introspection")


class IntrospectionValidator:
    """Validates opaque tokens at the configured introspection endpoint(s)."""

    def __init__(
        self,
        config: ResourceServerConfig,
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._servers: tuple[IssuerConfig, ...] = tuple(
            s for s in config.authorization_servers if s.introspection_endpoint
        )
        for server in self._servers:
            check_url(server.introspection_endpoint or "", config.network)
        # Introspection answers need not carry iss/sub/iat; aud and exp they must.
        self.policy = replace(
            ValidationPolicy.from_config(config),
            required_claims=("aud", "exp"),
        )
        self._settings = config.introspection
        self._network = config.network
        self._client = client
        self._own_client = client is None
        self._clock = clock
        self._cache: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        #: Number of calls made to introspection endpoints (tests, metrics).
        self.calls = 0

    async def validate(self, token: str) -> Principal:
        if len(token) > self.policy.max_token_bytes:
            raise InvalidToken("token too large")
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None:
            if now < hit[1]:
                return hit[0]
            del self._cache[key]
        last: Exception = InvalidToken("no introspection endpoint")
        for server in self._servers:
            try:
                principal, exp = await self._introspect(server, token)
            except InvalidToken as exc:
                last = exc
                continue
            self._remember(key, principal, min(exp, now + self._settings.cache_ttl))
            return principal
        raise last

    def _remember(self, key: str, principal: Principal, until: float) -> None:
        self._cache[key] = (principal, until)
        while len(self._cache) > self._settings.max_entries:
            self._cache.popitem(last=False)

    async def _introspect(self, server: IssuerConfig, token: str) -> tuple[Principal, float]:
        if self._client is None:
            self._client = safe_async_client(self._network, timeout=self._settings.timeout)
        headers = {"accept": "application/json"}
        if server.introspection_client_id and server.introspection_client_secret:
            headers["authorization"] = basic_credentials(
                server.introspection_client_id, server.introspection_client_secret
            )
        self.calls += 1
        try:
            async with asyncio.timeout(self._settings.timeout):
                async with self._client.stream(
                    "POST",
                    server.introspection_endpoint or "",
                    data={"token": token, "token_type_hint": "access_token"},
                    headers=headers,
                ) as response:
                    status = response.status_code
                    body = await read_limited(response, self._settings.max_bytes)
        except (httpx.HTTPError, TimeoutError, OSError, UnsafeUrl) as exc:
            log.warning("introspection at %s unreachable: %s", server.introspection_endpoint,
                        failure_reason(exc))
            raise TemporarilyUnavailable("introspection unavailable") from None
        except ValueError:
            raise InvalidToken("introspection response too large") from None
        if status != 200:
            log.warning("introspection at %s answered %s", server.introspection_endpoint, status)
            raise InvalidToken("introspection failed")
        try:
            data = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            raise InvalidToken("introspection answer is not JSON") from None
        if not isinstance(data, dict) or data.get("active") is not True:
            raise InvalidToken("token is not active")
        if "sub" not in data and isinstance(data.get("client_id"), str):
            data["sub"] = data["client_id"]  # a client-credentials token acts as its client
        now = self._clock()
        check_claims(data, issuer=server.issuer, now=now, policy=self.policy)
        principal = principal_from_claims(
            data, issuer=server.issuer, method="introspection", policy=self.policy
        )
        return principal, float(data["exp"])

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None


__all__ = ["IntrospectionValidator"]
