"""No credential the auditor holds appears in anything it writes.

A real auth audit (``mcpcore conformance --audit auth`` as a subprocess) against the
protected example served by uvicorn on loopback, with every report format enabled and
the progress lines on: every output file, stdout and stderr are scanned for each secret
the run held — the client secret, every token the authorization server issued during the
run (watched at its token endpoint), the tokens of the audit settings, the ``--bearer``
token, an API key given with ``--header`` — in each form it could be written in (as is,
percent-encoded, Base64, Base64url, with and without padding).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from mcpcore.conformance.model import CheckOutcome, Verdict
from mcpcore.conformance.redaction import Redactor, forms
from mcpcore.conformance.registry import all_checks
from mcpcore.conformance.transport import RecordedExchange
from tests.conformance.test_packs import SECRET, Protected, protected  # noqa: F401 - fixture
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration

API_KEY = "api-key-7c1e5a9d0b3f4e2a8d6c"


class TokenTap:
    """Serves the protected app and keeps every access token its AS hands out."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.issued: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/as/token"):
            await self.app(scope, receive, send)
            return
        body = bytearray()

        async def tap(message: Any) -> None:
            if message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        token = json.loads(bytes(body)).get("access_token")
                    except ValueError:
                        token = None
                    if isinstance(token, str):
                        self.issued.append(token)
            await send(message)

        await self.app(scope, receive, tap)


def spellings(secret: str) -> set[str]:
    raw = secret.encode()
    out = {secret, quote(secret, safe=""), quote_plus(secret)}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        out |= {encode(raw).decode(), encode(raw).decode().rstrip("=")}
    return out


def scan(texts: dict[str, str], secrets: dict[str, str]) -> list[str]:
    leaks = []
    for where, text in texts.items():
        for name, secret in secrets.items():
            for form in spellings(secret):
                if form in text:
                    leaks.append(f"{name} ({form[:12]}…) in {where}")
    return leaks


@pytest.mark.parametrize("how", ["oauth", "bearer"])
def test_no_credential_in_any_output_of_an_auth_audit(protected: Protected,  # noqa: F811
                                                      tmp_path: Path, how: str) -> None:
    tap = TokenTap(protected.app)
    protected.switch.app = tap
    bearer = protected.token()
    settings = {**protected.settings(), "fetch_any_host": False}
    secrets = {"client secret": SECRET, "--header API key": API_KEY,
               "expired_token": settings["expired_token"],
               "wrong_audience_token": settings["wrong_audience_token"]}
    argv = [sys.executable, "-m", "mcpcore.conformance", "--url", protected.url,
            "--audit", "auth", "--header", f"X-Api-Key: {API_KEY}"]
    if how == "oauth":
        config = tmp_path / "oauth.json"
        config.write_text(json.dumps({"client_id": "demo-client", "client_secret": SECRET,
                                      "scope": "mcp"}))
        argv += ["--oauth", str(config)]
    else:
        secrets["--bearer token"] = bearer
        argv += ["--bearer", bearer]
        settings["oauth"] = {"client_id": "demo-client", "client_secret": SECRET,
                             "scope": "mcp", "token_endpoint": protected.url.replace(
                                 "/mcp", "/as/token")}
    (tmp_path / "audit.json").write_text(json.dumps(settings))
    outputs = {kind: tmp_path / f"report.{kind}" for kind in ("json", "junit", "html",
                                                                "markdown")}
    for kind, path in outputs.items():
        argv += [f"--{kind}", str(path)]
    argv += ["--audit-config", str(tmp_path / "audit.json")]
    try:
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600,
                              check=False)
    finally:
        protected.switch.app = protected.app
    report = json.loads(outputs["json"].read_text())
    assert report["problem"] is None and report["eras"], (done.stderr[-2000:], report)
    if how == "oauth":
        assert tap.issued, "the audit obtained no token through --oauth"
    for number, token in enumerate(tap.issued):
        secrets[f"token {number} the AS issued"] = token
    texts = {f"--{kind}": path.read_text() for kind, path in outputs.items()}
    texts |= {"stdout": done.stdout, "stderr": done.stderr}
    assert len(done.stderr.splitlines()) > 20    # the progress lines were written
    assert not scan(texts, secrets), scan(texts, secrets)
    # Not vacuous: the token-in-query probe ran with the live token in its URL, and the
    # report shows where it was, redacted by name.
    [query] = [r for r in report["results"] if r["id"] == "audit.token-in-query"
               and r["era"] == "2026-07-28"]
    assert query["verdict"] == "pass", query["message"]
    urls = [e["request"]["url"] for e in query["evidence"]]
    label = "the --bearer token" if how == "bearer" else "the token --oauth obtained"
    assert any(f"?access_token=<redacted: {label}>" in (u or "") for u in urls), urls
    assert any("X-Api-Key" in e["request"]["headers"] for r in report["results"]
               for e in r["evidence"])


