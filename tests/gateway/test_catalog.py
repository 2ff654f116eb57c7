"""The federated catalog's rules (mcpcore.gateway.catalog), on listings given as data."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpcore.gateway.catalog import MAX_DEFINITION_BYTES, compile_catalog
from mcpcore.gateway.config import Filters, GatewayConfig, UpstreamConfig
from mcpcore.gateway.upstreams import Listing


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


def listing(*tools: dict[str, Any], resources: tuple[dict[str, Any], ...] = (),
            templates: tuple[dict[str, Any], ...] = (),
            prompts: tuple[dict[str, Any], ...] = ()) -> Listing:
    return Listing(list(tools), list(resources), list(templates), list(prompts))


def config(*upstreams: UpstreamConfig, **options: Any) -> GatewayConfig:
    return GatewayConfig(upstreams=upstreams, **options)


A, B = UpstreamConfig("a", url="http://a"), UpstreamConfig("b", url="http://b")


def test_prefixing_renames_tools_and_prompts_not_uris() -> None:
    snapshot = compile_catalog(config(A, UpstreamConfig("b", url="http://b", prefix="bee")), {
        "a": listing(tool("x"), resources=({"uri": "file:///a", "name": "a"},),
                     prompts=({"name": "p"},)),
        "b": listing(tool("x"), templates=({"uriTemplate": "file:///{p}", "name": "t"},))})
    assert [t.name for t in snapshot.tools] == ["a__x", "bee__x"]
    assert snapshot.tool_owner["bee__x"].original == "x"
    assert snapshot.tool_owner["bee__x"].definition["name"] == "bee__x"
    assert [p.name for p in snapshot.prompts] == ["a__p"]
    assert [r.name for r in snapshot.resources] == ["file:///a"]
    assert [t.name for t in snapshot.templates] == ["file:///{p}"]


def test_collisions_go_to_the_earlier_upstream(caplog: pytest.LogCaptureFixture) -> None:
    listings = {"a": listing(tool("x", description="a's")),
                "b": listing(tool("x", description="b's"), tool("y"))}
    with caplog.at_level(logging.WARNING, "mcpcore.gateway"):
        snapshot = compile_catalog(config(A, B, prefixing=False), listings)
    assert [(t.name, t.upstream) for t in snapshot.tools] == [("x", "a"), ("y", "b")]
    assert snapshot.tool_owner["x"].definition["description"] == "a's"
    assert "upstream b's collides with upstream a's" in caplog.text
    # The order of the config decides, not the order of the listings.
    swapped = compile_catalog(config(B, A, prefixing=False), listings)
    assert swapped.tool_owner["x"].upstream == "b"


def test_filters_match_the_upstreams_own_names() -> None:
    filtered = UpstreamConfig("a", url="http://a",
                              tools=Filters(include=("get_*", "list_*"), exclude=("*_secret",)),
                              resources=Filters(exclude=("file:///private/*",)))
    snapshot = compile_catalog(config(filtered), {"a": listing(
        tool("get_user"), tool("get_secret"), tool("list_all"), tool("delete_all"),
        resources=({"uri": "file:///private/key", "name": "key"},
                   {"uri": "file:///public/readme", "name": "readme"}))})
    assert [t.original for t in snapshot.tools] == ["get_user", "list_all"]
    assert [r.name for r in snapshot.resources] == ["file:///public/readme"]


def test_composed_names_outside_the_tool_name_rules_are_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    long_prefix = UpstreamConfig("a", url="http://a", prefix="p" * 120)
    with caplog.at_level(logging.WARNING, "mcpcore.gateway"):
        snapshot = compile_catalog(config(long_prefix, B), {
            "a": listing(tool("short"), tool("a_rather_long_name")),
            "b": listing(tool("has space"), tool("ok"))})
    assert [t.name for t in snapshot.tools] == ["p" * 120 + "__short", "b__ok"]
    assert "breaks the spec's tool name rules" in caplog.text


def test_aliases(caplog: pytest.LogCaptureFixture) -> None:
    aliases = {"search": "a__find", "ghost": "a__nothing", "b__x": "a__find"}
    with caplog.at_level(logging.WARNING, "mcpcore.gateway"):
        snapshot = compile_catalog(config(A, B, aliases=aliases),
                                   {"a": listing(tool("find")), "b": listing(tool("x"))})
    alias = snapshot.tool_owner["search"]
    assert (alias.upstream, alias.original, alias.definition["name"]) == ("a", "find", "search")
    assert "ghost" not in snapshot.tool_owner
    assert snapshot.tool_owner["b__x"].upstream == "b"  # an alias never takes a name
    assert "names 'a__nothing', which no upstream serves" in caplog.text
    assert "alias 'b__x' is taken" in caplog.text


def test_an_upstream_that_could_not_be_listed_drops_out() -> None:
    snapshot = compile_catalog(config(A, B), {"a": None, "b": listing(tool("x"))})
    assert snapshot.missing == ("a",)
    assert [t.name for t in snapshot.tools] == ["b__x"]


def test_hostile_definitions_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    huge = tool("huge", description="x" * MAX_DEFINITION_BYTES)
    not_a_tool = {"name": "broken", "inputSchema": "not an object"}
    nameless = {"inputSchema": {"type": "object"}}
    with caplog.at_level(logging.WARNING, "mcpcore.gateway"):
        snapshot = compile_catalog(config(A), {"a": listing(huge, not_a_tool, nameless,
                                                            tool("fine"))})
    assert [t.name for t in snapshot.tools] == ["a__fine"]
    assert "bytes (more than" in caplog.text and "is not valid" in caplog.text


def test_an_upstreams_catalog_is_bounded_in_total(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcore.gateway import catalog

    monkeypatch.setattr(catalog, "MAX_UPSTREAM_BYTES", 2000)
    many = [tool(f"t{i}", description="d" * 100) for i in range(100)]
    snapshot = compile_catalog(config(A, B), {"a": listing(*many), "b": listing(tool("x"))})
    assert 5 < len([t for t in snapshot.tools if t.upstream == "a"]) < 20
    assert snapshot.tool_owner["b__x"].upstream == "b"  # another upstream's budget is its own
