"""DPoP-bound upstream tokens (RFC 9449) for the gateway's OAuth credential kinds.

With ``dpop = true`` in an upstream's ``[upstream.credentials]`` (``client_credentials``,
``token_exchange``, ``id_jag``), the tokens the gateway obtains for that upstream are
bound to a key of its own, and are worthless without it: a token leaked from a log, a
proxy or the fleet's Store cannot be replayed (RFC 9449 §1).

- **The key** (``dpop_key``): one per upstream, an unencrypted PEM private key from
  ``dpop_key_file``/``dpop_key_env`` (EC P-256 → ES256, P-384 → ES384, RSA → PS256,
  Ed25519 → EdDSA), else an ES256 key made at start. A fleet whose instances share
  tokens through the Store gives them the same key file: tokens bound to another
  instance's key are never shared with it (``token_cache`` keys entries by the key's
  thumbprint).
- **Token requests**: the client room's one token request (``grants.token_request``,
  driven by ``OAuth.run`` as the ID-JAG is): a ``DPoP`` proof of the token endpoint
  (RFC 9449 §5), once more with the server's nonce when it answers
  ``use_dpop_nonce`` (§8). The answer must be a DPoP token: an authorization server
  that ignores the proof and issues a bearer token is refused (``dpop = true`` asks
  for bound tokens; a bearer one is not silently accepted instead).
- **Upstream requests** (``UpstreamProofs``, used by ``credentials.UpstreamAuth``):
  ``Authorization: DPoP <token>`` and a fresh proof on every request (``htm``,
  ``htu`` the request URI without query and fragment, ``ath`` the token's hash,
  §4.2, §7.1), with the upstream's latest nonce; a ``401`` whose challenge says
  ``use_dpop_nonce`` and carries a new ``DPoP-Nonce`` is sent once more with it (§9):
  the resource server refused the request before serving it, so nothing is done twice.

Nonces are kept per origin (the token endpoint's and the upstream's differ), each a
bounded ``NQCHAR`` string (§8.1); anything else a peer sends there is ignored.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable
from typing import Final

import httpx
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcpcore.auth.challenges import parse_challenges
from mcpcore.auth.client.credentials import ClientInfo, MemoryCredentialStore, TokenSet
from mcpcore.auth.client.discovery import AuthServerMetadata
from mcpcore.auth.client.grants import (
    ClientCredentialsGrant,
    GrantContext,
    origin_of,
    token_request,
)
from mcpcore.auth.client.oauth import OAuth
from mcpcore.auth.client.steps import AuthFlow
from mcpcore.auth.client_auth import ClientSecretBasic
from mcpcore.auth.dpop import DPoPKey
from mcpcore.auth.errors import DownstreamError, OAuthClientError
from mcpcore.auth.server.downstream import DownstreamToken
from mcpcore.auth.server.inbound import InboundToken
from mcpcore.auth.terms import ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE
from mcpcore.auth.urls import NetworkPolicy, safe_async_client
from mcpcore.gateway.config import Secrets, UpstreamConfig

#: RFC 9449 §8.1: ``nonce = 1*NQCHAR``; bounded here.
_NONCE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,1024}")
#: Seconds a token is taken to live when the answer says nothing.
_DEFAULT_LIFETIME: Final = 300.0


def dpop_key(upstream: UpstreamConfig, secrets_: Secrets) -> DPoPKey:
    """The upstream's DPoP key (module docstring); ``ValueError`` naming the setting
    when the key it names is not one the gateway can sign proofs with."""
    ref = upstream.credentials.dpop_key
    if ref is None:
        return DPoPKey.generate("ES256")
    where = (f"upstream {upstream.name!r}: credentials.dpop_key_"
             f"{'env' if ref.env is not None else 'file'}")
    try:
        private = serialization.load_pem_private_key(
            secrets_.value(ref).encode("utf-8"), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError(f"{where}: not an unencrypted PEM private key (make one with "
                         "`openssl genpkey -algorithm EC -pkeyopt "
                         "ec_paramgen_curve:P-256`)") from None
    if isinstance(private, ec.EllipticCurvePrivateKey) and private.curve.name in (
            "secp256r1", "secp384r1"):
        return DPoPKey(private, "ES256" if private.curve.name == "secp256r1" else "ES384")
    if isinstance(private, rsa.RSAPrivateKey) and private.key_size >= 2048:
        return DPoPKey(private, "PS256")
    if isinstance(private, ed25519.Ed25519PrivateKey):
        return DPoPKey(private, "EdDSA")
    raise ValueError(f"{where}: a DPoP key is EC P-256 or P-384, RSA of 2048 bits or "
                     "more, or Ed25519")


class _Nonces(dict[str, str]):
    """Server nonces by origin: a value that is not a bounded ``NQCHAR`` string is
    not kept (the client room's token request writes here too)."""

    def __setitem__(self, origin: str, nonce: str) -> None:
        if isinstance(nonce, str) and _NONCE.fullmatch(nonce):
            super().__setitem__(origin, nonce)


class UpstreamProofs:
    """One upstream's DPoP key and the nonces its servers gave: a fresh proof for each
    request (module docstring)."""

    def __init__(self, key: DPoPKey) -> None:
        self.key = key
        self.nonces: dict[str, str] = _Nonces()

    @property
    def thumbprint(self) -> str:
        return self.key.thumbprint

    def sign(self, request: httpx.Request, access_token: str) -> str | None:
        """Put a fresh proof for ``request`` on it; the nonce it carries."""
        url = str(request.url)
        nonce = self.nonces.get(origin_of(url))
        request.headers["dpop"] = self.key.proof(request.method, url,
                                                 access_token=access_token, nonce=nonce)
        return nonce

    def again(self, request: httpx.Request, response: httpx.Response,
              sent: str | None) -> bool:
        """Remember the nonce ``response`` carries; whether ``request`` goes once more
        with it (a 401 ``use_dpop_nonce`` with a nonce other than the one sent)."""
        nonce = response.headers.get("dpop-nonce")
        if nonce is None:
            return False
        self.nonces[origin_of(str(request.url))] = nonce
        if response.status_code != 401 or nonce == sent or not _NONCE.fullmatch(nonce):
            return False
        challenges = parse_challenges(response.headers.get_list("www-authenticate"))
        return any(c.scheme == "dpop" and c.get("error") == "use_dpop_nonce"
                   for c in challenges)


def bound_token(token: TokenSet, *, audience: str, dpop: bool,
                clock: Callable[[], float]) -> DownstreamToken:
    """The upstream token of a client-room ``TokenSet``: DPoP-bound exactly when the
    upstream's credential asks for it (``DownstreamError`` otherwise)."""
    if token.is_dpop and not dpop:
        raise DownstreamError("a DPoP-bound token was issued, and dpop is not set")
    if dpop and not token.is_dpop:
        raise DownstreamError("the authorization server issued a bearer token although "
                              "dpop = true (it does not bind tokens to the key)")
    expires_at = token.expires_at if token.expires_at is not None else (
        clock() + _DEFAULT_LIFETIME)
    return DownstreamToken(token.access_token, audience=audience, scopes=token.scopes,
                           expires_at=expires_at, token_type="DPoP" if dpop else "Bearer")


class DPoPGrants:
    """DPoP-bound tokens from the upstream's authorization server: client credentials
    (``fetch``: the gateway as itself) and RFC 8693 token exchange (``exchange``: the
    caller's token as ``subject_token``), through the client room's token request."""

    def __init__(self, *, token_endpoint: str, client_id: str, client_secret: str,
                 issuer: str, proofs: UpstreamProofs, network: NetworkPolicy,
                 clock: Callable[[], float], timeout: float) -> None:
        self._client = ClientInfo(client_id, client_secret=client_secret,
                                  auth_method="client_secret_basic")
        self._auth = ClientSecretBasic(client_id, client_secret)
        self._metadata = AuthServerMetadata(issuer=issuer, token_endpoint=token_endpoint)
        self._proofs = proofs
        self._network = network
        self._clock = clock
        self._http: httpx.AsyncClient | None = safe_async_client(network, timeout=timeout)
        self._driver = OAuth(ClientCredentialsGrant(self._client), network=network,
                             http_client=self._http, timeout=timeout, clock=clock)

    def _context(self, audience: str, scopes: frozenset[str]) -> GrantContext:
        return GrantContext(server_url=audience, resource=audience, metadata=self._metadata,
                            scopes=scopes, store=MemoryCredentialStore(),
                            network=self._network, dpop=self._proofs.key,
                            nonces=self._proofs.nonces, clock=self._clock)

    async def _run(self, flow: AuthFlow[TokenSet], grant: str, audience: str
                   ) -> DownstreamToken:
        try:
            token = await self._driver.run(flow)
        except OAuthClientError as exc:
            raise DownstreamError(f"{grant}: {exc}", error=exc.error) from None
        return bound_token(token, audience=audience, dpop=True, clock=self._clock)

    async def fetch(self, *, audience: str, scopes: Iterable[str] = ()) -> DownstreamToken:
        ctx = self._context(audience, frozenset(scopes))
        return await self._run(ClientCredentialsGrant(self._client).obtain(ctx),
                               "client_credentials", audience)

    async def exchange(self, subject_token: InboundToken, *, audience: str,
                       scopes: Iterable[str] = ()) -> DownstreamToken:
        scope_set = frozenset(scopes)
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject_token.reveal(),
                "subject_token_type": ACCESS_TOKEN_TYPE,
                "requested_token_type": ACCESS_TOKEN_TYPE,
                "resource": audience, "audience": audience}
        if scope_set:
            form["scope"] = " ".join(sorted(scope_set))
        flow = token_request(self._context(audience, scope_set), form, self._auth,
                             requested=scope_set)
        token = await self._run(flow, "token exchange", audience)
        if secrets.compare_digest(token.access_token, subject_token.reveal()):
            # An STS that hands the subject token back would make us a passthrough.
            raise DownstreamError("token exchange returned the inbound token")
        return token

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()


__all__ = ["DPoPGrants", "UpstreamProofs", "bound_token", "dpop_key"]
