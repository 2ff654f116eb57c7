"""The auth audit pack (``--audit auth``): what an MCP server owes as an OAuth resource
server (basic/authorization: Protected Resource Metadata, Token Handling, Error Handling)
and the classic JWT attacks of RFC 8725.

Every forged token must be answered 401 with a ``WWW-Authenticate: Bearer`` challenge
and nothing that helps the attacker (no reason beyond ``invalid_token``, no echo of the
token, no stack trace). Tokens the auditor cannot forge (a validly signed but expired or
wrong-audience one) come from the audit settings or the OAuth client-credentials config;
without them those checks skip.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from mcpcore.conformance import tokens, wire
from mcpcore.conformance.context import Context
from mcpcore.conformance.model import CheckFn, Level, as_dict, spec
from mcpcore.conformance.recorder import Recorder
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import Exchange

AUTH = "basic/authorization"
COMMON: dict[str, Any] = {"pack": "audit", "needs": ["http"], "tags": ["auth", "security"]}
_PARAM = re.compile(r'([A-Za-z_][\w-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


def parse_challenge(value: str) -> dict[str, str] | None:
    """The auth-params of the ``Bearer`` challenge in a ``WWW-Authenticate`` value."""
    match = re.search(r"(?:^|,)\s*Bearer(?:\s+|$)(.*)", value, re.I | re.S)
    if not match:
        return None
    params: dict[str, str] = {}
    rest = match.group(1)
    for name, raw in _PARAM.findall(rest):
        if name.lower() in params:
            continue
        params[name.lower()] = raw[1:-1].replace('\\"', '"') if raw.startswith('"') else raw
        if re.match(r"\s*,\s*[A-Za-z][\w-]*\s+[A-Za-z]", rest[rest.find(raw) + len(raw):]):
            break  # the next challenge starts
    return params


async def probe(ctx: Context, token: str | None, label: str, *,
                method: str = "tools/list", params: dict[str, Any] | None = None,
                url_suffix: str = "") -> Exchange:
    """An era-appropriate request presenting ``token`` (``None``: no Authorization)."""
    auth = {"Authorization": f"Bearer {token}"} if token is not None else {
        "Authorization": None}
    if ctx.session.modern:
        body = wire.request(method, params, id=ctx.session.next_id())
        headers = {**wire.standard_headers(body), **auth}
    else:
        body = {"jsonrpc": "2.0", "id": ctx.session.next_id(), "method": "initialize",
                "params": {"protocolVersion": ctx.era, "capabilities": {},
                           "clientInfo": dict(wire.SUITE_CLIENT)}}
        headers = {**wire.legacy_headers(), **auth}
    url = (ctx.target.url or "") + url_suffix if url_suffix else None
    return await ctx.send(body, headers=headers, label=label, url=url)


def _allowed(ctx: Context, url: str) -> bool:
    """The auditor only fetches URLs on the target's host or loopback, unless told to."""
    if ctx.options.audit.get("fetch_any_host"):
        return url.startswith(("https://", "http://"))
    host = urlsplit(url).hostname or ""
    if host == urlsplit(ctx.target.url or "").hostname or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _get_json(ctx: Context, url: str, label: str) -> tuple[Exchange | None, Any]:
    if not _allowed(ctx, url):
        ctx.note(f"not fetched (another host; set fetch_any_host to allow): {url}")
        return None, None
    exchange = await ctx.send(b"", headers={"Accept": "application/json", "Authorization": None},
                              http_method="GET", url=url, label=label)
    try:
        import json

        return exchange, json.loads(exchange.body) if exchange.status == 200 else None
    except ValueError:
        return exchange, None


def well_known(url: str) -> str:
    """RFC 9728 §3.1: the well-known segment goes between the authority and the path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource" + \
        parts.path.rstrip("/")


def well_known_root(url: str) -> str:
    """The root form of the well-known PRM URL (authorization-server-discovery.mdx)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource"


