"""``search_tools`` over the federated catalog (docs/gateway.md, "Large catalogs:
search_tools"): words matched against names and descriptions, name matches first then
catalog order; stateless paging with sealed cursors bound to the caller and the query;
the lists' policy filter; quarantined tools never found; bounded arguments; both
downstream eras."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpcore import Server, StreamableHTTP
from mcpcore.gateway import pins_cli
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.gateway.policy import gateway_policy
from mcpcore.gateway.search import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    OUTPUT_SCHEMA,
    SEARCH_TOOL,
    ToolSearch,
)
from mcpcore.jsonrpc import Request
from mcpcore.policy import MemoryAuditSink, Rule, Ruleset
from mcpcore.principal import ANONYMOUS, Principal
from mcpcore.schema import compile_schema
from mcpcore.server import Server as EngineServer
from mcpcore.tools import CATEGORIES, ToolRegistry
from tests.gateway.inprocess import (
    URL,
    beta_server,
    downstream,
    http_client,
    serving,
)
from tests.support.wire import make_meta

ERAS = ["2026-07-28", "legacy"]
CHECK_OUTPUT = compile_schema(OUTPUT_SCHEMA)


def tracker_server(numbered: int = 0) -> Server:
    """Tools whose names and descriptions share words; ``numbered`` more for paging."""
    server = Server("tracker", "1.0.0")

    @server.tool()
    def find_issue(id: int) -> str:
        """Look up a ticket by id."""
        return str(id)

    @server.tool()
    def notes(text: str) -> str:
        """Search the notes for an ISSUE."""
        return text

    @server.tool(title="Create an issue")
    def create_issue(title: str) -> str:
        """Open a new ticket."""
        return title

    @server.tool()
    def unrelated() -> str:
        """Nothing to see."""
        return ""

    async def nothing(arguments: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"content": []}

    for n in range(numbered):
        server.tools.add_raw({"name": f"page_{n:02d}", "description": "A paged tool.",
                              "inputSchema": {"type": "object"}}, nothing)
    return server


def config(**gateway: Any) -> GatewayConfig:
    options: dict[str, Any] = {"search_tools": True, **gateway}
    return GatewayConfig(upstreams=(UpstreamConfig("tracker", url=URL),
                                    UpstreamConfig("beta", url=URL, era="legacy")),
                         **options)


def apps(numbered: int = 0) -> dict[str, object]:
    return {"tracker": StreamableHTTP(tracker_server(numbered)),
            "beta": StreamableHTTP(beta_server())}


async def search(client: Any, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.call_tool_raw(SEARCH_TOOL, arguments)
    return result


def found(result: dict[str, Any]) -> list[str]:
    assert result.get("isError") is not True, result
    structured = result["structuredContent"]
    assert CHECK_OUTPUT.validate(structured) == []
    return [tool["name"] for tool in structured["tools"]]


def refusal(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    assert "structuredContent" not in result
    text: str = result["content"][0]["text"]
    return text


# -- matches and ranking --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
async def test_matches_rank_names_first_then_catalog_order(mode: str) -> None:
    async with serving(config(), apps()) as gateway, downstream(gateway, mode) as client:
        # One word: names (and titles) first, in catalog order; then descriptions.
        assert found(await search(client, query="issue")) == [
            "tracker__find_issue", "tracker__create_issue", "tracker__notes"]
        # Case-insensitive, more words in the name first.
        assert found(await search(client, query="Create ISSUE")) == [
            "tracker__create_issue", "tracker__find_issue", "tracker__notes"]
        # Words in the name, then in the description; words are substrings.
        assert found(await search(client, query="ticket create")) == [
            "tracker__create_issue", "tracker__find_issue"]
        # A title is part of the name (create_issue's is "Create an issue").
        assert found(await search(client, query="an")) == [
            "tracker__create_issue", "tracker__notes"]
        # Served (prefixed) names match, across upstreams, the 2025 upstream's too.
        assert found(await search(client, query="echo")) == ["beta__echo"]
        assert found(await search(client, query="shared")) == ["beta__shared"]
        # The search tool never finds itself; a word nothing has finds nothing.
        assert SEARCH_TOOL not in found(await search(client, query="search tools"))
        nothing = await search(client, query="zebra")
        assert found(nothing) == [] and nothing["structuredContent"]["matches"] == 0
        assert nothing["content"][0]["text"] == "No tool matches 'zebra'."

        # Each match: name, title, description; its input schema when asked.
        result = await search(client, query="create", includeSchema=True)
        [tool] = result["structuredContent"]["tools"]
        assert tool == {"name": "tracker__create_issue", "title": "Create an issue",
                        "description": "Open a new ticket.",
                        "inputSchema": next(t.input_schema for t in await client.tools()
                                            if t.name == "tracker__create_issue")}
        assert "inputSchema" not in (await search(client, query="create")
                                     )["structuredContent"]["tools"][0]
        # A text summary for clients that read no structured content.
        assert result["content"] == [{"type": "text", "text":
                                      "Tools 1-1 of 1 matching 'create':\n"
                                      "- tracker__create_issue: Open a new ticket."}]

        # Listed by the gateway itself, read-only, with its output schema.
        [listed] = [t for t in await client.tools(refresh=True) if t.name == SEARCH_TOOL]
        assert listed.annotations is not None and listed.annotations.read_only_hint is True
        assert listed.output_schema == OUTPUT_SCHEMA


async def test_off_by_default() -> None:
    async with serving(config(search_tools=False), apps()) as gateway, \
            downstream(gateway) as client:
        assert gateway.search is None
        assert SEARCH_TOOL not in {t.name for t in await client.tools()}


# -- paging ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ERAS)
async def test_pages_with_a_sealed_cursor(mode: str) -> None:
    async with serving(config(), apps(numbered=25)) as gateway, \
            downstream(gateway, mode) as client:
        names: list[str] = []
        result = await search(client, query="paged", limit=10)
        pages = 1
        while True:
            names += found(result)
            assert result["structuredContent"]["matches"] == 25
            cursor = result["structuredContent"].get("nextCursor")
            if cursor is None:
                break
            assert f"cursor {cursor!r}" in result["content"][0]["text"]
            result = await search(client, query="paged", limit=10, cursor=cursor)
            pages += 1
        assert pages == 3
        assert names == [f"tracker__page_{n:02d}" for n in range(25)]  # each once, in order

        first = await search(client, query="paged", limit=10)
        cursor = first["structuredContent"]["nextCursor"]
        # The same query with the same words (another spelling) pages on.
        assert found(await search(client, query="PAGED  ", cursor=cursor))[0] == \
            "tracker__page_10"
        # Another query's cursor: refused, with what to do; even when that query
        # matches the same tools in the same order ("page" is in each name).
        assert refusal(await search(client, query="page", cursor=cursor)) == (
            "Invalid cursor: it was issued for another query, or the catalog changed "
            "since; search again without a cursor")
        # Tampered: refused.
        tampered = cursor[:-4] + ("AAAA" if not cursor.endswith("AAAA") else "BBBB")
        assert "search again without a cursor" in refusal(
            await search(client, query="paged", cursor=tampered))
        assert "failed authentication" in refusal(
            await search(client, query="paged", cursor=tampered))
        # A list cursor is no search cursor.
        assert refusal(await search(client, query="paged", cursor="bm90IGEgY3Vyc29y"))


async def _as(server: EngineServer, principal: Principal, arguments: dict[str, Any]
              ) -> dict[str, Any]:
    params = msgspec.json.encode({"name": SEARCH_TOOL, "arguments": arguments,
                                  "_meta": make_meta()})
    return await server.handle(Request(id=1, method="tools/call", params=msgspec.Raw(params)),
                               principal=principal)


async def test_another_callers_cursor_is_refused() -> None:
    alice, bob = Principal("alice", issuer="https://idp.example"), \
        Principal("bob", issuer="https://idp.example")
    async with serving(config(), apps(numbered=25)) as gateway:
        first = await _as(gateway.server, alice, {"query": "paged", "limit": 5})
        cursor = first["structuredContent"]["nextCursor"]
        mine = await _as(gateway.server, alice, {"query": "paged", "cursor": cursor})
        assert found(mine)[0] == "tracker__page_05"
        assert refusal(await _as(gateway.server, bob, {"query": "paged", "cursor": cursor})
                       ) == ("Invalid cursor: the cursor was issued to a different "
                             "principal; search again without a cursor")


async def test_a_cursor_from_before_the_catalog_changed_is_refused() -> None:
    tracker = tracker_server(numbered=5)
    served = {"tracker": StreamableHTTP(tracker), "beta": StreamableHTTP(beta_server())}
    async with serving(config(), served) as gateway, downstream(gateway) as client:
        cursor = (await search(client, query="paged", limit=2)
                  )["structuredContent"]["nextCursor"]
        tracker.tools.remove("page_00")
        await gateway.refresh()
        assert "another query, or the catalog changed" in refusal(
            await search(client, query="paged", cursor=cursor))


# -- policy and quarantine -----------------------------------------------------------------
def rules(*table: Rule, default: str = "deny") -> Ruleset:
    return Ruleset(table, default=default,  # type: ignore[arg-type]
                   category_scopes={c: () for c in CATEGORIES})


@pytest.mark.parametrize("mode", ERAS)
async def test_a_tool_the_caller_may_not_call_is_never_found(mode: str) -> None:
    ruleset = rules(Rule("no-create", "deny", tools={"tracker__create_issue"}),
                    Rule("no-beta", "deny", upstreams={"beta"}), default="allow")
    policy = gateway_policy(config(), ruleset=ruleset, sinks=[MemoryAuditSink()])
    async with serving(config(), apps(), policy=policy) as gateway, \
            downstream(gateway, mode) as client:
        listed = {t.name for t in await client.tools()}
        assert "tracker__create_issue" not in listed and "beta__echo" not in listed
        assert found(await search(client, query="issue")) == [
            "tracker__find_issue", "tracker__notes"]
        assert found(await search(client, query="echo shared")) == []
        # What it finds is exactly what its tools/list shows.
        everything = await search(client, query="_", limit=MAX_LIMIT)
        assert set(found(everything)) == listed - {SEARCH_TOOL}


async def test_a_policy_that_denies_the_search_tool_denies_it() -> None:
    policy = gateway_policy(config(), ruleset=rules(Rule("no-search", "deny",
                                                         tools={SEARCH_TOOL}),
                                                    default="allow"),
                            sinks=[MemoryAuditSink()])
    async with serving(config(), apps(), policy=policy) as gateway, \
            downstream(gateway) as client:
        assert SEARCH_TOOL not in {t.name for t in await client.tools()}
        assert refusal(await search(client, query="issue")) == \
            "This tool call is not permitted."


@pytest.mark.parametrize("mode", ERAS)
async def test_quarantined_tools_are_never_found(mode: str, tmp_path: Path) -> None:
    tracker = tracker_server()
    served: dict[str, object] = {"tracker": StreamableHTTP(tracker),
                                 "beta": StreamableHTTP(beta_server())}
    clients = {name: http_client(app) for name, app in served.items()}
    try:
        fetched = await pins_cli.fetch_tool_definitions(config(), http_clients=clients)
    finally:
        for c in clients.values():
            await c.aclose()
    lock = tmp_path / "gateway.lock"
    pins_cli.pin_definitions(fetched.definitions).save(lock)
    async with serving(config(pins=str(lock)), served) as gateway, \
            downstream(gateway, mode) as client:
        assert "tracker__create_issue" in found(await search(client, query="issue"))
        # The upstream changes the tool while it runs: held at the next refresh.
        tracker.tools.remove("create_issue")

        @tracker.tool()
        def create_issue(title: str) -> str:
            """Open a new issue, and mail it to someone else."""
            return title

        await gateway.refresh()
        assert found(await search(client, query="issue")) == [
            "tracker__find_issue", "tracker__notes"]
        assert found(await search(client, query="create")) == []


# -- bounds -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("arguments", "says"), [
    ({}, "'query' is a required property"),
    ({"query": ""}, "should be non-empty"),
    ({"query": "   "}, "query has no words"),
    ({"query": "x" * (MAX_QUERY_CHARS + 1)}, "is too long"),
    ({"query": " ".join(f"w{n}" for n in range(MAX_QUERY_WORDS + 1))},
     f"use at most {MAX_QUERY_WORDS}"),
    ({"query": 7}, "is not of type 'string'"),
    ({"query": "issue", "limit": 0}, "less than the minimum of 1"),
    ({"query": "issue", "limit": MAX_LIMIT + 1}, "greater than the maximum"),
    ({"query": "issue", "limit": True}, "is not of type 'integer'"),
    ({"query": "issue", "cursor": "c" * 5000}, "$.cursor: 'ccc"),
    ({"query": "issue", "extra": 1}, "Additional properties are not allowed"),
])
async def test_bad_arguments_are_a_tool_error(arguments: dict[str, Any], says: str) -> None:
    async with serving(config(), apps()) as gateway, downstream(gateway) as client:
        text = refusal(await search(client, **arguments))
        assert says in text and text.startswith(("Invalid arguments", "Invalid cursor"))
        assert len(text) < 400  # the caller's values quoted, cut


async def test_limit_bounds_the_page() -> None:
    async with serving(config(), apps(numbered=150)) as gateway, \
            downstream(gateway) as client:
        assert len(found(await search(client, query="paged"))) == 20  # the default
        most = await search(client, query="paged", limit=MAX_LIMIT)
        assert len(found(most)) == MAX_LIMIT
        assert most["structuredContent"]["matches"] == 150
        assert len(found(await search(client, query="paged", limit=3.0))) == 3


async def test_descriptions_are_cut() -> None:
    server = Server("long", "1.0.0")

    async def nothing(arguments: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"content": []}

    server.tools.add_raw({"name": "wordy", "title": "T" * 1000, "description": "d" * 10_000,
                          "inputSchema": {"type": "object"}}, nothing)
    gateway_config = GatewayConfig(upstreams=(UpstreamConfig("long", url=URL),),
                                   search_tools=True)
    async with serving(gateway_config, {"long": StreamableHTTP(server)}) as gateway, \
            downstream(gateway) as client:
        result = await search(client, query="wordy")
        [tool] = result["structuredContent"]["tools"]
        assert len(tool["description"]) == 303 and len(tool["title"]) == 203
        assert len(result["content"][0]["text"]) < 300


# -- the name -----------------------------------------------------------------------------------
async def test_an_upstream_tool_of_the_same_name_is_left_out_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    server = Server("other", "1.0.0")

    @server.tool()
    def search_tools(query: str) -> str:
        """The upstream's own search."""
        return "upstream"

    @server.tool()
    def lookup() -> str:
        """Look something up."""
        return "found"

    unprefixed = GatewayConfig(upstreams=(UpstreamConfig("other", url=URL),),
                               prefixing=False, search_tools=True,
                               aliases={"other_search": "search_tools"})
    with caplog.at_level(logging.WARNING, logger="mcpcore.gateway.search"):
        async with serving(unprefixed, {"other": StreamableHTTP(server)}) as gateway, \
                downstream(gateway) as client:
            assert [r.message for r in caplog.records].count(
                "upstream other: tool 'search_tools' is not served: its name "
                "'search_tools' is the gateway's own search tool (search_tools = true); "
                "give it an alias in [gateway] aliases to reach it") == 1
            # The gateway's tool answers; the upstream's is reached by its alias.
            assert found(await search(client, query="look")) == ["lookup"]
            assert (await client.call_tool("other_search", {"query": "x"})
                    ).content[0].text == "upstream"  # type: ignore[union-attr]
            await gateway.refresh()  # not logged again while nothing changed
            assert len([r for r in caplog.records if "is not served" in r.message]) == 1