# -- the redactor itself ------------------------------------------------------------------
def test_every_form_and_a_cut_off_end_are_redacted() -> None:
    secret = "s3cr3t/value+with=odd&chars-0123456789"
    redactor = Redactor()
    redactor.add(secret, "the client secret")
    for form in forms(secret):
        assert secret not in redactor.text(f"x {form} y")
        assert "<redacted: the client secret>" in redactor.text(f"x {form} y")
    cut = "a body excerpt ending in " + secret[:20]
    assert secret[:20] not in redactor.text(cut)
    assert "part of the client secret" in redactor.text(cut)
    tail = secret[-15:] + " then more"
    assert secret[-15:] not in redactor.text(tail)
    assert redactor.text("nothing secret here") == "nothing secret here"


def test_a_secret_echoed_in_a_header_name_json_escapes_hex_or_another_case_is_redacted(
        ) -> None:
    """What a hostile server that echoes the token can make of it (an attack review)."""
    token = "tok_Abc123Def456Ghi789Jkl"
    redactor = Redactor()
    redactor.add(token, "the --bearer token")
    escaped = "".join(f"\\u{ord(c):04x}" for c in token)
    exchange = RecordedExchange(
        "probe", "http", b"{}", url="http://h/mcp",
        response_headers={f"x-echo-{token.lower()}": "1", "x-hex": token.encode().hex()},
        body=f'{{"jsonrpc":"2.0","id":1,"result":{{"echo":"{escaped}"}}}}'.encode(),
        messages=[])
    clean = redactor.exchange(exchange)
    shown = repr(clean)
    for form in (token, token.lower(), token.upper(), token.encode().hex(), escaped):
        assert form not in shown, form
    assert token not in clean.body.decode()


def test_credentials_of_a_url_are_learnt() -> None:
    redactor = Redactor()
    redactor.add_url("https://ghp_UserToken0123@h.example/mcp?api_key=Query0123456&x=1",
                     "the target URL")
    assert {"ghp_UserToken0123", "Query0123456"} <= set(redactor.secrets)


def test_settings_are_walked_by_name() -> None:
    redactor = Redactor()
    redactor.add_settings({"expired_token": "eyJexpired-token-value", "mrtr_tools": ["tool_a"],
                           "oauth": {"client_id": "public-client", "client_secret": "sekrit-1"},
                           "foreign_key": {"kty": "EC", "d": "private-d-parameter"},
                           "Authorization": "Bearer header-given-token"})
    assert set(redactor.secrets) == {"eyJexpired-token-value", "sekrit-1", "EC",
                                     "private-d-parameter", "Bearer header-given-token",
                                     "header-given-token"} - {"EC"}   # EC: too short


def test_an_outcome_is_scrubbed_everywhere_and_keeps_its_decisive_exchange() -> None:
    token = "opaque-token-0123456789abcdef"
    redactor = Redactor()
    redactor.add(token, "the --bearer token")
    exchange = RecordedExchange(f"probe with {token}", "http", f'{{"t":"{token}"}}'.encode(),
                        url=f"http://h/mcp?access_token={token}",
                        request_headers={"Authorization": f"Bearer {token}",
                                         "DPoP": "eyJhbGciOiJFUzI1NiJ9.eyJodHUiOiJ4In0.c2ln"},
                        status=401, response_headers={"www-authenticate": f"Bearer x={token}"},
                        body=f"echo {token[:16]}".encode(),
                        messages=[{"jsonrpc": "2.0", "id": 1, "error": {"message": token}}],
                        failure=f"dropped after {token}", problems=[f"bad {token}"])
    exchange.response = exchange.messages[0]
    check = next(iter(all_checks()))
    outcome = CheckOutcome(check, "2026-07-28", Verdict.FAIL, f"saw {token}", [exchange],
                      notes=[token], decisive=exchange)
    clean = redactor.outcome(outcome)
    assert token not in repr(clean) and token[:16] not in repr(clean)
    assert clean.decisive is clean.evidence[0] and clean.decisive is not exchange
    assert clean.evidence[0].request_headers["Authorization"] == \
        "Bearer <redacted: the --bearer token>"
    assert clean.evidence[0].request_headers["DPoP"].startswith("<redacted, ")
    assert clean.evidence[0].response == clean.evidence[0].messages[0]
    assert token in exchange.url                 # the check's own copy is untouched
