"""The federated catalog: every upstream's tools, resources, templates and prompts, under
the names the gateway serves them by, and the owner of each name.

``compile_catalog(config, listings)`` is pure (no I/O): from what each upstream listed
(``None`` for an upstream that could not be listed) it builds an immutable ``Snapshot``.
The gateway compiles a new one on every refresh and swaps it in whole; a request never
fetches from upstreams to list. The rules (docs/gateway.md, "Names"):

- **Prefixing** (on by default): a tool or prompt is served as
  ``<prefix><separator><name>`` (prefix: the upstream's ``prefix``, else its name). A
  composed tool name outside the spec's tool-name rules (server/tools.mdx, "Tool
  Names") is skipped, with a log line. Resources and templates keep their URIs: a URI
  identifies the resource itself.
- **Filters**: an upstream's ``include``/``exclude`` globs (``fnmatch``, case-sensitive)
  on its own names (tools, prompts), or on a resource's name or URI.
- **Collisions** never stop the gateway: the earlier upstream in the config wins the
  name (or URI, or URI template); the later one's entry is left out, with a log line.
  Templates are matched in that order too, and a URI an earlier upstream's template
  matches is that upstream's: a later upstream's resource of that URI is left out too
  (exact URIs are looked up before templates, so it would take the reads of a URI the
  earlier upstream serves).
- **Aliases**: an extra tool name for a served one (``alias → served name``); an alias
  that is taken or names nothing is skipped, with a log line.
- **A quarantined tool keeps its name** (``held``): a later upstream's tool of the
  same served name is left out as in any collision, so a call by that name is refused
  as quarantined instead of reaching another server. So do the pinned tools of an
  upstream not listed yet (``app.py`` passes the lock's names as ``held``).
- **A served name keeps its owner** (``previous``: the catalog served before): while
  the upstream that served a name (tool, prompt, URI, URI template) still lists it
  (even an entry now skipped: too large, invalid) or has no listing, a later
  upstream's entry of that name is left out (log line), as when the owner serves it:
  a name never passes to a later server because its owner's entry dropped out. An
  owner whose listing no longer has the name gives it up. An earlier upstream that
  is listed for the first time takes its names as the config says (log line).
- **An upstream without a listing** (never listed yet: ``app.py`` keeps the last one of
  an upstream that cannot be listed now) is left out of the catalog, the others are
  served.
- **Bounds**: a definition larger than ``MAX_DEFINITION_BYTES`` (as JSON) is skipped,
  and an upstream's entries past ``MAX_UPSTREAM_BYTES`` in all are left out (the
  client already bounds pages and items of each list).
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from mcpcore import types
from mcpcore.gateway.config import Filters, GatewayConfig, UpstreamConfig
from mcpcore.gateway.upstreams import Listing
from mcpcore.tools import valid_tool_name
from mcpcore.uritemplates import TemplateError, UriTemplate

log = logging.getLogger("mcpcore.gateway")

#: The largest definition (one tool, prompt, resource or template, as JSON) served.
MAX_DEFINITION_BYTES: Final = 64 * 1024
#: The most of one upstream's definitions (as JSON, all lists together) served.
MAX_UPSTREAM_BYTES: Final = 8 * 1024 * 1024

Kind = Literal["tool", "prompt", "resource", "template"]
_SPEC_TYPE: Final[dict[Kind, type[Any]]] = {
    "tool": types.Tool, "prompt": types.Prompt, "resource": types.Resource,
    "template": types.ResourceTemplate}
_KEY: Final[dict[Kind, str]] = {"tool": "name", "prompt": "name", "resource": "uri",
                                "template": "uriTemplate"}


@dataclass(frozen=True, slots=True)
class Entry:
    """One served item: its served ``name`` (a URI or URI template for resources), the
    upstream that owns it and the upstream's own name for it, and its definition as
    served (renamed)."""

    name: str
    upstream: str
    original: str
    definition: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One compiled catalog (immutable; owner look-ups are dict look-ups)."""

    tools: tuple[Entry, ...] = ()
    prompts: tuple[Entry, ...] = ()
    resources: tuple[Entry, ...] = ()
    templates: tuple[Entry, ...] = ()
    #: The upstreams whose prompts and templates have completions.
    completions: frozenset[str] = frozenset()
    #: The upstreams that could not be listed (they serve nothing until the next one).
    missing: tuple[str, ...] = ()
    tool_owner: Mapping[str, Entry] = field(default_factory=dict)
    prompt_owner: Mapping[str, Entry] = field(default_factory=dict)
    resource_owner: Mapping[str, Entry] = field(default_factory=dict)
    #: Every name this catalog serves or keeps for its owner (``(kind, name)`` → the
    #: owner and its own name for it), aliases aside: the next catalog keeps them.
    owners: Mapping[tuple[str, str], tuple[str, str]] = field(default_factory=dict)


def served_name(config: GatewayConfig, upstream: UpstreamConfig, name: str) -> str:
    """The name a tool or prompt of ``upstream`` is served by."""
    if not config.prefixing:
        return name
    return f"{upstream.name_prefix}{config.separator}{name}"


