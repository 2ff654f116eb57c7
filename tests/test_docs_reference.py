"""The reference pages cannot rot: docs/configuration.md and docs/errors.md are checked
against the code they describe.

- every ``MCPCORE_*`` name in the sources (and every name the prefix readers
  ``ResourceServerConfig.from_env`` / ``EmaConfig.from_env`` look up) is on
  configuration.md, and the page names no variable the code does not read;
- every keyword argument of the documented constructors has a row, and the row's
  default, evaluated, equals the signature's default; the same for ``mcpcore serve``'s
  flags and the rule file's top-level keys;
- every ``McpError`` subclass of the public packages has a row on errors.md with its
  JSON-RPC code and HTTP status, and every auth error its status and OAuth error code.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import pkgutil
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
ERRORS = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
SOURCES = ("mcpcore", "auth", "conformance", "examples", "scripts")
ENV_NAME = re.compile(r"\bMCPCORE_[A-Z0-9_]+")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|", re.M)


# -- environment variables -----------------------------------------------------------------
def source_files() -> Iterator[Path]:
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".sh", ".toml", "") and (
                    "__pycache__" not in path.parts and "schemas" not in path.parts):
                yield path


def names_in_sources() -> set[str]:
    found: set[str] = set()
    for path in source_files():
        found.update(ENV_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))
    return found


class RecordingEnviron(Mapping[str, str]):
    """An environment that answers every look-up (but the config file) and remembers it."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return None if key.endswith("CONFIG") else "x"

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return str(value)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def names_behind_prefixes() -> dict[str, set[str]]:
    """``prefix -> every name its reader looks up``, found by running the readers."""
    from mcpcore.auth.config import ResourceServerConfig
    from mcpcore.auth.issuer.ema import EmaConfig

    readers: dict[str, Callable[[Mapping[str, str]], object]] = {
        "MCPCORE_AUTH_": ResourceServerConfig.from_env,
        "MCPCORE_EMA_": EmaConfig.from_env,
    }
    found = {}
    for prefix, reader in readers.items():
        environ = RecordingEnviron()
        with pytest.raises(Exception):  # noqa: B017 - "x" is no valid URL: it stops late
            reader(environ)
        found[prefix] = environ.asked
    return found


def test_every_environment_variable_is_on_the_page() -> None:
    in_code = names_in_sources()
    prefixes = {name for name in in_code if name.endswith("_")}
    behind = names_behind_prefixes()
    assert prefixes == set(behind), (
        "a new prefix reader: teach names_behind_prefixes() how to run it")
    expected = (in_code - prefixes).union(*behind.values())
    assert len(expected) > 30  # the scan found the sources
    on_page = set(ENV_NAME.findall(CONFIGURATION))
    assert expected - on_page == set(), "missing from docs/configuration.md"
    assert on_page - expected - prefixes == set(), "on docs/configuration.md but read nowhere"


