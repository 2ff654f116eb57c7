"""Security properties any server should have, authenticated or not: nothing internal in
error bodies, no path traversal through resources, bounded JSON nesting."""

from __future__ import annotations

import re
from typing import Any

from mcpcore.conformance import wire
from mcpcore.conformance.checks.common import expect_alive
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import RecordedExchange

#: What must never appear in an error a server sends (stack traces, file paths, secrets).
LEAKS: dict[str, re.Pattern[str]] = {
    "a Python traceback": re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", "
                                     r"line \d+"),
    "a JavaScript/Java stack trace": re.compile(r"\n\s+at [\w.$<>]+ \(|node_modules/|"
                                                r"at java\.|Exception in thread"),
    "a server file path": re.compile(r"(?:/home/|/usr/lib/python|/site-packages/|/srv/|"
                                     r"/opt/|/var/www/|[A-Z]:\\\\(?:Users|Program))"),
    "a private key": re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----"),
    "a cloud credential": re.compile(r"AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9]{20,}|xox[bp]-"),
    "a connection string": re.compile(r"(?:postgres|mysql|mongodb|redis)://[^\s\"']*:[^\s\"']*@"),
}
TRAVERSAL = ("file:///etc/passwd", "file:///../../../../../../etc/passwd",
             "test://x/../../../../etc/passwd")
PASSWD = re.compile(r"root:[x*!]?:0:0:")


def leaks_in(text: str, secrets: list[str]) -> list[str]:
    """The kinds of leak found in ``text`` (``secrets``: strings that must never appear)."""
    found = [name for name, pattern in LEAKS.items() if pattern.search(text)]
    found += ["the request's access token" for s in secrets if s and s in text]
    return found


def error_text(exchange: RecordedExchange) -> str:
    """The parts of an answer that describe an error: JSON-RPC errors, tool errors, and
    the body of any 4xx/5xx response."""
    parts: list[str] = []
    for message in exchange.messages:
        if isinstance(message.get("error"), dict):
            parts.append(str(message["error"]))
        result = as_dict(message.get("result"))
        if result.get("isError"):
            parts.append(str(result.get("content")))
    if exchange.status is not None and exchange.status >= 400 and not exchange.messages:
        parts.append(exchange.text)
    if exchange.status is not None and exchange.status >= 400:
        parts.append(exchange.response_headers.get("www-authenticate", ""))
    return "\n".join(parts)


async def _provoke(ctx: AuditContext) -> None:
    """Requests likely to make a careless server print its internals."""
    bad: Any = {"a": [1, {"b": None}], "n": 10**40}
    if ctx.session.modern:
        await ctx.request("conformance/explode", bad, label="unknown method with odd params")
        await ctx.request("tools/call", {"name": 42, "arguments": []}, label="tools/call "
                          "with a number as name")
        await ctx.request("resources/read", {"uri": {"not": "a string"}}, label="resources/read "
                          "with an object as uri")
        await ctx.request("prompts/get", {"name": "x", "arguments": {"a": 1}},
                          label="prompts/get with a number argument")
        await ctx.request("tools/list", {"cursor": "\u0000\ufffe" * 3}, label="tools/list with "
                          "a broken cursor")
    await ctx.send(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":',
                   headers=wire.standard_headers({"method": "x"}), label="truncated JSON")


async def provoke(ctx: AuditContext) -> None:
    """``_provoke`` once per era: the final checks that read the whole run
    (security.error-leakage, wire.schema-valid) run at the same time, and each must
    see these answers whichever starts first."""
    await ctx.session.once("provoke-errors", lambda: _provoke(ctx))


@check("security.error-leakage", title="errors reveal no internals",
       requirement="“Log messages MUST NOT contain: Credentials or secrets Personal identifying "
                   "information Internal system details that could aid attacks” "
                   "(server/utilities/logging, Security) and “Servers MUST: Validate all tool "
                   "inputs Implement proper access controls Rate limit tool invocations Sanitize "
                   "tool outputs” (server/tools, Security Considerations); the same holds for "
                   "error messages.",
       level=Level.MUST, spec=spec("server/tools", "security-considerations"),
       tags=["security"], final=True,
       fix="Return generic error messages; log tracebacks, paths and secrets server-side only, and "
           "never echo the caller's token.")
