"""One command for the whole EMA example (see ``examples/enterprise_auth/__init__.py``).

    python -m examples.enterprise_auth
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from collections.abc import Sequence
from typing import Any

from examples.enterprise_auth import (
    AS_CLIENT_ID,
    IDP_CLIENT_ID,
    LOOPBACK,
    USER,
    make_authorization_server,
    make_idp,
    make_mcp_server,
    new_secret,
)
from examples.oauth_end_to_end import serve
from mcpcore import MemoryAuditSink, types
from mcpcore.auth import ClientInfo, EnterpriseGrant, OAuth, fingerprint, install_redaction
from mcpcore.client import Client


def text_of(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def url_of(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def run() -> None:
    idp_sock, as_sock, mcp_sock = listening_socket(), listening_socket(), listening_socket()
    idp_secret, as_secret = new_secret(), new_secret()
    resource = url_of(mcp_sock) + "/mcp"
    idp = make_idp(url_of(idp_sock), as_issuer=url_of(as_sock), resource=resource,
                   idp_secret=idp_secret)
    authorization_server = make_authorization_server(
        url_of(as_sock), idp=idp, resource=resource, as_secret=as_secret)
    audit = MemoryAuditSink()
    mcp_app, config = make_mcp_server(url_of(mcp_sock),
                                      authorization_server=authorization_server, audit=audit)
    async with serve(idp, idp_sock), serve(authorization_server, as_sock), serve(
            mcp_app, mcp_sock):
        print(f"IdP {idp.issuer}, authorization server {authorization_server.issuer}, "
              f"MCP server {config.resource}")
        # Single sign-on is out of this demo's scope: the IdP hands over alice's ID token.
        id_token = idp.id_token(USER, client_id=IDP_CLIENT_ID)
        grant = EnterpriseGrant(
            idp_issuer=idp.issuer,
            idp_token_endpoint=idp.token_endpoint,
            idp_client=ClientInfo(IDP_CLIENT_ID, client_secret=idp_secret),
            id_token=lambda: id_token,
            client=ClientInfo(AS_CLIENT_ID, client_secret=as_secret),
        )
        auth = OAuth(grant, network=LOOPBACK)
        asked: list[str] = []

        def approve(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(str(params.get("message", "")))
            print(f"[person] asked: {asked[-1]!r} -> approve")
            return {"action": "accept", "content": {"confirm": True}}

        async with Client.http(config.resource, auth=auth, on_elicit=approve,
                               timeout=15) as client:
            tools = sorted([tool.name async for tool in client.iter_tools()])
            print(f"[client] tools/list: {tools}")
            read = await client.call_tool("read_document", {"name": "handbook"})
            token = auth.session(config.resource).token
            assert token is not None and token.scopes == {"mcp:read"}, token
            print(f"[client] read_document: {text_of(read)!r} with token "
                  f"{fingerprint(token.access_token)} ({' '.join(sorted(token.scopes))})")
            deleted = await client.call_tool("delete_document", {"name": "draft"})
            token = auth.session(config.resource).token
            assert token is not None and token.scopes == {"mcp:read", "mcp:admin"}, token
            assert not deleted.is_error and len(asked) == 1, deleted
            print(f"[client] delete_document: {text_of(deleted)!r} after step-up to "
                  f"{' '.join(sorted(token.scopes))} and one confirmation")
            purged = await client.call_tool("purge_documents", {})
            assert purged.is_error, purged
            print(f"[client] purge_documents refused: {text_of(purged)!r}")
    exchanges = [r for r in idp.requests if r.path == "/token"]
    assert len(exchanges) == 2, "one ID-JAG for mcp:read, one for the step-up"
    for event in audit.events:
        print(f"[audit] {event.tool}: {event.decision} by rule {event.rule_id} for "
              f"{event.subject} ({event.auth_kind}, tenant {event.tenant})")
    assert {e.auth_kind for e in audit.events} == {"ema"}


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    install_redaction()
    asyncio.run(run())
    print("enterprise-managed authorization: all steps passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
