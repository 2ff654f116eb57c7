"""``search_tools``: the gateway's own tool that finds tools in the federated catalog.

An agent facing hundreds of upstream tools asks for the few it needs by words instead of
reading every page of ``tools/list`` (docs/gateway.md, "Large catalogs: search_tools").
The gateway offers it when ``search_tools = true``:

- ``query``: words (at most ``MAX_QUERY_WORDS``, ``MAX_QUERY_CHARS`` characters in all),
  each matched case-insensitively as a substring of a tool's served name or title, and
  of its description. A tool matches when one word does. Ranking: tools with more words
  in their name first, then more words anywhere, then catalog order (deterministic).
- ``limit`` (1 to ``MAX_LIMIT``, default ``DEFAULT_LIMIT``) and ``cursor``: paging with
  no state in the gateway: the cursor is sealed with the server's key ring
  (``SealedCursors``, as the gateway's list cursors), bound to the caller, the query and
  the matches it paged through; another caller's, another query's, a tampered or an
  expired one is refused (a tool error saying to search again).
- ``includeSchema``: each match's ``inputSchema`` too (default: name, title and a
  description cut to ``MAX_DESCRIPTION`` characters).

A caller finds what its ``tools/list`` shows and nothing else: the same policy test
(``Server.visible_tools``), and quarantined tools are not listed, so never found. The
work per call is one pass over the catalog (each tool's text lower-cased once per
catalog swap, ``index``), the policy asked only about the matches.

The name is ``SEARCH_TOOL``; it is the gateway's: an upstream tool (or alias) served
under the same name is left out of the catalog, with a warning saying how to reach it
(``install``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcpcore.context import Context
from mcpcore.errors import InvalidCursor
from mcpcore.gateway.catalog import Entry
from mcpcore.gateway.errors import cut
from mcpcore.pagination import SealedCursors
from mcpcore.principal import Principal
from mcpcore.schema import compile_schema
from mcpcore.server import Server
from mcpcore.tools import ToolDef, ToolRegistry, error_result

log = logging.getLogger("mcpcore.gateway.search")

#: The tool's name (fixed: agents and rule files know it by it).
SEARCH_TOOL: Final = "search_tools"
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 100
#: The query's bounds: characters, and distinct words.
MAX_QUERY_CHARS: Final = 256
MAX_QUERY_WORDS: Final = 12
#: A match's description and title in the results, at most (characters).
MAX_DESCRIPTION: Final = 300
MAX_TITLE: Final = 200
#: A cursor longer than any this tool issues is refused unopened.
MAX_CURSOR: Final = 2048
#: A match's line in the text summary: its description cut to this.
_SUMMARY_DESCRIPTION: Final = 100
#: The cursors' kind (their binding names it: a list's cursor opens none of these).
_CURSOR_KIND: Final = "search_tools"

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
                  "description": f"Words to look for in tool names and descriptions "
                                 f"(case-insensitive; at most {MAX_QUERY_WORDS})."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                  "default": DEFAULT_LIMIT,
                  "description": "The most tools to return in one page."},
        "cursor": {"type": "string", "maxLength": MAX_CURSOR,
                   "description": "nextCursor of the previous page (same query)."},
        "includeSchema": {"type": "boolean", "default": False,
                          "description": "Return each tool's inputSchema too."},
    },
    "required": ["query"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "tools": {"type": "array", "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "title": {"type": "string"},
                           "description": {"type": "string"},
                           "inputSchema": {"type": "object"}},
            "required": ["name"]}},
        "matches": {"type": "integer", "minimum": 0,
                    "description": "How many tools match, on every page."},
        "nextCursor": {"type": "string"},
    },
    "required": ["tools", "matches"],
}

DEFINITION: Final[dict[str, Any]] = {
    "name": SEARCH_TOOL,
    "title": "Search tools",
    "description": "Find tools of this gateway by words in their names and descriptions. "
                   "Matches in names come first. Page on with the nextCursor it returns.",
    "inputSchema": INPUT_SCHEMA,
    "outputSchema": OUTPUT_SCHEMA,
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}


@dataclass(frozen=True, slots=True)
class Indexed:
    """A catalog tool as searched: its served name and title, and its description,
    case-folded."""

    tool: ToolDef
    name: str
    description: str


def words_of(query: str) -> list[str]:
    """The query's distinct words, case-folded, in order."""
    return list(dict.fromkeys(query.casefold().split()))


def rank(index: Sequence[Indexed], words: Sequence[str]) -> list[ToolDef]:
    """The tools of ``index`` one of ``words`` is in, best first: more words in the
    name, then more words in all, then catalog order (``index``'s)."""
    scored: list[tuple[int, int, int, ToolDef]] = []
    for position, item in enumerate(index):
        in_name = in_all = 0
        for word in words:
            if word in item.name:
                in_name += 1
                in_all += 1
            elif word in item.description:
                in_all += 1
        if in_all:
            scored.append((-in_name, -in_all, position, item.tool))
    scored.sort(key=lambda s: s[:3])
    return [s[3] for s in scored]


