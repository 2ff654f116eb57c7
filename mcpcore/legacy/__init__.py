"""The 2025 era (2025-11-25, 2025-06-18, 2025-03-26) behind one seam.

Clients of those revisions open a session with ``initialize`` and the server may send
them requests of its own. Everything that knows about that lives here; the engine
(``mcpcore.server``) serves their requests through ``Server.dispatch`` like any other,
with the session's revision and capabilities as the request's ``meta`` and a ``Bridge``
as its way of asking the client for input. The transports hold only the byte plumbing
(``mcpcore.transports.legacy_http``, ``mcpcore.transports.legacy_stdio``).

- ``era``: which era a message belongs to (per message, never per connection);
- ``sessions``: session records in a ``Store``, their state table, their errors;
- ``dispatch``: ``initialize``, the session-scoped methods, and everything else through
  the engine, answered in the era's shape (no ``resultType``, -32002 for a missing
  resource);
- ``bridge``: a handler's questions sent as server→client requests;
- ``notifications``: change events rendered as the era's notifications.
"""

from mcpcore.legacy.bridge import Bridge
from mcpcore.legacy.dispatch import SessionDispatcher
from mcpcore.legacy.era import has_modern_marker
from mcpcore.legacy.sessions import SessionManager, SessionNotFound, SessionRecord

__all__ = ["Bridge", "SessionDispatcher", "SessionManager", "SessionNotFound",
           "SessionRecord", "has_modern_marker"]
