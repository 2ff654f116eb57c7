"""One meaning per name across ``mcpcore``, ``mcpcore.auth`` and ``mcpcore.conformance``.

A public class or type alias (a top-level capitalised name that is not a constant) is
defined in one module only; importing it elsewhere is fine, defining a second thing of
the same name is not: a reader who meets ``Outcome`` should not have to find out which
of three it is. The exceptions are listed below, each with its reason.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mcpcore": ROOT / "mcpcore", "mcpcore.auth": ROOT / "auth",
            "mcpcore.conformance": ROOT / "conformance"}

#: Names the package defines both as a mirror of the 2026-07-28 schema (``mcpcore.types``,
#: generated from schema.json and named as the schema names them) and as the engine's own
#: working type for the same concept; the schema's name wins and the mirror keeps it.
SCHEMA_MIRRORS = {
    "CacheScope": "pagination's cache scope is the schema's CacheScope, as a Literal",
    "CompletionArgument": "params.py decodes the schema's CompletionArgument for the route",
    "CompletionContext": "params.py decodes the schema's CompletionContext for the route",
    "InputRequest": "inputs.py builds the schema's InputRequest that a handler asks",
    "InternalError": "errors.py raises the schema's InternalError (-32603)",
    "Notification": "jsonrpc.py decodes the schema's JSON-RPC Notification",
    "ParseError": "errors.py raises the schema's ParseError (-32700)",
    "Request": "jsonrpc.py decodes the schema's JSON-RPC Request",
    "RequestId": "jsonrpc.py's RequestId is the schema's RequestId",
    "ResultType": "outcome.py's ResultType is the schema's ResultType",
    "SubscriptionFilter": "params.py decodes the schema's SubscriptionFilter",
}

#: Names still defined twice that have not been renamed yet, each with the reason. This
#: list only shrinks: a name added here needs the same justification as a schema mirror.
NOT_YET_RENAMED: dict[str, str] = {}


def _module(package: str, root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((package, *parts))


def _public_types(tree: ast.Module) -> list[str]:
    """Classes and type aliases defined at the top of a module (``X = ...`` or
    ``X: TypeAlias = ...`` with ``X`` capitalised and not an ALL_CAPS constant)."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            names.append(node.targets[0].id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if n[:1].isupper() and not n.isupper()]


def definitions(packages: dict[str, Path]) -> dict[str, list[str]]:
    """Each public type name -> the modules that define it."""
    found: dict[str, list[str]] = defaultdict(list)
    for package, root in packages.items():
        for path in sorted(root.rglob("*.py")):
            for name in _public_types(ast.parse(path.read_text(encoding="utf-8"))):
                found[name].append(_module(package, root, path))
    return dict(found)


@pytest.fixture(scope="module")
def found() -> dict[str, list[str]]:
    """The package's definitions, read once for the tests below."""
    return definitions(PACKAGES)


def test_each_public_type_name_has_one_meaning(found: dict[str, list[str]]) -> None:
    twice = {name: modules for name, modules in found.items()
             if len(modules) > 1 and name not in SCHEMA_MIRRORS and name not in NOT_YET_RENAMED}
    assert twice == {}, "rename one of each (docs/architecture.md, 'One meaning per name')"


def test_every_exception_is_still_needed(found: dict[str, list[str]]) -> None:
    stale = sorted(name for name in (*SCHEMA_MIRRORS, *NOT_YET_RENAMED)
                   if len(found.get(name, [])) < 2)
    assert stale == []
    for name in SCHEMA_MIRRORS:
        assert "mcpcore.types" in found[name], name


def test_a_second_definition_is_found(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "one.py").write_text("class Outcome: ...\nLIMIT = 3\n_Hidden = 1\n")
    (tmp_path / "b" / "two.py").write_text(
        "from typing import Literal\nOutcome = Literal['x']\nLIMIT = 4\n_Hidden = 2\n")
    found = definitions({"a": tmp_path / "a", "b": tmp_path / "b"})
    assert found == {"Outcome": ["a.one", "b.two"]}


# -- one Struct per envelope ------------------------------------------------------------

#: The two envelopes the package reads before it knows what a message is, and the one
#: Struct each: a JSON-RPC message with every member optional (``method`` beside
#: ``params``), and a request's params read leniently (``_meta`` and the fields that
#: name the primitive, typed ``Any``). ``mcpcore.params.Params`` is the typed base of
#: each route's params (its ``_meta`` is the same field, not a second reading).
ENVELOPES = {
    "a JSON-RPC message read as it came": {"mcpcore.jsonrpc.Envelope"},
    "params read leniently": {"mcpcore.headers.LenientParams", "mcpcore.params.Params"},
}
_LENIENT_FIELDS = frozenset({"meta", "_meta", "name", "uri", "task_id"})


def _struct_fields(node: ast.ClassDef) -> dict[str, str]:
    """Field name -> annotation (as written) of a class; ``_meta`` for a field renamed
    to it (``msgspec.field(name="_meta")``)."""
    fields = {}
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            name = item.target.id
            if isinstance(item.value, ast.Call) and any(
                    k.arg == "name" and isinstance(k.value, ast.Constant)
                    and k.value.value == "_meta" for k in item.value.keywords):
                name = "_meta"
            fields[name] = ast.unparse(item.annotation)
    return fields


def envelopes(packages: dict[str, Path]) -> dict[str, set[str]]:
    """Each envelope meaning -> the classes that read it: a ``method`` of any type
    beside ``params``; ``_meta`` or a field naming the primitive, of any type (typed
    fields are a route's or a schema mirror's, not a lenient reading)."""
    found: dict[str, set[str]] = defaultdict(set)
    for package, root in packages.items():
        for path in sorted(root.rglob("*.py")):
            module = _module(package, root, path)
            if module == "mcpcore.types":
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if not isinstance(node, ast.ClassDef):
                    continue
                fields = _struct_fields(node)
                where = f"{module}.{node.name}"
                if fields.get("method") == "Any" and "params" in fields:
                    found["a JSON-RPC message read as it came"].add(where)
                if any(name in _LENIENT_FIELDS and annotation == "Any"
                       for name, annotation in fields.items()):
                    found["params read leniently"].add(where)
    return dict(found)


def test_each_envelope_is_read_by_one_struct() -> None:
    assert envelopes(PACKAGES) == ENVELOPES


def test_a_second_envelope_struct_is_found(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.py").write_text(
        "import msgspec\nfrom typing import Any\n"
        "class Peek(msgspec.Struct):\n    method: Any = None\n    params: msgspec.Raw\n"
        "class MetaOnly(msgspec.Struct):\n    _meta: Any = None\n"
        "class Named(msgspec.Struct):\n    name: Any = None\n"
        "class Typed(msgspec.Struct):\n    name: str\n    method: str\n    params: Any\n")
    assert envelopes({"a": tmp_path / "a"}) == {
        "a JSON-RPC message read as it came": {"a.one.Peek"},
        "params read leniently": {"a.one.MetaOnly", "a.one.Named"}}
