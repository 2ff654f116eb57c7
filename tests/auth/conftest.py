"""Fixtures for the auth tests; the doubles themselves live in ``support.py``."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mcpcore.auth.issuer.authorization_server import SigningKey
from tests.auth.support import LoopbackServer, Recording, as_of, make_as


@pytest.fixture(scope="session")
def signing_keys() -> dict[str, SigningKey]:
    return {
        alg: SigningKey.generate(alg, kid=f"{alg.lower()}-1") for alg in ("RS256", "ES256", "EdDSA")
    }


@pytest.fixture(scope="session")
def client_key() -> SigningKey:
    """The MCP server's own key for private_key_jwt at the STS."""
    return SigningKey.generate("ES256", kid="mcp-client-key")


@pytest.fixture(scope="session")
def idp(signing_keys: dict[str, SigningKey], client_key: SigningKey) -> Iterator[LoopbackServer]:
    """A shared, never-mutated authorization server for read-only tests."""
    with LoopbackServer(lambda url: make_as(url, signing_keys, client_key)) as server:
        yield server


@pytest.fixture(scope="session")
def _mutable_idp(
    signing_keys: dict[str, SigningKey], client_key: SigningKey
) -> Iterator[LoopbackServer]:
    with LoopbackServer(lambda url: make_as(url, signing_keys, client_key)) as server:
        yield server


@pytest.fixture
def fresh_idp(_mutable_idp: LoopbackServer, signing_keys: dict[str, SigningKey]) -> LoopbackServer:
    """An authorization server a test may rotate, break or count requests on; its state
    is reset for each test (one uvicorn for the session keeps the suite fast)."""
    server = as_of(_mutable_idp)
    server.keys = list(signing_keys.values())
    server.requests.clear()
    server.fail_token_endpoint = None
    server.clock = time.time
    server.jwks_cache_control = "max-age=300"
    return _mutable_idp


@pytest.fixture(scope="session")
def _upstream() -> Iterator[LoopbackServer]:
    with LoopbackServer(lambda url: Recording()) as server:
        yield server


@pytest.fixture
def upstream(_upstream: LoopbackServer) -> LoopbackServer:
    """The recording downstream API, emptied for each test."""
    recording = _upstream.app
    assert isinstance(recording, Recording)
    recording.requests.clear()
    return _upstream
