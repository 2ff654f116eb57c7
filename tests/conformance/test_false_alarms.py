"""No false alarm against correct behaviour that real servers show (found on the official
Python SDK and FastMCP): each test serves examples.everything behind a small wrapper
that answers one probe the way such a server rightly does, and expects the check not to
fail; a twin wrapper that breaks the rule for real still fails it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mcpcore.asgi_types import Scope
from mcpcore.conformance import Options, run_suite
from mcpcore.conformance.model import Verdict
from mcpcore.conformance.registry import all_checks
from tests.conformance.test_packs import Protected, protected  # noqa: F401 - fixture


class Wrapper:
    """examples.everything, except what ``answer`` says for a POST (its headers and JSON
    body): ``(status, content type, body)``, or ``None`` to pass the request through."""

    def __init__(self, answer: Any) -> None:
        from examples.everything import app

        self.app = app
        self.answer = answer

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        reply = self.answer(headers, body)
        if reply is None:
            sent = False

            async def replay() -> dict[str, Any]:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}

            await self.app(scope, replay, send)
            return
        status, kind, payload = reply
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", kind.encode()), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


def _legacy_traffic(headers: dict[str, str], body: Any) -> bool:
    """A request a 2025-era server reads as 2025 traffic: no version header, or 2025-11-25
    (in the header or _meta), and no session."""
    if not isinstance(body, dict) or body.get("method") == "initialize":
        return False
    version = headers.get("mcp-protocol-version")
    return (version is None or version.startswith("2025")) and "mcp-session-id" not in headers


def like_python_sdk(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
    """What mcp 2.3.0 answers to 2025 traffic without a session: 400, Missing session ID."""
    if _legacy_traffic(headers, body):
        return 400, "application/json", {"jsonrpc": "2.0", "id": "server-error", "error": {
            "code": -32600, "message": "Bad Request: Missing session ID"}}
    return None


def stateless_2025(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
    """A stateless 2025 server: serves tools/list in the 2025 shape (no resultType)."""
    if _legacy_traffic(headers, body) and body.get("method") == "tools/list":
        return 200, "application/json", {"jsonrpc": "2.0", "id": body.get("id"),
                                         "result": {"tools": []}}
    return None


def modern_only(answer: Any) -> Any:
    """``answer``, on a server that implements no 2025 version (initialize is unknown)."""
    def wrapped(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
        if isinstance(body, dict) and body.get("method") == "initialize" and not isinstance(
                (body.get("params") or {}).get("_meta"), dict):
            return 404, "application/json", {"jsonrpc": "2.0", "id": body.get("id"), "error": {
                "code": -32601, "message": "Method not found"}}
        return answer(headers, body)
    return wrapped


async def verdicts(app: Any, checks: list[str], **kw: Any) -> dict[str, Verdict]:
    report = await run_suite(app=app, spec="2026-07-28", checks=checks, **kw)
    return {o.check.id: o.verdict for o in report.outcomes}


async def test_a_server_of_2025_03_26_clients_may_serve_a_headerless_request_as_2025() -> None:
    """streamable-http.mdx: a server that supports clients older than 2025-06-18 MAY treat
    a request without MCP-Protocol-Version as 2025-03-26; its 2025-shaped answer is judged
    by 2025 rules, not counted as a 2026 result without resultType."""
    got = await verdicts(Wrapper(like_python_sdk), [
        "version.header-missing", "version.legacy-in-meta", "results.result-type"])
    assert got == {"version.header-missing": Verdict.SKIP,
                   "version.legacy-in-meta": Verdict.PASS,
                   "results.result-type": Verdict.PASS}
    got = await verdicts(Wrapper(stateless_2025), [
        "version.header-missing", "version.legacy-in-meta", "results.result-type",
        "wire.schema-valid"])
    assert got == {"version.header-missing": Verdict.SKIP,
                   "version.legacy-in-meta": Verdict.PASS,
                   "results.result-type": Verdict.PASS, "wire.schema-valid": Verdict.PASS}


async def test_a_modern_only_server_must_still_refuse() -> None:
    """Without 2025 support the MUSTs apply: -32020 for a missing header, -32022 for a
    version it does not implement."""
    got = await verdicts(Wrapper(modern_only(like_python_sdk)), [
        "version.header-missing", "version.legacy-in-meta"])
    assert got == {"version.header-missing": Verdict.FAIL,
                   "version.legacy-in-meta": Verdict.FAIL}


async def test_the_schema_count_names_the_exchange_that_broke_it() -> None:
    """An id that is not a string or integer (here null) in an error reply is a schema
    problem in either era; the failure names that exchange first."""
    def null_id(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
        if _legacy_traffic(headers, body):
            return 400, "application/json", {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Bad Request: Missing session ID"}}
        return None

    report = await run_suite(app=Wrapper(null_id), spec="2026-07-28",
                             checks=["version.header-missing", "wire.schema-valid"])
    [outcome] = [o for o in report.outcomes if o.check.id == "wire.schema-valid"]
    assert outcome.verdict is Verdict.FAIL
    assert outcome.decisive is not None and outcome.decisive in outcome.evidence
    assert "MCP-Protocol-Version" in outcome.decisive.label
    assert "1 schema problem(s) in 1 of" in outcome.message


async def test_a_plain_text_400_for_a_bad_content_type_is_a_clean_refusal() -> None:
    def plain(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
        if headers.get("content-type", "") != "application/json":
            return 400, "text/plain", b"Unsupported Content-Type"
        return None

    got = await verdicts(Wrapper(plain), ["fuzz.headers", "http.content-type"],
                         options=Options(fuzz_examples=300, fuzz_seconds=200, fuzz_seed=5))
    assert got == {"fuzz.headers": Verdict.PASS, "http.content-type": Verdict.PASS}


async def test_a_fuzz_budget_that_runs_out_is_a_skip_that_says_so() -> None:
    """The time budget stops generation itself (not only sending): far more messages than
    the budget allows end promptly in a skip that names the numbers, never an error."""
    from examples.everything import app

    started = time.monotonic()
    report = await run_suite(app=app, spec="2026-07-28", checks=["fuzz.envelopes"],
                             options=Options(fuzz_examples=1_000_000, fuzz_seconds=2,
                                             fuzz_seed=1))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.SKIP, outcome.message
    assert "cut short" in outcome.message and "of 350000 messages" in outcome.message
    assert time.monotonic() - started < 120     # not 350,000 generated examples
    assert report.exit_status == 0


async def test_a_challenge_without_resource_metadata_is_fine_with_the_well_known_url(
        protected: Protected) -> None:  # noqa: F811
    """authorization-server-discovery.mdx: a server implements the header OR the
    well-known URI; the protected example serves the latter, so dropping resource_metadata
    from its challenge still passes, and dropping both fails."""
    def strip(app: Any, drop_prm: bool) -> Any:
        async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
            if drop_prm and scope["type"] == "http" and "oauth-protected-resource" in scope[
                    "path"]:
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return

            async def edit(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [
                        (k, b'Bearer realm="mcp"' if k.lower() == b"www-authenticate" else v)
                        for k, v in message.get("headers", [])]}
                await send(message)

            await app(scope, receive, edit)
        return wrapped

    outcomes = {}
    for drop_prm in (False, True):
        protected.switch.app = strip(protected.app, drop_prm)
        try:
            report = await run_suite(url=protected.url, bearer=protected.token(),
                                     audit=["auth"], spec="2026-07-28",
                                     checks=["audit.challenge"])
        finally:
            protected.switch.app = protected.app
        [outcome] = report.outcomes
        outcomes[drop_prm] = outcome.verdict
    assert outcomes == {False: Verdict.PASS, True: Verdict.FAIL}


@pytest.mark.parametrize(("check_id", "level", "phrase"), [
    # schema.ts: an unknown tool "should be reported as an MCP error response".
    ("tools.unknown", "SHOULD", "should be reported"),
    # server/tools: servers that declared listChanged SHOULD notify listen streams.
    ("listen.served", "SHOULD", "listChanged capability SHOULD send a notification"),
    # 2025-11-25 transports: the 404 MUST is for sessions the server terminated.
    ("legacy.ended-session", "MUST", "after which it MUST respond to requests containing"),
    ("legacy.unknown-session", "SHOULD", "no sentence covers an id it never issued"),
])
def test_levels_follow_the_spec(check_id: str, level: str, phrase: str) -> None:
    [item] = [c for c in all_checks() if c.id == check_id]
    assert item.level.value == level and phrase in item.requirement


LISTEN_CHECKS = ["listen.acknowledged", "listen.served", "listen.honoured-subset",
                 "listen.only-requested"]


def like_fastmcp(headers: dict[str, str], body: Any) -> tuple[int, str, Any] | None:
    """What FastMCP 4.x answers on the 2026-07-28 path: capabilities without listChanged
    or subscribe, and subscriptions/listen as an unknown method (HTTP 404, -32601)."""
    if not isinstance(body, dict):
        return None
    if body.get("method") == "server/discover":
        return 200, "application/json", {"jsonrpc": "2.0", "id": body.get("id"), "result": {
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": False}, "prompts": {"listChanged": False},
                             "resources": {"subscribe": False, "listChanged": False}}}}
    if body.get("method") == "subscriptions/listen":
        return 404, "application/json", {"jsonrpc": "2.0", "id": body.get("id"), "error": {
            "code": -32601, "message": "Method not found", "data": "subscriptions/listen"}}
    return None


async def test_a_server_that_serves_no_listen_and_promises_no_notifications_is_not_failed(
        ) -> None:
    """subscriptions.mdx has no sentence making listen mandatory; its acknowledgement MUST
    is for servers that serve listen. A -32601 from a server that declares no listChanged
    and no subscribe (FastMCP) skips every listen check, saying why."""
    report = await run_suite(app=Wrapper(like_fastmcp), spec="2026-07-28",
                             checks=LISTEN_CHECKS)
    got = {o.check.id: (o.verdict, o.message) for o in report.outcomes}
    assert {k: v for k, (v, _) in got.items()} == dict.fromkeys(LISTEN_CHECKS, Verdict.SKIP)
    assert "does not serve subscriptions/listen" in got["listen.acknowledged"][1]
    assert "-32601" in got["listen.acknowledged"][1]
    assert "declares no listChanged" in got["listen.served"][1]
    assert report.exit_status == 0


async def test_a_server_that_promises_notifications_but_serves_no_listen_is_warned() -> None:
    """tools.mdx: servers that declared listChanged SHOULD notify clients with an open
    listen stream. The planted listen-unsupported defect (examples.everything declares
    tools.listChanged) is a warning of listen.served; listen.acknowledged skips."""
    from tests.conformance.broken_server import broken_app

    report = await run_suite(app=broken_app({"listen-unsupported"}), spec="2026-07-28",
                             checks=LISTEN_CHECKS)
    got = {o.check.id: (o.verdict, o.message) for o in report.outcomes}
    assert got["listen.acknowledged"][0] is Verdict.SKIP
    assert got["listen.served"][0] is Verdict.WARN
    assert "tools.listChanged" in got["listen.served"][1] and "unknown method" in \
        got["listen.served"][1]
    assert report.exit_status == 0
