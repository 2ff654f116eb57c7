"""The optional packs: the auth audit against the protected example (and its broken
twin), requestState integrity, and the token-passthrough canary.

The protected example fetches its own JWKS over HTTP, so it is served by uvicorn on a
loopback port (in a thread: the test keeps the local authorization server to mint tokens
with, including expired and wrong-audience ones a black-box auditor cannot forge).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from mcpcore import Server, StreamableHTTP
from mcpcore.auth import current_inbound_token
from mcpcore.conformance import Options, run_suite
from mcpcore.conformance.model import Level, Verdict
from mcpcore.conformance.registry import all_checks
from tests.auth.support import LoopbackServer
from tests.conformance.broken_server import AUTH_DEFECTS, BrokenAuth, broken_app
from tests.conformance.test_checks import PACK_DEFECTS
from tests.support.processes import free_port

AUTH_CHECK_DEFECTS = {
    "audit.challenge": "challenge-error-without-token",
    "audit.prm": "no-prm",
    "audit.unauthenticated": "tools-open",
    "audit.token-garbage": "accept-garbage",
    "audit.token-alg-none": "accept-alg-none",
    "audit.token-key-confusion": "accept-hs256",
    "audit.token-self-signed": "accept-self-signed",
    "audit.token-unknown-kid": "accept-unknown-kid",
    "audit.token-key-url": "fetch-jku",
    "audit.token-expired": "accept-expired",
    "audit.token-wrong-audience": "accept-wrong-audience",
    "audit.token-in-query": "query-token",
    "audit.token-foreign-issuer": "trust-token-issuer",
}
STATE_CHECK_DEFECTS = {"audit.state-tamper": "tampered-state-accepted",
                       "audit.state-reuse": "state-reuse-accepted"}
SECRET = "conformance-secret"
MRTR_TOOLS = ["test_input_required_result_tampered_state",
              "test_input_required_result_elicitation"]
PACK_DEFECTS.update(AUTH_CHECK_DEFECTS, STATE_CHECK_DEFECTS, {"audit.passthrough": ""})


class Switch:
    """One served port, whichever app the current test puts behind it."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


@dataclass
class Protected:
    url: str
    switch: Switch                  #: the served app: the protected example, or broken
    inner: Switch                   #: behind its auth: everything, or a canary server
    app: Any
    authorization_server: Any
    config: Any
    recorder_port: int
    canary_app: Any

    def token(self, **changes: Any) -> str:
        claims: dict[str, Any] = {"sub": "auditor", "aud": self.config.resource, "scope": "mcp",
                                  "ttl": 600, **changes}
        return str(self.authorization_server.mint(**claims))

    def settings(self) -> dict[str, Any]:
        return {"expired_token": self.token(ttl=-300),
                "wrong_audience_token": self.token(aud="https://other.example/mcp"),
                "mrtr_tools": MRTR_TOOLS}


def canary_server(upstream: str, *, passthrough: bool) -> Server:
    """A server whose tool calls an upstream API: with its own credential, or (broken)
    with the caller's token."""
    server = Server("canary", "1.0")

    @server.tool(annotations={"readOnlyHint": True})
    async def call_upstream() -> str:
        """Calls the upstream API."""
        inbound = current_inbound_token()
        token = inbound.reveal() if passthrough and inbound else "own-service-credential"
        async with httpx.AsyncClient() as client:
            await client.get(f"{upstream}/api", headers={"Authorization": f"Bearer {token}"})
        return "called"

    return server


@pytest.fixture(scope="module")
def protected() -> Iterator[Protected]:
    from examples.everything import app as everything
    from examples.protected_server import build_app

    recorder = free_port()
    inner, switch = Switch(), Switch()
    inner.app = everything
    built: dict[str, Any] = {}

    def factory(base: str) -> Switch:
        built["app"], built["as"], built["config"] = build_app(base, inner=inner,
                                                               client_secret=SECRET)
        switch.app = built["app"]
        return switch

    def canary(passthrough: bool) -> Any:
        return StreamableHTTP(canary_server(f"http://127.0.0.1:{recorder}",
                                            passthrough=passthrough))

    # lifespan "on": the protected app closes its JWKS client when the server stops.
    with LoopbackServer(factory, lifespan="on") as server:
        yield Protected(f"{server.url}/mcp", switch, inner, built["app"], built["as"],
                        built["config"], recorder, canary)


