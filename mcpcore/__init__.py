"""mcpcore: a stateless Model Context Protocol engine (revision 2026-07-28).

The public API, in one place::

    from mcpcore import Server, Context, StreamableHTTP

    server = Server("demo", "1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        '''Echo the text back.'''
        return text

    app = StreamableHTTP(server)          # ASGI: uvicorn module:app

Every name loads on first use (PEP 562): ``import mcpcore`` costs almost nothing,
``from mcpcore import Server`` loads the server engine and not the client, and
``from mcpcore.client import Client`` loads the client and not the server engine.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpcore.client import Client, ClientError, LocalProtocolError, RemoteProtocolError
    from mcpcore.context import Context
    from mcpcore.errors import (
        ErrorCode,
        HeaderMismatch,
        InsufficientScope,
        InternalError,
        InvalidCursor,
        InvalidInputResponses,
        InvalidMeta,
        InvalidParams,
        InvalidRequest,
        InvalidRequestState,
        McpError,
        MethodNotFound,
        MissingRequiredClientCapability,
        ResourceNotFound,
        ServiceUnavailable,
        UnknownPrompt,
        UnknownTool,
        UnsupportedProtocolVersion,
        UsageError,
    )
    from mcpcore.inputs import (
        ElicitAnswer,
        InputRequest,
        InputRequired,
        RootsAnswer,
        SamplingAnswer,
        elicitation,
        roots,
        sampling,
        url_elicitation,
    )
    from mcpcore.jsonrpc import Limits
    from mcpcore.mrtr import MrtrConfig
    from mcpcore.pagination import CacheHint
    from mcpcore.policy import (
        AuditEvent,
        Decision,
        LoggingAuditSink,
        MemoryAuditSink,
        Policy,
        RateLimit,
        Rule,
        Ruleset,
    )
    from mcpcore.principal import ANONYMOUS, PRINCIPAL_SCOPE_KEY, Principal
    from mcpcore.sealing import KeyRing, Sealer
    from mcpcore.server import Server
    from mcpcore.stores import MemoryStore, RedisStore, Store
    from mcpcore.tasks import TaskManager, UnknownTask
    from mcpcore.tools import ToolError
    from mcpcore.transports.admission import AdmissionLimits
    from mcpcore.transports.http import ANY_HOST, LOCAL_HOSTS, OriginGuard, StreamableHTTP
    from mcpcore.transports.legacy_http import LegacyShim
    from mcpcore.transports.stdio import run_stdio, serve_stdio
    from mcpcore.versions import MODERN

__version__ = "0.1.0"

#: Where each public name lives; ``__getattr__`` imports it from there on first use.
_HOMES: dict[str, str] = {
    "Client": "mcpcore.client",
    "ClientError": "mcpcore.client",
    "LocalProtocolError": "mcpcore.client",
    "RemoteProtocolError": "mcpcore.client",
    "Context": "mcpcore.context",
    "ErrorCode": "mcpcore.errors",
    "HeaderMismatch": "mcpcore.errors",
    "InsufficientScope": "mcpcore.errors",
    "InternalError": "mcpcore.errors",
    "InvalidCursor": "mcpcore.errors",
    "InvalidInputResponses": "mcpcore.errors",
    "InvalidMeta": "mcpcore.errors",
    "InvalidParams": "mcpcore.errors",
    "InvalidRequest": "mcpcore.errors",
    "InvalidRequestState": "mcpcore.errors",
    "McpError": "mcpcore.errors",
    "MethodNotFound": "mcpcore.errors",
    "MissingRequiredClientCapability": "mcpcore.errors",
    "ResourceNotFound": "mcpcore.errors",
    "ServiceUnavailable": "mcpcore.errors",
    "UnknownPrompt": "mcpcore.errors",
    "UnknownTool": "mcpcore.errors",
    "UnsupportedProtocolVersion": "mcpcore.errors",
    "UsageError": "mcpcore.errors",
    "Limits": "mcpcore.jsonrpc",
    "ElicitAnswer": "mcpcore.inputs",
    "InputRequest": "mcpcore.inputs",
    "InputRequired": "mcpcore.inputs",
    "MrtrConfig": "mcpcore.mrtr",
    "RootsAnswer": "mcpcore.inputs",
    "SamplingAnswer": "mcpcore.inputs",
    "elicitation": "mcpcore.inputs",
    "roots": "mcpcore.inputs",
    "sampling": "mcpcore.inputs",
    "url_elicitation": "mcpcore.inputs",
    "CacheHint": "mcpcore.pagination",
    "AuditEvent": "mcpcore.policy",
    "Decision": "mcpcore.policy",
    "LoggingAuditSink": "mcpcore.policy",
    "MemoryAuditSink": "mcpcore.policy",
    "Policy": "mcpcore.policy",
    "RateLimit": "mcpcore.policy",
    "Rule": "mcpcore.policy",
    "Ruleset": "mcpcore.policy",
    "ANONYMOUS": "mcpcore.principal",
    "PRINCIPAL_SCOPE_KEY": "mcpcore.principal",
    "Principal": "mcpcore.principal",
    "KeyRing": "mcpcore.sealing",
    "Sealer": "mcpcore.sealing",
    "Server": "mcpcore.server",
    "MemoryStore": "mcpcore.stores",
    "RedisStore": "mcpcore.stores",
    "Store": "mcpcore.stores",
    "TaskManager": "mcpcore.tasks.manager",
    "UnknownTask": "mcpcore.tasks.manager",
    "ToolError": "mcpcore.tools",
    "AdmissionLimits": "mcpcore.transports.admission",
    "ANY_HOST": "mcpcore.transports.http",
    "LOCAL_HOSTS": "mcpcore.transports.http",
    "OriginGuard": "mcpcore.transports.http",
    "StreamableHTTP": "mcpcore.transports.http",
    "LegacyShim": "mcpcore.transports.legacy_http",
    "run_stdio": "mcpcore.transports.stdio",
    "serve_stdio": "mcpcore.transports.stdio",
    "MODERN": "mcpcore.versions",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mcpcore' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "ANONYMOUS",
    "ANY_HOST",
    "LOCAL_HOSTS",
    "MODERN",
    "PRINCIPAL_SCOPE_KEY",
    "AdmissionLimits",
    "AuditEvent",
    "CacheHint",
    "Client",
    "ClientError",
    "Context",
    "Decision",
    "ElicitAnswer",
    "ErrorCode",
    "HeaderMismatch",
    "InputRequest",
    "InputRequired",
    "InsufficientScope",
    "InternalError",
    "InvalidCursor",
    "InvalidInputResponses",
    "InvalidMeta",
    "InvalidParams",
    "InvalidRequest",
    "InvalidRequestState",
    "KeyRing",
    "LegacyShim",
    "Limits",
    "LocalProtocolError",
    "LoggingAuditSink",
    "McpError",
    "MemoryAuditSink",
    "MemoryStore",
    "MethodNotFound",
    "MissingRequiredClientCapability",
    "MrtrConfig",
    "OriginGuard",
    "Policy",
    "Principal",
    "RateLimit",
    "RedisStore",
    "RemoteProtocolError",
    "ResourceNotFound",
    "RootsAnswer",
    "Rule",
    "Ruleset",
    "SamplingAnswer",
    "Sealer",
    "Server",
    "ServiceUnavailable",
    "Store",
    "StreamableHTTP",
    "TaskManager",
    "ToolError",
    "UnknownPrompt",
    "UnknownTask",
    "UnknownTool",
    "UnsupportedProtocolVersion",
    "UsageError",
    "__version__",
    "elicitation",
    "roots",
    "run_stdio",
    "sampling",
    "serve_stdio",
    "url_elicitation",
]
