"""``mcpcore gateway pin|approve|diff``: the lock file of pinned tool definitions, from
the upstreams' tools as they are now (docs/gateway-pinning.md).

::

    mcpcore gateway pin CONFIG [--lock PATH] [--force | --upgrade]
        list every upstream's tools; write the lock file (refused if it exists:
        an existing lock is changed by ``approve``, after ``diff``); with --upgrade,
        rewrite a version 1 lock as version 2 (``_meta`` pinned; nothing approved)
    mcpcore gateway diff CONFIG [--upstream NAME ...] [--lock PATH]
        what differs from the lock: changed, new and removed tools (exit 1 if any)
    mcpcore gateway approve CONFIG (--upstream NAME [--tool NAME ...] | --all)
                            [--new-only] [--digest sha256:...] [--lock PATH]
        approve what the upstreams list now; write the lock

Exit status, as diff(1): 0 done (``diff``: no difference), 1 (``diff`` only) there are
differences, 2 trouble: one line on stderr saying what is wrong and what to do (an
upstream that cannot be listed, a damaged lock, a usage error). The lock file is never
written after trouble.

The pieces, so that the gateway's own command (``mcpcore.gateway.cli``) wires them in a
few lines: ``add_verbs(verbs)`` adds the three parsers to its subparsers, and
``run(args, config)`` runs one with the ``GatewayConfig`` its loader read.
``fetch_tool_definitions(config)`` lists the upstreams' tools with the engine's client;
``pin_definitions``, ``approve_definitions`` and ``diff_definitions`` are the verbs on
definitions already fetched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcore.gateway.config import GatewayConfig, UpstreamConfig, resolve_secrets
from mcpcore.gateway.credentials import credential_for
from mcpcore.gateway.pin_diff import render_changes
from mcpcore.gateway.pinning import (
    LEGACY_LOCK_VERSION,
    LOCK_VERSION,
    MAX_TOOLS_PER_UPSTREAM,
    Approval,
    LockError,
    PinningError,
    Pins,
    definition_digest,
    tool_name,
)
from mcpcore.gateway.upstreams import Upstream

#: Upstreams listed at once by ``fetch_tool_definitions``.
FETCH_CONCURRENCY = 8

Definitions = Mapping[str, Sequence[Mapping[str, Any]]]
#: An ``httpx.AsyncClient`` per upstream name (tests reach in-process upstreams).
HttpClients = Mapping[str, httpx.AsyncClient]


class PinsProblem(ValueError):
    """Trouble a pin command reports in one line (exit status 2)."""


# -- listing the upstreams' tools -------------------------------------------------------


@dataclass
class Fetched:
    """The tools each upstream listed (wire-form definitions, by upstream name), and
    why the others could not be listed."""

    definitions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


async def fetch_tool_definitions(
    config: GatewayConfig, *, upstreams: Sequence[str] | None = None,
    http_clients: HttpClients | None = None,
    environ: Mapping[str, str] | None = None,
) -> Fetched:
    """Every tool of every upstream of ``config`` (or of those named in ``upstreams``),
    listed now the way the running gateway lists them (``Upstream.listing``: the same
    connection, era, timeout, stdio environment and bounded walk), so that what ``pin``
    writes is what the gateway screens. An upstream that cannot be listed is in
    ``failures`` with the reason; the others are listed all the same.
    ``http_clients``: an ``httpx.AsyncClient`` per upstream name (tests)."""
    chosen = [upstream for upstream in config.upstreams
              if upstreams is None or upstream.name in upstreams]
    if upstreams is not None:
        known = {upstream.name for upstream in config.upstreams}
        if unknown := [name for name in upstreams if name not in known]:
            raise PinsProblem(f"no upstream named {unknown[0]!r} in the configuration "
                              f"(upstreams: {', '.join(sorted(known)) or 'none'})")
    environ = os.environ if environ is None else environ
    clients = http_clients or {}
    limit = asyncio.Semaphore(FETCH_CONCURRENCY)
    fetched = Fetched()

    async def one(config_of: UpstreamConfig) -> None:
        name = config_of.name
        async with limit:
            try:
                secrets = resolve_secrets(GatewayConfig(upstreams=(config_of,)), environ)
                # Listed as the gateway lists it: with the gateway's own credential
                # (for the kinds that act as a caller: client credentials at the same
                # authorization server; docs/gateway-credentials.md).
                credential = credential_for(config_of, secrets)
                upstream = Upstream(config_of, http_client=clients.get(name),
                                    child_env=secrets.child_env.get(name),
                                    environ=environ, credential=credential)
            except ValueError as exc:  # GatewayConfigError: a variable not set
                fetched.failures[name] = str(exc)
                return
            try:
                await upstream.start()
                if upstream.client is None:
                    fetched.failures[name] = upstream.last_error or "it cannot be reached"
                    return
                listing = await upstream.listing()
            except Exception as exc:  # the peer's fault: reported per upstream
                fetched.failures[name] = f"{type(exc).__name__}: {exc}"
                return
            finally:
                await upstream.aclose()
                if credential is not None:
                    await credential.aclose()
            if len(listing.tools) > MAX_TOOLS_PER_UPSTREAM:
                fetched.failures[name] = (f"it lists {len(listing.tools)} tools, more than "
                                          f"a lock file holds ({MAX_TOOLS_PER_UPSTREAM})")
                return
            fetched.definitions[name] = listing.tools

    await asyncio.gather(*(one(upstream) for upstream in chosen))
    return fetched


# -- the verbs, on definitions already fetched -------------------------------------------


def pin_definitions(definitions: Definitions) -> Pins:
    """The lock of every tool in ``definitions`` (``PinsProblem`` if one cannot be
    pinned)."""
    try:
        return Pins.from_definitions(definitions)
    except PinningError as exc:
        raise PinsProblem(str(exc)) from None


def approve_definitions(pins: Pins, definitions: Definitions, *,
                        tools: Sequence[str] = (), new_only: bool = False,
                        digest: str | None = None) -> Approval:
    """Approve what ``definitions`` list now, for each upstream in it: all of its tools
    (``Pins.approve_upstream``: changed and new ones, removing pins of tools it no
    longer lists), or with ``tools`` only those (one upstream), or with ``new_only``
    only new ones. ``digest``: approve the one tool named in ``tools`` only if its
    definition still has this digest (the one ``diff`` showed), so that a definition
    changed between review and approval is not approved."""
    if tools and len(definitions) != 1:
        raise PinsProblem("--tool needs exactly one --upstream")
    if digest is not None and len(tools) != 1:
        raise PinsProblem("--digest needs exactly one --tool")
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    for upstream in sorted(definitions):
        listed = list(definitions[upstream])
        if tools:
            by_name = {tool_name(tool): tool for tool in listed}
            for name in tools:
                if name not in by_name:
                    raise PinsProblem(f"upstream {upstream!r} does not list a tool named "
                                      f"{name!r} now")
                tool = by_name[name]
                try:
                    now = definition_digest(tool)
                    verdict = pins.verdict(upstream, tool)
                except PinningError as exc:
                    raise PinsProblem(f"{upstream}/{name}: {exc}") from None
                if digest is not None and now != digest:
                    raise PinsProblem(f"{upstream}/{name} now has digest {now}, not {digest}: "
                                      "it changed since it was reviewed; run diff again")
                if verdict == "pinned" or (new_only and verdict == "changed"):
                    continue
                pins = pins.approve(upstream, tool)
                (added if verdict == "new" else changed).append(f"{upstream}/{name}")
            continue
        try:
            approval = pins.approve_upstream(upstream, listed, new_only=new_only)
        except PinningError as exc:
            raise PinsProblem(str(exc)) from None
        pins = approval.pins
        added += approval.added
        changed += approval.changed
        removed += approval.removed
    return Approval(pins, tuple(added), tuple(changed), tuple(removed))


def diff_definitions(pins: Pins, definitions: Definitions) -> str:
    """What differs between the lock and ``definitions`` (``render_changes``)."""
    return render_changes(pins, definitions)


# -- the command line -------------------------------------------------------------------


def add_verbs(verbs: Any) -> None:
    """Add ``pin``, ``approve`` and ``diff`` to ``verbs`` (the gateway command's
    ``parser.add_subparsers(dest="verb", ...)``)."""
    pin = verbs.add_parser("pin", help="list the upstreams' tools and write the lock file")
    approve = verbs.add_parser("approve", help="approve tools as the upstreams list them "
                                               "now; write the lock file")
    diff = verbs.add_parser("diff", help="show what differs from the lock file (exit 1 if "
                                         "anything does)")
    for parser in (pin, approve, diff):
        parser.add_argument("config", metavar="CONFIG", help="the gateway's TOML file")
        parser.add_argument("--lock", metavar="PATH",
                            help="the lock file (default: `pins` of the configuration)")
    how = pin.add_mutually_exclusive_group()
    how.add_argument("--force", action="store_true",
                     help="replace an existing lock file (approving every change at once)")
    how.add_argument("--upgrade", action="store_true",
                     help="rewrite a version 1 lock file as version 2: each tool that "
                          "still matches its pin gets its _meta pinned; nothing else is "
                          "approved")
    diff.add_argument("--upstream", action="append", default=None, metavar="NAME",
                      help="compare only this upstream (repeatable)")
    which = approve.add_mutually_exclusive_group(required=True)
    which.add_argument("--upstream", action="append", default=None, metavar="NAME",
                       help="approve this upstream's tools (repeatable)")
    which.add_argument("--all", action="store_true", help="approve every upstream's tools")
    approve.add_argument("--tool", action="append", default=[], metavar="NAME",
                         help="only this tool of the one --upstream (repeatable)")
    approve.add_argument("--new-only", action="store_true",
                         help="only tools that are new; changed ones stay quarantined")
    approve.add_argument("--digest", metavar="sha256:HEX",
                         help="approve the one --tool only if its definition has this "
                              "digest (the one diff showed)")


def run(args: argparse.Namespace, config: GatewayConfig, *,
        http_clients: HttpClients | None = None) -> int:
    """Run ``args.verb`` (``pin``, ``approve`` or ``diff``) for ``config``."""
    prog = f"mcpcore gateway {args.verb}"
    try:
        return _VERBS[args.verb](args, config, http_clients)
    except (PinsProblem, LockError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2


def _lock_path(args: argparse.Namespace, config: GatewayConfig) -> str:
    path = args.lock or config.pins
    if path is None:
        raise PinsProblem(f"no lock file: set pins = \"gateway.lock\" under [gateway] in "
                          f"{args.config}, or pass --lock PATH")
    return str(path)


def _fetch(config: GatewayConfig, http_clients: HttpClients | None,
           upstreams: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    fetched = asyncio.run(fetch_tool_definitions(config, upstreams=upstreams,
                                                 http_clients=http_clients))
    if fetched.failures:
        name = sorted(fetched.failures)[0]
        more = len(fetched.failures) - 1
        raise PinsProblem(
            f"cannot list the tools of upstream {name!r}: {fetched.failures[name]}"
            + (f" (and {more} more upstream{'s' if more > 1 else ''})" if more else "")
            + "; the lock file was not changed")
    return fetched.definitions


def _run_pin(args: argparse.Namespace, config: GatewayConfig,
             http_clients: HttpClients | None) -> int:
    path = _lock_path(args, config)
    if getattr(args, "upgrade", False):
        return _upgrade(path, config, http_clients)
    if os.path.exists(path) and not args.force:
        raise PinsProblem(f"{path} exists; review what changed with `mcpcore gateway diff "
                          f"{args.config}` and approve it with `mcpcore gateway approve`, "
                          "or pass --force to replace the lock file")
    pins = pin_definitions(_fetch(config, http_clients))
    pins.save(path)
    for upstream in pins.upstreams:
        print(f"{upstream}: {len(pins.tools(upstream))} tools pinned")
    print(f"wrote {path}")
    return 0


def _upgrade(path: str, config: GatewayConfig, http_clients: HttpClients | None) -> int:
    """``pin --upgrade``: a version 1 lock rewritten as version 2 (``Pins.upgraded``)."""
    pins = Pins.load(path)
    if not pins.legacy:
        print(f"{path} is version {LOCK_VERSION} already: nothing to upgrade")
        return 0
    try:
        upgraded, taken, kept = pins.upgraded(_fetch(config, http_clients))
    except PinningError as exc:
        raise PinsProblem(f"{exc}; the lock file was not changed") from None
    upgraded.save(path)
    print(f"{taken} pinned tools now pin their _meta as their upstream lists it")
    if kept:
        print(f"{kept} pins kept as they were approved, without _meta (changed, or no "
              "longer listed: `mcpcore gateway diff` shows them)")
    print(f"wrote {path} (lock file version {LOCK_VERSION})")
    return 0


def _run_diff(args: argparse.Namespace, config: GatewayConfig,
              http_clients: HttpClients | None) -> int:
    path = _lock_path(args, config)
    pins = Pins.load(path)
    text = diff_definitions(pins, _fetch(config, http_clients, args.upstream))
    if args.upstream is None:
        stale = [f"- upstream {upstream} ({len(pins.tools(upstream))} pins): in the lock "
                 "file, not in the configuration (approve --all removes its pins)"
                 for upstream in _stale_upstreams(pins, config)]
        text = "\n\n".join(part for part in (text, "\n".join(stale)) if part)
    if not text:
        print(f"no differences from {path}")
        return 0
    print(text)
    return 1


def _run_approve(args: argparse.Namespace, config: GatewayConfig,
                 http_clients: HttpClients | None) -> int:
    path = _lock_path(args, config)
    pins = Pins.load(path)
    if pins.legacy:
        raise PinsProblem(f"{path} is a version {LEGACY_LOCK_VERSION} lock file, which does "
                          "not pin tools' _meta: upgrade it first with `mcpcore gateway pin "
                          f"{args.config} --upgrade`, then approve")
    if args.tool and (args.upstream is None or len(args.upstream) != 1):
        raise PinsProblem("--tool needs exactly one --upstream")
    definitions = _fetch(config, http_clients, None if args.all else args.upstream)
    approval = approve_definitions(pins, definitions, tools=args.tool,
                                   new_only=args.new_only, digest=args.digest)
    if args.all and not args.new_only:
        # Pins of upstreams no longer configured go too, each reported.
        kept, gone = approval.pins, list(approval.removed)
        for upstream in _stale_upstreams(kept, config):
            gone += [f"{upstream}/{name}" for name in sorted(kept.tools(upstream))]
            kept = kept.without_upstream(upstream)
        approval = Approval(kept, approval.added, approval.changed, tuple(gone))
    if approval.pins == pins:
        print(f"nothing to approve: {path} is unchanged")
        return 0
    approval.pins.save(path)
    for label in approval.added:
        print(f"approved new tool {label}")
    for label in approval.changed:
        print(f"approved changed tool {label}")
    for label in approval.removed:
        print(f"removed the pin of {label} (no longer listed by its upstream)")
    print(f"wrote {path}")
    _tell_fleet(config)
    return 0


def _tell_fleet(config: GatewayConfig) -> None:
    """With a fleet's Store (``store_url_env``), tell the running instances to read the
    lock file again now, rather than at their next refresh (fanout.py)."""
    if config.store_url is None:
        return
    from mcpcore.gateway.config import GatewayConfigError, resolve_secrets
    from mcpcore.gateway.fanout import CatalogFanout
    from mcpcore.stores.base import StoreError

    later = "the running instances read it at their next refresh"
    try:
        url = resolve_secrets(config, os.environ).value(config.store_url)
        from mcpcore.stores.redis import RedisStore

        store = RedisStore.from_url(url)
    except (GatewayConfigError, ValueError, ImportError) as exc:
        print(f"not told to the gateway's instances ({exc}); {later}", file=sys.stderr)
        return

    async def tell() -> int:
        fanout = CatalogFanout(store, config.name, lambda *_: None)
        try:
            await fanout.announce(["pins"])
        finally:
            with contextlib.suppress(StoreError):
                await store.close()
        return fanout.lost

    if asyncio.run(tell()):
        print(f"the Store did not take the word; {later}", file=sys.stderr)
    else:
        print("told the gateway's running instances to read it now")


def _stale_upstreams(pins: Pins, config: GatewayConfig) -> list[str]:
    configured = {upstream.name for upstream in config.upstreams}
    return [upstream for upstream in pins.upstreams if upstream not in configured]


_VERBS: dict[str, Callable[[argparse.Namespace, GatewayConfig, HttpClients | None], int]] = {
    "pin": _run_pin, "diff": _run_diff, "approve": _run_approve}


__all__ = ["FETCH_CONCURRENCY", "Fetched", "PinsProblem", "add_verbs",
           "approve_definitions", "diff_definitions", "fetch_tool_definitions",
           "pin_definitions", "run"]
