"""Protocol revisions we know, their eras, and version negotiation.

Modern (2026-07-28) requests carry their version in every request's ``_meta``; there is
no handshake and no stickiness. Legacy revisions are negotiated only through
``initialize`` (served by the legacy shim); a modern-shaped request naming a legacy
version is answered with -32022 (versioning.mdx).
"""

from __future__ import annotations

from typing import Final

MODERN: Final = "2026-07-28"
LEGACY: Final = ("2025-11-25", "2025-06-18", "2025-03-26")
#: Every revision this library can speak, newest first.
KNOWN: Final = (MODERN, *LEGACY)


def is_modern_version(version: str) -> bool:
    """True for a version string newer than every legacy revision.

    Used to route HTTP requests per message: a ``MCP-Protocol-Version`` header naming
    a version later than 2025-11-25 — even one we do not support — is modern traffic
    and gets a modern error.
    """
    return (version not in LEGACY and version > LEGACY[0]) or version == MODERN


def negotiate_legacy(requested: str, supported: tuple[str, ...] = LEGACY) -> str:
    """Pick the 2025-era version to answer ``initialize`` with (never 2026-07-28:
    2025-11-25 lifecycle.mdx, "Version Negotiation")."""
    return requested if requested in supported else supported[0]


__all__ = ["KNOWN", "LEGACY", "MODERN", "is_modern_version", "negotiate_legacy"]