async def discovery(ctx: Context) -> dict[str, Any]:
    """PRM, AS metadata and JWKS, found once per session: ``{"challenge", "prm_url",
    "prm", "issuer", "jwks"}`` (missing parts are ``None``)."""
    async def find() -> dict[str, Any]:
        found: dict[str, Any] = {"challenge": None, "prm_url": None, "prm": None,
                                 "issuer": None, "jwks": None, "exchanges": []}
        first = await probe(ctx, None, "a request without a token")
        found["exchanges"].append(first)
        found["first"] = first
        challenge = parse_challenge(first.response_headers.get("www-authenticate", ""))
        found["challenge"] = challenge
        candidates = [c for c in ((challenge or {}).get("resource_metadata"),
                                  well_known(ctx.target.url or ""),
                                  well_known_root(ctx.target.url or "")) if c]
        for url in candidates:
            exchange, doc = await _get_json(ctx, url, f"GET {url}")
            if exchange is not None:
                found["exchanges"].append(exchange)
            if isinstance(doc, dict):
                found["prm_url"], found["prm"] = url, doc
                break
        servers = as_dict(found["prm"]).get("authorization_servers") or []
        issuer = servers[0] if servers and isinstance(servers[0], str) else None
        found["issuer"] = issuer
        if issuer:
            parts = urlsplit(issuer)
            base, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
            for url in (f"{base}/.well-known/oauth-authorization-server{path}",
                        f"{base}/.well-known/openid-configuration{path}",
                        f"{issuer.rstrip('/')}/.well-known/openid-configuration"):
                exchange, meta = await _get_json(ctx, url, f"GET {url}")
                if exchange is not None:
                    found["exchanges"].append(exchange)
                jwks_uri = as_dict(meta).get("jwks_uri")
                if isinstance(jwks_uri, str):
                    exchange, jwks = await _get_json(ctx, jwks_uri, f"GET {jwks_uri}")
                    if exchange is not None:
                        found["exchanges"].append(exchange)
                    found["jwks"] = jwks if isinstance(jwks, dict) else None
                    break
        return found

    found: dict[str, Any] = await ctx.session.once("auth-discovery", find)
    ctx.evidence.extend(e for e in found["exchanges"] if e not in ctx.evidence)
    return found


async def forged_claims(ctx: Context) -> tuple[dict[str, Any], str | None]:
    found = await discovery(ctx)
    prm = as_dict(found["prm"])
    claims, kid = tokens.claims_for(ctx.target.bearer, issuer=found["issuer"],
                                    resource=prm.get("resource") or ctx.target.url,
                                    scopes=prm.get("scopes_supported"))
    if kid is None:
        keys = as_dict(found["jwks"]).get("keys") or []
        kid = as_dict(keys[0]).get("kid") if keys else None
    return claims, kid


def expect_rejected(ctx: Context, exchange: Exchange, token: str, what: str) -> None:
    """401 with a Bearer challenge that says nothing useful about why."""
    if exchange.failure:
        ctx.fail(f"{what}: {exchange.failure}")
    ctx.expect(exchange.status == 401, f"{what} was not refused with 401 "
               f"({exchange.describe()})")
    challenge = exchange.response_headers.get("www-authenticate", "")
    ctx.expect(parse_challenge(challenge) is not None,
               f"{what}: the 401 has no Bearer challenge ({challenge!r})")
    answer = exchange.text + challenge
    ctx.expect(token not in answer and token.split(".")[1][:20] not in answer,
               f"{what}: the refusal echoes the token")


@check("audit.challenge", title="a request without a token gets a 401 Bearer challenge",
       requirement="“MCP servers MUST implement one of the following discovery mechanisms to "
                   "provide authorization server location information to MCP clients: 1. "
                   "WWW-Authenticate Header: Include the resource metadata URL in the "
                   "WWW-Authenticate HTTP header under resource_metadata when returning 401 "
                   "Unauthorized responses … 2. Well-Known URI” "
                   "(authorization-server-discovery); “Authorization required or token "
                   "invalid” is 401 (authorization, Error Handling); RFC 6750 §3.1: a request "
                   "without credentials gets a challenge without an error code.",
       level=Level.MUST, spec=spec(AUTH, "error-handling"), **COMMON,
       fix="Answer a request without a token with 401 and WWW-Authenticate: Bearer "
           "resource_metadata=\"<absolute PRM URL>\" (no error= when no token was sent), or "
           "serve the metadata at the RFC 9728 well-known URL.")