def admitted(filters: Filters, *names: str) -> bool:
    """Whether an item called ``names`` (its name, and a resource's URI) passes the
    filters: some include glob matches one of them (or there are none), and no
    exclude glob matches any."""
    def matches(globs: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, glob) for glob in globs for name in names)

    if filters.include and not matches(filters.include):
        return False
    return not matches(filters.exclude)


class _Builder:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.owners: dict[Kind, dict[str, Entry]] = {kind: {} for kind in _SPEC_TYPE}
        #: Tool names held by an upstream's quarantined tools (served name → upstream).
        self.reserved: dict[str, str] = {}
        #: Names an earlier catalog served, kept for their owner: (kind, name) → (owner,
        #: its own name).
        self.kept: dict[tuple[str, str], tuple[str, str]] = {}
        self.order = {upstream.name: i for i, upstream in enumerate(config.upstreams)}
        #: The templates served so far, by their literal start (what a URI they match
        #: starts with): a look-up per distinct length, not a match per template.
        self.template_heads: dict[str, list[tuple[UriTemplate, str]]] = {}
        self.head_lengths: set[int] = set()

    def add_upstream(self, upstream: UpstreamConfig, listing: Listing,
                     held: Sequence[str] = ()) -> None:
        self._reserve(upstream, held)
        budget = MAX_UPSTREAM_BYTES
        lists: tuple[tuple[Kind, list[dict[str, Any]], Filters], ...] = (
            ("tool", listing.tools, upstream.tools),
            ("prompt", listing.prompts, upstream.prompts),
            ("resource", listing.resources, upstream.resources),
            ("template", listing.templates, upstream.resources))
        for kind, items, filters in lists:
            for item in items:
                size = self._add(upstream, kind, item, filters, budget)
                if size < 0:
                    log.warning("upstream %s: its definitions pass %d bytes; the rest of "
                                "its catalog is left out", upstream.name, MAX_UPSTREAM_BYTES,
                                extra={"upstream": upstream.name})
                    return
                budget -= size

    def _reserve(self, upstream: UpstreamConfig, held: Sequence[str]) -> None:
        """The served names of ``upstream``'s quarantined tools stay its own."""
        for original in held:
            name = served_name(self.config, upstream, original)
            self.reserved.setdefault(name, upstream.name)

    def _add(self, upstream: UpstreamConfig, kind: Kind, item: Any, filters: Filters,
             budget: int) -> int:
        """Add one item; the bytes it took (0: skipped; -1: over the budget)."""
        key = _KEY[kind]
        original = item.get(key) if isinstance(item, dict) else None
        if not isinstance(original, str):
            log.warning("upstream %s: a %s without a %s is skipped", upstream.name, kind, key,
                        extra={"upstream": upstream.name})
            return 0
        names = (original,) if kind in ("tool", "prompt") else (original, str(item.get("name")))
        if not admitted(filters, *names):
            return 0
        size = len(msgspec.json.encode(item))
        if size > MAX_DEFINITION_BYTES:
            log.warning("upstream %s: %s %.100r is %d bytes (more than %d) and is skipped",
                        upstream.name, kind, original, size, MAX_DEFINITION_BYTES,
                        extra={"upstream": upstream.name})
            return 0
        if size > budget:
            return -1
        name = (served_name(self.config, upstream, original) if kind in ("tool", "prompt")
                else original)
        if kind == "tool" and not valid_tool_name(name):
            log.warning("upstream %s: tool %.100r served as %.200r breaks the spec's tool "
                        "name rules (1-128 of A-Z a-z 0-9 _ - .) and is skipped",
                        upstream.name, original, name, extra={"upstream": upstream.name})
            return 0
        definition = {**item, key: name}
        try:
            msgspec.convert(definition, _SPEC_TYPE[kind])
        except msgspec.ValidationError as exc:
            log.warning("upstream %s: %s %.100r is not valid (%s) and is skipped",
                        upstream.name, kind, original, exc,
                        extra={"upstream": upstream.name})
            return 0
        owners = self.owners[kind]
        taken = owners.get(name)
        keeper = self.kept.get((kind, name), (upstream.name, ""))[0]
        if taken is None and keeper != upstream.name:
            if self.order.get(keeper, -1) < self.order[upstream.name]:
                log.warning("%s %.200r: upstream %s's is left out: the name is upstream "
                            "%s's, which served it and still lists it", kind, name,
                            upstream.name, keeper, extra={"upstream": upstream.name})
                return 0
            log.warning("%s %.200r: upstream %s's, first in the config, takes the name "
                        "upstream %s served", kind, name, upstream.name, keeper,
                        extra={"upstream": upstream.name})
        winner = taken.upstream if taken is not None else (
            self._template_owner(name, upstream.name) if kind == "resource"
            else self._reserver(name, upstream.name) if kind == "tool" else None)
        if winner is not None:
            log.warning("%s %.200r: upstream %s's collides with upstream %s's, which "
                        "comes first in the config and wins", kind, name, upstream.name,
                        winner, extra={"upstream": upstream.name})
            return 0
        owners[name] = Entry(name, upstream.name, original, definition)
        if kind == "template":
            with contextlib.suppress(TemplateError):  # the registry skips it, logged
                parsed = UriTemplate.parse(name)
                head = name.split("{", 1)[0]
                self.template_heads.setdefault(head, []).append((parsed, upstream.name))
                self.head_lengths.add(len(head))
        return size

    def keep(self, previous: Snapshot, listings: Mapping[str, Listing | None]) -> None:
        """Keep each name ``previous`` served (or kept) for its owner while the owner
        still lists it or has no listing (module docstring)."""
        listed: dict[tuple[str, str], frozenset[str]] = {}

        def still_listed(owner: str, kind: Kind, original: str) -> bool:
            listing = listings.get(owner)
            if listing is None:
                return True
            if (owner, kind) not in listed:
                items = {"tool": listing.tools, "prompt": listing.prompts,
                         "resource": listing.resources, "template": listing.templates}[kind]
                listed[(owner, kind)] = frozenset(
                    item[_KEY[kind]] for item in items
                    if isinstance(item, dict) and isinstance(item.get(_KEY[kind]), str))
            return original in listed[(owner, kind)]

        for (kind, name), (owner, original) in previous.owners.items():
            if kind in _SPEC_TYPE and still_listed(owner, kind, original):
                self.kept[(kind, name)] = (owner, original)

    def _reserver(self, name: str, upstream: str) -> str | None:
        """The earlier upstream whose quarantined tool holds ``name``, if any."""
        owner = self.reserved.get(name)
        return owner if owner != upstream else None

    def _template_owner(self, uri: str, upstream: str) -> str | None:
        """The earlier upstream one of whose templates matches ``uri``, if any."""
        for length in self.head_lengths:
            for template, owner in self.template_heads.get(uri[:length], ()):
                if owner != upstream and template.match(uri) is not None:
                    return owner
        return None

    def add_aliases(self) -> None:
        tools = self.owners["tool"]
        for alias, target in self.config.aliases.items():
            entry = tools.get(target)
            if alias in self.reserved:
                log.warning("alias %r is the name of a quarantined tool of upstream %s: "
                            "skipped", alias, self.reserved[alias])
                continue
            if entry is None:
                log.warning("alias %r names %r, which no upstream serves: skipped", alias,
                            target)
                continue
            if alias in tools:
                log.warning("alias %r is taken by upstream %s's tool: skipped", alias,
                            tools[alias].upstream, extra={"upstream": tools[alias].upstream})
                continue
            if ("tool", alias) in self.kept:
                keeper = self.kept[("tool", alias)][0]
                log.warning("alias %r is the name of upstream %s's tool: skipped", alias,
                            keeper, extra={"upstream": keeper})
                continue
            if not valid_tool_name(alias):
                log.warning("alias %.200r breaks the spec's tool name rules: skipped", alias)
                continue
            tools[alias] = Entry(alias, entry.upstream, entry.original,
                                 {**entry.definition, "name": alias})


