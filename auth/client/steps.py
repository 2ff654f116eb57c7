"""The sans-I/O vocabulary of the OAuth client: flows are generators of steps.

Every OAuth client step (discovery, registration, the authorization request, token
requests, refresh, step-up) is a generator, like httpx's ``Auth.auth_flow``: it *yields*
what it needs done and receives the result, and it *returns* its value::

    def flow() -> AuthFlow[dict]:
        response = yield Fetch(httpx.Request("GET", url), what="resource metadata")
        return response.json()

Two kinds of step exist:

* ``Fetch``: send this ``httpx.Request`` exactly as given (no redirects, no cookies, no
  proxies from the environment), read at most a bounded body, send the
  ``httpx.Response`` back;
* ``OpenAuthorization``: hand this authorization URL to the user-agent handler and send
  back the redirect URL the user agent came back with.

Nothing here does I/O: tests feed canned responses in (``run_flow``), and
``mcpcore.auth.client.oauth.OAuth`` drives the same generators over the network. URL-safety is
checked where each URL is yielded (``fetch``), so no driver can forget it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urljoin

import httpx
import msgspec

from mcpcore.auth.errors import OAuthClientError, UnsafeUrl
from mcpcore.auth.urls import NetworkPolicy, check_url

T = TypeVar("T")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Most redirects one OAuth GET may follow (each hop URL-checked again).
MAX_REDIRECTS = 3


class UserAgent(Protocol):
    """Takes the user through an authorization URL; returns the redirect URL it reached.

    ``http`` is the driver's guarded HTTP client (the headless handler uses it; a browser
    handler does not need it).
    """

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, url: str, *, http: httpx.AsyncClient) -> str: ...


@dataclass(frozen=True, slots=True)
class Fetch:
    """Send ``request``; the answer is an ``httpx.Response`` whose body is read."""

    request: httpx.Request
    #: What this request is for, in words (for error messages and logs).
    what: str


@dataclass(frozen=True, slots=True)
class OpenAuthorization:
    """Open ``url`` in the user agent; the answer is the redirect URL (a string)."""

    url: str
    user_agent: UserAgent


Step = Fetch | OpenAuthorization
AuthFlow = Generator[Step, Any, T]


def fetch(request: httpx.Request, network: NetworkPolicy, *, what: str) -> AuthFlow[httpx.Response]:
    """Yield ``request`` after the URL checks; follow at most ``MAX_REDIRECTS`` redirects
    of a GET (each hop checked again). Other methods never follow redirects."""
    for _ in range(MAX_REDIRECTS + 1):
        try:
            check_url(str(request.url), network)
        except UnsafeUrl as exc:
            raise OAuthClientError(f"{what}: refused to fetch {request.url}: {exc}") from None
        response: httpx.Response = yield Fetch(request, what)
        location = response.headers.get("location")
        if request.method != "GET" or response.status_code not in _REDIRECTS or not location:
            return response
        request = httpx.Request("GET", urljoin(str(request.url), location),
                                headers={"accept": request.headers.get("accept", "*/*")})
    raise OAuthClientError(f"{what}: more than {MAX_REDIRECTS} redirects")


def json_object(response: httpx.Response) -> dict[str, Any] | None:
    """The body as a JSON object, or None (not JSON, or not an object)."""
    try:
        value = msgspec.json.decode(response.content)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def run_flow(flow: AuthFlow[T], answer: Callable[[Step], Any]) -> T:
    """Drive ``flow`` synchronously, answering each step with ``answer(step)``.

    For tests and tools: ``answer`` returns canned ``httpx.Response``s and redirect URLs.
    """
    reply: Any = None
    while True:
        try:
            step = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        reply = answer(step)


__all__ = [
    "MAX_REDIRECTS",
    "AuthFlow",
    "Fetch",
    "OpenAuthorization",
    "Step",
    "UserAgent",
    "fetch",
    "json_object",
    "run_flow",
]
