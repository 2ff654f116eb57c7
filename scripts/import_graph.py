"""The import graph of the ``mcpcore/`` folder, and every circle in it.

    python scripts/import_graph.py            # list the circles; exit 1 if there is one
    python scripts/import_graph.py --edges    # and every edge, as "module -> module"

Read from the source (``ast``), not by importing, so an import counts wherever it is
written: at the top of a module, inside a function, or under ``if TYPE_CHECKING:``.

- **Imports inside functions count.** Moving an import into a function hides a circle
  from the interpreter, not from the reader: the two modules still need each other.
- **``TYPE_CHECKING`` imports count too.** A module that names another's type in an
  annotation depends on it; a circle through annotations is still two modules that
  cannot be understood (or moved) apart. A circle is broken by moving the shared type to
  a module both import (a protocol, a small module named for what it holds), not by
  hiding one side behind ``TYPE_CHECKING``. The one exception is the package's own
  ``mcpcore/__init__.py``, whose ``TYPE_CHECKING`` block only tells type checkers what
  its lazy (PEP 562) names are; no module of the package imports ``mcpcore`` itself.
- An edge goes to the module an import names: ``from mcpcore.tasks import run`` is an
  edge to ``mcpcore.tasks.run`` when ``run`` is a module, else to ``mcpcore.tasks``.
  Running a package's ``__init__`` on the way to one of its modules is not an edge of
  the importer (the ``__init__``'s own imports are its edges).
- ``mcpcore.auth`` and ``mcpcore.conformance`` live in other folders (``auth/``,
  ``conformance/``) and have rooms of their own: only their names appear here, as the
  targets of edges from ``mcpcore/``.

The circles are the strongly connected components of the graph (Tarjan's algorithm)
with more than one module, or a module importing itself; each is printed with one
shortest path around it, so the edge to remove is in view. tests/test_rooms.py holds the
package to no circles and to the import rules of its rooms (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import ast
import functools
import itertools
import sys
from collections import deque
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mcpcore"
#: Packages of ``mcpcore`` installed from other folders of the checkout (pyproject.toml).
OTHER_FOLDERS = ("mcpcore.auth", "mcpcore.conformance")


def module_files(folder: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Each module of ``folder`` (the package ``package``), by dotted name, to its file."""
    modules: dict[str, Path] = {}
    for file in sorted(folder.rglob("*.py")):
        parts = file.relative_to(folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((package, *parts))] = file
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(module: str, file: Path, *, type_checking: bool = True
                   ) -> tuple[tuple[str, str | None, int], ...]:
    """What ``file`` imports: ``(module, name, line)``, the module absolute, the name
    ``None`` for ``import X``; ``type_checking=False`` skips the bodies of
    ``if TYPE_CHECKING:``. Each file is parsed once per version of it (``import_graph``
    and ``third_party_imports`` read the same files)."""
    return _imported_names(module, file, type_checking, file.stat().st_mtime_ns)


@functools.cache
def _imported_names(module: str, file: Path, type_checking: bool, _version: int
                    ) -> tuple[tuple[str, str | None, int], ...]:
    tree = ast.parse(file.read_bytes(), filename=str(file))
    is_package = file.name == "__init__.py"
    skipped: set[int] = set()
    if not type_checking:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for inner in node.body:
                    skipped.update(id(n) for n in ast.walk(inner))
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend((alias.name, None, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                anchor = here[: len(here) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.extend((base, alias.name, node.lineno) for alias in node.names)
    return tuple(found)


def import_graph(folder: Path = ROOT / PACKAGE, *, type_checking: bool = True
                 ) -> dict[str, dict[str, int]]:
    """Each module of the package to the package modules it imports (with a line).

    Names outside ``folder`` but inside the package (``mcpcore.auth.*``,
    ``mcpcore.conformance.*``) are kept as targets, cut to their first two parts."""
    modules = module_files(folder)
    graph: dict[str, dict[str, int]] = {}
    for module, file in modules.items():
        # The package's TYPE_CHECKING block names its lazy exports for type checkers only.
        names = imported_names(module, file, type_checking=type_checking and module != PACKAGE)
        edges: dict[str, int] = {}
        for base, imported, line in names:
            name = f"{base}.{imported}"
            if imported is None or (name not in modules and not name.startswith(OTHER_FOLDERS)):
                name = base  # a module, or a name defined in the module ``base``
            if name in modules:
                target = name
            elif name.startswith(OTHER_FOLDERS):
                target = ".".join(name.split(".")[:2])
            else:
                continue  # a name defined inside a module, or outside the package
            if target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def third_party_imports(folder: Path = ROOT / PACKAGE) -> dict[str, dict[str, int]]:
    """Each module of the package to the distributions outside the standard library it
    imports (the top-level name, with a line), counted as ``import_graph`` counts."""
    found: dict[str, dict[str, int]] = {}
    for module, file in module_files(folder).items():
        names: dict[str, int] = {}
        for base, _, line in imported_names(module, file, type_checking=module != PACKAGE):
            top = base.split(".", 1)[0]
            if top and top != PACKAGE and top not in sys.stdlib_module_names:
                names.setdefault(top, line)
        found[module] = names
    return found


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components (Tarjan), iteratively; each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = []
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, iter(sorted(graph.get(root, {})))))
        while work:
            node, targets = work[-1]
            advanced = False
            for target in targets:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The components that are circles: two modules or more, or one importing itself."""
    found = [c for c in strongly_connected(graph)
             if len(c) > 1 or c[0] in graph.get(c[0], {})]
    return sorted(found)


def shortest_circle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside it."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(graph[node]):
            if target not in members:
                continue
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if target not in came_from:
                came_from[target] = node
                queue.append(target)
    return [start, start]


def describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    path = shortest_circle(graph, component)
    steps = " -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(path))
    return f"{len(component)} modules: {', '.join(component)}\n    e.g. {steps} -> {path[-1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", action="store_true", help="print every edge too")
    args = parser.parse_args(argv)
    graph = import_graph()
    if args.edges:
        for module in sorted(graph):
            for target, line in sorted(graph[module].items()):
                print(f"{module} -> {target} (line {line})")
    found = circles(graph)
    for component in found:
        print(describe(graph, component))
    print(f"{len(found)} import circle(s) in {PACKAGE}/")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
