"""Times a peer sends: a token response's ``expires_in``, a JWT's NumericDate claims.

Both arrive from the network as JSON numbers of any size (Python reads ``1`` followed by
400 zeros as an ``int``, and ``float()`` of it raises ``OverflowError``), or as something
that is not a number at all. These two readers turn them into bounded floats, or raise
``ValueError`` with a reason fit for an error message; each caller wraps that reason in
its own typed error (``TokenRequestFailed``, ``InvalidToken``, ``InvalidGrant``, ...).

* ``expires_in`` (RFC 6749 §5.1, "the lifetime in seconds of the access token"): a
  non-negative number is a lifetime, **clamped** to ``MAX_TOKEN_LIFETIME`` (it only says
  when the client refreshes on its own: the resource server still refuses a token that
  has really expired, and the client then gets a new one). A string of ASCII digits is
  read as that number (some deployed authorization servers send ``"3599"``). A negative
  number, ``true``/``false``, any other string, a list or an object is a malformed
  response: ``ValueError``. Absent (or ``null``) is ``None``: the lifetime is unknown.
* NumericDate (RFC 7519 §2: seconds since the epoch): an integer or a finite float
  within ``±MAX_NUMERIC_DATE`` (the end of year 9999); anything else is ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

#: Longest lifetime taken from ``expires_in`` (seconds): 366 days.
MAX_TOKEN_LIFETIME: Final = 366 * 86_400.0
#: Largest NumericDate accepted (9999-12-31T23:59:59Z), and its negative the smallest.
MAX_NUMERIC_DATE: Final = 253_402_300_799
_MAX_DIGITS: Final = 15  # more digits than this is beyond MAX_TOKEN_LIFETIME anyway


def expires_in_seconds(value: object) -> float | None:
    """The lifetime an ``expires_in`` value gives, clamped; see the module docstring.

    >>> expires_in_seconds(3600), expires_in_seconds("3599"), expires_in_seconds(None)
    (3600.0, 3599.0, None)
    >>> expires_in_seconds(10**400) == MAX_TOKEN_LIFETIME
    True
    >>> expires_in_seconds(-1)
    Traceback (most recent call last):
    ...
    ValueError: expires_in must be a non-negative number of seconds, not -1
    """
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        if len(value) > _MAX_DIGITS:
            return MAX_TOKEN_LIFETIME
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expires_in must be a number of seconds, not {_shown(value)}")
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        raise ValueError(
            f"expires_in must be a non-negative number of seconds, not {_shown(value)}")
    if value >= MAX_TOKEN_LIFETIME:  # int against float: exact, whatever the int's size
        return MAX_TOKEN_LIFETIME
    return float(value)


def numeric_date(value: object) -> float:
    """A NumericDate claim as a float, or ``ValueError``; see the module docstring.

    >>> numeric_date(1767225600)
    1767225600.0
    >>> numeric_date(10**400)
    Traceback (most recent call last):
    ...
    ValueError: is out of range
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("is out of range")
    if not -MAX_NUMERIC_DATE <= value <= MAX_NUMERIC_DATE:
        raise ValueError("is out of range")
    return float(value)


def numeric_claim(claims: Mapping[str, Any], name: str,
                  error: Callable[[str], Exception]) -> float | None:
    """Claim ``name`` of ``claims`` as a NumericDate (``None`` when absent); one that is
    not a valid one raises ``error("claim NAME is ...")`` (the caller's error type:
    ``InvalidToken`` for an access token, ``InvalidGrant`` for a grant)."""
    value = claims.get(name)
    if value is None:
        return None
    try:
        return numeric_date(value)
    except ValueError as exc:
        raise error(f"claim {name} {exc}") from None


def _shown(value: object) -> str:
    """A peer's value for an error message: its type for containers, else a short repr."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a number that large"
    if isinstance(value, str | int | float):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, list):
        return "a JSON array"
    return "a JSON object" if isinstance(value, dict) else "another type"


__all__ = ["MAX_NUMERIC_DATE", "MAX_TOKEN_LIFETIME", "expires_in_seconds", "numeric_date"]
