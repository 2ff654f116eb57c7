"""Runnable examples. Each module defines an ASGI ``app``; ``python -m examples.NAME``
serves it over HTTP (``--host``/``--port``) or stdio (``--stdio``)."""
