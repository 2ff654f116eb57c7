"""The suite's vocabulary: a ``Check`` (metadata plus one coroutine), its ``Level``, the
``Verdict`` it earns, and the ``CheckOutcome`` a run records.

Checks are data (STYLE §8): the registry holds them, the runner executes them, reporters
render outcomes; none of the three knows about the others' insides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpcore.conformance.context import AuditContext
    from mcpcore.conformance.transport import RecordedExchange

#: The public specification site; ``spec()`` builds links into it.
SPEC_SITE = "https://modelcontextprotocol.io/specification"


class Level(StrEnum):
    """The requirement level of the rule a check tests (RFC 2119 words of the spec)."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


class Verdict(StrEnum):
    """``pass``; ``fail`` (a MUST violated); ``warn`` (a SHOULD or MAY violated);
    ``skip`` (the rule does not apply to this server, or the check could not test it:
    the message says why); ``error`` (the check could not finish: timeout, or a bug in
    the check)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"
    ERROR = "error"


class CheckFailed(Exception):
    """Raised by ``AuditContext.fail``: the server broke the rule."""


class CheckSkipped(Exception):
    """Raised by ``AuditContext.skip``: the rule does not apply to this server."""


CheckFn = Callable[["AuditContext"], Awaitable[None]]

#: What a check may need from the target; the runner skips it otherwise.
NEEDS = frozenset({"http", "loopback", "auth"})
#: The packs: ``core`` runs by default; the others are switched on by CLI flags.
PACKS = ("core", "fixtures", "audit", "fuzz")


@dataclass(frozen=True)
class Check:
    """One rule, tested by ``run`` against one era of one server."""

    id: str
    title: str
    requirement: str                 #: the rule in one sentence, as the spec states it
    level: Level
    spec: str                        #: link to the public spec page and section
    eras: frozenset[str]
    run: CheckFn = field(compare=False, repr=False)
    tags: frozenset[str] = frozenset()
    needs: frozenset[str] = frozenset()
    pack: str = "core"
    final: bool = False              #: runs after the others (reads the whole run)
    fix: str = ""                    #: how to fix a failure, in one or two sentences

    @property
    def verdict_on_failure(self) -> Verdict:
        return Verdict.FAIL if self.level is Level.MUST else Verdict.WARN


@dataclass
class CheckOutcome:
    """What one check concluded about one era of the target."""

    check: Check
    era: str
    verdict: Verdict
    message: str = ""
    evidence: list[RecordedExchange] = field(default_factory=list)
    duration: float = 0.0
    expected: bool = False           #: listed in the expected-failures baseline
    notes: list[str] = field(default_factory=list)
    #: The exchange the verdict rests on (the failing probe), shown first in reports;
    #: one of ``evidence``, or ``None`` (a pass, or a failure without one).
    decisive: RecordedExchange | None = None

    @property
    def key(self) -> str:
        return f"{self.era}:{self.check.id}"

    @property
    def blocking(self) -> bool:
        """Makes the run exit non-zero: a MUST that failed or errored, not baselined."""
        return (self.check.level is Level.MUST and not self.expected
                and self.verdict in (Verdict.FAIL, Verdict.ERROR))


def spec(path: str, anchor: str = "", era: str = "2026-07-28") -> str:
    """A link to a spec page: ``spec("server/tools", "listing-tools")``."""
    return f"{SPEC_SITE}/{era}/{path}" + (f"#{anchor}" if anchor else "")


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else ``{}`` (for reading untrusted answers)."""
    return value if isinstance(value, dict) else {}


__all__ = [
    "NEEDS",
    "PACKS",
    "SPEC_SITE",
    "Check",
    "CheckFailed",
    "CheckFn",
    "CheckOutcome",
    "CheckSkipped",
    "Level",
    "Verdict",
    "as_dict",
    "spec",
]
