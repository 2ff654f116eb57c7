"""SSRF rules for every URL the auth package fetches (JWKS, introspection, token endpoints).

Rules (the MCP security best practices, "Server-Side Request Forgery"):

* ``https`` only; plain ``http`` only to a loopback host and only when the deployment
  allows it (local development, tests, the example).
* No user-info, no fragment, a host is required.
* Every address a host name resolves to is checked, at connect time, by the network
  backend of the client this module builds: link-local (169.254.0.0/16, where cloud
  metadata lives), multicast, reserved and unspecified ranges are always refused; loopback
  only when allowed; private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) only when the
  deployment opts in (an IdP on the corporate network). The checked address is the one
  we connect to, so DNS cannot change between check and use (the TLS server name stays
  the host name).
* Redirects are never followed and proxy settings from the environment are ignored.

Nothing in this module reads a URL from a token: URLs come from configuration only.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

import anyio
import httpcore
import httpx

from mcpcore.auth.errors import UnsafeUrl

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "127.0.0.1", "::1", "[::1]"})
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: The switches that allow what is refused by default, as every refusal names them.
LOOPBACK_SWITCH = "network=NetworkPolicy(allow_loopback=True)"
PRIVATE_NETWORKS_SWITCH = "network=NetworkPolicy(allow_private_networks=True)"


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """Where outbound fetches may go.

    >>> NetworkPolicy(allow_loopback=True)   # development: http://127.0.0.1 allowed
    NetworkPolicy(allow_loopback=True, allow_private_networks=False)
    """

    allow_loopback: bool = False
    allow_private_networks: bool = False


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP literal (a name is checked again when it resolves)."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, policy: NetworkPolicy) -> str:
    """Return ``url`` unchanged if its shape is allowed, else raise ``UnsafeUrl``.

    >>> check_url("https://idp.example/jwks", NetworkPolicy())
    'https://idp.example/jwks'
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl("malformed URL") from exc
    host = parts.hostname
    if not host:
        raise UnsafeUrl("URL has no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeUrl("URL carries credentials")
    if parts.fragment:
        raise UnsafeUrl("URL has a fragment")
    if port == 0:
        raise UnsafeUrl("URL has port 0")
    scheme = parts.scheme.lower()
    if scheme == "http":
        if not is_loopback_host(host):
            raise UnsafeUrl(
                "plain http is refused: use https (plain http is allowed only to a loopback "
                f"host, for local development, with {LOOPBACK_SWITCH})")
        if not policy.allow_loopback:
            raise UnsafeUrl(
                f"plain http to loopback is for local development: allow it with {LOOPBACK_SWITCH}")
    elif scheme != "https":
        raise UnsafeUrl("only https URLs are fetched")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        check_address(literal, policy)
    return url


def check_address(address: IPAddress, policy: NetworkPolicy) -> None:
    """Refuse an address the policy does not allow (see the module docstring)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        if policy.allow_loopback:
            return
        raise UnsafeUrl(
            f"loopback address refused (for local development, allow it with {LOOPBACK_SWITCH})")
    if (
        address.is_link_local
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
    ):
        raise UnsafeUrl("link-local, multicast or reserved address refused")
    if address.is_private and not policy.allow_private_networks:
        raise UnsafeUrl(
            f"private address refused (an IdP on your own network: allow it with "
            f"{PRIVATE_NETWORKS_SWITCH})")


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check every address, then connect to a checked address (DNS pinning)."""

    def __init__(self, policy: NetworkPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
        if not addresses:
            raise httpcore.ConnectError("host did not resolve")
        for address in addresses:  # every answer must be allowed, not just the first
            try:
                check_address(address, self._policy)
            except UnsafeUrl as exc:
                raise httpcore.ConnectError(str(exc)) from exc
        return await self._inner.connect_tcp(
            str(addresses[0]), port, timeout, local_address, socket_options
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: NetworkPolicy) -> None:
        # verify=False only avoids loading CA certificates for a pool we replace at once.
        super().__init__(verify=False, trust_env=False, retries=0)
        # httpx builds its pool without a way to pass a network backend; swap it for one
        # whose backend pins checked addresses. ssl_context=None makes httpcore build its
        # default *verifying* context (certifi CAs, hostname checks) on the first https
        # connection, so plain-http loopback use never pays for loading CA certificates.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=None,
            max_connections=20,
            max_keepalive_connections=10,
            keepalive_expiry=5.0,
            network_backend=_GuardedBackend(policy),
        )


def safe_async_client(policy: NetworkPolicy, *, timeout: float) -> httpx.AsyncClient:
    """An httpx client for fetching from configured URLs under ``policy``.

    No redirects, no proxies from the environment, connect-time address checks.
    """
    return httpx.AsyncClient(
        transport=_GuardedTransport(policy),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
    )


@functools.cache
def verifying_context(*, trust_env: bool) -> ssl.SSLContext:
    """httpx's default verifying TLS context (certifi's CA bundle; with ``trust_env``,
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` first), built once per process and shared by
    the httpx clients and transports that would each build their own: loading the CA
    bundle costs about 20 ms of CPU every time. A context may serve many connections
    (Python's ``ssl`` documentation, "SSL Contexts")."""
    return httpx.create_ssl_context(trust_env=trust_env)


def failure_reason(exc: BaseException) -> str:
    """What to say about a failed fetch: the refusal when these rules refused the address
    at connect time (it names the switch that allows it), else the exception's type.

    httpx wraps the refusal of ``_GuardedBackend`` twice (httpx over httpcore
    ``ConnectError``), so the chain is walked; nothing from a peer is shown.
    """
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, UnsafeUrl):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__


async def read_limited(response: httpx.Response, max_bytes: int) -> bytes:
    """Read a streamed response body, refusing more than ``max_bytes``."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ValueError("response too large")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():  # decoded: limits a gzip bomb too
        size += len(chunk)
        if size > max_bytes:
            raise ValueError("response too large")
        chunks.append(chunk)
    return b"".join(chunks)


def scheme_and_authority(parts: SplitResult) -> tuple[str, str]:
    """The scheme and authority of a URL as compared (RFC 3986 §6.2.2.1, §6.2.3): both
    lowercased, an IPv6 host in brackets, the scheme's default port dropped, userinfo
    gone. The one copy: audiences (``config.canonical_uri``) and DPoP ``htu``
    (``dpop.normalize_htu``) are both compared through it.

    >>> scheme_and_authority(urlsplit("HTTPS://user@MCP.Example:443/x"))
    ('https', 'mcp.example')
    >>> scheme_and_authority(urlsplit("http://[::1]:8080/"))
    ('http', '[::1]:8080')
    """
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and (scheme, port) not in (("https", 443), ("http", 80)):
        host = f"{host}:{port}"
    return scheme, host


__all__ = [
    "LOOPBACK_SWITCH",
    "PRIVATE_NETWORKS_SWITCH",
    "NetworkPolicy",
    "check_address",
    "check_url",
    "failure_reason",
    "is_loopback_host",
    "read_limited",
    "safe_async_client",
    "scheme_and_authority",
    "verifying_context",
]
