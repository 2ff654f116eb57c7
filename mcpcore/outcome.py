"""What a route produced, before a protocol revision gives it its result shape.

Routes and input strategies return an ``Outcome``: the result body as the handler made
it, whether it is complete or waits for input, and the cache hint that applies if it is
complete. ``Server.handle`` shapes it for 2026-07-28 (``resultType``, cache hints,
``serverInfo``); a caller of ``Server.dispatch`` shapes it as its revision needs, so
nothing is stamped on a result only to be stripped again.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from mcpcore.pagination import CacheHint

ResultType = Literal["complete", "input_required", "task"]


class Outcome(msgspec.Struct):
    """One request's result body; ``cache`` applies only to a complete result (an
    ``input_required`` answer never carries cache hints: caching.mdx, nor does a task
    handle). A Struct: one is made per request, and that is cheapest."""

    body: dict[str, Any]
    result_type: ResultType = "complete"
    cache: CacheHint | None = None

    @property
    def complete(self) -> bool:
        return self.result_type == "complete"


class AnsweredWith(Exception):
    """Raised by a handler whose request is answered with ``outcome`` instead of the
    result it would return: a gateway's forwarded ``tools/call`` that the upstream made
    a task (``result_type="task"``: the gateway's own task handle). The round that ran
    the handler (``mcpcore.mrtr.run_round``) answers with it as it is."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.result_type)
        self.outcome = outcome


__all__ = ["AnsweredWith", "Outcome", "ResultType"]
