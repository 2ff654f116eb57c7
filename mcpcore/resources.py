"""Resources and resource templates: registration, listing and reading.

A static resource is a URI plus a reader function; a template (RFC 6570) is a pattern
plus a reader that receives the URI's variables as keyword arguments. Readers return
``str`` (text), ``bytes`` (base64 blob), or a list of contents dicts. A URI nobody serves
is ``ResourceNotFound`` (-32602 with ``data.uri``), never an empty ``contents``
(resources.mdx, "Error Handling").
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from mcpcore import types
from mcpcore.context import Context
from mcpcore.errors import ResourceNotFound, UnnormalizedUri, UsageError
from mcpcore.pagination import CacheHint
from mcpcore.signatures import (
    RAW_SIGNATURE,
    HandlerFunction,
    Signature,
    inspect_handler,
    no_op,
    summary_of,
)
from mcpcore.tools import Category, published
from mcpcore.uritemplates import UriTemplate, unnormalized

#: The reader of a resource whose definition was given as JSON (``add_raw``): it gets
#: the URI asked for and the request's Context and returns the ``ReadResourceResult``
#: as is (a gateway forwarding the read to the server that listed the resource).
RawReader = Callable[[str, Context], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class ResourceDef:
    uri: str
    name: str
    fn: HandlerFunction
    signature: Signature
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    cache: CacheHint | None = None
    template: UriTemplate | None = None
    wire: dict[str, Any] = field(default_factory=dict)
    #: Set by ``add_raw``: the engine hands it the URI and relays what it returns.
    raw: RawReader | None = None
    #: What a policy that gates ``resources/read`` knows of it (``Policy(methods=...)``):
    #: a read, reaching systems outside the server unless said otherwise, and the
    #: server a gateway forwards it to (``add_raw``).
    category: Category = "read"
    external: bool = True
    required_scopes: frozenset[str] = frozenset()
    upstream: str | None = None

    def publish(self) -> dict[str, Any]:
        entry: dict[str, Any] = (
            {"uriTemplate": self.uri} if self.template is not None else {"uri": self.uri}
        )
        entry["name"] = self.name
        for key, value in (("title", self.title), ("description", self.description),
                           ("mimeType", self.mime_type), ("size", self.size),
                           ("annotations", self.annotations), ("icons", self.icons),
                           ("_meta", self.meta)):
            if value is not None:
                entry[key] = value
        return entry


class ResourceRegistry:
    def __init__(self) -> None:
        self._static: dict[str, ResourceDef] = {}
        self._templates: list[ResourceDef] = []
        #: Called after every change (the server announces list changes through it).
        self.on_change: Callable[[], None] = no_op

    def __len__(self) -> int:
        return len(self._static) + len(self._templates)

    def add(self, fn: HandlerFunction, uri: str, *, template: bool, name: str | None = None,
            title: str | None = None, description: str | None = None,
            mime_type: str | None = None, size: int | None = None,
            annotations: Mapping[str, Any] | None = None,
            icons: Sequence[Mapping[str, Any]] | None = None,
            meta: Mapping[str, Any] | None = None,
            cache: CacheHint | None = None) -> ResourceDef:
        parsed = UriTemplate.parse(uri) if template else None
        if not template and uri in self._static:
            raise ValueError(f"resource {uri!r} is already registered")
        if template and any(t.uri == uri for t in self._templates):
            raise ValueError(f"resource template {uri!r} is already registered")
        what = f"resource template {uri!r}" if template else f"resource {uri!r}"
        sig = inspect_handler(fn, struct_name="resource_arguments", what=what)
        if parsed is not None:
            missing = set(sig.arg_names) - set(parsed.variables)
            if missing and not sig.var_keyword:
                raise UsageError(f"{what}: parameters {sorted(missing)} are not variables "
                                 "of the template")
        resource = ResourceDef(
            uri=uri, name=name or fn.__name__, fn=fn, signature=sig, title=title,
            description=description if description is not None else summary_of(fn),
            mime_type=mime_type, size=size,
            annotations=dict(annotations) if annotations else None,
            icons=[dict(i) for i in icons] if icons else None,
            meta=dict(meta) if meta else None, cache=cache, template=parsed,
        )
        resource.wire = published(resource.publish(),
                                  types.ResourceTemplate if template else types.Resource, what)
        if parsed is None:
            self._static[uri] = resource
        else:
            self._templates.append(resource)
        self.on_change()
        return resource

    def add_raw(self, definition: Mapping[str, Any], reader: RawReader, *,
                cache: CacheHint | None = None, upstream: str | None = None
                ) -> ResourceDef:
        """Add a resource (``uri``) or a template (``uriTemplate``) whose definition is a
        ``Resource``/``ResourceTemplate`` JSON object, published as given, read by
        ``reader`` (see ``RawReader``); ``upstream``: the server it is forwarded to
        (policy rules' ``upstreams``). ``ValueError`` for a URI taken or a template
        that does not parse; ``UsageError`` for a definition the spec's type rejects."""
        wire = dict(definition)
        template = "uriTemplate" in wire
        uri = wire.get("uriTemplate" if template else "uri")
        what = f"resource template {uri!r}" if template else f"resource {uri!r}"
        try:
            msgspec.convert(wire, types.ResourceTemplate if template else types.Resource)
        except msgspec.ValidationError as exc:
            raise UsageError(f"{what} is not valid: {exc}") from None
        assert isinstance(uri, str)  # the spec's types require it
        parsed = UriTemplate.parse(uri) if template else None
        if (uri in self._static if parsed is None
                else any(t.uri == uri for t in self._templates)):
            raise ValueError(f"{what} is already registered")
        resource = ResourceDef(
            uri=uri, name=wire["name"], fn=reader, signature=RAW_SIGNATURE,
            title=wire.get("title"), description=wire.get("description"),
            mime_type=wire.get("mimeType"), size=wire.get("size"),
            annotations=wire.get("annotations"), icons=wire.get("icons"),
            meta=wire.get("_meta"), cache=cache, template=parsed, wire=wire, raw=reader,
            upstream=upstream)
        if parsed is None:
            self._static[uri] = resource
        else:
            self._templates.append(resource)
        self.on_change()
        return resource

    def remove(self, uri: str) -> None:
        if uri in self._static:
            del self._static[uri]
        else:
            self._templates = [t for t in self._templates if t.uri != uri]
        self.on_change()

    def published(self) -> list[dict[str, Any]]:
        return [r.wire for r in self._static.values()]

    def published_templates(self) -> list[dict[str, Any]]:
        return [t.wire for t in self._templates]

    def entries(self, *, templates: bool = False) -> list[tuple[ResourceDef, dict[str, Any]]]:
        """Each resource (or template) with its listed definition, in list order."""
        return [(r, r.wire) for r in (self._templates if templates
                                      else self._static.values())]

    def template(self, uri_template: str) -> ResourceDef | None:
        """The template registered as ``uri_template``, or ``None``."""
        return next((t for t in self._templates if t.uri == uri_template), None)

    def resolve(self, uri: str) -> tuple[ResourceDef, dict[str, str]]:
        """The resource serving ``uri`` and the template variables (exact URIs first).
        A URI a template matches must be in normal form (``UnnormalizedUri``: what a
        policy glob sees must be the resource the reader gets)."""
        static = self._static.get(uri)
        if static is not None:
            return static, {}
        for template in self._templates:
            assert template.template is not None
            values = template.template.match(uri)
            if values is not None:
                if (why := unnormalized(uri)) is not None:
                    raise UnnormalizedUri(uri, why)
                return template, values
        raise ResourceNotFound(uri)

    @property
    def has_templates(self) -> bool:
        return bool(self._templates)


def read_contents(resource: ResourceDef, uri: str, value: Any) -> list[dict[str, Any]]:
    """Normalise a reader's return value into ``contents`` entries."""
    if value is None:
        raise ResourceNotFound(uri)
    if isinstance(value, str):
        entry: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, (bytes, bytearray, memoryview)):
        entry = {"uri": uri, "blob": base64.b64encode(bytes(value)).decode("ascii")}
    elif isinstance(value, dict):
        return [value]
    elif isinstance(value, (list, tuple)):
        contents = [msgspec.to_builtins(v) for v in value]
        if not contents:
            raise ResourceNotFound(uri)
        return contents
    else:
        return [msgspec.to_builtins(value)]
    if resource.mime_type is not None:
        entry["mimeType"] = resource.mime_type
    return [entry]


__all__ = ["RawReader", "ResourceDef", "ResourceRegistry", "read_contents"]
