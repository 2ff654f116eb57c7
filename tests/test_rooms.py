"""The rooms of ``mcpcore/`` and their import rules (docs/architecture.md, "Rooms and their
rules"), read from the source by scripts/import_graph.py.

Every import counts: at the top of a module, inside a function, or under
``if TYPE_CHECKING:`` (the package's own ``__init__`` excepted: its ``TYPE_CHECKING``
block only names its lazy exports). A rule is about what a module *reaches*: what it
imports, and what those import, and so on, inside ``mcpcore/``. ``mcpcore.auth`` and
``mcpcore.conformance`` live in other folders and have rooms of their own: an import of
them is an edge here, not followed.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_import_graph() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "scripts" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import_graph = _load_import_graph()
GRAPH: dict[str, dict[str, int]] = import_graph.import_graph()
THIRD_PARTY: dict[str, dict[str, int]] = import_graph.third_party_imports()

#: What both sides of the protocol may use: the wire vocabulary. The client reaches
#: nothing else of the package (besides ``mcpcore.auth``, the OAuth client,
#: ``mcpcore.timing``, the clock both sides take time from, and
#: ``mcpcore.trace_context``, the hook that adds the trace context to outbound requests).
SHARED = frozenset({"mcpcore.errors", "mcpcore.headers", "mcpcore.jsonrpc", "mcpcore.meta",
                    "mcpcore.tasks.wire", "mcpcore.types", "mcpcore.versions",
                    "mcpcore.www_authenticate"})
#: Web libraries: only transports, shells and the client may reach them.
WEB = frozenset({"starlette", "uvicorn", "httpx", "h11", "httpcore"})
#: The modules that run or wire up a process: the command line, the server process,
#: the health endpoints.
SHELLS = frozenset({"mcpcore.__main__", "mcpcore.cli", "mcpcore.gateway.cli",
                    "mcpcore.gateway.serve", "mcpcore.health", "mcpcore.policy.cli",
                    "mcpcore.serving", "mcpcore.stdout"})


def _in(*prefixes: str) -> Callable[[str], bool]:
    return lambda name: any(name == p or name.startswith(p + ".") for p in prefixes)


_client = _in("mcpcore.client")
_transport = _in("mcpcore.transports")
_legacy = _in("mcpcore.legacy")
_gateway_package = _in("mcpcore.gateway")


def _gateway(name: str) -> bool:
    return _gateway_package(name) and name not in SHELLS


def _shell(name: str) -> bool:
    return name in SHELLS


def _package_init(name: str) -> bool:
    return name == "mcpcore"


def _core(name: str) -> bool:
    return not (_client(name) or _transport(name) or _legacy(name) or _shell(name)
                or _gateway(name) or _package_init(name))


@dataclass(frozen=True)
class Room:
    name: str
    members: Callable[[str], bool]
    #: The rule, as docs/architecture.md states it (word for word).
    rule: str
    #: A package module the room's modules must not reach.
    forbidden: Callable[[str], bool]
    #: Whether the room may reach the web libraries.
    web: bool = False


ROOMS = [
    Room("core", _core,
         "the sans-I/O core (every module but the transports, the client, the 2025 "
         "era and the shells) reaches no transport, no client module, no shell and no "
         "2025-era module, and no starlette, uvicorn, httpx or h11",
         lambda name: (_transport(name) or _client(name) or _shell(name) or _legacy(name)
                       or _gateway(name))),
    Room("legacy", _legacy,
         "`legacy/` reaches the core only: no transport, client module or shell, and no "
         "web library",
         lambda name: _transport(name) or _client(name) or _shell(name) or _gateway(name)),
    Room("client", _client,
         "`client/` reaches only itself, the wire vocabulary (`types`, `errors`, "
         "`headers`, `www_authenticate`, `meta`, `versions`, `jsonrpc`, `tasks/wire.py`), "
         "the clock (`timing`), the trace context hook (`trace_context`) and `mcpcore.auth`: "
         "never `server.py` or a transport",
         lambda name: not (_client(name) or name in SHARED
                           or name in ("mcpcore.timing", "mcpcore.trace_context")
                           or _in("mcpcore.auth")(name)),
         web=True),
    Room("transports", _transport,
         "`transports/` reaches the core and `legacy/`, never the client or a shell",
         lambda name: _client(name) or _shell(name) or _gateway(name), web=True),
    Room("gateway", _gateway,
         "`gateway/` composes the engine, the client and the transports (it may reach any "
         "of them, never a shell); only the shells reach it",
         _shell, web=True),
    Room("shells", _shell,
         "the shells (`cli.py`, `__main__.py`, `serving.py`, `health.py`, `policy/cli.py`, "
         "`gateway/cli.py`, `gateway/serve.py`, `stdout.py`) may reach anything",
         lambda name: False, web=True),
    Room("package", _package_init,
         "the package's `__init__.py` imports none of its modules (each name loads on "
         "first use), so any module may import it (for `__version__`)",
         lambda name: True),
]


def _path(start: str, wanted: Callable[[str], bool]) -> list[str] | None:
    """The shortest import path from ``start`` to a module ``wanted`` accepts."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(GRAPH.get(node, {})):
            if target in came_from or target == start:
                continue
            came_from[target] = node
            if wanted(target):
                path = [target]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if target in GRAPH:  # mcpcore.auth and mcpcore.conformance: not followed
                queue.append(target)
    return None


