"""mcpcore: a stateless Model Context Protocol engine (revision 2026-07-28).

The public API, in one place::

    from mcpcore import Server, Context, StreamableHTTP

    server = Server("demo", "1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        '''Echo the text back.'''
        return text

    app = StreamableHTTP(server)          # ASGI: uvicorn module:app
"""

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
    ParseError,
    ResourceNotFound,
    UnknownPrompt,
    UnknownTool,
    UnsupportedProtocolVersion,
)
from mcpcore.jsonrpc import Limits
from mcpcore.mrtr import (
    ElicitAnswer,
    InputRequest,
    InputRequired,
    MrtrConfig,
    RootsAnswer,
    SamplingAnswer,
    elicitation,
    roots,
    sampling,
    url_elicitation,
)
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
    decide,
)
from mcpcore.principal import ANONYMOUS, PRINCIPAL_SCOPE_KEY, Principal
from mcpcore.server import Server
from mcpcore.tools import ToolError
from mcpcore.transports.http import ANY_HOST, LOCAL_HOSTS, StreamableHTTP
from mcpcore.transports.stdio import run_stdio, serve_stdio
from mcpcore.versions import MODERN

__version__ = "0.1.0"

__all__ = [
    "ANONYMOUS",
    "ANY_HOST",
    "LOCAL_HOSTS",
    "MODERN",
    "PRINCIPAL_SCOPE_KEY",
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
    "Limits",
    "LocalProtocolError",
    "LoggingAuditSink",
    "McpError",
    "MemoryAuditSink",
    "MethodNotFound",
    "MissingRequiredClientCapability",
    "MrtrConfig",
    "ParseError",
    "Policy",
    "Principal",
    "RateLimit",
    "RemoteProtocolError",
    "ResourceNotFound",
    "RootsAnswer",
    "Rule",
    "Ruleset",
    "SamplingAnswer",
    "Server",
    "StreamableHTTP",
    "ToolError",
    "UnknownPrompt",
    "UnknownTool",
    "UnsupportedProtocolVersion",
    "__version__",
    "decide",
    "elicitation",
    "roots",
    "run_stdio",
    "sampling",
    "serve_stdio",
    "url_elicitation",
]
