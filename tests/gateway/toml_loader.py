"""A minimal TOML reader for the gateway's tests, used ONLY while ``mcpcore.gateway.config``
has no ``load`` of its own (the configuration room's loader, written separately): enough
keys for the tests' files, none of the real loader's checks.

``python -m tests.gateway.toml_loader ARGS...`` runs ``mcpcore ARGS...`` with it
installed (if needed), so the tests drive the real command line.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

from mcpcore.gateway import config as gateway_config
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig

_UPSTREAM_KEYS = ("name", "url", "command", "args", "env", "cwd", "era", "timeout",
                  "prefix", "breaker_failures", "breaker_reset", "max_concurrency")


def load(path: str | Path) -> GatewayConfig:
    document = tomllib.loads(Path(path).read_text())
    upstreams = []
    for table in document.get("upstream", []):
        options: dict[str, Any] = {k: table[k] for k in _UPSTREAM_KEYS if k in table}
        if "args" in options:
            options["args"] = tuple(options["args"])
        if "cwd" in options:  # relative to the file's folder, as the real loader does
            options["cwd"] = str(Path(path).absolute().parent / options["cwd"])
        upstreams.append(UpstreamConfig(**options))
    gateway: dict[str, Any] = dict(document.get("gateway", {}))
    return GatewayConfig(upstreams=tuple(upstreams), **gateway)


def install() -> None:
    if getattr(gateway_config, "load", None) is None:
        gateway_config.load = load  # type: ignore[attr-defined]


if __name__ == "__main__":
    install()
    from mcpcore.cli import main

    raise SystemExit(main(sys.argv[1:]))