async def challenge(ctx: Context) -> None:
    found = await discovery(ctx)
    first: Exchange = found["first"]
    ctx.expect(first.status == 401, f"a request without a token was answered "
               f"{first.describe()}", first)
    params = found["challenge"]
    ctx.expect(params is not None, "the 401 carries no WWW-Authenticate: Bearer challenge",
               first)
    metadata = (params or {}).get("resource_metadata", "")
    if metadata:
        ctx.expect(metadata.startswith(("https://", "http://")),
                   f"the challenge's resource_metadata is not an absolute URL ({params})", first)
    elif found["prm"] is not None and found["prm_url"] in (
            well_known(ctx.target.url or ""), well_known_root(ctx.target.url or "")):
        ctx.note("the challenge names no resource_metadata; the metadata is at the "
                 f"well-known URL {found['prm_url']}, which clients fall back to")
    else:
        ctx.fail("neither discovery mechanism: the challenge has no resource_metadata and "
                 "no Protected Resource Metadata is served at the well-known URLs", first)
    ctx.expect("error" not in (params or {}),
               f"the challenge names error={params.get('error') if params else ''} although no "
               "token was sent", first)


@check("audit.prm", title="Protected Resource Metadata is served and names this resource",
       requirement="The server publishes RFC 9728 metadata (at resource_metadata or the "
                   "well-known path) whose resource equals the MCP endpoint URL and whose "
                   "authorization_servers lists at least one issuer.",
       level=Level.MUST, spec=spec(AUTH, "authorization-server-discovery"), **COMMON)
async def prm(ctx: Context) -> None:
    found = await discovery(ctx)
    doc = found["prm"]
    if doc is None:
        ctx.fail("no Protected Resource Metadata at "
                 f"{well_known(ctx.target.url or '')} or in the challenge")
    resource = str(doc.get("resource", ""))
    ctx.expect(resource.rstrip("/") == (ctx.target.url or "").rstrip("/"),
               f"PRM resource is {resource!r}, the endpoint is {ctx.target.url!r}")
    servers = doc.get("authorization_servers")
    ctx.expect(isinstance(servers, list) and servers and all(isinstance(s, str)
                                                               for s in servers),
               f"authorization_servers is {servers!r}")
    methods = doc.get("bearer_methods_supported")
    ctx.expect(methods is None or methods == ["header"] or "header" in methods,
               f"bearer_methods_supported is {methods!r}")
    prm_exchange = next((e for e in found["exchanges"] if e.url == found["prm_url"]), None)
    if prm_exchange is not None:
        ctx.expect(prm_exchange.content_type == "application/json",
                   f"PRM served as {prm_exchange.content_type!r}")


@check("audit.unauthenticated", title="nothing is reachable without a token",
       requirement="Every request to a protected server is authenticated: discovery, lists, "
                   "tool calls and subscriptions without a token are all 401.",
       level=Level.MUST, spec=spec(AUTH, "token-handling"), **COMMON)
async def unauthenticated(ctx: Context) -> None:
    calls: list[tuple[str, dict[str, Any]]]
    if ctx.session.modern:
        calls = [("server/discover", {}), ("tools/list", {}), ("resources/list", {}),
                 ("prompts/list", {}), ("tools/call", {"name": "conformance_probe",
                                                      "arguments": {}}),
                 ("subscriptions/listen", {"notifications": {"toolsListChanged": True}})]
    else:
        calls = [("initialize", {})]
    for method, params in calls:
        if method == "subscriptions/listen":
            body = wire.request(method, params, id=ctx.session.next_id())
            headers: dict[str, Any] = {**wire.standard_headers(body), "Authorization": None}
            async with ctx.transport.stream(wire.encode(body), headers=headers,
                    label=f"{method} without a token") as stream:
                exchange = stream.exchange
            ctx.keep(exchange)
        else:
            exchange = await probe(ctx, None, f"{method} without a token", method=method,
                                   params=params)
        ctx.expect(exchange.status == 401, f"{method} without a token: {exchange.describe()}")


