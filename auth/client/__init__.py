"""The client room: the OAuth client of an MCP client, as step generators run on httpx.

Discovery (RFC 9728, RFC 8414), registration (client ID metadata documents, RFC 7591),
the grants (authorization code with PKCE, client credentials, JWT bearer, the enterprise
ID-JAG), the credential store and the user agents. It builds on the shared modules of
``mcpcore.auth`` only: it never imports ``mcpcore.auth.issuer``, nor authlib, starlette
or joserfc (tests/auth/test_rooms.py). The public names are ``mcpcore.auth``'s.
"""
