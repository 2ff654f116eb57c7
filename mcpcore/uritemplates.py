"""RFC 6570 URI templates: parse once, match concrete URIs back to variables.

Resource templates are published as written; ``resources/read`` needs the reverse
direction (which template does this URI belong to, with which values?). We compile each
template into an anchored regular expression. Supported: level 1-3 expressions
(``{var}``, ``{+var}``, ``{#var}``, ``{.var}``, ``{/var}``, ``{;var}``, ``{?a,b}``,
``{&a}``), several variables per expression, and the ``*``/``:n`` modifiers (matched as
plain values).

Matching never backtracks without bound, whatever the template (a gateway serves its
upstreams' templates, and a client chooses the URI): a template whose reverse match is
ambiguous (two variables with nothing between them that only one may hold, as in
``{name}.{ext}``; optional expressions that may start alike, as in ``{/a}{/b}``) made
Python's backtracking ``re`` quadratic, cubic or exponential in the URI (a 20 KB URI
against ``{a}{b}!`` took 15 s of CPU on the event loop). Such a template is matched with
RE2 (``google-re2``: time linear in the URI, the same leftmost-first answer as ``re``);
every other template, the usual kind, with ``re``, which then decides at each character
with one character of look-ahead (an LL(1) pattern: linear too) and is faster per call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

import re2  # type: ignore[import-untyped]  # google-re2: no type information

_EXPR = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")
_VARNAME = re.compile(r"^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$")

# Characters a value may span in the URI, per operator.
_VALUE = {
    "": r"[^/?#&,]*",
    "+": r"[^?#]*",
    "#": r".*",
    ".": r"[^/?#.]*",
    "/": r"[^/?#]*",
    ";": r"[^/?#;]*",
    "?": r"[^&#]*",
    "&": r"[^&#]*",
}
_PREFIX = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ";", "?": r"\?", "&": "&"}
_SEPARATOR = {"": ",", "+": ",", "#": ",", ".": r"\.", "/": "/", ";": ";", "?": "&", "&": "&"}


#: The characters each operator's value may NOT span (the complement of ``_VALUE``'s
#: class; ``#``'s ``.*`` spans everything but a newline).
_STOPS = {"": "/?#&,", "+": "?#", "#": "\n", ".": "/?#.", "/": "/?#", ";": "/?#;",
          "?": "&#", "&": "&#"}


class TemplateError(ValueError):
    """A malformed URI template."""


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
#: RFC 3986 §2.3.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: A ``.`` or ``..`` segment: between ``/`` (or ``\``, which the WHATWG URL Standard
#: reads as ``/`` in special schemes, and some servers everywhere) and a delimiter.
_DOT_SEGMENT = re.compile(r"[/\\]\.{1,2}(?=[/\\?#]|\Z)")


def unnormalized(uri: str) -> str | None:
    """Why ``uri`` is not in its normal form (RFC 3986 §6.2.2), or None if it is: a
    percent-encoded unreserved character (§2.3: "should not be created"; §6.2.2.2
    decodes it), or a ``.`` or ``..`` segment once every percent-encoding is decoded
    (§5.2.4 removes them; decoded, because a template variable's value is, and ``%2F``
    becomes a ``/`` there). A URI a template routes is matched by policy rules as
    written, and read by the template's reader as decoded: the two must name the same
    resource."""
    for escape in _ESCAPE.finditer(uri):
        char = chr(int(escape.group(1), 16))
        if char in _UNRESERVED:
            return f"{escape.group(0)} encodes {char!r}, an unreserved character"
    if _DOT_SEGMENT.search(unquote(uri)):
        return "it has a '.' or '..' path segment (decoded)"
    return None


class _Match(Protocol):
    def group(self, name: str, /) -> Any: ...


class _Pattern(Protocol):
    def match(self, text: str, /) -> _Match | None: ...


# What a template compiles to, besides its regular expression: the shape the
# backtracking check reads (``_deterministic``).
class _Lit:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Var:
    __slots__ = ("stops",)

    def __init__(self, stops: str) -> None:
        self.stops = stops


class _Opt:
    __slots__ = ("items",)

    def __init__(self, items: list[_Lit | _Var | _Opt]) -> None:
        self.items = items


_Item = _Lit | _Var | _Opt
#: "Any character" in a set of first characters (a variable's value starts with one).
_ANY = "any"


def _first(items: list[_Item], follow: set[str]) -> set[str]:
    """The characters ``items`` can start with (``follow``: what comes after them, for
    when they can all be empty); ``_ANY`` stands for a variable's value."""
    out: set[str] = set()
    for item in items:
        if isinstance(item, _Lit):
            if item.text:
                out.add(item.text[0])
                return out
        elif isinstance(item, _Var):
            out.add(_ANY)
        else:
            out |= _first(item.items, set())
    return out | follow