def test_every_pack_check_has_a_defect() -> None:
    from tests.conformance.test_misses import DESTRUCTIVE

    pack = {c.id for c in all_checks() if c.pack == "audit"}
    assert pack == set(AUTH_CHECK_DEFECTS) | set(STATE_CHECK_DEFECTS) | {
        "audit.passthrough"} | set(DESTRUCTIVE)
    assert set(AUTH_CHECK_DEFECTS.values()) <= set(AUTH_DEFECTS)


async def test_protected_example_passes_the_auth_audit(protected: Protected) -> None:
    protected.switch.app = protected.app
    report = await run_suite(url=protected.url, bearer=protected.token(), audit=["auth"],
                             options=Options(audit=protected.settings()))
    bad = [(o.key, o.verdict.value, o.message) for o in report.outcomes
           if o.verdict not in (Verdict.PASS, Verdict.SKIP)]
    assert not bad, bad
    skipped = {o.check.id for o in report.outcomes if o.verdict is Verdict.SKIP}
    # audit.passthrough needs the canary server (below); listen.only-requested sees no
    # notification: this token's scope cannot call a tool that changes a list; every
    # list fits on one page (cache.scope-consistent).
    assert skipped == {"audit.passthrough", "listen.only-requested",
                       "cache.scope-consistent"}, skipped
    assert report.exit_status == 0


@pytest.mark.parametrize("check_id", sorted(AUTH_CHECK_DEFECTS))
async def test_auth_check_fails_on_its_defect(protected: Protected, check_id: str) -> None:
    defect = AUTH_CHECK_DEFECTS[check_id]
    kids = [key.kid for key in protected.authorization_server.keys]
    protected.switch.app = BrokenAuth(protected.app, {defect}, protected.token, kids,
                                      protected.config.resource)
    try:
        report = await run_suite(url=protected.url, bearer=protected.token(), audit=["auth"],
                                 spec="2026-07-28", checks=[check_id],
                                 options=Options(audit=protected.settings()))
    finally:
        protected.switch.app = protected.app
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL, f"{check_id} missed {defect}: {outcome.message}"


@pytest.mark.parametrize("passthrough", [False, True])
async def test_passthrough_canary(protected: Protected, passthrough: bool) -> None:
    protected.inner.app = protected.canary_app(passthrough)
    settings = {"canary": {"tool": "call_upstream", "arguments": {},
                           "listen": f"127.0.0.1:{protected.recorder_port}"}}
    try:
        report = await run_suite(url=protected.url, bearer=protected.token(), audit=["auth"],
                                 spec="2026-07-28", checks=["audit.passthrough"],
                                 options=Options(audit=settings))
    finally:
        from examples.everything import app as everything

        protected.inner.app = everything
    [outcome] = report.outcomes
    wanted = Verdict.FAIL if passthrough else Verdict.PASS
    assert outcome.verdict is wanted, outcome.message


async def test_state_checks_pass_on_everything() -> None:
    from examples.everything import app

    report = await run_suite(app=app, audit=["auth"], checks=["audit.state-*"],
                             options=Options(audit={"mrtr_tools": MRTR_TOOLS}))
    assert {o.check.id: o.verdict for o in report.outcomes} == {
        "audit.state-tamper": Verdict.PASS, "audit.state-reuse": Verdict.PASS}


@pytest.mark.parametrize("check_id", sorted(STATE_CHECK_DEFECTS))
async def test_state_check_fails_on_its_defect(check_id: str) -> None:
    report = await run_suite(app=broken_app({STATE_CHECK_DEFECTS[check_id]}), audit=["auth"],
                             checks=[check_id], options=Options(audit={"mrtr_tools": MRTR_TOOLS}))
    [outcome] = report.outcomes
    level = outcome.check.level
    assert outcome.verdict is (Verdict.FAIL if level is Level.MUST else Verdict.WARN), \
        outcome.message


