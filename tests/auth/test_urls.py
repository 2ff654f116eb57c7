"""SSRF rules: URL shapes refused up front, resolved addresses refused at connect time."""

from __future__ import annotations

import ipaddress
import ssl
from typing import Any

import httpcore
import httpx
import pytest

from mcpcore.auth.errors import UnsafeUrl
from mcpcore.auth.urls import NetworkPolicy, check_address, check_url, safe_async_client
from tests.auth.support import LoopbackServer, Recording

DEV = NetworkPolicy(allow_loopback=True)
PROD = NetworkPolicy()


@pytest.mark.parametrize(
    "url, policy",
    [
        ("http://idp.example/jwks", PROD),
        ("http://idp.example/jwks", DEV),  # http only to loopback, even in development
        ("http://127.0.0.1/jwks", PROD),
        ("https://169.254.169.254/latest/meta-data", DEV),
        ("https://[fe80::1]/x", DEV),
        ("https://10.0.0.5/jwks", PROD),
        ("https://[::ffff:127.0.0.1]/jwks", PROD),
        ("https://0.0.0.0/jwks", DEV),
        ("https://user:pass@idp.example/jwks", PROD),
        ("https://idp.example/jwks#frag", PROD),
        ("file:///etc/passwd", DEV),
        ("gopher://idp.example/", PROD),
        ("https:///nohost", PROD),
        ("https://idp.example:0/", PROD),
    ],
)
def test_refused_urls(url: str, policy: NetworkPolicy) -> None:
    with pytest.raises(UnsafeUrl):
        check_url(url, policy)


@pytest.mark.parametrize(
    "url, policy",
    [
        ("https://idp.example/jwks", PROD),
        ("http://127.0.0.1:9000/jwks", DEV),
        ("http://localhost:9000/jwks", DEV),
        ("https://10.0.0.5/jwks", NetworkPolicy(allow_private_networks=True)),
    ],
)
def test_allowed_urls(url: str, policy: NetworkPolicy) -> None:
    assert check_url(url, policy) == url


def test_ipv4_mapped_link_local_is_refused() -> None:
    with pytest.raises(UnsafeUrl):
        check_address(ipaddress.ip_address("::ffff:169.254.169.254"), DEV)


async def test_resolved_loopback_is_refused_at_connect_time() -> None:
    """The name is checked after resolution, on the address actually dialled."""
    with LoopbackServer(lambda url: Recording()) as server:
        strict = safe_async_client(PROD, timeout=2)
        with pytest.raises(httpx.ConnectError, match="loopback"):
            await strict.get(f"http://localhost:{server.port}/")
        await strict.aclose()
        dev = safe_async_client(DEV, timeout=2)
        assert (await dev.get(f"http://localhost:{server.port}/")).status_code == 200
        await dev.aclose()


async def test_redirects_are_not_followed() -> None:
    async def redirect(scope: object, receive: object, send: object) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 302,  # type: ignore[operator]
                "headers": [(b"location", b"http://169.254.169.254/")],
            }
        )
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    with LoopbackServer(lambda url: redirect) as server:  # type: ignore[arg-type,return-value]
        client = safe_async_client(DEV, timeout=2)
        assert (await client.get(server.url)).status_code == 302
        await client.aclose()


def test_https_still_verifies_certificates() -> None:
    from httpcore._ssl import default_ssl_context

    client = safe_async_client(PROD, timeout=2)
    pool = client._transport._pool  # type: ignore[attr-defined]
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    context = default_ssl_context()  # what httpcore uses when the pool has none
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_clients_share_one_verifying_context_per_trust_setting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The downstream guard's transport and the audit's HTTP probe each built a fresh
    TLS context, loading the CA bundle again (about 20 ms of CPU each): now one per
    process and ``trust_env`` setting, still verifying."""
    import ssl

    from mcpcore.auth.server.downstream import GuardedTransport, PassthroughGuard
    from mcpcore.auth.urls import verifying_context
    from mcpcore.conformance.transport import HttpProbe

    loads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    verifying_context.cache_clear()
    guarded = [GuardedTransport(PassthroughGuard("https://mcp.example.com/mcp"))
               for _ in range(3)]
    probes = [HttpProbe("https://mcp.example.com/mcp") for _ in range(3)]
    assert len(loads) == 2  # was 6
    context = verifying_context(trust_env=True)
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert verifying_context(trust_env=False) is not context
    assert len({id(p.client._transport._pool._ssl_context) for p in probes}) == 1
    assert len({id(g.inner._pool._ssl_context) for g in guarded}) == 1