# -- keyword arguments -----------------------------------------------------------------------
def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a line of its own) up to the next heading."""
    match = re.search(rf"^#+ {re.escape(heading)}\s*$(.*?)(?=^#|\Z)", text, re.M | re.S)
    assert match, f"no section {heading!r} on the page"
    return match.group(1)


def rows(text: str) -> dict[str, str]:
    return {name: cell for name, cell in ROW.findall(text)
            if name not in ("Argument", "Flag", "Key")}


def documented() -> list[tuple[str, Callable[..., Any]]]:
    from mcpcore import (
        AdmissionLimits,
        LegacyShim,
        Limits,
        MemoryStore,
        MrtrConfig,
        RedisStore,
        Sealer,
        Server,
        StreamableHTTP,
        TaskManager,
    )

    return [("Server", Server), ("StreamableHTTP", StreamableHTTP), ("Limits", Limits),
            ("AdmissionLimits", AdmissionLimits), ("MrtrConfig", MrtrConfig),
            ("Sealer", Sealer), ("RedisStore.from_url", RedisStore.from_url),
            ("MemoryStore", MemoryStore), ("TaskManager", TaskManager),
            ("LegacyShim", LegacyShim)]


def evaluation_namespace() -> dict[str, Any]:
    import mcpcore
    from mcpcore.pagination import CacheHint
    from mcpcore.timing import SYSTEM_CLOCK

    return {"CacheHint": CacheHint, "SYSTEM_CLOCK": SYSTEM_CLOCK, "asyncio": asyncio,
            "time": time, "os": os,
            **{name: getattr(mcpcore, name) for name in mcpcore.__all__}}


@pytest.mark.parametrize(("heading", "target"), documented(), ids=lambda v: str(v))
def test_every_keyword_argument_and_its_default_is_the_codes(
        heading: str, target: Callable[..., Any]) -> None:
    table = rows(section(CONFIGURATION, f"`{heading}`"))
    params = {name: p for name, p in inspect.signature(target).parameters.items()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    assert set(table) == set(params), f"{heading}: rows differ from the signature"
    namespace = evaluation_namespace()
    for name, param in params.items():
        cell = table[name]
        if param.default is inspect.Parameter.empty:
            assert cell == "required", f"{heading}({name}) has no default"
            continue
        code = re.fullmatch(r"`([^`]+)`", cell)
        assert code, f"{heading}({name}): the default cell must be one code span: {cell!r}"
        assert eval(code.group(1), namespace) == param.default, (
            f"{heading}({name}): the page says {code.group(1)}, the code {param.default!r}")


def test_every_serve_flag_and_its_default_is_the_codes() -> None:
    from mcpcore import cli

    parser = argparse.ArgumentParser()
    cli._configure_serve(parser)
    table = rows(section(CONFIGURATION, "`mcpcore serve` flags"))
    flags = {a.option_strings[-1]: a for a in parser._actions
             if a.option_strings and a.dest != "help"}
    assert set(table) == set(flags)
    for flag, action in flags.items():
        want = "off" if isinstance(action, argparse._StoreTrueAction) else f"`{action.default}`"
        assert table[flag] == want, f"{flag}: page {table[flag]!r}, code {want!r}"


def test_every_top_level_rule_file_key_is_listed() -> None:
    from mcpcore.policy.rulefile import _TOP_KEYS

    assert set(rows(section(CONFIGURATION, "Policy rule files"))) == set(_TOP_KEYS)


# -- errors ---------------------------------------------------------------------------------
def import_public_modules() -> None:
    """Import every module of the packages that can send an error, so that each
    ``McpError`` subclass is defined before the walk."""
    import mcpcore

    for info in pkgutil.walk_packages(mcpcore.__path__, "mcpcore."):
        if info.name.startswith(("mcpcore.conformance", "mcpcore.client")) or (
                info.name.endswith("__main__")):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra that is not installed
            pytest.fail(f"{info.name} does not import: {exc}")


def subclasses(cls: type[Any]) -> set[type[Any]]:
    found: set[type[Any]] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *subclasses(sub)}
    return found


def error_rows() -> dict[str, str]:
    """``class name -> its whole table row`` on errors.md."""
    found = {}
    for line in ERRORS.splitlines():
        if line.startswith("|"):
            for name in re.findall(r"`([A-Za-z]+)`", line.split("|")[1]):
                found[name] = line
    return found


def test_every_mcp_error_is_on_the_error_page() -> None:
    from mcpcore.errors import McpError

    import_public_modules()
    classes = {c for c in subclasses(McpError) | {McpError}
               if c.__module__.startswith("mcpcore.") and not c.__name__.startswith("_")}
    assert len(classes) > 30
    table = error_rows()
    problems = []
    for cls in sorted(classes, key=lambda c: c.__name__):
        row = table.get(cls.__name__)
        if row is None:
            problems.append(f"{cls.__module__}.{cls.__name__} has no row")
            continue
        cells = [c.strip() for c in row.split("|")[1:-1]]
        if f"`{int(cls.code)}`" not in cells[1]:
            problems.append(f"{cls.__name__}: code {int(cls.code)} not in {cells[1]!r}")
        if not re.search(rf"\b{cls.http_status}\b", cells[2]):
            problems.append(f"{cls.__name__}: HTTP {cls.http_status} not in {cells[2]!r}")
    assert not problems, "\n".join(problems)


def test_every_auth_error_is_on_the_error_page() -> None:
    from mcpcore.auth.errors import AuthenticationError, TokenEndpointError

    table = error_rows()
    problems = []
    for base in (AuthenticationError, TokenEndpointError):
        for cls in sorted(subclasses(base) | {base}, key=lambda c: c.__name__):
            row = table.get(cls.__name__)
            if row is None:
                problems.append(f"{cls.__name__} has no row")
                continue
            if not re.search(rf"\b{cls.status}\b", row):
                problems.append(f"{cls.__name__}: HTTP {cls.status} not in its row")
            if cls.error and f"`{cls.error}`" not in row:
                problems.append(f"{cls.__name__}: error {cls.error!r} not in its row")
    assert not problems, "\n".join(problems)


def test_every_client_error_is_on_the_error_page() -> None:
    import mcpcore.client as client
    from mcpcore.client.errors import ClientError

    importlib.import_module("mcpcore.client.tasks")
    importlib.import_module("mcpcore.client.resolvers")
    table = error_rows()
    missing = [c.__name__ for c in subclasses(ClientError) | {ClientError}
               if c.__module__.startswith("mcpcore.client") and c.__name__ not in table]
    assert client.ClientError is ClientError and missing == []
