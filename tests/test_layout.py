"""The package is made of three folders of the checkout, joined by pyproject.toml, not by
links: ``mcpcore/``, and ``auth/`` and ``conformance/`` installed as ``mcpcore.auth`` and
``mcpcore.conformance`` (``[tool.setuptools]`` ``packages`` and ``package-dir``).
tests/integration/test_wheel.py checks the wheel built from it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import sysconfig
from importlib.metadata import distributions
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The folders the package is made of, and the names they are installed as.
FOLDERS = {"mcpcore": "mcpcore", "auth": "mcpcore.auth", "conformance": "mcpcore.conformance"}


def package_layout() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "package_layout", ROOT / "scripts" / "package_layout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_repository_holds_no_symbolic_links() -> None:
    listed = subprocess.run(["git", "ls-files", "--stage"], cwd=ROOT, capture_output=True,
                            text=True, check=False)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    links = [line.split("\t", 1)[1] for line in listed.stdout.splitlines()
             if line.startswith("120000 ")]
    assert links == []


def test_the_packages_list_names_every_package_folder() -> None:
    """setuptools' discovery does not follow package-dir, so pyproject.toml lists the
    packages: a package folder missing from the list would be missing from the wheel."""
    found = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *parts)))
    folders = package_layout().package_folders(ROOT)
    assert set(folders) == found
    for package, folder in folders.items():
        assert (ROOT / folder / "__init__.py").is_file(), package


def test_the_layout_maps_auth_and_conformance_to_their_folders() -> None:
    modules = package_layout().package_modules(ROOT)
    assert modules["mcpcore.auth"] == Path("auth/__init__.py")
    assert modules["mcpcore.conformance.checks.tools"] == Path("conformance/checks/tools.py")
    assert modules["mcpcore.client.pool"] == Path("mcpcore/client/pool.py")
    assert not [name for name in modules if not name.startswith("mcpcore")]


@pytest.mark.parametrize("folder", ["auth", "conformance"])
def test_a_folder_imported_by_its_own_name_is_refused(folder: str) -> None:
    """With the checkout on sys.path (pytest, ``python -m examples.NAME``), ``import auth``
    would load a second copy of every class of mcpcore.auth: the package refuses it."""
    done = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        f"ImportError: import this package as {FOLDERS[folder]}, not as {folder}")


def test_the_editable_install_imports_the_checkouts_folders(tmp_path: Path) -> None:
    """``pip install -e .`` (make) maps each package to its folder in the checkout, so an
    edit, or a new module, takes effect without installing again."""
    # The installed distribution, not the egg-info setuptools leaves in the checkout.
    site = sysconfig.get_paths()["purelib"]
    installed = next(iter(distributions(name="mcpcore", path=[site])), None)
    direct = installed and installed.read_text("direct_url.json")
    if not direct or not json.loads(direct).get("dir_info", {}).get("editable"):
        pytest.skip("mcpcore is not installed in editable mode (pip install -e .)")
    code = ("import json, mcpcore, mcpcore.auth, mcpcore.conformance.checks as c; "
            "print(json.dumps([list(m.__path__) for m in (mcpcore, mcpcore.auth, c)]))")
    # From an empty folder, so only the installed package can be found.
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [[str(ROOT / "mcpcore")], [str(ROOT / "auth")],
                                       [str(ROOT / "conformance" / "checks")]]