def _forged_check(name: str, title: str, requirement: str,
                  anchor: str = "token-handling") -> Callable[[CheckFn], CheckFn]:
    return check(f"audit.token-{name}", title=title, requirement=requirement,
                 level=Level.MUST, spec=spec(AUTH, anchor), **COMMON)


@_forged_check("garbage", "a token that is not a JWT is refused",
               "A malformed or unknown opaque token is answered 401 (error=invalid_token).")
async def token_garbage(ctx: Context) -> None:
    token = "conformance." + secrets.token_urlsafe(24) + ".notajwt"
    exchange = await probe(ctx, token, "a garbage token")
    expect_rejected(ctx, exchange, token, "a garbage token")


@_forged_check("alg-none", "an unsigned (alg: none) token is refused",
               "Servers verify signatures with a server-side algorithm allow-list and refuse "
               "alg 'none' (RFC 8725 §2.1, §3.1).")
async def token_alg_none(ctx: Context) -> None:
    claims, kid = await forged_claims(ctx)
    token = tokens.alg_none(claims, kid)
    expect_rejected(ctx, await probe(ctx, token, "an alg:none token"), token,
                    "an alg:none token")


@_forged_check("key-confusion", "HS256 keyed with the server's public key is refused",
               "A token signed with HMAC using the server's public key as the secret is "
               "refused: algorithms come from configuration, never from the token "
               "(RFC 8725 §2.1).")
async def token_key_confusion(ctx: Context) -> None:
    claims, kid = await forged_claims(ctx)
    found = await discovery(ctx)
    keys = tokens.public_pems(found["jwks"])
    if not keys:
        ctx.skip("no JWKS found through the PRM's authorization server")
    for key_id, pem in keys[:3]:
        token = tokens.hs256(claims, pem, key_id or kid)
        expect_rejected(ctx, await probe(ctx, token, f"HS256 keyed with public key {key_id}"),
                        token, f"HS256 keyed with public key {key_id}")


@_forged_check("self-signed", "a token signed by an unknown key is refused",
               "A well-formed token signed by a key the server does not trust is refused, "
               "even when it borrows a trusted key's kid.")
async def token_self_signed(ctx: Context) -> None:
    claims, kid = await forged_claims(ctx)
    token = tokens.self_signed(claims, kid=kid)
    expect_rejected(ctx, await probe(ctx, token, "a self-signed token"), token,
                    "a self-signed token")


@_forged_check("unknown-kid", "a token naming an unknown kid is refused promptly",
               "A token whose kid is unknown is refused with 401 within a few seconds "
               "(key refetches are rate-limited, not unbounded).")
async def token_unknown_kid(ctx: Context) -> None:
    claims, _ = await forged_claims(ctx)
    for _ in range(3):
        token = tokens.self_signed(claims, kid="conformance-" + secrets.token_hex(8))
        exchange = await probe(ctx, token, "a token with an unknown kid")
        expect_rejected(ctx, exchange, token, "a token with an unknown kid")
        ctx.expect(exchange.elapsed < 5, f"refusing an unknown kid took {exchange.elapsed:.1f} s")


@_forged_check("key-url", "keys are never fetched from URLs in the token",
               "A token whose jku / x5u header points at an attacker's URL is refused, and "
               "the server never fetches that URL (RFC 8725 §3.10: SSRF, forged keys).")
async def token_key_url(ctx: Context) -> None:
    claims, _ = await forged_claims(ctx)
    kid = "conformance-jku-" + secrets.token_hex(4)
    async with Recorder(jwks=tokens.auditor_jwks(kid)) as recorder:
        for header in ("jku", "x5u"):
            token = tokens.self_signed(claims, kid=kid, headers={
                header: f"{recorder.url}/jwks.json"})
            expect_rejected(ctx, await probe(ctx, token, f"a token with {header}"), token,
                            f"a token with {header}")
        fetched = list(recorder.requests)
    ctx.expect(not fetched, f"the server fetched {len(fetched)} URL(s) named in a token: "
               f"{fetched[0].method} {fetched[0].path}" if fetched else "")