def _deterministic(items: list[_Item], follow: set[str]) -> bool:
    """Whether every choice the pattern of ``items`` makes (a value goes on or stops; an
    optional expression is there or not) is decided by the next character alone: then
    ``re`` never backtracks more than one character at a time."""
    for i, item in enumerate(items):
        after = _first(items[i + 1:], follow)
        if isinstance(item, _Var):
            if _ANY in after or not after <= set(item.stops) | {""}:
                return False
        elif isinstance(item, _Opt) and (_ANY in after or _first(item.items, set()) & after
                                         or not _deterministic(item.items, after)):
            return False
    return True


@dataclass(frozen=True, slots=True)
class UriTemplate:
    template: str
    variables: tuple[str, ...]
    #: ``re``'s pattern, or RE2's for a template ``re`` would backtrack on (module
    #: docstring).
    pattern: _Pattern

    @classmethod
    def parse(cls, template: str) -> UriTemplate:
        if template.count("{") != template.count("}"):
            raise TemplateError(f"unbalanced braces in URI template {template!r}")
        parts: list[str] = []
        names: list[str] = []
        shape: list[_Item] = []
        pos = 0
        for match in _EXPR.finditer(template):
            parts.append(re.escape(template[pos:match.start()]))
            shape.append(_Lit(template[pos:match.start()]))
            op, body = match.group(1), match.group(2)
            groups: list[str] = []
            pieces: list[list[_Item]] = []
            for spec in body.split(","):
                name = re.sub(r"(\*|:\d+)$", "", spec)
                if not _VARNAME.match(name):
                    raise TemplateError(f"bad variable {spec!r} in URI template {template!r}")
                if name in names:
                    raise TemplateError(f"variable {name!r} appears twice in {template!r}")
                names.append(name)
                group = f"(?P<v{len(names) - 1}>{_VALUE[op]})"
                piece: list[_Item] = [_Var(_STOPS[op])]
                if op in ("?", "&", ";"):
                    group = re.escape(name) + "=" + group
                    piece.insert(0, _Lit(name + "="))
                groups.append(group)
                pieces.append(piece)
            # Every variable of an expression is optional-in-order except the first.
            expr = _PREFIX[op] + groups[0]
            items: list[_Item] = [_Lit(_PREFIX[op].replace("\\", "")), *pieces[0]]
            for g, piece in zip(groups[1:], pieces[1:], strict=True):
                expr += f"(?:{_SEPARATOR[op]}{g})?"
                items.append(_Opt([_Lit(_SEPARATOR[op].replace("\\", "")), *piece]))
            if op in ("?", "&", "#", ".", "/", ";"):
                expr = f"(?:{expr})?"
                items = [_Opt(items)]
            parts.append(expr)
            shape.extend(items)
            pos = match.end()
        rest = template[pos:]
        if "{" in rest or "}" in rest:
            raise TemplateError(f"malformed expression in URI template {template!r}")
        parts.append(re.escape(rest))
        shape.append(_Lit(rest))
        # Anchored at both ends of the text (``re``'s ``$`` would also match before a
        # final newline: "x://a/data\n" would be read as the URI "x://a/data").
        source = "^" + "".join(parts)
        if _deterministic(shape, {""}):
            return cls(template, tuple(names), re.compile(source + r"\Z"))
        try:
            return cls(template, tuple(names), re2.compile(source + r"\z"))
        except re2.error as exc:  # too large for RE2's memory bound
            raise TemplateError(f"URI template {template[:200]!r} cannot be matched: "
                                f"{exc}") from None

    def match(self, uri: str) -> dict[str, str] | None:
        """Variables of ``uri`` if it matches this template, else ``None``."""
        try:
            m = self.pattern.match(uri)
        except UnicodeEncodeError:  # RE2 reads UTF-8: a lone surrogate is no URI
            return None
        if m is None:
            return None
        values: dict[str, str] = {}
        for i, name in enumerate(self.variables):
            raw = m.group(f"v{i}")
            if raw is not None:
                values[name] = unquote(raw)
        return values


__all__ = ["TemplateError", "UriTemplate", "unnormalized"]
