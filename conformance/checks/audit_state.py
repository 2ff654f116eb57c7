"""``requestState`` integrity (basic/patterns/mrtr.mdx, Security Considerations): part of
every audit pack. A tampered state must be refused, and a state is bound to the request
that produced it (SHOULD), so it cannot be replayed on another tool or other arguments.

Which tools answer ``input_required``: the audit settings' ``mrtr_tools`` (names, or
``{"name", "arguments"}``), the official fixtures under ``--fixtures official``, else any
read-only tool that asks for input when called with generated arguments.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from mcpcore.conformance import tokens, wire
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.legacy import default_answer
from mcpcore.conformance.model import Level, as_dict, spec
from mcpcore.conformance.registry import check
from mcpcore.conformance.schema_values import example_arguments
from mcpcore.conformance.transport import RecordedExchange

SECURITY = spec("basic/patterns/mrtr", "security-considerations")
COMMON: dict[str, Any] = {"pack": "audit", "eras": [wire.MODERN],
                          "tags": ["mrtr", "security", "audit-any"]}
FIXTURE_TOOLS = ("test_input_required_result_tampered_state",
                 "test_input_required_result_elicitation")


def answers(result: dict[str, Any]) -> dict[str, Any]:
    """An answer for every input request of an ``input_required`` result."""
    out = {}
    for key, request in as_dict(result.get("inputRequests")).items():
        reply = default_answer(as_dict(request))
        out[key] = reply if reply is not None else {"action": "decline"}
    return out


async def stateful_rounds(ctx: AuditContext, limit: int = 2) -> list[tuple[str, dict[str, Any],
                                                                      RecordedExchange]]:
    """Up to ``limit`` first rounds ``(tool, arguments, exchange)`` that carry a
    ``requestState``."""
    configured = ctx.options.audit.get("mrtr_tools")
    candidates: list[tuple[str, dict[str, Any]]] = []
    if isinstance(configured, list):
        for item in configured:
            if isinstance(item, str):
                candidates.append((item, {}))
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                candidates.append((item["name"], as_dict(item.get("arguments"))))
    else:
        names = {str(t.get("name")) for t in await ctx.tools()}
        candidates += [(n, {}) for n in FIXTURE_TOOLS if n in names]
        for tool in await ctx.read_only_tools():
            arguments = example_arguments(tool.get("inputSchema"))
            if arguments is not None and tool.get("name") not in FIXTURE_TOOLS:
                candidates.append((str(tool["name"]), arguments))
    found = []
    for name, arguments in candidates[: ctx.options.max_items]:
        exchange = await ctx.request("tools/call", {"name": name, "arguments": arguments},
                                     label=f"{name}: round 1")
        result = exchange.result or {}
        if result.get("resultType") == "input_required" and isinstance(
                result.get("requestState"), str):
            found.append((name, arguments, exchange))
            if len(found) >= limit:
                break
    return found


def tamper(state: str) -> list[str]:
    """Altered copies: one character flipped in the middle, and a suffix."""
    middle = len(state) // 2
    flipped = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    return [flipped, state + "-TAMPERED"]


def _unb64(text: str, urlsafe: bool) -> bytes | None:
    padded = text + "=" * (-len(text) % 4)
    try:
        if urlsafe:
            return base64.urlsafe_b64decode(padded.encode("ascii"))
        return base64.b64decode(padded.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None


def _json_object(raw: bytes | str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def readable(state: str) -> tuple[str, dict[str, Any], Callable[[dict[str, Any]], str]] | None:
    """``(encoding, payload, encode)`` when ``state`` is a JSON object anyone can read and
    rewrite: a JWT (its payload; the signature is kept as it was), plain JSON, or base64 /
    base64url JSON. ``None`` for an opaque (sealed or encrypted) state."""
    parts = state.split(".")
    if len(parts) == 3 and _json_object(_unb64(parts[0], True)) is not None:
        payload = _json_object(_unb64(parts[1], True))
        if payload is not None:
            return ("a JWT payload", payload, lambda p: ".".join(
                (parts[0], tokens.b64url(json.dumps(p).encode()), parts[2])))
    plain = _json_object(state)
    if plain is not None:
        return "plain JSON", plain, json.dumps
    padded = state.endswith("=")
    standard = not any(c in state for c in "-_") and (
        any(c in state for c in "+/") or padded)
    kinds = ((True, "base64url JSON"), (False, "base64 JSON"))
    for urlsafe, name in (kinds[::-1] if standard else kinds):
        decoded = _json_object(_unb64(state, urlsafe))
        if decoded is not None:
            def encode(p: dict[str, Any], urlsafe: bool = urlsafe) -> str:
                raw = json.dumps(p).encode()
                out = (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw))
                return out.decode() if padded else out.decode().rstrip("=")
            return name, decoded, encode
    return None


def _edited(value: Any) -> Any:
    """Another value of the same JSON type (``None``: leave this field alone)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value[::-1] if len(value) > 1 and value != value[::-1] else value + "x"
    return None


