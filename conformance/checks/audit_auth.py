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
from mcpcore.conformance.context import AuditContext
from mcpcore.conformance.model import CheckFn, Level, as_dict, spec
from mcpcore.conformance.recorder import Recorder
from mcpcore.conformance.registry import check
from mcpcore.conformance.transport import RecordedExchange

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


async def probe(ctx: AuditContext, token: str | None, label: str, *,
                method: str = "tools/list", params: dict[str, Any] | None = None,
                url_suffix: str = "") -> RecordedExchange:
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


def _allowed(ctx: AuditContext, url: str) -> bool:
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


async def _get_json(ctx: AuditContext, url: str, label: str) -> tuple[RecordedExchange | None, Any]:
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


async def discovery(ctx: AuditContext) -> dict[str, Any]:
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


async def forged_claims(ctx: AuditContext) -> tuple[dict[str, Any], str | None]:
    found = await discovery(ctx)
    prm = as_dict(found["prm"])
    claims, kid = tokens.claims_for(ctx.target.bearer, issuer=found["issuer"],
                                    resource=prm.get("resource") or ctx.target.url,
                                    scopes=prm.get("scopes_supported"))
    if kid is None:
        keys = as_dict(found["jwks"]).get("keys") or []
        kid = as_dict(keys[0]).get("kid") if keys else None
    return claims, kid


#: The shortest piece of a token whose presence in a refusal counts as an echo (shorter
#: pieces, such as the empty payload of "a..b", occur anywhere by chance).
ECHO_PIECE = 12


def echoes(token: str, answer: str) -> bool:
    """Whether ``answer`` repeats ``token``, whole or its telling part: the first 20
    characters of a JWT's payload (where its claims are), or of any other token; a piece
    shorter than ``ECHO_PIECE`` is not looked for. Tokens need not be JWTs (RFC 6750 §2.1:
    any b64token)."""
    parts = token.split(".")
    pieces = (token, (parts[1] if len(parts) == 3 else token)[:20])
    return any(len(piece) >= ECHO_PIECE and piece in answer for piece in pieces)


def expect_rejected(ctx: AuditContext, exchange: RecordedExchange, token: str, what: str) -> None:
    """401 with a Bearer challenge that says nothing useful about why."""
    if exchange.failure:
        ctx.fail(f"{what}: {exchange.failure}")
    ctx.expect(exchange.status == 401, f"{what} was not refused with 401 "
               f"({exchange.describe()})")
    challenge = exchange.response_headers.get("www-authenticate", "")
    ctx.expect(parse_challenge(challenge) is not None,
               f"{what}: the 401 has no Bearer challenge ({challenge!r})")
    ctx.expect(not echoes(token, exchange.text + challenge),
               f"{what}: the refusal echoes the token")


@check("audit.challenge", title="a request without a token gets a 401 Bearer challenge",
       requirement="“MCP servers MUST implement one of the following discovery mechanisms to "
                   "provide authorization server location information to MCP clients:” "
                   "“WWW-Authenticate Header: Include the resource metadata URL in the "
                   "WWW-Authenticate HTTP header under resource_metadata when returning 401 "
                   "Unauthorized responses” or “Well-Known URI: Serve metadata at a "
                   "well-known URI as specified in RFC9728.” (authorization-server-discovery); "
                   "“Invalid or expired tokens MUST receive a HTTP 401 response.” "
                   "(authorization); RFC 6750 §3.1: a request without credentials gets a "
                   "challenge without an error code.",
       level=Level.MUST, spec=spec(AUTH, "error-handling"), **COMMON,
       fix="Answer a request without a token with 401 and WWW-Authenticate: Bearer "
           "resource_metadata=\"<absolute PRM URL>\" (no error= when no token was sent), or "
           "serve the metadata at the RFC 9728 well-known URL.")