def _web_path(start: str) -> list[str] | None:
    if THIRD_PARTY.get(start, {}).keys() & WEB:
        return [start, *sorted(THIRD_PARTY[start].keys() & WEB)]
    path = _path(start, lambda name: bool(THIRD_PARTY.get(name, {}).keys() & WEB))
    return None if path is None else [*path, *sorted(THIRD_PARTY[path[-1]].keys() & WEB)]


def test_mcpcore_has_no_import_circles() -> None:
    found = import_graph.circles(GRAPH)
    assert not found, "import circles in mcpcore/:\n" + "\n".join(
        import_graph.describe(GRAPH, component) for component in found)


def test_every_module_is_in_exactly_one_room() -> None:
    for module in GRAPH:
        rooms = [room.name for room in ROOMS if room.members(module)]
        assert len(rooms) == 1, (module, rooms)
    assert GRAPH.keys() >= SHELLS, SHELLS - GRAPH.keys()  # the list names real modules
    assert GRAPH.keys() >= SHARED, SHARED - GRAPH.keys()


@pytest.mark.parametrize("room", ROOMS, ids=lambda room: room.name)
def test_each_room_keeps_its_rule(room: Room) -> None:
    broken = []
    for module in sorted(filter(room.members, GRAPH)):
        path = _path(module, room.forbidden)
        if path is not None:
            broken.append(" -> ".join(path))
        if not room.web and (web := _web_path(module)) is not None:
            broken.append(" -> ".join(web))
    assert not broken, f"{room.name}: {room.rule}; broken by:\n" + "\n".join(broken)


def test_the_architecture_page_states_each_rule() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("### Import rules", 1)[1].split("\n## ", 1)[0]
    stated = " ".join(section.split())
    for room in ROOMS:
        assert " ".join(room.rule.split()) in stated, room.name


def test_the_core_room_is_what_the_docs_call_sans_io() -> None:
    """The modules the issue and the docs name as the core are in the core room."""
    for name in ("jsonrpc", "types", "errors", "versions", "meta", "context", "server",
                 "mrtr", "inputs", "sealing", "schema", "tools", "resources", "prompts",
                 "subscriptions", "tasks.engine"):
        assert _core(f"mcpcore.{name}"), name


# -- the graph itself: what counts as an import -----------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "mcpcore"
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