async def _provided(ctx: Context, key: str, resource: str | None = None) -> str | None:
    """A token from the audit settings, or fetched by client credentials."""
    given = ctx.options.audit.get(key)
    if isinstance(given, str) and given:
        return given
    oauth = ctx.options.audit.get("oauth")
    if resource and isinstance(oauth, dict):
        from mcpcore.conformance.credentials import CredentialsError, client_credentials

        try:
            return await client_credentials({**oauth, "resource": resource}, resource=resource)
        except (CredentialsError, OSError) as exc:
            ctx.note(f"the AS would not issue a token for {resource}: {exc}")
    return None


@_forged_check("expired", "an expired token is refused",
               "A validly signed token past its exp is answered 401.")
async def token_expired(ctx: Context) -> None:
    token = await _provided(ctx, "expired_token")
    if token is None:
        ctx.skip("needs expired_token in the audit settings (a token the AS signed that has "
                 "expired)")
    expect_rejected(ctx, await probe(ctx, token, "an expired token"), token, "an expired token")


@_forged_check("wrong-audience", "a token for another resource is refused",
               "A token whose audience is not this server is refused (no passthrough, no "
               "confused deputy; RFC 8707).")
async def token_wrong_audience(ctx: Context) -> None:
    token = await _provided(ctx, "wrong_audience_token",
                            resource="https://conformance-other-resource.example/mcp")
    if token is None:
        ctx.skip("needs wrong_audience_token in the audit settings, or an --oauth config "
                 "whose AS issues tokens for other resources")
    expect_rejected(ctx, await probe(ctx, token, "a token for another audience"), token,
                    "a token for another audience")


@check("audit.token-in-query", title="tokens in the query string are not accepted",
       requirement="Access tokens travel in the Authorization header only; a token in the URI "
                   "query is not honoured.",
       level=Level.MUST, spec=spec(AUTH, "token-requirements"), **{**COMMON,
                                                                    "needs": ["http", "auth"]})
async def token_in_query(ctx: Context) -> None:
    token = ctx.target.bearer or ""
    exchange = await probe(ctx, None, "the token in ?access_token=",
                           url_suffix=f"?access_token={token}")
    ctx.expect(exchange.result is None and exchange.status is not None
               and 400 <= exchange.status < 500,
               f"a token in the query was honoured ({exchange.describe()})")


@check("audit.passthrough", title="the caller's token never reaches an upstream",
       requirement="A server calling other services uses its own credentials: the token the "
                   "client presented never appears in what the upstream receives.",
       level=Level.MUST, spec=spec(AUTH, "token-handling"), **{**COMMON,
                                                                "needs": ["http", "auth"]})
async def passthrough(ctx: Context) -> None:
    canary = as_dict(ctx.options.audit.get("canary"))
    if not canary.get("tool") or not canary.get("listen"):
        ctx.skip("needs canary {tool, arguments, listen: 'HOST:PORT'} in the audit settings; "
                 "see docs/conformance.md, 'The token-passthrough canary'")
    host, _, port = str(canary["listen"]).rpartition(":")
    token = ctx.target.bearer or ""
    parsed = tokens.unverified(token)
    resource = ctx.target.url
    async with Recorder(host=host or "127.0.0.1", port=int(port)) as recorder:
        exchange = await ctx.request("tools/call", {"name": canary["tool"],
                                                    "arguments": canary.get("arguments", {})},
                                     label=f"tools/call {canary['tool']} (canary)")
        seen = list(recorder.requests)
    if not seen:
        ctx.skip(f"{canary['tool']} did not call the recorder at {canary['listen']} "
                 f"({exchange.describe()})")
    for request in seen:
        text = request.text()
        ctx.expect(token not in text, f"the upstream received the caller's token "
                   f"({request.method} {request.path})")
        for candidate in re.findall(r"eyJ[\w-]+\.[\w-]+\.[\w-]*", text):
            inner = tokens.unverified(candidate)
            aud = as_dict(inner[1] if inner else {}).get("aud")
            auds = aud if isinstance(aud, list) else [aud]
            ctx.expect(resource not in auds or parsed is None,
                       "the upstream received a token whose audience is this server")
    ctx.note(f"the upstream saw {len(seen)} request(s) without the caller's token")