async def challenge(ctx: AuditContext) -> None:
    found = await discovery(ctx)
    first: RecordedExchange = found["first"]
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
       requirement="“MCP servers MUST implement the OAuth 2.0 Protected Resource Metadata "
                   "(RFC9728) specification to indicate the locations of authorization servers. "
                   "The Protected Resource Metadata document returned by the MCP server MUST "
                   "include the authorization_servers field containing at least one authorization "
                   "server.” (authorization-server-discovery)",
       level=Level.MUST, spec=spec(AUTH, "authorization-server-discovery"), **COMMON,
       fix="Serve RFC 9728 metadata as application/json whose resource is this endpoint's URL and "
           "whose authorization_servers names your issuer.")
async def prm(ctx: AuditContext) -> None:
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
       requirement="“MCP servers MUST validate access tokens before processing the request, "
                   "ensuring the access token is issued specifically for the MCP server, and take "
                   "all necessary steps to ensure no data is returned to unauthorized parties.” "
                   "(authorization/security-considerations)",
       level=Level.MUST, spec=spec(AUTH, "token-handling"), **COMMON,
       fix="Put authentication in front of every MCP method (discover, lists, calls, listen), "
           "answering 401 without a valid token.")
async def unauthenticated(ctx: AuditContext) -> None:
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


def _forged_check(name: str, title: str, requirement: str, fix: str,
                  anchor: str = "token-handling") -> Callable[[CheckFn], CheckFn]:
    return check(f"audit.token-{name}", title=title, requirement=requirement,
                 level=Level.MUST, spec=spec(AUTH, anchor), fix=fix, **COMMON)


@_forged_check("garbage", "a token that is not a JWT is refused",
               "“Invalid or expired tokens MUST receive a HTTP 401 response.” (authorization, "
               "Token Handling)",
               "Answer a token you cannot validate with 401 and a Bearer challenge "
               "(error=invalid_token), echoing nothing of it.")
async def token_garbage(ctx: AuditContext) -> None:
    token = "conformance." + secrets.token_urlsafe(24) + ".notajwt"
    exchange = await probe(ctx, token, "a garbage token")
    expect_rejected(ctx, exchange, token, "a garbage token")


@_forged_check("alg-none", "an unsigned (alg: none) token is refused",
               "“MCP servers, acting in their role as an OAuth 2.1 resource server, MUST validate "
               "access tokens” and “Invalid or expired tokens MUST receive a HTTP 401 response.” "
               "(authorization, Token Handling); RFC 8725 §3.1 forbids accepting alg none.",
               "Verify signatures with a fixed allow-list of algorithms (never 'none') and answer "
               "unsigned tokens with 401.")
async def token_alg_none(ctx: AuditContext) -> None:
    claims, kid = await forged_claims(ctx)
    token = tokens.alg_none(claims, kid)
    expect_rejected(ctx, await probe(ctx, token, "an alg:none token"), token,
                    "an alg:none token")


@_forged_check("key-confusion", "HS256 keyed with the server's public key is refused",
               "“MCP servers, acting in their role as an OAuth 2.1 resource server, MUST validate "
               "access tokens” and “Invalid or expired tokens MUST receive a HTTP 401 response.” "
               "(authorization, Token Handling); RFC 8725 §2.1: the algorithm comes from "
               "configuration, never from the token.",
               "Bind each key to its algorithm (RS256/ES256 keys never verify HS256) and answer "
               "such tokens with 401.")
async def token_key_confusion(ctx: AuditContext) -> None:
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
               "“MCP servers MUST only accept tokens that are valid for use with their own "
               "resources.” and “Invalid or expired tokens MUST receive a HTTP 401 response.” "
               "(authorization, Token Handling)",
               "Verify against your authorization server's keys only, whatever kid a token names; "
               "answer others with 401.")
async def token_self_signed(ctx: AuditContext) -> None:
    claims, kid = await forged_claims(ctx)
    token = tokens.self_signed(claims, kid=kid)
    expect_rejected(ctx, await probe(ctx, token, "a self-signed token"), token,
                    "a self-signed token")


