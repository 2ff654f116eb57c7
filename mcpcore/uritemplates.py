"""RFC 6570 URI templates: parse once, match concrete URIs back to variables.

Resource templates are published as written; ``resources/read`` needs the reverse
direction (which template does this URI belong to, with which values?). We compile each
template into an anchored regular expression. Supported: level 1-3 expressions
(``{var}``, ``{+var}``, ``{#var}``, ``{.var}``, ``{/var}``, ``{;var}``, ``{?a,b}``,
``{&a}``), several variables per expression, and the ``*``/``:n`` modifiers (matched as
plain values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

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


class TemplateError(ValueError):
    """A malformed URI template."""


@dataclass(frozen=True, slots=True)
class UriTemplate:
    template: str
    variables: tuple[str, ...]
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, template: str) -> UriTemplate:
        if template.count("{") != template.count("}"):
            raise TemplateError(f"unbalanced braces in URI template {template!r}")
        parts: list[str] = []
        names: list[str] = []
        pos = 0
        for match in _EXPR.finditer(template):
            parts.append(re.escape(template[pos:match.start()]))
            op, body = match.group(1), match.group(2)
            groups: list[str] = []
            for spec in body.split(","):
                name = re.sub(r"(\*|:\d+)$", "", spec)
                if not _VARNAME.match(name):
                    raise TemplateError(f"bad variable {spec!r} in URI template {template!r}")
                if name in names:
                    raise TemplateError(f"variable {name!r} appears twice in {template!r}")
                names.append(name)
                group = f"(?P<v{len(names) - 1}>{_VALUE[op]})"
                if op in ("?", "&", ";"):
                    group = re.escape(name) + "=" + group
                groups.append(group)
            # Every variable of an expression is optional-in-order except the first.
            expr = _PREFIX[op] + groups[0]
            for g in groups[1:]:
                expr += f"(?:{_SEPARATOR[op]}{g})?"
            if op in ("?", "&", "#", ".", "/", ";"):
                expr = f"(?:{expr})?"
            parts.append(expr)
            pos = match.end()
        rest = template[pos:]
        if "{" in rest or "}" in rest:
            raise TemplateError(f"malformed expression in URI template {template!r}")
        parts.append(re.escape(rest))
        return cls(template, tuple(names), re.compile("^" + "".join(parts) + "$"))

    def match(self, uri: str) -> dict[str, str] | None:
        """Variables of ``uri`` if it matches this template, else ``None``."""
        m = self.pattern.match(uri)
        if m is None:
            return None
        values: dict[str, str] = {}
        for i, name in enumerate(self.variables):
            raw = m.group(f"v{i}")
            if raw is not None:
                values[name] = unquote(raw)
        return values


__all__ = ["TemplateError", "UriTemplate"]
