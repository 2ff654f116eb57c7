"""Prompts and completions (mcpcore/prompts.py): registration, arguments, rendering."""

from __future__ import annotations

import functools

import pytest

from mcpcore import Server, UsageError
from mcpcore.context import Context
from mcpcore.errors import InvalidParams, UnknownPrompt
from mcpcore.prompts import CompletionRegistry, PromptRegistry, prompt_result
from tests.support.peers import DirectPeer


def test_parameters_become_arguments_required_without_a_default() -> None:
    def review(code: str, style: str = "terse") -> str:
        """Review some code."""
        return code

    prompt = PromptRegistry().add(review)
    assert prompt.wire == {"name": "review", "description": "Review some code.",
                           "arguments": [{"name": "code", "required": True},
                                         {"name": "style"}]}


def test_arguments_are_strings_and_required_ones_present() -> None:
    prompt = PromptRegistry().add(lambda code: code, name="p")
    assert prompt.check_arguments({"code": "x", "extra": "y"}) == {"code": "x"}
    with pytest.raises(InvalidParams, match="must be a string"):
        prompt.check_arguments({"code": 1})
    with pytest.raises(InvalidParams, match="Missing required arguments: code"):
        prompt.check_arguments({})


def test_unknown_and_duplicate_prompts() -> None:
    registry = PromptRegistry()
    registry.add(lambda: "x", name="p")
    with pytest.raises(ValueError, match="already registered"):
        registry.add(lambda: "y", name="p")
    with pytest.raises(UnknownPrompt):
        registry.get("q")


def test_icons_the_schema_forbids_are_refused() -> None:
    with pytest.raises(UsageError, match="prompt 'p' is not a valid Prompt"):
        PromptRegistry().add(lambda: "x", name="p", icons=[{"src": 1}])


@pytest.mark.parametrize(("value", "first"), [
    ("hi", {"role": "user", "content": {"type": "text", "text": "hi"}}),
    (["a", "b"], {"role": "user", "content": {"type": "text", "text": "a"}}),
    ({"role": "assistant", "content": {"type": "text", "text": "x"}},
     {"role": "assistant", "content": {"type": "text", "text": "x"}}),
])
def test_handler_values_become_messages(value: object, first: dict[str, object]) -> None:
    assert prompt_result(value, "d")["messages"][0] == first
    assert prompt_result(value, "d")["description"] == "d"


async def test_a_bare_decorator_registers_and_serves_the_prompt() -> None:
    server = Server("prompts")

    @server.prompt
    def hello(name: str) -> str:
        """Greets."""
        return f"Hello {name}"

    reply = await DirectPeer(server).request("prompts/get",
                                             {"name": "hello", "arguments": {"name": "Ada"}})
    assert reply.result["messages"][0]["content"]["text"] == "Hello Ada"


def test_completers_are_keyed_by_reference() -> None:
    registry = CompletionRegistry()
    registry.add("ref/prompt", "p", lambda *a: ["x"])
    assert registry.get("ref/prompt", "p") is not None
    assert registry.get("ref/resource", "p") is None
    with pytest.raises(ValueError):
        registry.add("ref/other", "p", lambda *a: [])


async def test_a_completer_may_take_the_request_context_and_old_ones_still_work() -> None:
    server = Server("completions")
    seen: list[Context] = []

    @server.prompt
    def hello(name: str) -> str:
        return f"Hello {name}"

    @server.prompt
    def bye(name: str) -> str:
        return f"Bye {name}"

    @server.completion(prompt="hello")
    async def with_context(argument: str, value: str, context: dict[str, str],
                           request: Context) -> list[str]:
        seen.append(request)
        return [f"{request.method}:{argument}={value}"]

    def plain(prefix: str, argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [prefix + value]

    # A callable whose hints cannot be read (a partial) is called the old way.
    server.completions.add("ref/prompt", "bye", functools.partial(plain, "old:"))
    peer = DirectPeer(server)
    reply = await peer.request("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "hello"},
        "argument": {"name": "name", "value": "A"}})
    assert reply.result["completion"]["values"] == ["completion/complete:name=A"]
    assert len(seen) == 1 and seen[0].principal.is_anonymous
    reply = await peer.request("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "bye"},
        "argument": {"name": "name", "value": "B"}})
    assert reply.result["completion"]["values"] == ["old:B"]
