"""The wheel is a library, not a checkout: one top-level package, the dependencies it
imports and no others, and it works when installed into a clean virtual environment —
with the extras, as the install commands of README.md and docs/install.md give them."""

from __future__ import annotations

import ast
import email
import importlib.util
import re
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Names of the top-level packages a distribution provides, lower-cased and normalised.
_DISTS = {name: [re.sub(r"[-_.]+", "-", d).lower() for d in dists]
          for name, dists in packages_distributions().items()}

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Source distribution first, then the wheel from it (build's default): the wheel is
    # built in a fresh folder, not from a build/ a previous build left in the checkout.
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    (found,) = out.glob("mcpcore-*.whl")
    return found


def requirements(wheel: Path) -> tuple[set[str], dict[str, set[str]]]:
    """Required distributions, and those of each extra, from the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(name))
    required: set[str] = set()
    extras: dict[str, set[str]] = {}
    for line in metadata.get_all("Requires-Dist") or []:
        dist = re.sub(r"[-_.]+", "-", re.split(r"[ ;<>=!\[~(]", line, maxsplit=1)[0]).lower()
        extra = re.search(r"extra == ['\"]([\w-]+)['\"]", line)
        if extra:
            extras.setdefault(extra.group(1), set()).add(dist)
        else:
            required.add(dist)
    return required, extras


def imported_top_levels(wheel: Path) -> Iterator[str]:
    """Every top-level module name the wheel's code imports (not relative, not stdlib)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.endswith(".py"):
                continue
            tree = ast.parse(archive.read(name))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("mcpcore", "__future__"):
                        yield top


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == {"mcpcore"}
    assert "mcpcore/auth/__init__.py" in names
    assert "mcpcore/conformance/schemas/2026-07-28.json" in names
    assert "mcpcore/py.typed" in names
    assert not [n for n in names if n.startswith(("examples/", "tests/", "auth/"))]


def test_the_wheel_holds_the_checkouts_modules_under_their_installed_names(
        wheel: Path) -> None:
    """Every module of mcpcore/, auth/ and conformance/ is in the wheel, auth/ and
    conformance/ under mcpcore/ (pyproject.toml's package-dir), with the data files
    pyproject.toml names, and nothing else."""
    expected = set()
    for folder, installed in (("mcpcore", "mcpcore"), ("auth", "mcpcore/auth"),
                              ("conformance", "mcpcore/conformance")):
        for module in (ROOT / folder).rglob("*.py"):
            if (module.parent / "__init__.py").is_file():
                expected.add(f"{installed}/{module.relative_to(ROOT / folder).as_posix()}")
    spec = importlib.util.spec_from_file_location(
        "package_layout", ROOT / "scripts" / "package_layout.py")
    assert spec is not None and spec.loader is not None
    layout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout)
    folders = layout.package_folders(ROOT)
    for package, files in layout.package_data(ROOT).items():
        assert files, package
        expected |= {"/".join([*package.split("."), *path.relative_to(folders[package]).parts])
                     for path in files}
    with zipfile.ZipFile(wheel) as archive:
        names = {n for n in archive.namelist() if ".dist-info/" not in n}
    assert {"mcpcore/auth/jwks.py", "mcpcore/conformance/checks/tools.py",
            "mcpcore/conformance/schemas/2026-07-28.json", "mcpcore/py.typed"} <= expected
    assert names == expected


def test_every_required_dependency_is_imported_and_every_import_is_declared(
        wheel: Path) -> None:
    required, extras = requirements(wheel)
    declared = required | set().union(*(extras[e] for e in extras if e != "dev"))
    used: set[str] = set()
    for top in set(imported_top_levels(wheel)):
        dists = set(_DISTS.get(top, [top]))
        # A namespace package several distributions share (opentelemetry: the API, the
        # SDK, the semantic conventions) is covered by the one of them we declare.
        used |= (dists & declared) if len(dists) > 1 and dists & declared else dists
    # pyjwt's [crypto] extra is cryptography, which sealing imports directly too.
    assert required - used == set(), f"required but never imported: {required - used}"
    assert used - declared == set(), f"imported but not declared: {used - declared}"
    assert "redis" in extras["redis"] and "redis" not in required
    # The authorization server's libraries come with the issuer extra only (the resource
    # server and the OAuth client need none of them).
    issuer = {"starlette", "authlib", "joserfc"}
    assert issuer <= extras["issuer"] and not issuer & required
    # Ten, and google-re2 (URI templates matched in linear time: pyproject.toml says why).
    assert len(required) == 11, sorted(required)


def test_the_wheel_works_in_a_clean_venv(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", f"{wheel}[fast,redis]"],
                   check=True, capture_output=True, timeout=600)

    def run(code: str) -> subprocess.CompletedProcess[str]:
        # From an empty folder, so the checkout is not on sys.path.
        return subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)

    for name in ("auth", "examples", "conformance"):
        assert run(f"import {name}").returncode != 0, name
    done = run("import mcpcore, mcpcore.auth, mcpcore.conformance.schemas as s; "
               "from mcpcore.client import Client; from mcpcore.auth import "
               "BearerAuthMiddleware; print(len(s.load('2026-07-28')['$defs']) > 100)")
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    # No issuer extra: none of its libraries is installed, and the issuer says which
    # extra it needs.
    absent = run("import importlib.util as u; print([n for n in ('starlette', 'authlib', "
                 "'joserfc') if u.find_spec(n)])")
    assert absent.returncode == 0 and absent.stdout.strip() == "[]", absent.stderr
    issuer = run("import mcpcore.auth.issuer")
    assert "pip install 'mcpcore[issuer]'" in issuer.stderr.strip().splitlines()[-1]
    extras = run("import uvloop, httptools; from mcpcore.stores import RedisStore; "
                 "print(RedisStore.__name__)")
    assert extras.returncode == 0 and extras.stdout.strip() == "RedisStore", extras.stderr
    shown = subprocess.run([str(python), "-m", "pip", "show", "mcpcore"],
                           capture_output=True, text=True, check=True).stdout
    requires = {r.strip().lower() for r in
                shown.split("Requires:", 1)[1].splitlines()[0].split(",") if r.strip()}
    required, _ = requirements(wheel)
    assert requires == required
    version = subprocess.run([str(env_dir / "bin" / "mcpcore"), "--version"],
                             capture_output=True, text=True, check=True, cwd=tmp_path)
    assert version.stdout.startswith("mcpcore ")
