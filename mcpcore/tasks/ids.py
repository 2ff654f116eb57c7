"""Names a task layer hands out: task ids, owner digests, input-request keys.

- **Task ids** are 192 random bits, base64url (32 characters, safe in a URL, a Redis
  key and an ``Mcp-Name`` header). The extension lets a server treat them as bearer
  tokens, so they "MUST" be unguessable (SEP-2663, "Security Considerations").
- **Owners**: a task belongs to the principal that created it. Records keep a SHA-256
  digest of ``Principal.key`` (issuer and subject, never anything from ``_meta``), so a
  shared store holds no identities; another principal's lookup is "not found".
- **Input keys** are minted per task from a counter the record keeps, so a key is never
  reused over the task's lifetime (SEP-2663, "Task Update Requests"): the handler's own
  key, if it gave one, is only a readable prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from typing import Final

#: Random bytes in a task id (192 bits; the extension asks for "sufficient entropy").
TASK_ID_BYTES: Final = 24
_TASK_ID = re.compile(r"[A-Za-z0-9_-]{32}")
_KEY_HINT = re.compile(r"[^A-Za-z0-9_.-]+")


def mint_task_id() -> str:
    """A fresh, unguessable task id.

    >>> len(mint_task_id())
    32
    """
    return secrets.token_urlsafe(TASK_ID_BYTES)


def is_task_id(value: str) -> bool:
    """True if ``value`` could be an id we minted: anything else is unknown at once,
    without a store round trip (and never becomes a key)."""
    return _TASK_ID.fullmatch(value) is not None


def owner_digest(principal_key: str) -> str:
    """What a record stores to name its owner (``Principal.key`` hashed)."""
    return hashlib.sha256(principal_key.encode()).hexdigest()


def same_owner(stored: str, principal_key: str) -> bool:
    """Constant-time check that ``principal_key`` is the owner ``stored`` names."""
    return hmac.compare_digest(stored, owner_digest(principal_key))


def input_key(seq: int, hint: str | None) -> str:
    """The key of the ``seq``-th input request of a task: ``confirm-3``, ``elicitation-1``.

    >>> input_key(3, "confirm")
    'confirm-3'
    """
    prefix = _KEY_HINT.sub("_", hint)[:40] if hint else "input"
    return f"{prefix}-{seq}"


__all__ = [
    "TASK_ID_BYTES",
    "input_key",
    "is_task_id",
    "mint_task_id",
    "owner_digest",
    "same_owner",
]
