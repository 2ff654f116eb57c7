"""Our OAuth client against our authorization server and our protected MCP server, all
real servers on loopback: the code flow (headless and through a browser-like loopback
redirect), DPoP, step-up, concurrency, and the end-to-end example as CI runs it."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl

import httpx
import pytest

from mcpcore.auth import (
    AuthorizationCodeGrant,
    HeadlessUserAgent,
    LoopbackBrowser,
    MemoryCredentialStore,
    NetworkPolicy,
    OAuth,
    Registration,
)
from mcpcore.client import Client
from tests.auth.support import OAuthWorld, oauth_world

ROOT = Path(__file__).resolve().parents[3]
LOOPBACK = NetworkPolicy(allow_loopback=True)


@pytest.fixture(scope="module")
def world() -> Iterator[OAuthWorld]:
    with oauth_world() as running:
        yield running


async def use(world: OAuthWorld, auth: OAuth, *, step_up: bool = True) -> None:
    async with Client.http(world.url, auth=auth, timeout=15) as client:
        assert [t async for t in client.iter_tools()]
        if step_up:
            await client.call_tool("test_trigger_tool_change", {})


async def test_headless_code_flow_with_step_up(world: OAuthWorld) -> None:
    before = world.count("/authorize")
    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), network=LOOPBACK)
    await use(world, auth)
    token = auth.session(world.url).token
    assert token is not None and token.scopes >= {"mcp", "tools:admin"}
    assert world.count("/authorize") - before == 2  # the first flow, then one step-up


async def test_dpop_code_flow(world: OAuthWorld) -> None:
    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), dpop=True, network=LOOPBACK)
    await use(world, auth)
    token = auth.session(world.url).token
    assert token is not None and token.is_dpop
    dpop_posts = [r for r in world.requests if r.path == "/token" and "dpop" in r.headers]
    assert dpop_posts


async def test_parallel_requests_share_one_authorization(world: OAuthWorld) -> None:
    before = world.count("/authorize")
    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), network=LOOPBACK)
    async with Client.http(world.url, auth=auth, timeout=15) as client:
        await asyncio.gather(*(client.list_tools() for _ in range(5)))
    assert world.count("/authorize") - before == 1


async def test_a_stored_registration_and_token_are_reused(world: OAuthWorld) -> None:
    store = MemoryCredentialStore()
    first = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), store=store, network=LOOPBACK)
    await use(world, first, step_up=False)
    registrations, authorizations = world.count("/register"), world.count("/authorize")
    second = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), store=store, network=LOOPBACK)
    await use(world, second, step_up=False)
    assert world.count("/register") == registrations  # the client is known per issuer
    assert world.count("/authorize") == authorizations  # and the token still good


async def test_browser_through_a_loopback_redirect(world: OAuthWorld) -> None:
    opened: list[str] = []

    def browser(url: str) -> None:  # a user agent that follows every redirect
        opened.append(url)
        threading.Thread(target=httpx.get, args=(url,), kwargs={"follow_redirects": True},
                         daemon=True).start()

    agent = LoopbackBrowser(open_url=browser, timeout=10)
    try:
        auth = OAuth(AuthorizationCodeGrant(agent, Registration()), network=LOOPBACK)
        await use(world, auth)  # two authorizations through the same listener and port
    finally:
        agent.close()
    assert len(opened) == 2 and all("redirect_uri=http%3A%2F%2F127.0.0.1%3A" in u for u in opened)


async def test_our_logs_hold_no_token_code_or_secret(
        world: OAuthWorld, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    auth = OAuth(AuthorizationCodeGrant(HeadlessUserAgent()), dpop=True, network=LOOPBACK)
    await use(world, auth)
    token = auth.session(world.url).token
    assert token is not None and token.refresh_token is not None
    posts = [r for r in world.requests if r.path == "/token"]
    codes = [dict(parse_qsl(r.body.decode())).get("code") for r in posts]
    secrets_seen = [token.access_token, token.refresh_token, *filter(None, codes)]
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("mcpcore"))
    assert "token for" in ours  # the client did log, by fingerprint
    assert not [s for s in secrets_seen if s in ours]


def test_the_end_to_end_example_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "examples.oauth_end_to_end"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in ("[code+bearer] step-up", "[code+dpop] step-up", "DPoP token",
                 "[client-credentials] tools/list", "all OAuth flows passed"):
        assert line in proc.stdout
    assert "eyJ" not in proc.stdout + proc.stderr  # fingerprints, never tokens
