"""``WWW-Authenticate`` challenges: built for our resource server, parsed for our client.

Building: ``bearer_challenge`` lives in ``mcpcore.www_authenticate`` (the engine's
``InsufficientScope`` uses it too) and is re-exported here; ``dpop_challenge`` (RFC 9449
§7.1) adds the accepted proof algorithms to it.

Parsing (RFC 9110 §11.6.1): several challenges in one header value or across several
header lines, case-insensitive schemes and parameter names, values as tokens or quoted
strings with backslash escapes (commas inside quotes included), and ``token68``
credentials. Malformed input never raises: what cannot be read is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mcpcore.www_authenticate import bearer_challenge, quoted_string


def dpop_challenge(
    *,
    algs: Iterable[str],
    resource_metadata: str | None = None,
    scopes: Iterable[str] = (),
    error: str | None = None,
    error_description: str | None = None,
) -> str:
    """A ``DPoP`` challenge (RFC 9449 §7.1): ``algs`` lists the accepted proof algorithms.

    >>> dpop_challenge(algs=["ES256"], error="use_dpop_nonce")
    'DPoP algs="ES256", error="use_dpop_nonce"'
    """
    bearer = bearer_challenge(
        resource_metadata=resource_metadata,
        scopes=scopes,
        error=error,
        error_description=error_description,
    )
    params = [f"algs={quoted_string(' '.join(algs))}"]
    if bearer != "Bearer":
        params.append(bearer[len("Bearer ") :])
    return "DPoP " + ", ".join(params)


# -- parsing -------------------------------------------------------------------------

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SPACE = re.compile(r"[ \t]*")


@dataclass(frozen=True, slots=True)
class Challenge:
    """One parsed challenge: ``scheme`` lowercased, parameter names lowercased."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)
    token68: str | None = None

    def get(self, name: str) -> str | None:
        return self.params.get(name)

    @property
    def scopes(self) -> frozenset[str]:
        """The ``scope`` parameter as a set (empty when absent)."""
        return frozenset((self.params.get("scope") or "").split())


def _skip_space(text: str, i: int) -> int:
    match = _SPACE.match(text, i)
    return match.end() if match else i


def _quoted(text: str, i: int) -> tuple[str, int]:
    """A quoted-string starting at ``text[i] == '"'``; returns (value, index after)."""
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif ch == '"':
            return "".join(out), i + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out), i  # unterminated: take what is there


def _param_at(text: str, i: int) -> tuple[str, str, int] | None:
    """``name BWS "=" BWS (token / quoted-string)`` at ``i``, or None if not a parameter."""
    match = _TOKEN.match(text, i)
    if match is None:
        return None
    k = _skip_space(text, match.end())
    if k >= len(text) or text[k] != "=":
        return None
    k = _skip_space(text, k + 1)
    if k < len(text) and text[k] == '"':
        value, k = _quoted(text, k)
    else:
        token = _TOKEN.match(text, k)
        if token is None:
            return None  # "abc=" followed by nothing: token68 padding, not a parameter
        value, k = token.group(), token.end()
    return match.group().lower(), value, k


def _parse_value(value: str) -> list[Challenge]:
    challenges: list[Challenge] = []
    i, n = 0, len(value)
    while i < n:
        i = _skip_space(value, i)
        if i < n and value[i] == ",":
            i += 1
            continue
        scheme = _TOKEN.match(value, i)
        if scheme is None:  # not a challenge: skip to the next comma
            comma = value.find(",", i)
            i = n if comma < 0 else comma + 1
            continue
        params: dict[str, str] = {}
        token68: str | None = None
        i = scheme.end()
        if i < n and value[i] in " \t":
            i = _skip_space(value, i)
            if _param_at(value, i) is None:
                candidate = _TOKEN68.match(value, i)
                if candidate is not None:
                    after = _skip_space(value, candidate.end())
                    if after >= n or value[after] == ",":
                        token68, i = candidate.group(), after
            while token68 is None and i < n:
                param = _param_at(value, i)
                if param is None:
                    break  # the next challenge's scheme (or garbage)
                name, param_value, i = param
                params.setdefault(name, param_value)
                i = _skip_space(value, i)
                if i < n and value[i] == ",":
                    i = _skip_space(value, i + 1)
                    while i < n and value[i] == ",":  # empty list elements
                        i = _skip_space(value, i + 1)
        challenges.append(Challenge(scheme.group().lower(), params, token68))
    return challenges


def parse_challenges(values: str | Iterable[str]) -> list[Challenge]:
    """Every challenge in one ``WWW-Authenticate`` value or a list of header lines.

    >>> [c.scheme for c in parse_challenges('Bearer realm="a, b", scope="x", DPoP algs="ES256"')]
    ['bearer', 'dpop']
    """
    lines = [values] if isinstance(values, str) else list(values)
    out: list[Challenge] = []
    for line in lines:
        out.extend(_parse_value(line))
    return out


__all__ = ["Challenge", "bearer_challenge", "dpop_challenge", "parse_challenges"]
