"""``EmaConfig``: TOML and environment loading, and the settings refused at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpcore.auth.errors import ConfigurationError
from mcpcore.auth.issuer.ema import EmaConfig
from mcpcore.auth.issuer.idjag import EmaClient, TrustedIdp

TOML = """
issuer = "https://auth.example.com"
leeway = 10

[[trusted_idps]]
issuer = "https://idp.example.com/tenant1"
jwks_uri = "https://idp.example.com/tenant1/jwks"
algorithms = ["ES256"]
tenants = ["acme"]

[resources]
"https://mcp.example.com/mcp" = ["files:read", "files:write"]

[[clients]]
client_id = "chat-app"
resources = ["https://mcp.example.com/mcp"]
scopes = ["files:read"]

[jwks]
refetch_cooldown = 60
"""


def test_toml(tmp_path: Path) -> None:
    path = tmp_path / "ema.toml"
    path.write_text(TOML)
    config = EmaConfig.from_toml(path)
    (idp,) = config.trusted_idps
    assert idp.issuer == "https://idp.example.com/tenant1" and idp.tenants == ("acme",)
    assert idp.algorithms == ("ES256",) and config.leeway == 10
    assert config.resources["https://mcp.example.com/mcp"] == {"files:read", "files:write"}
    assert config.clients == (EmaClient("chat-app", frozenset({"https://mcp.example.com/mcp"}),
                                        frozenset({"files:read"})),)
    assert config.jwks.refetch_cooldown == 60
    policy = config.policy()
    assert policy.idps[idp.issuer] is idp and policy.clients["chat-app"].scopes == {"files:read"}


def test_env_overrides_a_file(tmp_path: Path) -> None:
    path = tmp_path / "ema.toml"
    path.write_text(TOML)
    config = EmaConfig.from_env({
        "MCPCORE_EMA_CONFIG": str(path),
        "MCPCORE_EMA_ISSUER": "http://127.0.0.1:9000",
        "MCPCORE_EMA_IDP_ISSUER": "http://127.0.0.1:9100",
        "MCPCORE_EMA_IDP_JWKS_URI": "http://127.0.0.1:9100/jwks",
        "MCPCORE_EMA_IDP_ALGORITHMS": "ES256 RS256",
        "MCPCORE_EMA_RESOURCE": "http://127.0.0.1:8000/mcp",
        "MCPCORE_EMA_SCOPES": "mcp:read mcp:write",
        "MCPCORE_EMA_CLIENT_IDS": "chat-app cli",
        "MCPCORE_EMA_ALLOW_LOOPBACK": "true",
    })
    assert config.issuer == "http://127.0.0.1:9000"
    assert config.trusted_idps == (TrustedIdp("http://127.0.0.1:9100",
                                              jwks_uri="http://127.0.0.1:9100/jwks",
                                              algorithms=("ES256", "RS256")),)
    assert dict(config.resources) == {"http://127.0.0.1:8000/mcp": {"mcp:read", "mcp:write"}}
    assert [c.client_id for c in config.clients] == ["chat-app", "cli"]
    assert config.network.allow_loopback and config.jwks.refetch_cooldown == 60


def test_env_needs_an_issuer() -> None:
    with pytest.raises(ConfigurationError, match="MCPCORE_EMA_ISSUER"):
        EmaConfig.from_env({})


@pytest.mark.parametrize("data, message", [
    ({"isuer": "x"}, "unknown setting 'isuer'"),
    ({"trusted_idps": [{"issuer": "https://i", "jwks_uri": "https://i/j", "tenant": "a"}]},
     "unknown setting trusted_idps.'tenant'"),
    ({"clients": [{"id": "x"}]}, "unknown setting clients.'id'"),
    ({"jwks": {"ttl": 1}}, "unknown setting jwks.'ttl'"),
])
def test_typos_are_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        EmaConfig.from_mapping({"issuer": "https://auth.example.com", **data})


def good(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "issuer": "https://auth.example.com",
        "trusted_idps": [{"issuer": "https://idp.example.com",
                          "jwks_uri": "https://idp.example.com/jwks"}],
        "resources": {"https://mcp.example.com/mcp": ["files:read"]},
        "clients": [{"client_id": "chat-app"}],
    }
    data.update(over)
    return data


IDP2 = {"issuer": "https://idp2.example.com", "jwks_uri": "https://idp2.example.com/jwks"}


@pytest.mark.parametrize("over, message", [
    ({"issuer": "http://auth.example.com"}, "plain http"),
    ({"issuer": "https://auth.example.com?x=1"}, "no query or fragment"),
    ({"trusted_idps": []}, "at least one trusted IdP"),
    ({"trusted_idps": [IDP2, IDP2]}, "listed twice"),
    ({"trusted_idps": [{"issuer": "https://auth.example.com",
                        "jwks_uri": "https://auth.example.com/jwks"}]}, "cannot trust itself"),
    ({"trusted_idps": [{**IDP2, "subject_prefix": "a:"}, {
        "issuer": "https://idp3.example.com", "jwks_uri": "https://idp3.example.com/jwks"}]},
     "subject_prefix"),
    ({"trusted_idps": [{**IDP2, "algorithms": ["HS256"]}]}, "algorithms"),
    ({"trusted_idps": [{**IDP2, "algorithms": ["none"]}]}, "algorithms"),
    ({"trusted_idps": [{**IDP2, "algorithms": []}]}, "algorithms"),
    ({"trusted_idps": [{**IDP2, "tenants": []}]}, "tenants is empty"),
    ({"trusted_idps": [{**IDP2, "jwks_uri": "http://idp2.example.com/jwks"}]}, "plain http"),
    ({"trusted_idps": [{**IDP2, "jwks_uri": "https://10.0.0.5/jwks"}]}, "private address"),
    ({"trusted_idps": [{**IDP2, "jwks_uri": "https://169.254.169.254/jwks"}]}, "link-local"),
    ({"trusted_idps": [{**IDP2, "jwks_uri": "https://u:p@idp2.example.com/jwks"}]},
     "credentials"),
    ({"resources": {}}, "at least one resource"),
    ({"resources": {"mcp.example.com": []}}, "absolute URL"),
    ({"resources": {"https://mcp.example.com/mcp#x": []}}, "absolute URL"),
    ({"clients": [{"client_id": "a"}, {"client_id": "a"}]}, "listed twice"),
    ({"clients": [{"client_id": "a", "resources": ["https://other.example/mcp"]}]},
     "unknown resources"),
    ({"leeway": 61}, "leeway"),
    ({"max_lifetime": 0}, "max_lifetime"),
    ({"max_lifetime": 86_400}, "max_lifetime"),
    ({"leeway": "soon"}, "Expected `float`"),
])
def test_unsafe_or_inconsistent_settings_are_refused(over: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        EmaConfig.from_mapping(good(**over))


def test_several_idps_with_distinct_prefixes() -> None:
    config = EmaConfig.from_mapping(good(trusted_idps=[
        {**IDP2, "subject_prefix": "two:"},
        {"issuer": "https://idp3.example.com", "jwks_uri": "https://idp3.example.com/jwks",
         "subject_prefix": "three:"}]))
    assert len(config.policy().idps) == 2


def test_loopback_only_when_allowed() -> None:
    loopback = good(issuer="http://127.0.0.1:9000", trusted_idps=[
        {"issuer": "http://127.0.0.1:9100", "jwks_uri": "http://127.0.0.1:9100/jwks"}])
    with pytest.raises(ConfigurationError, match="plain http"):
        EmaConfig.from_mapping(loopback)
    assert EmaConfig.from_mapping({**loopback, "network": {"allow_loopback": True}})