def compile_catalog(config: GatewayConfig, listings: Mapping[str, Listing | None],
                    held: Mapping[str, Sequence[str]] | None = None,
                    previous: Snapshot | None = None) -> Snapshot:
    """The catalog of ``listings`` (upstream name → what it listed, or ``None``: it
    could not be listed) under ``config``'s rules (module docstring); ``held``: each
    upstream's quarantined tools (its own names), whose names stay its own;
    ``previous``: the catalog served until now, whose names keep their owners."""
    builder = _Builder(config)
    if previous is not None:
        builder.keep(previous, listings)
    missing: list[str] = []
    completions: set[str] = set()
    for upstream in config.upstreams:
        listing = listings.get(upstream.name)
        if listing is None:
            missing.append(upstream.name)
            builder._reserve(upstream, (held or {}).get(upstream.name, ()))
            continue
        if listing.completions:
            completions.add(upstream.name)
        builder.add_upstream(upstream, listing, (held or {}).get(upstream.name, ()))
    builder.add_aliases()
    owners = builder.owners
    served = dict(builder.kept)
    for kind, entries in owners.items():
        for name, entry in entries.items():
            if not (kind == "tool" and name in config.aliases):
                served[(kind, name)] = (entry.upstream, entry.original)
    return Snapshot(owners=served,
        tools=tuple(owners["tool"].values()), prompts=tuple(owners["prompt"].values()),
        resources=tuple(owners["resource"].values()),
        templates=tuple(owners["template"].values()),
        completions=frozenset(completions), missing=tuple(missing),
        tool_owner=dict(owners["tool"]), prompt_owner=dict(owners["prompt"]),
        resource_owner=dict(owners["resource"]))


__all__ = ["MAX_DEFINITION_BYTES", "MAX_UPSTREAM_BYTES", "Entry", "Snapshot", "admitted",
           "compile_catalog", "served_name"]
