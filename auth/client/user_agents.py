"""User-agent handlers: how the user gets through the authorization URL and back.

Both implement ``mcpcore.auth.client.steps.UserAgent``: a ``redirect_uri`` to register and
send, and ``authorize(url, http=...)`` returning the URL the authorization server
redirected back to. Neither validates the response: that is ``auth/client/code_flow.py``'s job,
done before the code is redeemed.

* ``HeadlessUserAgent``, for tests, automation and the conformance suite: it GETs the
  authorization URL itself without following redirects and reads ``Location``. It
  follows at most a few redirects while they stay on the authorization server's
  origin, and never contacts the ``redirect_uri`` (no listener is started, so parallel
  runs never collide on a port). It only works with servers that approve without a
  human (a test server, or a server that already knows the user).
* ``LoopbackBrowser``, for CLIs and desktop apps (RFC 8252 §7.3): a one-shot listener on
  127.0.0.1 and an ephemeral port, and the authorization URL opened with ``webbrowser``
  (never through a shell). Only ``http``/``https`` URLs are opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import webbrowser
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

import httpx

from mcpcore.auth.errors import AuthorizationRejected, UnsafeUrl
from mcpcore.auth.urls import NetworkPolicy, check_url

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port


def _is_redirect_uri(url: str, redirect_uri: str) -> bool:
    a, b = urlsplit(url), urlsplit(redirect_uri)
    return _origin(url) == _origin(redirect_uri) and a.path == b.path


def check_browser_url(url: str) -> str:
    """Only ``http``/``https`` URLs with a host go to a browser (never ``javascript:``,
    ``data:``, ``file:``)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise AuthorizationRejected(f"refusing to open a {parts.scheme or 'relative'} URL")
    return url


class HeadlessUserAgent:
    """Follows the authorization URL over HTTP and returns the redirect it leads to.

    >>> agent = HeadlessUserAgent()
    >>> agent.redirect_uri
    'http://127.0.0.1/callback'
    """

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1/callback",
        *,
        network: NetworkPolicy | None = None,
        max_hops: int = 5,
    ) -> None:
        self._redirect_uri = redirect_uri
        self._network = network
        self._max_hops = max_hops

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str, *, http: httpx.AsyncClient) -> str:
        check_browser_url(url)
        home = _origin(url)
        for _ in range(self._max_hops):
            if self._network is not None:
                try:
                    check_url(url, self._network)
                except UnsafeUrl as exc:
                    raise AuthorizationRejected(f"authorization URL refused: {exc}") from None
            response = await http.get(url, headers={"accept": "text/html,application/json"})
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                raise AuthorizationRejected(
                    f"the authorization endpoint answered {response.status_code} without a "
                    "redirect (it needs a person: use a browser user agent)"
                )
            target = str(urljoin(url, location))
            if _is_redirect_uri(target, self._redirect_uri):
                return target
            if _origin(target) != home:
                raise AuthorizationRejected("the authorization server redirected elsewhere")
            url = target
        raise AuthorizationRejected("too many redirects at the authorization server")


_PAGE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n"
    b"cache-control: no-store\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
)
_DONE = b"<!doctype html><title>Signed in</title><p>You can close this window now.</p>"
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class LoopbackBrowser:
    """Opens the system browser and waits for the redirect on 127.0.0.1.

    The port is chosen (bound) when ``redirect_uri`` is first read, and held until
    ``close()``; ``open_url`` defaults to ``webbrowser.open`` (pass ``print`` to show the
    URL instead).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        open_url: Callable[[str], object] = webbrowser.open,
        timeout: float = 300.0,
    ) -> None:
        self._port = port
        self._path = path
        self._open_url = open_url
        self._timeout = timeout
        self._sock: socket.socket | None = None

    @property
    def redirect_uri(self) -> str:
        if self._sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", self._port))
            sock.listen(8)
            sock.setblocking(False)
            self._sock = sock
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}{self._path}"

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def authorize(self, url: str, *, http: httpx.AsyncClient) -> str:
        check_browser_url(url)
        redirect_uri = self.redirect_uri
        arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
                if method == "GET" and urlsplit(target).path == self._path:
                    writer.write(_PAGE % (len(_DONE), _DONE))
                    if not arrived.done():
                        arrived.set_result(urljoin(redirect_uri, target))
                else:
                    writer.write(_NOT_FOUND)
                await writer.drain()
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                    ValueError, ConnectionError):
                pass
            finally:
                writer.close()

        assert self._sock is not None
        # A duplicate descriptor: closing the server leaves our socket (and port) bound, so
        # a later step-up reuses the redirect_uri that was registered.
        server = await asyncio.start_server(serve, sock=self._sock.dup(), limit=16 * 1024)
        try:
            self._open_url(url)
            return str(await asyncio.wait_for(arrived, self._timeout))
        except TimeoutError:
            raise AuthorizationRejected("no authorization redirect arrived in time") from None
        finally:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()


__all__ = ["HeadlessUserAgent", "LoopbackBrowser", "check_browser_url"]
