"""Protocol revisions we know, their eras, and version negotiation.

Modern (2026-07-28) requests carry their version in every request's ``_meta``; there is
no handshake and no stickiness. Legacy revisions are negotiated only through
``initialize`` (served by the legacy shim); a modern-shaped request naming a legacy
version is answered with -32022 (core §4, R4.7).
"""

from __future__ import annotations

from typing import Final

MODERN: Final = "2026-07-28"
LEGACY: Final = ("2025-11-25", "2025-06-18", "2025-03-26")
#: Every revision this library can speak, newest first.
KNOWN: Final = (MODERN, *LEGACY)


def is_modern_version(version: str) -> bool:
    """True for a version string newer than every legacy revision.

    Used to route HTTP requests (core R4.6): a ``MCP-Protocol-Version`` header naming
    a version later than 2025-11-25 — even one we do not support — is modern traffic
    and gets a modern error.
    """
    return (version not in LEGACY and version > LEGACY[0]) or version == MODERN


def negotiate_legacy(requested: str, supported: tuple[str, ...] = LEGACY) -> str:
    """Pick the legacy version to answer ``initialize`` with (never 2026-07-28, R12.1)."""
    return requested if requested in supported else supported[0]


__all__ = ["KNOWN", "LEGACY", "MODERN", "is_modern_version", "negotiate_legacy"]
