"""Every check passes on examples.everything and fails on the defect it is about.

``CHECK_DEFECTS`` maps each registered check to a defect of the broken server
(tests/conformance/broken_server.py); ``test_every_check_has_a_defect`` keeps the map
complete, so a new check cannot land without a test that makes it fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator

import pytest

from mcpcore.conformance import Options, run_suite
from mcpcore.conformance.model import Level, Verdict
from mcpcore.conformance.registry import all_checks
from tests.conformance.broken_server import DEFECTS, broken_app

HEADERS = "ignore-header-mismatch"
#: check id → the defect that must make it fail (``None``: tested separately below).
CHECK_DEFECTS: dict[str, str | None] = {
    "discover.result": "discover-no-versions",
    "discover.server-info": "no-server-info",
    "meta.client-info-optional": "require-client-info",
    "meta.required": "meta-ignored",
    "meta.capabilities-not-inferred": "capability-error-shape",
    "version.unsupported": "version-wrong-code",
    "version.legacy-in-meta": "legacy-version-in-meta",
    "version.header-missing": HEADERS,
    "version.header-mismatch": HEADERS,
    "headers.method-required": HEADERS,
    "headers.method-match": HEADERS,
    "headers.name-required": HEADERS,
    "headers.name-match": HEADERS,
    "headers.name-base64": HEADERS,
    "headers.param-required": HEADERS,
    "headers.param-match": HEADERS,
    "headers.name-case-insensitive": None,
    "headers.name-whitespace": "padded-header-refused",
    "headers.notification-free": "notification-needs-method",
    "methods.unknown": "wrong-codes",
    "methods.removed": "wrong-codes",
    "methods.capability-gated": "undeclared-prompts",
    "errors.id-echo": "error-id-dropped",
    "jsonrpc.parse-error": "parse-error-500",
    "jsonrpc.invalid-request": "invalid-request-accepted",
    "jsonrpc.no-batch": "batch-processed",
    "http.origin": "origin-unchecked",
    "http.host-rebinding": "host-only-unchecked",
    "http.get-delete": "get-200",
    "http.no-session-id": "session-id-minted",
    "http.body-limit": "no-body-limit",
    "http.content-type": "content-type-500",
    "results.result-type": "missing-result-type",
    "cache.hints": "no-cache-hints",
    "cache.scope-consistent": "page-scope-varies",
    "pagination.complete": "page-duplicates",
    "pagination.invalid-cursor": "invalid-cursor-accepted",
    "tools.definitions": "tool-schema-not-object",
    "tools.names": "bad-tool-name",
    "tools.input-schema": "invalid-input-schema",
    "tools.x-mcp-header": "bad-x-mcp-header",
    "tools.annotations": "annotation-types",
    "tools.deterministic-order": "shuffle-tools",
    "tools.unknown": "unknown-tool-internal",
    "tools.invalid-arguments": "crash-on-bad-arguments",
    "tools.read-only-call": "tool-result-no-content",
    "resources.read": "blob-not-base64",
    "resources.not-found": "missing-resource-empty",
    "resources.templates": "bad-template",
    "prompts.get": "prompt-bad-role",
    "prompts.errors": "unknown-prompt-ok",
    "completion.complete": "completion-too-many",
    "listen.acknowledged": "ack-id-stringified",
    "listen.served": "listen-unsupported",
    "listen.honoured-subset": "ack-everything",
    "listen.only-requested": "listen-unsolicited",
    "results.input-required": "input-required-as-complete",
    "mrtr.elicitation-validated": "elicitation-unvalidated",
    "wire.schema-valid": "schema-invalid",
    "security.error-leakage": "stack-traces",
    "security.path-traversal": "path-traversal",
    "security.deep-nesting": "nesting-500",
    "legacy.initialize": "legacy-wrong-version",
    "legacy.version-fallback": "legacy-fallback-modern",
    "legacy.session-id": "session-id-bad",
    "legacy.initialized-202": "initialized-200",
    "legacy.ping": "ping-nonempty",
    "legacy.tools-list": "legacy-tools-broken",
    "legacy.unknown-session": "unknown-session-400",
    "legacy.ended-session": "delete-ignored",
    "legacy.delete": "delete-500",
    "legacy.no-session": "no-session-ok",
    "legacy.get-stream": "get-stream-json",
    "legacy.no-batch": "batch-processed",
}


def core_checks() -> list[str]:
    return [c.id for c in all_checks() if c.pack == "core"]


def test_every_check_has_a_defect() -> None:
    # The packs' defect tables live beside their tests, which add them to PACK_DEFECTS
    # when imported: import them here too, so the test holds when run on its own.
    import tests.conformance.test_misses
    import tests.conformance.test_packs  # noqa: F401

    registered = {c.id for c in all_checks()}
    missing = sorted(registered - set(CHECK_DEFECTS) - set(PACK_DEFECTS))
    assert not missing, f"checks without a failing test: {missing}"
    stale = sorted(set(CHECK_DEFECTS) - registered)
    assert not stale, f"map entries for checks that do not exist: {stale}"
    unknown = {d for d in CHECK_DEFECTS.values() if d} - set(DEFECTS)
    assert not unknown, unknown


async def test_everything_passes_every_core_check() -> None:
    from examples.everything import app

    # A tool that changes a list, so listen.only-requested sees notifications arrive.
    settings = {"listen_trigger": {"name": "test_trigger_tool_change"}}
    report = await run_suite(app=app, jobs=8, options=Options(audit=settings))
    assert report.eras == ["2026-07-28", "2025-11-25"]
    bad = [(o.key, o.verdict.value, o.message) for o in report.outcomes
           if o.verdict not in (Verdict.PASS, Verdict.SKIP)]
    assert not bad, bad
    skipped = sorted(o.key for o in report.outcomes if o.verdict is Verdict.SKIP)
    # Its lists fit on one page, so there are no pages to compare (page-scope-varies
    # below gives that check two pages).
    assert skipped == ["2026-07-28:cache.scope-consistent"], \
        f"examples.everything should exercise every other check: {skipped}"
    assert {o.check.id for o in report.outcomes} == set(core_checks())
    assert report.exit_status == 0


@pytest.mark.parametrize("check_id", sorted(k for k, v in CHECK_DEFECTS.items() if v))
async def test_check_fails_on_its_defect(check_id: str) -> None:
    defect = CHECK_DEFECTS[check_id]
    assert defect is not None
    report = await run_suite(app=broken_app({defect}), checks=[check_id])
    outcomes = [o for o in report.outcomes if o.check.id == check_id]
    assert outcomes, f"{check_id} did not run ({report.eras})"
    verdicts = {o.era: o.verdict for o in outcomes}
    wanted = Verdict.FAIL if outcomes[0].check.level is Level.MUST else Verdict.WARN
    assert wanted in verdicts.values(), (
        f"{check_id} did not catch {defect!r}: "
        + "; ".join(f"{o.era} {o.verdict.value} {o.message}" for o in outcomes))


# -- header-name case: a real socket server that compares header names byte for byte ------
@contextlib.asynccontextmanager
async def case_sensitive_server() -> AsyncIterator[str]:
    """Answers tools/list only when the header is spelled exactly ``Mcp-Method``."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(v) for k, _, v in (x.partition(": ") for x in lines)
                       if k.lower() == "content-length"), 0)
        body = json.loads(await reader.readexactly(length)) if length else {}
        exact = any(x.startswith("Mcp-Method: ") for x in lines)
        if exact or body.get("method") != "tools/list":
            status, reply = "200 OK", {"jsonrpc": "2.0", "id": body.get("id"), "result": {
                "resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}}
        else:
            status, reply = "400 Bad Request", {"jsonrpc": "2.0", "id": body.get("id"),
                                                "error": {"code": -32020,
                                                          "message": "Header mismatch"}}
        data = json.dumps(reply).encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                     + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.close()
        await server.wait_closed()


async def test_header_name_case_check_fails_on_a_case_sensitive_server() -> None:
    async with case_sensitive_server() as url:
        report = await run_suite(url=url, spec="2026-07-28",
                                 checks=["headers.name-case-insensitive"])
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL, outcome.message


#: Checks of the optional packs, tested in test_packs.py.
PACK_DEFECTS: set[str] = set()


@pytest.mark.parametrize("defect", ["delete-ignored", "unknown-session-400"])
async def test_a_session_ended_by_delete_must_be_gone(defect: str) -> None:
    """legacy.ended-session: after a 2xx DELETE the session id gets 404 (a MUST of
    2025-11-25 basic/transports): a session that lives on, or a 400, fails it."""
    report = await run_suite(app=broken_app({defect}), checks=["legacy.ended-session"])
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL and "ended by DELETE" in outcome.message, \
        outcome.message
    assert outcome.decisive is not None and outcome.decisive.label == "ping after DELETE"
    assert report.exit_status == 1


async def test_a_never_issued_session_id_is_held_to_a_should() -> None:
    """No sentence of 2025-11-25 gives the 404 MUST for an id the server never issued
    (server-everything answers it 400): a warning, and the run's exit status stays 0."""
    report = await run_suite(app=broken_app({"unknown-session-400"}),
                             checks=["legacy.unknown-session"])
    [outcome] = report.outcomes
    assert outcome.check.level is Level.SHOULD
    assert outcome.verdict is Verdict.WARN and "never issued" in outcome.message
    assert report.exit_status == 0
    report = await run_suite(app=broken_app({"delete-ignored"}), checks=["legacy.unknown-session"])
    assert [o.verdict for o in report.outcomes] == [Verdict.PASS]


def test_every_check_quotes_its_rule_and_says_how_to_fix() -> None:
    """A check's requirement quotes the spec sentence its level comes from (between
    “ and ”, checked against the spec text when the registry was audited), and its fix
    says what to change; reports show both next to every failure."""
    missing = [c.id for c in all_checks()
               if not re.search(r"“[^”]{20,}”", c.requirement) or len(c.fix) < 20]
    assert not missing, f"checks without a quoted rule or a fix: {missing}"
    for item in all_checks():
        quoted = " ".join(re.findall(r"“([^”]*)”", item.requirement))
        words = {w for w in ("MUST", "SHOULD", "MAY") if w in quoted.upper().split()}
        # A SHOULD or MAY check never rests on a quote that only says MUST of the server,
        # unless it says why (a client-side MUST, or no spec rule at all).
        if item.level.value != "MUST" and words == {"MUST"}:
            assert "warning" in item.requirement or "client" in item.requirement, item.id