# -- the work per call ----------------------------------------------------------------------------
def test_the_policy_is_asked_about_the_matches_only() -> None:
    """5,000 tools: one pass over the index, a policy decision per match (counted)."""
    server = EngineServer("g", "1")
    asked: list[str] = []

    class Counting:
        def filters(self, listing: str) -> bool:
            return True

        def visible(self, principal: Principal, tool: Any, listing: str) -> bool:
            asked.append(tool.name)
            return bool(tool.name != "u__t700")

    server.policy = Counting()  # type: ignore[assignment]
    tools = ToolRegistry()
    search_tool = ToolSearch(server)
    search_tool.install(tools, [])

    async def nothing(arguments: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"content": []}

    for n in range(5000):
        tools.add_raw({"name": f"u__t{n}", "description": "blue" if n % 100 == 0 else "red",
                       "inputSchema": {"type": "object"}}, nothing, upstream="u")
    search_tool.index(tools)
    matches = search_tool.find("blue", ANONYMOUS)
    assert len(asked) == 50  # one decision per match, none per catalog tool
    assert [t.name for t in matches] == [f"u__t{n}" for n in range(0, 5000, 100)
                                         if n != 700]


# -- the docs -------------------------------------------------------------------------------------
async def test_the_documented_result_is_what_the_gateway_answers() -> None:
    """docs/gateway.md, "Large catalogs: search_tools": its example result."""
    from tests.docs_blocks import ROOT, blocks

    [block] = [b for b in blocks(ROOT / "docs" / "gateway.md")
               if b.marker == "tests/gateway/test_search_tools.py"]
    async with serving(config(), apps()) as gateway, downstream(gateway) as client:
        result = await search(client, query="issue")
    assert result["structuredContent"] == msgspec.json.decode(block.code)
