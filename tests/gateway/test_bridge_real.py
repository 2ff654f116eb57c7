"""Bridging the eras against real servers on loopback: the official Python SDK's server
on its 2025 session wire (its ``ctx.elicit``/``create_message`` are requests on the
session) and ``examples.everything`` (2026-07-28 ``input_required``), each behind the
gateway, asked through it by our client in both eras: the four cells."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from tests.client.third_party import http_server, launch
from tests.gateway.inprocess import downstream, serving
from tests.gateway.test_bridge import CALLERS, User

pytestmark = pytest.mark.integration

STATE_KEYS = "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    with http_server(launch("mcpcore", STATE_KEYS)) as url:
        yield url


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with http_server(launch("sdk", STATE_KEYS)) as url:
        yield url


def two(everything_url: str, sdk_url: str) -> GatewayConfig:
    return GatewayConfig(upstreams=(UpstreamConfig("everything", url=everything_url),
                                    UpstreamConfig("sdk", url=sdk_url, era="legacy")))


@pytest.mark.parametrize("caller", CALLERS)
async def test_a_real_2025_servers_elicitation_and_sampling_reach_the_caller(
        everything_url: str, sdk_url: str, caller: str) -> None:
    user = User()
    async with serving(two(everything_url, sdk_url), {}) as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        assert gateway.health()["sdk"]["era"].startswith("2025-")
        named = await client.call_tool("sdk__ask_name")
        assert named.content[0].text == "hello Ada"  # type: ignore[union-attr]
        modelled = await client.call_tool("sdk__ask_model")
        assert modelled.content[0].text == "model said hi"  # type: ignore[union-attr]
        rooted = await client.call_tool("sdk__ask_roots")
        assert rooted.content[0].text == "file:///work"  # type: ignore[union-attr]
        assert [kind for kind, _ in user.asked] == ["elicitation/create",
                                                    "sampling/createMessage", "roots/list"]
        assert gateway.parking.parks == {}


@pytest.mark.parametrize("caller", CALLERS)
async def test_a_real_2025_servers_elicitation_in_a_prompt_reaches_the_caller(
        everything_url: str, sdk_url: str, caller: str) -> None:
    """The SDK server's ``ctx.elicit`` in the middle of ``prompts/get`` (a request on
    its 2025 session): parked and relayed like a tool call's."""
    user = User()
    async with serving(two(everything_url, sdk_url), {}) as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        prompt = await client.get_prompt("sdk__ask_greeting")
        assert prompt.messages[0].content.text == "Greet Ada"  # type: ignore[union-attr]
        assert [(kind, p["message"]) for kind, p in user.asked] == [
            ("elicitation/create", "Your name?")]
        assert gateway.parking.parks == {}


@pytest.mark.parametrize("caller", CALLERS)
async def test_a_real_modern_servers_rounds_reach_the_caller(
        everything_url: str, sdk_url: str, caller: str) -> None:
    user = User()
    async with serving(two(everything_url, sdk_url), {}) as gateway, \
            downstream(gateway, caller, **user.options()) as client:
        result = await client.call_tool("everything__test_input_required_result_multi_round")
        assert result.content[0].text == "Ada likes teal"  # type: ignore[union-attr]
        assert len(user.asked) == 2
