"""``official_auth``: which OAuth configuration each suite scenario gets, and the exit
statuses the suite reads (the scenarios themselves run in tests/integration)."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpcore.auth import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    ClientInfo,
    EnterpriseGrant,
    JwtBearerGrant,
)
from mcpcore.conformance import official_auth


def test_grants_per_scenario() -> None:
    basic = official_auth.grant_for("auth/client-credentials-basic",
                                    {"client_id": "c", "client_secret": "s"})
    assert isinstance(basic, ClientCredentialsGrant)
    assert basic.client.auth_method == "client_secret_basic"
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    keyed = official_auth.grant_for("auth/client-credentials-jwt",
                                    {"client_id": "c", "private_key_pem": pem})
    assert isinstance(keyed, ClientCredentialsGrant)
    assert keyed.client.auth_method == "private_key_jwt" and keyed.client.signing_alg == "ES256"
    wif = official_auth.grant_for("auth/wif-jwt-bearer", {"valid_jwt": "a.b.c"})
    assert isinstance(wif, JwtBearerGrant) and wif.assertion == "a.b.c"
    code = official_auth.grant_for("auth/pre-registration",
                                   {"client_id": "pre", "client_secret": "sec"})
    assert isinstance(code, AuthorizationCodeGrant)
    assert code.registration.static is not None
    assert code.registration.metadata_document_url == official_auth.CIMD_URL
    assert code.user_agent.redirect_uri == official_auth.REDIRECT_URI
    assert isinstance(official_auth.grant_for("auth/metadata-default", {}),
                      AuthorizationCodeGrant)
    ema = official_auth.grant_for("auth/enterprise-managed-authorization", {
        "client_id": "xaa", "client_secret": "xaa-secret", "idp_client_id": "idp-client",
        "idp_id_token": "h.p.s", "idp_issuer": "http://localhost:1",
        "idp_token_endpoint": "http://localhost:1/token"})
    assert isinstance(ema, EnterpriseGrant) and ema.id_token == "h.p.s"
    assert isinstance(ema.client, ClientInfo) and ema.client.client_id == "xaa"
    assert ema.client.auth_method == "client_secret_basic"
    assert ema.idp_client.client_secret is None  # the suite's IdP takes the id alone


def test_missing_context_is_a_clear_exit() -> None:
    with pytest.raises(SystemExit, match="client_secret"):
        official_auth.grant_for("auth/client-credentials-basic", {"client_id": "c"})
    with pytest.raises(SystemExit, match="idp_issuer"):
        official_auth.main("http://127.0.0.1:9/mcp", "auth/enterprise-managed-authorization",
                           None, "2026-07-28")


@pytest.mark.parametrize(("scenario", "version", "message"), [
    ("auth/metadata-default", "2025-11-25", "refused"),   # the session wire, same OAuth
    ("auth/metadata-default", "2026-07-28", "refused"),   # nothing listens on port 9
])
def test_exit_statuses(scenario: str, version: str, message: str,
                       capsys: pytest.CaptureFixture[str]) -> None:
    assert official_auth.main("http://127.0.0.1:9/mcp", scenario, None, version) == 1
    assert message in capsys.readouterr().err