def field_edits(payload: dict[str, Any], limit: int = 8) -> list[tuple[str, Any, Any]]:
    """``(field, old, new)``: one top-level field changed at a time."""
    out = []
    for key, value in payload.items():
        new = _edited(value)
        if new is not None:
            out.append((key, value, new))
    return out[:limit]


@check("audit.state-tamper", title="a tampered requestState is refused",
       requirement="“If a client request contains a requestState field, servers MUST treat "
                   "requestState as an attacker-controlled input.” … “and MUST reject state that "
                   "fails verification.” (basic/patterns/mrtr, Server Requirements)",
       level=Level.MUST, spec=SECURITY, **COMMON,
       fix="Integrity-protect requestState (HMAC or AEAD with a server key) and answer a modified "
           "state with a JSON-RPC error.")
async def state_tamper(ctx: AuditContext) -> None:
    rounds = await stateful_rounds(ctx, limit=1)
    if not rounds:
        ctx.skip("no tool answered input_required with a requestState (name one in "
                 "mrtr_tools in the audit settings)")
    name, arguments, first = rounds[0]
    result = first.result or {}
    state = str(result["requestState"])
    for altered in tamper(state):
        exchange = await ctx.request("tools/call", {
            "name": name, "arguments": arguments, "inputResponses": answers(result),
            "requestState": altered}, label=f"{name}: round 2 with a tampered requestState")
        ctx.expect(exchange.error is not None,
                   f"{name} accepted a tampered requestState ({exchange.describe()})")
    # A readable state is tampered with the way an attacker would: decoded, one field
    # changed, encoded again in the same form (the garbling above breaks its encoding,
    # which such a server refuses for the wrong reason).
    found = readable(state)
    if found is None:
        ctx.note("the requestState is opaque (not readable JSON, base64 JSON or a JWT)")
        return
    encoding, payload, encode = found
    ctx.note(f"the requestState is {encoding} with fields {sorted(payload)[:10]}")
    for key, old, new in field_edits(payload):
        exchange = await ctx.request("tools/call", {
            "name": name, "arguments": arguments, "inputResponses": answers(result),
            "requestState": encode({**payload, key: new})},
            label=f"{name}: round 2 with requestState field {key!r} changed")
        ctx.expect(exchange.error is not None,
                   f"{name} accepted its requestState ({encoding}) with field {key!r} changed "
                   f"from {old!r:.40} to {new!r:.40}: the state is not integrity-protected "
                   f"({exchange.describe()})")


@check("audit.state-reuse", title="a requestState only works for the request that made it",
       requirement="“To prevent replay, servers SHOULD include the following inside the "
                   "integrity-protected requestState payload and verify each on receipt:” "
                   "(basic/patterns/mrtr, Server Requirements)",
       level=Level.SHOULD, spec=spec("basic/patterns/mrtr",
                                     "server-requirements-basic-workflow"), **COMMON,
       fix="Bind requestState to its request (method, tool name, a digest of the arguments) and "
           "refuse it elsewhere.")
async def state_reuse(ctx: AuditContext) -> None:
    rounds = await stateful_rounds(ctx, limit=2)
    if not rounds:
        ctx.skip("no tool answered input_required with a requestState")
    name, arguments, first = rounds[0]
    result = first.result or {}
    state = result["requestState"]
    if len(rounds) > 1:
        other, other_args, other_first = rounds[1]
        exchange = await ctx.request("tools/call", {
            "name": other, "arguments": other_args,
            "inputResponses": answers(other_first.result or {}), "requestState": state},
            label=f"{other}: round 2 with the requestState of {name}")
        ctx.expect(exchange.error is not None,
                   f"{other} accepted the requestState issued for {name} "
                   f"({exchange.describe()})")
    changed = {**arguments, "conformance_extra": "x"}
    exchange = await ctx.request("tools/call", {
        "name": name, "arguments": changed, "inputResponses": answers(result),
        "requestState": state}, label=f"{name}: round 2 with other arguments")
    ctx.expect(exchange.error is not None or as_dict(exchange.result).get("isError"),
               f"{name} accepted its requestState with different arguments "
               f"({exchange.describe()})")
