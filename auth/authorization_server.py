"""A compact OAuth authorization server for examples and tests. Not for production.

It does what the resource-server side needs to be exercised for real, over HTTP:

* ``GET /.well-known/oauth-authorization-server<issuer path>`` (RFC 8414 metadata),
* ``GET <issuer path>/jwks`` (public keys; RS256, ES256 and EdDSA keys can be mixed,
  and ``rotate()`` swaps the signing key while keeping old keys published, or not),
* ``POST <issuer path>/token``: ``client_credentials`` and RFC 8693 token exchange,
  with ``client_secret_basic``, ``client_secret_post`` or ``private_key_jwt``,
* ``POST <issuer path>/introspect`` (RFC 7662) for opaque tokens it minted,
* ``mint()`` / ``mint_opaque()`` to make tokens directly in tests.

Every request it receives is recorded in ``requests`` so a test can assert what an STS
was sent. Run ``python -m mcpcore.auth.authorization_server --port 9000`` to serve one alone; it
prints a client id/secret and a sample token.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import jwt
import msgspec
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcpcore.auth.asgi import Receive, Scope, Send

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@dataclass(frozen=True)
class SigningKey:
    """A private signing key with its ``kid`` and ``alg``."""

    kid: str
    alg: str
    private_key: Any = field(repr=False)

    @classmethod
    def generate(cls, alg: str = "RS256", kid: str | None = None) -> SigningKey:
        key: Any
        if alg.startswith(("RS", "PS")):
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg == "ES256":
            key = ec.generate_private_key(ec.SECP256R1())
        elif alg == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
        else:
            raise ValueError(f"unsupported algorithm {alg}")
        return cls(kid or f"{alg.lower()}-{secrets.token_hex(4)}", alg, key)

    @property
    def public_key(self) -> Any:
        return self.private_key.public_key()

    def public_jwk(self) -> dict[str, Any]:
        algorithm = jwt.get_algorithm_by_name(self.alg)
        jwk: dict[str, Any] = dict(algorithm.to_jwk(self.public_key, as_dict=True))
        jwk.update(kid=self.kid, alg=self.alg, use="sig")
        return jwk

    def sign(self, claims: Mapping[str, Any], headers: Mapping[str, Any] | None = None) -> str:
        all_headers = {"kid": self.kid, "typ": "at+jwt", **(headers or {})}
        return jwt.encode(dict(claims), self.private_key, algorithm=self.alg, headers=all_headers)


@dataclass(frozen=True)
class Client:
    """A registered client: a secret, a public key for ``private_key_jwt``, or both."""

    client_id: str
    secret: str | None = field(default=None, repr=False)
    public_key: Any = field(default=None, repr=False)
    scope: str = ""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: bytes = b""


class _Refused(Exception):
    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


class LocalAuthorizationServer:
    """An ASGI authorization server; see the module docstring.

    >>> server = LocalAuthorizationServer("http://127.0.0.1:9000")
    >>> token = server.mint(sub="alice", aud="http://127.0.0.1:8000/mcp", scope="mcp")
    """

    def __init__(
        self,
        issuer: str,
        *,
        keys: Sequence[SigningKey] | None = None,
        clients: Sequence[Client] = (),
        exchangeable_audiences: Sequence[str] = (),
        token_ttl: int = 300,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.keys: list[SigningKey] = list(keys) if keys else [SigningKey.generate("RS256")]
        self.clients = {c.client_id: c for c in clients}
        #: Tokens with one of these audiences may be exchanged (the MCP resource).
        self.exchangeable_audiences = set(exchangeable_audiences)
        self.token_ttl = token_ttl
        self.clock = clock
        self.requests: list[RecordedRequest] = []
        self.jwks_cache_control = "max-age=300"
        self.fail_token_endpoint: int | None = None
        self._opaque: dict[str, dict[str, Any]] = {}
        self._prefix = urlsplit(issuer).path.rstrip("/")

    # -- endpoints and metadata -------------------------------------------------------

    @property
    def jwks_uri(self) -> str:
        return self.issuer.rstrip("/") + "/jwks"

    @property
    def token_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/token"

    @property
    def introspection_endpoint(self) -> str:
        return self.issuer.rstrip("/") + "/introspect"

    @property
    def metadata_path(self) -> str:
        return "/.well-known/oauth-authorization-server" + self._prefix

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri,
            "token_endpoint": self.token_endpoint,
            "introspection_endpoint": self.introspection_endpoint,
            "grant_types_supported": ["client_credentials", TOKEN_EXCHANGE],
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt",
            ],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
            "response_types_supported": [],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.public_jwk() for k in self.keys]}

    def rotate(self, new_key: SigningKey | None = None, *, keep_old: bool = True) -> SigningKey:
        """Make ``new_key`` the signing key; old keys stay published unless told not to."""
        key = new_key or SigningKey.generate(self.keys[0].alg)
        self.keys = [key, *self.keys] if keep_old else [key]
        return key

    # -- minting -----------------------------------------------------------------------

    def mint(
        self,
        *,
        sub: str,
        aud: str | list[str],
        scope: str = "",
        ttl: int | None = None,
        key: SigningKey | None = None,
        headers: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> str:
        """Sign an access token. ``extra`` claims override the defaults (``iss=...``)."""
        now = int(self.clock())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": aud,
            "iat": now,
            "exp": now + (self.token_ttl if ttl is None else ttl),
            "jti": secrets.token_urlsafe(16),
        }
        if scope:
            claims["scope"] = scope
        claims.update(extra)
        return (key or self.keys[0]).sign(claims, headers)

    def mint_opaque(self, *, sub: str, aud: str, scope: str = "", ttl: int | None = None) -> str:
        token = secrets.token_urlsafe(32)
        now = int(self.clock())
        self._opaque[token] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": aud,
            "scope": scope,
            "iat": now,
            "exp": now + (self.token_ttl if ttl is None else ttl),
            "client_id": "test-client",
        }
        return token

    def revoke(self, token: str) -> None:
        self._opaque.pop(token, None)

    # -- ASGI ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path, method = scope["path"], scope["method"]
        self.requests.append(
            RecordedRequest(method, path, headers, body, scope.get("query_string", b""))
        )
        extra: list[tuple[bytes, bytes]] = []
        try:
            if method == "GET" and path == self.metadata_path:
                status, doc = 200, self.metadata()
            elif method == "GET" and path == self._prefix + "/jwks":
                status, doc = 200, self.jwks()
                extra.append((b"cache-control", self.jwks_cache_control.encode()))
            elif method == "POST" and path == self._prefix + "/token":
                status, doc = 200, self._token(headers, dict(parse_qsl(body.decode())))
                extra.append((b"cache-control", b"no-store"))
            elif method == "POST" and path == self._prefix + "/introspect":
                status, doc = 200, self._introspect(headers, dict(parse_qsl(body.decode())))
            else:
                status, doc = 404, {"error": "not_found"}
        except _Refused as exc:
            status, doc = exc.status, {"error": exc.error}
        payload = msgspec.json.encode(doc)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    *extra,
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def _authenticate_client(self, headers: Mapping[str, str], form: Mapping[str, str]) -> Client:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            if "client_secret" in form or "client_assertion" in form:
                raise _Refused(400, "invalid_request")  # one method per request
            try:
                raw = base64.b64decode(auth[6:]).decode()
            except ValueError:
                raise _Refused(401, "invalid_client") from None
            client_id, _, secret = raw.partition(":")
            client = self.clients.get(unquote(client_id))
            if client is None or client.secret is None:
                raise _Refused(401, "invalid_client")
            if not secrets.compare_digest(client.secret, unquote(secret)):
                raise _Refused(401, "invalid_client")
            return client
        if form.get("client_assertion_type") == JWT_BEARER_ASSERTION:
            assertion = form.get("client_assertion", "")
            try:
                unverified = jwt.decode(assertion, options={"verify_signature": False})
                client = self.clients[unverified["iss"]]
                jwt.decode(
                    assertion,
                    client.public_key,
                    algorithms=["RS256", "ES256", "EdDSA"],
                    audience=[self.issuer, self.token_endpoint],
                    options={"require": ["iss", "sub", "aud", "exp", "jti"]},
                )
            except (jwt.InvalidTokenError, KeyError, TypeError):
                raise _Refused(401, "invalid_client") from None
            if unverified.get("sub") != client.client_id:
                raise _Refused(401, "invalid_client")
            return client
        posted = self.clients.get(form.get("client_id", ""))
        posted_secret = form.get("client_secret")
        if posted is None or posted.secret is None or posted_secret is None:
            raise _Refused(401, "invalid_client")
        if not secrets.compare_digest(posted.secret, posted_secret):
            raise _Refused(401, "invalid_client")
        return posted

    def _token(self, headers: Mapping[str, str], form: Mapping[str, str]) -> dict[str, Any]:
        if self.fail_token_endpoint is not None:
            raise _Refused(self.fail_token_endpoint, "server_error")
        client = self._authenticate_client(headers, form)
        grant = form.get("grant_type")
        audience = form.get("resource") or form.get("audience")
        if not audience:
            raise _Refused(400, "invalid_target")
        scope = form.get("scope", "")
        if grant == "client_credentials":
            token = self.mint(
                sub=client.client_id, aud=audience, scope=scope, client_id=client.client_id
            )
        elif grant == TOKEN_EXCHANGE:
            if form.get("subject_token_type") != ACCESS_TOKEN_TYPE:
                raise _Refused(400, "invalid_request")
            subject = self._verify_own(form.get("subject_token", ""))
            if not set(_aud_list(subject.get("aud"))) & self.exchangeable_audiences:
                raise _Refused(400, "invalid_grant")
            act: dict[str, Any] = {"sub": client.client_id}
            if "act" in subject:
                act["act"] = subject["act"]
            token = self.mint(
                sub=subject["sub"], aud=audience, scope=scope, client_id=client.client_id, act=act
            )
        else:
            raise _Refused(400, "unsupported_grant_type")
        return {
            "access_token": token,
            "issued_token_type": ACCESS_TOKEN_TYPE,
            "token_type": "Bearer",
            "expires_in": self.token_ttl,
            **({"scope": scope} if scope else {}),
        }

    def _verify_own(self, token: str) -> dict[str, Any]:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = next(k for k in self.keys if k.kid == kid)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.public_key,
                algorithms=[key.alg],
                issuer=self.issuer,
                options={"verify_aud": False, "require": ["exp", "sub", "aud"]},
            )
        except (jwt.InvalidTokenError, StopIteration):
            raise _Refused(400, "invalid_grant") from None
        return claims

    def _introspect(self, headers: Mapping[str, str], form: Mapping[str, str]) -> dict[str, Any]:
        self._authenticate_client(headers, form)
        data = self._opaque.get(form.get("token", ""))
        if data is None or data["exp"] <= self.clock():
            return {"active": False}
        return {"active": True, "token_type": "Bearer", **data}


def _aud_list(aud: object) -> list[str]:
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="Run the local test authorization server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--audience", default="http://127.0.0.1:8000/mcp")
    parser.add_argument("--scope", default="mcp")
    args = parser.parse_args(argv)
    issuer = f"http://{args.host}:{args.port}"
    secret = secrets.token_urlsafe(24)
    server = LocalAuthorizationServer(
        issuer,
        clients=[Client("demo-client", secret=secret)],
        exchangeable_audiences=[args.audience],
    )
    print(f"issuer:        {issuer}")
    print(f"client:        demo-client / {secret}")
    print(f"sample token:  {server.mint(sub='demo-user', aud=args.audience, scope=args.scope)}")
    uvicorn.run(server, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()


__all__ = [
    "ACCESS_TOKEN_TYPE",
    "JWT_BEARER_ASSERTION",
    "TOKEN_EXCHANGE",
    "Client",
    "LocalAuthorizationServer",
    "RecordedRequest",
    "SigningKey",
]
