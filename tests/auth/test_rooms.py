"""The rooms of ``mcpcore.auth`` keep their rules (docs/architecture.md, "auth/ in rooms").

Every module under ``auth/`` is parsed with ``ast`` and each import it makes, anywhere in
the module (inside functions and ``TYPE_CHECKING`` blocks too), is checked:

* the shared modules at the top of ``auth/`` (JOSE, JWKS, DPoP, challenges, scopes, terms,
  URLs, redaction, errors, config, ...) import no room;
* ``server/`` (what an MCP server runs) never imports ``client/`` or ``issuer/``;
* ``client/`` (the OAuth client) never imports ``server/`` or ``issuer/``;
* only ``issuer/`` imports starlette, authlib or joserfc (the ``issuer`` extra), and no
  module of the package outside it imports ``issuer/``: ``mcpcore.auth`` works without
  the extra;
* ``auth/__init__.py`` is the façade: it names the server's and the client's API, never
  the issuer's.

Imports are absolute (``from mcpcore.auth.x import y``), so that this check sees them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AUTH = ROOT / "auth"
ROOMS = ("server", "client", "issuer")
#: The issuer extra's libraries (pyproject.toml, [project.optional-dependencies] issuer).
ISSUER_LIBRARIES = frozenset({"starlette", "authlib", "joserfc"})
#: What each room may not import, besides the issuer's libraries (issuer/ may import all).
FORBIDDEN_ROOMS = {
    "shared": frozenset(ROOMS),
    "facade": frozenset({"issuer"}),
    "server": frozenset({"client", "issuer"}),
    "client": frozenset({"server", "issuer"}),
    "issuer": frozenset(),
}


def room_of(path: Path) -> str:
    """``shared``, ``facade``, or the room a module of ``auth/`` is in."""
    relative = path.relative_to(AUTH)
    if relative == Path("__init__.py"):
        return "facade"
    return relative.parts[0] if len(relative.parts) > 1 else "shared"


def imports(tree: ast.AST) -> Iterator[tuple[int, list[str]]]:
    """(line, dotted names) of every import statement: ``from a.b import c`` names
    ``a.b`` and ``a.b.c`` (``c`` may be a submodule); a relative one starts with ``.``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node.lineno, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            yield node.lineno, [base, *(f"{base}.{alias.name}" for alias in node.names)]


def problem(room: str, name: str) -> str | None:
    """Why a module of ``room`` may not import ``name``, or None."""
    if name.startswith("."):
        return f"relative import {name}"
    if name.split(".", 1)[0] in ISSUER_LIBRARIES and room != "issuer":
        return f"{name} (only issuer/ uses the issuer extra)"
    parts = name.split(".")
    if parts[:2] == ["mcpcore", "auth"] and len(parts) > 2 and parts[2] in FORBIDDEN_ROOMS[room]:
        return f"{name} ({room} may not import {parts[2]}/)"
    return None


def violations(room: str, source: str) -> list[str]:
    """Each import statement in ``source`` that a module of ``room`` may not make, by the
    first name in it that breaks a rule."""
    found = []
    for line, names in imports(ast.parse(source)):
        reasons = [reason for name in names if (reason := problem(room, name))]
        if reasons:
            found.append(f"line {line}: {reasons[0]}")
    return sorted(found)


def modules() -> list[Path]:
    return sorted(AUTH.rglob("*.py"))


def test_every_module_is_in_a_known_room() -> None:
    rooms = {room_of(path) for path in modules()}
    assert rooms == {"facade", "shared", *ROOMS}


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(AUTH)))
def test_each_module_imports_only_what_its_room_may(path: Path) -> None:
    assert violations(room_of(path), path.read_text(encoding="utf-8")) == []


def test_outside_auth_only_the_issuer_names_the_issuer_libraries() -> None:
    """mcpcore/ and conformance/ (the rest of the package) import neither the issuer's
    libraries nor the issuer: ``mcpcore authorization-server`` names its module as a
    string, imported when that subcommand runs."""
    found = {}
    for folder in ("mcpcore", "conformance"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            bad = violations("facade", path.read_text(encoding="utf-8"))
            if bad:
                found[str(path.relative_to(ROOT))] = bad
    assert found == {}


@pytest.mark.parametrize(("room", "source", "expected"), [
    ("shared", "from mcpcore.auth.server.tokens import JwtValidator",
     ["line 1: mcpcore.auth.server.tokens (shared may not import server/)"]),
    ("shared", "from mcpcore.auth import client",
     ["line 1: mcpcore.auth.client (shared may not import client/)"]),
    ("server", "def f():\n    import mcpcore.auth.client.oauth",
     ["line 2: mcpcore.auth.client.oauth (server may not import client/)"]),
    ("server", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
               "    from mcpcore.auth.issuer import Client",
     ["line 3: mcpcore.auth.issuer (server may not import issuer/)"]),
    ("client", "from authlib.oauth2.rfc7636 import create_s256_code_challenge",
     ["line 1: authlib.oauth2.rfc7636 (only issuer/ uses the issuer extra)"]),
    ("facade", "import starlette\nimport httpx, joserfc.jwk",
     ["line 1: starlette (only issuer/ uses the issuer extra)",
      "line 2: joserfc.jwk (only issuer/ uses the issuer extra)"]),
    ("client", "from ..server import tokens",
     ["line 1: relative import ..server"]),
    ("issuer", "import joserfc\nfrom mcpcore.auth.server.tokens import JwtValidator\n"
               "from mcpcore.auth.client_auth import ClientAuth", []),
    ("client", "from mcpcore.auth.client_auth import ClientAuth\n"
               "from mcpcore.auth.client.steps import Flow\nimport starlette_like", []),
])
def test_the_rules_catch_what_they_name(room: str, source: str, expected: list[str]) -> None:
    """The checker itself: each rule reports its import, and only its import."""
    assert violations(room, source) == expected
