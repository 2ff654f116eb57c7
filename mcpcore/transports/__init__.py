"""Transports: thin adapters between bytes and ``Server.handle``.

``http``: Streamable HTTP as an ASGI app. ``stdio``: newline-delimited JSON-RPC.
"""