# -- --fixtures official ---------------------------------------------------------------
FIXTURE_DEFECTS = {
    **{f"fixtures.tools-call-{name}": "tool-result-no-content" for name in (
        "simple-text", "image", "audio", "embedded-resource", "mixed-content", "error",
        "sampling-2025", "elicitation-2025")},
    **{f"fixtures.{name}": "contents-stripped" for name in (
        "resources-read-text", "resources-read-binary", "resources-templates-read")},
    **{f"fixtures.prompts-get-{name}": "prompt-messages-empty" for name in (
        "simple", "with-args", "embedded-resource", "with-image")},
    **{f"fixtures.mrtr-{name}": "missing-result-type" for name in (
        "elicitation", "sampling", "list-roots", "request-state", "multiple-inputs",
        "non-tool-request", "result-type")},
    "fixtures.completion-complete": "completion-missing",
    "fixtures.json-schema-2020-12": "schema-keywords-dropped",
    "fixtures.tools-call-with-progress": "notifications-dropped",
    "fixtures.tools-call-with-logging": "notifications-dropped",
    "fixtures.missing-capability": "capability-error-shape",
    "fixtures.no-requests-on-stream": "request-on-stream",
    "fixtures.no-log-without-level": "logs-always",
    "fixtures.listen-list-changed": "listen-filter-ignored",
    "fixtures.sse-multiple-streams": "one-at-a-time",
    "fixtures.mrtr-multi-round": "state-not-rotated",
    "fixtures.mrtr-tampered-state": "tampered-state-accepted",
    "fixtures.mrtr-capability-check": "ignore-capabilities",
    "fixtures.mrtr-missing-response": "missing-response-error",
    "fixtures.mrtr-ignore-extra": "extra-keys-rejected",
    "fixtures.mrtr-validate-input": "input-not-validated",
    "fixtures.logging-set-level": "setlevel-nonempty",
    "fixtures.resources-subscribe": "subscribe-unsupported",
}
PACK_DEFECTS.update(FIXTURE_DEFECTS)


def test_every_fixture_check_has_a_defect() -> None:
    assert {c.id for c in all_checks() if c.pack == "fixtures"} == set(FIXTURE_DEFECTS)


async def test_everything_passes_the_fixture_pack() -> None:
    from examples.everything import app

    report = await run_suite(app=app, fixtures=True, checks=["fixtures"], jobs=8)
    bad = [(o.key, o.verdict.value, o.message) for o in report.outcomes
           if o.verdict is not Verdict.PASS]
    assert not bad, bad
    assert len(report.outcomes) >= 50


@pytest.mark.parametrize("check_id", sorted(FIXTURE_DEFECTS))
async def test_fixture_check_fails_on_its_defect(check_id: str) -> None:
    defect = FIXTURE_DEFECTS[check_id]
    report = await run_suite(app=broken_app({defect}), fixtures=True, checks=[check_id])
    assert report.outcomes, check_id
    level = report.outcomes[0].check.level
    wanted = Verdict.FAIL if level is Level.MUST else Verdict.WARN
    assert wanted in {o.verdict for o in report.outcomes}, (
        f"{check_id} missed {defect}: "
        + "; ".join(f"{o.era} {o.verdict.value} {o.message}" for o in report.outcomes))


# -- --fuzz N ----------------------------------------------------------------------------
FUZZ_DEFECTS = {"fuzz.bytes": "parse-error-500", "fuzz.envelopes": "null-id-crash",
                "fuzz.params": "crash-on-bad-arguments", "fuzz.headers": "header-crash"}
PACK_DEFECTS.update(FUZZ_DEFECTS)


def test_every_fuzz_check_has_a_defect() -> None:
    assert {c.id for c in all_checks() if c.pack == "fuzz"} == set(FUZZ_DEFECTS)


async def test_everything_survives_the_fuzzer() -> None:
    from examples.everything import app

    report = await run_suite(app=app, spec="2026-07-28", checks=["fuzz.*"],
                             options=Options(fuzz_examples=400, fuzz_seconds=200, fuzz_seed=7))
    assert {o.check.id: o.verdict for o in report.outcomes} == dict.fromkeys(
        FUZZ_DEFECTS, Verdict.PASS), [(o.check.id, o.message) for o in report.outcomes]