@pytest.mark.parametrize("second", [
    "from mcpcore.a import A\n",
    "def f():\n    from mcpcore import a\n    return a\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
    "import mcpcore.a\n",
])
def test_an_import_anywhere_in_a_module_closes_a_circle(tmp_path: Path, second: str) -> None:
    folder = _package(tmp_path, {"__init__.py": "", "a.py": "from mcpcore.b import B\nA = 1\n",
                                 "b.py": second + "B = 2\n"})
    graph = import_graph.import_graph(folder)
    assert import_graph.circles(graph) == [["mcpcore.a", "mcpcore.b"]]


def test_a_package_init_or_a_name_in_a_module_is_no_edge(tmp_path: Path) -> None:
    """``from mcpcore.pkg import sub`` is an edge to the submodule, not to the package's
    ``__init__`` (which re-exports it: no circle); ``from mcpcore.a import name`` to
    ``a``; the package's ``TYPE_CHECKING`` block names its lazy exports only."""
    folder = _package(tmp_path, {
        "__init__.py": "from typing import TYPE_CHECKING\n"
                       "if TYPE_CHECKING:\n    from mcpcore.a import A\n",
        "a.py": "from mcpcore import b\nfrom mcpcore.pkg import sub\nA = 1\n",
        "b.py": "B = 2\n",
        "pkg/__init__.py": "from mcpcore.pkg.sub import S\n",
        "pkg/sub.py": "from mcpcore.b import B\nS = B\n",
    })
    graph = import_graph.import_graph(folder)
    assert graph["mcpcore"] == {}
    assert set(graph["mcpcore.a"]) == {"mcpcore.b", "mcpcore.pkg.sub"}
    assert set(graph["mcpcore.pkg.sub"]) == {"mcpcore.b"}
    assert import_graph.circles(graph) == []


def test_the_script_lists_the_circles_and_fails(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = _package(tmp_path, {"__init__.py": "", "a.py": "import mcpcore.b\n",
                                 "b.py": "def f():\n    import mcpcore.a\n"})
    graph = import_graph.import_graph(folder)
    assert re.fullmatch(
        r"2 modules: mcpcore\.a, mcpcore\.b\n    e\.g\. mcpcore\.a \(line 1\) -> "
        r"mcpcore\.b \(line 2\) -> mcpcore\.a",
        import_graph.describe(graph, ["mcpcore.a", "mcpcore.b"]))
    assert import_graph.main([]) == 0  # the package itself
    assert capsys.readouterr().out.endswith("0 import circle(s) in mcpcore/\n")


# -- no module reaches into another's private names --------------------------------------

#: Underscored names that are public API of what they belong to (``os._exit``, and the
#: named-tuple methods, underscored only to stay clear of field names).
PUBLIC_UNDERSCORED = frozenset({"_exit", "_replace", "_asdict", "_fields", "_make"})


def _foreign_private_uses(file: Path) -> list[str]:
    """``x._name`` (read or written) where ``x`` is not ``self``/``cls`` and nothing in
    this module defines ``_name`` (a def, a class, an assignment to it or to
    ``self._name``, a slot, an import): a private name of another module's object."""
    tree = ast.parse(file.read_bytes())
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
            defined.add(node.attr)  # (writing another's ``x._name`` defines nothing)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            defined.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            defined.add(node.value)  # __slots__ entries
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and node.attr not in defined
                and node.attr not in PUBLIC_UNDERSCORED
                and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})):
            where = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = [use for file in import_graph.module_files(ROOT / "mcpcore").values()
             for use in _foreign_private_uses(file)]
    assert not found, "make it public API of its module, or move it:\n" + "\n".join(found)


def test_a_private_name_of_another_module_is_found(tmp_path: Path) -> None:
    folder = _package(tmp_path, {"a.py": "class A:\n    def _secret(self): ...\n",
                                 "b.py": "def f(a):\n    return a._secret(), a._mine\n"
                                         "class B:\n    _mine = 1\n"})
    assert [use.split(": ", 1)[1] for use in _foreign_private_uses(folder / "b.py")] == [
        "a._secret"]
