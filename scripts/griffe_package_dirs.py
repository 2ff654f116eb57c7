"""A griffe extension for the docs site: ``mcpcore.auth`` and ``mcpcore.conformance``
are read from the folders that hold them.

griffe reads a package from its folder, ``mcpcore/``, and finds no ``auth`` there:
pyproject.toml maps ``mcpcore.auth`` to ``auth/`` and ``mcpcore.conformance`` to
``conformance/`` (``package-dir``), which only setuptools and the editable install's
import hook read. When griffe has loaded a package, this extension reads each package
mapped to a folder outside its parent's (scripts/package_layout.py) and attaches it to
its parent, with its subpackages and modules, as griffe itself would. Used by
``mkdocs.yml`` only.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import griffe

# Loaded by file path (griffe imports extensions so), hence its neighbour by file path too.
_spec = importlib.util.spec_from_file_location(
    "package_layout", Path(__file__).with_name("package_layout.py"))
assert _spec is not None and _spec.loader is not None
package_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(package_layout)


class PackageDirs(griffe.Extension):
    """Attach the packages pyproject.toml maps to other folders to their parents."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        root = package_layout.ROOT
        folders: dict[str, Path] = package_layout.package_folders(root)
        modules: dict[str, Path] = package_layout.package_modules(root)
        # Packages of ``pkg`` whose folder is not their parent's folder plus their name.
        moved = {name for name, folder in folders.items()
                 if name.startswith(f"{pkg.name}.")
                 and folder != folders[name.rpartition(".")[0]] / name.rpartition(".")[2]}
        for top in sorted(moved):
            if any(top.startswith(f"{outer}.") for outer in moved):
                continue  # read with the moved package around it
            # The package, then its modules and subpackages, parents before children.
            inside = sorted((name for name in modules if name == top
                             or name.startswith(f"{top}.")), key=lambda n: n.count("."))
            for name in inside:
                parent_name, _, short = name.rpartition(".")
                parent = loader.modules_collection.get_member(parent_name)
                path = root / modules[name]
                code = path.read_text(encoding="utf-8-sig")
                if loader.store_source:
                    loader.lines_collection[path] = code.splitlines(keepends=False)
                module = griffe.visit(
                    short, filepath=path, code=code, parent=parent,
                    extensions=loader.extensions, docstring_parser=loader.docstring_parser,
                    docstring_options=loader.docstring_options,
                    lines_collection=loader.lines_collection,
                    modules_collection=loader.modules_collection)
                parent.set_member(short, module)
            attached = loader.modules_collection.get_member(top)
            loader.expand_exports(attached)
            loader.expand_wildcards(attached, external=False)
