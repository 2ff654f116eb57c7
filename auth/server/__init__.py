"""The server room: what an MCP server runs to accept tokens.

Bearer validation (JWT and introspection), the protected resource metadata (RFC 9728),
the challenge on the way out, the inbound token of the current request, and the
downstream exchange a server makes on its user's behalf. It builds on the shared modules
of ``mcpcore.auth`` only: it never imports ``mcpcore.auth.client`` or
``mcpcore.auth.issuer``, nor starlette, authlib or joserfc (tests/auth/test_rooms.py).
The public names are ``mcpcore.auth``'s.
"""
