"""The gateways ``bench_gateway.py`` and ``count_instructions.py --gateway`` measure, each
served in a process of its own the way ``mcpcore gateway serve`` serves one
(``mcpcore.serving.run``: uvicorn, one worker, uvloop and httptools).

    python bench/gateway_apps.py KIND ERA UPSTREAM_URL PORT [--issuer URL] [--audit FILE]

One upstream (``quick``), prefixing off, so the tool keeps its name ``echo``:

- ``bare``: nothing else (no auth, no credential, no policy, no metrics);
- ``full``: what an operator turns on: inbound JWT auth (``BearerAuthMiddleware``
  trusting ``--issuer``'s keys, the verified-token cache on), a ``token_exchange``
  credential for the upstream at the same issuer (cached per principal), a 50-rule
  policy (``POLICY``, the mix of ``bench_policy.py``, with ``upstreams`` rules), one
  audit event per call as a JSON line in ``--audit`` (``mcpcore.logs``' audit handler),
  and the Prometheus metrics of the server and the upstream (``GET /metrics``).

``ERA``: the upstream's era as the gateway's config pins it (``2026-07-28`` or
``legacy``: one 2025 session shared by every call, or one per caller with a credential
that acts as the caller).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _path in (str(ROOT), str(BENCH_DIR)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

#: The gateway's own resource (its callers' tokens' audience) and the upstream's.
GATEWAY_RESOURCE = "http://127.0.0.1/gateway/mcp"
UPSTREAM_RESOURCE = "http://127.0.0.1/quick/mcp"
#: The gateway's client at the issuer (token exchange), and where its secret is read.
CLIENT_ID = "gateway"
CLIENT_SECRET = "bench-gateway-secret"
SECRET_ENV = "BENCH_GATEWAY_SECRET"
KINDS = ("bare", "full")
ERAS = ("2026-07-28", "legacy")


def policy_toml() -> str:
    """50 rules: ``bench_policy.rules_toml``'s mix (per-tool denies, argument
    predicates, groups, tenants, a time window, confirmations, category allows), its
    tenant allow-list left out (the bench's caller has no tenant), four of its
    per-tool denies made per-upstream rules. ``echo`` (``readOnlyHint``) is allowed by
    the ``reads`` rule, near the end: the decision walks the list."""
    import bench_policy

    text = bench_policy.rules_toml().replace(
        'allowed_tenants = ["t0", "t1", "t2", "t3", "t4"]\n', "")
    for i in range(4):
        text = text.replace(f'tools = ["retired_{i}"]',
                            f'tools = ["retired_{i}"]\nupstreams = ["other{i}"]')
    # The credential acts as the caller: under a policy a tool obtains only the tokens
    # its settings declare (docs/policy.md, "Downstream gating").
    return text + f'\n[tools.echo]\ndownstream = [{{ audience = "{UPSTREAM_RESOURCE}" }}]\n'


def rule_count(text: str) -> int:
    return text.count("[[rules]]")


def gateway_config(kind: str, era: str, upstream: str, issuer: str | None,
                   work: Path) -> object:
    from mcpcore.gateway.config import Credentials, GatewayConfig, SecretRef, UpstreamConfig

    if kind == "bare":
        return GatewayConfig(upstreams=(UpstreamConfig("quick", url=upstream, era=era),),
                             prefixing=False)  # type: ignore[arg-type]
    if issuer is None:
        raise SystemExit("the full gateway needs --issuer")
    policy = work / "policy.toml"
    policy.write_text(policy_toml())
    credentials = Credentials(kind="token_exchange", token_endpoint=issuer + "/token",
                              client_id=CLIENT_ID, client_secret=SecretRef(env=SECRET_ENV),
                              resource=UPSTREAM_RESOURCE)
    return GatewayConfig(upstreams=(UpstreamConfig("quick", url=upstream, era=era,  # type: ignore[arg-type]
                                                   credentials=credentials),),
                         prefixing=False, policy=str(policy), metrics=True)


def serve(kind: str, era: str, upstream: str, port: int, issuer: str | None,
          audit: str | None) -> None:
    from mcpcore.auth import IssuerConfig, NetworkPolicy, ResourceServerConfig
    from mcpcore.gateway.app import Gateway
    from mcpcore.gateway.serve import build, observe
    from mcpcore.logs import configure_logging
    from mcpcore.serving import run
    from mcpcore.transports.http import LOCAL_HOSTS

    with tempfile.TemporaryDirectory(prefix="mcpcore-bench-gateway-") as tmp:
        config = gateway_config(kind, era, upstream, issuer, Path(tmp))
        environ = {**os.environ, SECRET_ENV: CLIENT_SECRET}
        gateway = Gateway(config, environ=environ)  # type: ignore[arg-type]
        auth = None
        metrics = None
        if kind == "full":
            assert issuer is not None
            # The audit trail on its own handler (a JSON line per call); the rest of
            # the log at warning, as the bench serves everything.
            configure_logging(level="WARNING", audit=audit or os.devnull)
            auth = ResourceServerConfig(
                resource=GATEWAY_RESOURCE,
                authorization_servers=(IssuerConfig(issuer, jwks_uri=issuer + "/jwks"),),
                network=NetworkPolicy(allow_loopback=True))
            metrics = observe(gateway)
        run(build(gateway, allowed_hosts=LOCAL_HOSTS, auth=auth, metrics=metrics),
            port=port, name=f"gateway-{kind}-{era}", path="/mcp")


def authorization_server(url: str) -> object:
    """The issuer the full gateway trusts and exchanges tokens at (run by the bench)."""
    from mcpcore.auth import NetworkPolicy
    from mcpcore.auth.issuer.authorization_server import (
        LocalAuthorizationServer,
        RegisteredClient,
    )

    return LocalAuthorizationServer(
        url, clients=[RegisteredClient(CLIENT_ID, secret=CLIENT_SECRET)],
        resources=[GATEWAY_RESOURCE, UPSTREAM_RESOURCE],
        exchangeable_audiences=[GATEWAY_RESOURCE], scopes_supported=["mcp", "mcp:read"],
        network=NetworkPolicy(allow_loopback=True), token_ttl=24 * 3600)


def caller_token(server: object) -> str:
    """A caller's bearer token for the full gateway (a day long: no refresh mid-run)."""
    return server.mint(sub="bench-user", aud=GATEWAY_RESOURCE, scope="mcp mcp:read")  # type: ignore[attr-defined, no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("era", choices=ERAS)
    parser.add_argument("upstream")
    parser.add_argument("port", type=int)
    parser.add_argument("--issuer")
    parser.add_argument("--audit")
    parser.add_argument("--profile", metavar="FILE",
                        help="cProfile between SIGUSR1 (start) and SIGUSR2 (stop: the "
                             "stats are written to FILE)")
    args = parser.parse_args()
    if args.profile:
        import cProfile
        import signal
        import time

        profiler = cProfile.Profile(time.process_time)

        def stop(*_: object) -> None:
            profiler.disable()
            profiler.dump_stats(args.profile)

        signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
        signal.signal(signal.SIGUSR2, stop)
    serve(args.kind, args.era, args.upstream, args.port, args.issuer, args.audit)


if __name__ == "__main__":
    main()
