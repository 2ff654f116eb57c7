"""What ``Server._call_tool`` asks at each step of a ``tools/call``: the ``CallGate``.

A server with a policy (``mcpcore.policy``) gates each call with the policy's ``Gate``
(tenant, rules, scopes, confirmation, rate limit, timeouts, one audit event); a server
without one uses ``OPEN_GATE``, which lets every call through and records nothing. The
call path is the same either way: no ``if gate is None`` in it. The open gate's
``guard`` hands the round back unchanged (the handler's round has no layer of its own)
and its ``finish`` records nothing, so the path skips those two steps when the gate *is*
``OPEN_GATE`` (an identity test costs a fraction of a Python call); its ``timeouts`` is
an empty mapping (a dict: its ``get`` is no Python call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from mcpcore.inputs import Handler
    from mcpcore.outcome import Outcome
    from mcpcore.policy.engine import PolicyTarget


class CallDenied(Exception):
    """The gate refuses the call: ``result`` is the tool error to answer with (no
    round runs, no task is made)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__("tools/call denied")
        self.result = result


class Timeouts(Protocol):
    """A tool's timeout by name, else ``default``."""

    def get(self, name: str, default: float | None, /) -> float | None: ...


class CallGate(Protocol):
    """One ``tools/call`` as a gate sees it, step by step (``Server._call_tool``); the
    other routed methods a policy gates (``Policy(methods=...)``) take the same steps,
    their target given as a ``ToolPolicy``."""

    @property
    def timeouts(self) -> Timeouts:
        """Seconds a tool's handler may run: ``timeouts.get(name, default)`` (``None``:
        no limit)."""
        ...

    def guard(self, tool: PolicyTarget, run: Handler) -> Handler:
        """Before any round, screen the call (``CallDenied`` with the tool error that
        refuses it; other errors, e.g. ``InsufficientScope``, as they are); else the
        handler's round as the gate runs it (each MRTR round, or a task's work)."""
        ...

    def timed_out(self, seconds: float) -> None:
        """The handler overran ``seconds`` and was cancelled."""
        ...

    def finish(self, outcome: Outcome) -> None:
        """The call answered ``outcome`` (a task: again when the task ends)."""
        ...

    def fail(self, exc: BaseException) -> None:
        """The call ended with ``exc`` raised."""
        ...


class OpenGate:
    """The gate of a server without a policy: every call goes through as it is."""

    __slots__ = ()

    #: No timeouts of its own: every tool gets the server's default (a dict: its
    #: ``get`` is no Python call).
    timeouts: Final[Mapping[str, float | None]] = {}  # never written

    def guard(self, tool: PolicyTarget, run: Handler) -> Handler:
        return run

    def timed_out(self, seconds: float) -> None:
        pass

    def finish(self, outcome: Outcome) -> None:
        pass

    def fail(self, exc: BaseException) -> None:
        pass


#: The one open gate (it holds nothing, so every call shares it).
OPEN_GATE: Final = OpenGate()

__all__ = ["OPEN_GATE", "CallDenied", "CallGate", "OpenGate", "Timeouts"]
