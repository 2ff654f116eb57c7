"""Test support, one module per concern (imported as ``tests.support.<module>``).

- ``wire``: what a conforming 2026-07-28 client sends (``_meta``, headers, constants);
- ``schema``: every server message checked against the official schema.json;
- ``sse``: the one ``text/event-stream`` parser;
- ``asgi``: the one ASGI exchange driver (``Exchange``) and an httpx transport on it;
- ``peers``: clients over each transport (direct, HTTP in-process, stdio subprocess);
- ``legacy``: a 2025-era session client;
- ``processes``: free ports, the ``redis-server`` launcher, the stdio subprocess,
  ``require_tool``;
- ``clock``: a manual clock for code that sleeps through an injectable ``sleep``.
"""
