"""Tools (mcpcore/tools.py): registration, argument decoding, results.

Mistakes an author can make are caught at registration with a message naming the tool;
arguments are decoded once (straight into the argument Struct, or into a mapping when
something reads it first); results take the shapes tools.mdx describes.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from mcpcore import Context, Server, UsageError, types
from mcpcore.errors import InvalidParams
from mcpcore.tools import Arguments, ToolRegistry, error_result, tool_result
from tests.support.peers import DirectPeer


class Point(msgspec.Struct):
    x: int
    y: int


def registry_tool(fn: Any, **kwargs: Any) -> Any:
    return ToolRegistry().add(fn, **kwargs)


# -- registration: the author's mistakes, named at once ------------------------------------
def test_a_bare_decorator_registers_the_tool() -> None:
    server = Server("bare")

    @server.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert "ping" in server.tools
    assert ping() == "pong"  # the function itself is returned


def test_a_ctx_parameter_without_its_hint_is_an_error_naming_the_tool() -> None:
    def greet(ctx, name: str) -> str:  # type: ignore[no-untyped-def]
        return name

    with pytest.raises(UsageError, match=r"tool 'greet': parameter 'ctx' has no type hint"):
        registry_tool(greet)


def test_a_context_hint_under_any_name_receives_the_context() -> None:
    def greet(request_context: Context, name: str) -> str:
        return name

    tool = registry_tool(greet)
    assert tool.signature.context_param == "request_context"
    assert tool.input_schema["required"] == ["name"]


def test_an_argument_named_context_with_a_type_is_an_argument() -> None:
    def search(context: str) -> str:
        return context

    assert registry_tool(search).signature.arg_names == ("context",)


class Opaque:
    """A type msgspec cannot decode or describe."""


def test_an_unsupported_hint_names_the_tool_and_the_parameter() -> None:
    def upload(blob: Opaque) -> str:
        return ""

    with pytest.raises(UsageError, match=r"tool 'upload': parameter 'blob': unsupported type"):
        registry_tool(upload)


@pytest.mark.parametrize("annotations", [
    {"readOnlyHint": "yes"},
    {"destructiveHint": 1},
])
def test_annotations_the_schema_forbids_are_refused(annotations: dict[str, Any]) -> None:
    def act() -> str:
        return ""

    with pytest.raises(UsageError, match=r"tool 'act' is not a valid Tool"):
        registry_tool(act, annotations=annotations)


@pytest.mark.parametrize(("annotations", "meant"), [
    ({"readonlyHint": True}, "annotations.readOnlyHint"),
    ({"readOnly": True}, "annotations.readOnlyHint"),
    ({"destructiveHInt": False}, "annotations.destructiveHint"),
    ({"openWorld": False}, "annotations.openWorldHint"),
])
def test_a_misspelled_annotation_is_refused_with_what_was_meant(annotations: dict[str, Any],
                                                                meant: str) -> None:
    """``readonlyHint`` used to be published, and the policy, reading no
    ``readOnlyHint``, filed the tool as destructive: the opposite of what was meant."""
    def act() -> str:
        return ""

    key = next(iter(annotations))
    with pytest.raises(UsageError, match=rf"tool 'act': annotations\.{key} is not a field "
                                         rf"of ToolAnnotations \(did you mean {meant}\?\)"):
        registry_tool(act, annotations=annotations)


def test_another_unknown_annotation_is_kept_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    def act() -> str:
        return ""

    with caplog.at_level(logging.WARNING, logger="mcpcore.tools"):
        tool = registry_tool(act, annotations={"readOnlyHint": True, "vendorScore": 3})
    assert tool.publish()["annotations"] == {"readOnlyHint": True, "vendorScore": 3}
    assert tool.category == "read"
    assert "annotations.vendorScore is not a field of ToolAnnotations" in caplog.text
    assert "readOnlyHint" in caplog.text  # the known keys are listed


def test_other_registration_dicts_are_checked_the_same_way(
        caplog: pytest.LogCaptureFixture) -> None:
    server = Server("s")
    with pytest.raises(UsageError, match=r"tool 'i': icons\[0\]\.mimetype is not a field "
                                         r"of Icon \(did you mean icons\[0\]\.mimeType\?\)"):
        server.tool(name="i", icons=[{"src": "https://example.com/i.png",
                                      "mimetype": "image/png"}])(lambda: "")
    with pytest.raises(UsageError, match=r"resource 'file:///a': annotations\.priorty .*"
                                         r"did you mean annotations\.priority\?"):
        server.resource("file:///a", annotations={"priorty": 0.5})(lambda: "")
    with pytest.raises(UsageError, match=r"annotations\.lastmodified .*lastModified"):
        server.resource_template("file:///{name}", annotations={"lastmodified": "x"})(
            lambda name: "")
    with pytest.raises(UsageError, match=r"task must be one of .* not 'optinal' \(did you "
                                         r"mean 'optional'\?\)"):
        server.tool(name="t", task="optinal")(lambda: "")  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="mcpcore.tools"):
        server.tool(name="m", meta={"io.modelcontextprotocol/mine": 1, "com.example/x": 2})(
            lambda: "")
    assert "'io.modelcontextprotocol/mine'" in caplog.text
    assert "com.example/x" not in caplog.text


def test_icons_the_schema_forbids_are_refused() -> None:
    def act() -> str:
        return ""

    with pytest.raises(UsageError, match="icons"):
        registry_tool(act, icons=[{"src": 5}])


def test_every_published_tool_is_a_valid_tool() -> None:
    import examples.everything as everything

    for wire in everything.server.tools.published():
        msgspec.convert(wire, types.Tool)


def test_positional_only_parameters_are_refused() -> None:
    def add(a: int, /) -> int:
        return a

    with pytest.raises(UsageError, match="positional-only"):
        registry_tool(add)


# -- arguments ----------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "expected"), [
    (msgspec.Raw(b'{"a": 1}'), {"a": 1}),
    (msgspec.Raw(b"null"), {}),
    (None, {}),
])
def test_arguments_are_an_object_or_nothing(raw: Any, expected: dict[str, Any]) -> None:
    assert Arguments.of(raw).mapping() == expected


@pytest.mark.parametrize("raw", [b"[1]", b'"text"', b"5"])
def test_arguments_of_another_type_are_invalid_params(raw: bytes) -> None:
    with pytest.raises(InvalidParams, match="arguments"):
        Arguments.of(msgspec.Raw(raw))


def test_arguments_decode_straight_into_the_struct_or_from_the_mapping() -> None:
    def plot(point: Point, label: str = "p") -> str:
        return label

    tool = registry_tool(plot)
    direct = Arguments.of(msgspec.Raw(b'{"point": {"x": 1, "y": 2}}'))
    assert tool.bind(direct) == ({"point": Point(1, 2), "label": "p"}, None)
    assert direct.decoded is None  # no mapping was ever built
    read_first = Arguments.of(msgspec.Raw(b'{"point": {"x": 1, "y": 2}}'))
    read_first.mapping()  # e.g. the policy digested it
    assert tool.bind(read_first) == ({"point": Point(1, 2), "label": "p"}, None)


def test_a_schema_violation_is_a_message_for_the_model() -> None:
    def plot(point: Point) -> str:
        return ""

    kwargs, problem = registry_tool(plot).bind(Arguments.of(msgspec.Raw(b'{"point": 1}')))
    assert kwargs is None
    assert problem is not None and problem.startswith("Invalid arguments:")


def test_an_explicit_schema_validates_the_mapping() -> None:
    def echo(**arguments: Any) -> str:
        return ""

    tool = registry_tool(echo, input_schema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert tool.bind(Arguments.of(msgspec.Raw(b'{"n": 2}'))) == ({"n": 2}, None)
    kwargs, problem = tool.bind(Arguments.of(msgspec.Raw(b"{}")))
    assert kwargs is None and problem is not None and "n" in problem


# -- results ------------------------------------------------------------------------------
def test_results_take_the_shapes_of_call_tool_result() -> None:
    def plain() -> str:
        return ""

    tool = registry_tool(plain)
    assert tool_result(tool, "hi") == {"content": [{"type": "text", "text": "hi"}]}
    assert tool_result(tool, None) == {"content": []}
    assert tool_result(tool, ["a", {"type": "text", "text": "b"}])["content"][1]["text"] == "b"
    assert tool_result(tool, {"k": 1})["structuredContent"] == {"k": 1}
    assert error_result("bad") == {"content": [{"type": "text", "text": "bad"}],
                                   "isError": True}


def test_a_structured_return_type_publishes_an_output_schema() -> None:
    def where() -> Point:
        return Point(1, 2)

    tool = registry_tool(where)
    assert tool.output_schema is not None and tool.output_schema["required"] == ["x", "y"]
    assert tool_result(tool, Point(1, 2))["structuredContent"] == {"x": 1, "y": 2}


def test_success_decodes_as_is_error_false() -> None:
    """``isError`` is absent on success and defaults to false (schema.json)."""
    result = msgspec.json.decode(b'{"content": []}', type=types.CallToolResult)
    assert result.is_error is False
    assert b"isError" not in msgspec.json.encode(result)


async def test_a_failing_tool_is_a_tool_error_and_logged(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    server = Server("fails")

    @server.tool()
    def boom() -> str:
        """Fails."""
        raise RuntimeError("the database is down")

    with caplog.at_level(logging.ERROR, "mcpcore.server"):
        reply = await DirectPeer(server).request("tools/call", {"name": "boom"})
    assert reply.result["isError"] is True
    assert "database" not in reply.result["content"][0]["text"]  # no internals on the wire
    assert "the database is down" in caplog.text
