"""The suite's building blocks, one at a time: wire helpers, schema values, validation,
tokens, credentials, transports, progress, the library API."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from typing import Any

import httpx
import jwt
import pytest

from mcpcore.auth.issuer import LocalAuthorizationServer, RegisteredClient, SigningKey
from mcpcore.conformance import Options, assert_conformant, run_suite, run_suite_sync, tokens, wire
from mcpcore.conformance.asgi import StreamingASGITransport
from mcpcore.conformance.credentials import CredentialsError, client_credentials, load_config
from mcpcore.conformance.model import Verdict
from mcpcore.conformance.progress import PlainProgress, line, summary
from mcpcore.conformance.schema_values import example_arguments, example_value, invalid_variants
from mcpcore.conformance.transport import HttpProbe, StdioProbe, _dechunk, parse_body
from mcpcore.conformance.validate import Validator, check_schema


def test_wire_helpers() -> None:
    assert wire.decode_sentinel(wire.sentinel("héllo")) == "héllo"
    assert wire.decode_sentinel("=?base64?!!?=") is None and wire.decode_sentinel("x") is None
    assert wire.header_value(" padded") == wire.sentinel(" padded")
    assert wire.header_value("=?base64?x") == wire.sentinel("=?base64?x")
    assert [wire.param_value(v) for v in (True, 3, "a", None, 1.5)] == [
        "true", "3", "a", None, None]
    assert wire.meta(without=[wire.CLIENT_INFO], extra={"x": 1})["x"] == 1
    headers = wire.standard_headers(wire.request("tools/call", {
        "name": "t", "arguments": {"region": "eu", "n": 2}}), header_props={
        "region": "Region", "n": "N"})
    assert headers["Mcp-Param-Region"] == "eu" and headers["Mcp-Param-N"] == "2"
    assert wire.notification("notifications/x") == {"jsonrpc": "2.0", "method": "notifications/x"}


@pytest.mark.parametrize(("schema", "value"), [
    ({"type": "string", "format": "email"}, "someone@example.com"),
    ({"type": "string", "minLength": 3}, "xxx"),
    ({"type": "integer", "minimum": 5}, 5),
    ({"type": "number", "exclusiveMinimum": 1}, 2),
    ({"type": "boolean"}, False),
    ({"type": "array", "minItems": 2, "items": {"type": "integer"}}, [0, 0]),
    ({"type": "array"}, []),
    ({"type": ["null", "string"]}, "x"),
    ({"enum": ["a", "b"]}, "a"),
    ({"const": 7}, 7),
    ({"oneOf": [{"type": "boolean"}]}, False),
    ({"anyOf": [{"type": "integer"}]}, 0),
    ({"type": "null"}, None),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
     {"a": "x"}),
])
def test_example_values(schema: dict[str, Any], value: Any) -> None:
    assert example_value(schema) == (True, value)


def test_example_arguments_and_invalid_variants() -> None:
    assert example_value({"type": "string", "pattern": "^a$"}) == (False, None)
    assert example_value({"type": "integer", "minimum": "x"}) == (False, None)
    assert example_value({"type": "mystery"}) == (False, None)
    assert example_arguments({"allOf": []}) is None and example_arguments(3) is None
    assert example_arguments({"type": "object", "properties": {
        "r": {"type": "string", "x-mcp-header": "R"}}}) == {"r": "x"}
    assert example_arguments({"properties": {"p": {"type": "string", "pattern": "x"}},
                              "required": ["p"]}) is None
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert invalid_variants(schema) == [("required property 'a' missing", {}),
                                        ("property 'a' has the wrong type",
                                         {"a": "not-a-number"})]
    assert invalid_variants(None) == []


def test_validator_both_eras() -> None:
    modern, legacy = Validator("2026-07-28"), Validator("2025-11-25")
    assert modern.check("nope") and modern.check({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert not legacy.check({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert legacy.check({"jsonrpc": "2.0", "id": 2, "method": "nope/unknown"})
    assert modern.check({"jsonrpc": "2.0", "method": "notifications/nope"})
    reserved = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32050, "message": "x"}}
    assert any("reserved" in p for p in modern.check(reserved))
    retired = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "x"}}
    assert any("retired" in p for p in modern.check(retired))
    wrong = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required",
                                                   "requestState": "s"}}
    assert modern.check(wrong, "tools/list") and not modern.check(wrong, "tools/call")
    hinted = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required",
                                                    "requestState": "s", "ttlMs": 1}}
    assert modern.check(hinted, "tools/call")
    assert modern.check({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}},
                        "tools/call")
    assert modern.check({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "task"}}, "x")
    assert not legacy.check({"jsonrpc": "2.0", "id": 1, "result": {}}, "ping")
    assert check_schema(3) is not None and check_schema({"type": 5}) is not None
    assert check_schema({"$schema": "http://json-schema.org/draft-07/schema#"}) is None


def test_parse_body_and_dechunk() -> None:
    sse = b'data: {"jsonrpc":"2.0","method":"x"}\n\ndata: not json\n\n'
    assert parse_body("text/event-stream", sse) == [{"jsonrpc": "2.0", "method": "x"}]
    assert parse_body("application/json", b"[1, {\"a\": 1}]") == [{"a": 1}]
    assert parse_body("application/json", b"oops") == [] and parse_body("x", b"") == []
    assert _dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n") == b"abcde"
    assert _dechunk(b"zz\r\n") == b""


def test_tokens() -> None:
    key = SigningKey.generate("ES256", kid="ec1")
    server = LocalAuthorizationServer("http://127.0.0.1:9/as", keys=[
        key, SigningKey.generate("RS256", kid="rs1")])
    good = server.mint(sub="a", aud="http://r/mcp", scope="mcp")
    claims, kid = tokens.claims_for(good, issuer=None, resource=None)
    assert claims["sub"] == "a" and kid == "ec1"
    claims, kid = tokens.claims_for("opaque", issuer="http://i", resource="http://r",
                                    scopes=["mcp"])
    assert claims["scope"] == "mcp" and kid is None and claims["aud"] == "http://r"
    none = tokens.alg_none(claims, "k")
    assert jwt.get_unverified_header(none) == {"alg": "none", "typ": "JWT", "kid": "k"}
    pems = tokens.public_pems(server.jwks())
    assert {kid for kid, _ in pems} == {"ec1", "rs1"}
    assert tokens.public_pems({"keys": [{"kty": "oct", "k": "AAAA"}]}) == []
    forged = tokens.hs256(claims, pems[0][1], "ec1")
    assert jwt.get_unverified_header(forged)["alg"] == "HS256"
    assert tokens.auditor_jwks("me")["keys"][0]["kid"] == "me"
    assert tokens.unverified("a.b.c") is None and tokens.unverified(None) is None


async def test_client_credentials(tmp_path: Any) -> None:
    server = LocalAuthorizationServer("http://127.0.0.1:9/as",
                                      clients=[RegisteredClient("c1", secret="s1")])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(server)) as http:
        for method in ("client_secret_basic", "client_secret_post"):
            token = await client_credentials(
                {"token_endpoint": server.token_endpoint, "client_id": "c1",
                 "client_secret": "s1", "scope": "mcp", "auth_method": method},
                resource="http://r.test/mcp", client=http)
            assert jwt.decode(token, options={"verify_signature": False})["aud"] == \
                "http://r.test/mcp"
        with pytest.raises(CredentialsError, match=r"401|400"):
            await client_credentials({"token_endpoint": server.token_endpoint,
                                      "client_id": "c1", "client_secret": "bad"},
                                     resource="http://r.test/mcp", client=http)
    with pytest.raises(CredentialsError, match="token_endpoint"):
        await client_credentials({"client_id": "c1"}, resource="http://r.test/mcp")
    path = tmp_path / "oauth.json"
    path.write_text(json.dumps({"client_secret": "x"}))
    with pytest.raises(CredentialsError, match="client_id"):
        load_config(path)


def test_progress_lines() -> None:
    from mcpcore.conformance.runner import Report

    stream = io.StringIO()
    progress = PlainProgress(stream, quiet=True)
    report = run_suite_sync(app=_app(), spec="2026-07-28", checks=["discover.result",
                                                                   "tools.names"])
    for outcome in report.outcomes:
        progress.check_done(outcome)
    progress.finished(report)
    assert "no MUST-level failure" in stream.getvalue()
    assert line(report.outcomes[0]).startswith("PASS ")
    empty = Report("x", "http", report.started)
    assert summary(empty) == "not audited: the target served neither era"
    with pytest.raises(AssertionError, match="not audited"):
        assert_conformant(empty)


def _app() -> Any:
    from examples.everything import app

    return app


async def test_assert_conformant_lists_failures() -> None:
    from tests.conformance.broken_server import broken_app

    report = await run_suite(app=broken_app({"missing-result-type"}), spec="2026-07-28",
                             checks=["results.result-type", "discover.server-info"])
    with pytest.raises(AssertionError, match=r"results\.result-type"):
        assert_conformant(report)
    with pytest.raises(ValueError, match="exactly one"):
        await run_suite()


async def test_http_transport_failures() -> None:
    transport = HttpProbe("http://127.0.0.1:9/mcp")
    refused = await transport.send(b"{}", timeout=2)
    assert refused.failure and "connect" in refused.failure
    verbatim = await transport.send(b"{}", verbatim=True, timeout=2)
    assert verbatim.failure and "dropped" in verbatim.failure
    await transport.aclose()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(5)

    hanging = HttpProbe("http://t/mcp", client=httpx.AsyncClient(
        transport=StreamingASGITransport(slow, close_grace=0.05)))
    exchange = await hanging.send(b"{}", timeout=0.2)
    assert exchange.failure and "hang" in exchange.failure
    assert exchange.describe() == exchange.failure
    await hanging.aclose()


async def test_stdio_transport_reports_exits_and_garbage(tmp_path: Any) -> None:
    script = tmp_path / "server.py"
    script.write_text(
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    if msg.get('method') == 'die':\n"
        "        sys.exit(3)\n"
        "    print('not json at all', flush=True)\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': msg.get('id'), 'result': {}}), "
        "flush=True)\n")
    transport = StdioProbe(f"{sys.executable} {script}")
    first = await transport.send(b'{"jsonrpc":"2.0","id":1,"method":"x"}', request_id=1)
    assert first.result == {} and any("not JSON" in p for p in first.problems)
    died = await transport.send(b'{"jsonrpc":"2.0","id":2,"method":"die"}', request_id=2)
    assert died.failure and "exited with code 3" in died.failure
    again = await transport.send(b'{"jsonrpc":"2.0","id":3,"method":"x"}', request_id=3)
    assert again.result == {}, "the supervised process was restarted"
    await transport.aclose()


def test_options_reach_checks() -> None:
    report = run_suite_sync(app=_app(), spec="2026-07-28", checks=["tools.read-only-call"],
                            options=Options(max_items=1))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.PASS and len(outcome.evidence) <= 4


def test_an_echo_is_found_in_any_token_and_never_in_a_tiny_piece() -> None:
    """audit_auth.echoes: a refusal repeating an opaque token, whole or its first 20
    characters, echoes it; a JWT's payload prefix counts; pieces shorter than
    ECHO_PIECE (the empty payload of "a..b", a one-letter token) are never looked for."""
    from mcpcore.conformance.checks.audit_auth import echoes
    from mcpcore.conformance.tokens import alg_none

    opaque = "opaque-0123456789abcdefghij"
    assert echoes(opaque, f"invalid token {opaque}")
    assert echoes(opaque, f'token "{opaque[:22]}…" refused')
    assert not echoes(opaque, "invalid_token")
    jwt_like = alg_none({"sub": "someone-with-a-long-name", "aud": "https://mcp.example"})
    assert echoes(jwt_like, "claims " + jwt_like.split(".")[1][:24])
    assert not echoes("a..b", "anything at all, a b")
    assert not echoes("x", "x marks the spot")
    assert not echoes("tok.en", "token")


def test_self_signed_tokens_sign_with_the_key_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each forged token was signed with the auditor's key as PEM, which PyJWT parsed and
    checked again every time (about 35 ms of CPU a token)."""
    import jwt.algorithms

    parsed: list[bytes] = []
    load = jwt.algorithms.load_pem_private_key

    def counted(data: bytes, *args: Any, **kwargs: Any) -> Any:
        parsed.append(data)
        return load(data, *args, **kwargs)

    monkeypatch.setattr(jwt.algorithms, "load_pem_private_key", counted)
    claims = {"sub": "conformance-auditor", "aud": "https://mcp.example.com/mcp"}
    signed = [tokens.self_signed(claims, kid=f"k{i}") for i in range(3)]
    assert parsed == []
    public = tokens.auditor_key().public_key()
    for i, token in enumerate(signed):
        assert jwt.get_unverified_header(token)["kid"] == f"k{i}"
        assert jwt.decode(token, public, algorithms=["RS256"],
                          audience="https://mcp.example.com/mcp") == claims
