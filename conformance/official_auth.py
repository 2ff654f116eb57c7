"""The official suite's ``auth/*`` client scenarios, driven with ``mcpcore.auth.OAuth``.

``official_client`` hands every scenario whose name starts with ``auth/`` to ``main``
here. Each scenario gets one OAuth configuration, then the same MCP calls the mocks
expect (``tools/list``, then ``tools/call test-tool {}``: the step-up and migration
scenarios need two requests with a token):

* ``auth/client-credentials-basic`` / ``-jwt``: ``ClientCredentialsGrant`` with the
  context's secret, or its PKCS#8 key (``private_key_jwt``, ``aud`` = the issuer);
* ``auth/wif-jwt-bearer``: ``JwtBearerGrant`` with the context's ``valid_jwt`` (a
  rejection ends the run: no retry, no other grant);
* ``auth/enterprise-managed-authorization``: ``EnterpriseGrant``: the context's ID token
  is exchanged at its IdP for an ID-JAG (the suite's IdP knows the client by
  ``idp_client_id`` alone), then presented at the MCP authorization server with the
  context's ``client_id``/``client_secret`` (``client_secret_basic``);
* ``auth/dpop``, ``auth/dpop-nonce``: the authorization-code flow with a DPoP key;
* every other ``auth/*``: the authorization-code flow with every check on, the
  headless user agent (the mocks redirect at once; no listener is started, so parallel
  runs never share a port), pre-registered credentials from the context when present,
  the suite's client ID metadata document URL, and dynamic registration as the fallback
  with ``application_type="native"``.

Everything is kept in memory, keyed by issuer; ``http://localhost`` is allowed because
the mocks live there. Exit 0 on success, 1 when authorization was refused (the
rejection scenarios expect exactly that).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.serialization import load_pem_private_key

from mcpcore.auth import (
    AuthError,
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    ClientInfo,
    ClientMetadata,
    EnterpriseGrant,
    Grant,
    HeadlessUserAgent,
    JwtBearerGrant,
    NetworkPolicy,
    OAuth,
    Registration,
)
from mcpcore.client import Client, ClientError, LocalProtocolError
from mcpcore.conformance.official_client import mode_for

#: The suite compares the CIMD ``client_id`` with exactly this URL (it never resolves).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: Registered and sent, never contacted: the headless agent reads the redirect itself.
REDIRECT_URI = "http://localhost:3000/callback"


def say(text: str) -> None:
    print(f"[official_auth] {text}", file=sys.stderr, flush=True)


def _text(context: Mapping[str, Any], key: str) -> str:
    value = context.get(key)
    if not isinstance(value, str) or not value:
        raise SystemExit(f"MCP_CONFORMANCE_CONTEXT has no {key}")
    return value


def grant_for(scenario: str, context: Mapping[str, Any]) -> Grant:
    """The OAuth grant a scenario exercises (see the module docstring)."""
    if scenario == "auth/client-credentials-basic":
        return ClientCredentialsGrant(ClientInfo(
            _text(context, "client_id"), client_secret=_text(context, "client_secret"),
            auth_method="client_secret_basic"))
    if scenario == "auth/client-credentials-jwt":
        key = load_pem_private_key(_text(context, "private_key_pem").encode(), password=None)
        return ClientCredentialsGrant(ClientInfo(
            _text(context, "client_id"), private_key=key, auth_method="private_key_jwt",
            signing_alg=str(context.get("signing_algorithm") or "ES256")))
    if scenario == "auth/wif-jwt-bearer":
        return JwtBearerGrant(_text(context, "valid_jwt"))
    if scenario == "auth/enterprise-managed-authorization":
        return EnterpriseGrant(
            idp_issuer=_text(context, "idp_issuer"),
            idp_token_endpoint=_text(context, "idp_token_endpoint"),
            idp_client=ClientInfo(_text(context, "idp_client_id")),
            id_token=_text(context, "idp_id_token"),
            client=ClientInfo(_text(context, "client_id"),
                              client_secret=_text(context, "client_secret"),
                              auth_method="client_secret_basic"),
        )
    static = None
    if isinstance(context.get("client_id"), str):
        secret = context.get("client_secret")
        static = ClientInfo(context["client_id"],
                            client_secret=secret if isinstance(secret, str) else None)
    return AuthorizationCodeGrant(
        HeadlessUserAgent(REDIRECT_URI),
        Registration(
            static=static,
            metadata_document_url=CIMD_URL,
            metadata=ClientMetadata(client_name="mcpcore conformance client",
                                    application_type="native"),
        ),
    )


async def run(url: str, scenario: str, context: Mapping[str, Any], version: str) -> None:
    auth = OAuth(
        grant_for(scenario, context),
        dpop=scenario.startswith("auth/dpop"),
        network=NetworkPolicy(allow_loopback=True),  # the mocks are http://localhost:<port>
        timeout=5.0,
    )
    async with Client.http(
        url,
        auth=auth,
        client_info={"name": "mcpcore-conformance-client", "version": "0.1.0"},
        timeout=20.0,  # the suite kills us at 30 s
        mode=mode_for(version),  # the wire the mock speaks (OAuth is the same on both)
        heartbeat=None,
    ) as client:
        tools = [tool.name async for tool in client.iter_tools()]
        say(f"tools/list: {tools}")
        result = await client.call_tool("test-tool", {})
        say(f"tools/call test-tool: {len(result.content)} content block(s)")


def main(url: str, scenario: str, context: Any, version: str) -> int:
    """Run one ``auth/*`` scenario; the exit status for the suite."""
    try:
        asyncio.run(run(url, scenario, context if isinstance(context, Mapping) else {}, version))
    except LocalProtocolError as exc:  # e.g. a wire version this client does not speak
        say(f"{scenario}: {exc}")
        return 1
    except (AuthError, ClientError) as exc:
        say(f"{scenario}: refused: {type(exc).__name__}: {exc}")
        return 1
    say(f"{scenario}: done")
    return 0


__all__ = ["CIMD_URL", "REDIRECT_URI", "grant_for", "main", "run"]