@_forged_check("unknown-kid", "a token naming an unknown kid is refused promptly",
               "“Invalid or expired tokens MUST receive a HTTP 401 response.” (authorization, "
               "Token Handling); refusing within seconds keeps key refetches bounded.",
               "Answer an unknown kid with 401 after at most one rate-limited JWKS refresh.")
async def token_unknown_kid(ctx: AuditContext) -> None:
    claims, _ = await forged_claims(ctx)
    for _ in range(3):
        token = tokens.self_signed(claims, kid="conformance-" + secrets.token_hex(8))
        exchange = await probe(ctx, token, "a token with an unknown kid")
        expect_rejected(ctx, exchange, token, "a token with an unknown kid")
        ctx.expect(exchange.elapsed < 5, f"refusing an unknown kid took {exchange.elapsed:.1f} s")


@_forged_check("key-url", "keys are never fetched from URLs in the token",
               "“MCP servers MUST only accept tokens that are valid for use with their own "
               "resources.” (authorization, Token Handling); RFC 8725 §3.10: never fetch keys from "
               "URLs named in a token (jku, x5u).",
               "Ignore jku/x5u headers; verify with the keys of your configured issuer only.")
async def token_key_url(ctx: AuditContext) -> None:
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


#: What an Authorization header can carry: RFC 6750 §2.1 b64token.
B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


async def _provided(ctx: AuditContext, key: str, resource: str | None = None) -> str | None:
    """A token from the audit settings, or fetched by client credentials. A setting that
    cannot be a bearer token is left out with a note saying why (never sent: it cannot
    be put in an Authorization header as given)."""
    given = ctx.options.audit.get(key)
    if given is not None and given != "":
        if isinstance(given, str) and B64TOKEN.fullmatch(given):
            return given
        what = "is not a string" if not isinstance(given, str) else (
            "is not a bearer token (RFC 6750 §2.1: letters, digits and -._~+/ with "
            "trailing =)")
        ctx.note(f"{key} in the audit settings {what}: not sent")
        return None
    oauth = ctx.options.audit.get("oauth")
    if resource and isinstance(oauth, dict):
        from mcpcore.conformance.credentials import CredentialsError, client_credentials

        try:
            return await client_credentials({**oauth, "resource": resource}, resource=resource)
        except (CredentialsError, OSError) as exc:
            ctx.note(f"the AS would not issue a token for {resource}: {exc}")
    return None


@_forged_check("expired", "an expired token is refused",
               "“Invalid or expired tokens MUST receive a HTTP 401 response.” (authorization, "
               "Token Handling)",
               "Check exp (with little leeway) and answer expired tokens with 401.")
async def token_expired(ctx: AuditContext) -> None:
    token = await _provided(ctx, "expired_token")
    if token is None:
        ctx.skip("needs expired_token in the audit settings (a token the AS signed that has "
                 "expired)" + "".join(f"; {n}" for n in ctx.notes))
    expect_rejected(ctx, await probe(ctx, token, "an expired token"), token, "an expired token")


@_forged_check("wrong-audience", "a token for another resource is refused",
               "“MCP servers MUST validate that access tokens were issued specifically for them as "
               "the intended audience, according to RFC 8707 Section 2.” (authorization, Token "
               "Handling)",
               "Require your resource URL in the token's aud and answer other audiences with 401.")
async def token_wrong_audience(ctx: AuditContext) -> None:
    token = await _provided(ctx, "wrong_audience_token",
                            resource="https://conformance-other-resource.example/mcp")
    if token is None:
        ctx.skip("needs wrong_audience_token in the audit settings, or an --oauth config "
                 "whose AS issues tokens for other resources" + "".join(
                     f"; {n}" for n in ctx.notes))
    expect_rejected(ctx, await probe(ctx, token, "a token for another audience"), token,
                    "a token for another audience")