async def error_leakage(ctx: AuditContext) -> None:
    await provoke(ctx)
    secrets = [ctx.target.bearer] if ctx.target.bearer else []
    for exchange in list(ctx.session.exchanges):
        found = leaks_in(error_text(exchange), secrets)
        if found:
            ctx.evidence.append(exchange)
            ctx.fail(f"{exchange.label}: the error reveals {', '.join(sorted(set(found)))}")


@check("security.path-traversal", title="resource URIs cannot escape to the file system",
       requirement="“Servers MUST validate all resource URIs” and “Servers MUST sanitize file "
                   "paths to prevent directory traversal attacks” (server/resources, Security "
                   "Considerations)",
       level=Level.MUST, spec=spec("server/resources", "security-considerations"),
       eras=[wire.MODERN], tags=["security", "resources"],
       fix="Resolve resource paths against a root and refuse any URI whose resolved path escapes "
           "it (or that names a scheme you do not serve).")
async def path_traversal(ctx: AuditContext) -> None:
    if not await ctx.has_capability("resources"):
        ctx.skip("the server declares no resources capability")
    uris = list(TRAVERSAL)
    for resource in await ctx.items("resources/list"):
        uri = str(resource.get("uri", ""))
        if uri.startswith("file://"):
            uris.append(uri.rsplit("/", 1)[0] + "/../../../../../../../etc/passwd")
            break
    for uri in uris:
        exchange = await ctx.request("resources/read", {"uri": uri}, label=f"read {uri}")
        expect_alive(ctx, exchange)
        ctx.expect(not PASSWD.search(exchange.text), f"{uri} returned the host's /etc/passwd")


@check("security.deep-nesting", title="deeply nested JSON is refused cleanly",
       requirement="No spec sentence sets a nesting limit; the nearest rule is “Implementations "
                   "SHOULD apply reasonable bounds, such as a maximum schema depth, a cap on the "
                   "total number of subschemas, or a per-validation time budget, to prevent a "
                   "malicious schema from acting as a Denial-of-Service vector against the "
                   "validator.” (basic/index, JSON Schema Usage), so parsing 50,000 levels is a "
                   "warning.",
       level=Level.SHOULD, spec=spec("basic/transports/streamable-http", "security--endpoint"),
       tags=["security", "limits"],
       fix="Use a JSON parser with a depth limit (or catch RecursionError) and answer too-deep "
           "bodies with 400 -32700.")
async def deep_nesting(ctx: AuditContext) -> None:
    # Only the depth is wrong: the request is otherwise valid for its era (full _meta;
    # a 2025-era initialize, which needs no session), and the nesting sits under an
    # extension key of _meta that the server ignores when it is shallow.
    depth = 50_000
    nested = b"[" * depth + b"]" * depth
    if ctx.session.modern:
        meta = wire.encode(wire.meta())[:-1]
        raw = (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":' + meta
               + b',"io.github.mcpcore.conformance/nested":' + nested + b"}}}")
        headers = wire.standard_headers({"method": "tools/list"})
    else:
        raw = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
               + wire.encode(ctx.era) + b',"capabilities":{},"clientInfo":'
               + wire.encode(dict(wire.SUITE_CLIENT))
               + b',"_meta":{"io.github.mcpcore.conformance/nested":' + nested + b"}}}")
        headers = wire.legacy_headers()
    exchange = await ctx.send(raw, headers=headers, label=f"JSON nested {depth} levels")
    expect_alive(ctx, exchange)
    ctx.expect(exchange.result is None, "the deeply nested request was served")
    if ctx.http:
        ctx.expect(exchange.status is not None and 400 <= exchange.status < 500,
                   f"expected a 4xx status, got {exchange.describe()}")
    after = await (ctx.request("server/discover", label="server/discover afterwards")
                   if ctx.session.modern else ctx.send(
                       {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                       headers=wire.legacy_headers(), label="ping afterwards"))
    expect_alive(ctx, after, "the server after the nested body")
