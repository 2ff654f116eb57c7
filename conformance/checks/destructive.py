"""The destructive audit (``--audit destructive``): calls tools that change things, which the
rest of the suite never does, but only the ones the audit settings name, with the scratch
arguments given there (docs/conformance.md, "The destructive mode").

Settings (the ``destructive`` object of ``--audit-config``)::

    {"tools": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "x"},
                "paths": ["path"]}],
     "scratch_dir": "/srv/mcp-scratch"}

``paths`` names the arguments that are file paths or URIs (default: string arguments
called path, file, uri, … or of format uri). ``scratch_dir`` (optional) is the directory
those tools are confined to, when this machine can see it: files written outside it
through ``../`` are then found on disk (and removed).
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

from mcpcore.conformance.checks.common import expect_alive, expect_error
from mcpcore.conformance.checks.security import PASSWD
from mcpcore.conformance.checks.tools import _clean
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import invalid_variants

COMMON: dict[str, Any] = {"pack": "audit", "tags": ["destructive", "security"],
                          "eras": ["2026-07-28"]}
TOOLS_SECURITY = spec("server/tools", "security-considerations")
PATHLIKE = re.compile(r"(^|_)(path|paths|file|files|filename|filepath|dir|directory|folder|"
                      r"dest|destination|src|source|target|uri|url|location)$", re.I)
#: Paths that escape any directory they are joined to, to a file every Unix host has.
TRAVERSALS = ("../../../../../../../../../../etc/passwd", "/etc/passwd",
              "....//....//....//....//....//....//....//etc/passwd",
              "..%2f..%2f..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd", "file:///etc/passwd")
WRONG = {"string": 12345, "integer": "not-a-number", "number": "not-a-number",
         "boolean": "not-a-boolean", "array": "not-an-array", "object": "not-an-object"}


def settings(ctx: AuditContext) -> dict[str, Any]:
    given = as_dict(ctx.options.audit.get("destructive"))
    if not given.get("tools"):
        ctx.skip("needs a destructive section in the audit settings naming the tools to call "
                 "and their scratch arguments (docs/conformance.md, 'The destructive mode')")
    return given


async def named_tools(ctx: AuditContext) -> list[tuple[dict[str, Any], dict[str, Any], list[str]]]:
    """``(tool definition, scratch arguments, path arguments)`` of each configured tool."""
    listed = {str(t.get("name")): t for t in await ctx.tools()}
    out = []
    for item in settings(ctx)["tools"]:
        item = as_dict(item) if not isinstance(item, str) else {"name": item}
        name = str(item.get("name"))
        tool = listed.get(name)
        if tool is None:
            ctx.fail(f"{name}, named in the destructive settings, is not in tools/list")
        arguments = as_dict(item.get("arguments"))
        props = as_dict(as_dict(tool.get("inputSchema")).get("properties"))
        paths = item.get("paths")
        if not isinstance(paths, list):
            paths = [p for p, s in props.items() if as_dict(s).get("type") == "string" and (
                PATHLIKE.search(p) or as_dict(s).get("format") in ("uri", "uri-reference"))]
        out.append((tool, arguments, [str(p) for p in paths]))
    return out


@check("destructive.path-traversal", title="file tools cannot escape their directory",
       requirement="“Servers MUST: Validate all tool inputs” (server/tools.mdx, Security "
                   "Considerations); “Servers MUST validate all resource URIs” "
                   "(server/resources.mdx). A path argument of ../…/etc/passwd, /etc/passwd "
                   "or file:///etc/passwd never reads the host's files; with scratch_dir, a "
                   "canary file beside it is never read, and a write never lands there, "
                   "through ../ or an absolute path.",
       level=Level.MUST, spec=TOOLS_SECURITY, **COMMON,
       fix="Resolve every path argument against the tool's root (following symlinks) and "
           "refuse it unless the result stays inside the root; refuse absolute paths and "
           "file: URIs outright.")
async def path_traversal(ctx: AuditContext) -> None:
    scratch = settings(ctx).get("scratch_dir")
    root = Path(str(scratch)).resolve() if scratch else None
    if root is not None and not root.is_dir():
        ctx.note(f"scratch_dir {scratch} is not a directory on this machine: writes outside "
                 "it cannot be seen")
        root = None
    tried = asked = 0
    for tool, arguments, paths in await named_tools(ctx):
        name = tool["name"]
        for argument in paths:
            for payload in TRAVERSALS:
                tried += 1
                exchange = await ctx.request("tools/call", {"name": name, "arguments": {
                    **arguments, argument: payload}}, label=f"{name} with {argument}={payload}")
                expect_alive(ctx, exchange, f"{name} with {argument}={payload}")
                ctx.expect(not PASSWD.search(exchange.text),
                           f"{name} with {argument}={payload!r} returned the host's "
                           "/etc/passwd")
                asked += asks_for_input(exchange)
            if root is None:
                continue
            done, waiting = await _escapes(ctx, name, arguments, argument, root)
            tried, asked = tried + done, asked + waiting
    if not tried:
        ctx.skip("no configured tool has a path argument (name them in 'paths')")
    if asked == tried:
        ctx.skip(f"each of the {tried} call(s) asked for input (input_required) instead of "
                 "running, so no path reached the tool (give arguments that need no "
                 "confirmation in the destructive settings)")
    if asked:
        ctx.note(f"{asked} of {tried} call(s) asked for input instead of running")


def asks_for_input(exchange: Any) -> bool:
    """The call did not run: it answered ``input_required``."""
    return as_dict(exchange.result).get("resultType") == "input_required"


async def _escapes(ctx: AuditContext, name: str, arguments: dict[str, Any], argument: str,
                   root: Path) -> tuple[int, int]:
    """With the scratch directory in sight: a canary file beside it must not be readable
    through ``../`` or its absolute path, and a write through them must not land.
    ``(calls made, calls that asked for input instead of running)``."""
    token = secrets.token_hex(6)
    canary = root.parent / f"conformance-canary-{token}.txt"
    secret = f"conformance canary {secrets.token_hex(12)}"
    canary.write_text(secret, encoding="utf-8")
    relative, absolute = (root.parent / f"conformance-escape-{token}.txt",
                          root.parent / f"conformance-escape-abs-{token}.txt")
    written = {f"../{relative.name}": relative, str(absolute): absolute}
    payloads = [f"../{canary.name}", str(canary), *written]
    asked = 0
    try:
        for payload in payloads:
            exchange = await ctx.request("tools/call", {"name": name, "arguments": {
                **arguments, argument: payload}}, label=f"{name} with {argument}={payload}")
            expect_alive(ctx, exchange, f"{name} with {argument}={payload}")
            ctx.expect(secret not in exchange.text, f"{name} with {argument}={payload!r} read "
                       f"{canary}, outside the scratch directory {root}")
            asked += asks_for_input(exchange)
            escaped = written.get(payload)
            if escaped is not None and escaped.exists():
                ctx.fail(f"{name} with {argument}={payload!r} wrote {escaped}, outside the "
                         f"scratch directory {root}")
    finally:
        for leftover in (canary, *written.values()):
            leftover.unlink(missing_ok=True)
    return len(payloads), asked


@check("destructive.arguments", title="named tools survive invalid arguments",
       requirement="“Servers MUST: Validate all tool inputs” (server/tools.mdx, Security "
                   "Considerations): a named tool called with arguments that break its "
                   "inputSchema answers a tool error (isError: true) or -32602, never a 5xx, "
                   "a dropped connection or a success; arguments that are not an object are "
                   "-32602.",
       level=Level.MUST, spec=spec("server/tools", "error-handling"), **COMMON,
       fix="Validate arguments against the tool's inputSchema before running it and answer "
           "-32602 (or isError: true) on a mismatch.")
async def arguments(ctx: AuditContext) -> None:
    tried = 0
    for tool, scratch, _ in await named_tools(ctx):
        name, schema = tool["name"], tool.get("inputSchema")
        variants = list(invalid_variants(schema))
        for prop, sub in as_dict(as_dict(schema).get("properties")).items():
            wrong = WRONG.get(as_dict(sub).get("type"))  # type: ignore[arg-type]
            if wrong is not None:
                variants.append((f"property {prop!r} of the wrong type",
                                 {**scratch, prop: wrong}))
        for what, bad in variants[:12]:
            tried += 1
            exchange = await ctx.request("tools/call", {"name": name, "arguments": bad},
                                         label=f"{name}: {what}")
            _clean(ctx, exchange, f"{name} with {what}")
        exchange = await ctx.request("tools/call", {"name": name, "arguments": "not-an-object"},
                                     label=f"{name}: arguments is a string")
        expect_error(ctx, exchange, -32602, what=f"{name} with string arguments")
        tried += 1
    if not tried:
        ctx.skip("no configured tool to call")


__all__ = ["named_tools", "settings"]