@check("audit.token-foreign-issuer", title="a token from another authorization server is refused",
       requirement="“MCP servers MUST only accept tokens that are valid for use with their own "
                   "resources.” and “Invalid or expired tokens MUST receive a HTTP 401 "
                   "response.” (basic/authorization, Token Handling): a token whose iss is "
                   "an authorization server this one does not list, signed by that server's "
                   "own key, is refused; so is foreign_issuer_token from the settings.",
       level=Level.MUST, spec=spec(AUTH, "token-handling"), **COMMON,
       fix="Accept only the issuers your Protected Resource Metadata lists, with keys from "
           "their pinned JWKS; never discover keys from the iss of an incoming token.")
async def token_foreign_issuer(ctx: AuditContext) -> None:
    # Minted here: a loopback "authorization server" publishes metadata and a JWKS, and
    # signs a token for this resource with everything right except who issued it. A
    # server that finds keys through the token's own iss accepts it.
    claims, _ = await forged_claims(ctx)
    kid = "conformance-foreign-" + secrets.token_hex(4)
    async with Recorder(jwks=tokens.auditor_jwks(kid)) as foreign:
        metadata = {"issuer": foreign.url, "jwks_uri": f"{foreign.url}/jwks.json",
                    "token_endpoint": f"{foreign.url}/token",
                    "response_types_supported": ["code"]}
        foreign.documents.update({
            "/.well-known/oauth-authorization-server": metadata,
            "/.well-known/openid-configuration": metadata})
        token = tokens.self_signed({**claims, "iss": foreign.url}, kid=kid)
        expect_rejected(ctx, await probe(ctx, token, "a token issued by another AS"), token,
                        f"a token whose iss is {foreign.url} (signed by that AS's key)")
        fetched = list(foreign.requests)
    if fetched:
        ctx.note(f"the server fetched {len(fetched)} document(s) from the token's issuer "
                 f"({fetched[0].method} {fetched[0].path}) before refusing it")
    given = await _provided(ctx, "foreign_issuer_token")
    if given is not None:
        expect_rejected(ctx, await probe(ctx, given, "foreign_issuer_token"), given,
                        "foreign_issuer_token (issued by another AS)")
    elif "foreign_issuer_token" not in ctx.options.audit:
        ctx.note("no foreign_issuer_token in the audit settings: only the minted token was "
                 "tried")


@check("audit.token-in-query", title="tokens in the query string are not accepted",
       requirement="“Access tokens MUST NOT be included in the URI query string” (authorization, "
                   "Token Requirements); a server that honours one invites clients to leak it.",
       level=Level.MUST, spec=spec(AUTH, "token-requirements"), **{**COMMON,
                                                                    "needs": ["http", "auth"]},
       fix="Read tokens from the Authorization header only; answer a request with ?access_token= "
           "and no header as unauthenticated.")
async def token_in_query(ctx: AuditContext) -> None:
    token = ctx.target.bearer or ""
    exchange = await probe(ctx, None, "the token in ?access_token=",
                           url_suffix=f"?access_token={token}")
    ctx.expect(exchange.result is None and exchange.status is not None
               and 400 <= exchange.status < 500,
               f"a token in the query was honoured ({exchange.describe()})")


@check("audit.passthrough", title="the caller's token never reaches an upstream",
       requirement="“MCP servers MUST NOT accept or transit any other tokens.” (authorization, "
                   "Token Handling); “The MCP server MUST NOT pass through the token it received "
                   "from the MCP client.” (authorization/security-considerations)",
       level=Level.MUST, spec=spec(AUTH, "token-handling"), **{**COMMON,
                                                                "needs": ["http", "auth"]},
       fix="Call upstream APIs with your own credentials (or a token exchanged for that audience), "
           "never the client's token.")
async def passthrough(ctx: AuditContext) -> None:
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
