"""Per-request ``_meta``: what every modern request must say about itself.

Parses the reserved keys of a request's ``params._meta`` (basic/index.mdx, "_meta") into a
``RequestMeta``, rejecting malformed values with -32602 (HTTP 400, ``InvalidMeta``) and
keeping unknown keys available to handlers. Also builds the ``_meta`` of our results and
notifications. No I/O here.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from mcpcore.errors import InvalidMeta

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
PROGRESS_TOKEN: Final = "progressToken"
TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")
RESERVED_PREFIX: Final = "io.modelcontextprotocol/"

#: RFC 5424 severities as the spec orders them (logging.mdx).
LOG_LEVELS: Final = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)
LOG_LEVEL_RANK: Final = {name: rank for rank, name in enumerate(LOG_LEVELS)}


class RequestMeta(msgspec.Struct):
    """The parsed ``_meta`` of one request (a Struct: made once per request, cheaply)."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    progress_token: str | int | None = None
    trace: dict[str, str] = msgspec.field(default_factory=dict)
    #: The whole object as received, unknown keys included: handlers may read keys we
    #: do not know, which are ignored rather than rejected.
    raw: dict[str, Any] = msgspec.field(default_factory=dict)

    def has_capability(self, *path: str) -> bool:
        """``has_capability("elicitation", "url")``: is that (sub)capability declared?"""
        node: Any = self.client_capabilities
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return node is not None and node is not False


#: The keys of the usual ``_meta`` (version, capabilities, optionally clientInfo): with
#: nothing else in it, nothing else needs a look (``parse_request_meta``).
_PLAIN_KEYS: Final = frozenset({PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO})


def parse_request_meta(meta: Any) -> RequestMeta:
    """Validate the required keys; raise ``InvalidMeta`` naming what is wrong."""
    if type(meta) is dict and len(meta) <= 3 and _PLAIN_KEYS.issuperset(meta):
        # The common shape, checked in one pass: the same verdicts as below.
        version = meta.get(PROTOCOL_VERSION)
        caps = meta.get(CLIENT_CAPABILITIES)
        info = meta.get(CLIENT_INFO)
        if type(version) is str and type(caps) is dict and (info is None or (
                type(info) is dict and type(info.get("name")) is str
                and type(info.get("version")) is str)):
            return RequestMeta(version, caps, info, None, None, {}, meta)
    return _parse_request_meta(meta)


def _parse_request_meta(meta: Any) -> RequestMeta:
    if meta is None:
        raise InvalidMeta("Missing params._meta: every request must carry "
                          f"{PROTOCOL_VERSION} and {CLIENT_CAPABILITIES}")
    if not isinstance(meta, dict):
        raise InvalidMeta("params._meta must be an object")
    version = meta.get(PROTOCOL_VERSION)
    if version is None:
        raise InvalidMeta(f"Missing _meta[{PROTOCOL_VERSION!r}]")
    if not isinstance(version, str):
        raise InvalidMeta(f"_meta[{PROTOCOL_VERSION!r}] must be a string")
    caps = meta.get(CLIENT_CAPABILITIES)
    if caps is None:
        raise InvalidMeta(f"Missing _meta[{CLIENT_CAPABILITIES!r}]")
    if not isinstance(caps, dict):
        raise InvalidMeta(f"_meta[{CLIENT_CAPABILITIES!r}] must be an object")
    info = meta.get(CLIENT_INFO)
    if info is not None and not (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    ):
        raise InvalidMeta(f"_meta[{CLIENT_INFO!r}] must be an object with name and version")
    level = meta.get(LOG_LEVEL)
    if level is not None and level not in LOG_LEVEL_RANK:
        raise InvalidMeta(
            f"Invalid _meta[{LOG_LEVEL!r}]: expected one of {', '.join(LOG_LEVELS)}"
        )
    token = meta.get(PROGRESS_TOKEN)
    if token is not None and (isinstance(token, bool) or not isinstance(token, (str, int))):
        raise InvalidMeta("_meta.progressToken must be a string or an integer")
    trace: dict[str, str] = {}
    for key in TRACE_KEYS:
        value = meta.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise InvalidMeta(f"_meta.{key} must be a string (W3C Trace Context)")
            trace[key] = value
    return RequestMeta(
        protocol_version=version,
        client_capabilities=caps,
        client_info=info,
        log_level=level,
        progress_token=token,
        trace=trace,
        raw=meta,
    )


__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVELS",
    "LOG_LEVEL_RANK",
    "PROGRESS_TOKEN",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "RequestMeta",
    "parse_request_meta",
]
