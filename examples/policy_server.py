"""A notes server gated by a policy: categories, scopes, rules, confirmation and audit.

Run it (nothing external needed: a test authorization server is mounted under ``/as``)::

    MCPCORE_STATE_KEYS=$(.venv/bin/mcpcore new-key) \\
        python -m examples.policy_server --port 8000 --print-tokens

``--print-tokens`` mints a few ready-made tokens (local testing only) for personas:

* ``reader``  tenant ``contoso``, ``mcp:read``: may search; writing gets a 403 step-up;
* ``editor``  tenant ``contoso``, ``mcp:write``: may also add notes and set statuses;
* ``admin``   tenant ``contoso``, ``mcp:admin``: deleting asks for confirmation (MRTR);
* ``outsider`` tenant ``fabrikam``: every call is a denial (tenant pinning);
* ``job``     the demo client acting for itself (``sub == client_id``), ``mcp:admin``: it
  cannot confirm, so ``delete_note`` is denied, but ``nightly_cleanup`` may run
  unattended because its rule says ``autonomous=True``.

The rules live in ``examples/policy.toml`` (``MCPCORE_POLICY_FILE`` names another file;
a bad one stops the server before it listens). Every ``tools/call`` writes one JSON
audit line on the ``mcpcore.audit`` logger (to stderr here). The module-level ``app``
is built on first use from ``MCPCORE_PUBLIC_URL`` (default ``http://127.0.0.1:8000``),
so ``uvicorn examples.policy_server:app`` works too.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

from mcpcore import MrtrConfig, Policy, Ruleset, Server, StreamableHTTP
from mcpcore.asgi_types import ASGIApp, Receive, Scope, Send
from mcpcore.auth import (
    BearerAuthMiddleware,
    IssuerConfig,
    NetworkPolicy,
    ResourceServerConfig,
    install_redaction,
)
from mcpcore.auth.issuer import LocalAuthorizationServer, RegisteredClient, SigningKey
from mcpcore.cli import serve
from mcpcore.policy import DEFAULT_SCOPE_HIERARCHY, LoggingAuditSink, RuleFileError, load
from mcpcore.stores.memory import MemoryStore
from mcpcore.tools import ToolError

DEMO_CLIENT = "demo-client"
TENANT = "contoso"

def _rules() -> Ruleset:
    """The reviewed rule file (``MCPCORE_POLICY_FILE``, else ``examples/policy.toml``).

    A bad file stops the server before it listens, with every problem and its line.
    """
    path = os.environ.get("MCPCORE_POLICY_FILE") or Path(__file__).with_name("policy.toml")
    try:
        return load(path)
    except RuleFileError as exc:
        sys.exit(f"policy_server: refusing to start with a bad rule file\n{exc}")


RULES = _rules()

policy = Policy(RULES, sinks=[LoggingAuditSink()], filter_tools_list=True)
server = Server(
    "policy-demo", "1.0.0",
    instructions="Notes behind a policy: reads, writes, and deletes that need approval.",
    mrtr=MrtrConfig.from_env(single_use=True, store=MemoryStore()),
    policy=policy,
)

_notes: dict[str, str] = {"welcome": "Hello from the policy demo.", "todo": "Write docs."}
_status: dict[str, str] = {}


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def search_notes(query: str) -> list[str]:
    """Names of the notes whose text contains ``query``."""
    return [name for name, body in _notes.items() if query.lower() in body.lower()] or [
        "no matches"]


@server.tool(annotations={"readOnlyHint": True})
def weather(city: str) -> str:
    """Today's weather (canned; annotated open-world, so it carries the EXTERNAL flag)."""
    return f"{city}: 21°C, light wind"


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "openWorldHint": False})
def add_note(name: str, text: str) -> str:
    """Add a note (additive write)."""
    if name in _notes:
        raise ToolError(f"a note named {name!r} exists")
    _notes[name] = text
    return f"added {name}"


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "idempotentHint": True, "openWorldHint": False})
def set_status(status: str) -> str:
    """Set the board status (idempotent write)."""
    _status["board"] = status
    return f"status is {status}"


@server.tool(annotations={"destructiveHint": True, "openWorldHint": False})
def delete_note(name: str) -> str:
    """Delete a note (destructive: a person confirms first)."""
    if _notes.pop(name, None) is None:
        raise ToolError(f"no note named {name!r}")
    return f"deleted {name}"