class ToolSearch:
    """``search_tools`` over the catalog the gateway's ``server`` serves (module
    docstring). ``install`` it in each new tool registry, then ``index`` that registry
    once its tools are added."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.cursors = SealedCursors(server.mrtr.get_sealer)
        self._index: tuple[Indexed, ...] = ()
        self._validator = compile_schema(INPUT_SCHEMA)
        self._shadowed: frozenset[str] = frozenset()

    def install(self, tools: ToolRegistry, entries: Sequence[Entry]) -> list[Entry]:
        """Add the tool to ``tools`` (before the catalog's, in a new registry) and
        return ``entries`` less the one that would take its name, with a warning when
        that changes (an upstream's tool served as ``search_tools``)."""
        tools.add_raw(DEFINITION, self.call, category="read", external=False)
        kept = [e for e in entries if e.name != SEARCH_TOOL]
        shadowed = frozenset(f"{e.upstream}:{e.original}" for e in entries
                             if e.name == SEARCH_TOOL)
        if shadowed and shadowed != self._shadowed:
            for owner in sorted(shadowed):
                upstream, original = owner.split(":", 1)
                log.warning("upstream %s: tool %.200r is not served: its name %r is the "
                            "gateway's own search tool (search_tools = true); give it "
                            "an alias in [gateway] aliases to reach it", upstream,
                            original, SEARCH_TOOL)
        self._shadowed = shadowed
        return kept

    def index(self, tools: ToolRegistry) -> None:
        """Search ``tools``' listed upstream tools from now on, in their list order."""
        self._index = tuple(
            Indexed(tool, f"{tool.name} {tool.title or ''}".casefold(),
                    (tool.description or "").casefold())
            for tool in tools.listed() if tool.upstream is not None)

    def find(self, query: str, principal: Principal) -> list[ToolDef]:
        """Every match of ``query`` that ``principal`` may see, best first."""
        ranked = rank(self._index, words_of(query))
        return list(self.server.visible_tools(principal, ranked))

    async def call(self, arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
        """The tool's handler: a ``CallToolResult`` (a tool error for bad arguments)."""
        problems = self._validator.validate(arguments)
        if problems:  # a bounded number, each cut (mcpcore.schema's limits)
            return error_result("Invalid arguments: " + "; ".join(problems))
        query: str = arguments["query"]
        words = words_of(query)
        if not words:
            return error_result("Invalid arguments: query has no words")
        if len(words) > MAX_QUERY_WORDS:
            return error_result(f"Invalid arguments: query has {len(words)} words; "
                                f"use at most {MAX_QUERY_WORDS}")
        limit = int(arguments.get("limit", DEFAULT_LIMIT))  # JSON Schema: 5.0 is one
        matches = self.find(query, ctx.principal)
        # The cursor is bound to the caller, the query's words and the matches' names.
        bound: list[Any] = [words, *(tool.name for tool in matches)]
        principal = ctx.principal.key
        start = 0
        cursor = arguments.get("cursor")
        if cursor is not None:
            try:
                start = self.cursors.decode(cursor, _CURSOR_KIND, bound, principal)
            except InvalidCursor as exc:
                reason = exc.message.removeprefix("Invalid cursor").lstrip(": ")
                if "list changed" in reason:
                    reason = ("it was issued for another query, or the catalog changed "
                              "since")
                return error_result(f"Invalid cursor: {reason or 'malformed'}; search "
                                    "again without a cursor")
            if start > len(matches):  # sealed by this server: only a bug gets here
                return error_result("Invalid cursor: past the matches; search again "
                                    "without a cursor")
        page = matches[start:start + limit]
        end = start + len(page)
        found: dict[str, Any] = {
            "tools": [_described(tool, arguments.get("includeSchema", False))
                      for tool in page],
            "matches": len(matches)}
        if end < len(matches):
            found["nextCursor"] = self.cursors.encode(_CURSOR_KIND, end, bound, principal)
        return {"content": [{"type": "text", "text": _summary(query, found, start)}],
                "structuredContent": found}


def _described(tool: ToolDef, with_schema: bool) -> dict[str, Any]:
    described: dict[str, Any] = {"name": tool.name}
    if tool.title:
        described["title"] = cut(tool.title, MAX_TITLE)
    if tool.description:
        described["description"] = cut(tool.description, MAX_DESCRIPTION)
    if with_schema:
        described["inputSchema"] = tool.input_schema
    return described


def _summary(query: str, found: dict[str, Any], start: int) -> str:
    """The page as text, for a client that reads no ``structuredContent``."""
    tools: list[dict[str, Any]] = found["tools"]
    shown = cut(query, 60)
    if not tools:
        return f"No tool matches {shown!r}."
    lines = [f"Tools {start + 1}-{start + len(tools)} of {found['matches']} matching "
             f"{shown!r}:"]
    for tool in tools:
        description = tool.get("description")
        lines.append(f"- {tool['name']}" + (
            f": {cut(description, _SUMMARY_DESCRIPTION)}" if description else ""))
    if "nextCursor" in found:
        lines.append(f"More: call {SEARCH_TOOL} again with the same query and "
                     f"cursor {found['nextCursor']!r}.")
    return "\n".join(lines)


__all__ = ["DEFAULT_LIMIT", "DEFINITION", "MAX_LIMIT", "MAX_QUERY_CHARS", "MAX_QUERY_WORDS",
           "SEARCH_TOOL", "Indexed", "ToolSearch", "rank", "words_of"]