@pytest.mark.parametrize("check_id", sorted(FUZZ_DEFECTS))
async def test_fuzz_check_finds_its_defect(check_id: str) -> None:
    report = await run_suite(app=broken_app({FUZZ_DEFECTS[check_id]}), spec="2026-07-28",
                             checks=[check_id],
                             options=Options(fuzz_examples=2000, fuzz_seconds=60, fuzz_seed=3))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.FAIL, outcome.message
    assert "minimal input" in outcome.message and outcome.evidence


def test_cli_with_oauth_client_credentials(protected: Protected, tmp_path: Any) -> None:
    """--oauth: the project's OAuth client discovers the AS through PRM and gets a token;
    the audit's wrong-audience probe then asks that AS for another resource."""
    import json
    import subprocess
    import sys

    from tests.integration.conftest import REPO

    config = tmp_path / "oauth.json"
    config.write_text(json.dumps({"client_id": "demo-client", "client_secret": SECRET,
                                  "scope": "mcp"}))
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "mcpcore.conformance", "--url", protected.url, "--oauth",
         str(config), "--audit", "auth", "--spec", "2026-07-28", "--check", "audit.*,"
         "discover.result", "--json", str(out), "--no-progress"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    report = json.loads(out.read_text())
    verdicts = {r["id"]: r["verdict"] for r in report["results"]}
    assert done.returncode == 0, (done.stderr[-2000:], verdicts)
    assert verdicts["discover.result"] == "pass"          # the token works
    assert verdicts["audit.token-alg-none"] == "pass"
    assert verdicts["audit.token-wrong-audience"] in ("pass", "skip")


# -- tokens from the settings need not be JWTs (RFC 6750 §2.1: any b64token) -----------------
@pytest.mark.parametrize("given", ["opaque-0123456789abcdefghij", "a..b", "tok.en", "x",
                                   "Zm9vYmFy+/=="])
async def test_a_foreign_issuer_token_need_not_be_a_jwt(protected: Protected,
                                                        given: str) -> None:
    """An opaque foreign_issuer_token is presented and judged like any other: refused
    with 401 by the protected example, so the check passes (no traceback, no error
    verdict, no echo found in an empty payload segment)."""
    protected.switch.app = protected.app
    report = await run_suite(url=protected.url, bearer=protected.token(), audit=["auth"],
                             spec="2026-07-28", checks=["audit.token-foreign-issuer"],
                             options=Options(audit={"foreign_issuer_token": given}))
    [outcome] = report.outcomes
    assert outcome.verdict is Verdict.PASS, outcome.message
    assert any(e.label == "foreign_issuer_token" and e.status == 401 for e in outcome.evidence)


@pytest.mark.parametrize("given", ["two words", "ünïcode-token", "line\nbreak", 42])
async def test_a_token_setting_that_cannot_be_sent_is_left_out_and_said(
        protected: Protected, given: Any) -> None:
    """A setting that is no bearer token (not a string, or not an RFC 6750 b64token: it
    cannot go in an Authorization header as given) is never sent: the minted foreign
    token is still judged, and the note names the setting; the expired-token check,
    which has nothing else to send, skips saying why."""
    protected.switch.app = protected.app
    report = await run_suite(url=protected.url, bearer=protected.token(), audit=["auth"],
                             spec="2026-07-28",
                             checks=["audit.token-foreign-issuer", "audit.token-expired"],
                             options=Options(audit={"foreign_issuer_token": given,
                                                    "expired_token": given}))
    got = {o.check.id: o for o in report.outcomes}
    foreign, expired = got["audit.token-foreign-issuer"], got["audit.token-expired"]
    assert foreign.verdict is Verdict.PASS, foreign.message
    assert any("foreign_issuer_token in the audit settings" in n and "not sent" in n
               for n in foreign.notes), foreign.notes
    assert expired.verdict is Verdict.SKIP
    assert "expired_token in the audit settings" in expired.message
    assert "not sent" in expired.message
