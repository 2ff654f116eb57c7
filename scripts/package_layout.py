"""Which folder of the checkout holds which package, as pyproject.toml declares it.

The wheel's one top-level package, ``mcpcore``, is made of three folders: ``mcpcore/``,
and ``auth/`` and ``conformance/`` installed as ``mcpcore.auth`` and
``mcpcore.conformance`` (``[tool.setuptools]``: ``packages`` and ``package-dir``).
setuptools reads that table to build the wheel and the editable install; the tools that
read files rather than import them (mypy: scripts/typecheck.py; griffe, for the API
reference: scripts/griffe_package_dirs.py) and the layout tests read it here, by
setuptools' own rule, so they all see the same package.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools(root: Path) -> dict[str, object]:
    config: dict[str, object] = tomllib.loads(
        (root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return config


def package_folders(root: Path = ROOT) -> dict[str, Path]:
    """Each package the wheel installs, by name, to its folder (relative to ``root``).

    A package's folder is the ``package-dir`` entry of its longest mapped prefix plus the
    rest of its name (``mcpcore.conformance.checks``: ``conformance/checks``); with no
    entry, the name's own folders (``mcpcore.client``: ``mcpcore/client``).
    """
    config = _setuptools(root)
    mapped = config.get("package-dir", {})
    packages = config["packages"]
    assert isinstance(mapped, dict) and isinstance(packages, list)
    folders: dict[str, Path] = {}
    for package in packages:
        parts = package.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in mapped:
                folders[package] = Path(mapped[prefix], *parts[cut:])
                break
        else:
            folders[package] = Path(*parts)
    return folders


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    """Each module the wheel installs, by name, to its file (relative to ``root``): the
    ``.py`` files of each package's folder (a subpackage is a package of its own)."""
    modules: dict[str, Path] = {}
    for package, folder in package_folders(root).items():
        for file in sorted((root / folder).glob("*.py")):
            name = package if file.stem == "__init__" else f"{package}.{file.stem}"
            modules[name] = folder / file.name
    return modules


def package_data(root: Path = ROOT) -> dict[str, list[Path]]:
    """Each package's data files (``[tool.setuptools.package-data]``), relative to
    ``root``."""
    config = _setuptools(root)
    patterns = config.get("package-data", {})
    assert isinstance(patterns, dict)
    folders = package_folders(root)
    return {package: sorted(path.relative_to(root) for pattern in globs
                            for path in (root / folders[package]).glob(pattern))
            for package, globs in patterns.items()}
