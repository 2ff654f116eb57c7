"""Change events (``mcpcore.subscriptions.Event``) as 2025-era notifications.

A session hears every list change the server announces, and ``resources/updated`` for
URIs it subscribed to (or URIs below them), with no ``subscriptionId``: that belongs to
the 2026-07-28 listen stream, and the era has none.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcpcore import jsonrpc
from mcpcore.subscriptions import LIST_CHANGED, Event, covers


def render(event: Event, subscriptions: Iterable[str] = ()) -> bytes | None:
    """The notification for ``event``, or ``None`` if the session should not hear it (an
    update of a URI it did not subscribe to). ``subscriptions`` matter for updates only."""
    if event.kind == "updated":
        uri = event.uri or ""
        if not any(covers(s, uri) for s in subscriptions):
            return None
        return jsonrpc.encode_notification("notifications/resources/updated", {"uri": uri})
    return jsonrpc.encode_notification(LIST_CHANGED[event.kind], {})


__all__ = ["render"]