@server.tool(annotations={"destructiveHint": True, "openWorldHint": False})
def nightly_cleanup() -> str:
    """Drop empty notes (destructive; the demo job may run it unattended)."""
    empty = [name for name, body in _notes.items() if not body.strip()]
    for name in empty:
        del _notes[name]
    return f"removed {len(empty)} empty notes"


@server.tool(category="destructive", external=False)
def purge_all() -> str:
    """Delete everything (a deny rule keeps it off for everyone)."""
    _notes.clear()
    return "purged"


def build_app(
    public_url: str = "http://127.0.0.1:8000", *, client_secret: str | None = None
) -> tuple[ASGIApp, LocalAuthorizationServer, ResourceServerConfig]:
    """Return (ASGI app, the local AS, the resource-server config) for ``public_url``."""
    resource = public_url.rstrip("/") + "/mcp"
    issuer = public_url.rstrip("/") + "/as"
    authorization_server = LocalAuthorizationServer(
        issuer,
        keys=[SigningKey.generate("ES256")],
        clients=[RegisteredClient(DEMO_CLIENT, secret=client_secret or secrets.token_urlsafe(24))],
    )
    config = ResourceServerConfig(
        resource=resource,
        resource_name="mcpcore policy demo",
        authorization_servers=(IssuerConfig(issuer, jwks_uri=authorization_server.jwks_uri),),
        # Authentication only; which scope each tool needs is the policy's business.
        scope_hierarchy=DEFAULT_SCOPE_HIERARCHY,
        scopes_supported=("mcp:read", "mcp:write", "mcp:admin"),
        network=NetworkPolicy(allow_loopback=True),  # the AS is on loopback http
    )
    # The 403 step-up challenge names the same metadata document as the 401s.
    policy.resource_metadata = config.metadata_url
    protected = BearerAuthMiddleware(StreamableHTTP(server), config=config)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (
            path.startswith("/as/") or path == authorization_server.metadata_path
        ):
            await authorization_server(scope, receive, send)
            return
        await protected(scope, receive, send)

    return app, authorization_server, config


def persona_tokens(authorization_server: LocalAuthorizationServer, resource: str
                   ) -> dict[str, str]:
    """Test tokens for the personas in the module docstring (local testing only)."""
    def mint(sub: str, scope: str, tenant: str, **extra: str) -> str:
        token: str = authorization_server.mint(sub=sub, aud=resource, scope=scope, tid=tenant,
                                               ttl=3600, **extra)
        return token

    return {
        "reader": mint("rita", "mcp:read", TENANT, client_id="notes-app"),
        "editor": mint("eddie", "mcp:write", TENANT, client_id="notes-app"),
        "admin": mint("ada", "mcp:admin", TENANT, client_id="notes-app"),
        "outsider": mint("olga", "mcp:admin", "fabrikam", client_id="notes-app"),
        "job": mint(DEMO_CLIENT, "mcp:admin", TENANT, client_id=DEMO_CLIENT),
    }


class _LazyApp:
    """Builds the app on first use, so importing this module needs nothing else."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            url = os.environ.get("MCPCORE_PUBLIC_URL", "http://127.0.0.1:8000")
            self._app = build_app(url)[0]
        await self._app(scope, receive, send)


app = _LazyApp()


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--host", default="127.0.0.1")
    pre.add_argument("--port", type=int, default=8000)
    pre.add_argument("--print-tokens", action="store_true")
    known, _ = pre.parse_known_args(args)
    if known.print_tokens:
        args.remove("--print-tokens")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    logging.getLogger("mcpcore.audit").setLevel(logging.INFO)
    install_redaction()
    if "--stdio" not in args:
        public_url = f"http://{known.host}:{known.port}"
        asgi, authorization_server, config = build_app(public_url)
        print(f"MCP endpoint:       {config.resource}")
        print(f"resource metadata:  {config.metadata_url}")
        if known.print_tokens:
            for persona, token in persona_tokens(authorization_server,
                                                 config.resource).items():
                print(f"{persona + ' token:':<20}{token}")
        serve(server, asgi, args, description="Serve the policy demo.")
        return
    # Over stdio there is no token, so the anonymous caller has no tenant: all denied.
    serve(server, app, args, description="Serve the policy demo.")


if __name__ == "__main__":
    main()
